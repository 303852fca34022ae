//===- AttentionKernel.cpp - snug.attention, a row block at a time --------===//
//
// softmax(scale * Q Kᵀ (+ mask)) V (core/Ops.def and core/AttentionShape.h:
// the mask kinds, zero_filled, the sizes) without the score matrix: for
// each batch item and each block of kAttentionRowBlock query rows, the
// block's scores go to the op's planned scratch (its second result in the
// host plan, written by the bundle writer), become probabilities there
// (0 for a filled score under zero_filled), and are multiplied by V.
// Q, K, V and the result are read and written through their strides
// (their perms), so the head Transposes the op took in are never made.
// The arithmetic is the unfused nodes' as the host runs them: dot products
// in double rounded to f32 (MatMul), the scale and the mask applied in f32,
// the softmax in double (NormalizeKernels.cpp) rounded to f32, then P V in
// double. So a fused attention gives the unfused graph's values, up to the
// scale's rounding where the graph divided by a constant (x / c against
// x * (1/c)).
//
//===----------------------------------------------------------------------===//
#include "core/AttentionShape.h"
#include "runtime/host/Kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace snug {
namespace rt {

namespace {

Status attentionKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(3, 1))
    return s;
  const TensorView &q = ctx.in(0), &k = ctx.in(1), &v = ctx.in(2);
  std::string maskKind = ctx.getString("mask", "none");
  const TensorView *mask = ctx.hasInput(3) ? &ctx.in(3) : nullptr;
  const TensorView *bias = ctx.hasInput(4) ? &ctx.in(4) : nullptr;
  AttentionMaskKind kind = getAttentionMaskKind(maskKind);
  if (!kind.valid || kind.hasMaskOperand() != !!mask ||
      kind.hasSecondMask() != !!bias)
    return ctx.error("mask '" + maskKind + "' and the operands disagree");
  const char *permNames[4] = {"q_perm", "k_perm", "v_perm", "y_perm"};
  const std::vector<int64_t> *perms[4];
  for (unsigned i = 0; i < 4; ++i)
    perms[i] = ctx.getInts(permNames[i]);
  AttentionShape shape = getAttentionShape(
      {q.dims, perms[0]}, {k.dims, perms[1]}, {v.dims, perms[2]},
      mask ? mask->dims : nullptr, perms[3], bias ? bias->dims : nullptr);
  if (!shape.isValid())
    return ctx.error(shape.error);
  const TensorView &y = ctx.out(0);
  if (y.numElements != shape.batch * shape.sq * shape.dv)
    return ctx.error("the result does not hold [..., Sq, Dv]");
  if (ctx.outputs.size() < 2 || !ctx.out(1).present ||
      ctx.out(1).bytes < getAttentionScratchBytes(shape))
    return ctx.error("needs its planned scratch of " +
                     std::to_string(getAttentionScratchBytes(shape)) +
                     " bytes (a bundle from before snug.attention's scratch?)");
  // The scratch is an arena buffer on a 256-byte boundary: floats fit.
  float *block = reinterpret_cast<float *>(ctx.out(1).data);

  FloatInput qf(q), kf(k), vf(v);
  auto widen = [](const TensorView &view) {
    std::vector<float> values(size_t(view.numElements));
    for (int64_t i = 0; i < view.numElements; ++i)
      values[size_t(i)] = loadAs<float>(view.data, view.dtype, i);
    return values;
  };
  std::vector<float> maskCopy, biasCopy;
  const float *additive = nullptr, *after = nullptr;
  if (kind.additive) {
    maskCopy = widen(*mask);
    additive = maskCopy.data();
  }
  if (kind.bias) {
    biasCopy = widen(*bias);
    after = biasCopy.data();
  }
  const float scale = ctx.getFloat("scale", 1.0f);
  const float fill = ctx.getFloat("fill", 0.0f);
  const bool fillIf = ctx.getInt("fill_if", 1) != 0;
  const int64_t diagonal = ctx.getInt("causal", 0);
  const bool zeroFilled = ctx.getInt("zero_filled", 0) != 0;
  // zero_filled: which scores of the current row a fill replaced.
  std::vector<uint8_t> filledRow(zeroFilled ? size_t(shape.skv) : 0);
  const int64_t sq = shape.sq, skv = shape.skv, d = shape.d, dv = shape.dv;
  // Element strides of the matrix dims: Q's rows and columns, Kᵀ's, ...
  const int64_t qi = AttentionShape::rowStride(shape.qStrides),
                qt = AttentionShape::columnStride(shape.qStrides),
                kt = AttentionShape::rowStride(shape.kStrides),
                kj = AttentionShape::columnStride(shape.kStrides),
                vj = AttentionShape::rowStride(shape.vStrides),
                ve = AttentionShape::columnStride(shape.vStrides),
                yi = AttentionShape::rowStride(shape.yStrides),
                ye = AttentionShape::columnStride(shape.yStrides);
  FloatOutput out(y);
  std::vector<double> accumulator(static_cast<size_t>(dv));

  for (int64_t b = 0; b < shape.batch; ++b) {
    const float *qb = qf.data() + shape.batchOffset(b, shape.qStrides);
    const float *kb = kf.data() + shape.batchOffset(b, shape.kStrides);
    const float *vb = vf.data() + shape.batchOffset(b, shape.vStrides);
    float *yb = out.data() + shape.batchOffset(b, shape.yStrides);
    int64_t maskBase = mask ? shape.batchOffset(b, shape.maskStrides) : 0;
    int64_t biasBase = bias ? shape.batchOffset(b, shape.biasStrides) : 0;
    // Where score (i, j) of this batch item is in operand 3 and 4.
    auto maskAt = [&](int64_t i, int64_t j) {
      return maskBase + i * AttentionShape::rowStride(shape.maskStrides) +
             j * AttentionShape::columnStride(shape.maskStrides);
    };
    auto biasAt = [&](int64_t i, int64_t j) {
      return biasBase + i * AttentionShape::rowStride(shape.biasStrides) +
             j * AttentionShape::columnStride(shape.biasStrides);
    };
    for (int64_t first = 0; first < sq; first += kAttentionRowBlock) {
      int64_t rows = std::min(kAttentionRowBlock, sq - first);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = first + r;
        float *scores = block + r * skv;
        for (int64_t j = 0; j < skv; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < d; ++t)
            dot += double(qb[i * qi + t * qt]) * double(kb[t * kt + j * kj]);
          float s = float(dot);
          if (scale != 1.0f)
            s *= scale;
          // Each fill in its kind's order (an addend after a fill adds to
          // it, but the score was filled).
          bool causalFill = kind.causal && j > i + diagonal;
          bool maskFill =
              kind.where && (mask->data[maskAt(i, j)] != 0) == fillIf;
          bool secondFill =
              kind.whereAfter && (bias->data[biasAt(i, j)] != 0) == fillIf;
          if (causalFill)
            s = fill;
          if (additive)
            s += additive[maskAt(i, j)];
          else if (maskFill)
            s = fill;
          if (after)
            s += after[biasAt(i, j)];
          else if (secondFill)
            s = fill;
          scores[j] = s;
          if (zeroFilled)
            filledRow[size_t(j)] = causalFill || maskFill || secondFill;
        }
        // Softmax of the row, in double as the Softmax kernel computes it.
        double top = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < skv; ++j)
          top = std::max(top, double(scores[j]));
        double sum = 0;
        for (int64_t j = 0; j < skv; ++j)
          sum += std::exp(double(scores[j]) - top);
        for (int64_t j = 0; j < skv; ++j)
          scores[j] = zeroFilled && filledRow[size_t(j)]
                          ? 0.0f
                          : float(std::exp(double(scores[j]) - top) / sum);
      }
      for (int64_t r = 0; r < rows; ++r) {
        std::fill(accumulator.begin(), accumulator.end(), 0.0);
        const float *probabilities = block + r * skv;
        for (int64_t j = 0; j < skv; ++j) {
          double p = probabilities[j];
          for (int64_t e = 0; e < dv; ++e)
            accumulator[size_t(e)] += p * double(vb[j * vj + e * ve]);
        }
        for (int64_t e = 0; e < dv; ++e)
          yb[(first + r) * yi + e * ye] = float(accumulator[size_t(e)]);
      }
    }
  }
  out.finish();
  return Status::ok();
}

/// snug.rotary: x * cos + rotate_half(x) * sin, each product and the sum
/// rounded to x's type (the unfused Mul, Mul and Add), in float.
Status rotaryKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(3, 1))
    return s;
  const TensorView &x = ctx.in(0), &cos = ctx.in(1), &sin = ctx.in(2);
  const TensorView &y = ctx.out(0);
  if (x.getRank() == 0 || y.numElements != x.numElements)
    return ctx.error("the result must have x's shape");
  int64_t d = x.dim(x.getRank() - 1), half = d / 2;
  if (d % 2)
    return ctx.error("x's last dim must be even");
  Broadcast walk(*x.dims, {x.dims, cos.dims, sin.dims});
  if (!walk.isValid())
    return ctx.error("cos and sin do not broadcast to x");
  uint8_t type = x.dtype;
  auto rounded = [type](float value) {
    uint8_t bytes[8];
    storeAs<float>(bytes, type, 0, value);
    return loadAs<float>(bytes, type, 0);
  };
  walk.forEach([&](int64_t i, const int64_t *at) {
    int64_t k = i % d;
    float xr = k < half ? -loadAs<float>(x.data, type, i + half)
                        : loadAs<float>(x.data, type, i - half);
    float a = rounded(loadAs<float>(x.data, type, i) *
                      loadAs<float>(cos.data, cos.dtype, at[1]));
    float b = rounded(xr * loadAs<float>(sin.data, sin.dtype, at[2]));
    storeAs<float>(y.data, y.dtype, i, a + b);
  });
  return Status::ok();
}

} // namespace

void registerAttentionKernels(KernelTable &table) {
  table.set(OpCode::SnugAttention, attentionKernel);
  table.set(OpCode::SnugRotary, rotaryKernel);
}

} // namespace rt
} // namespace snug
