"""Checks of a mixed-precision training run (train-mixed.test) on what
snug-run and snug-cudasim print ('step K: loss X') and write (--state-dir).

usage:
  mixed_check.py track FP32_STDOUT LOWERED_STDOUT RTOL
      the same number of losses; each lowered loss within RTOL of fp32's;
      the lowered losses are not all fp32's bits (they were computed
      lowered); the fp32 losses fall by more than RTOL over the run (so a
      step that moved nothing, losses stuck at step 1's, would fail).
  mixed_check.py skipped MODEL STDOUT STATE_DIR INITIAL_SCALE
      a one-step fp16 run whose first step overflowed: every parameter in
      STATE_DIR is the model's initializer, bit for bit, every momentum
      buffer still zero; loss_scale is INITIAL_SCALE / 2 and
      loss_scale.good_steps 0.
  mixed_check.py scale STDOUT STATE_DIR SKIPPED SCALE GOOD
      a run whose first SKIPPED steps were skipped: the first SKIPPED + 1
      losses are step 1's (a skipped step changed nothing), every later
      loss is below the one before, loss_scale is SCALE and
      loss_scale.good_steps GOOD.
Prints one 'ok:' or 'FAIL:' line per check; exits 1 when one fails."""
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import onnxtxt_weights  # noqa: E402

failed = False


def check(ok, what):
    global failed
    print(("ok: " if ok else "FAIL: ") + what)
    failed |= not ok


def losses(path):
    with open(path) as f:
        return [float(m.group(1)) for m in
                re.finditer(r"step \d+: loss (\S+)", f.read())]


def state(directory, name):
    return np.load(os.path.join(directory, name + ".npy"))


mode = sys.argv[1]
if mode == "track":
    fp32, lowered, rtol = losses(sys.argv[2]), losses(sys.argv[3]), \
        float(sys.argv[4])
    check(len(fp32) == len(lowered) and len(fp32) > 1,
          "%d fp32 and %d lowered losses" % (len(fp32), len(lowered)))
    worst = max(abs(a - b) / abs(a) for a, b in zip(fp32, lowered))
    check(worst <= rtol, "lowered losses within %g of fp32's (worst %.4g)"
          % (rtol, worst))
    check(fp32 != lowered, "the lowered losses differ from fp32's bits")
    check((fp32[0] - fp32[-1]) / fp32[0] > rtol,
          "fp32 losses fall by more than %g: %.6g -> %.6g"
          % (rtol, fp32[0], fp32[-1]))
elif mode == "skipped":
    model, stdout, directory, scale = sys.argv[2:6]
    check(len(losses(stdout)) == 1, "one step ran")
    for name, (dims, data) in \
            sorted(onnxtxt_weights.read_initializers(model).items()):
        path = os.path.join(directory, name + ".npy")
        if not os.path.exists(path):
            continue  # not a parameter (BatchNormalization's statistics)
        initial = np.array(data, dtype=np.float32).reshape(dims)
        check(np.array_equal(state(directory, name), initial),
              "parameter %s unchanged by the skipped step" % name)
    for name in sorted(os.listdir(directory)):
        if name.endswith(".momentum.npy"):
            check(not np.load(os.path.join(directory, name)).any(),
                  "%s still zero" % name[:-4])
    check(float(state(directory, "loss_scale")) == float(scale) / 2,
          "loss_scale halved to %g" % (float(scale) / 2))
    check(float(state(directory, "loss_scale.good_steps")) == 0,
          "loss_scale.good_steps 0")
elif mode == "scale":
    stdout, directory, skipped, scale, good = sys.argv[2:7]
    run, skipped = losses(stdout), int(skipped)
    check(len(run) > skipped + 1 and run[:skipped + 1] == [run[0]] * (skipped + 1),
          "the first %d losses are step 1's: %s" % (skipped + 1,
                                                  run[:skipped + 1]))
    check(all(b < a for a, b in zip(run[skipped:], run[skipped + 1:])),
          "the losses fall after step %d" % (skipped + 1))
    check(float(state(directory, "loss_scale")) == float(scale),
          "loss_scale %g" % float(scale))
    check(float(state(directory, "loss_scale.good_steps")) == float(good),
          "loss_scale.good_steps %g" % float(good))
else:
    sys.exit("mode must be track, skipped or scale, not " + mode)
sys.exit(1 if failed else 0)
