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
// workspace and MIN_ALIGNMENT_{A,B,C,D}_BYTES = the alignment each operand
// really has. Those default to 256: unset, the heuristic may pick a kernel
// that assumes 256-byte operands, while the planner packs values at its
// --alignment (64 or 128 bytes apart is common) and a batch stride can
// break any alignment. A run then only enqueues (no heuristic per run: graph capture
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

/// The alignment (in bytes) cuBLASLt may assume of an operand at `address`
/// whose `batch` items lie `strideBytes` apart: the largest power of two,
/// at most 256 (cuBLASLt's default, the most it asks for), that divides
/// the address and, over more than one item, the stride.
uint32_t getLtAlignment(uint64_t address, uint64_t strideBytes, int batch);

/// The alignments of a step's A, B and C (which is also D).
struct LtAlignments {
  uint32_t a = 256, b = 256, c = 256;
};

/// The cuBLASLt objects of one Gemm step; destroy() releases them.
struct LtGemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo = {};

  /// Builds the descriptors of `gemm` (its element type `dataType`, its
  /// compute type `computeType`, its bias at `bias`) and picks the
  /// algorithm for `workspaceBytes` of workspace and operands aligned as
  /// `alignments` says. On failure the message
  /// (without the step's name, which the caller adds) says which call
  /// failed or that no algorithm fits; what was built stays for destroy().
  Status create(const CublasLt &lt, cublasLtHandle_t handle,
                const bundle::DeviceGemm &gemm, cudaDataType dataType,
                cublasComputeType_t computeType, const void *bias,
                uint64_t workspaceBytes, const LtAlignments &alignments);
  void destroy(const CublasLt &lt);
};

} // namespace cuda
} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_CUDA_LTGEMM_H
