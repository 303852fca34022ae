//===- ValueRanges.h - How large each float value can get -------*- C++ -*-===//
//
// An interval [lo, hi] per float value of a module, from the weights' data
// and each op's semantics, for lower-precision's range rule: a node whose
// operand or result may pass the lowered type's largest value computes in
// f32 (in f16, 65504: N squares of an activation summed, exp of one, a
// weight of 1e7, x^4).
//
// What the analysis assumes: an activation of unknown origin is ordinary,
// within [-kOrdinaryActivation, kOrdinaryActivation] (16). That covers the
// graph inputs and the results of the ops that learn or normalise their
// scale (MatMul, Gemm, Conv, ConvTranspose, the normalisations, attention,
// and any op it has no rule for): a trained network keeps those ordinary,
// and a worst-case bound through them (K products summed) would call every
// network out of range. The rest is interval arithmetic, exact for the
// op's math:
//   - weights: their data's min and max (a state or elided weight, whose
//     data is not its value at run time, is ordinary);
//   - moving data (Reshape, Transpose, Gather, Slice, pooling, max/min and
//     mean reductions, Concat, Where, Pad with its value, Resize, ...): the
//     union of what it reads;
//   - Add, Sub, Mul, Pow by a constant, Neg, Abs, Relu, Clip, Exp, Sqrt,
//     Sinh, Cosh: their interval rule (Mul(a, a) is a square, never
//     negative; a - ReduceMax(a) is at most 0, reshaped, broadcast or
//     Max'ed with anything as exporters write it, so a Softmax written as
//     Exp(a - max a) stays within [0, 1]);
//   - sums over N elements per result (ReduceSum, ReduceSumSquare,
//     ReduceL1/L2, CumSum, ReduceProd): N times the summand (sqrt(N) for
//     L2, the N-th power for a product);
//   - bounded ops (Sigmoid, Tanh, Erf, Softmax, Sin, Cos, Sign, ...):
//     their range;
//   - a quotient by computed data (Div, Reciprocal): its interval when the
//     divisor cannot be 0 and the interval is ordinary or narrower, else
//     ordinary: normalisations divide by a norm of the numerator
//     (x / sqrt(var + eps) is at most sqrt(N) whatever eps), which no
//     interval sees;
//   - Pow by computed data, Tan, and a Pow with a negative exponent of
//     what may be 0: unbounded.
// Results are doubles, infinite where unbounded. Values that are not
// float (indices, shapes, masks) get no range.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PRECISION_VALUERANGES_H
#define SNUG_PASSES_PRECISION_VALUERANGES_H

#include "ir/Module.h"

#include "llvm/ADT/DenseMap.h"

namespace snug {

/// The magnitude the analysis takes for an activation it cannot bound.
constexpr double kOrdinaryActivation = 16;

struct ValueRange {
  double lo = -kOrdinaryActivation;
  double hi = kOrdinaryActivation;
  /// The largest magnitude in the range.
  double magnitude() const;
};

/// The range of every float graph input, weight and node result of
/// `module` (bodies of fused nodes are not entered: their results are
/// ordinary).
llvm::DenseMap<const ir::Value *, ValueRange>
computeValueRanges(const ir::Module &module);

} // namespace snug

#endif // SNUG_PASSES_PRECISION_VALUERANGES_H
