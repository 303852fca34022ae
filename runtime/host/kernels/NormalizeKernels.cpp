//===- NormalizeKernels.cpp - Softmax, normalizations, LRN, reductions ----===//
//
// Reductions accumulate in double. Axes are attributes in canonical form
// (`axes` for Reduce*, `axis` for Softmax/LayerNormalization/ArgMax); an
// axes operand (opset 18 style) is read when it is present instead. Softmax
// and LogSoftmax use the opset-13 meaning (one axis, default -1).
//
//===----------------------------------------------------------------------===//
#include "runtime/host/Kernels.h"

#include <cmath>
#include <limits>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

int64_t normalizedAxis(const KernelContext &ctx, const char *name,
                       int64_t fallback, int64_t rank) {
  int64_t axis = ctx.getInt(name, fallback);
  return axis < 0 ? axis + rank : axis;
}

/// Splits dims into [outer, axis, inner] around `axis`.
void splitAround(const std::vector<int64_t> &dims, int64_t axis,
                 int64_t &outer, int64_t &middle, int64_t &inner) {
  outer = middle = inner = 1;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d)
    (d < axis ? outer : d == axis ? middle : inner) *= dims[d];
}

Status softmaxLike(KernelContext &ctx, int kind) { // 0 soft, 1 log, 2 hard
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  int64_t rank = x.getRank();
  int64_t axis = normalizedAxis(ctx, "axis", -1, rank);
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    return ctx.error("axis out of range");
  if (y.numElements != x.numElements)
    return ctx.error("operand and result differ in size");
  int64_t outer, n, inner;
  splitAround(*x.dims, axis, outer, n, inner);
  std::vector<double> row(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i;
      double top = -std::numeric_limits<double>::infinity();
      int64_t arg = 0;
      for (int64_t k = 0; k < n; ++k) {
        row[k] = loadDouble(x.data, x.dtype, base + k * inner);
        if (row[k] > top)
          top = row[k], arg = k;
      }
      double sum = 0;
      for (int64_t k = 0; k < n; ++k)
        sum += std::exp(row[k] - top);
      for (int64_t k = 0; k < n; ++k) {
        double v = kind == 0   ? std::exp(row[k] - top) / sum
                   : kind == 1 ? row[k] - top - std::log(sum)
                               : double(k == arg);
        storeDouble(y.data, y.dtype, base + k * inner, v);
      }
    }
  return Status::ok();
}

Status softmaxKernel(KernelContext &ctx) { return softmaxLike(ctx, 0); }
Status logSoftmaxKernel(KernelContext &ctx) { return softmaxLike(ctx, 1); }
Status hardmaxKernel(KernelContext &ctx) { return softmaxLike(ctx, 2); }

Status layerNormKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &x = ctx.in(0), &scale = ctx.in(1), &y = ctx.out(0);
  int64_t rank = x.getRank();
  int64_t axis = normalizedAxis(ctx, "axis", -1, rank);
  if (axis < 0 || axis >= rank)
    return ctx.error("axis out of range");
  if (y.numElements != x.numElements)
    return ctx.error("operand and result differ in size");
  double epsilon = ctx.getFloat("epsilon", 1e-5f);
  int64_t outer = 1, n = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : n) *= x.dim(d);
  bool hasBias = ctx.hasInput(2);
  if (scale.numElements != n || (hasBias && ctx.in(2).numElements != n))
    return ctx.error("scale and bias must have the normalized shape's size");
  const TensorView *mean = ctx.outputs.size() > 1 && ctx.out(1).present
                               ? &ctx.out(1) : nullptr;
  const TensorView *invStd = ctx.outputs.size() > 2 && ctx.out(2).present
                                 ? &ctx.out(2) : nullptr;
  if ((mean && mean->numElements != outer) ||
      (invStd && invStd->numElements != outer))
    return ctx.error("mean and inverse deviation need one value per row");
  std::vector<double> row(n);
  for (int64_t o = 0; o < outer; ++o) {
    double sum = 0, squares = 0;
    for (int64_t k = 0; k < n; ++k) {
      row[k] = loadDouble(x.data, x.dtype, o * n + k);
      sum += row[k];
    }
    double mu = sum / double(n);
    for (int64_t k = 0; k < n; ++k)
      squares += (row[k] - mu) * (row[k] - mu);
    double inv = 1.0 / std::sqrt(squares / double(n) + epsilon);
    for (int64_t k = 0; k < n; ++k) {
      double v = (row[k] - mu) * inv * loadDouble(scale.data, scale.dtype, k);
      if (hasBias)
        v += loadDouble(ctx.in(2).data, ctx.in(2).dtype, k);
      storeDouble(y.data, y.dtype, o * n + k, v);
    }
    if (mean)
      storeDouble(mean->data, mean->dtype, o, mu);
    if (invStd)
      storeDouble(invStd->data, invStd->dtype, o, inv);
  }
  return Status::ok();
}

/// snug.rms_norm: x / sqrt(mean(x^2) + epsilon) * scale over the dims from
/// `axis` on, in double as LayerNormalization (the unfused nodes rounded
/// each step to f32: within their rounding).
Status rmsNormKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  int64_t rank = x.getRank();
  int64_t axis = normalizedAxis(ctx, "axis", -1, rank);
  if (axis < 0 || axis >= rank)
    return ctx.error("axis out of range");
  if (y.numElements != x.numElements)
    return ctx.error("operand and result differ in size");
  double epsilon = ctx.getFloat("epsilon", 1e-6f);
  int64_t outer = 1, n = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : n) *= x.dim(d);
  const TensorView *scale = ctx.hasInput(1) ? &ctx.in(1) : nullptr;
  if (scale && scale->numElements != n)
    return ctx.error("scale must have the normalized shape's size");
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    double squares = 0;
    for (int64_t k = 0; k < n; ++k) {
      row[size_t(k)] = loadDouble(x.data, x.dtype, o * n + k);
      squares += row[size_t(k)] * row[size_t(k)];
    }
    double inv = 1.0 / std::sqrt(squares / double(n) + epsilon);
    for (int64_t k = 0; k < n; ++k) {
      double v = row[size_t(k)] * inv;
      if (scale)
        v *= loadDouble(scale->data, scale->dtype, k);
      storeDouble(y.data, y.dtype, o * n + k, v);
    }
  }
  return Status::ok();
}

/// Inference-mode BatchNormalization over channel axis 1.
Status batchNormKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(5, 1))
    return s;
  if (ctx.getInt("training_mode", 0))
    return ctx.error("training_mode is not supported");
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (y.numElements != x.numElements)
    return ctx.error("operand and result differ in size");
  double epsilon = ctx.getFloat("epsilon", 1e-5f);
  int64_t n = x.getRank() > 0 ? x.dim(0) : 1;
  int64_t c = x.getRank() > 1 ? x.dim(1) : 1;
  int64_t inner = n * c != 0 ? x.numElements / (n * c) : 0;
  for (int i = 1; i < 5; ++i)
    if (ctx.in(i).numElements != c)
      return ctx.error("parameter " + std::to_string(i) + " needs " +
                       std::to_string(c) + " elements");
  std::vector<double> mul(c), add(c);
  for (int64_t k = 0; k < c; ++k) {
    double scale = loadDouble(ctx.in(1).data, ctx.in(1).dtype, k);
    double bias = loadDouble(ctx.in(2).data, ctx.in(2).dtype, k);
    double mean = loadDouble(ctx.in(3).data, ctx.in(3).dtype, k);
    double var = loadDouble(ctx.in(4).data, ctx.in(4).dtype, k);
    mul[k] = scale / std::sqrt(var + epsilon);
    add[k] = bias - mean * mul[k];
  }
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t at = (b * c + k) * inner + i;
        storeDouble(y.data, y.dtype, at,
                    loadDouble(x.data, x.dtype, at) * mul[k] + add[k]);
      }
  // Optional running mean/var results of old opsets: the inputs unchanged.
  for (size_t r = 1; r < ctx.outputs.size() && r < 3; ++r)
    if (ctx.out(r).present)
      copyBytes(ctx.out(r).data, ctx.in(r + 2).data,
                std::min(ctx.out(r).bytes, ctx.in(r + 2).bytes));
  return Status::ok();
}

Status instanceNormKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(3, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (y.numElements != x.numElements)
    return ctx.error("operand and result differ in size");
  if (x.getRank() < 2)
    return ctx.error("needs rank >= 2");
  double epsilon = ctx.getFloat("epsilon", 1e-5f);
  int64_t n = x.dim(0), c = x.dim(1);
  int64_t inner = n * c != 0 ? x.numElements / (n * c) : 0;
  std::vector<double> row(inner);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < c; ++k) {
      int64_t base = (b * c + k) * inner;
      double sum = 0, squares = 0;
      for (int64_t i = 0; i < inner; ++i)
        sum += row[i] = loadDouble(x.data, x.dtype, base + i);
      double mu = sum / double(inner);
      for (int64_t i = 0; i < inner; ++i)
        squares += (row[i] - mu) * (row[i] - mu);
      double inv = 1.0 / std::sqrt(squares / double(inner) + epsilon);
      if (ctx.in(1).numElements != c || ctx.in(2).numElements != c)
        return ctx.error("scale and bias need one value per channel");
      double scale = loadDouble(ctx.in(1).data, ctx.in(1).dtype, k);
      double bias = loadDouble(ctx.in(2).data, ctx.in(2).dtype, k);
      for (int64_t i = 0; i < inner; ++i)
        storeDouble(y.data, y.dtype, base + i,
                    (row[i] - mu) * inv * scale + bias);
    }
  return Status::ok();
}

Status lrnKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (y.numElements != x.numElements)
    return ctx.error("operand and result differ in size");
  if (x.getRank() < 2)
    return ctx.error("needs rank >= 2");
  int64_t size = ctx.getInt("size", 0);
  if (size <= 0)
    return ctx.error("size must be positive");
  double alpha = ctx.getFloat("alpha", 1e-4f), beta = ctx.getFloat("beta", 0.75f),
         bias = ctx.getFloat("bias", 1.0f);
  int64_t n = x.dim(0), c = x.dim(1);
  int64_t inner = n * c != 0 ? x.numElements / (n * c) : 0;
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < inner; ++i) {
        double squares = 0;
        for (int64_t j = std::max<int64_t>(0, k - before);
             j <= std::min(c - 1, k + after); ++j) {
          double v = loadDouble(x.data, x.dtype, (b * c + j) * inner + i);
          squares += v * v;
        }
        int64_t at = (b * c + k) * inner + i;
        storeDouble(y.data, y.dtype, at,
                    loadDouble(x.data, x.dtype, at) /
                        std::pow(bias + alpha / double(size) * squares, beta));
      }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSumExp };

/// Which axes of `rank` are reduced: the `axes` attribute, else an axes
/// operand, else all (none with noop_with_empty_axes).
Status reducedAxes(const KernelContext &ctx, int64_t rank,
                   std::vector<bool> &reduced) {
  std::vector<int64_t> axes;
  if (const std::vector<int64_t> *attr = ctx.getInts("axes")) {
    axes = *attr;
  } else if (ctx.hasInput(1)) {
    const TensorView &v = ctx.in(1);
    for (int64_t i = 0; i < v.numElements; ++i)
      axes.push_back(loadInt(v.data, v.dtype, i));
  }
  reduced.assign(rank, axes.empty() && !ctx.getInt("noop_with_empty_axes", 0));
  for (int64_t axis : axes) {
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return ctx.error("axis out of range");
    reduced[axis] = true;
  }
  return Status::ok();
}

Status reduce(KernelContext &ctx, Reduce kind) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  int64_t rank = x.getRank();
  std::vector<bool> reduced;
  if (Status s = reducedAxes(ctx, rank, reduced))
    return s;
  // Output strides over the input's dims: 0 on reduced axes.
  std::vector<int64_t> outStrides(rank, 0);
  int64_t stride = 1, count = 1;
  for (int64_t d = rank; d-- > 0;) {
    if (reduced[d]) {
      count *= x.dim(d);
      continue;
    }
    outStrides[d] = stride;
    stride *= x.dim(d);
  }
  if (stride != y.numElements)
    return ctx.error("result size does not match the reduction");
  double init = kind == Reduce::Max   ? -std::numeric_limits<double>::infinity()
                : kind == Reduce::Min ? std::numeric_limits<double>::infinity()
                : kind == Reduce::Prod ? 1.0
                                      : 0.0;
  std::vector<double> acc(y.numElements, init);
  std::vector<double> top; // LogSumExp: per-output max for stability
  if (kind == Reduce::LogSumExp) {
    top.assign(y.numElements, -std::numeric_limits<double>::infinity());
    for (int64_t i = 0; i < x.numElements; ++i) {
      int64_t o = 0, rest = i;
      for (int64_t d = rank; d-- > 0;) {
        o += (rest % x.dim(d)) * outStrides[d];
        rest /= x.dim(d);
      }
      top[o] = std::max(top[o], loadDouble(x.data, x.dtype, i));
    }
  }
  std::vector<int64_t> counter(rank, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < x.numElements; ++i) {
    double v = loadDouble(x.data, x.dtype, i);
    double &a = acc[o];
    switch (kind) {
    case Reduce::Sum: case Reduce::Mean: a += v; break;
    case Reduce::Max: a = (std::isnan(v) || v > a) ? v : a; break;
    case Reduce::Min: a = (std::isnan(v) || v < a) ? v : a; break;
    case Reduce::Prod: a *= v; break;
    case Reduce::L1: a += std::fabs(v); break;
    case Reduce::L2: case Reduce::SumSquare: a += v * v; break;
    case Reduce::LogSumExp: a += std::exp(v - top[o]); break;
    }
    for (int64_t d = rank; d-- > 0;) {
      if (++counter[d] < x.dim(d)) {
        o += outStrides[d];
        break;
      }
      o -= outStrides[d] * (x.dim(d) - 1);
      counter[d] = 0;
    }
  }
  for (int64_t k = 0; k < y.numElements; ++k) {
    double v = acc[k];
    if (kind == Reduce::Mean)
      v = count ? v / double(count) : NAN;
    else if (kind == Reduce::L2)
      v = std::sqrt(v);
    else if (kind == Reduce::LogSumExp)
      v = std::log(v) + top[k];
    storeDouble(y.data, y.dtype, k, v);
  }
  return Status::ok();
}

#define SNUG_REDUCE(NAME, KIND)                                                \
  Status NAME(KernelContext &ctx) { return reduce(ctx, Reduce::KIND); }
SNUG_REDUCE(reduceSumKernel, Sum)
SNUG_REDUCE(reduceMeanKernel, Mean)
SNUG_REDUCE(reduceMaxKernel, Max)
SNUG_REDUCE(reduceMinKernel, Min)
SNUG_REDUCE(reduceProdKernel, Prod)
SNUG_REDUCE(reduceL1Kernel, L1)
SNUG_REDUCE(reduceL2Kernel, L2)
SNUG_REDUCE(reduceSumSquareKernel, SumSquare)
SNUG_REDUCE(reduceLogSumExpKernel, LogSumExp)

Status argReduce(KernelContext &ctx, bool isMax) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  int64_t rank = x.getRank();
  int64_t axis = normalizedAxis(ctx, "axis", 0, rank);
  if (axis < 0 || axis >= rank)
    return ctx.error("axis out of range");
  bool last = ctx.getInt("select_last_index", 0);
  int64_t outer, n, inner;
  splitAround(*x.dims, axis, outer, n, inner);
  if (y.numElements != outer * inner || n == 0)
    return ctx.error("result size does not match the reduction");
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      double bestValue = loadDouble(x.data, x.dtype, o * n * inner + i);
      for (int64_t k = 1; k < n; ++k) {
        double v = loadDouble(x.data, x.dtype, (o * n + k) * inner + i);
        bool better = isMax ? (v > bestValue || (last && v == bestValue))
                            : (v < bestValue || (last && v == bestValue));
        if (better)
          best = k, bestValue = v;
      }
      storeInt(y.data, y.dtype, o * inner + i, best);
    }
  return Status::ok();
}

Status argMaxKernel(KernelContext &ctx) { return argReduce(ctx, true); }
Status argMinKernel(KernelContext &ctx) { return argReduce(ctx, false); }

} // namespace

void registerNormalizeKernels(KernelTable &t) {
  t.set(OpCode::Softmax, softmaxKernel);
  t.set(OpCode::LogSoftmax, logSoftmaxKernel);
  t.set(OpCode::Hardmax, hardmaxKernel);
  t.set(OpCode::LayerNormalization, layerNormKernel);
  t.set(OpCode::SnugRmsNorm, rmsNormKernel);
  t.set(OpCode::BatchNormalization, batchNormKernel);
  t.set(OpCode::InstanceNormalization, instanceNormKernel);
  t.set(OpCode::LRN, lrnKernel);
  t.set(OpCode::ReduceSum, reduceSumKernel);
  t.set(OpCode::ReduceMean, reduceMeanKernel);
  t.set(OpCode::ReduceMax, reduceMaxKernel);
  t.set(OpCode::ReduceMin, reduceMinKernel);
  t.set(OpCode::ReduceProd, reduceProdKernel);
  t.set(OpCode::ReduceL1, reduceL1Kernel);
  t.set(OpCode::ReduceL2, reduceL2Kernel);
  t.set(OpCode::ReduceSumSquare, reduceSumSquareKernel);
  t.set(OpCode::ReduceLogSumExp, reduceLogSumExpKernel);
  t.set(OpCode::ArgMax, argMaxKernel);
  t.set(OpCode::ArgMin, argMinKernel);
}

} // namespace rt
} // namespace snug
