"""snug.torch: plan equals snugc on the same export (torchvision resnet18),
and fit_batch finds the largest batch under a budget."""
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import snug  # noqa: E402
import snug.torch  # noqa: E402
from conftest import cli_report  # noqa: E402


@pytest.fixture(scope="module")
def resnet18():
    torch.manual_seed(0)
    return torchvision.models.resnet18().eval()  # random weights, no download


def test_resnet18_plan_equals_the_cli(resnet18, snugc, tmp_path):
    example = torch.randn(2, 3, 224, 224)
    report = snug.torch.plan(resnet18, example)
    path = tmp_path / "ResNet.onnx"
    path.write_bytes(snug.torch.export(resnet18, example))
    cli = cli_report(snugc, str(path))
    python = report.to_dict()
    assert set(python) == set(cli)
    for key in cli:
        if key != "planning_ms":
            assert python[key] == cli[key], key
    assert report.model == "ResNet.onnx"
    # 2 x 3 x 224 x 224 f32 in, 2 x 1000 out.
    assert report.io_bytes >= 2 * 3 * 224 * 224 * 4 + 2 * 1000 * 4


def test_dynamic_batch_binds_the_example_size(resnet18):
    static = snug.torch.plan(resnet18, torch.randn(2, 3, 224, 224))
    dynamic = snug.torch.plan(resnet18, torch.randn(2, 3, 224, 224),
                              dynamic=True)
    assert dynamic.arena_bytes == static.arena_bytes
    larger = snug.torch.plan(resnet18, torch.randn(2, 3, 224, 224),
                             dynamic={0: {0: "batch"}}, dims={"batch": 4})
    assert larger.arena_bytes > static.arena_bytes


def test_fit_batch_is_the_largest_batch_under_the_budget(resnet18):
    make = lambda batch: torch.randn(batch, 3, 224, 224)  # noqa: E731
    peak = {batch: snug.torch.plan(resnet18, make(batch),
                                   dynamic=True).predicted_peak_bytes
            for batch in (5, 6)}
    assert peak[5] < peak[6]
    assert snug.torch.fit_batch(resnet18, make, budget=peak[5]) == 5
    assert snug.torch.fit_batch(resnet18, make, budget=peak[6] - 1) == 5
    assert snug.torch.fit_batch(resnet18, make, budget=peak[6]) == 6
    assert snug.torch.fit_batch(resnet18, make, budget="1TiB",
                                max_batch=64) == 64
    with pytest.raises(snug.BudgetError) as caught:
        snug.torch.fit_batch(resnet18, make, budget="1MiB")
    assert caught.value.budget == 1 << 20


def test_the_example_prints_its_table():
    import os
    import subprocess
    import sys
    from conftest import ROOT
    script = os.path.join(ROOT, "examples", "python", "plan_batches.py")
    result = subprocess.run([sys.executable, script, "--batches", "1,4",
                             "--budget", "100MiB"], capture_output=True,
                            text=True, check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == "resnet18: predicted device memory by batch (MiB)"
    assert [line.split()[0] for line in lines[2:4]] == ["1", "4"]
    assert lines[-1].startswith("largest batch within 100MiB: ")
