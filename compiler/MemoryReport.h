//===- MemoryReport.h - What a planned module needs on the device -*- C++ -*-===//
//
// The predicted peak device memory of a planned module, as every
// `snugc compile` and `snugc plan` prints it:
//   weights   device bytes of the weights the plan reads (weights section);
//             of a training step (ir/State.h), the lines inside it show the
//             persistent state: the parameters and the optimizer state
//             (momentum, Adam's moments, the step count), allocated once
//             and updated in place by each step's write-back
//   arena     one allocation for every intermediate value, graph inputs and
//             outputs (io lives in the arena by default) and every scratch
//             buffer (the cuBLAS workspace of each GEMM that can use one),
//             all planned together by plan-memory: on the CUDA target the
//             device arena is exactly this arena
//   runtime   module images and library handles snug allocates
// predicted peak = weights + arena + runtime: exactly the device bytes the
// runtime allocates. io and workspace are lines inside the arena, not
// added to it. The CUDA context (and the memory cuBLAS and the driver keep
// for themselves) is outside any program's control and is not part of the
// figure. Everything about the arena comes from getModuleMemoryPlan.
//
// Beside the memory, the report carries the cost model's figures for the
// planned module (passes/analysis/CostModel.h): FLOPs and MACs, bytes moved with
// every node run as its own kernel, their ratio, and a roofline time
// estimate on a named device (H200 unless told). They are estimates from
// counts and vendor peaks, not measurements, and the report says so.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_MEMORYREPORT_H
#define SNUG_COMPILER_MEMORYREPORT_H

#include "compiler/BranchReport.h"
#include "compiler/FusionReport.h"
#include "compiler/PrecisionReport.h"
#include "compiler/RematReport.h"
#include "compiler/StepBreakdown.h"
#include "ir/Module.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace snug {

struct LiveTensor {
  std::string name;
  std::string op;
  uint64_t bytes = 0;
};

/// The cost model's figures for a module (passes/analysis/CostModel.h), unfused:
/// every node its own kernel.
struct CostEstimate {
  uint64_t flops = 0;
  uint64_t macs = 0;
  /// FLOPs per dtype name ("f32"), in DType order; dtypes without FLOPs
  /// are left out.
  std::vector<std::pair<std::string, uint64_t>> flopsByDType;
  uint64_t bytesRead = 0;
  uint64_t bytesWritten = 0;
  double arithmeticIntensity = 0;
  /// The roofline: the device's display name and the summed per-node
  /// max(compute, memory) time.
  std::string device;
  double rooflineSeconds = 0;
  unsigned computeBoundNodes = 0;
  unsigned memoryBoundNodes = 0;
};

/// The local memory the CUDA driver reserves for the plan's kernels
/// (compiler/cuda/KernelReport.h): the worst kernel's per-thread stack,
/// rounded as the driver rounds it, for every thread the largest GPU of
/// its arch can hold at once. Known only once the kernels are compiled.
struct LocalMemoryReservation {
  bool known = false;
  uint64_t bytes = 0;          // 0: no kernel has a stack
  std::string kernel;          // the worst kernel ("" when bytes is 0)
  unsigned arch = 0;           // 80 for sm_80
  uint64_t bytesPerThread = 0; // its stack, rounded
  uint32_t threadsPerSm = 0, sms = 0;
  std::string gpu;             // the GPU the SM count is of
};

struct MemoryReport {
  std::string model;
  uint64_t weightsBytes = 0;
  /// Persistent state inside the weights, by role (0 without state).
  uint64_t parameterStateBytes = 0;
  uint64_t optimizerStateBytes = 0;
  uint64_t statisticStateBytes = 0;
  uint64_t arenaBytes = 0;
  uint64_t lowerBoundBytes = 0;
  /// The bound with no views, in-place or concat sharing.
  uint64_t lowerBoundUnsharedBytes = 0;
  uint64_t noReuseBytes = 0;
  /// The largest scratch buffer (one GEMM's cuBLAS workspace), inside the
  /// arena, and how many nodes have one.
  uint64_t workspaceBytes = 0;
  size_t scratchBuffers = 0;
  /// What they are for (ScratchRequest::purpose), distinct, joined by ", ".
  std::string scratchPurposes;
  /// The arena an executor allocates: always arenaBytes (for the CUDA
  /// target buildMemoryReport checks the emitted device plan's against it).
  uint64_t deviceArenaBytes = 0;
  uint64_t ioBytes = 0;
  uint64_t runtimeBytes = 0;
  uint64_t predictedPeakBytes = 0;
  uint64_t alignment = 0;
  int64_t peakStep = -1;
  /// Values live at the peak step, largest first.
  std::vector<LiveTensor> liveAtPeak;
  std::string planner;
  double planningMs = 0;
  size_t numNodes = 0;
  CostEstimate cost;
  /// What fusion did (compiler/FusionReport.h); the per-group list is for
  /// --print-fusion, the report shows the totals.
  FusionSummary fusion;
  /// What rematerialization did (compiler/RematReport.h); the report shows
  /// the totals when it ran, --print-remat each decision.
  RematSummary remat;
  /// What offload did (with --allow-offload); the pinned host region is
  /// host memory, not part of the predicted device peak.
  OffloadSummary offload;
  /// The runs of steps the branches of Ifs on runtime data skip
  /// (compiler/BranchReport.h); empty without such an If.
  std::vector<BranchRun> branches;
  /// Copies of the graph run one after the other, each on 1/microBatches
  /// of the batch (passes/memory/budget/SplitBatch.cpp); 1 when it is not split.
  int64_t microBatches = 1;
  /// What --precision lowered (compiler/PrecisionReport.h); the report
  /// shows the totals, --print-precision the per-op table.
  PrecisionSummary precision;
  /// A training step's peak and FLOPs by phase (compiler/StepBreakdown.h);
  /// `applies` is false for inference.
  StepBreakdown step;
  /// Why the graph could not run in micro-batches when they were allowed
  /// and needed ("" otherwise).
  std::string microBatchRefusal;
  /// The driver's local memory for the kernels' stacks: outside the arena
  /// and the predicted peak (the driver allocates it, not snug), shown on
  /// its own line.
  LocalMemoryReservation localMemory;
};

/// Builds the report of a module that plan-memory has planned.
/// `deviceArenaBytes` is the device arena of the emitted CUDA plan (0 for
/// the host target); one that is not the planned arena is an internal
/// error.
llvm::Expected<MemoryReport> buildMemoryReport(const ir::Module &module,
                                               llvm::StringRef modelName,
                                               double planningMs,
                                               uint64_t deviceArenaBytes = 0);

/// The cost model's figures for `module` on `device` (a DeviceSpec name
/// from passes/analysis/CostModel.h; "" for the default, H200). Error: an unknown
/// device, naming the known ones.
llvm::Expected<CostEstimate> buildCostEstimate(const ir::Module &module,
                                               llvm::StringRef device = "");

void printMemoryReportPretty(const MemoryReport &report,
                             llvm::raw_ostream &os);
void printMemoryReportJson(const MemoryReport &report, llvm::raw_ostream &os);

/// `text` as a JSON string. A model's names and a path may hold any bytes;
/// those that are not UTF-8 become U+FFFD, where llvm::json asserts.
llvm::json::Value toJsonString(llvm::StringRef text);

/// Device bytes of the weights a module's nodes read: the size of the
/// bundle's weights section (computeWeightsLayout).
uint64_t computeWeightsBytes(const ir::Module &module);

/// The predicted peak of a planned module (weights + its `arena` attribute
/// + runtime), the sum buildMemoryReport reports, without building the rest
/// of the report: what budget searches compare, plan after plan.
uint64_t computePredictedPeakBytes(const ir::Module &module);

} // namespace snug

#endif // SNUG_COMPILER_MEMORYREPORT_H
