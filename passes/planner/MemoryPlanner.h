//===- MemoryPlanner.h - Static arena packing -------------------*- C++ -*-===//
//
// The IR-free static memory planner: given buffers with sizes, alignments and
// closed live intervals [firstStep, lastStep] over an abstract step axis, it
// assigns every buffer an offset in one arena so that no two buffers whose
// intervals intersect overlap in address, trying to make the arena as small as
// the lower bound (the largest number of bytes live at one step).
//
// Invariants of every returned plan (checked independently by
// verifyMemoryPlan): each offset is a multiple of its buffer's alignment,
// offset + bytes <= arenaBytes, and buffers live at a common step occupy
// disjoint byte ranges. A buffer's footprint is its size rounded up to its
// alignment, so the lower bound is a true bound and bump allocation ("none")
// needs exactly noReuseBytes. Zero-byte buffers get offset 0 and occupy
// nothing. For a fixed input, strategy and seed the offsets are identical from
// run to run as long as the search stops on its work budget (the normal case
// in optimised builds) rather than on its wall-clock safety cap.
//
// It knows nothing about the IR: the caller numbers steps and chooses ids.
// It does not model in-place reuse, multiple memory spaces or fragmentation
// at run time.
//
// References: the canonical-solution search follows MiniMalloc (Moffitt,
// "MiniMalloc: A Lightweight Memory Allocator for Hardware-Accelerated
// Machine Learning", ASPLOS 2023); the skyline search (no-slack packings
// such as tilings, and partitions too large for the canonical search)
// follows the bottom-left/skyline rule of 2D strip packing with
// most-constrained-gap branching as in Korf's rectangle packing; the greedy
// rules are those of the TFLite arena planner, XLA's heap simulator and
// MindSpore SOMAS (size, then earliest start), on large problems also with
// the buffers live around the peak placed first (they must tile the bound);
// TelaMalloc (Maas et al., ASPLOS 2023) motivates combining cheap greedies
// with a bounded search; what budget is left above the bound goes to a
// local search over first-fit orders (squeaky-wheel / iterated greedy).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PLANNER_MEMORYPLANNER_H
#define SNUG_PASSES_PLANNER_MEMORYPLANNER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace snug {

/// One buffer to place.
struct PlanBuffer {
  /// Opaque handle chosen by the caller; only used in messages and as the
  /// last tie-breaker of the greedy orders.
  int64_t id = 0;
  /// Size in bytes; 0 is allowed (offset 0, occupies nothing).
  uint64_t bytes = 0;
  /// Required alignment of the offset; a power of two.
  uint64_t alignment = 1;
  /// The buffer is live over the closed step interval [firstStep, lastStep].
  int64_t firstStep = 0;
  int64_t lastStep = 0;
};

/// How to assign offsets.
enum class PlannerStrategy {
  /// Bump allocation without reuse (the baseline).
  None,
  /// Size descending, best-fit gap (the TFLite arena rule).
  GreedySize,
  /// Breadth (largest live total over the lifetime), then area, descending;
  /// first-fit lowest offset.
  GreedyBreadth,
  /// An ensemble of greedy orders and fits, then a budgeted search over
  /// canonical solutions.
  Search,
  /// The smallest arena of the greedies and, where affordable, Search.
  Best,
};

/// Returns the command-line name of a strategy ("greedy-size", ...).
llvm::StringRef getPlannerStrategyName(PlannerStrategy strategy);

/// Parses "none", "greedy-size", "greedy-breadth", "search" or "best"; the
/// error lists the valid names.
llvm::Expected<PlannerStrategy> parsePlannerStrategy(llvm::StringRef name);

/// Knobs of planMemory.
struct PlannerOptions {
  PlannerStrategy strategy = PlannerStrategy::Best;
  /// Budget of the whole call, greedies included: a hard wall-clock cap (the
  /// planner returns the best plan found by then, at worst a bump
  /// allocation; it overruns by at most one greedy step or search node).
  /// Within it the search is bounded by a work count derived from it, so
  /// plans are reproducible when the cap is not hit.
  double timeLimitSeconds = 2.0;
  /// Varies the search's tie-breaking; equal seeds give equal plans.
  uint64_t seed = 0;
};

/// The result of planMemory.
struct MemoryPlan {
  /// Offsets parallel to the input buffers.
  std::vector<uint64_t> offsets;
  /// max(offset + footprint) over all buffers, footprint being the size
  /// rounded up to the alignment.
  uint64_t arenaBytes = 0;
  /// Max over steps of the live footprints; no plan can do better.
  uint64_t lowerBoundBytes = 0;
  /// A step at which the live footprints equal the lower bound (-1 if none).
  int64_t peakStep = -1;
  /// Sum of footprints: the arena of strategy None.
  uint64_t noReuseBytes = 0;
  /// The strategy that produced the offsets (for Best: the winner).
  PlannerStrategy strategy = PlannerStrategy::None;
  /// Wall-clock time spent in planMemory.
  double planningMs = 0;
};

/// Returns the largest sum of footprints live at one step and, if peakStep is
/// given, stores the first such step there (-1 when nothing is live). Buffers
/// with firstStep > lastStep or a zero alignment are ignored; planMemory
/// rejects them.
uint64_t computeLowerBound(llvm::ArrayRef<PlanBuffer> buffers,
                           int64_t *peakStep = nullptr);

/// Plans offsets for buffers. Fails on firstStep > lastStep, an alignment
/// that is not a power of two, or sizes whose sum overflows.
llvm::Expected<MemoryPlan> planMemory(llvm::ArrayRef<PlanBuffer> buffers,
                                      const PlannerOptions &options);

/// Checks a plan independently of the planner: offsets aligned, each buffer
/// inside the arena, and no two buffers with intersecting live intervals
/// overlapping in [offset, offset + bytes). The error names both buffers,
/// their intervals and byte ranges. Runs in O(n log n).
llvm::Error verifyMemoryPlan(llvm::ArrayRef<PlanBuffer> buffers,
                             const MemoryPlan &plan);

} // namespace snug

#endif // SNUG_PASSES_PLANNER_MEMORYPLANNER_H
