//===- Float16.h - f16 and bf16 conversions ---------------------*- C++ -*-===//
//
// Conversions between float and the 16-bit float formats, round to nearest
// even, NaN kept quiet, under the names the printer, the parser and the tools
// use. The one definition is core/ScalarOps.h's (std-only, and embedded in
// the CUDA prelude), so the IR's text, folding, the host kernels and the
// device round identically; this header only names it.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_FLOAT16_H
#define SNUG_IR_FLOAT16_H

#include "core/ScalarOps.h"

#include <cstdint>

namespace snug {

inline uint32_t floatBits(float value) { return scalar::floatBits(value); }
inline float floatFromBits(uint32_t bits) {
  return scalar::floatFromBits(bits);
}
inline float bf16ToFloat(uint16_t bits) { return scalar::bfloatToFloat(bits); }
inline uint16_t floatToBf16(float value) {
  return scalar::floatToBfloat(value);
}
inline float f16ToFloat(uint16_t bits) { return scalar::halfToFloat(bits); }
inline uint16_t floatToF16(float value) { return scalar::floatToHalf(value); }

/// `value` rounded to bf16 (or f16) and back: what storing it in 16 bits
/// keeps.
inline float roundThrough16Bits(float value, bool bf16) {
  return bf16 ? bf16ToFloat(floatToBf16(value)) : f16ToFloat(floatToF16(value));
}
/// The largest finite bf16 (or f16): past it a value may round to Inf.
inline float largest16BitFloat(bool bf16) {
  return bf16 ? 3.3895314e38f : 65504.0f;
}

} // namespace snug

#endif // SNUG_IR_FLOAT16_H
