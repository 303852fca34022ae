"""The tf32 convolution of precision-tf32-cuda.test, checked from the
outputs snug-run (host executor) and snug-cudasim wrote.

usage:
  tf32_check.py inputs DIR          writes x.npy, w.npy, b.npy (seed 0)
  tf32_check.py compare SIM HOST_TF32 HOST_F32
      SIM and HOST_TF32 (directories holding y.npy) agree to 1e-5 of the
      output's largest magnitude (the same tf32 operands; only the order of
      the float sums differs); HOST_TF32 differs from HOST_F32 by more than
      1e-4 of it (the rounding was applied), and so does SIM.
Prints one 'ok:' or 'FAIL:' line per check; exits 1 when one fails."""
import os
import sys

import numpy as np

failed = False


def check(ok, what):
    global failed
    print(("ok: " if ok else "FAIL: ") + what)
    failed |= not ok


def load(directory):
    return np.load(os.path.join(directory, "y.npy")).astype(np.float64)


if sys.argv[1] == "inputs":
    rng = np.random.default_rng(0)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name, shape in [("x", (2, 5, 11, 9)), ("w", (19, 5, 3, 3)),
                        ("b", (19,))]:
        np.save(os.path.join(out, name + ".npy"),
                rng.standard_normal(shape).astype(np.float32))
    sys.exit(0)

sim, tf32, f32 = (load(d) for d in sys.argv[2:5])
scale = np.abs(f32).max()
simErr = np.abs(sim - tf32).max() / scale
tf32Err = np.abs(tf32 - f32).max() / scale
simF32 = np.abs(sim - f32).max() / scale
check(simErr <= 1e-5, "simulator matches the host's tf32 result (%.3g)"
      % simErr)
check(tf32Err > 1e-4, "the host's tf32 result differs from f32 (%.3g)"
      % tf32Err)
check(simF32 > 1e-4, "the simulator's result differs from f32 (%.3g)"
      % simF32)
sys.exit(1 if failed else 0)
