//===- PlanSupport.cpp - Planning and the memory report in snugc ----------===//
#include "tools/snugc/PlanSupport.h"
#include "tools/snugc/AccuracySupport.h"
#include "tools/snugc/CudaSupport.h"
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"

#include "compiler/Driver.h"
#include "compiler/FusionReport.h"
#include "compiler/MemoryReport.h"
#include "compiler/PlanTimeline.h"
#include "passes/planner/MemoryPlanner.h"
#include "compiler/Pipeline.h"
#include "passes/PassManager.h"
#include "compiler/FileAccessLLVM.h"
#include "core/CheckedArithmetic.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include <cmath>
#include <cstdio>

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

cl::OptionCategory &getPlanCategory() {
  static cl::OptionCategory category("snugc memory planning options");
  return category;
}

static cl::opt<std::string>
    plannerName("planner",
                cl::desc("Arena packing: none|greedy-size|greedy-breadth|"
                         "search|best (default: best)"),
                cl::init("best"), InPlanningCommands(),
                cl::cat(getPlanCategory()));
static cl::opt<uint64_t> alignment("alignment",
                                   cl::desc("Arena offset alignment in bytes"),
                                   cl::init(256), InPlanningCommands(),
                                   cl::cat(getPlanCategory()));
static cl::opt<double>
    timeLimit("time-limit", cl::desc("Planning budget in seconds"),
              cl::init(2.0), InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<bool> noSchedule("no-schedule",
                                cl::desc("Keep the imported node order"),
                                InPlanningCommands(),
                                cl::cat(getPlanCategory()));
static cl::opt<bool> verifyPlan(
    "verify-plan", cl::desc("Check the plan independently after planning"),
#ifndef NDEBUG
    cl::init(true),
#else
    cl::init(false),
#endif
    InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<std::string>
    reportFormat("memory-report", cl::desc("pretty|json|none"),
                 cl::init("pretty"), InPlanningCommands(),
                 cl::cat(getPlanCategory()));
static cl::opt<std::string> reportPath(
    "memory-report-file",
    cl::desc("Where the memory report goes: a path, or - for stdout "
             "(default: stdout for plan, stderr for compile)"),
    cl::init(""), InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<bool> printFusionGroups(
    "print-fusion",
    cl::desc("List each fused group (nodes, pattern, intermediate bytes "
             "removed) on stderr"),
    InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<std::string> fitBatch(
    "fit-batch",
    cl::desc("With --memory-budget: find the largest value of this symbolic "
             "dim (e.g. batch) whose plan, rematerialization included, fits "
             "the budget, printing the peak at each value tried, and plan or "
             "compile at it"),
    cl::value_desc("DIM"), cl::init(""), InPlanningCommands(),
    cl::cat(getPlanCategory()));
static cl::opt<std::string> precisionFlag(
    "precision",
    cl::desc("Storage precision of weights and activations: fp32 (as the "
             "model is), fp16 or bf16 (accumulation stays f32; graph inputs "
             "and outputs keep their type); or tf32: storage stays f32 and "
             "the f32 Conv, MatMul and Gemm multiply in TF32 (10-bit "
             "mantissas, f32 sums)"),
    cl::init("fp32"), InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<std::string> keepFp32(
    "keep-fp32",
    cl::desc("With --precision: node names and op types to keep in f32, "
             "comma-separated (with tf32: contractions kept at full f32 "
             "math)"),
    cl::value_desc("NAME|OP,..."), cl::init(""), InPlanningCommands(),
    cl::cat(getPlanCategory()));
static cl::opt<std::string> ioPrecision(
    "io-precision",
    cl::desc("With --precision: model (graph inputs and outputs keep the "
             "model's type) or lowered (they take the lowered type too)"),
    cl::init("model"), InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<bool> printPrecisionTable(
    "print-precision",
    cl::desc("With --precision: per op type, the nodes computing in the "
             "lowered type and in f32, on stderr"),
    InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<bool> allowMicroBatches(
    "allow-micro-batches",
    cl::desc("With --memory-budget, when recomputing values cannot meet it: "
             "run the graph as copies on 1/K of the batch each (K = 2, 3, "
             "... dividing it), the smallest K that fits; outputs are the "
             "same bits"),
    InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<bool> allowOffload(
    "allow-offload",
    cl::desc("With --memory-budget: values live across the peak may wait in "
             "pinned host memory (copied out and back) where that costs less "
             "than recomputing them"),
    InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<double> offloadBandwidth(
    "offload-bandwidth",
    cl::desc("With --allow-offload: the host link's bandwidth the copies "
             "are weighed with, in GB/s (PCIe 4.0 x16: 25, PCIe 5.0 x16: "
             "50, NVLink-C2C: 450)"),
    cl::value_desc("GB/s"), cl::init(25), InPlanningCommands(),
    cl::cat(getPlanCategory()));
static cl::opt<bool> printRematDecisions(
    "print-remat",
    cl::desc("List each rematerialization decision (value, producer, where "
             "it is recomputed, arena before and after) on stderr"),
    InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<std::string>
    timelinePath("timeline",
                 cl::desc("Write an HTML picture of the plan to this path"),
                 cl::value_desc("plan.html"), cl::init(""),
                 InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Recompute values until the predicted peak (weights + arena + "
             "runtime) fits in SIZE, and fail (exit 1) when it cannot: B, "
             "KiB, MiB, GiB, KB, MB, GB or bytes"),
    cl::value_desc("SIZE"), cl::init(""), InPlanningCommands(),
    cl::cat(getPlanCategory()));

static llvm::Error userError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string getPipelineDescription() {
  std::string description = getPipelineOption();
  const std::string &planPipeline = getRunState().planPipeline;
  if (!planPipeline.empty())
    description += (description.empty() ? "" : ",") + planPipeline;
  return description;
}

llvm::Error checkPlanFlags() {
  if (reportFormat != "pretty" && reportFormat != "json" &&
      reportFormat != "none")
    return userError("--memory-report must be pretty, json or none, not '" +
                     reportFormat + "'");
  llvm::Expected<uint64_t> budget = getMemoryBudget();
  if (!budget)
    return budget.takeError();
  GivenOptions given;
  if (memoryBudget.getNumOccurrences())
    given.memoryBudget = memoryBudget.getValue();
  given.offloadBandwidth = offloadBandwidth.getNumOccurrences() != 0;
  given.keepFp32 = keepFp32.getNumOccurrences() != 0;
  given.ioPrecision = ioPrecision.getNumOccurrences() != 0;
  if (llvm::Error error =
          checkCompanionOptions(getPlanningOptions(), *budget, given))
    return error;
  return checkPlanningOptions(getPlanningOptions());
}

llvm::Optional<std::string> getKeepFp32Flag() {
  if (!keepFp32.getNumOccurrences())
    return llvm::None;
  return keepFp32.getValue();
}

llvm::Expected<uint64_t> getMemoryBudget() {
  if (memoryBudget.getNumOccurrences() == 0)
    return 0;
  return parseByteSize(memoryBudget, "--memory-budget");
}

PlanningOptions getPlanningOptions() {
  PlanningOptions planning;
  planning.schedule = !noSchedule;
  planning.planner = plannerName;
  planning.alignment = alignment;
  planning.timeLimitSeconds = timeLimit;
  planning.verifyPlan = verifyPlan;
  // The target's scratch (each GEMM's cuBLAS workspace) is planned with
  // everything else.
  planning.target = targetsCuda() ? "cuda" : "host";
  planning.cublasWorkspaceBytes = getCublasWorkspaceCap();
  planning.allowMicroBatches = allowMicroBatches;
  planning.allowOffload = allowOffload;
  planning.offloadBandwidthGBs = offloadBandwidth;
  planning.precision = precisionFlag;
  planning.keepFp32 = keepFp32;
  std::string calibrated = getCalibratedKeep();
  if (!calibrated.empty())
    planning.keepFp32 += (planning.keepFp32.empty() ? "" : ",") + calibrated;
  planning.ioPrecision = ioPrecision;
  return planning;
}

llvm::Error planModule(llvm::StringRef path,
                       std::unique_ptr<ir::Module> &module, double &planningMs,
                       const std::pair<std::string, int64_t> *extraDim) {
  planningMs = 0;
  if (llvm::Error error = checkPlanFlags())
    return error;
  llvm::Expected<uint64_t> budget = getMemoryBudget();
  if (!budget)
    return budget.takeError();
  // Micro-batching plans fresh imports of the model (loadModule prints
  // what goes wrong with one).
  auto reload = [&]() -> llvm::Expected<std::unique_ptr<ir::Module>> {
    int exitCode = ExitOk;
    auto fresh = loadModule(path, exitCode, nullptr, extraDim);
    if (!fresh)
      return userError("reloading " + path + " for micro-batching failed");
    return std::move(*fresh);
  };
  llvm::Expected<std::unique_ptr<ir::Module>> planned = planWithinBudget(
      std::move(module), reload, getPlanningOptions(), getPassManagerOptions(),
      *budget, planningMs, getRunState().planPipeline);
  if (!planned)
    return planned.takeError();
  module = std::move(*planned);
  // The report compares the lowered weights and arena with the model's own
  // precision: the same model imported without lowering, planned alike.
  PlanningOptions planning = getPlanningOptions();
  if (planning.precision != "fp32" && planning.precision != "tf32") {
    PlanningOptions plain = planning;
    plain.precision = "fp32";
    std::string pipeline32 = getPipelineOptionFor(plain);
    int exitCode = ExitOk;
    auto fp32 = loadModule(path, exitCode, nullptr, extraDim, &pipeline32);
    if (!fp32)
      return userError("importing " + path + " in fp32 for the report's "
                                             "precision line failed");
    if (llvm::Error error = recordFp32Baseline(*module, **fp32, planning,
                                               getPassManagerOptions()))
      return error;
  }
  return llvm::Error::success();
}

llvm::Error writeMemoryReport(const ir::Module &module,
                              llvm::StringRef modelName, double planningMs,
                              uint64_t deviceArenaBytes,
                              const LocalMemoryReservation &localMemory) {
  if (!timelinePath.empty()) {
    std::string html;
    llvm::raw_string_ostream os(html);
    if (llvm::Error error = writePlanTimeline(module, modelName, os))
      return error;
    if (llvm::Error error = writeOutputFile(timelinePath, os.str()))
      return error;
  }
  if (printFusionGroups)
    printFusion(summarizeFusion(module), llvm::errs());
  llvm::Expected<uint64_t> budget = getMemoryBudget();
  if (!budget)
    return budget.takeError();
  if (reportFormat == "none" && !*budget && !printRematDecisions &&
      !printPrecisionTable)
    return llvm::Error::success();
  llvm::Expected<MemoryReport> report =
      buildMemoryReport(module, modelName, planningMs, deviceArenaBytes);
  if (!report)
    return report.takeError();
  report->localMemory = localMemory;
  if (printRematDecisions)
    printRemat(report->remat, report->offload, report->predictedPeakBytes,
               llvm::errs());
  if (printPrecisionTable)
    printPrecision(report->precision, llvm::errs());
  if (reportFormat == "none")
    return checkMemoryBudget(*report, *budget);
  // `plan` prints only the report, so stdout; `compile` keeps stdout for its
  // product.
  std::string path = reportPath;
  if (path.empty())
    path = getPlanCommand() ? "-" : "";
  std::string text;
  llvm::raw_string_ostream os(text);
  if (reportFormat == "json")
    printMemoryReportJson(*report, os);
  else
    printMemoryReportPretty(*report, os);
  if (path.empty())
    llvm::errs() << os.str();
  // A file is written whole or not at all; stdout is checked too.
  else if (llvm::Error error = writeOutputFile(path, os.str()))
    return error;
  // The report shows the peak first; then a peak over the budget fails.
  return checkMemoryBudget(*report, *budget);
}

/// Every file the report flags write (not stdout or stderr).
static void addReportOutputs(std::vector<NamedPath> &outputs) {
  if (!reportPath.empty() && reportPath != "-" && reportFormat != "none")
    outputs.push_back({reportPath, "--memory-report-file"});
  if (!timelinePath.empty())
    outputs.push_back({timelinePath, "--timeline"});
}

/// The largest --fit-batch value whose predicted peak fits the budget,
/// each value tried planned as the final one will be (the target's
/// scratch and rematerialization included) and reported on stderr. 0 with
/// `exitCode` set after an error (printed), or when not even 1 fits.
static int64_t fitBatchValue(llvm::StringRef path, uint64_t budget,
                             int &exitCode) {
  // Far more than any device holds at one byte a sample.
  constexpr int64_t kMaxValue = int64_t(1) << 40;
  bool failed = false;
  llvm::Expected<int64_t> best = findLargestFitting(
      [&](int64_t value) -> llvm::Expected<bool> {
        std::pair<std::string, int64_t> binding{fitBatch, value};
        auto module = loadModule(path, exitCode, nullptr, &binding);
        double planningMs = 0;
        llvm::Error error = module ? planModule(path, *module, planningMs,
                                                &binding)
                                   : llvm::Error::success();
        if (!module || error) {
          if (error)
            exitCode = reportError(std::move(error));
          failed = true;
          return userError("stopped");
        }
        uint64_t peak = computePredictedPeakBytes(**module);
        bool fits = peak <= budget;
        llvm::errs() << "fit-batch: " << fitBatch << "=" << value
                     << ": predicted peak " << peak
                     << " B " << (fits ? "fits" : "is over") << " the budget of "
                     << budget << " B\n";
        return fits;
      },
      kMaxValue);
  if (!best) {
    if (failed)
      llvm::consumeError(best.takeError());
    else
      exitCode = reportError(best.takeError());
    return 0;
  }
  if (*best == 0)
    exitCode = reportError(userError(
        "--fit-batch=" + fitBatch + ": not even " + fitBatch +
        "=1 fits the memory budget of " + std::to_string(budget) +
        " B (the peak at 1 is above)"));
  else
    llvm::errs() << "fit-batch: " << fitBatch << "=" << *best
                 << " is the largest that fits\n";
  return *best;
}

llvm::Optional<std::unique_ptr<ir::Module>> loadPlanAndReport(
    llvm::StringRef path, int &exitCode,
    llvm::Optional<cuda::CudaProgram> &program, std::vector<NamedPath> outputs,
    llvm::function_ref<llvm::Error(
        ir::Module &, const cuda::CudaProgram &, LocalMemoryReservation &)>
        compileKernels) {
  llvm::Error flagError = checkPlanFlags();
  if (!flagError)
    flagError = checkTargetFlags();
  if (llvm::Error error = std::move(flagError)) {
    exitCode = reportError(std::move(error));
    return llvm::None;
  }
  // --check-accuracy: before anything is planned or written.
  if (wantsAccuracyCheck() && !checkAccuracy(path, exitCode))
    return llvm::None;
  // --fit-batch: the value first, then everything below runs at it.
  llvm::Optional<std::pair<std::string, int64_t>> fitted;
  if (!fitBatch.empty()) {
    llvm::Expected<uint64_t> budget = getMemoryBudget();
    llvm::Error error = budget.takeError();
    if (!error && !*budget)
      error = userError("--fit-batch needs --memory-budget");
    else if (!error && isDimBound(fitBatch))
      error = userError("--fit-batch=" + fitBatch + " and --dim " + fitBatch +
                        "=... both bind it: give one");
    if (error) {
      exitCode = reportError(std::move(error));
      return llvm::None;
    }
    int64_t value = fitBatchValue(path, *budget, exitCode);
    if (!value)
      return llvm::None;
    fitted = std::make_pair(fitBatch.getValue(), value);
  }
  std::vector<std::string> externalFiles;
  auto module = loadModule(path, exitCode, &externalFiles,
                           fitted ? &*fitted : nullptr);
  if (!module)
    return llvm::None;
  // Nothing is written yet: refuse an output that would overwrite the
  // model, its (perhaps mapped) external data, or another output.
  std::vector<NamedPath> inputs = {{path.str(), "model"}};
  for (const std::string &file : externalFiles)
    inputs.push_back({file, "external data"});
  addReportOutputs(outputs);
  addTargetOutputs(llvm::sys::path::stem(path), outputs);
  double planningMs = 0;
  llvm::Error error = checkOutputsAreNewFiles(inputs, outputs);
  if (!error)
    error = planModule(path, *module, planningMs,
                       fitted ? &*fitted : nullptr);
  if (!error) {
    auto emitted = emitForTarget(**module);
    if (emitted)
      program = std::move(*emitted);
    else
      error = emitted.takeError();
  }
  LocalMemoryReservation localMemory;
  if (!error && program && compileKernels)
    error = compileKernels(**module, *program, localMemory);
  if (!error)
    error = writeMemoryReport(**module, llvm::sys::path::filename(path),
                              planningMs,
                              program ? program->plan.arenaBytes : 0,
                              localMemory);
  if (error) {
    exitCode = reportError(std::move(error));
    return llvm::None;
  }
  exitCode = ExitOk;
  return module;
}

} // namespace snugc
} // namespace snug
