//===- CudaSupport.h - The CUDA target in snugc -----------------*- C++ -*-===//
//
// The target flags of `snugc compile` and `snugc plan`: --target=cuda|host,
// --arch (cubin architectures; PTX for the newest), --cublas-workspace (the
// cap plan-memory sizes each GEMM's workspace under), --dump-cuda DIR and
// --kernel-report FILE.json (compile: each kernel's resources per arch).
// With the CUDA target, plan-memory plans the target's scratch (every
// GEMM's cuBLAS workspace) into the arena, the planned module is emitted as
// CUDA C++ before the report is printed (the report checks that the device
// arena is the planned arena). A compile to a bundle then runs NVRTC, still
// before the report (which shows the local memory the compiled kernels'
// stacks reserve), checks each kernel against its GPU's limits, and puts
// the device plan and kernel images in the bundle.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TOOLS_SNUGC_CUDASUPPORT_H
#define SNUG_TOOLS_SNUGC_CUDASUPPORT_H

#include "compiler/MemoryReport.h"
#include "compiler/cuda/CudaEmitter.h"

#include "core/FileAccess.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace snug {
namespace snugc {

/// Checks --target, --arch and --cublas-workspace (a multiple of 256, at
/// most 1 PiB).
llvm::Error checkTargetFlags();

bool targetsCuda();
/// --cublas-workspace.
uint64_t getCublasWorkspaceCap();
/// "cuda sm_80,sm_90" or "host", for the banner.
std::string getTargetDescription();

/// The CUDA translation unit and device plan of a planned module, or None
/// for --target=host. Fails naming the node the backend cannot emit.
llvm::Expected<llvm::Optional<cuda::CudaProgram>>
emitForTarget(const ir::Module &module);

/// Adds the files --dump-cuda (DIR/<stem>.cu) and --kernel-report write to
/// `outputs`.
void addTargetOutputs(llvm::StringRef stem, std::vector<NamedPath> &outputs);
/// Whether --kernel-report was given.
bool wantsKernelReport();
/// Writes --dump-cuda DIR/<stem>.cu (source and plan), then compiles the
/// program with NVRTC for --arch (and writes each cubin to
/// DIR/<stem>.sm_XX.cubin with --dump-cuda); `beforeCompiling` as for
/// cuda::compileCudaProgram. Then reads each cubin's kernels
/// (compiler/cuda/KernelReport.h): a launch over its arch's limits is an
/// error naming the kernel; writes --kernel-report; and sets `localMemory`
/// to the driver's reservation for the worst kernel's stack.
llvm::Expected<std::vector<bundle::KernelImage>>
compileForTarget(const cuda::CudaProgram &program, llvm::StringRef stem,
                 LocalMemoryReservation &localMemory,
                 llvm::function_ref<void()> beforeCompiling = {});

} // namespace snugc
} // namespace snug

#endif // SNUG_TOOLS_SNUGC_CUDASUPPORT_H
