//===- MemoryPlannerRepair.cpp - Order local search above the bound -------===//
//
// A local search over placement orders for the partitions that the exact
// searches (MemoryPlannerSearch.cpp, MemoryPlannerSkyline.cpp) left above
// their bound and that set the arena. The start is first fit in the order
// of the best packing's offsets, which mostly rebuilds that packing (first
// fit may find a lower hole for an item and land elsewhere; if the rebuilt
// packing is higher, the old one is kept as the incumbent). A move takes one
// item that reaches the partition's arena and puts it earlier in the order,
// at a seeded random position; first fit repacks the whole partition. A
// move is kept when the arena does not grow and, at an equal arena, no more
// items reach it (plateaus are walked, the peak worn down one item at a
// time). It stops at the bound, when the budget is spent, or after
// kPatience moves per item without progress.
//
// This is the squeaky-wheel / iterated-greedy idea (Joslin and Clements,
// "Squeaky Wheel Optimization", JAIR 1999; Ruiz and Stuetzle's iterated
// greedy, EJOR 2007) over the first-fit packer; TelaMalloc (Maas et al.,
// ASPLOS 2023) likewise lets the buffers in contention steer a greedy. It
// proves nothing and never returns a worse packing. Partitions above
// kMaxSearchItems are left alone (a repack is O(n log^2 n) and a move needs
// many). Every repack is charged to the work budget and the moves come
// from a seeded hash, so the result is deterministic unless the clock
// strikes.
//
//===----------------------------------------------------------------------===//
#include "passes/planner/MemoryPlannerInternal.h"

#include <algorithm>
#include <numeric>

using namespace snug;
using namespace snug::planner;

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Work charged per item of a repack (first fit's O(log^2 n) placement).
/// Calibrated on an optimised build (about 1.5 ms per repack of 750 items)
/// so that the budget, not the clock, ends the search.
constexpr uint64_t kRepackWorkPerItem = 256;

/// Moves per item without a smaller arena or fewer items at it before the
/// search gives up on a partition.
constexpr uint64_t kPatience = 4;

/// The partition as a problem of its own, so that first fit repacks only it.
Problem extractPartition(const Problem &problem, uint32_t part) {
  Problem sub;
  for (uint32_t i : problem.partItems[part]) {
    Item item = problem.items[i];
    item.index = uint32_t(sub.items.size());
    sub.items.push_back(item);
  }
  sweepProblem(sub);
  return sub;
}

/// How many items reach the arena: the tie-break of equal arenas.
size_t countAtTop(const Problem &sub, const Packing &packing) {
  size_t count = 0;
  for (uint32_t i = 0; i < sub.items.size(); ++i)
    count += packing.offsets[i] + sub.items[i].size == packing.arena;
  return count;
}

/// Improves one partition's packing (offsets parallel to its item list) in
/// place; returns whether it got smaller.
bool reorderPartition(const Problem &sub, std::vector<uint64_t> &offsets,
                      WorkBudget &budget, uint64_t seed) {
  size_t n = sub.items.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return offsets[a] != offsets[b] ? offsets[a] < offsets[b] : a < b;
  });
  uint64_t start = 0;
  for (uint32_t i = 0; i < n; ++i)
    start = std::max(start, offsets[i] + sub.items[i].size);
  auto never = Clock::time_point::max();
  Packing current;
  runGreedy(sub, order, GreedyFit::First, never, current);
  if (current.arena > start) {
    // First fit found a lower hole for some item and ended higher: the old
    // packing stays the incumbent.
    current.offsets = offsets;
    current.arena = start;
  }
  size_t atTop = countAtTop(sub, current);
  uint64_t cost = kRepackWorkPerItem * n + sub.sectionTotal.size();
  std::vector<uint32_t> high, candidate;
  std::vector<uint32_t> position(n);
  // The search stalls after a while (every move from the peak makes it
  // worse): stop after kPatience moves per item without progress.
  uint64_t sinceProgress = 0, patience = kPatience * std::max<size_t>(n, 64);
  for (uint64_t move = 0; current.arena > sub.lowerBound; ++move) {
    // A repack takes milliseconds: the clock is read at every one, not
    // only every 256 charges.
    if (sinceProgress++ == patience || !budget.charge(cost) ||
        budget.checkDeadline())
      break;
    high.clear();
    for (uint32_t i = 0; i < n; ++i)
      if (current.offsets[i] + sub.items[i].size == current.arena)
        high.push_back(i);
    for (uint32_t k = 0; k < n; ++k)
      position[order[k]] = k;
    uint64_t r = mix(seed ^ mix(move));
    uint32_t victim = high[r % high.size()];
    size_t from = position[victim];
    size_t to = (r >> 32) % (from + 1);
    candidate = order;
    candidate.erase(candidate.begin() + from);
    candidate.insert(candidate.begin() + to, victim);
    Packing next;
    runGreedy(sub, candidate, GreedyFit::First, never, next);
    if (next.arena > current.arena)
      continue;
    size_t nextAtTop = countAtTop(sub, next);
    if (next.arena == current.arena && nextAtTop > atTop)
      continue;
    if (next.arena < current.arena || nextAtTop < atTop)
      sinceProgress = 0;
    current = std::move(next);
    atTop = nextAtTop;
    order.swap(candidate);
  }
  if (current.arena >= start)
    return false;
  offsets = current.offsets;
  return true;
}

} // namespace

void planner::improveByReordering(const Problem &problem, Packing &best,
                                  WorkBudget &budget, uint64_t seed) {
  size_t numParts = problem.partItems.size();
  // The partitions that set the arena, largest overshoot first; the others
  // would not change the result.
  for (uint32_t part = 0; part < numParts && !budget.exhausted(); ++part) {
    if (partitionArena(problem, best, part) < best.arena ||
        problem.partItems[part].size() > kMaxSearchItems)
      continue;
    Problem sub = extractPartition(problem, part);
    const std::vector<uint32_t> &items = problem.partItems[part];
    std::vector<uint64_t> offsets(items.size());
    for (uint32_t k = 0; k < items.size(); ++k)
      offsets[k] = best.offsets[items[k]];
    if (!reorderPartition(sub, offsets, budget, seed))
      continue;
    for (uint32_t k = 0; k < items.size(); ++k)
      best.offsets[items[k]] = offsets[k];
  }
  best.arena = 0;
  for (uint32_t part = 0; part < numParts; ++part)
    best.arena = std::max(best.arena, partitionArena(problem, best, part));
}
