//===- Nvrtc.h - Compiling emitted CUDA ahead of time ------------*- C++ -*-===//
//
// Compiles a CudaProgram's translation unit with NVRTC, without a GPU: a
// cubin per target arch and PTX (compute_XX) for the newest, so a newer GPU
// can JIT it. The compilations run in parallel. A failure is an internal
// error naming the op whose kernel failed and carrying NVRTC's log.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_NVRTC_H
#define SNUG_COMPILER_CUDA_NVRTC_H

#include "compiler/cuda/CudaEmitter.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace snug {
namespace cuda {

/// Whether this build can compile kernels (NVRTC was found at build time).
bool isNvrtcAvailable();

/// The SM architectures this NVRTC compiles for (80 = sm_80); empty
/// without NVRTC.
std::vector<unsigned> getNvrtcArchs();

/// Cubins for each of `archs` (80 = sm_80) and PTX for the newest.
llvm::Expected<std::vector<bundle::KernelImage>>
compileCudaProgram(const CudaProgram &program, llvm::ArrayRef<unsigned> archs);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_NVRTC_H
