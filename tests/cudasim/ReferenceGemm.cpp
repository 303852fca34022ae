//===- ReferenceGemm.cpp - cuBLAS's GEMM, computed on the host ------------===//
#include "tests/cudasim/ReferenceGemm.h"

#include "core/BundleFormat.h"
#include "core/ScalarOps.h"
#include "ir/Float16.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace snug {
namespace cudasim {

using namespace bundle;

namespace {

double loadElement(const uint8_t *p, uint8_t dtype) {
  switch (dtype) {
  case DTypeF32: { float v; std::memcpy(&v, p, 4); return v; }
  case DTypeF64: { double v; std::memcpy(&v, p, 8); return v; }
  case DTypeF16: { uint16_t v; std::memcpy(&v, p, 2); return f16ToFloat(v); }
  default: { uint16_t v; std::memcpy(&v, p, 2); return bf16ToFloat(v); }
  }
}

void storeElement(uint8_t *p, uint8_t dtype, double value) {
  switch (dtype) {
  case DTypeF32: { float v = float(value); std::memcpy(p, &v, 4); return; }
  case DTypeF64: std::memcpy(p, &value, 8); return;
  case DTypeF16: { uint16_t v = floatToF16(float(value)); std::memcpy(p, &v, 2); return; }
  default: { uint16_t v = floatToBf16(float(value)); std::memcpy(p, &v, 2); return; }
  }
}

/// cuBLASLt's epilogue (DeviceGemm::epilogue) on one element of row `row`
/// of the column-major result, in f32 as cuBLASLt computes it: the bias
/// element (a vector of m, one per row), then ReLU or the tanh GELU (the
/// host's scalar forms, core/ScalarOps.h).
float applyEpilogue(uint8_t epilogue, const uint8_t *bias, uint8_t dtype,
                    int64_t row, float value) {
  if (gemmEpilogueHasBias(epilogue))
    value += float(loadElement(bias + row * int64_t(dtypeSize(dtype)), dtype));
  scalar::Params params{};
  switch (epilogue) {
  case GemmEpilogueReluBias:
  case GemmEpilogueRelu:
    return scalar::Relu::apply(value, params);
  case GemmEpilogueGeluBias:
  case GemmEpilogueGelu:
    params.i = 1; // approximate = "tanh"
    return scalar::Gelu::apply(value, params);
  default:
    return value;
  }
}

} // namespace

void computeGemm(const DeviceGemm &g, const uint8_t *a, const uint8_t *b,
                 uint8_t *c, const uint8_t *bias) {
  uint8_t dtype = g.dtype;
  int64_t m = g.m, n = g.n, k = g.k, batch = g.batch;
  if (m <= 0 || n <= 0 || batch <= 0)
    return;
  size_t size = dtypeSize(dtype);
  // CUBLAS_COMPUTE_32F_FAST_TF32 (--precision=tf32): the operands as the
  // tensor cores take them, rounded as the host kernels round them
  // (core/ScalarOps.h's roundToTf32); the sums stay in double.
  bool tf32 = g.math == GemmMathTf32 && dtype == DTypeF32;
  auto operand = [&](const uint8_t *p) {
    double value = loadElement(p, dtype);
    return tf32 ? double(snug::scalar::roundToTf32(float(value))) : value;
  };
  // op(A) as rows (row i: op(A)(i, 0..k-1)) and op(B) column j, in double.
  std::vector<double> rowsA(size_t(m) * size_t(std::max<int64_t>(k, 0)));
  std::vector<double> column(size_t(std::max<int64_t>(k, 0)));
  for (int64_t batchIndex = 0; batchIndex < batch; ++batchIndex) {
    const uint8_t *ab = a + batchIndex * g.strideA * int64_t(size);
    const uint8_t *bb = b + batchIndex * g.strideB * int64_t(size);
    uint8_t *cb = c + batchIndex * g.strideC * int64_t(size);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        int64_t index = g.transA ? p + i * g.lda : i + p * g.lda;
        rowsA[size_t(i * k + p)] = operand(ab + index * size);
      }
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) {
        int64_t index = g.transB ? j + p * g.ldb : p + j * g.ldb;
        column[size_t(p)] = operand(bb + index * size);
      }
      for (int64_t i = 0; i < m; ++i) {
        const double *row = rowsA.data() + i * k;
        const double *col = column.data();
        // Four partial sums (in double, so the order hardly matters): the
        // loop pipelines and vectorizes.
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t p = 0;
        for (; p + 4 <= k; p += 4) {
          s0 += row[p] * col[p];
          s1 += row[p + 1] * col[p + 1];
          s2 += row[p + 2] * col[p + 2];
          s3 += row[p + 3] * col[p + 3];
        }
        for (; p < k; ++p)
          s0 += row[p] * col[p];
        double sum = (s0 + s1) + (s2 + s3);
        uint8_t *out = cb + (i + j * g.ldc) * int64_t(size);
        double value = double(g.alpha) * sum;
        if (g.beta != 0) // beta == 0: C is not read (it may hold NaN)
          value += double(g.beta) * loadElement(out, dtype);
        if (dtype != DTypeF64)
          value = double(float(value)); // the f32 result, then stored
        if (g.epilogue != GemmEpilogueNone)
          value = applyEpilogue(g.epilogue, bias, dtype, i, float(value));
        storeElement(out, dtype, value);
      }
    }
  }
}

} // namespace cudasim
} // namespace snug
