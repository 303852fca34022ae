//===- SnugcCommon.h - What every snugc subcommand shares -------*- C++ -*-===//
//
// The options every subcommand takes (input bindings, the pass pipeline and
// its debugging flags), the exit codes, and loadModule(): import a model,
// run the pipeline, and classify failures as user or internal errors. A
// subcommand lives in its own file with its own cl::SubCommand and run
// function, listed in SnugcCommands.h and CommandLine.cpp's table.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TOOLS_SNUGC_SNUGCCOMMON_H
#define SNUG_TOOLS_SNUGC_SNUGCCOMMON_H

#include "ir/Module.h"
#include "ir/Printer.h"
#include "compiler/Pipeline.h"
#include "passes/PassManager.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace snug {
namespace snugc {

enum ExitCode { ExitOk = 0, ExitUserError = 1, ExitInternalError = 2 };

/// The shared options' category, for --help.
llvm::cl::OptionCategory &getCommonCategory();

/// Print options from --elide-weights-over.
ir::PrintOptions getPrintOptions();

/// Imports `path` with the --input/--dim bindings and runs --passes (minus
/// --disable-pass) with the debugging flags. On failure prints the error to
/// stderr and returns None with `exitCode` set.
/// The path of every external data file the import read goes to
/// `externalFiles` when given. Repeated --input/--dim keys and unknown pass
/// names in --disable-pass/--print-ir-after are errors.
/// `extraDim` (SYMBOL, N), when given, binds one more symbolic dim, as
/// --fit-batch does for each value it tries; `pipelineOverride` replaces
/// --passes (--check-accuracy's unfused pipelines).
llvm::Optional<std::unique_ptr<ir::Module>>
loadModule(llvm::StringRef path, int &exitCode,
           std::vector<std::string> *externalFiles = nullptr,
           const std::pair<std::string, int64_t> *extraDim = nullptr,
           const std::string *pipelineOverride = nullptr);

/// Whether --dim binds `symbol`.
bool isDimBound(llvm::StringRef symbol);

/// The pass-manager flags (--print-ir-after, --time-passes, ...) as options,
/// for every pipeline a subcommand runs.
PassManagerOptions getPassManagerOptions();

/// The --passes pipeline (or its default), pipeline names expanded, after
/// the prefix set below.
std::string getPipelineOption();
/// The same, names expanded for `planning` (its precision decides whether
/// `import` lowers).
std::string getPipelineOptionFor(const PlanningOptions &planning);
/// Passes that run before --passes, in every import of the model: snugc
/// train's loss, autodiff and optimizer (they must see the model as
/// imported, before folding and fusion). Empty by default.
void setPipelinePrefix(llvm::StringRef prefix);
/// Whether the import is a training step's (snugc train): training-mode
/// Dropout imports as a seeded mask (ImportOptions::trainingDropout)
/// rather than being refused. False by default.
void setTrainingImport(bool training);

/// What one snugc command line decides as it runs and later steps of the
/// same run read. runCommandLine() resets it first, so that command lines
/// run one after another in one process (the flags fuzzer) never see each
/// other's.
struct RunState {
  /// setPipelinePrefix's passes.
  std::string pipelinePrefix;
  /// setTrainingImport's flag.
  bool trainingImport = false;
  /// The keep set --calibration found (AccuracySupport.cpp).
  std::string calibratedKeep;
  /// The planning pipeline planModule ran, "" when --passes planned
  /// (PlanSupport.cpp).
  std::string planPipeline;
};
RunState &getRunState();
void resetRunState();

/// Prints `error` to stderr; returns ExitInternalError for internal errors
/// (a module that does not verify), ExitUserError otherwise.
int reportError(llvm::Error error);

} // namespace snugc
} // namespace snug

#endif // SNUG_TOOLS_SNUGC_SNUGCCOMMON_H
