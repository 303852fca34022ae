"""Compares the predicted peaks of two memory reports (snugc
--memory-report=json --memory-report-file=PATH): the step compiled as
micro-batches against the same step on the whole batch.

usage: compare_peaks.py ACCUMULATED.json WHOLE.json
Prints both peaks and the micro-batch count; exits 1 unless the first peak
is strictly smaller."""
import json
import sys

with open(sys.argv[1]) as f:
    accumulated = json.load(f)
with open(sys.argv[2]) as f:
    whole = json.load(f)
a, w = accumulated["predicted_peak_bytes"], whole["predicted_peak_bytes"]
print("micro-batches %d: predicted peak %d B (arena %d B); whole batch: %d B "
      "(arena %d B)" % (accumulated["micro_batches"], a,
                        accumulated["arena_bytes"], w, whole["arena_bytes"]))
if a < w:
    print("ok: the accumulated step's peak is %.1f%% of the whole batch's" %
          (100.0 * a / w))
else:
    print("FAIL: the accumulated step's peak is not below the whole batch's")
    sys.exit(1)
