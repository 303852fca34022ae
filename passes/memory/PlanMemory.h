//===- PlanMemory.h - Planning a module's arena -----------------*- C++ -*-===//
//
// The IR side of memory planning: liveness and the target's scratch
// requests become planner buffers, the planner's offsets are written back
// onto the module, and ModuleMemoryPlan is the one description of the
// result that every reader uses (verify-plan excepted, which checks the
// plan on its own).
//
// Where the plan lives. A planned module records the plan's decisions in
// its printed form, so that the textual IR round trip (snug-opt printing
// and parsing planned IR, how lit tests feed planned modules) keeps them:
//   - every graph input and node result: `{offset = N}`;
//   - module attributes: alignment, arena, lower_bound,
//     lower_bound_unshared, no_reuse, peak_step, planner, sharing (the rules
//     liveness applied), host_arena (the pinned host region's bytes, absent
//     without offloaded values; their offsets are into it), and scratch = [step, offset, bytes, ...], one
//     triple per node with scratch memory (absent when there is none).
// What follows from them (which values share a buffer, every live
// interval) is a deterministic function of the schedule and the recorded
// sharing rules, so readers get it from getModuleMemoryPlan, which
// recomputes it in ONE place; planModuleMemory returns the very same
// structure. The report, the timeline and the CUDA emitter read nothing
// else. They trust the plan; verify-plan is what checks it.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_PLANMEMORY_H
#define SNUG_PASSES_MEMORY_PLANMEMORY_H

#include "passes/memory/Liveness.h"
#include "passes/planner/MemoryPlanner.h"
#include "passes/memory/ScratchRequest.h"

#include <string>

namespace snug {

struct PlanMemoryOptions {
  uint64_t alignment = 256;
  PlannerOptions planner;
  LivenessOptions sharing;
  /// The target whose scratch requests are planned.
  ScratchOptions scratch;
  bool verify = true;
};

/// One block of the arena.
struct ArenaBuffer {
  enum class Kind { Values, Scratch };
  Kind kind = Kind::Values;
  uint64_t offset = 0;
  /// Bytes of the block (not rounded to the alignment).
  uint64_t bytes = 0;
  /// Live over the closed step interval [firstStep, lastStep]; a scratch
  /// buffer only at its node's step.
  int64_t firstStep = 0;
  int64_t lastStep = 0;
  /// Values: the values stored here, the one that created the block first,
  /// and why each other one joined ("view", "in-place", "concat", ...).
  llvm::SmallVector<const ir::Value *, 2> values;
  llvm::SmallVector<const char *, 2> reasons;
  /// Scratch: the node it serves (at step firstStep).
  const ir::Node *node = nullptr;
};

/// A module's arena plan, as plan-memory made it.
struct ModuleMemoryPlan {
  uint64_t alignment = 1;
  /// The one allocation: every value, graph inputs and outputs included,
  /// and every scratch buffer. The CUDA device arena is exactly this.
  uint64_t arenaBytes = 0;
  /// Max over steps of the live footprints, scratch included.
  uint64_t lowerBoundBytes = 0;
  /// The bound without views, in-place or concat sharing.
  uint64_t lowerBoundUnsharedBytes = 0;
  uint64_t noReuseBytes = 0;
  int64_t peakStep = -1;
  std::string planner;
  /// Wall-clock planning time (0 when read back from a module).
  double planningMs = 0;
  LivenessOptions sharing;
  int64_t numSteps = 1;
  /// Value buffers first (in liveness order), then scratch buffers in step
  /// order.
  std::vector<ArenaBuffer> buffers;
  /// Where the device plan's check record lies (core/DevicePlan.h), on the
  /// CUDA target when the module has run-time checks (snug.check_labels):
  /// after every buffer, inside arenaBytes; -1 otherwise.
  int64_t checkRecordOffset = -1;
  /// The pinned host region: its bytes and its buffers (one per offloaded
  /// value; offsets relative to the region). Not part of the device peak.
  uint64_t hostArenaBytes = 0;
  std::vector<ArenaBuffer> hostBuffers;
  /// Per graph input and node result: the step that defines it and the
  /// last that needs it.
  llvm::DenseMap<const ir::Value *, std::pair<int64_t, int64_t>> intervals;

  /// The scratch buffer of the node at `step`, or null.
  const ArenaBuffer *getScratch(int64_t step) const;
  /// The largest scratch buffer, in bytes (0 without scratch).
  uint64_t getLargestScratchBytes() const;
  size_t getNumScratchBuffers() const;
  /// Bytes live at each step (numSteps entries): every arena buffer live
  /// there once, rounded to the alignment, scratch included.
  std::vector<uint64_t> getLiveBytesPerStep() const;
};

/// Sets one plan-memory option (alignment, planner, time-limit, seed,
/// views, in-place, concat, verify, target, cublas-workspace) from a
/// pipeline string: true when `key` is one, false when it is not (the
/// caller's own or unknown), an error naming `pass` and the option on a bad
/// value. Passes that plan as plan-memory does (remat) take the same keys.
llvm::Expected<bool> parsePlanMemoryOption(PlanMemoryOptions &options,
                                           llvm::StringRef pass,
                                           llvm::StringRef key,
                                           llvm::StringRef value);

/// The planner's problem for a module's values: one PlanBuffer per live
/// buffer (id = buffer index), sizes as they are (the planner rounds to
/// alignment).
std::vector<PlanBuffer> getPlanBuffers(const LivenessInfo &liveness,
                                       uint64_t alignment);

/// The arena's packing problem exactly as planModuleMemory handed it to
/// planMemory: one PlanBuffer per entry of plan.buffers, in that order,
/// id = its index (the value buffers as getPlanBuffers numbers them, then
/// the scratch buffers), bytes as they are, and the alignment each was
/// planned at (the arena's; a scratch buffer's at least
/// kScratchAlignment). The pinned host region is packed apart and is not
/// in it. planModuleMemory asserts that this is the list it planned;
/// `snugc compile --emit=buffers` writes it.
std::vector<PlanBuffer> getArenaPlanBuffers(const ModuleMemoryPlan &plan);

/// The sharing rules and alignment a planned module records (its `sharing`
/// and `alignment` attributes); all rules when it records none. Errors on a
/// malformed attribute.
llvm::Expected<LivenessOptions> getRecordedSharing(const ir::Module &module);

/// The scratch triples (step, offset, bytes) a planned module records in
/// its `scratch` attribute; errors on a malformed one (not a multiple of 3
/// ints, a negative entry, a step outside the schedule, two for one step).
struct RecordedScratch {
  int64_t step = 0;
  uint64_t offset = 0, bytes = 0;
};
llvm::Expected<std::vector<RecordedScratch>>
getRecordedScratch(const ir::Module &module);

/// Plans `module` and records the plan on it (see the file comment).
/// Returns what getModuleMemoryPlan then reads back, with the planning time.
llvm::Expected<ModuleMemoryPlan>
planModuleMemory(ir::Module &module, const PlanMemoryOptions &options);

/// The plan a planned module records. Fails when the module has no plan
/// (no `arena`), a value lacks its offset, or an attribute is malformed;
/// does not check the offsets against each other (verify-plan does).
llvm::Expected<ModuleMemoryPlan> getModuleMemoryPlan(const ir::Module &module);

} // namespace snug

#endif // SNUG_PASSES_MEMORY_PLANMEMORY_H
