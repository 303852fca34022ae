//===- LtGemm.cpp - A GEMM with an epilogue, set up for cuBLASLt ----------===//
//
// See LtGemm.h. The layouts are column-major, as the step is (DeviceGemm):
// A is m x k (k x m when transposed) with leading dimension lda, B k x n
// (n x k), C m x n; each with the batch count and its own batch stride.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/LtGemm.h"

#include <cstdint>

namespace snug {
namespace rt {
namespace cuda {

namespace {

cublasLtEpilogue_t toLtEpilogue(uint8_t epilogue) {
  switch (epilogue) {
  case bundle::GemmEpilogueBias:
    return CUBLASLT_EPILOGUE_BIAS;
  case bundle::GemmEpilogueReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case bundle::GemmEpilogueGeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case bundle::GemmEpilogueRelu:
    return CUBLASLT_EPILOGUE_RELU;
  case bundle::GemmEpilogueGelu:
    return CUBLASLT_EPILOGUE_GELU;
  default:
    return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

Status failed(const char *call, cublasStatus_t status) {
  return Status(status == CUBLAS_STATUS_ALLOC_FAILED ? SNUG_ERROR_OUT_OF_MEMORY
                                                     : SNUG_ERROR_RUNTIME,
                std::string(call) + " failed: " + cublasStatusName(status));
}

} // namespace

uint32_t getLtAlignment(uint64_t address, uint64_t strideBytes, int batch) {
  uint64_t bits = address | (batch > 1 ? strideBytes : 0) | 256;
  return uint32_t(bits & -bits); // the lowest set bit
}

Status LtGemm::create(const CublasLt &lt, cublasLtHandle_t handle,
                      const bundle::DeviceGemm &g, cudaDataType dataType,
                      cublasComputeType_t computeType, const void *bias,
                      uint64_t workspaceBytes,
                      const LtAlignments &alignments) {
  if (cublasStatus_t s = lt.MatmulDescCreate(&desc, computeType, CUDA_R_32F)) {
    desc = nullptr;
    return failed("cublasLtMatmulDescCreate", s);
  }
  auto setDesc = [&](cublasLtMatmulDescAttributes_t attribute,
                     const void *value, size_t size) {
    return lt.MatmulDescSetAttribute(desc, attribute, value, size);
  };
  int32_t transA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t transB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint32_t epilogue = toLtEpilogue(g.epilogue);
  int64_t biasStride = 0;
  if (cublasStatus_t s =
          setDesc(CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof transA))
    return failed("cublasLtMatmulDescSetAttribute(TRANSA)", s);
  if (cublasStatus_t s =
          setDesc(CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof transB))
    return failed("cublasLtMatmulDescSetAttribute(TRANSB)", s);
  if (cublasStatus_t s =
          setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue))
    return failed("cublasLtMatmulDescSetAttribute(EPILOGUE)", s);
  if (bundle::gemmEpilogueHasBias(g.epilogue)) {
    if (cublasStatus_t s =
            setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias))
      return failed("cublasLtMatmulDescSetAttribute(BIAS_POINTER)", s);
    if (cublasStatus_t s = setDesc(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                   &biasStride, sizeof biasStride))
      return failed("cublasLtMatmulDescSetAttribute(BIAS_BATCH_STRIDE)", s);
  }

  auto layout = [&](cublasLtMatrixLayout_t &into, int64_t rows, int64_t cols,
                    int64_t ld, int64_t stride) {
    if (cublasStatus_t s = lt.MatrixLayoutCreate(
            &into, dataType, uint64_t(rows), uint64_t(cols), ld)) {
      into = nullptr;
      return failed("cublasLtMatrixLayoutCreate", s);
    }
    int32_t count = g.batch;
    if (cublasStatus_t s = lt.MatrixLayoutSetAttribute(
            into, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count))
      return failed("cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", s);
    if (cublasStatus_t s = lt.MatrixLayoutSetAttribute(
            into, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
            sizeof stride))
      return failed("cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)",
                    s);
    return Status::ok();
  };
  if (Status s = layout(a, g.transA ? g.k : g.m, g.transA ? g.m : g.k, g.lda,
                        g.strideA))
    return s;
  if (Status s = layout(b, g.transB ? g.n : g.k, g.transB ? g.k : g.n, g.ldb,
                        g.strideB))
    return s;
  if (Status s = layout(c, g.m, g.n, g.ldc, g.strideC))
    return s;

  cublasLtMatmulPreference_t preference = nullptr;
  if (cublasStatus_t s = lt.MatmulPreferenceCreate(&preference))
    return failed("cublasLtMatmulPreferenceCreate", s);
  // MAX_WORKSPACE_BYTES is a uint64_t, the alignments uint32_t
  // (cublasLtMatmulPreferenceAttributes_t).
  uint64_t maxWorkspace = workspaceBytes;
  struct Preference {
    cublasLtMatmulPreferenceAttributes_t attribute;
    const char *name; // for the error
    const void *value;
    size_t size;
  };
  // One row per attribute, named in the error as the call it failed in.
#define SNUG_LT_PREFERENCE(NAME, VALUE)                                        \
  {CUBLASLT_MATMUL_PREF_##NAME,                                                \
   "cublasLtMatmulPreferenceSetAttribute(" #NAME ")", &(VALUE), sizeof(VALUE)}
  // D is C (the GEMM writes in place), so it has C's alignment.
  const Preference preferences[] = {
      SNUG_LT_PREFERENCE(MAX_WORKSPACE_BYTES, maxWorkspace),
      SNUG_LT_PREFERENCE(MIN_ALIGNMENT_A_BYTES, alignments.a),
      SNUG_LT_PREFERENCE(MIN_ALIGNMENT_B_BYTES, alignments.b),
      SNUG_LT_PREFERENCE(MIN_ALIGNMENT_C_BYTES, alignments.c),
      SNUG_LT_PREFERENCE(MIN_ALIGNMENT_D_BYTES, alignments.c),
  };
#undef SNUG_LT_PREFERENCE
  const char *failedAttribute = nullptr;
  cublasStatus_t set = CUBLAS_STATUS_SUCCESS;
  for (const Preference &p : preferences)
    if ((set = lt.MatmulPreferenceSetAttribute(preference, p.attribute,
                                               p.value, p.size))) {
      failedAttribute = p.name;
      break;
    }
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  cublasStatus_t heuristic =
      set ? set
          : lt.MatmulAlgoGetHeuristic(handle, desc, a, b, c, c, preference, 1,
                                      &result, &found);
  (void)lt.MatmulPreferenceDestroy(preference);
  if (set)
    return failed(failedAttribute, set);
  if (heuristic && heuristic != CUBLAS_STATUS_NOT_SUPPORTED)
    return failed("cublasLtMatmulAlgoGetHeuristic", heuristic);
  if (heuristic || found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return Status(SNUG_ERROR_UNSUPPORTED,
                  std::string("cuBLASLt has no algorithm for this GEMM with "
                              "epilogue ") +
                      bundle::gemmEpilogueName(g.epilogue) + " (m " +
                      std::to_string(g.m) + ", n " + std::to_string(g.n) +
                      ", k " + std::to_string(g.k) + ", batch " +
                      std::to_string(g.batch) + ") within " +
                      std::to_string(workspaceBytes) +
                      " bytes of workspace and operands aligned to " +
                      std::to_string(alignments.a) + ", " +
                      std::to_string(alignments.b) + " and " +
                      std::to_string(alignments.c) +
                      " bytes (cublasLtMatmulAlgoGetHeuristic found none)");
  algo = result.algo;
  return Status::ok();
}

void LtGemm::destroy(const CublasLt &lt) {
  for (cublasLtMatrixLayout_t *layout : {&a, &b, &c})
    if (*layout) {
      (void)lt.MatrixLayoutDestroy(*layout);
      *layout = nullptr;
    }
  if (desc) {
    (void)lt.MatmulDescDestroy(desc);
    desc = nullptr;
  }
}

} // namespace cuda
} // namespace rt
} // namespace snug
