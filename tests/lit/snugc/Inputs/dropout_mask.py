"""snug.dropout_mask in Python: a port of core/ScalarOps.h's dropoutHash,
dropoutKeeps and dropoutScale, written from that definition and nothing
else of snug's, for the tests that recompute a training step's masks.

mask(seed, salt, ratio, shape) is what snug.dropout_mask(seed) {shape,
ratio, salt} computes: f32, 1 / (1 - ratio) where element i (row-major) is
kept, 0 elsewhere.

As a script: dropout_mask.py hash SEED SALT INDEX prints the 32-bit hash,
for the unit test's expected values."""
import sys

import numpy as np

M32 = 0xFFFFFFFF


def mix(h):
    """murmur3's fmix32."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h


def dropout_hash(seed, salt, index):
    seed &= 0xFFFFFFFFFFFFFFFF  # the i64 seed as its two's-complement bits
    h = mix((seed & M32) ^ 0x9E3779B9)
    h = mix(h ^ (seed >> 32))
    h = mix(h ^ (salt & M32))
    h = mix(h ^ (index & M32))
    return mix(h ^ (index >> 32))


def hashes(seed, salt, count):
    """dropout_hash of indices 0 .. count-1, vectorized (uint64 words
    masked to 32 bits, so the products cannot wrap wrongly)."""
    seed &= 0xFFFFFFFFFFFFFFFF

    def vmix(h):
        h = h ^ (h >> 16)
        h = (h * 0x85EBCA6B) & M32
        h = h ^ (h >> 13)
        h = (h * 0xC2B2AE35) & M32
        return h ^ (h >> 16)

    h = mix(mix(mix((seed & M32) ^ 0x9E3779B9) ^ (seed >> 32)) ^ (salt & M32))
    index = np.arange(count, dtype=np.uint64)
    words = vmix(np.uint64(h) ^ (index & np.uint64(M32)))
    return vmix(words ^ (index >> np.uint64(32)))


def mask(seed, salt, ratio, shape):
    ratio = np.float32(ratio)
    count = int(np.prod(shape, dtype=np.int64))
    kept = hashes(seed, salt, count).astype(np.float64) >= float(ratio) * 2.0**32
    scale = np.float32(1) / (np.float32(1) - ratio)
    return np.where(kept, scale, np.float32(0)).astype(np.float32).reshape(shape)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "hash":
        print(dropout_hash(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    else:
        sys.exit("usage: dropout_mask.py hash SEED SALT INDEX")
