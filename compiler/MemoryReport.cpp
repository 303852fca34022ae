//===- MemoryReport.cpp - What a planned module needs on the device -------===//
//
// Reads the plan back through getModuleMemoryPlan (the one reader of what
// plan-memory recorded) and lists the buffers live at the peak step,
// scratch buffers included. Pretty output is for people; JSON (keys fixed,
// documented in README.md) is for scripts. The cost lines are the cost
// model's (passes/analysis/CostModel.h), built, printed and written by their own
// functions below.
//
//===----------------------------------------------------------------------===//
#include "compiler/MemoryReport.h"
#include "compiler/bundle/BundleWriter.h"
#include "ir/State.h"
#include "passes/analysis/CostModel.h"
#include "passes/memory/PlanMemory.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"

namespace snug {

uint64_t computeWeightsBytes(const ir::Module &module) {
  return computeWeightsLayout(module).bytes;
}

/// snug allocates nothing beyond weights and the arena; kernel images live
/// in driver-managed memory, outside snug's allocations.
static constexpr uint64_t kRuntimeBytes = 0;

uint64_t computePredictedPeakBytes(const ir::Module &module) {
  const ir::Attribute *arena = module.getAttribute("arena");
  uint64_t arenaBytes = arena && arena->getKind() == ir::Attribute::Kind::Int &&
                                arena->getInt() > 0
                            ? uint64_t(arena->getInt())
                            : 0;
  return computeWeightsBytes(module) + arenaBytes + kRuntimeBytes;
}

static llvm::Error reportError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string nameOf(const ir::Value *value) {
  if (!value->getName().empty())
    return value->getName().str();
  if (value->isResult() && !value->getDefiningNode()->getName().empty())
    return value->getDefiningNode()->getName().str() +
           (value->getDefiningNode()->getNumResults() > 1
                ? ":" + std::to_string(value->getResultIndex())
                : "");
  return "(unnamed)";
}

llvm::Expected<MemoryReport> buildMemoryReport(const ir::Module &module,
                                               llvm::StringRef modelName,
                                               double planningMs,
                                               uint64_t deviceArenaBytes) {
  if (!module.getAttribute("arena"))
    return reportError("the module has no memory plan; the pipeline must "
                       "end with plan-memory");
  llvm::Expected<ModuleMemoryPlan> plan = getModuleMemoryPlan(module);
  if (!plan)
    return plan.takeError();
  MemoryReport report;
  report.model = modelName.str();
  report.weightsBytes = computeWeightsBytes(module);
  llvm::Expected<std::vector<ir::StateEntry>> state = ir::getState(module);
  if (!state)
    return state.takeError();
  for (const ir::StateEntry &entry : *state)
    (entry.role == ir::StateRole::Parameter   ? report.parameterStateBytes
     : entry.role == ir::StateRole::Optimizer ? report.optimizerStateBytes
                                              : report.statisticStateBytes) +=
        entry.weight->getType().getByteSize();
  report.arenaBytes = plan->arenaBytes;
  report.lowerBoundBytes = plan->lowerBoundBytes;
  report.lowerBoundUnsharedBytes = plan->lowerBoundUnsharedBytes;
  report.noReuseBytes = plan->noReuseBytes;
  report.alignment = plan->alignment;
  report.peakStep = plan->peakStep;
  report.planner = plan->planner;
  report.planningMs = planningMs;
  report.fusion = summarizeFusion(module);
  report.numNodes = module.getNodes().size();
  for (const ir::Value *input : module.getInputs())
    report.ioBytes += input->getType().getByteSize();
  for (const ir::Value *output : module.getOutputs())
    report.ioBytes += output->getType().getByteSize();
  report.workspaceBytes = plan->getLargestScratchBytes();
  report.scratchBuffers = plan->getNumScratchBuffers();
  for (const ArenaBuffer &buffer : plan->buffers)
    if (buffer.kind == ArenaBuffer::Kind::Scratch) {
      std::string purpose = getScratchRequest(*buffer.node, {}).purpose;
      if (llvm::StringRef(report.scratchPurposes).find(purpose) ==
          llvm::StringRef::npos)
        report.scratchPurposes +=
            (report.scratchPurposes.empty() ? "" : ", ") + purpose;
    }
  // The device allocates the planned arena, workspaces inside: anything
  // else means the emitter placed memory the planner did not see.
  if (deviceArenaBytes && deviceArenaBytes != plan->arenaBytes)
    return reportError("internal error: the CUDA device plan allocates " +
                       llvm::Twine(deviceArenaBytes) +
                       " bytes of arena, the memory plan " +
                       llvm::Twine(plan->arenaBytes));
  report.deviceArenaBytes = plan->arenaBytes;
  report.runtimeBytes = kRuntimeBytes;
  report.predictedPeakBytes =
      report.weightsBytes + report.arenaBytes + report.runtimeBytes;

  for (const ArenaBuffer &buffer : plan->buffers) {
    if (buffer.firstStep > report.peakStep || buffer.lastStep < report.peakStep)
      continue;
    LiveTensor tensor;
    tensor.bytes = llvm::alignTo(buffer.bytes, std::max<uint64_t>(
                                                   1, report.alignment));
    if (buffer.kind == ArenaBuffer::Kind::Scratch) {
      tensor.name = "scratch of " + buffer.node->describe();
      tensor.op = "workspace";
      report.liveAtPeak.push_back(std::move(tensor));
      continue;
    }
    // A buffer counts once: name it after its first member, listing the
    // others that share it.
    const ir::Value *root = buffer.values.front();
    tensor.name = nameOf(root);
    tensor.op = root->isInput() ? "input"
                                : root->getDefiningNode()->getOpName().str();
    for (size_t i = 1; i < buffer.values.size(); ++i) {
      auto interval = plan->intervals.lookup(buffer.values[i]);
      if (interval.first <= report.peakStep && report.peakStep <= interval.second)
        tensor.name += ", " + nameOf(buffer.values[i]) + " (" +
                       buffer.reasons[i] + ")";
    }
    report.liveAtPeak.push_back(std::move(tensor));
  }
  llvm::stable_sort(report.liveAtPeak,
                    [](const LiveTensor &a, const LiveTensor &b) {
                      return a.bytes > b.bytes;
                    });
  llvm::Expected<CostEstimate> cost = buildCostEstimate(module);
  if (!cost)
    return cost.takeError();
  report.cost = std::move(*cost);
  report.remat = summarizeRemat(module, report.weightsBytes, report.cost.flops);
  report.offload = summarizeOffload(module);
  report.branches = buildBranchReport(module, *plan);
  report.step = buildStepBreakdown(module, *plan, report.weightsBytes,
                                   report.runtimeBytes);
  report.precision = summarizePrecision(module);
  if (const ir::Attribute *split = module.getAttribute("split_batch"))
    if (split->getKind() == ir::Attribute::Kind::Int && split->getInt() > 1)
      report.microBatches = split->getInt();
  if (const ir::Attribute *refused = module.getAttribute("split_batch_refused"))
    if (refused->getKind() == ir::Attribute::Kind::String)
      report.microBatchRefusal = refused->getString().str();
  return report;
}

llvm::Expected<CostEstimate> buildCostEstimate(const ir::Module &module,
                                               llvm::StringRef deviceName) {
  const DeviceSpec *device =
      deviceName.empty() ? &getDefaultDevice() : lookupDevice(deviceName);
  if (!device) {
    std::string known;
    for (const DeviceSpec &spec : getDevices())
      known += (known.empty() ? "" : ", ") + spec.name.str();
    return reportError("unknown device '" + deviceName + "' (known: " + known +
                       ")");
  }
  Cost cost = costOfModule(module);
  CostEstimate estimate;
  estimate.flops = cost.getFlops();
  estimate.macs = cost.getMacs();
  for (ir::DType type : cost.getDTypes())
    if (cost.get(type).flops)
      estimate.flopsByDType.push_back(
          {ir::getDTypeName(type).str(), cost.get(type).flops});
  estimate.bytesRead = cost.getBytesRead();
  estimate.bytesWritten = cost.getBytesWritten();
  estimate.arithmeticIntensity = cost.getArithmeticIntensity();
  RooflineEstimate roofline = estimateModule(module, *device);
  estimate.device = device->displayName.str();
  estimate.rooflineSeconds = roofline.seconds;
  estimate.computeBoundNodes = roofline.computeBoundNodes;
  estimate.memoryBoundNodes = roofline.memoryBoundNodes;
  return estimate;
}

static std::string formatBytes(uint64_t bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (bytes >= (uint64_t(1) << 30))
    os << llvm::format("%.2f GiB", bytes / double(uint64_t(1) << 30));
  else if (bytes >= (uint64_t(1) << 20))
    os << llvm::format("%.2f MiB", bytes / double(uint64_t(1) << 20));
  else if (bytes >= 1024)
    os << llvm::format("%.2f KiB", bytes / 1024.0);
  else
    os << bytes << " B";
  return os.str();
}

/// "8.21 GFLOP", "336.77 MB": counts in decimal prefixes, as peaks are
/// quoted.
static std::string formatDecimal(double value, llvm::StringRef unit) {
  static const char *const prefixes[] = {"", "k", "M", "G", "T", "P"};
  unsigned prefix = 0;
  while (value >= 1000 && prefix + 1 < llvm::array_lengthof(prefixes)) {
    value /= 1000;
    ++prefix;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format(prefix ? "%.2f " : "%.0f ", value) << prefixes[prefix]
     << unit;
  return os.str();
}

static std::string formatSeconds(double seconds) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (seconds >= 1e-3)
    os << llvm::format("%.3f ms", seconds * 1e3);
  else if (seconds >= 1e-6)
    os << llvm::format("%.2f us", seconds * 1e6);
  else
    os << llvm::format("%.2f ns", seconds * 1e9);
  return os.str();
}

static void printCostEstimatePretty(const CostEstimate &cost,
                                    llvm::raw_ostream &os) {
  os << "  cost estimate (cost model; every node its own kernel):\n";
  os << "    FLOPs          " << formatDecimal(cost.flops, "FLOP") << " ("
     << formatDecimal(cost.macs, "MAC");
  for (const auto &share : cost.flopsByDType)
    os << "; " << share.first << ' ' << formatDecimal(share.second, "FLOP");
  os << ")\n";
  os << "    bytes moved    "
     << formatDecimal(cost.bytesRead + cost.bytesWritten, "B") << " (read "
     << formatDecimal(cost.bytesRead, "B") << ", written "
     << formatDecimal(cost.bytesWritten, "B") << ")\n";
  os << llvm::format("    intensity      %.2f FLOP/B\n",
                     cost.arithmeticIntensity);
  os << llvm::format("    roofline %-5s ", cost.device.c_str())
     << formatSeconds(cost.rooflineSeconds)
     << " estimated, not measured: per node max(FLOPs / peak, bytes / "
        "bandwidth), summed ("
     << cost.computeBoundNodes << " nodes compute-bound, "
     << cost.memoryBoundNodes << " memory-bound)\n";
}

/// The training step's lines (compiler/StepBreakdown.h): the predicted
/// peak in parts, then the FLOPs by phase.
static void printStepBreakdownPretty(const MemoryReport &report,
                                     llvm::raw_ostream &os) {
  const StepBreakdown &step = report.step;
  os << "  training step    the predicted peak in parts, at peak step "
     << report.peakStep << ":\n";
  auto row = [&](llvm::StringRef label, uint64_t bytes, llvm::StringRef note) {
    os << llvm::format("    %-18s %12llu B  %12s", label.str().c_str(),
                       (unsigned long long)bytes, formatBytes(bytes).c_str());
    if (!note.empty())
      os << "  " << note;
    os << '\n';
  };
  row("parameters", step.parameterBytes, "weights: trained, written back");
  row("optimizer state", step.optimizerStateBytes,
      "weights: optimizer state, written back");
  row("other weights", step.otherWeightsBytes,
      "weights: constants, and each weight's alignment");
  row("gradients", step.gradientBytes,
      "arena: weight gradients live at the peak");
  row("saved activations", step.savedActivationBytes,
      "arena: forward values the backward reads, live at the peak");
  row("workspace", step.workspaceBytes, "arena: scratch live at the peak");
  row("other arena", step.otherArenaBytes,
      "arena: io, other intermediates, space the packing leaves");
  row("runtime", step.runtimeBytes, "");
  os << "    saved activations in all " << step.savedActivations
     << " values, " << step.savedActivationTotalBytes
     << " B (each once, aligned: what this step keeps for its backward)\n";
  uint64_t total = step.forwardFlops + step.backwardFlops +
                   step.optimizerFlops + step.recomputeFlops;
  os << "    FLOPs per step    forward " << step.forwardFlops << ", backward "
     << step.backwardFlops << ", optimizer " << step.optimizerFlops
     << ", recompute " << step.recomputeFlops << " (" << step.recomputeNodes
     << " nodes";
  if (total)
    os << llvm::format(", %.2f%% of the step", 100.0 *
                                                  double(step.recomputeFlops) /
                                                  double(total));
  os << ")\n";
}

void printMemoryReportPretty(const MemoryReport &report,
                             llvm::raw_ostream &os) {
  auto row = [&](llvm::StringRef label, uint64_t bytes, llvm::StringRef note) {
    os << llvm::format("  %-16s %14llu B  %12s", label.str().c_str(),
                       (unsigned long long)bytes, formatBytes(bytes).c_str());
    if (!note.empty())
      os << "  " << note;
    os << '\n';
  };
  os << "memory report: " << report.model << " (" << report.numNodes
     << " nodes, planner " << report.planner << ", "
     << llvm::format("%.2f", report.planningMs) << " ms)\n";
  row("weights", report.weightsBytes, "");
  if (report.parameterStateBytes + report.optimizerStateBytes +
      report.statisticStateBytes) {
    row("  parameters", report.parameterStateBytes,
        "inside the weights: persistent state, written back by each step");
    row("  optimizer", report.optimizerStateBytes,
        "inside the weights: optimizer state (persistent, from zero)");
    if (report.statisticStateBytes)
      row("  statistics", report.statisticStateBytes,
          "inside the weights: BatchNorm running statistics, updated from "
          "each batch");
  }
  row("arena", report.arenaBytes,
      "intermediates, io and scratch: the device arena");
  row("  io", report.ioBytes, "inside the arena");
  std::string scratch =
      "inside the arena: the largest of " +
      std::to_string(report.scratchBuffers) +
      (report.scratchBuffers == 1 ? " scratch buffer" : " scratch buffers") +
      " (" + report.scratchPurposes + "), each live at its node's step only";
  row("  workspace", report.workspaceBytes,
      report.scratchBuffers ? llvm::StringRef(scratch)
                            : llvm::StringRef("inside the arena: none"));
  row("runtime", report.runtimeBytes, "");
  row("predicted peak", report.predictedPeakBytes,
      "weights + arena + runtime (CUDA context not included)");
  const LocalMemoryReservation &local = report.localMemory;
  if (local.known)
    row("local memory", local.bytes,
        local.bytes
            ? "outside the peak: the driver's reservation for the stack of " +
                  local.kernel + " on sm_" + std::to_string(local.arch) +
                  ", " + std::to_string(local.bytesPerThread) + " B x " +
                  std::to_string(local.threadsPerSm) + " threads x " +
                  std::to_string(local.sms) + " SMs (" + local.gpu + ")"
            : std::string("outside the peak: no kernel has a stack, the "
                          "driver reserves none for them"));
  os << "  lower bound      " << report.lowerBoundBytes << " B ("
     << report.lowerBoundUnsharedBytes
     << " B before views, in-place and concat sharing); no reuse "
     << report.noReuseBytes << " B\n";
  double fragmentation =
      report.lowerBoundBytes
          ? double(report.arenaBytes) / double(report.lowerBoundBytes) - 1
          : 0.0;
  os << llvm::format("  fragmentation    %.2f%% (arena / lower bound - 1)\n",
                     100 * fragmentation);
  os << "  peak at step " << report.peakStep << ", live there:\n";
  size_t shown = 0;
  for (const LiveTensor &tensor : report.liveAtPeak) {
    if (++shown > 10) {
      os << "    ... " << report.liveAtPeak.size() - 10 << " more\n";
      break;
    }
    os << llvm::format("    %12llu B  %-20s ", (unsigned long long)tensor.bytes,
                       tensor.op.c_str())
       << tensor.name << '\n';
  }
  const FusionSummary &fusion = report.fusion;
  os << "  fusion           " << fusion.groups.size() << " fused group"
     << (fusion.groups.size() == 1 ? "" : "s") << " of " << fusion.nodesFused
     << " nodes: kernels " << fusion.kernelsBefore << " -> "
     << fusion.kernelsAfter << ", intermediates removed "
     << formatBytes(fusion.intermediateBytesRemoved) << '\n';
  if (report.precision.math == "tf32")
    os << "  precision        tf32 math, f32 storage: "
       << report.precision.lowered
       << " contractions (Conv, MatMul, Gemm) multiply in tf32, "
       << report.precision.keptF32 << " kept at full f32";
  else if (!report.precision.precision.empty())
    os << "  precision        " << report.precision.precision << ": "
       << report.precision.lowered << " nodes, " << report.precision.keptF32
       << " kept in f32, " << report.precision.casts << " casts";
  if (report.precision.arenaBeforeBytes) {
    auto ratio = [](uint64_t before, uint64_t after) {
      return after ? double(before) / double(after) : 0.0;
    };
    const PrecisionSummary &p = report.precision;
    os << "; fp32 -> " << p.precision << ": weights "
       << formatBytes(p.weightsBeforeBytes) << " -> "
       << formatBytes(report.weightsBytes)
       << llvm::format(" (x%.2f)", ratio(p.weightsBeforeBytes,
                                          report.weightsBytes))
       << ", arena " << formatBytes(p.arenaBeforeBytes) << " -> "
       << formatBytes(report.arenaBytes)
       << llvm::format(" (x%.2f)", ratio(p.arenaBeforeBytes,
                                          report.arenaBytes));
  }
  os << '\n';
  if (!report.precision.stateDType.empty()) {
    // A mixed-precision training step: what stays f32 and what is lowered.
    const PrecisionSummary &p = report.precision;
    os << "  master weights   " << p.stateDType
       << ": parameters and optimizer state, updated in "
       << p.stateDType << "; activations and gradients "
       << p.precision << " (values computed: "
       << formatBytes(p.loweredValueBytes) << " " << p.precision << ", "
       << formatBytes(p.f32ValueBytes) << " f32)\n";
  }
  // A training step's micro-batches (gradient accumulation) sum their
  // gradients into one update; an inference graph's join their outputs.
  if (report.microBatches > 1)
    os << "  micro-batches    " << report.microBatches
       << " (the graph runs once per 1/" << report.microBatches
       << (report.parameterStateBytes
               ? " of the batch, gradients summed into one update)\n"
               : " of the batch, outputs joined)\n");
  const RematSummary &remat = report.remat;
  if (remat.applied) {
    os << "  remat            " << remat.nodesRecomputed
       << " nodes recomputed (" << remat.decisions.size()
       << " decisions), +" << remat.extraFlops << " FLOPs";
    if (remat.flopsBefore)
      os << llvm::format(" (%.2f%%)", 100.0 * double(remat.extraFlops) /
                                          double(remat.flopsBefore));
    os << "; predicted peak " << formatBytes(remat.peakBeforeBytes) << " -> "
       << formatBytes(report.predictedPeakBytes) << '\n';
  }
  const OffloadSummary &offload = report.offload;
  if (offload.applied)
    os << "  offload          " << offload.values << " values ("
       << formatBytes(offload.bytes) << ") parked in pinned host memory; "
       << "pinned host region " << formatBytes(offload.pinnedHostBytes)
       << " (host memory, not in the peak)\n";
  if (!report.branches.empty()) {
    // Each side of an If on runtime data: what it needs of the arena.
    os << "  branches         " << report.branches.size()
       << " runs of steps skipped at run time; the arena holds either "
          "side\n";
    for (const BranchRun &run : report.branches)
      os << "    " << std::string(2 * run.depth, ' ') << run.side << " of "
         << run.condition << ": " << run.steps
         << (run.steps == 1 ? " step" : " steps") << " after step "
         << run.skipStep << ", peak live " << formatBytes(run.peakLiveBytes)
         << " at step " << run.peakStep << '\n';
  }
  if (report.step.applies)
    printStepBreakdownPretty(report, os);
  printCostEstimatePretty(report.cost, os);
}

static void addCostEstimateJson(const CostEstimate &cost,
                                llvm::json::Object &object) {
  llvm::json::Object byDType;
  for (const auto &share : cost.flopsByDType)
    byDType[share.first] = int64_t(share.second);
  object["flops"] = int64_t(cost.flops);
  object["macs"] = int64_t(cost.macs);
  object["flops_by_dtype"] = std::move(byDType);
  object["bytes_read"] = int64_t(cost.bytesRead);
  object["bytes_written"] = int64_t(cost.bytesWritten);
  object["bytes_moved"] = int64_t(cost.bytesRead + cost.bytesWritten);
  object["arithmetic_intensity"] = cost.arithmeticIntensity;
  object["roofline_device"] = cost.device;
  object["roofline_estimate_us"] = cost.rooflineSeconds * 1e6;
  object["roofline_compute_bound_nodes"] = int64_t(cost.computeBoundNodes);
  object["roofline_memory_bound_nodes"] = int64_t(cost.memoryBoundNodes);
}

llvm::json::Value toJsonString(llvm::StringRef text) {
  return llvm::json::isUTF8(text) ? text.str() : llvm::json::fixUTF8(text);
}

void printMemoryReportJson(const MemoryReport &report, llvm::raw_ostream &os) {
  llvm::json::Array live;
  for (const LiveTensor &tensor : report.liveAtPeak)
    live.push_back(llvm::json::Object{{"name", toJsonString(tensor.name)},
                                      {"op", toJsonString(tensor.op)},
                                      {"bytes", int64_t(tensor.bytes)}});
  llvm::json::Object object{
      {"model", toJsonString(report.model)},
      {"weights_bytes", int64_t(report.weightsBytes)},
      {"parameter_state_bytes", int64_t(report.parameterStateBytes)},
      {"optimizer_state_bytes", int64_t(report.optimizerStateBytes)},
      {"statistic_state_bytes", int64_t(report.statisticStateBytes)},
      {"arena_bytes", int64_t(report.arenaBytes)},
      {"lower_bound_bytes", int64_t(report.lowerBoundBytes)},
      {"lower_bound_unshared_bytes", int64_t(report.lowerBoundUnsharedBytes)},
      {"no_reuse_bytes", int64_t(report.noReuseBytes)},
      {"workspace_bytes", int64_t(report.workspaceBytes)},
      {"scratch_buffers", int64_t(report.scratchBuffers)},
      {"device_arena_bytes", int64_t(report.deviceArenaBytes)},
      {"io_bytes", int64_t(report.ioBytes)},
      {"runtime_bytes", int64_t(report.runtimeBytes)},
      {"predicted_peak_bytes", int64_t(report.predictedPeakBytes)},
      {"alignment", int64_t(report.alignment)},
      {"peak_step", report.peakStep},
      {"live_at_peak", std::move(live)},
      {"planner", report.planner},
      {"planning_ms", report.planningMs},
      {"nodes", int64_t(report.numNodes)},
  };
  addCostEstimateJson(report.cost, object);
  // Always present, null when the kernels were not compiled.
  object["local_memory"] = nullptr;
  if (report.localMemory.known) {
    const LocalMemoryReservation &local = report.localMemory;
    object["local_memory"] = llvm::json::Object{
        {"bytes", int64_t(local.bytes)},
        {"kernel", local.bytes ? llvm::json::Value(local.kernel) : nullptr},
        {"arch", local.bytes ? llvm::json::Value("sm_" +
                                                 std::to_string(local.arch))
                             : nullptr},
        {"bytes_per_thread", int64_t(local.bytesPerThread)},
        {"threads_per_sm", int64_t(local.threadsPerSm)},
        {"sms", int64_t(local.sms)},
        {"gpu", local.gpu}};
  }
  object["fusion"] = llvm::json::Object{
      {"groups", int64_t(report.fusion.groups.size())},
      {"nodes_fused", int64_t(report.fusion.nodesFused)},
      {"kernels_before", int64_t(report.fusion.kernelsBefore)},
      {"kernels_after", int64_t(report.fusion.kernelsAfter)},
      {"intermediate_bytes_removed",
       int64_t(report.fusion.intermediateBytesRemoved)}};
  object["micro_batches"] = report.microBatches;
  object["precision"] = nullptr;
  if (!report.precision.precision.empty())
    object["precision"] = llvm::json::Object{
        {"dtype", report.precision.math.empty() ? report.precision.precision
                                                : std::string("f32")},
        {"math", report.precision.math.empty()
                     ? llvm::json::Value(nullptr)
                     : llvm::json::Value(report.precision.math)},
        {"nodes_lowered", int64_t(report.precision.lowered)},
        {"nodes_kept_f32", int64_t(report.precision.keptF32)},
        {"casts", int64_t(report.precision.casts)},
        {"weights_before_bytes", int64_t(report.precision.weightsBeforeBytes)},
        {"arena_before_bytes", int64_t(report.precision.arenaBeforeBytes)},
        {"state_dtype", report.precision.stateDType.empty()
                            ? llvm::json::Value(nullptr)
                            : llvm::json::Value(report.precision.stateDType)},
        {"lowered_value_bytes", int64_t(report.precision.loweredValueBytes)},
        {"f32_value_bytes", int64_t(report.precision.f32ValueBytes)}};
  // Always present, null when remat did not run, so that readers see one
  // set of keys.
  object["remat"] = nullptr;
  if (report.remat.applied)
    object["remat"] = llvm::json::Object{
        {"nodes_recomputed", int64_t(report.remat.nodesRecomputed)},
        {"decisions", int64_t(report.remat.decisions.size())},
        {"extra_flops", int64_t(report.remat.extraFlops)},
        {"flops_before", int64_t(report.remat.flopsBefore)},
        {"peak_before_bytes", int64_t(report.remat.peakBeforeBytes)},
        {"peak_after_bytes", int64_t(report.predictedPeakBytes)}};
  // One entry per side of an If on runtime data; empty without one.
  llvm::json::Array branches;
  for (const BranchRun &run : report.branches)
    branches.push_back(llvm::json::Object{
        {"condition", toJsonString(run.condition)},
        {"side", run.side},
        {"skip_step", run.skipStep},
        {"steps", run.steps},
        {"depth", int64_t(run.depth)},
        {"peak_live_bytes", int64_t(run.peakLiveBytes)},
        {"peak_step", run.peakStep}});
  object["branches"] = std::move(branches);
  // As remat: always present, null when offload did not run.
  object["offload"] = nullptr;
  if (report.offload.applied)
    object["offload"] = llvm::json::Object{
        {"values", int64_t(report.offload.values)},
        {"bytes", int64_t(report.offload.bytes)},
        {"pinned_host_bytes", int64_t(report.offload.pinnedHostBytes)}};
  // As remat: always present, null for a module without state.
  object["step"] = nullptr;
  if (report.step.applies) {
    const StepBreakdown &step = report.step;
    object["step"] = llvm::json::Object{
        {"parameter_bytes", int64_t(step.parameterBytes)},
        {"optimizer_state_bytes", int64_t(step.optimizerStateBytes)},
        {"other_weights_bytes", int64_t(step.otherWeightsBytes)},
        {"gradient_bytes", int64_t(step.gradientBytes)},
        {"saved_activation_bytes", int64_t(step.savedActivationBytes)},
        {"workspace_bytes", int64_t(step.workspaceBytes)},
        {"other_arena_bytes", int64_t(step.otherArenaBytes)},
        {"runtime_bytes", int64_t(step.runtimeBytes)},
        {"saved_activations", int64_t(step.savedActivations)},
        {"saved_activation_total_bytes",
         int64_t(step.savedActivationTotalBytes)},
        {"forward_flops", int64_t(step.forwardFlops)},
        {"backward_flops", int64_t(step.backwardFlops)},
        {"optimizer_flops", int64_t(step.optimizerFlops)},
        {"recompute_flops", int64_t(step.recomputeFlops)},
        {"recompute_nodes", int64_t(step.recomputeNodes)}};
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(object))) << '\n';
}

} // namespace snug
