//===- PlanSupport.h - Planning and the memory report in snugc --*- C++ -*-===//
//
// What `snugc compile` and `snugc plan` share after import: the memory
// planning flags (--planner, --alignment, --time-limit, --no-schedule,
// --verify-plan), planning the module unless the user's --passes already did,
// writing the memory report (--memory-report, --memory-report-file) and
// the plan picture (--timeline), and checking the predicted peak against
// --memory-budget (after the report is written). The work itself is
// compiler/Driver.h's, shared with the Python package.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TOOLS_SNUGC_PLANSUPPORT_H
#define SNUG_TOOLS_SNUGC_PLANSUPPORT_H

#include "compiler/MemoryReport.h"
#include "compiler/Pipeline.h"
#include "compiler/cuda/CudaEmitter.h"
#include "ir/Module.h"
#include "core/FileAccess.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace snug {
namespace snugc {

/// The help category of the planning, report and precision flags.
llvm::cl::OptionCategory &getPlanCategory();

/// Checks the planning flags, so that a bad one fails before a slow import.
llvm::Error checkPlanFlags();

/// --keep-fp32 as given on the command line; None when not given.
llvm::Optional<std::string> getKeepFp32Flag();

/// --memory-budget in bytes (0 when not given); an error names the flag.
llvm::Expected<uint64_t> getMemoryBudget();

/// Runs "schedule,plan-memory{...}" (the schedule pass unless --no-schedule)
/// on a module that has no plan yet, planning the --target's scratch;
/// stores the planner's time. With --memory-budget it rematerializes, and
/// with --allow-micro-batches may replace `module` by a fresh import of
/// `path` (with `extraDim` bound, as --fit-batch tries) run in
/// micro-batches (planWithinBudget, compiler/Driver.h).
llvm::Error planModule(llvm::StringRef path,
                       std::unique_ptr<ir::Module> &module, double &planningMs,
                       const std::pair<std::string, int64_t> *extraDim);

/// The planning options snugc's flags give (--planner, --alignment,
/// --time-limit, --no-schedule, --verify-plan, --target,
/// --cublas-workspace): what `plan` and `default` in --passes stand for.
PlanningOptions getPlanningOptions();

/// The whole pipeline a planned module went through, for the bundle's
/// manifest.
std::string getPipelineDescription();

/// Writes the report and timeline the flags ask for. `modelName` heads them;
/// `deviceArenaBytes` comes from the device plan (0 for the host target) and
/// must be the planned arena; `localMemory` is the compiled kernels' (not
/// known when nothing was compiled).
llvm::Error writeMemoryReport(const ir::Module &module,
                              llvm::StringRef modelName, double planningMs,
                              uint64_t deviceArenaBytes,
                              const LocalMemoryReservation &localMemory = {});

/// What compile and plan share: check the planning and target flags, import
/// `path` and run the pipeline, refuse outputs (the command's `outputs`, the
/// report, the timeline, the CUDA dump) that are the same file as the model,
/// its external data or each other, plan, emit CUDA for --target=cuda (into
/// `program`), call `compileKernels` on it when given (compile's NVRTC step,
/// which sets the local memory the report shows), and write the report. On
/// failure prints the error and returns None with `exitCode` set.
llvm::Optional<std::unique_ptr<ir::Module>> loadPlanAndReport(
    llvm::StringRef path, int &exitCode,
    llvm::Optional<cuda::CudaProgram> &program,
    std::vector<NamedPath> outputs = {},
    llvm::function_ref<llvm::Error(
        ir::Module &, const cuda::CudaProgram &, LocalMemoryReservation &)>
        compileKernels = {});

} // namespace snugc
} // namespace snug

#endif // SNUG_TOOLS_SNUGC_PLANSUPPORT_H
