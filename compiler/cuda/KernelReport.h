//===- KernelReport.h - Each kernel's resources against the device limits -*- C++ -*-===//
//
// Joins what each cubin says a kernel takes (CubinInfo.h) with how the
// device plan launches it, one record per kernel per cubin arch, and
// checks every record against that arch's limits (DeviceLimits.h) before a
// bundle is written: a launch the driver would refuse (too many threads,
// registers or shared bytes for one block, a block past the kernel's
// __launch_bounds__, a grid past its limits) is a compile error naming the
// kernel, its node and the limit. A kernel launched more than once is
// recorded with the largest shape (the most threads, the largest grid in
// each dimension): it passes every limit exactly when all its launches do.
//
// The records are what `snugc compile --kernel-report=FILE.json` writes,
// and the worst kernel's stack gives the local memory the driver reserves
// (MemoryReport.h's LocalMemoryReservation).
//
// Dynamic shared memory: no emitter asks for any today (Kernel::sharedBytes
// is 0), so no launch needs the cuFuncSetAttribute opt-in; a launch whose
// static plus dynamic bytes pass 48 KiB is refused here, not opted in.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_KERNELREPORT_H
#define SNUG_COMPILER_CUDA_KERNELREPORT_H

#include "compiler/MemoryReport.h"
#include "compiler/cuda/CubinInfo.h"
#include "core/BundleFormat.h"
#include "core/DevicePlan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace snug {
namespace cuda {

struct KernelRecord {
  std::string name;
  std::string node; // the node that first emitted it (for messages)
  unsigned arch = 0;
  KernelResources resources;
  uint64_t spillBytes = 0; // ptxas's "bytes spill stores" (readSpillBytes)
  uint64_t dynamicSharedBytes = 0;
  uint32_t block[3] = {1, 1, 1}; // of the launch with the most threads
  uint32_t grid[3] = {1, 1, 1};  // the largest in each dimension
  uint32_t launches = 0;

  uint64_t getThreads() const {
    return uint64_t(block[0]) * block[1] * block[2];
  }
  uint64_t getSharedBytes() const {
    return resources.sharedBytes + dynamicSharedBytes;
  }
};

/// The records of every launched kernel of `plan` in every cubin of
/// `images`, kernel-major within each arch. `nodes[k]` names the node of
/// plan.kernels[k] (may be shorter); `logs[i]` is images[i]'s ptxas log
/// (may be empty). Error: a cubin that cannot be read, or one that lacks a
/// launched kernel.
llvm::Expected<std::vector<KernelRecord>>
buildKernelRecords(const bundle::DevicePlan &plan,
                   llvm::ArrayRef<bundle::KernelImage> images,
                   llvm::ArrayRef<std::string> logs,
                   llvm::ArrayRef<std::string> nodes = {});

/// Every limit `record` passes on its arch; the first it does not, as an
/// error naming the kernel, its node, the arch, the figure and the limit.
llvm::Error checkKernelLimits(const KernelRecord &record);
/// checkKernelLimits over all of them.
llvm::Error checkKernelLimits(llvm::ArrayRef<KernelRecord> records);

/// The local memory the driver reserves for the worst record's stack on
/// the largest GPU of its arch (not known: no records):
///   roundUp(stack + 512, 256) x resident threads per SM x SMs,
/// NVIDIA's estimate of the driver's one local-memory allocation per
/// context (512 B of system-call stack per thread; rounded to 128 or 256 B)
/// when a kernel needs a stack; 0 when none does.
LocalMemoryReservation
computeLocalMemoryReservation(llvm::ArrayRef<KernelRecord> records);

/// The records as a JSON list of {name, node, arch, registers, threads,
/// block, grid, shared_bytes, local_bytes, spill_bytes, launches}.
void printKernelReportJson(llvm::ArrayRef<KernelRecord> records,
                           llvm::raw_ostream &os);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_KERNELREPORT_H
