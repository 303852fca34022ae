"""Checks masks snug computed (dropout-mask.ir: m with salt 2, n with salt
3, both f32[64,64], ratio 0.3) against dropout_mask.py, the Python port of
the hash: for each run directory (snug-run or snug-cudasim --output-dir,
holding m.npy and n.npy) and the seed it was given, both masks equal the
port's bit for bit, about 1 - ratio of the elements are kept (within 5 %
of it), the kept ones hold exactly 1 / (1 - ratio), and the two salts draw
different masks. Then runs under different seeds must differ.

usage: dropout_mask_check.py SEED DIR [SEED DIR ...]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import dropout_mask  # noqa: E402

RATIO, SHAPE = 0.3, (64, 64)
failed = False


def check(ok, message):
    global failed
    failed |= not ok
    print(("ok: " if ok else "FAIL: ") + message)


runs = [(int(s), d) for s, d in zip(sys.argv[1::2], sys.argv[2::2])]
masks = {}
for seed, directory in runs:
    run = "%s (seed %d)" % (os.path.basename(directory), seed)
    m = np.load(os.path.join(directory, "m.npy"))
    n = np.load(os.path.join(directory, "n.npy"))
    masks[directory] = m
    for name, got, salt in (("m", m, 2), ("n", n, 3)):
        want = dropout_mask.mask(seed, salt, RATIO, SHAPE)
        check(got.dtype == np.float32 and got.shape == SHAPE and
              np.array_equal(got, want),
              "%s: %s equals the Python port's mask" % (run, name))
    kept = float(np.mean(m != 0))
    check(abs(kept - (1 - RATIO)) <= 0.05 * (1 - RATIO),
          "%s: %.4f of %d elements kept, 1 - ratio = %.1f within 5 %%"
          % (run, kept, m.size, 1 - RATIO))
    scale = np.float32(1) / (np.float32(1) - np.float32(RATIO))
    check(np.all((m == 0) | (m == scale)),
          "%s: kept elements are 1 / (1 - ratio)" % run)
    check(not np.array_equal(m, n), "%s: salts 2 and 3 differ" % run)
seeds = {}
for seed, directory in runs:
    seeds.setdefault(seed, []).append(masks[directory])
if len(seeds) > 1:
    firsts = [v[0] for v in seeds.values()]
    check(all(not np.array_equal(a, b)
              for i, a in enumerate(firsts) for b in firsts[i + 1:]),
          "masks under different seeds differ")
sys.exit(1 if failed else 0)
