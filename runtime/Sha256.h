//===- Sha256.h - SHA-256 (FIPS 180-4), std-only ----------------*- C++ -*-===//
//
// The bundle digest (runtime/BundleFormat.h). Written from the FIPS 180-4
// description: a streaming hasher (update any number of times, then
// finish) so a bundle can be hashed around its own digest field without a
// copy. Header-only and free of LLVM: the bundle writer (compiler/) and the
// reader (runtime/) share it. Checked against the standard test vectors in
// tests/unit/Sha256Test.cpp.
//
// A digest detects corruption and accidental edits; it does not authenticate
// (anyone can recompute it).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_SHA256_H
#define SNUG_RUNTIME_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>

namespace snug {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  void update(const uint8_t *data, size_t size) {
    totalBytes += size;
    while (size) {
      if (buffered == 0 && size >= 64) { // whole blocks straight from data
        compress(data);
        data += 64, size -= 64;
        continue;
      }
      size_t take = 64 - buffered;
      if (take > size)
        take = size;
      for (size_t i = 0; i < take; ++i)
        block[buffered + i] = data[i];
      buffered += take, data += take, size -= take;
      if (buffered == 64) {
        compress(block);
        buffered = 0;
      }
    }
  }

  Digest finish() {
    uint64_t bits = totalBytes * 8;
    // Padding: one 1 bit, zeros to 56 mod 64 bytes, the length in bits
    // big-endian.
    uint8_t pad[72] = {0x80};
    size_t padBytes = buffered < 56 ? 56 - buffered : 120 - buffered;
    for (int i = 0; i < 8; ++i)
      pad[padBytes + i] = uint8_t(bits >> (56 - 8 * i));
    uint64_t total = totalBytes;
    update(pad, padBytes + 8);
    totalBytes = total;
    Digest digest;
    for (int i = 0; i < 8; ++i)
      for (int k = 0; k < 4; ++k)
        digest[4 * i + k] = uint8_t(state[i] >> (24 - 8 * k));
    return digest;
  }

  static Digest of(const uint8_t *data, size_t size) {
    Sha256 hasher;
    hasher.update(data, size);
    return hasher.finish();
  }

private:
  static uint32_t rotr(uint32_t x, unsigned n) {
    return (x >> n) | (x << (32 - n));
  }

  void compress(const uint8_t *chunk) {
    static constexpr uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
        0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
        0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
        0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
        0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
        0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
        0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int t = 0; t < 16; ++t)
      w[t] = uint32_t(chunk[4 * t]) << 24 | uint32_t(chunk[4 * t + 1]) << 16 |
             uint32_t(chunk[4 * t + 2]) << 8 | uint32_t(chunk[4 * t + 3]);
    for (int t = 16; t < 64; ++t) {
      uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int t = 0; t < 64; ++t) {
      uint32_t sigma1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      uint32_t choose = (e & f) ^ (~e & g);
      uint32_t t1 = h + sigma1 + choose + k[t] + w[t];
      uint32_t sigma0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
      uint32_t t2 = sigma0 + majority;
      h = g, g = f, f = e, e = d + t1;
      d = c, c = b, b = a, a = t1 + t2;
    }
    state[0] += a, state[1] += b, state[2] += c, state[3] += d;
    state[4] += e, state[5] += f, state[6] += g, state[7] += h;
  }

  uint32_t state[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block[64] = {};
  size_t buffered = 0;
  uint64_t totalBytes = 0;
};

} // namespace snug

#endif // SNUG_RUNTIME_SHA256_H
