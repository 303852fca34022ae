//===- PlanMemory.h - Planning a module's arena -----------------*- C++ -*-===//
//
// The IR side of memory planning, shared by the plan-memory pass, the
// memory report and the benchmarks: liveness → planner buffers → offsets
// written back onto values and the plan's figures onto the module.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PLANMEMORY_H
#define SNUG_PASSES_PLANMEMORY_H

#include "passes/Liveness.h"
#include "passes/MemoryPlanner.h"

namespace snug {

struct PlanMemoryOptions {
  uint64_t alignment = 256;
  PlannerOptions planner;
  LivenessOptions sharing;
  bool verify = true;
};

/// The planner's problem for a module: one PlanBuffer per live buffer (id =
/// buffer index), sizes as they are (the planner rounds to alignment).
std::vector<PlanBuffer> getPlanBuffers(const LivenessInfo &liveness,
                                       uint64_t alignment);

/// The sharing rules and alignment a planned module records (its `sharing`
/// and `alignment` attributes); all rules when it records none. Errors on a
/// malformed attribute.
llvm::Expected<LivenessOptions> getRecordedSharing(const ir::Module &module);

/// Plans `module` and records the plan on it: every input and node result
/// gets its arena offset; the module gets the attributes alignment, arena,
/// lower_bound, lower_bound_unshared (the bound with no views, in-place or
/// concat sharing), no_reuse, peak_step and planner. Returns the raw plan.
llvm::Expected<MemoryPlan> planModuleMemory(ir::Module &module,
                                            const PlanMemoryOptions &options);

} // namespace snug

#endif // SNUG_PASSES_PLANMEMORY_H
