//===- Float16.h - f16 and bf16 conversions ---------------------*- C++ -*-===//
//
// Conversions between float and the 16-bit float formats, round to nearest
// even, NaN kept quiet. Used by the printer and parser here and by folding and
// reference kernels later; header-only so the runtime can share it.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_FLOAT16_H
#define SNUG_IR_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace snug {

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

inline float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

inline float bf16ToFloat(uint16_t half) {
  return floatFromBits(static_cast<uint32_t>(half) << 16);
}

inline uint16_t floatToBf16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t roundingBias = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

inline float f16ToFloat(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  uint32_t exponent = (half >> 10) & 0x1f;
  uint32_t mantissa = half & 0x3ff;
  if (exponent == 0x1f) // inf or NaN
    return floatFromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0)
      return floatFromBits(sign);
    // Subnormal: value = mantissa * 2^-24, exact in float.
    float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  return floatFromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline uint16_t floatToF16(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN
    return sign | 0x7e00;
  if (magnitude >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (magnitude < 0x38800000u) { // below the smallest normal f16 (2^-14)
    // Scale into the subnormal range and let the FPU round to nearest even.
    float scaled = floatFromBits(magnitude) * 16777216.0f; // * 2^24
    uint32_t rounded = static_cast<uint32_t>(scaled);
    float remainder = scaled - static_cast<float>(rounded);
    if (remainder > 0.5f || (remainder == 0.5f && (rounded & 1)))
      ++rounded;
    return sign | static_cast<uint16_t>(rounded);
  }
  uint32_t roundingBias = 0xfff + ((magnitude >> 13) & 1);
  uint32_t rebased = magnitude - (112u << 23) + roundingBias;
  return sign | static_cast<uint16_t>(rebased >> 13);
}

} // namespace snug

#endif // SNUG_IR_FLOAT16_H
