//===- Driver.h - Import, plan, report and bundle a model, as a library -*- C++ -*-===//
//
// What `snugc plan` and `snugc compile` do after reading their flags, as
// functions that take options instead of flags, so that snugc and the
// Python package (python/) run one implementation:
//   import + pipeline  importAndRunPipeline (compiler/Pipeline.h) with the
//                      caller's pass-manager options
//   plan               planModule: schedule,plan-memory,verify-plan unless
//                      the pipeline planned already
//   emit               emitCudaProgram for the CUDA target
//   report             buildMemoryReport (compiler/MemoryReport.h)
//   budget             checkMemoryBudget: the predicted peak against
//                      --memory-budget, a MemoryBudgetError naming the
//                      budget, the peak and what is live there
//   bundle             serializeBundle (compiler/bundle/BundleWriter.h)
// planModel composes them for a model file. snugc interleaves its own
// checks (outputs that overwrite inputs, the report's destination) between
// the steps, so it calls them one by one.
//
// With a budget, planning rematerializes (passes/memory/budget/Remat.cpp) to meet it;
// the budget is then checked against the report all the same.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_DRIVER_H
#define SNUG_COMPILER_DRIVER_H

#include "compiler/MemoryReport.h"
#include "compiler/cuda/KernelCache.h"
#include "compiler/Pipeline.h"
#include "compiler/bundle/BundleWriter.h"
#include "compiler/cuda/CudaEmitter.h"
#include "compiler/onnx/OnnxImporter.h"
#include "passes/PassManager.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace snug {

/// Parses a byte size for `flag` ("--memory-budget"): a plain byte count or
/// a number with one of B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB,
/// GB, TB (powers of 1000) right after it. Digits only (an optional
/// fraction before a unit: "1.5GiB"), no sign, exponent or space; a result
/// over 2^63 is an error. Errors name the flag and the text.
llvm::Expected<uint64_t> parseByteSize(llvm::StringRef text,
                                       llvm::StringRef flag);

/// Checks planning options the way snugc checks its flags (named as the
/// flags): a known planner, a power-of-two alignment of at most 1 PiB, a
/// finite non-negative time limit, target cuda or host, a cuBLAS workspace
/// cap that is a multiple of 256 of at most 1 PiB.
llvm::Error checkPlanningOptions(const PlanningOptions &planning);

/// Which of the options that act only beside another were given (snugc:
/// on the command line, empty or not; the Python package: as keywords
/// other than None), whatever their values.
struct GivenOptions {
  /// --memory-budget's text as given ("0", "1GiB"); None when not given.
  llvm::Optional<std::string> memoryBudget;
  bool offloadBandwidth = false;
  bool keepFp32 = false;
  bool ioPrecision = false;
};

/// An option that acts only beside another is an error without it, naming
/// both (never accepted and ignored): a --memory-budget of 0 bytes,
/// --allow-micro-batches or --allow-offload without a budget,
/// --offload-bandwidth without --allow-offload, --keep-fp32 or
/// --io-precision at --precision=fp32. snugc and the Python package both
/// check here, so they refuse alike and in the same words.
llvm::Error checkCompanionOptions(const PlanningOptions &planning,
                                  uint64_t memoryBudgetBytes,
                                  const GivenOptions &given);

/// Adds the name of every node of `module` (those in bodies too) to `into`.
void collectNodeNames(const ir::Module &module, llvm::StringSet<> &into);

/// --keep-fp32 as the user gave it (`list`: node names and op types,
/// comma-separated) against `nodeNames`, the names of the nodes of the
/// model `modelPath` (collectNodeNames, as imported and after its
/// pipeline): a name that is neither one of them nor an op type of the op
/// table would keep nothing, and is an error naming it and the model, with
/// the op type or node name it differs from only in case, or nearly, as a
/// suggestion. An ONNX op the importer rebuilds from other ops (Einsum,
/// LSTM) is such a name, with its own message: no node has that op type,
/// even in a model that uses it. An op type of the table the model does
/// not have is taken: one list serves many models. A
/// check for the CLI and the Python package, not for the passes, whose
/// keep= lists also come from calibration and snug-opt's test files.
llvm::Error checkKeepFp32Names(llvm::StringRef list,
                               const llvm::StringSet<> &nodeNames,
                               llvm::StringRef modelPath);

/// Runs the planning pipeline (compiler/Pipeline.h) on a module that has no
/// plan yet; a module the pipeline already planned is left alone (pipeline
/// set to ""). Sets `planningMs` to the planner's time and `pipeline` to
/// what ran. With a memory budget (bytes, 0 for none) the pipeline
/// rematerializes (passes/memory/budget/Remat.cpp) until the arena fits the budget minus
/// the weights; whether it got there is checkMemoryBudget's question.
/// With `microBatches` > 1 the pipeline first splits the batch
/// (passes/memory/budget/SplitBatch.cpp).
llvm::Error planModule(ir::Module &module, const PlanningOptions &planning,
                       const PassManagerOptions &passOptions,
                       double &planningMs, std::string &pipeline,
                       uint64_t memoryBudgetBytes = 0,
                       int64_t microBatches = 1);

/// What --memory-budget does: plans `module` (rematerializing toward the
/// budget); when its predicted peak is still over the budget, micro-batches
/// are allowed (planning.allowMicroBatches) and the model can run in them
/// (findSplittableBatch), plans fresh copies from
/// `reload` split into 2, 3, 4, ... parts (each a divisor of the batch, in
/// order) until one fits. Returns the first plan that fits, else the one
/// with the smallest peak (whose budget check then fails). Without a
/// budget, the plain plan.
llvm::Expected<std::unique_ptr<ir::Module>> planWithinBudget(
    std::unique_ptr<ir::Module> module,
    llvm::function_ref<llvm::Expected<std::unique_ptr<ir::Module>>()> reload,
    const PlanningOptions &planning, const PassManagerOptions &passOptions,
    uint64_t memoryBudgetBytes, double &planningMs, std::string &pipeline);

/// With --precision fp16/bf16: plans `fp32`, the same model imported with
/// the same options but not lowered, as the lowered one was planned (no
/// budget), and records on the planned `lowered` module what it would
/// take in fp32: `precision_weights_before` and `precision_arena_before`
/// (bytes), which the memory report's precision line compares with the
/// lowered weights and arena.
llvm::Error recordFp32Baseline(ir::Module &lowered, ir::Module &fp32,
                               const PlanningOptions &planning,
                               const PassManagerOptions &passOptions);

/// The CUDA translation unit and device plan of a planned module for
/// `archs` (sm numbers). Fails naming the node the backend cannot emit.
llvm::Expected<cuda::CudaProgram>
emitCudaProgram(const ir::Module &module, llvm::ArrayRef<unsigned> archs);

/// A predicted peak over the memory budget: the budget, the smallest peak
/// rematerialization reached and the tensors live at its peak step with
/// their producers.
class MemoryBudgetError : public llvm::ErrorInfo<MemoryBudgetError> {
public:
  static char ID;
  MemoryBudgetError(std::string model, uint64_t budget, MemoryReport report)
      : model(std::move(model)), budget(budget), report(std::move(report)) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  uint64_t getBudget() const { return budget; }
  uint64_t getPeak() const { return report.predictedPeakBytes; }
  const MemoryReport &getReport() const { return report; }

private:
  std::string model;
  uint64_t budget;
  MemoryReport report;
};

/// Success when `budgetBytes` is 0 (no budget) or the report's predicted
/// peak (weights + arena + runtime) fits in it; a MemoryBudgetError
/// otherwise.
llvm::Error checkMemoryBudget(const MemoryReport &report,
                              uint64_t budgetBytes);

/// --fit-batch's search: the largest value v >= 1 for which `fits(v)`
/// holds, assuming it holds from 1 up to some value and nowhere after (a
/// larger batch never needs less memory). Doubles from 1 while it fits, up
/// to `maxValue`, then bisects between the last value that fit and the
/// first that did not; each value is tried once. 0 when 1 does not fit; an
/// error from `fits` stops the search and is returned.
llvm::Expected<int64_t>
findLargestFitting(llvm::function_ref<llvm::Expected<bool>(int64_t)> fits,
                   int64_t maxValue);

/// Everything planModel takes besides the model.
struct DriverOptions {
  ImportOptions import;
  /// The pipeline after import (names of compiler/Pipeline.h expand).
  std::string pipeline = "import";
  PassManagerOptions passes;
  PlanningOptions planning;
  /// SM architectures for the CUDA target (planning.target == "cuda").
  std::vector<unsigned> archs = {80, 90};
  /// 0: none.
  uint64_t memoryBudgetBytes = 0;
  /// Which companion options were given (checkCompanionOptions).
  GivenOptions given;
};

/// A planned model and what was computed from it.
struct PlannedModel {
  std::unique_ptr<ir::Module> module;
  MemoryReport report;
  /// The CUDA program for the CUDA target.
  llvm::Optional<cuda::CudaProgram> program;
  /// Every pipeline that ran, for the bundle's manifest.
  std::string pipelineDescription;
};

/// Checks the options (checkCompanionOptions, checkPlanningOptions), then
/// imports `path`, runs the pipeline, plans, emits CUDA for the CUDA
/// target and builds the report headed `modelName`, then checks the budget
/// (a MemoryBudgetError carries the report).
llvm::Expected<PlannedModel> planModel(llvm::StringRef path,
                                       llvm::StringRef modelName,
                                       const DriverOptions &options);

/// The bundle bytes of a planned model: NVRTC compiles the CUDA program
/// for `archs` first when there is one, taking the images `cache` holds
/// (compiler/cuda/KernelCache.h; the default directory unless told).
llvm::Expected<std::vector<uint8_t>>
serializePlannedModel(const PlannedModel &planned,
                      llvm::ArrayRef<unsigned> archs,
                      llvm::StringRef compilerVersion,
                      const cuda::KernelCache &cache = cuda::KernelCache(
                          cuda::KernelCache::getDefaultDirectory()));

} // namespace snug

#endif // SNUG_COMPILER_DRIVER_H
