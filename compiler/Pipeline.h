//===- Pipeline.h - The default pass pipelines and their options -*- C++ -*-===//
//
// Every pipeline snug runs by default is written here, once: the import
// pipeline (what runs after the importer builds the module) and the planning
// pipeline (schedule, plan-memory with its options, verify-plan), and the
// names that stand for them in a `--passes` string. snugc and snug-opt build
// their pass managers from these; the importer only imports. Each is built
// as a list of steps (passes/PassManager.h's PipelineStep) and printed once,
// so that a bundle records exactly the text the pass manager reads.
//
// Pipeline names (usable wherever a pipeline string is accepted, alone or as
// elements of a longer one):
//   import   fold-constants{max-bytes=4194304 max-expand-bytes=256},dce,
//            dedupe-weights,fuse
//            (lower-precision{...} before fuse with --precision fp16/bf16)
//   plan     schedule{...},plan-memory{...},verify-plan with the given options
//            (remat{...} before plan-memory when there is an arena budget,
//            offload{...} before remat when offload is allowed)
//   default  import,plan
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_PIPELINE_H
#define SNUG_COMPILER_PIPELINE_H

#include "compiler/onnx/OnnxImporter.h"
#include "passes/PassManager.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace snug {

/// The passes after import, before planning.
llvm::StringRef getDefaultImportPipeline();

/// What the planning pipeline is built from (snugc's --planner,
/// --alignment, --time-limit, --no-schedule, --verify-plan).
struct PlanningOptions {
  bool schedule = true;
  std::string planner = "best";
  uint64_t alignment = 256;
  /// Wall-clock bound of the whole of planning (schedule and plan-memory
  /// together; see getPlanningPipeline).
  double timeLimitSeconds = 2.0;
  bool verifyPlan = PassManagerOptions::defaultVerifyEach();
  /// Whose scratch plan-memory plans, "cuda" or "host", and the most cuBLAS
  /// workspace one GEMM may get (snugc --target, --cublas-workspace).
  std::string target = "cuda";
  uint64_t cublasWorkspaceBytes = uint64_t(4) << 20;
  /// When not 0: the remat pass runs before plan-memory and recomputes
  /// values until the packed arena fits in this many bytes (planModule
  /// sets it from --memory-budget minus the weights).
  uint64_t arenaBudgetBytes = 0;
  /// With a memory budget that remat cannot meet: whether the model may
  /// run in micro-batches (passes/memory/budget/SplitBatch.cpp; planWithinBudget in
  /// compiler/Driver.h). snugc --allow-micro-batches.
  bool allowMicroBatches = false;
  /// With an arena budget: whether values may be parked in pinned host
  /// memory across the peak (passes/memory/budget/Offload.cpp, before remat), and the
  /// host link's bandwidth in GB/s it weighs the copies with (snugc
  /// --allow-offload, --offload-bandwidth).
  bool allowOffload = false;
  double offloadBandwidthGBs = 25;
  /// Storage precision of weights and activations: "fp32" (as the model
  /// is), "fp16" or "bf16" (the import pipeline then runs lower-precision
  /// before fuse); or "tf32": storage stays f32 and the f32 Conv, MatMul and
  /// Gemm multiply in TF32 (tf32-math after fuse); keepFp32, node names and
  /// op types kept in f32 (snugc --precision, --keep-fp32).
  std::string precision = "fp32";
  std::string keepFp32;
  /// "model" (inputs and outputs keep the model's dtype) or "lowered"
  /// (snugc --io-precision).
  std::string ioPrecision = "model";
};

/// The import pipeline for `planning`'s precision: the default one, with
/// lower-precision{to=... keep=... io=...} before fuse for fp16 and bf16,
/// or tf32-math{keep=...} after it for tf32.
PipelineSteps getImportSteps(const PlanningOptions &planning);
/// getImportSteps as text (what a bundle records).
std::string getImportPipeline(const PlanningOptions &planning);

/// The share of --time-limit the schedule pass may spend; plan-memory gets
/// the rest, so that the limit bounds the whole of planning. The schedule
/// pass normally needs a small part of it (its candidates are O(n log n)).
constexpr double kScheduleTimeShare = 0.25;

/// Seconds of `options.timeLimitSeconds` the schedule pass gets (0 with
/// --no-schedule).
double getScheduleTimeShare(const PlanningOptions &options);

/// schedule, offload and remat when there is an arena budget (offload only
/// when allowed), plan-memory and verify-plan, with their options.
PipelineSteps getPlanningSteps(const PlanningOptions &options);
/// getPlanningSteps as text: "schedule{time-limit=0.5},plan-memory{
/// planner=best alignment=256 time-limit=1.5 target=cuda
/// cublas-workspace=4194304},verify-plan"
std::string getPlanningPipeline(const PlanningOptions &options);

/// `pipeline` with the names above replaced by what they stand for.
std::string expandPipelineNames(llvm::StringRef pipeline,
                                const PlanningOptions &planning = {});

/// Imports the ONNX model at `path` and runs `pipeline` (names expanded) on
/// it with default pass-manager options: what tests, the fuzzer and the
/// conformance driver use to get a module as snugc would before planning.
llvm::Expected<std::unique_ptr<ir::Module>>
importAndRunPipeline(llvm::StringRef path, const ImportOptions &options,
                     llvm::StringRef pipeline = "import");

} // namespace snug

#endif // SNUG_COMPILER_PIPELINE_H
