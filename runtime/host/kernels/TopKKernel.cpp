//===- TopKKernel.cpp - The k largest or smallest elements along an axis --===//
//
// TopK(x) {axis, k, largest, sorted} -> (values, i64 indices): for every
// line of x along the axis, its k first elements in the order "larger
// first" (largest = 1) or "smaller first" (largest = 0), equal values by
// increasing index. That is onnx's reference (a stable lexsort) and
// onnxruntime's order; NaN sorts above every number, as in numpy (so it
// comes first for largest and last for smallest), NaNs among themselves
// by index, and -0.0 equals +0.0. `sorted` = 0 lets ONNX return the k
// elements in any order; this kernel returns them sorted all the same.
//
// The order is one of unsigned 64-bit keys (ScalarOps.h's topKKey), ties broken by
// index: a total order, so the selection is deterministic. The CUDA kernel
// (compiler/cuda/TopKEmitter.cpp) computes the same keys and picks the
// same elements in the same order; values are copied, never converted.
//
//===----------------------------------------------------------------------===//
#include "core/ScalarOps.h"
#include "runtime/host/Kernels.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

/// Element `i` as TopK's key (core/ScalarOps.h's topKKey, which the
/// CUDA kernel calls too).
uint64_t sortKey(const uint8_t *base, uint8_t dtype, int64_t i) {
  return isFloatCode(dtype) ? scalar::topKKey(loadDouble(base, dtype, i))
                            : scalar::topKKey(int64_t(loadInt(base, dtype, i)));
}

Status topKKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 2))
    return s;
  const TensorView &x = ctx.in(0), &values = ctx.out(0),
                   &indices = ctx.out(1);
  int64_t rank = x.getRank();
  int64_t axis = ctx.getInt("axis", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return ctx.error("axis out of range");
  int64_t n = x.dim(unsigned(axis)), k = ctx.getInt("k", 0);
  if (k < 1 || k > n)
    return ctx.error("k " + std::to_string(k) + " is outside [1, " +
                     std::to_string(n) + "]");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d < axis)
      outer *= x.dim(unsigned(d));
    else if (d > axis)
      inner *= x.dim(unsigned(d));
  if (values.dtype != x.dtype || indices.dtype != DTypeI64 ||
      values.numElements != outer * k * inner ||
      indices.numElements != values.numElements)
    return ctx.error("results do not match the operand and k");
  bool largest = ctx.getInt("largest", 1) != 0;
  unsigned size = x.elementSize();
  // Per line: (key, index) pairs, the first k of them by key (descending
  // for largest, ascending otherwise) and then index.
  std::vector<std::pair<uint64_t, int64_t>> line(static_cast<size_t>(n));
  auto before = [](const std::pair<uint64_t, int64_t> &a,
                   const std::pair<uint64_t, int64_t> &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      for (int64_t t = 0; t < n; ++t) {
        uint64_t key = sortKey(x.data, x.dtype, (o * n + t) * inner + j);
        line[size_t(t)] = {largest ? key : ~key, t};
      }
      std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
      for (int64_t t = 0; t < k; ++t) {
        int64_t from = (o * n + line[size_t(t)].second) * inner + j;
        int64_t to = (o * k + t) * inner + j;
        std::memcpy(values.data + to * size, x.data + from * size, size);
        storeInt(indices.data, indices.dtype, to, line[size_t(t)].second);
      }
    }
  return Status::ok();
}

} // namespace

void registerTopKKernel(KernelTable &t) { t.set(OpCode::TopK, topKKernel); }

} // namespace rt
} // namespace snug
