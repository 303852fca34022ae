//===- BranchReport.h - The runs an If on runtime data skips -----*- C++ -*-===//
//
// The memory report's lines for the branches of Ifs on runtime data
// (passes/memory/GuardBranches.cpp): each snug.skip_if's run of steps, the
// side of which condition it is, and what the arena holds while it runs.
// Both sides of an If are planned one after the other in the one arena,
// so the predicted peak holds whichever side runs; these lines show each
// side's own need:
//   steps       the run's steps (nested runs inside it counted);
//   peak live   the most bytes live at one step of the run, every arena
//               buffer live then counted once, rounded to the alignment
//               (values from before the If that are still needed
//               included): what taking this side needs of the arena;
//   peak step   the step where that is.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_BRANCHREPORT_H
#define SNUG_COMPILER_BRANCHREPORT_H

#include "ir/Module.h"
#include "passes/memory/PlanMemory.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snug {

struct BranchRun {
  /// The condition's name (what the If read, through the skip_if chain).
  std::string condition;
  /// "then" or "else": the side of the If these steps compute.
  std::string side;
  /// The step of the snug.skip_if; the run is the `steps` after it.
  int64_t skipStep = 0;
  int64_t steps = 0;
  /// Runs this one lies inside (0 at the top level).
  unsigned depth = 0;
  uint64_t peakLiveBytes = 0;
  int64_t peakStep = -1;
};

/// The runs of planned `module` (its plan `plan`), in schedule order.
std::vector<BranchRun> buildBranchReport(const ir::Module &module,
                                         const ModuleMemoryPlan &plan);

} // namespace snug

#endif // SNUG_COMPILER_BRANCHREPORT_H
