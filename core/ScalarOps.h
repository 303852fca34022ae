//===- ScalarOps.h - Elementwise semantics, written once --------*- C++ -*-===//
//
// The scalar meaning of every elementwise op of the op table (core/Ops.def),
// of element loads and stores for every snug dtype, and of float -> integer
// conversion. One text, three users: the host reference kernels
// (runtime/host/kernels/ElementwiseKernels.cpp) and so constant folding,
// which runs them (passes/simplify/ConstantEval.cpp); and the CUDA kernels, whose
// prelude embeds this file verbatim (compiler/cuda/CudaPrelude.cpp, generated
// at build time) and whose elementwise emitter writes calls to it
// (compiler/cuda/ElementwiseExpr.h). So folding, the host executor and the
// device cannot disagree on a formula; the device differs only where its math
// library does (the bounds are below).
//
// Std-only, and it compiles three ways:
//   - host C++17 (the runtime, the compiler, the tests): std:: math;
//   - NVRTC (__CUDACC__, __CUDACC_RTC__): no headers at all; the prelude
//     defines int64_t ... first; CUDA's builtin math (expf, log1p, ...);
//   - the CUDA simulator (SNUG_CUDA_SIM, host C++ standing in for the
//     device): the host branch, so simulated kernels compute bit for bit
//     what the host kernels compute.
//
// The link to the op table is a naming convention: op Ops.def ID `Foo`
// (trait Elementwise) is the struct snug::scalar::Foo here.
// core/ScalarOpTable.h walks Ops.def and hands each such struct to the
// host kernel registration and the CUDA emitter; an Elementwise op without
// its struct does not compile. Adding an elementwise op is its Ops.def line
// (and ATTR lines, if it has attributes) and one struct below (Sinh: one
// line each, and one for the math shim). A struct has:
//   kArity     1, 2 or 3 operands passed to apply; kFold: a variadic fold,
//              apply(acc, next) left to right, then finish(acc, count);
//              kSelect: Where (apply(cond, a, b) on stored values)
//   kIntegerMath  integer (and bool) operands compute in int64_t with
//              wrapping; otherwise they compute in double and convert back
//              by the float -> integer rule
//   kCompare   the result is bool
//   Params     the op's attributes, bound once per node from its ATTR lines
//              in Ops.def (names, kinds and defaults live there only):
//              f[0], f[1] its Float attributes in ATTR order (NaN when one
//              without a default is absent), i its Int attribute, or 1 when
//              its String attribute equals the struct's kChoice
//   apply(operands..., const Params &)  templated on the compute type C
//   absent<C>(index, params)  the value of an absent optional operand (Clip)
//
// Compute type (computeKind below, the same for every user): float when
// every operand is f32/f16/bf16, double when one is f64 or floats meet
// integers, int64_t when all are integers or bool and the op has integer
// math (uint64_t when one of them is u64), double otherwise. f16/bf16 load
// as float and store rounded to nearest even, once.
//
// Special values. The rules follow onnxruntime 1.x on x86-64 (CPU provider),
// checked with its Python package; where onnxruntime is inconsistent or
// crashes, the rule chosen is stated:
//   - NaN propagates through every arithmetic op, keeping its sign where
//     onnxruntime does: Relu(NaN) = NaN, Sign(NaN) = NaN, Clip(NaN) = NaN,
//     HardSigmoid(NaN) = NaN, Max/Min(NaN, x) = Max/Min(x, NaN) = NaN (the
//     first NaN operand). ThresholdedRelu(NaN) = 0 (NaN > alpha is false),
//     as onnxruntime. Comparisons with NaN are false (Equal(NaN, NaN) = 0).
//     onnxruntime's f16 Max/Min drop a NaN second operand and its Erf gives
//     Erf(NaN) = 1; both are treated as its bugs: here every dtype follows
//     the f32 rule and Erf(NaN) = NaN.
//   - Signed zeros: Relu(-0) = -0, Sign(-0) = +0, Abs(-0) = +0, Floor/Ceil/
//     Round(-0) = -0, LeakyRelu(-0) = Elu(-0) = -0, Celu(-0) = Selu(-0) = +0,
//     Clip(-0) = -0; Max/Min of equal operands (+0, -0) give the second
//     (onnxruntime's f32/f64 rule).
//   - ±Inf: as IEEE arithmetic on the formulas below (Softsign(±Inf) = NaN,
//     HardSwish(-Inf) = NaN, Mish(-Inf) = NaN, Gelu(-Inf) = NaN, as
//     onnxruntime); Round is half to even.
//   - Denormals are values like any other: no flush to zero on the host
//     (the device compiles without -ftz).
//   - Float -> integer (Cast, and any op storing a float result into an
//     integer tensor): truncation toward zero where the value fits; to i64,
//     NaN and values outside [-2^63, 2^63) give INT64_MIN; to i32, i16, i8
//     and u8 the value converts to i32 first (NaN or outside the i32 range:
//     INT32_MIN) and then wraps to the width (two's complement). That is
//     x86's cvttss2si, which onnxruntime's static_cast compiles to: Cast
//     1e19 -> i64 = INT64_MIN, 300.0 -> i8 = 44, -129.0 -> u8 = 127,
//     3e9 -> i16 = 0. To u16 as to i16 (through i32, wrapped). To u32 the
//     value converts to i64 first (the rule above) and wraps to 32 bits:
//     -1.0 -> u32 = 4294967295, 5e9 -> u32 = 705032704, NaN -> 0. To u64:
//     below 2^63 (and NaN) through i64, wrapped (-1.0 -> 2^64 - 1, NaN ->
//     2^63), in [2^63, 2^64) exact, 2^64 and above 0. That is what x86-64
//     compilers emit for static_cast<uint32_t/uint64_t>(double) without
//     AVX-512 (cvttsd2si on 64 bits; for u64 a second one on x - 2^63),
//     as onnxruntime and numpy, ONNX's reference, are built.
//     To bool: x != 0 (NaN is true).
//   - Integer arithmetic wraps (two's complement): Add(INT32_MAX, 1) =
//     INT32_MIN, Abs/Neg(INT_MIN) = INT_MIN, as onnxruntime. Unsigned
//     operands wrap modulo 2^width the same way (Sub(u8 0, 1) = 255, Neg(u32
//     1) = 4294967295). u8, u16 and u32 compute in int64_t, which holds
//     them exactly; u64 computes in uint64_t (its own compute type below),
//     so it compares, divides and takes Mod as unsigned. Division and
//     Mod by zero crash onnxruntime (SIGFPE); here x / 0 = 0, Mod(x, 0) = 0,
//     Div(INT64_MIN, -1) = INT64_MIN (the wrapped quotient; i32's INT32_MIN
//     / -1 wraps the same way), Mod(x, -1) = 0.
//   - Integer Pow is pow on doubles then the float -> integer rule, as
//     onnxruntime: Pow(3, 40) = INT64_MIN (out of range), Pow(2, -1) = 0.
//   - Elu, Celu and Selu use expm1 and Gelu erfc (exact-arithmetic equal to
//     the ONNX formulas, without their cancellation): they are more accurate
//     than onnxruntime near 0 and far below it (Gelu(-10) is -7.6e-23 here,
//     -0 there).
//
// Device math: NVRTC compiles with --fmad=true and CUDA's libdevice, whose
// documented maximum errors (CUDA C Programming Guide, "Mathematical
// Functions") are: expf, exp 2 ulp; logf, log 1 ulp; log1pf, expm1f 1-2 ulp;
// tanf 4 ulp (sin and cos are m::frameFreeSin/Cos below,
// within 2 ulp, 1.5 measured); asin/acos/atan f 2-4 ulp; tanhf 2 ulp; erff 2 ulp,
// erfcf 4 ulp; powf 4 ulp; sqrtf, fmaf, rintf, floorf, ceilf, fabsf and
// + - * / correctly rounded (0 ulp). --fmad=true lets the device fuse an
// a*b+c into one fma, so the formulas here write every multiply-add they
// have as an explicit m::fma (HardSigmoid, Gelu's tanh form), which both
// sides compute alike; the others have none to fuse but a*b + 0, which
// fuses to the same value. So on a GPU the
// transcendental ops agree with the host within 4 ulp (8 for the ones
// composed of two: Gelu, Mish, Softplus, Celu, Selu, Sigmoid, HardSwish's
// product), and every other op bit for bit. The simulator's "device" is the
// host branch, so there every op is bit-exact (tests/unit/ScalarParityTest).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_SCALAROPS_H
#define SNUG_CORE_SCALAROPS_H

#if defined(__CUDACC__)
#define SNUG_HD __host__ __device__ __forceinline__
#else
#define SNUG_HD inline
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#endif

// Storage types of the 16-bit floats (the bits; arithmetic is in float).
struct snug_half { uint16_t bits; };
struct snug_bfloat { uint16_t bits; };

namespace snug {
namespace scalar {

//===----------------------------------------------------------------------===//
// The shim: bit casts and math, builtins on the device, std:: on the host
//===----------------------------------------------------------------------===//

#if defined(__CUDACC__)
SNUG_HD uint32_t floatBits(float x) { return __float_as_uint(x); }
SNUG_HD float floatFromBits(uint32_t b) { return __uint_as_float(b); }
#define SNUG_SCALAR_MATH1(NAME)                                                \
  SNUG_HD float NAME(float x) { return ::NAME##f(x); }                         \
  SNUG_HD double NAME(double x) { return ::NAME(x); }
#define SNUG_SCALAR_MATH2(NAME)                                                \
  SNUG_HD float NAME(float x, float y) { return ::NAME##f(x, y); }             \
  SNUG_HD double NAME(double x, double y) { return ::NAME(x, y); }
#else
SNUG_HD uint32_t floatBits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
SNUG_HD float floatFromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}
#define SNUG_SCALAR_MATH1(NAME)                                                \
  SNUG_HD float NAME(float x) { return std::NAME(x); }                         \
  SNUG_HD double NAME(double x) { return std::NAME(x); }
#define SNUG_SCALAR_MATH2(NAME)                                                \
  SNUG_HD float NAME(float x, float y) { return std::NAME(x, y); }             \
  SNUG_HD double NAME(double x, double y) { return std::NAME(x, y); }
#endif

namespace m {
SNUG_SCALAR_MATH1(acos)
SNUG_SCALAR_MATH1(acosh)
SNUG_SCALAR_MATH1(asin)
SNUG_SCALAR_MATH1(asinh)
SNUG_SCALAR_MATH1(atan)
SNUG_SCALAR_MATH1(atanh)
SNUG_SCALAR_MATH1(ceil)
SNUG_SCALAR_MATH1(cosh)
SNUG_SCALAR_MATH1(erf)
SNUG_SCALAR_MATH1(erfc)
SNUG_SCALAR_MATH1(exp)
SNUG_SCALAR_MATH1(expm1)
SNUG_SCALAR_MATH1(fabs)
SNUG_SCALAR_MATH1(floor)
SNUG_SCALAR_MATH1(log)
SNUG_SCALAR_MATH1(log1p)
SNUG_SCALAR_MATH1(rint)
SNUG_SCALAR_MATH1(sinh)
SNUG_SCALAR_MATH1(sqrt)
SNUG_SCALAR_MATH1(tan)
SNUG_SCALAR_MATH1(tanh)
SNUG_SCALAR_MATH2(fmod)
SNUG_SCALAR_MATH2(pow)
#if defined(__CUDACC__)
SNUG_HD float fma(float x, float y, float z) { return ::fmaf(x, y, z); }
SNUG_HD double fma(double x, double y, double z) { return ::fma(x, y, z); }
#else
SNUG_HD float fma(float x, float y, float z) { return std::fma(x, y, z); }
SNUG_HD double fma(double x, double y, double z) { return std::fma(x, y, z); }
#endif
// Integers reach these only through ops without integer math, which
// compute in double; fabs is the one integer math asks for.
SNUG_HD int64_t fabs(int64_t x) {
  return x < 0 ? int64_t(0 - uint64_t(x)) : x;
}
SNUG_HD uint64_t fabs(uint64_t x) { return x; }

// sin and cos of a float without a stack frame. CUDA's sinf/cosf reduce
// |x| > 105615 by Payne-Hanek into a local array (a 32 B frame in every
// kernel calling them: hf_llama's rotary Sin/Cos, found by --kernel-report),
// so the device computes them here: Cody-Waite reduction by pi/2 in three
// parts below 105615 (CUDA's own fast path), above it Payne-Hanek in
// registers (the 96 bits of 2/pi it needs read by a switch, the product
// with the 24-bit mantissa taken mod 4 in 64-bit integers, 62 fraction
// bits), then Taylor polynomials to degree 11/12 on |r| <= pi/4 (truncation
// below 1e-11). Within 2 ulp of the exact value over every finite float
// (tests/unit/ScalarParityTest: FrameFreeTrig); Inf and NaN give NaN.
// The host keeps std::sin/std::cos.
namespace trig {
/// Word i of 2/pi's binary fraction after one zero word: word 1 holds its
/// first 32 bits.
SNUG_HD uint32_t twoOverPiWord(int i) {
  switch (i) {
  case 1: return 0xA2F9836Eu;
  case 2: return 0x4E441529u;
  case 3: return 0xFC2757D1u;
  case 4: return 0xF534DDC0u;
  case 5: return 0xDB629599u;
  case 6: return 0x3C439041u;
  case 7: return 0xFE5163ABu;
  default: return 0u;
  }
}

/// x = q * pi/2 + r with |r| <= pi/4 (a hair more below 105615); q mod 4
/// is what the callers use.
SNUG_HD float reduce(float x, int &q) {
  float j = rint(x * 0.636619772f);
  if (!(fabs(x) > 105615.0f)) {
    q = j == j ? int(j) : 0;
    if (j == 0.0f)
      return x; // keeps -0
    float r = fma(j, -1.57079601e+00f, x);
    r = fma(j, -3.13916473e-07f, r);
    return fma(j, -5.39030253e-15f, r);
  }
  uint32_t bits = floatBits(x);
  uint32_t biased = (bits >> 23) & 0xffu;
  if (biased == 0xffu) {
    q = 0;
    return x - x; // Inf, NaN: NaN
  }
  // |x| = M * 2^e. The bits of 2/pi of weight 2^-k with k < e - 1 give
  // multiples of 4 (M is an integer): the 96 from k = e - 1 on suffice,
  // table bit t being k = t - 31.
  uint64_t mantissa = (bits & 0x7fffffu) | 0x800000u;
  int e = int(biased) - 150, first = e + 30;
  int w = first >> 5, s = first & 31;
  uint32_t a0 = twoOverPiWord(w), a1 = twoOverPiWord(w + 1),
           a2 = twoOverPiWord(w + 2), a3 = twoOverPiWord(w + 3);
  uint32_t hi = s ? (a0 << s) | (a1 >> (32 - s)) : a0;
  uint32_t mid = s ? (a1 << s) | (a2 >> (32 - s)) : a1;
  uint32_t lo = s ? (a2 << s) | (a3 >> (32 - s)) : a2;
  // M * window mod 2^96, in units of 2^-94 quarter turns: 2 integer bits.
  uint64_t p0 = mantissa * lo;
  uint64_t p1 = mantissa * mid + (p0 >> 32);
  uint32_t top = uint32_t(mantissa * hi + (p1 >> 32));
  uint64_t turns = (uint64_t(top) << 32) | (p1 & 0xffffffffu);
  int quadrant = int(turns >> 62);
  uint64_t fraction = turns << 2; // 62 bits, then zeros
  double r;
  if (fraction >> 63) { // f >= 1/2: the next quadrant, r = f - 1 < 0
    quadrant += 1;
    r = -double(0 - fraction);
  } else {
    r = double(fraction);
  }
  r *= 1.5707963267948966 / 18446744073709551616.0; // pi/2 * 2^-64
  if (bits >> 31) {
    r = -r;
    quadrant = -quadrant;
  }
  q = quadrant;
  return float(r);
}

SNUG_HD float sinPoly(float r) {
  float r2 = r * r;
  float p = fma(r2, -2.50521084e-08f, 2.75573192e-06f);
  p = fma(p, r2, -1.98412698e-04f);
  p = fma(p, r2, 8.33333333e-03f);
  p = fma(p, r2, -1.66666667e-01f);
  return r == 0.0f ? r : fma(p * r2, r, r); // sin(-0) = -0
}

SNUG_HD float cosPoly(float r) {
  float r2 = r * r;
  float p = fma(r2, 2.08767570e-09f, -2.75573192e-07f);
  p = fma(p, r2, 2.48015873e-05f);
  p = fma(p, r2, -1.38888889e-03f);
  p = fma(p, r2, 4.16666667e-02f);
  p = fma(p, r2, -0.5f);
  return fma(p, r2, 1.0f);
}

/// sin of x + quarter * pi/2.
SNUG_HD float sinShifted(float x, int quarter) {
  int q;
  float r = reduce(x, q);
  switch ((q + quarter) & 3) {
  case 0: return sinPoly(r);
  case 1: return cosPoly(r);
  case 2: return -sinPoly(r);
  default: return -cosPoly(r);
  }
}
} // namespace trig

SNUG_HD float frameFreeSin(float x) { return trig::sinShifted(x, 0); }
SNUG_HD float frameFreeCos(float x) { return trig::sinShifted(x, 1); }
#if defined(__CUDACC__)
SNUG_HD float sin(float x) { return frameFreeSin(x); }
SNUG_HD float cos(float x) { return frameFreeCos(x); }
SNUG_HD double sin(double x) { return ::sin(x); }
SNUG_HD double cos(double x) { return ::cos(x); }
#else
SNUG_HD float sin(float x) { return std::sin(x); }
SNUG_HD float cos(float x) { return std::cos(x); }
SNUG_HD double sin(double x) { return std::sin(x); }
SNUG_HD double cos(double x) { return std::cos(x); }
#endif
} // namespace m

#undef SNUG_SCALAR_MATH1
#undef SNUG_SCALAR_MATH2

constexpr int64_t kInt64Min = -9223372036854775807LL - 1;
constexpr int64_t kInt64Max = 9223372036854775807LL;
constexpr int32_t kInt32Min = -2147483647 - 1;

template <class C> SNUG_HD bool isNaN(C x) { return x != x; }

//===----------------------------------------------------------------------===//
// Conversions: 16-bit floats, float -> integer, stores
//===----------------------------------------------------------------------===//

SNUG_HD float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1fu)
    return floatFromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent)
    return floatFromBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  float value = (float)mantissa * 5.9604644775390625e-8f; // 2^-24, exact
  return sign ? -value : value;
}

/// Round to nearest even; overflow to Inf; NaN becomes the quiet NaN with
/// its sign.
SNUG_HD uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) // inf, nan (kept quiet)
    return (uint16_t)(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
  if (magnitude >= 0x477ff000u) // rounds to 65520 or more
    return (uint16_t)(sign | 0x7c00u);
  if (magnitude < 0x38800000u) { // below 2^-14: subnormal or zero
    // magnitude * 2^24 is exact in float below 2^11; round half to even.
    float scaled = floatFromBits(magnitude) * 16777216.0f;
    uint32_t whole = (uint32_t)scaled;
    float rest = scaled - (float)whole;
    if (rest > 0.5f || (rest == 0.5f && (whole & 1u)))
      ++whole;
    return (uint16_t)(sign | whole);
  }
  uint32_t h = (((magnitude >> 23) - 112u) << 10) | ((magnitude >> 13) & 0x3ffu);
  uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;
  return (uint16_t)(sign | h);
}

SNUG_HD float bfloatToFloat(uint16_t b) {
  return floatFromBits((uint32_t)b << 16);
}

SNUG_HD uint16_t floatToBfloat(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: kept quiet
    return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// TF32, as cvt.rna.tf32.f32 gives it (PTX ISA, "cvt"): the float rounded
/// to 10 explicit mantissa bits, to nearest with ties away from zero, its
/// low 13 bits zero, still a float (storage stays f32). Adding half an ulp
/// of tf32 to the sign-magnitude bits and truncating rounds the magnitude
/// that way, carrying into the exponent (0x3fbff000, 1.49951171875, gives
/// 1.5; the largest floats give Inf, as overflow does). Inf stays Inf; NaN
/// stays NaN with its sign, made quiet (the mask would otherwise turn a NaN
/// whose payload lies in the low bits into Inf). The one rounding of the
/// --precision=tf32 contractions: the host kernels (Conv, MatMul, Gemm),
/// the CUDA prelude's tf32 MMA emulation and the simulator share it.
SNUG_HD float roundToTf32(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7f800000u) == 0x7f800000u) // Inf, NaN: no rounding
    return floatFromBits(
        (x & 0x7fffffffu) > 0x7f800000u ? (x | 0x00400000u) & 0xffffe000u : x);
  return floatFromBits((x + 0x1000u) & 0xffffe000u);
}

/// Float -> i64 (the header's rule): truncation; NaN and values outside
/// [-2^63, 2^63) give INT64_MIN.
SNUG_HD int64_t floatToInt64(double x) {
  if (x >= -9223372036854775808.0 && x < 9223372036854775808.0)
    return (int64_t)x;
  return kInt64Min;
}

/// Float -> i32 (and, wrapped, the narrower integers): truncation; NaN and
/// values whose truncation is outside the i32 range give INT32_MIN.
SNUG_HD int32_t floatToInt32(double x) {
  if (x > -2147483649.0 && x < 2147483648.0)
    return (int32_t)x;
  return kInt32Min;
}

/// Float -> u64 (the header's rule): below 2^63 (and NaN) through i64,
/// wrapped; [2^63, 2^64) exact; 2^64 and above 0.
SNUG_HD uint64_t floatToUint64(double x) {
  if (x >= 9223372036854775808.0)
    return x < 18446744073709551616.0
               ? (uint64_t)floatToInt64(x - 9223372036854775808.0) ^
                     0x8000000000000000ull
               : 0;
  return (uint64_t)floatToInt64(x);
}

/// Conversion of a compute value (float, double, int64_t, uint64_t, bool)
/// to a storage type: Convert<T>::from(v).
template <class T> struct Convert;

template <> struct Convert<float> {
  SNUG_HD static float from(float v) { return v; }
  SNUG_HD static float from(double v) { return (float)v; }
  SNUG_HD static float from(int64_t v) { return (float)v; }
  SNUG_HD static float from(uint64_t v) { return (float)v; }
  SNUG_HD static float from(bool v) { return v ? 1.0f : 0.0f; }
};
template <> struct Convert<double> {
  SNUG_HD static double from(float v) { return v; }
  SNUG_HD static double from(double v) { return v; }
  SNUG_HD static double from(int64_t v) { return (double)v; }
  SNUG_HD static double from(uint64_t v) { return (double)v; }
  SNUG_HD static double from(bool v) { return v ? 1.0 : 0.0; }
};
// f64 -> f16/bf16 rounds through float (as onnxruntime's Cast does).
template <> struct Convert<snug_half> {
  SNUG_HD static snug_half from(float v) { return {floatToHalf(v)}; }
  SNUG_HD static snug_half from(double v) { return {floatToHalf((float)v)}; }
  SNUG_HD static snug_half from(int64_t v) { return {floatToHalf((float)v)}; }
  SNUG_HD static snug_half from(uint64_t v) { return {floatToHalf((float)v)}; }
  SNUG_HD static snug_half from(bool v) { return {uint16_t(v ? 0x3c00u : 0u)}; }
};
template <> struct Convert<snug_bfloat> {
  SNUG_HD static snug_bfloat from(float v) { return {floatToBfloat(v)}; }
  SNUG_HD static snug_bfloat from(double v) {
    return {floatToBfloat((float)v)};
  }
  SNUG_HD static snug_bfloat from(int64_t v) {
    return {floatToBfloat((float)v)};
  }
  SNUG_HD static snug_bfloat from(uint64_t v) {
    return {floatToBfloat((float)v)};
  }
  SNUG_HD static snug_bfloat from(bool v) { return {uint16_t(v ? 0x3f80u : 0u)}; }
};
template <> struct Convert<bool> {
  SNUG_HD static bool from(float v) { return v != 0; }
  SNUG_HD static bool from(double v) { return v != 0; }
  SNUG_HD static bool from(int64_t v) { return v != 0; }
  SNUG_HD static bool from(uint64_t v) { return v != 0; }
  SNUG_HD static bool from(bool v) { return v; }
};
/// The integers: integer values wrap to the width; floats follow the rule
/// (through i32 for the narrow ones, i64 for u32, their own for i64, u64).
template <class I> struct ConvertInt {
  SNUG_HD static I wrap(uint64_t v) { return (I)v; }
  SNUG_HD static I from(int64_t v) { return wrap((uint64_t)v); }
  SNUG_HD static I from(uint64_t v) { return wrap(v); }
  SNUG_HD static I from(bool v) { return (I)(v ? 1 : 0); }
  SNUG_HD static I from(double v) {
    if (sizeof(I) == 8)
      return I(0) < (I)-1 ? (I)floatToUint64(v) : (I)floatToInt64(v);
    if (sizeof(I) == 4 && I(0) < (I)-1) // u32
      return wrap((uint64_t)floatToInt64(v));
    return wrap((uint64_t)(int64_t)floatToInt32(v));
  }
  SNUG_HD static I from(float v) { return from((double)v); }
};
template <> struct Convert<int64_t> : ConvertInt<int64_t> {};
template <> struct Convert<int32_t> : ConvertInt<int32_t> {};
template <> struct Convert<int16_t> : ConvertInt<int16_t> {};
template <> struct Convert<int8_t> : ConvertInt<int8_t> {};
template <> struct Convert<uint8_t> : ConvertInt<uint8_t> {};
template <> struct Convert<uint16_t> : ConvertInt<uint16_t> {};
template <> struct Convert<uint32_t> : ConvertInt<uint32_t> {};
template <> struct Convert<uint64_t> : ConvertInt<uint64_t> {};

/// A stored element as the value arithmetic starts from: float for the
/// 16-bit floats, the element itself otherwise.
template <class T> SNUG_HD T widen(T v) { return v; }
SNUG_HD float widen(snug_half v) { return halfToFloat(v.bits); }
SNUG_HD float widen(snug_bfloat v) { return bfloatToFloat(v.bits); }

/// A widened element (or any arithmetic value) as one of the compute
/// types Convert takes: float, double, bool and uint64_t as they are,
/// every other integer type as int64_t (which holds u8, u16, u32 exactly).
SNUG_HD float normalize(float v) { return v; }
SNUG_HD double normalize(double v) { return v; }
SNUG_HD bool normalize(bool v) { return v; }
SNUG_HD uint64_t normalize(uint64_t v) { return v; }
template <class I> SNUG_HD int64_t normalize(I v) { return (int64_t)v; }

/// A compute value converted to another compute type (float, double,
/// int64_t or bool). Integers from floats follow the float -> integer rule.
template <class To, class From> SNUG_HD To to(From v) {
  return Convert<To>::from(v);
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

/// Attribute values an op reads, bound once per node (ScalarOpTable.h's
/// bindParams, from the op's ATTR lines in Ops.def): its Float attributes in
/// ATTR order, then its Int attribute (or String choice).
struct Params {
  float f[2];
  int64_t i;
};

struct OpBase {
  static constexpr int kArity = 1;
  static constexpr bool kFold = false;
  static constexpr bool kSelect = false;
  static constexpr bool kIntegerMath = false;
  static constexpr bool kCompare = false;
  /// The value of a String attribute that binds Params::i = 1.
  static constexpr const char *kChoice = nullptr;
  template <class C> SNUG_HD static C absent(int, const Params &) {
    return C(0);
  }
};

/// Integer-exact ops (wrapping int64 arithmetic on integers and bool).
struct IntOpBase : OpBase {
  static constexpr bool kIntegerMath = true;
};

// Wrapping int64 arithmetic; float types pass through the C++ operators.
template <class C> SNUG_HD C wrapAdd(C a, C b) { return a + b; }
template <class C> SNUG_HD C wrapSub(C a, C b) { return a - b; }
template <class C> SNUG_HD C wrapMul(C a, C b) { return a * b; }
template <> SNUG_HD int64_t wrapAdd(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
template <> SNUG_HD int64_t wrapSub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
template <> SNUG_HD int64_t wrapMul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}
template <class C> SNUG_HD C negate(C x) { return -x; }
template <> SNUG_HD int64_t negate(int64_t x) {
  return (int64_t)(0 - (uint64_t)x);
}

/// log(1 + e^x), x itself above 20 (where e^-x is below half an ulp of x in
/// float).
template <class C> SNUG_HD C softplus(C x) {
  return x > C(20) ? x : m::log1p(m::exp(x));
}

/// min(max(x, 0), 1) with NaN kept.
template <class C> SNUG_HD C clamp01(C t) {
  return isNaN(t) ? t : (t < C(0) ? C(0) : (t > C(1) ? C(1) : t));
}

#define SNUG_UNARY_MATH(NAME, FN)                                              \
  struct NAME : OpBase {                                                       \
    template <class C> SNUG_HD static C apply(C x, const Params &) {           \
      return m::FN(x);                                                         \
    }                                                                          \
  };

// Unary ops.
struct Abs : IntOpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return m::fabs(x);
  }
};
SNUG_UNARY_MATH(Acos, acos)
SNUG_UNARY_MATH(Acosh, acosh)
SNUG_UNARY_MATH(Asin, asin)
SNUG_UNARY_MATH(Asinh, asinh)
SNUG_UNARY_MATH(Atan, atan)
SNUG_UNARY_MATH(Atanh, atanh)
SNUG_UNARY_MATH(Ceil, ceil)
SNUG_UNARY_MATH(Cos, cos)
SNUG_UNARY_MATH(Cosh, cosh)
SNUG_UNARY_MATH(Erf, erf)
SNUG_UNARY_MATH(Exp, exp)
SNUG_UNARY_MATH(Floor, floor)
SNUG_UNARY_MATH(Log, log)
SNUG_UNARY_MATH(Round, rint) // half to even
SNUG_UNARY_MATH(Sin, sin)
SNUG_UNARY_MATH(Sinh, sinh)
SNUG_UNARY_MATH(Sqrt, sqrt)
SNUG_UNARY_MATH(Tan, tan)
SNUG_UNARY_MATH(Tanh, tanh)
#undef SNUG_UNARY_MATH

struct Celu : OpBase {
  // max(0, x) + min(0, alpha (e^(x/alpha) - 1)); + 0 makes -0 give +0.
  template <class C> SNUG_HD static C apply(C x, const Params &p) {
    C alpha = C(p.f[0]);
    return x > C(0) ? x : alpha * m::expm1(x / alpha) + C(0);
  }
};

/// Bounds from operands 1 and 2 (scalars), else the `min`/`max` attributes
/// of opset < 11 (f[0], f[1]; NaN when absent), else none. NaN passes
/// through; min(max(x, lo), hi), so hi wins when lo > hi.
struct Clip : IntOpBase {
  static constexpr int kArity = 3;
  template <class C> SNUG_HD static C absent(int index, const Params &p) {
    float bound = p.f[index == 1 ? 0 : 1];
    bool isInteger = C(0.5) == C(0);
    // The integer compute types' range: int64_t's, or uint64_t's.
    bool isUnsigned = C(0) < C(-1);
    C lowest = isUnsigned ? C(0) : C(kInt64Min);
    C highest = isUnsigned ? C(-1) : C(kInt64Max);
    if (bound != bound) { // no bound
      C inf = to<C>(floatFromBits(0x7f800000u)); // for floats only
      return index == 1 ? (isInteger ? lowest : -inf)
                        : (isInteger ? highest : inf);
    }
    // Integers: an infinite bound is no bound; unsigned ones start at 0.
    if (isInteger && (bound > 9.2e18f || bound < -9.2e18f ||
                      (isUnsigned && bound < 0)))
      return bound < 0 ? lowest : highest;
    return to<C>(bound);
  }
  template <class C>
  SNUG_HD static C apply(C x, C lo, C hi, const Params &) {
    C t = x < lo ? lo : x;
    return t > hi ? hi : t;
  }
};

struct Elu : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &p) {
    return x >= C(0) ? x : C(p.f[0]) * m::expm1(x);
  }
};

/// x/2 (1 + erf(x/sqrt 2)) = x/2 erfc(-x/sqrt 2); the tanh form
/// x/2 (1 + tanh u) = x / (1 + e^(-2u)).
struct Gelu : OpBase {
  static constexpr const char *kChoice = "tanh"; // approximate
  template <class C> SNUG_HD static C apply(C x, const Params &p) {
    if (p.i) {
      // x + 0.044715 x^3 as an explicit fma: NVRTC's --fmad=true would
      // fuse it on the device only.
      C u = C(0.7978845608028654) * m::fma(C(0.044715) * x * x, x, x);
      return x / (C(1) + m::exp(C(-2) * u));
    }
    return C(0.5) * x * m::erfc(-x * C(0.70710678118654752440));
  }
};

struct HardSigmoid : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &p) {
    return clamp01(m::fma(C(p.f[0]), x, C(p.f[1])));
  }
};

/// x * HardSigmoid(x) with alpha 1/6, beta 1/2, as (x + 3) / 6: equal in
/// exact arithmetic, without x/6 + 1/2's cancellation near -3.
struct HardSwish : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return x * clamp01((x + C(3)) / C(6));
  }
};

struct LeakyRelu : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &p) {
    return x >= C(0) ? x : C(p.f[0]) * x;
  }
};

struct Mish : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return x * m::tanh(softplus(x));
  }
};

/// -x: flips the sign of zeros and NaN; INT_MIN wraps to itself.
struct Neg : IntOpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return negate(x);
  }
};

struct Not : IntOpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return x == C(0) ? C(1) : C(0);
  }
};

/// The bitwise ops compute on int64_t (two's complement; the store wraps to
/// the element's width, so ~x of a u8 is 255 - x). Ops.def gives them
/// integer types only: the other compute types are instantiated by the
/// dispatch but never run, and give 0.
enum class BitOp { And, Or, Xor, Not };
template <class C> SNUG_HD C bitwise(BitOp, C, C) { return C(0); }
template <> SNUG_HD int64_t bitwise(BitOp op, int64_t a, int64_t b) {
  switch (op) {
  case BitOp::And:
    return a & b;
  case BitOp::Or:
    return a | b;
  case BitOp::Xor:
    return a ^ b;
  case BitOp::Not:
    break;
  }
  return ~a;
}
template <> SNUG_HD uint64_t bitwise(BitOp op, uint64_t a, uint64_t b) {
  return (uint64_t)bitwise(op, (int64_t)a, (int64_t)b);
}
struct BitwiseNot : IntOpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return bitwise(BitOp::Not, x, x);
  }
};

struct Reciprocal : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return C(1) / x;
  }
};

/// NaN and -0 pass through (x < 0 is false for both).
struct Relu : IntOpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return x < C(0) ? C(0) : x;
  }
};

struct Selu : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &p) {
    return C(p.f[1]) * (x > C(0) ? x : C(p.f[0]) * m::expm1(x) + C(0));
  }
};

struct Sigmoid : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return C(1) / (C(1) + m::exp(-x));
  }
};

/// -0 gives +0, NaN stays NaN.
struct Sign : IntOpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return x > C(0) ? C(1) : (x < C(0) ? C(-1) : (x == C(0) ? C(0) : x));
  }
};

struct Softplus : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return softplus(x);
  }
};

struct Softsign : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &) {
    return x / (C(1) + m::fabs(x));
  }
};

struct ThresholdedRelu : OpBase {
  template <class C> SNUG_HD static C apply(C x, const Params &p) {
    return x > C(p.f[0]) ? x : C(0);
  }
};

/// x for x >= 0 (and NaN, -0), x * slope below.
struct PRelu : IntOpBase {
  static constexpr int kArity = 2;
  template <class C> SNUG_HD static C apply(C x, C slope, const Params &) {
    return x < C(0) ? wrapMul(x, slope) : x;
  }
};

// Binary ops.
struct BinaryBase : IntOpBase {
  static constexpr int kArity = 2;
};

struct Add : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return wrapAdd(a, b);
  }
};
struct Sub : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return wrapSub(a, b);
  }
};
struct Mul : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return wrapMul(a, b);
  }
};

template <class C> SNUG_HD C divide(C a, C b) { return a / b; }
template <> SNUG_HD int64_t divide(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1) // INT64_MIN / -1 wraps to INT64_MIN
    return (int64_t)(0 - (uint64_t)a);
  return a / b;
}
template <> SNUG_HD uint64_t divide(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : a / b;
}
struct Div : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return divide(a, b);
  }
};

/// fmod = 0: the sign of the divisor (Python's %); fmod = 1: the dividend's
/// (C's fmod).
template <class C> SNUG_HD C modulo(C a, C b, bool truncated) {
  C r = m::fmod(a, b);
  if (truncated)
    return r;
  return (r != C(0) && ((r < C(0)) != (b < C(0)))) ? r + b : r;
}
template <> SNUG_HD int64_t modulo(int64_t a, int64_t b, bool truncated) {
  if (b == 0 || b == -1) // -1: INT64_MIN % -1 traps in C
    return 0;
  int64_t r = a % b;
  if (truncated)
    return r;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Without signs both fmod modes agree.
template <> SNUG_HD uint64_t modulo(uint64_t a, uint64_t b, bool) {
  return b == 0 ? 0 : a % b;
}
struct Mod : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &p) {
    return modulo(a, b, p.i != 0);
  }
};

struct Pow : OpBase {
  static constexpr int kArity = 2;
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return m::pow(a, b);
  }
};

struct And : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return (a != C(0)) && (b != C(0)) ? C(1) : C(0);
  }
};
struct Or : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return (a != C(0)) || (b != C(0)) ? C(1) : C(0);
  }
};
struct Xor : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return (a != C(0)) != (b != C(0)) ? C(1) : C(0);
  }
};
struct BitwiseAnd : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return bitwise(BitOp::And, a, b);
  }
};
struct BitwiseOr : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return bitwise(BitOp::Or, a, b);
  }
};
struct BitwiseXor : BinaryBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return bitwise(BitOp::Xor, a, b);
  }
};
/// a's bits shifted by b places, as the unsigned 64-bit word the compute
/// type holds (so a right shift brings in zeros whatever the width); the
/// store wraps a left shift to the element's width. Shifts of 64 or more
/// give 0, as every bit is shifted out (C leaves them undefined).
template <class C> SNUG_HD C shiftBits(C a, C b, bool left) {
  uint64_t bits = (uint64_t)(int64_t)a, count = (uint64_t)(int64_t)b;
  if (count >= 64)
    return C(0);
  return C((int64_t)(left ? bits << count : bits >> count));
}
/// ONNX types it on unsigned integers only (Ops.def), which compute in
/// int64_t; the float instantiations exist only for the emitter's sake.
struct BitShift : BinaryBase {
  static constexpr const char *kChoice = "LEFT"; // direction
  template <class C> SNUG_HD static C apply(C a, C b, const Params &p) {
    return shiftBits(a, b, p.i != 0);
  }
};

// Comparisons: the result is bool; NaN compares false.
struct CompareBase : BinaryBase {
  static constexpr bool kCompare = true;
};
struct Equal : CompareBase {
  template <class C> SNUG_HD static bool apply(C a, C b, const Params &) {
    return a == b;
  }
};
struct Greater : CompareBase {
  template <class C> SNUG_HD static bool apply(C a, C b, const Params &) {
    return a > b;
  }
};
struct GreaterOrEqual : CompareBase {
  template <class C> SNUG_HD static bool apply(C a, C b, const Params &) {
    return a >= b;
  }
};
struct Less : CompareBase {
  template <class C> SNUG_HD static bool apply(C a, C b, const Params &) {
    return a < b;
  }
};
struct LessOrEqual : CompareBase {
  template <class C> SNUG_HD static bool apply(C a, C b, const Params &) {
    return a <= b;
  }
};
/// x != x holds exactly for NaN (of either sign).
struct IsNaN : OpBase {
  static constexpr bool kCompare = true;
  template <class C> SNUG_HD static bool apply(C x, const Params &) {
    return x != x;
  }
};

// Variadic folds: acc = apply(acc, next) over the operands left to right,
// then finish(acc, count).
struct FoldBase : IntOpBase {
  static constexpr int kArity = 2;
  static constexpr bool kFold = true;
  template <class C> SNUG_HD static C finish(C acc, int) { return acc; }
};
/// The first NaN operand, else the larger (the second when equal).
struct Max : FoldBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return isNaN(a) ? a : isNaN(b) ? b : (a > b ? a : b);
  }
};
/// The first NaN operand, else the smaller (the second when equal).
struct Min : FoldBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return isNaN(a) ? a : isNaN(b) ? b : (a < b ? a : b);
  }
};
struct Sum : FoldBase {
  template <class C> SNUG_HD static C apply(C a, C b, const Params &) {
    return wrapAdd(a, b);
  }
};
/// The sum in the compute type, divided by the count (integers truncate).
struct Mean : Sum {
  template <class C> SNUG_HD static C finish(C acc, int count) {
    return divide(acc, C(count));
  }
};

/// Where(cond, a, b): a's or b's element as stored, never converted.
struct Where : OpBase {
  static constexpr int kArity = 3;
  static constexpr bool kSelect = true;
  template <class T>
  SNUG_HD static T apply(bool cond, T a, T b, const Params &) {
    return cond ? a : b;
  }
};


//===----------------------------------------------------------------------===//
// Compute types
//===----------------------------------------------------------------------===//

enum class ComputeKind { Float, Double, Int64, UInt64 };

/// Classes of operand element types, for computeKind. U64 is apart from the
/// other integers (and bool) because int64_t cannot hold it.
enum class ElementClass { NarrowFloat, F64, Integer, U64 };

/// The compute type of op `Op` over operands of the given classes (absent
/// operands left out): the rule in the file comment.
template <class Op>
ComputeKind computeKind(const ElementClass *classes, int count) {
  bool anyFloat = false, anyF64 = false, anyInteger = false, anyU64 = false;
  for (int k = 0; k < count; ++k) {
    bool integer =
        classes[k] == ElementClass::Integer || classes[k] == ElementClass::U64;
    anyFloat |= !integer;
    anyF64 |= classes[k] == ElementClass::F64;
    anyInteger |= integer;
    anyU64 |= classes[k] == ElementClass::U64;
  }
  if (!anyFloat)
    return !Op::kIntegerMath ? ComputeKind::Double
           : anyU64          ? ComputeKind::UInt64
                             : ComputeKind::Int64;
  return anyF64 || anyInteger ? ComputeKind::Double : ComputeKind::Float;
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Cast and snug.cast (Ops.def's Conversion trait): operand element i
/// converted to the result's dtype. The value passes through one compute
/// type, double when either side is a float (f16/bf16 widen exactly) and
/// int64_t when both are integers or bool (integers then wrap to the
/// result's width, bool reads 0/1), and the store converts it by
/// Convert<T> above: floats to integers by the float -> integer rule, f64
/// to f16/bf16 through float, anything to bool as x != 0. Through double
/// rather than straight to the result, because that is what onnxruntime's
/// Cast computes: an i64 above 2^53 rounds once to double and again to f32.
///
/// Not an Elementwise struct (ScalarOpTable.h does not walk it): its
/// compute type depends on the result's dtype as well as the operand's,
/// which computeKind cannot see. Every conversion takes kind() and apply()
/// from here: the host's Cast kernel (DataMovementKernels.cpp), a fused
/// body on the host (FusedKernel.cpp), and the CUDA code of both
/// (ElementwiseExpr.cpp, for ElementwiseEmitters.cpp's emitCast and
/// BodyCode.cpp).
struct Cast {
  SNUG_HD static ComputeKind kind(ElementClass from, ElementClass to) {
    bool fromInteger =
        from == ElementClass::Integer || from == ElementClass::U64;
    bool toInteger = to == ElementClass::Integer || to == ElementClass::U64;
    return fromInteger && toInteger ? ComputeKind::Int64 : ComputeKind::Double;
  }
  /// The value in the compute type, unchanged: the conversion is the load
  /// into kind()'s type and the store to the result's.
  template <class C> SNUG_HD static C apply(C x) { return x; }
};

//===----------------------------------------------------------------------===//
// snug.dropout_mask: the counter-based hash of training-mode Dropout
//===----------------------------------------------------------------------===//
//
// Element i of a mask keeps its value where dropoutHash(seed, salt, i) /
// 2^32 >= ratio. A pure function of (seed, salt, i), so any element can be
// computed alone (one thread each on the device, in any order) and a
// recomputed mask (remat) is the same mask. 32-bit unsigned words only:
// the host, the simulator and NVRTC agree bit for bit, and so does the
// Python port the tests recompute masks with
// (tests/lit/snugc/Inputs/dropout_mask.py). Each word is folded in by
// murmur3's 32-bit finalizer (fmix32, a bijection with full avalanche), so
// distinct indices under one seed and salt give distinct hashes.

SNUG_HD uint32_t dropoutMix(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

SNUG_HD uint32_t dropoutHash(uint64_t seed, uint32_t salt, uint64_t index) {
  uint32_t h = dropoutMix(uint32_t(seed) ^ 0x9e3779b9u);
  h = dropoutMix(h ^ uint32_t(seed >> 32));
  h = dropoutMix(h ^ salt);
  h = dropoutMix(h ^ uint32_t(index));
  return dropoutMix(h ^ uint32_t(index >> 32));
}

/// Whether element `index` is kept: hash / 2^32 >= ratio, compared exactly
/// (the product by 2^32 is exact in double).
SNUG_HD bool dropoutKeeps(uint64_t seed, uint32_t salt, uint64_t index,
                          float ratio) {
  return double(dropoutHash(seed, salt, index)) >= double(ratio) * 4294967296.0;
}

/// The value of a kept element, 1 / (1 - ratio) rounded to f32 (every
/// user divides in f32, correctly rounded on the host and the device).
SNUG_HD float dropoutScale(float ratio) { return 1.0f / (1.0f - ratio); }

/// TopK's order as unsigned 64-bit keys (the kernels compare keys; ties go
/// to the lower index): an integer with its sign bit flipped; a float,
/// widened to double with -0.0 as +0.0, with a negative number's bits
/// inverted and a positive one's sign bit set (IEEE 754 magnitudes order
/// as their bit patterns), NaN the largest key.
SNUG_HD uint64_t topKKey(int64_t value) {
  return uint64_t(value) ^ (uint64_t(1) << 63);
}
SNUG_HD uint64_t topKKey(double value) {
  if (value != value)
    return ~uint64_t(0);
  if (value == 0)
    value = 0; // -0.0 sorts with +0.0
#if defined(__CUDACC__)
  uint64_t bits = uint64_t(__double_as_longlong(value));
#else
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
#endif
  return (bits >> 63) ? ~bits : bits | (uint64_t(1) << 63);
}

} // namespace scalar
} // namespace snug

#endif // SNUG_CORE_SCALAROPS_H
