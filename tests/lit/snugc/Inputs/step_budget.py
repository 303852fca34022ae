"""Checkpoint selection on a training step, the helper of
train-checkpoint.test (lit's shell has no arithmetic or command
substitution).

  step_budget.py budget FULL.json FRACTION RSP
      From the JSON memory report of the step planned without a budget:
      "the no-recompute activation bytes" are its saved activations, every
      one once (step.saved_activation_total_bytes); the budget that leaves
      only FRACTION of them is predicted_peak - (1 - FRACTION) * saved.
      Writes --memory-budget=N to the response file RSP (snugc reads @RSP)
      and prints the arithmetic.
  step_budget.py check FULL.json BUDGETED.json BUDGET_RSP MAX_SHARE
      The budgeted step fits its budget, its recompute FLOPs are under
      MAX_SHARE of the step's FLOPs and equal remat's extra FLOPs, and in
      both reports the breakdown sums to the predicted peak and the phases'
      FLOPs to the FLOPs. Prints ok:/FAIL: lines; exit 1 on a FAIL.
  step_budget.py same DIR_A DIR_B
      Every output file (snug-run --output-dir) of A has the same bytes in
      B, and B has no other."""
import json
import os
import sys

PARTS = ["parameter_bytes", "optimizer_state_bytes", "other_weights_bytes",
         "gradient_bytes", "saved_activation_bytes", "workspace_bytes",
         "other_arena_bytes", "runtime_bytes"]
PHASES = ["forward_flops", "backward_flops", "optimizer_flops",
          "recompute_flops"]
failed = False


def report(ok, text):
    global failed
    failed |= not ok
    print(("ok: " if ok else "FAIL: ") + text)


def load(path):
    with open(path) as f:
        return json.load(f)


def read_budget(path):
    with open(path) as f:
        return int(f.read().strip().split("=", 1)[1])


def check_sums(name, data):
    step = data["step"]
    parts = sum(step[p] for p in PARTS)
    report(parts == data["predicted_peak_bytes"],
           f"{name}: the parts sum to the predicted peak "
           f"({' + '.join(str(step[p]) for p in PARTS)} = {parts}, "
           f"peak {data['predicted_peak_bytes']})")
    flops = sum(step[p] for p in PHASES)
    report(flops == data["flops"],
           f"{name}: forward + backward + optimizer + recompute = FLOPs "
           f"({' + '.join(str(step[p]) for p in PHASES)} = {flops}, "
           f"FLOPs {data['flops']})")


command = sys.argv[1]
if command == "budget":
    full, fraction, rsp = load(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    saved = full["step"]["saved_activation_total_bytes"]
    peak = full["predicted_peak_bytes"]
    budget = peak - int((1 - fraction) * saved)
    with open(rsp, "w") as f:
        f.write(f"--memory-budget={budget}\n")
    print(f"budget {budget} B = predicted peak {peak} B - "
          f"{1 - fraction:g} x saved activations {saved} B "
          f"({full['step']['saved_activations']} values)")
elif command == "check":
    full, budgeted = load(sys.argv[2]), load(sys.argv[3])
    budget, max_share = read_budget(sys.argv[4]), float(sys.argv[5])
    check_sums("without a budget", full)
    check_sums("with the budget", budgeted)
    report(full["step"]["recompute_flops"] == 0,
           "without a budget nothing is recomputed")
    peak = budgeted["predicted_peak_bytes"]
    report(peak <= budget, f"the budgeted step's peak {peak} B fits the "
                           f"budget of {budget} B")
    step = budgeted["step"]
    share = step["recompute_flops"] / budgeted["flops"]
    report(0 < share < max_share,
           f"recompute FLOPs {step['recompute_flops']} are "
           f"{100 * share:.2f}% of the step's {budgeted['flops']} "
           f"(under {100 * max_share:g}%)")
    extra = budgeted["remat"]["extra_flops"] if budgeted["remat"] else 0
    report(step["recompute_flops"] == extra,
           f"recompute FLOPs equal remat's extra FLOPs ({extra})")
    report(step["forward_flops"] == full["step"]["forward_flops"] and
           step["backward_flops"] == full["step"]["backward_flops"],
           "forward and backward FLOPs are the unbudgeted step's")
elif command == "same":
    a, b = sys.argv[2], sys.argv[3]
    names = sorted(os.listdir(a))
    report(names == sorted(os.listdir(b)) and names != [],
           f"{len(names)} outputs in both")
    for name in names:
        with open(os.path.join(a, name), "rb") as fa:
            with open(os.path.join(b, name), "rb") as fb:
                if fa.read() != fb.read():
                    report(False, f"{name} differs")
    if not failed:
        report(True, "every output has the same bytes")
else:
    sys.exit(f"unknown command {command}")
sys.exit(1 if failed else 0)
