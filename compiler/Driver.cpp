//===- Driver.cpp - Import, plan, report and bundle a model, as a library -===//
#include "compiler/Driver.h"
#include "passes/memory/budget/SplitBatch.h"
#include "passes/memory/ScratchRequest.h"

#include "compiler/cuda/KernelReport.h"
#include "compiler/cuda/Nvrtc.h"
#include "ir/OpInfo.h"
#include "passes/planner/MemoryPlanner.h"
#include "core/CheckedArithmetic.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <chrono>
#include <cmath>
#include <cstdio>

namespace snug {

char MemoryBudgetError::ID;

static llvm::Error userError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

llvm::Expected<uint64_t> parseByteSize(llvm::StringRef text,
                                       llvm::StringRef flag) {
  auto fail = [&]() {
    return userError(flag + ": '" + text +
                     "' is not a byte size (digits, then optionally one of "
                     "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB with no space: "
                     "20GiB, 6000000000)");
  };
  llvm::StringRef digits = text.take_while(llvm::isDigit);
  llvm::StringRef unit = text.drop_front(digits.size());
  if (digits.empty())
    return fail();
  static const std::pair<const char *, uint64_t> units[] = {
      {"", 1},
      {"B", 1},
      {"KiB", uint64_t(1) << 10},
      {"MiB", uint64_t(1) << 20},
      {"GiB", uint64_t(1) << 30},
      {"TiB", uint64_t(1) << 40},
      {"KB", 1000},
      {"MB", 1000 * 1000},
      {"GB", 1000 * 1000 * 1000},
      {"TB", uint64_t(1000) * 1000 * 1000 * 1000}};
  for (const auto &[name, scale] : units) {
    if (unit != name)
      continue;
    // Only digits: a number that does not parse is too large for 64 bits.
    uint64_t value;
    if (digits.size() > 19 || digits.getAsInteger(10, value) ||
        value > (uint64_t(1) << 63) / scale)
      return userError(flag + ": '" + text + "' is more than 2^63 bytes");
    return value * scale;
  }
  return fail();
}

llvm::Error checkPlanningOptions(const PlanningOptions &planning) {
  if (!llvm::isPowerOf2_64(planning.alignment) ||
      planning.alignment > kMaxTensorBytes)
    return userError("--alignment: '" + std::to_string(planning.alignment) +
                     "' is not a power of two of at most 1 PiB");
  if (!std::isfinite(planning.timeLimitSeconds) ||
      planning.timeLimitSeconds < 0) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", planning.timeLimitSeconds);
    return userError("--time-limit: '" + llvm::Twine(text) +
                     "' is not a finite, non-negative number of seconds");
  }
  if (planning.precision != "fp32" && planning.precision != "fp16" &&
      planning.precision != "bf16" && planning.precision != "tf32")
    return userError("--precision must be fp32, tf32, fp16 or bf16, not '" +
                     planning.precision + "'");
  if (planning.precision == "tf32" && planning.ioPrecision != "model")
    return userError("--io-precision=" + planning.ioPrecision +
                     " does not apply to --precision=tf32 (storage, inputs "
                     "and outputs stay f32)");
  if (planning.ioPrecision != "model" && planning.ioPrecision != "lowered")
    return userError("--io-precision must be model or lowered, not '" +
                     planning.ioPrecision + "'");
  if (planning.keepFp32.find_first_of("{} ") != std::string::npos)
    return userError("--keep-fp32: '" + planning.keepFp32 +
                     "' is not a comma-separated list of node names and op "
                     "types");
  if (!std::isfinite(planning.offloadBandwidthGBs) ||
      !(planning.offloadBandwidthGBs > 0) ||
      planning.offloadBandwidthGBs > 1e9) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", planning.offloadBandwidthGBs);
    return userError("--offload-bandwidth: '" + llvm::Twine(text) +
                     (planning.offloadBandwidthGBs > 1e9
                          ? "' is more than 1e9 GB/s"
                          : "' is not a positive number of GB/s"));
  }
  if (planning.target != "cuda" && planning.target != "host")
    return userError("--target must be cuda or host, not '" +
                     planning.target + "'");
  if (planning.cublasWorkspaceBytes % 256)
    return userError("--cublas-workspace must be a multiple of 256");
  if (planning.cublasWorkspaceBytes < kMinCublasWorkspace)
    return userError("--cublas-workspace=" +
                     std::to_string(planning.cublasWorkspaceBytes) +
                     " is less than " + std::to_string(kMinCublasWorkspace) +
                     " bytes: cuBLAS documents that a smaller workspace may "
                     "fail a GEMM with CUBLAS_STATUS_ALLOC_FAILED");
  if (planning.cublasWorkspaceBytes > kMaxTensorBytes)
    return userError("--cublas-workspace=" +
                     std::to_string(planning.cublasWorkspaceBytes) +
                     " is more than 1 PiB (" +
                     std::to_string(kMaxTensorBytes) + " bytes)");
  return parsePlannerStrategy(planning.planner).takeError();
}

llvm::Error checkCompanionOptions(const PlanningOptions &planning,
                                  uint64_t memoryBudgetBytes,
                                  const GivenOptions &given) {
  if (given.memoryBudget && memoryBudgetBytes == 0)
    return userError("--memory-budget=" + *given.memoryBudget +
                     ": a budget of 0 bytes fits nothing (leave the flag "
                     "out to plan without a budget)");
  const char *needsBudget = planning.allowMicroBatches ? "--allow-micro-batches"
                            : planning.allowOffload    ? "--allow-offload"
                                                       : nullptr;
  if (needsBudget && memoryBudgetBytes == 0)
    return userError(llvm::Twine(needsBudget) +
                     " acts only under --memory-budget, which is not given");
  if (given.offloadBandwidth && !planning.allowOffload)
    return userError("--offload-bandwidth weighs the copies of "
                     "--allow-offload, which is not given");
  const char *needsPrecision = given.keepFp32      ? "--keep-fp32"
                               : given.ioPrecision ? "--io-precision"
                                                   : nullptr;
  if (needsPrecision && planning.precision == "fp32")
    return userError(llvm::Twine(needsPrecision) +
                     " acts only with --precision=fp16, bf16 or tf32 (the "
                     "model runs at fp32 as it is)");
  return llvm::Error::success();
}

static void collectNodeNames(llvm::ArrayRef<std::unique_ptr<ir::Node>> nodes,
                             llvm::StringSet<> &into) {
  for (const std::unique_ptr<ir::Node> &node : nodes) {
    if (!node->getName().empty())
      into.insert(node->getName());
    if (node->hasBody())
      collectNodeNames(node->getBody()->getNodes(), into);
  }
}

void collectNodeNames(const ir::Module &module, llvm::StringSet<> &into) {
  collectNodeNames(module.getNodes(), into);
}

/// The op types --keep-fp32 may name: the op table's, the only ones a node
/// can have (lower-precision matches a node's own op type).
static const llvm::StringSet<> &getKnownOpTypes() {
  static const llvm::StringSet<> types = [] {
    llvm::StringSet<> all;
    for (const ir::OpInfo &info : ir::getAllOps())
      all.insert(info.name);
    return all;
  }();
  return types;
}

/// Whether `name` is an ONNX op the importer reads but rebuilds from other
/// ops (Einsum, LSTM, ...): no node keeps that op type, so keeping it would
/// keep nothing, whether or not the model has one.
static bool isRebuiltOnnxOp(llvm::StringRef name) {
  static const llvm::StringSet<> rebuilt = [] {
    llvm::StringSet<> ops;
    for (const std::string &op : getImportedOnnxOps())
      if (!ir::lookupOp(op))
        ops.insert(op);
    return ops;
  }();
  return rebuilt.count(name) != 0;
}

/// What `name` may have meant: the op type, then the node name, equal to
/// it but for case, else the nearest within two edits; "" when none is.
static std::string suggestKeepName(llvm::StringRef name,
                                   const llvm::StringSet<> &nodeNames) {
  const llvm::StringSet<> *sets[] = {&getKnownOpTypes(), &nodeNames};
  const char *kinds[] = {"the op type", "the node"};
  for (int i = 0; i < 2; ++i)
    for (const auto &entry : *sets[i])
      if (entry.getKey().equals_insensitive(name))
        return std::string(kinds[i]) + " '" + entry.getKey().str() + "'";
  std::string best;
  unsigned bestDistance = 3;
  for (int i = 0; i < 2; ++i)
    for (const auto &entry : *sets[i]) {
      unsigned distance =
          name.edit_distance(entry.getKey(), true, bestDistance);
      // A tie goes to the smaller text, whatever order the set iterates in.
      std::string candidate =
          std::string(kinds[i]) + " '" + entry.getKey().str() + "'";
      if (distance < bestDistance ||
          (distance == bestDistance && !best.empty() && candidate < best)) {
        bestDistance = distance;
        best = candidate;
      }
    }
  return best;
}

llvm::Error checkKeepFp32Names(llvm::StringRef list,
                               const llvm::StringSet<> &nodeNames,
                               llvm::StringRef modelPath) {
  llvm::SmallVector<llvm::StringRef, 8> names;
  list.split(names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : names) {
    name = name.trim();
    if (name.empty() || nodeNames.count(name) || getKnownOpTypes().count(name))
      continue;
    if (isRebuiltOnnxOp(name))
      return userError("--keep-fp32: '" + name +
                       "' is an ONNX op the importer rebuilds from other ops, "
                       "so no node of '" + modelPath +
                       "' has that op type and it would keep nothing (name "
                       "the nodes it becomes or their op types instead)");
    std::string suggestion = suggestKeepName(name, nodeNames);
    return userError(
        "--keep-fp32: '" + name + "' is neither a node of '" + modelPath +
        "' nor an op type, so it would keep nothing" +
        (suggestion.empty() ? "" : " (did you mean " + suggestion + "?)"));
  }
  return llvm::Error::success();
}

llvm::Error planModule(ir::Module &module, const PlanningOptions &planning,
                       const PassManagerOptions &passOptions,
                       double &planningMs, std::string &pipeline,
                       uint64_t memoryBudgetBytes, int64_t microBatches) {
  planningMs = 0;
  pipeline.clear();
  if (module.getAttribute("arena"))
    return llvm::Error::success(); // the pipeline planned it already
  llvm::Expected<PlannerStrategy> strategy =
      parsePlannerStrategy(planning.planner);
  if (!strategy)
    return strategy.takeError();
  // The arena gets what the weights leave of the budget (the runtime
  // allocates nothing else). Weights over the budget leave nothing to
  // recompute for: the budget check says so.
  PlanningOptions withBudget = planning;
  uint64_t weights = computeWeightsBytes(module);
  if (memoryBudgetBytes > weights)
    withBudget.arenaBudgetBytes = memoryBudgetBytes - weights;
  pipeline = getPlanningPipeline(withBudget);
  if (microBatches > 1)
    pipeline = "split-batch{parts=" + std::to_string(microBatches) + "}," +
               pipeline;
  PassManager passManager(passOptions);
  if (llvm::Error error = passManager.addPipeline(pipeline))
    return error;
  if (llvm::Error error = passManager.run(module))
    return error;
  planningMs =
      passManager.getStatistic("plan-memory", "planning-us").getValueOr(0) /
      1000.0;
  return llvm::Error::success();
}

llvm::Expected<cuda::CudaProgram>
emitCudaProgram(const ir::Module &module, llvm::ArrayRef<unsigned> archs) {
  cuda::CudaOptions options;
  options.archs = archs.vec();
  auto program = cuda::emitCuda(module, computeWeightsLayout(module), options);
  if (!program)
    return userError("cannot compile for CUDA: " +
                     toString(program.takeError()) +
                     " (--target=host builds a host-only bundle)");
  return program;
}

static std::string describeBytes(uint64_t bytes) {
  return std::to_string(bytes) + " B (" +
         llvm::formatv("{0:F2} MiB", double(bytes) / (1 << 20)).str() + ")";
}

void MemoryBudgetError::log(llvm::raw_ostream &os) const {
  os << model << ": the predicted peak (weights + arena + runtime) of "
     << describeBytes(getPeak()) << " is over the memory budget of "
     << describeBytes(budget);
  const RematSummary &remat = report.remat;
  if (!remat.applied)
    os << " (the weights alone take " << describeBytes(report.weightsBytes)
       << ")";
  else if (remat.decisions.empty())
    os << " (rematerialization found no value live across the peak step "
          "whose recomputation lowers it)";
  else if (remat.peakBeforeBytes > getPeak())
    os << " (rematerialization lowered it from "
       << describeBytes(remat.peakBeforeBytes) << " in "
       << remat.decisions.size() << " decisions, +" << remat.extraFlops
       << " FLOPs; this is the smallest peak it reached)";
  else
    // Its decisions lowered the live bytes it counts, but the arena packed
    // afterwards (or a later micro-batch or offload plan) is no smaller.
    os << " (rematerialization's " << remat.decisions.size()
       << " decisions, +" << remat.extraFlops
       << " FLOPs, did not lower it: " << describeBytes(remat.peakBeforeBytes)
       << " before them)";
  if (report.offload.applied)
    os << " (offload parked " << report.offload.values
       << " values in pinned host memory first)";
  if (report.microBatches > 1)
    os << " (running the graph in " << report.microBatches
       << " micro-batches, the best of the splits tried)";
  if (!report.microBatchRefusal.empty())
    os << " (" << report.microBatchRefusal << ")";
  os << "; live at the peak step " << report.peakStep
     << ", with their producers (a smaller batch, a shorter sequence or "
        "fewer channels shrink them):";
  for (const LiveTensor &tensor : report.liveAtPeak)
    os << "\n  " << llvm::format("%12llu", (unsigned long long)tensor.bytes)
       << " B  " << llvm::format("%-20s", tensor.op.c_str()) << " "
       << tensor.name;
}

llvm::Error recordFp32Baseline(ir::Module &lowered, ir::Module &fp32,
                               const PlanningOptions &planning,
                               const PassManagerOptions &passOptions) {
  PlanningOptions plain = planning;
  plain.precision = "fp32";
  plain.arenaBudgetBytes = 0;
  plain.allowOffload = false;
  double planningMs = 0;
  std::string pipeline;
  if (llvm::Error error =
          planModule(fp32, plain, passOptions, planningMs, pipeline))
    return error;
  const ir::Attribute *arena = fp32.getAttribute("arena");
  if (!arena || arena->getKind() != ir::Attribute::Kind::Int)
    return userError("internal error: the fp32 baseline has no plan");
  lowered.setAttribute("precision_arena_before",
                       ir::Attribute::getInt(arena->getInt()));
  lowered.setAttribute(
      "precision_weights_before",
      ir::Attribute::getInt(int64_t(computeWeightsBytes(fp32))));
  return llvm::Error::success();
}

llvm::Error checkMemoryBudget(const MemoryReport &report,
                              uint64_t budgetBytes) {
  if (!budgetBytes || report.predictedPeakBytes <= budgetBytes)
    return llvm::Error::success();
  return llvm::make_error<MemoryBudgetError>(report.model, budgetBytes,
                                             report);
}

llvm::Expected<std::unique_ptr<ir::Module>> planWithinBudget(
    std::unique_ptr<ir::Module> module,
    llvm::function_ref<llvm::Expected<std::unique_ptr<ir::Module>>()> reload,
    const PlanningOptions &planning, const PassManagerOptions &passOptions,
    uint64_t memoryBudgetBytes, double &planningMs, std::string &pipeline) {
  if (llvm::Error error = planModule(*module, planning, passOptions,
                                     planningMs, pipeline, memoryBudgetBytes))
    return error;
  uint64_t bestPeak = computePredictedPeakBytes(*module);
  if (!memoryBudgetBytes || !planning.allowMicroBatches ||
      bestPeak <= memoryBudgetBytes)
    return module;
  llvm::Expected<std::unique_ptr<ir::Module>> fresh = reload();
  if (!fresh)
    return fresh.takeError();
  int64_t perCopy = 0;
  llvm::Expected<int64_t> batch = findSplittableBatch(**fresh, "", &perCopy);
  if (!batch) {
    // The budget error says why.
    module->setAttribute("split_batch_refused",
                         ir::Attribute::getString(toString(batch.takeError())));
    return module;
  }
  // Micro-batches shrink neither the weights nor the whole inputs (all
  // live at step 0) or outputs (all live at the last step): past the budget
  // with those alone, no split can fit and none is tried.
  uint64_t weights = computeWeightsBytes(*module);
  if (weights >= memoryBudgetBytes)
    return module;
  uint64_t inputs = 0, outputs = 0;
  for (const ir::Value *input : module->getInputs())
    inputs += input->getType().getByteSize();
  for (const ir::Value *output : module->getOutputs())
    outputs += output->getType().getByteSize();
  if (std::max(inputs, outputs) > memoryBudgetBytes - weights) {
    bool in = inputs >= outputs;
    module->setAttribute(
        "split_batch_refused",
        ir::Attribute::getString(
            "no split tried: the graph's " +
            std::string(in ? "inputs" : "outputs") + " alone take " +
            std::to_string(in ? inputs : outputs) +
            " B, live together whatever the micro-batches"));
    return module;
  }
  // Each split copies perCopy nodes parts times: split-batch's bound caps
  // the parts, kMaxSplitSearchNodes the copies planned over the search.
  int64_t maxParts =
      std::min(*batch, kMaxSplitNodes / std::max<int64_t>(1, perCopy));
  // Every split is a whole planning run, each up to --time-limit: the
  // search as a whole stops after four of them (at least 2 s) too.
  auto searchStart = std::chrono::steady_clock::now();
  double searchSeconds = std::max(2.0, 4 * planning.timeLimitSeconds);
  int64_t searched = 0;
  std::string stopped;
  for (int64_t parts = 2; parts <= maxParts; ++parts) {
    if (*batch % parts != 0)
      continue;
    if (searched + parts * perCopy > kMaxSplitSearchNodes) {
      stopped = "splits from " + std::to_string(parts) +
                " micro-batches on not tried: the search stops at " +
                std::to_string(kMaxSplitSearchNodes) + " copied nodes";
      break;
    }
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - searchStart)
                         .count();
    if (searched > 0 && elapsed > searchSeconds) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", searchSeconds);
      stopped = "splits from " + std::to_string(parts) +
                " micro-batches on not tried: the search stops after " +
                limit + " s, four times --time-limit";
      break;
    }
    searched += parts * perCopy;
    if (!*fresh) {
      fresh = reload();
      if (!fresh)
        return fresh.takeError();
    }
    double splitMs = 0;
    std::string splitPipeline;
    if (llvm::Error error =
            planModule(**fresh, planning, passOptions, splitMs, splitPipeline,
                       memoryBudgetBytes, parts))
      return error;
    uint64_t peak = computePredictedPeakBytes(**fresh);
    if (peak < bestPeak) {
      bestPeak = peak;
      module = std::move(*fresh);
      planningMs = splitMs;
      pipeline = splitPipeline;
    }
    if (peak <= memoryBudgetBytes)
      return module;
    fresh = std::unique_ptr<ir::Module>();
  }
  if (stopped.empty() && maxParts < *batch)
    stopped = "splits past " + std::to_string(maxParts) +
              " micro-batches not tried: each copies the " +
              std::to_string(perCopy) + " nodes that see the batch, and " +
              "snug stops at " + std::to_string(kMaxSplitNodes) +
              " copied nodes";
  if (!stopped.empty())
    module->setAttribute("split_batch_refused",
                         ir::Attribute::getString(stopped));
  return module;
}

llvm::Expected<int64_t>
findLargestFitting(llvm::function_ref<llvm::Expected<bool>(int64_t)> fits,
                   int64_t maxValue) {
  int64_t lo = 0, hi = 0; // lo fits (0: nothing yet), hi does not (0: none)
  for (int64_t value = 1; value <= maxValue;) {
    llvm::Expected<bool> ok = fits(value);
    if (!ok)
      return ok.takeError();
    if (!*ok) {
      hi = value;
      break;
    }
    lo = value;
    if (value > maxValue / 2) {
      if (value == maxValue)
        return lo;
      value = maxValue;
    } else {
      value *= 2;
    }
  }
  if (hi == 0)
    return lo; // every value tried fits, up to maxValue
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    llvm::Expected<bool> ok = fits(mid);
    if (!ok)
      return ok.takeError();
    (*ok ? lo : hi) = mid;
  }
  return lo;
}

llvm::Expected<PlannedModel> planModel(llvm::StringRef path,
                                       llvm::StringRef modelName,
                                       const DriverOptions &options) {
  PlannedModel planned;
  // In snugc's order (tools/snugc/PlanSupport.cpp), so both say the same.
  if (llvm::Error error = checkCompanionOptions(
          options.planning, options.memoryBudgetBytes, options.given))
    return error;
  if (llvm::Error error = checkPlanningOptions(options.planning))
    return error;
  // Imports the model and runs the pipeline `with` names. A bad pipeline
  // is reported before the (possibly slow) import.
  auto load = [&](const DriverOptions &with)
      -> llvm::Expected<std::unique_ptr<ir::Module>> {
    PassManager passManager(with.passes);
    if (llvm::Error error = passManager.addPipeline(
            expandPipelineNames(with.pipeline, with.planning)))
      return error;
    auto module = importOnnxModel(path, with.import);
    if (!module)
      return module.takeError();
    llvm::StringSet<> nodeNames;
    collectNodeNames(**module, nodeNames);
    if (llvm::Error error = passManager.run(**module))
      return error;
    // Names the pipeline gave (a training step's) count as the model's.
    collectNodeNames(**module, nodeNames);
    if (options.given.keepFp32)
      if (llvm::Error error =
              checkKeepFp32Names(options.planning.keepFp32, nodeNames, path))
        return error;
    (*module)->eraseUnusedWeights();
    return std::move(*module);
  };
  auto module = load(options);
  if (!module)
    return module.takeError();
  double planningMs = 0;
  std::string planPipeline;
  auto reload = [&]() { return load(options); };
  auto within = planWithinBudget(std::move(*module), reload, options.planning,
                                 options.passes, options.memoryBudgetBytes,
                                 planningMs, planPipeline);
  if (!within)
    return within.takeError();
  planned.module = std::move(*within);
  if (options.planning.precision != "fp32" &&
      options.planning.precision != "tf32") {
    // The report compares the lowered weights and arena with fp32's (tf32
    // stores what fp32 does).
    DriverOptions plain = options;
    plain.planning.precision = "fp32";
    auto fp32 = load(plain);
    if (!fp32)
      return fp32.takeError();
    if (llvm::Error error = recordFp32Baseline(
            *planned.module, **fp32, options.planning, options.passes))
      return error;
  }
  planned.pipelineDescription =
      expandPipelineNames(options.pipeline, options.planning);
  if (!planPipeline.empty())
    planned.pipelineDescription +=
        (planned.pipelineDescription.empty() ? "" : ",") + planPipeline;
  if (options.planning.target == "cuda") {
    auto program = emitCudaProgram(*planned.module, options.archs);
    if (!program)
      return program.takeError();
    planned.program = std::move(*program);
  }
  auto report = buildMemoryReport(
      *planned.module, modelName, planningMs,
      planned.program ? planned.program->plan.arenaBytes : 0);
  if (!report)
    return report.takeError();
  planned.report = std::move(*report);
  if (llvm::Error error =
          checkMemoryBudget(planned.report, options.memoryBudgetBytes))
    return error;
  return planned;
}

llvm::Expected<std::vector<uint8_t>>
serializePlannedModel(const PlannedModel &planned,
                      llvm::ArrayRef<unsigned> archs,
                      llvm::StringRef compilerVersion,
                      const cuda::KernelCache &cache) {
  BundleOptions options;
  options.pipeline = planned.pipelineDescription;
  options.compilerVersion = compilerVersion.str();
  std::vector<bundle::KernelImage> images;
  if (planned.program) {
    std::vector<std::string> logs;
    auto compiled = cuda::compileCudaProgram(*planned.program, archs, cache,
                                             nullptr, {}, &logs);
    if (!compiled)
      return compiled.takeError();
    images = std::move(*compiled);
    // A launch the driver would refuse on a GPU of a target arch is refused
    // here, as snugc compile refuses it (compiler/cuda/KernelReport.h).
    auto records = cuda::buildKernelRecords(planned.program->plan, images,
                                            logs, planned.program->kernelNodes);
    if (!records)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "internal error: reading the compiled kernels: " +
              llvm::toString(records.takeError()));
    if (llvm::Error error = cuda::checkKernelLimits(*records))
      return error;
    auto toolchain = cuda::getKernelToolchain(images);
    if (!toolchain)
      return toolchain.takeError();
    options.devicePlan = &planned.program->plan;
    options.kernelImages = &images;
    options.toolchain = *toolchain;
  }
  return serializeBundle(*planned.module, options);
}

} // namespace snug
