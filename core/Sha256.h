//===- Sha256.h - SHA-256 (FIPS 180-4), std-only ----------------*- C++ -*-===//
//
// The bundle digest (core/BundleFormat.h). Written from the FIPS 180-4
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
#ifndef SNUG_CORE_SHA256_H
#define SNUG_CORE_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SNUG_SHA256_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define SNUG_SHA256_X86 0
#endif

namespace snug {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  void update(const uint8_t *data, size_t size) {
    totalBytes += size;
    while (size) {
      if (buffered == 0 && size >= 64) { // whole blocks straight from data
        size_t blocks = size / 64;
        compressBlocks(data, blocks);
        data += 64 * blocks, size -= 64 * blocks;
        continue;
      }
      size_t take = 64 - buffered;
      if (take > size)
        take = size;
      for (size_t i = 0; i < take; ++i)
        block[buffered + i] = data[i];
      buffered += take, data += take, size -= take;
      if (buffered == 64) {
        compressBlocks(block, 1);
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

  /// The same digest by the portable code alone (tests hold the two paths
  /// to each other).
  static Digest portableOf(const uint8_t *data, size_t size) {
    Sha256 hasher;
    hasher.portable = true;
    hasher.update(data, size);
    return hasher.finish();
  }

  /// Whether this CPU runs the SHA-extension path.
  static bool usesShaExtensions() {
#if SNUG_SHA256_X86
    return hasShaExtensions();
#else
    return false;
#endif
  }

private:
  static uint32_t rotr(uint32_t x, unsigned n) {
    return (x >> n) | (x << (32 - n));
  }

  /// `blocks` 64-byte blocks: with the x86 SHA extensions where the CPU
  /// has them (about 20 times the portable code's speed, which matters for
  /// the hundreds of megabytes of a large model's weights), else portably.
  void compressBlocks(const uint8_t *data, size_t blocks) {
#if SNUG_SHA256_X86
    if (!portable && hasShaExtensions()) {
      compressShaNi(state, data, blocks);
      return;
    }
#endif
    for (size_t i = 0; i < blocks; ++i)
      compress(data + 64 * i);
  }

#if SNUG_SHA256_X86
  static bool hasShaExtensions() {
    static const bool has = [] {
      unsigned a, b, c, d;
      if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) ||
          !(c & bit_SSE4_1))
        return false;
      return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
    }();
    return has;
  }

  /// FIPS 180-4's compression through SHA256RNDS2 (two rounds each) and
  /// SHA256MSG1/MSG2 (the message schedule, four words at a time), with the
  /// state held as the instructions want it: ABEF and CDGH.
  __attribute__((target("sha,sse4.1,ssse3"))) static void
  compressShaNi(uint32_t *state, const uint8_t *data, size_t blocks) {
    const __m128i byteSwap =
        _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i *>(state));
    __m128i hgfe =
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(state + 4));
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (size_t block = 0; block < blocks; ++block, data += 64) {
      __m128i abefSaved = abef, cdghSaved = cdgh;
      __m128i w[4];
      for (int group = 0; group < 16; ++group) {
        if (group < 4) {
          w[group] = _mm_shuffle_epi8(
              _mm_loadu_si128(
                  reinterpret_cast<const __m128i *>(data + 16 * group)),
              byteSwap);
        } else {
          // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four at once.
          __m128i t = _mm_sha256msg1_epu32(w[group & 3], w[(group + 1) & 3]);
          t = _mm_add_epi32(
              t, _mm_alignr_epi8(w[(group + 3) & 3], w[(group + 2) & 3], 4));
          w[group & 3] = _mm_sha256msg2_epu32(t, w[(group + 3) & 3]);
        }
        __m128i message = _mm_add_epi32(
            w[group & 3],
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(k + 4 * group)));
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, message);
        abef = _mm_sha256rnds2_epu32(abef, cdgh,
                                      _mm_shuffle_epi32(message, 0x0E));
      }
      abef = _mm_add_epi32(abef, abefSaved);
      cdgh = _mm_add_epi32(cdgh, cdghSaved);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(state),
                     _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(state + 4),
                     _mm_alignr_epi8(dchg, feba, 8));
  }
#endif

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

  void compress(const uint8_t *chunk) {
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
  bool portable = false;
};

} // namespace snug

#endif // SNUG_CORE_SHA256_H
