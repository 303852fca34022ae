//===- LtGemm.h - A GEMM with an epilogue, set up for cuBLASLt --*- C++ -*-===//
//
// A device plan Gemm step with an epilogue (DevicePlan.h: bias, ReLU, the
// tanh GELU) runs as one cublasLtMatmul. Everything cublasLtMatmul needs
// but the stream is fixed when the session is created: the matmul
// descriptor (compute type as the plain cuBLAS path's, f32 scale type,
// TRANSA, TRANSB, EPILOGUE, BIAS_POINTER with BIAS_BATCH_STRIDE 0: one
// bias for every batch item), the layouts of A, B and C (which is also D:
// the result is written in place, beta 0), with BATCH_COUNT and
// STRIDED_BATCH_OFFSET, and the algorithm cublasLtMatmulAlgoGetHeuristic
// picks under a preference of MAX_WORKSPACE_BYTES = the step's planned
// workspace. A run then only enqueues (no heuristic per run: graph capture
// sees the same call every time, at fixed addresses). Source: the CUDA 12
// cuBLAS reference, "cuBLASLt API" (cublasLtMatmul, cublasLtMatmulDesc-
// Attributes_t, cublasLtMatrixLayoutAttribute_t, cublasLtEpilogue_t,
// cublasLtMatmulAlgoGetHeuristic).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_CUDA_LTGEMM_H
#define SNUG_RUNTIME_CUDA_LTGEMM_H

#include "core/DevicePlan.h"
#include "runtime/Status.h"
#include "runtime/cuda/CudaDriver.h"

#include <string>

namespace snug {
namespace rt {
namespace cuda {

/// The cuBLASLt objects of one Gemm step; destroy() releases them.
struct LtGemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo = {};

  /// Builds the descriptors of `gemm` (its element type `dataType`, its
  /// compute type `computeType`, its bias at `bias`) and picks the
  /// algorithm for `workspaceBytes` of workspace. On failure the message
  /// (without the step's name, which the caller adds) says which call
  /// failed or that no algorithm fits; what was built stays for destroy().
  Status create(const CublasLt &lt, cublasLtHandle_t handle,
                const bundle::DeviceGemm &gemm, cudaDataType dataType,
                cublasComputeType_t computeType, const void *bias,
                uint64_t workspaceBytes);
  void destroy(const CublasLt &lt);
};

} // namespace cuda
} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_CUDA_LTGEMM_H
