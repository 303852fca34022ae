//===- Nvrtc.h - Compiling emitted CUDA ahead of time ------------*- C++ -*-===//
//
// Compiles a CudaProgram's translation unit with NVRTC, without a GPU: a
// cubin per target arch and PTX (compute_XX) for the newest, so a newer GPU
// can JIT it. The compilations run in parallel; images already in the
// kernel cache (KernelCache.h) are not compiled again. A failure is an internal
// error naming the op whose kernel failed and carrying NVRTC's log.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_NVRTC_H
#define SNUG_COMPILER_CUDA_NVRTC_H

#include "compiler/cuda/CudaEmitter.h"
#include "compiler/cuda/KernelCache.h"

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

/// How many images a compile took from the kernel cache and how many NVRTC
/// compiled.
struct CompileStatistics {
  unsigned fromCache = 0;
  unsigned compiled = 0;
};

/// Cubins for each of `archs` (80 = sm_80) and PTX for the newest. Images
/// `cache` holds for the same source, options, arch and NVRTC version are
/// taken from it (byte for byte what NVRTC gave when they were stored);
/// the others are compiled and stored.
llvm::Expected<std::vector<bundle::KernelImage>>
compileCudaProgram(const CudaProgram &program, llvm::ArrayRef<unsigned> archs,
                   const KernelCache &cache = KernelCache(),
                   CompileStatistics *statistics = nullptr);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_NVRTC_H
