//===- BudgetSearch.h - What remat and offload share -----------*- C++ -*-===//
//
// The remat and offload passes (Remat.cpp, Offload.cpp) both change the
// module one decision at a time, re-plan the arena and keep a decision only
// when the plan got better. This is how they judge "better" and how they
// print sizes in their decision lines, defined once.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_BUDGET_BUDGETSEARCH_H
#define SNUG_PASSES_MEMORY_BUDGET_BUDGETSEARCH_H

#include "passes/memory/PlanMemory.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace snug {

/// How good a plan is, compared lexicographically: a smaller arena, else a
/// smaller bound, else fewer steps at the bound (the next decision has less
/// to undo).
struct PlanScore {
  uint64_t arena = 0, bound = 0, stepsAtBound = 0;
  bool operator<(const PlanScore &other) const {
    return std::tie(arena, bound, stepsAtBound) <
           std::tie(other.arena, other.bound, other.stepsAtBound);
  }
};

inline uint64_t alignBytesUp(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

/// The footprints (sizes rounded up to the alignment) live at each step,
/// and a zero past the last.
std::vector<uint64_t> getLiveBytes(const ModuleMemoryPlan &plan);

/// The score of a device arena plan (the pinned host region is not part of
/// it: it is not device memory).
PlanScore scorePlan(const ModuleMemoryPlan &plan);

/// "1.50 MiB" or "12.0 KiB", as decision lines print sizes.
std::string describeDecisionBytes(uint64_t bytes);

} // namespace snug

#endif // SNUG_PASSES_MEMORY_BUDGET_BUDGETSEARCH_H
