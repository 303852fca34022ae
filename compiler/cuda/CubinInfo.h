//===- CubinInfo.h - What each kernel of a cubin needs on the device -*- C++ -*-===//
//
// Reads, from a cubin (an ELF64 image ptxas wrote) and nothing else, what
// every kernel in it takes from the SM. The sources, each checked against
// `cuobjdump --dump-resource-usage` on NVRTC's own cubins (CubinInfoTest):
//   registers     the EIATTR_REGCOUNT record in `.nv.info` (cuobjdump's
//                 REG); without one, bits 24..31 of the sh_info of the
//                 kernel's `.text.NAME` section, where ptxas puts it too
//                 for sm_80 (nvJitLink 13's sm_90 cubins leave them 0)
//   shared bytes  the size of `.nv.shared.NAME` (NOBITS): the static shared
//                 memory, including the 1 KiB sm_90 reserves per block
//                 (cuobjdump's SHARED)
//   local bytes   the per-thread stack the launch needs, EIATTR_MAX_STACK_SIZE
//                 when ptxas recorded one (a kernel with calls), else
//                 EIATTR_MIN_STACK_SIZE, else EIATTR_FRAME_SIZE, from
//                 `.nv.info` (cuobjdump's STACK): per-thread arrays and spills
//   max threads   EIATTR_MAX_THREADS in `.nv.info.NAME`: the block
//                 `__launch_bounds__` allows (0 when it sets none)
// The ELF does not say how much of the frame is spilled registers; ptxas's
// verbose log does ("N bytes spill stores"), and readSpillBytes reads it
// from nvJitLink's info log (-verbose).
//
// The input may come from an untrusted bundle: every offset and size is
// checked against the image, and anything malformed is an error, never a
// read past the bytes.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_CUBININFO_H
#define SNUG_COMPILER_CUDA_CUBININFO_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snug {
namespace cuda {

/// One kernel's resources in one cubin.
struct KernelResources {
  std::string name;
  unsigned registers = 0;   // per thread
  uint64_t sharedBytes = 0; // static shared memory per block
  uint64_t localBytes = 0;  // stack (local memory) per thread
  uint32_t maxThreads = 0;  // __launch_bounds__' block size; 0: none
};

/// The kernels (`.text.NAME` sections) of `cubin`, in section order.
/// Error: not an ELF64 little-endian image, or a header, section or
/// record that reaches past the image.
llvm::Expected<std::vector<KernelResources>>
readCubinResources(llvm::ArrayRef<uint8_t> cubin);

/// Kernel name -> ptxas's "bytes spill stores" (what its spill store
/// instructions write, counted statically; the frame that holds the
/// spilled values is KernelResources::localBytes), from its verbose log
/// (as nvJitLink's info log with -verbose carries it):
///   ptxas info    : Function properties for NAME
///   ptxas         .     256 bytes stack frame, 8 bytes spill stores, ...
/// Kernels the log does not name are absent.
llvm::StringMap<uint64_t> readSpillBytes(llvm::StringRef log);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_CUBININFO_H
