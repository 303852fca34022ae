//===- AttentionKernel.h - What the two snug.attention kernels share -*- C++ -*-===//
//
// snug.attention has two CUDA kernels (AttentionEmitter.cpp): a scalar one
// for f32 and f64 storage, and, for f16 and bf16, one on the tensor cores
// (AttentionMma.cpp). Both read their operands through the same strides,
// fill and add the same masks in the same order (scoreMask) and keep the
// same online softmax; this header is what they share.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_ATTENTIONKERNEL_H
#define SNUG_COMPILER_CUDA_ATTENTIONKERNEL_H

#include "compiler/cuda/KernelEmitter.h"
#include "core/AttentionShape.h"

#include <string>
#include <vector>

namespace snug {
namespace cuda {

/// One snug.attention node as its kernels see it.
struct AttentionKernelSpec {
  AttentionShape shape;
  AttentionMaskKind kind;
  std::string acc; ///< the compute type: float, or double for f64
  float scale = 1.0f;
  float fill = 0.0f;
  bool fillIf = true;
  int64_t causal = 0; ///< the diagonal offset
  bool zeroFilled = false;
};

/// Where batch item `b` starts in an operand with these strides (in
/// emitted code; AttentionShape::batchOffset unrolled).
std::string attentionBatchOffset(const AttentionShape &shape,
                                 const std::vector<int64_t> &strides);

/// The statements turning the raw dot product in variable `dot` (of type
/// spec.acc) into the score of query row `row` (an int expression, below
/// Sq) and key `key` (an int expression, any value): scaled, then the
/// masks in the mask kind's order, each fill also running `onFill`; a key
/// at or past Skv scores -inf (no weight, not a fill). `pad` is each
/// statement's indentation.
std::string attentionScoreMask(const AttentionKernelSpec &spec,
                               llvm::StringRef dot, llvm::StringRef row,
                               llvm::StringRef key, llvm::StringRef onFill,
                               llvm::StringRef pad);

/// The tensor-core kernel (AttentionMma.cpp) for f16 or bf16 Q, K and V
/// of CUDA element type `element` (snug_half or snug_bfloat): its body,
/// block and grid in `kernel`.
void emitAttentionMmaKernel(const AttentionKernelSpec &spec,
                            llvm::StringRef element, Kernel &kernel);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_ATTENTIONKERNEL_H
