//===- Nvrtc.h - Compiling emitted CUDA ahead of time ------------*- C++ -*-===//
//
// Compiles a CudaProgram's translation unit without a GPU: NVRTC makes PTX,
// nvJitLink (ptxas) assembles it into a cubin per target arch. Archs that
// no `__CUDA_ARCH__` test in the source tells apart share one PTX, for the
// lowest of them, which also goes into the bundle so that GPUs without a
// cubin JIT it (sm_80 and sm_90 share compute_80 PTX today, so an sm_86 or
// sm_89 GPU runs the bundle too). The steps run one at a time, each
// compiler mapped only while it works: a cold compile's memory is the
// larger of NVRTC's and ptxas's, not their sum (NvrtcLibrary.h). Images
// already in the kernel cache (KernelCache.h) are not compiled again (a
// cubin's entry holds ptxas's verbose log too, which says how many bytes
// each kernel spills: CubinInfo.h). A
// failure is an internal error naming the op whose kernel failed and
// carrying the compiler's log.
//
// Bundles must load on CUDA 12.0 and newer drivers (R525 on: most GPU
// machines), so every PTX a compile returns is held to ISA 8.0 (NVRTC
// 12.0's; the build pins it, compiler/cuda/CMakeLists.txt): a newer NVRTC
// fails the compile, naming the ISA, the group and the compiler, rather
// than write a bundle those drivers cannot load. getKernelToolchain says
// what made the images and the oldest driver that loads them, for the
// bundle's record (core/DevicePlan.h KernelToolchain).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_NVRTC_H
#define SNUG_COMPILER_CUDA_NVRTC_H

#include "compiler/cuda/CudaEmitter.h"
#include "compiler/cuda/KernelCache.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace snug {
namespace cuda {

/// Whether this build can compile kernels (NVRTC was found at build time).
bool isNvrtcAvailable();

/// The SM architectures this NVRTC compiles for (80 = sm_80); empty
/// without NVRTC.
std::vector<unsigned> getNvrtcArchs();

/// The groups of `archs` (sorted, unique) that share one PTX: consecutive
/// archs that no `__CUDA_ARCH__ >= N` or `< N` test in `source` tells
/// apart. The PTX is for the first of each group, the lowest. A source that
/// tests the macro any other way (==, >, ...) gets one group per arch.
std::vector<std::vector<unsigned>>
groupArchsByPtx(llvm::ArrayRef<unsigned> archs, llvm::StringRef source);

/// The newest PTX ISA a bundle embeds (10 * major + minor): 8.0, what NVRTC
/// 12.0 writes and every CUDA 12.0 or newer driver compiles.
constexpr unsigned kMaxPtxIsa = 80;

/// The ISA of a PTX image from its `.version X.Y` directive (10 * X + Y);
/// None when it has none.
llvm::Optional<unsigned> getPtxIsa(llvm::ArrayRef<uint8_t> ptx);

/// The oldest CUDA driver, in cuDriverGetVersion's encoding (12000 for
/// 12.0), that compiles PTX of ISA `isa` (80 -> 12000, 78 -> 11080, 90 ->
/// 13000): the PTX ISA table of NVIDIA's PTX ISA manual, "Release Notes".
unsigned getDriverVersionForPtxIsa(unsigned isa);

/// The toolchain record of `images`, compileCudaProgram's result: the
/// versions of this process's NVRTC and nvJitLink (those the kernel cache
/// keys its images by), the newest PTX ISA among them, and the oldest
/// driver that loads them all: the one that compiles that ISA, and at
/// least the compilers' major release (a cubin of a CUDA 13 ptxas needs a
/// CUDA 13 driver). All zeros without NVRTC.
llvm::Expected<bundle::KernelToolchain>
getKernelToolchain(llvm::ArrayRef<bundle::KernelImage> images);

/// How many images a compile took from the kernel cache and how many NVRTC
/// compiled.
struct CompileStatistics {
  unsigned fromCache = 0;
  unsigned compiled = 0;
};

/// Cubins for each of `archs` (80 = sm_80), then the PTX each group of
/// them was assembled from (see above). Images
/// `cache` holds for the same source, options, arch and NVRTC version are
/// taken from it (byte for byte what NVRTC gave when they were stored);
/// the others are compiled and stored. `beforeCompiling`, when given, is
/// called once before a compiler is loaded (not when every image comes
/// from the cache), so that the caller can make room. `assemblerLogs`, when
/// given, gets one entry per image: a cubin's ptxas verbose log (cached
/// with it), "" for PTX. An error when a PTX is newer than kMaxPtxIsa (see
/// above).
llvm::Expected<std::vector<bundle::KernelImage>>
compileCudaProgram(const CudaProgram &program, llvm::ArrayRef<unsigned> archs,
                   const KernelCache &cache = KernelCache(),
                   CompileStatistics *statistics = nullptr,
                   llvm::function_ref<void()> beforeCompiling = {},
                   std::vector<std::string> *assemblerLogs = nullptr);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_NVRTC_H
