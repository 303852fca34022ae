//===- MemoryPlannerInternal.h - Planner internals --------------*- C++ -*-===//
//
// Shared between MemoryPlanner.cpp (validation, sweep, greedies, driver),
// MemoryPlannerSearch.cpp (the canonical search), MemoryPlannerSkyline.cpp
// (the skyline search) and MemoryPlannerRepair.cpp (the order search). Not
// part of the public API.
//
// A Problem holds only the buffers that occupy bytes ("items"), with sizes
// already rounded up to their alignment. The sweep splits the step axis into
// sections, the maximal sets of items live together (the cliques of the
// interval graph), and into partitions, maximal runs of steps with something
// live: items of different partitions never conflict, so every partition can
// be packed on its own and the arena is the largest partition arena.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PLANNER_MEMORYPLANNERINTERNAL_H
#define SNUG_PASSES_PLANNER_MEMORYPLANNERINTERNAL_H

#include "passes/planner/MemoryPlanner.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace snug {
namespace planner {

/// A buffer that occupies bytes.
struct Item {
  uint64_t size;  ///< Footprint: bytes rounded up to align.
  uint64_t align; ///< Power of two.
  int64_t first;  ///< Closed live interval.
  int64_t last;
  int64_t id;     ///< Caller's id (tie-breaker).
  uint32_t index; ///< Position in the caller's buffer list.
};

/// Items plus what one sweep over their intervals tells about them.
struct Problem {
  std::vector<Item> items;

  /// Sum of live footprints in each section, and a step inside it.
  std::vector<uint64_t> sectionTotal;
  std::vector<int64_t> sectionStep;
  /// Per item: the half-open range of sections it belongs to.
  std::vector<uint32_t> secBegin, secEnd;

  /// Per partition: its items (in sweep order) and section range.
  std::vector<std::vector<uint32_t>> partItems;
  std::vector<uint32_t> partSecBegin, partSecEnd;
  std::vector<uint32_t> partOf;

  uint64_t lowerBound = 0;
  int64_t peakStep = -1;
};

/// Fills everything but items from items.
void sweepProblem(Problem &problem);

/// Per-item offsets of a packing and its arena.
struct Packing {
  std::vector<uint64_t> offsets;
  uint64_t arena = 0;
};

using Clock = std::chrono::steady_clock;

/// Where a greedy puts an item among the holes left by conflicting items.
/// Top: on top of everything conflicting (runSkyline).
enum class GreedyFit { First, Best, Top };

/// The greedy placement orders, all descending (ties by id, then position).
enum class GreedyOrder {
  Size,     ///< size, then lifetime (TFLite, XLA)
  Breadth,  ///< largest live total over the lifetime, then area
  Lifetime, ///< lifetime, then size
  Area,     ///< size * lifetime, then size
  Degree,   ///< number of conflicting items, then size
  Start,    ///< earliest start (ascending), then lifetime
  SizeStart, ///< size, then earliest start (ascending): MindSpore SOMAS's
             ///< rule, which stacks equal-sized saved activations in the
             ///< order the forward pass makes them
};

/// Above this many items the planner counts a problem as large: Search and
/// Best start with the skyline greedies and best fit gives up exactness.
constexpr size_t kLargeProblemItems = 4096;

/// How often (in placements) a greedy looks at the clock.
constexpr uint32_t kDeadlineStride = 64;

/// Returns the items of problem in the given order.
std::vector<uint32_t> makeGreedyOrder(const Problem &problem,
                                      GreedyOrder order);

/// Moves to the front of order (stably) the items live within window
/// sections of their partition's peak section (the first of largest total).
/// The items live at the peak must tile [0, bound) in any packing at the
/// bound; placed first, first fit stacks them without a hole, and the rest
/// fill in around them.
std::vector<uint32_t> movePeakFirst(const Problem &problem,
                                    const std::vector<uint32_t> &order,
                                    uint32_t window);

/// Places the items in order, each at the first or best hole among the
/// conflicting items placed before it (Top: runSkyline). Each placement costs
/// O(log^2 n) plus the busy ranges it steps over. Returns false (packing
/// unusable) if deadline passes first, except above kLargeProblemItems
/// items, where the items left then go on top of their conflicts in
/// O(log S) each and the (valid) packing is returned.
bool runGreedy(const Problem &problem, const std::vector<uint32_t> &order,
               GreedyFit fit, Clock::time_point deadline, Packing &packing);

/// Places the items in order, each on top of the highest item placed so far
/// in any section it spans (no hole is ever refilled), in O(n log n).
/// Returns false if deadline passes first.
bool runSkyline(const Problem &problem, const std::vector<uint32_t> &order,
                Clock::time_point deadline, Packing &packing);

/// Largest offset + size over the items of one partition.
uint64_t partitionArena(const Problem &problem, const Packing &packing,
                        uint32_t part);

/// A deterministic work allowance with a wall-clock safety cap. Work units
/// approximate time (one per buffer or section touched), so a budget ends a
/// search at the same point on every run; the clock only matters when a
/// slow (e.g. unoptimised) build would otherwise overrun the time limit.
class WorkBudget {
public:
  WorkBudget(uint64_t work, std::chrono::steady_clock::time_point deadline)
      : left(work), deadline(deadline) {}
  /// Charges units of work; returns false once the budget is spent.
  bool charge(uint64_t units) {
    if (units >= left) {
      left = 0;
      return false;
    }
    left -= units;
    if (++calls % 256 == 0 && std::chrono::steady_clock::now() >= deadline) {
      left = 0;
      timedOut = true;
      return false;
    }
    return true;
  }
  bool exhausted() const { return left == 0; }
  /// Looks at the clock now (charge() only does so every 256 calls); once
  /// the deadline has passed the budget is spent.
  bool checkDeadline() {
    if (left != 0 && std::chrono::steady_clock::now() >= deadline) {
      left = 0;
      timedOut = true;
    }
    return left == 0;
  }
  uint64_t remaining() const { return left; }
  /// A budget of at most units, to be settled with settle().
  WorkBudget split(uint64_t units) const {
    return WorkBudget(std::min(units, left), deadline);
  }
  /// Charges what child, split off with given units, has used.
  void settle(const WorkBudget &child, uint64_t given) {
    uint64_t used = std::min(given, left) - child.left;
    left = child.timedOut ? 0 : left - std::min(left, used);
    timedOut |= child.timedOut;
  }

private:
  uint64_t left;
  std::chrono::steady_clock::time_point deadline;
  uint64_t calls = 0;
  bool timedOut = false;
};

/// Work units charged per second of the time limit. Calibrated on an
/// optimised build so the work budget, not the clock, normally ends a search.
constexpr double kWorkUnitsPerSecond = 2.5e8;

/// Partitions larger than this are never given to the canonical search (a
/// node costs O(items)); the skyline search, whose nodes cost O(log S),
/// still tries them.
constexpr size_t kMaxSearchItems = 1000;

/// Tries to lower best.arena with the skyline and canonical searches,
/// partition by partition, spending at most budget. best must be a valid
/// packing.
void improveBySearch(const Problem &problem, Packing &best, WorkBudget &budget,
                     uint64_t seed);

/// Tries to lower best.arena by a local search over first-fit orders in the
/// partitions that set it (MemoryPlannerRepair.cpp), spending at most
/// budget. best must be a valid packing; it never gets worse.
void improveByReordering(const Problem &problem, Packing &best,
                         WorkBudget &budget, uint64_t seed);

/// Looks for a packing of one partition into capacity bytes with the
/// bottom-left skyline search (MemoryPlannerSkyline.cpp), spending at most
/// budget. On success stores the offsets, parallel to the partition's item
/// list, in localOffsets. Failure proves nothing unless the capacity leaves
/// no slack. On failure, if bestEffort is given and the partition has at
/// most kMaxSearchItems items, stores there the lowest of the restarts'
/// most complete states, each finished by first fit (a valid packing,
/// possibly above capacity; empty if nothing was placed).
bool packBySkylineSearch(const Problem &problem, uint32_t part,
                         uint64_t capacity, WorkBudget &budget, uint64_t seed,
                         std::vector<uint64_t> &localOffsets,
                         std::vector<uint64_t> *bestEffort = nullptr);

} // namespace planner
} // namespace snug

#endif // SNUG_PASSES_PLANNER_MEMORYPLANNERINTERNAL_H
