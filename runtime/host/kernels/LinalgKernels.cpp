//===- LinalgKernels.cpp - MatMul and Gemm --------------------------------===//
//
// MatMul with numpy semantics (1-d operands promoted, batch dims broadcast)
// and Gemm (transA/transB, alpha, beta, C broadcast to M x N). Accumulation
// is in double: these are the oracle, not the fast path. An integer MatMul
// is exact instead: int64 sums, wrapped to the result's width. Under
// --precision=tf32 (math = "tf32") A and B are rounded to TF32 first
// (core/ScalarOps.h's roundToTf32, as the device's tensor cores take
// them); C and the sums stay as they are.
//
//===----------------------------------------------------------------------===//
#include "runtime/host/Kernels.h"

namespace snug {
namespace rt {

using namespace bundle;

namespace {

Status matMulKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &av = ctx.in(0), &bv = ctx.in(1), &yv = ctx.out(0);
  if (av.getRank() == 0 || bv.getRank() == 0)
    return ctx.error("operands must have rank >= 1");
  std::vector<int64_t> aDims = *av.dims, bDims = *bv.dims;
  if (aDims.size() == 1)
    aDims.insert(aDims.begin(), 1);
  if (bDims.size() == 1)
    bDims.push_back(1);
  int64_t m = aDims[aDims.size() - 2], k = aDims.back();
  int64_t n = bDims.back();
  if (bDims[bDims.size() - 2] != k)
    return ctx.error("inner dims differ");
  std::vector<int64_t> aBatch(aDims.begin(), aDims.end() - 2);
  std::vector<int64_t> bBatch(bDims.begin(), bDims.end() - 2);
  std::vector<int64_t> batch(std::max(aBatch.size(), bBatch.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    int64_t a = i + aBatch.size() >= batch.size()
                    ? aBatch[i + aBatch.size() - batch.size()] : 1;
    int64_t b = i + bBatch.size() >= batch.size()
                    ? bBatch[i + bBatch.size() - batch.size()] : 1;
    if (a != b && a != 1 && b != 1)
      return ctx.error("batch dims do not broadcast");
    batch[i] = std::max(a, b);
  }
  int64_t batchCount = 1;
  for (int64_t d : batch)
    batchCount *= d;
  if (yv.numElements != batchCount * m * n)
    return ctx.error("result size does not match the product");
  Broadcast walk(batch, {&aBatch, &bBatch});
  if (!isFloatCode(yv.dtype)) {
    // Integers multiply exactly, as onnxruntime's integer MatMul does: the
    // sums in 64 bits, wrapping, stored wrapped to the result's width
    // (MatMulInteger's int32 products, compiler/onnx/OnnxQuantOps.cpp).
    walk.forEach([&](int64_t index, const int64_t *offsets) {
      int64_t baseA = offsets[0] * m * k, baseB = offsets[1] * k * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += uint64_t(loadInt(av.data, av.dtype, baseA + i * k + p)) *
                   uint64_t(loadInt(bv.data, bv.dtype, baseB + p * n + j));
          storeInt(yv.data, yv.dtype, index * m * n + i * n + j,
                   int64_t(acc));
        }
    });
    return Status::ok();
  }
  FloatInput a(av, ctx.isTf32()), b(bv, ctx.isTf32());
  FloatOutput y(yv);
  std::vector<double> row(n);
  walk.forEach([&](int64_t index, const int64_t *offsets) {
    const float *pa = a.data() + offsets[0] * m * k;
    const float *pb = b.data() + offsets[1] * k * n;
    float *py = y.data() + index * m * n;
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        double v = pa[i * k + p];
        const float *pbRow = pb + p * n;
        for (int64_t j = 0; j < n; ++j)
          row[j] += v * pbRow[j];
      }
      for (int64_t j = 0; j < n; ++j)
        py[i * n + j] = float(row[j]);
    }
  });
  y.finish();
  return Status::ok();
}

Status gemmKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &av = ctx.in(0), &bv = ctx.in(1), &yv = ctx.out(0);
  if (av.getRank() != 2 || bv.getRank() != 2 || yv.getRank() != 2)
    return ctx.error("A, B and Y must be 2-d");
  bool transA = ctx.getInt("transA", 0), transB = ctx.getInt("transB", 0);
  double alpha = ctx.getFloat("alpha", 1.0f), beta = ctx.getFloat("beta", 1.0f);
  int64_t m = transA ? av.dim(1) : av.dim(0), k = transA ? av.dim(0) : av.dim(1);
  int64_t n = transB ? bv.dim(0) : bv.dim(1);
  if ((transB ? bv.dim(1) : bv.dim(0)) != k || yv.dim(0) != m || yv.dim(1) != n)
    return ctx.error("A, B and Y shapes do not agree");
  FloatInput a(av, ctx.isTf32()), b(bv, ctx.isTf32());
  std::vector<double> c(m * n, 0.0);
  if (ctx.hasInput(2)) {
    const TensorView &cv = ctx.in(2);
    Broadcast walk(*yv.dims, {cv.dims});
    if (!walk.isValid())
      return ctx.error("C does not broadcast to M x N");
    walk.forEach([&](int64_t index, const int64_t *offsets) {
      c[index] = beta * loadDouble(cv.data, cv.dtype, offsets[0]);
    });
  }
  FloatOutput y(yv);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += double(transA ? a[p * m + i] : a[i * k + p]) *
               double(transB ? b[j * k + p] : b[p * n + j]);
      y[i * n + j] = float(alpha * acc + c[i * n + j]);
    }
  y.finish();
  return Status::ok();
}

} // namespace

void registerLinalgKernels(KernelTable &t) {
  t.set(OpCode::MatMul, matMulKernel);
  t.set(OpCode::Gemm, gemmKernel);
}

} // namespace rt
} // namespace snug
