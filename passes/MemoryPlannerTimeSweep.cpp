//===- MemoryPlannerTimeSweep.cpp - Time-major search at zero slack -------===//
//
// An exact, budgeted depth-first search for partitions that leave no slack
// at the capacity (every section exactly full, as a guillotine tiling at its
// bound). Where the skyline search (MemoryPlannerSkyline.cpp) fills the
// arena address-major, from the bottom up, this one sweeps the step axis:
// with no byte to spare, the buffers that start in a section must exactly
// fill the address gaps left by those that ended before it, and nothing else
// can. So the state after a section is just the address arrangement of the
// live buffers, and within a section a node fills the lowest unfilled
// address of the lowest gap with one of the section's unplaced starters that
// fits the rest of that gap (sitting at that address is forced: whatever
// lies below it is taken). The branching is complete.
//
// Pruning: once every buffer ending before a later section is placed, that
// section's gaps are fixed (the merged address ranges of those buffers), so
// its starters must split exactly into the gap lengths; this small
// bin-packing check (sizes only, node-limited, "unknown" counts as
// feasible) catches a wrong arrangement long before the sweep gets there.
// States whose every branch failed are remembered by a hash of the live
// buffers' classes and offsets (DeadStateSet), which catches the many pasts
// that leave the same frontier (finished sub-tilings rearranged). Restarts
// with Luby node limits alternate the sweep's direction and perturb the
// branch order; the dead states survive them.
//
// The two searches are complementary: a tiling whose first cuts run along
// the step axis is easy address-major and hard time-major, and vice versa,
// so the planner gives both a share of the budget (improveBySearch).
//
// Cost: a node is O(starters of its section) plus the look-ahead, whose
// work is charged; recursion depth is at most the partition's buffers, so
// it is only used on partitions of at most kMaxSearchItems.
//
// References: zero-slack (perfect) rectangle packing with exact-fill
// pruning, as in Korf's and Huang and Korf's work on rectangle packing;
// sweep-line formulations of dynamic storage allocation.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlannerInternal.h"
#include "passes/MemoryPlannerStateSet.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace snug;
using namespace snug::planner;

namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kNodeWork = 32;
constexpr uint64_t kHashWork = 64;
/// Nodes of one look-ahead bin-packing check before it answers "unknown".
constexpr unsigned kLookAheadNodes = 512;

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Gap {
  uint64_t begin, end;
};

class TimeSweep {
public:
  /// reverseTime sweeps from the partition's last section to its first.
  TimeSweep(const Problem &problem, uint32_t part, uint64_t capacity,
            uint64_t seed, bool reverseTime);
  /// 1: found (offsets in getSolution()), 0: no packing, -1: limit or
  /// budget spent.
  int run(uint64_t nodeLimit, unsigned variant, WorkBudget &budget);
  const std::vector<uint64_t> &getSolution() const { return offset; }
  /// Where run() records its most complete state by placed area (nullptr:
  /// nowhere); area is what that state has placed.
  void trackPartial(double *area, std::vector<uint64_t> *offsets) {
    partialArea = area;
    partialOffsets = offsets;
  }

private:
  int enterSection(uint32_t s);
  int completeSection(uint32_t s);
  int fill(uint32_t s, size_t g, uint64_t x, int64_t below);
  bool charge(uint64_t units);
  bool startersFitGaps(uint32_t s);
  bool assignStarters(size_t k);
  void sortCandidates(size_t begin, uint64_t left, int64_t below);
  uint64_t itemKey(uint32_t i) const {
    return mix(classOf[i] * 0x100000001b3ULL ^ mix(offset[i]));
  }

  size_t numItems = 0, numSections = 0;
  uint64_t capacity;
  std::vector<uint64_t> size, align, tieKey, sectionSalt;
  std::vector<uint32_t> secLo, secHi, classOf;
  // section -> items starting there (by class), ending there, and starting
  // there by size descending (for the look-ahead).
  std::vector<uint32_t> startBegin, starts, bySize;
  std::vector<uint32_t> endBegin, ends;
  std::vector<uint32_t> endersLeft;
  // Sections whose gaps are fixed (every buffer ending before them placed)
  // and which are not yet being filled.
  std::vector<uint32_t> ready;
  size_t completed = 0;
  std::vector<std::vector<Gap>> gaps;
  std::vector<uint64_t> offset;
  std::vector<uint32_t> pool;
  std::vector<unsigned> score;
  // Look-ahead scratch: the gaps' remaining lengths and the sizes to assign.
  std::vector<uint64_t> room, toAssign;
  std::vector<Gap> scratch;
  unsigned lookAheadLeft = 0;
  DeadStateSet dead;
  uint64_t liveHash = 0, doneHash = 0, seed, nodesLeft = 0, pendingWork = 0,
           perturbations = 0;
  unsigned variant = 0;
  double placedArea = 0, *partialArea = nullptr;
  std::vector<uint64_t> *partialOffsets = nullptr;
  WorkBudget *budget = nullptr;
  bool stopped = false;
};

} // namespace

TimeSweep::TimeSweep(const Problem &problem, uint32_t part, uint64_t capacity,
                     uint64_t seed, bool reverseTime)
    : capacity(capacity), seed(seed) {
  const std::vector<uint32_t> &partItems = problem.partItems[part];
  uint32_t secBase = problem.partSecBegin[part];
  numItems = partItems.size();
  numSections = problem.partSecEnd[part] - secBase;
  for (uint32_t local = 0; local < numItems; ++local) {
    uint32_t global = partItems[local];
    const Item &item = problem.items[global];
    uint32_t lo = problem.secBegin[global] - secBase;
    uint32_t hi = problem.secEnd[global] - secBase;
    if (reverseTime) {
      uint32_t mirroredLo = uint32_t(numSections) - hi;
      hi = uint32_t(numSections) - lo;
      lo = mirroredLo;
    }
    size.push_back(item.size);
    align.push_back(item.align);
    secLo.push_back(lo);
    secHi.push_back(hi);
    tieKey.push_back(mix(seed ^ mix(item.index)));
  }
  for (size_t s = 0; s <= numSections; ++s)
    sectionSalt.push_back(mix(0x5ec7 ^ mix(s)));
  // Buffers identical in sections, size and alignment form a class: they
  // are interchangeable, so a node tries one of each and the state hash
  // names the class, not the buffer.
  std::vector<uint32_t> order(numItems);
  std::iota(order.begin(), order.end(), 0);
  auto same = [&](uint32_t x, uint32_t y) {
    return std::tie(secLo[x], secHi[x], size[x], align[x]) ==
           std::tie(secLo[y], secHi[y], size[y], align[y]);
  };
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    if (!same(x, y))
      return std::tie(secLo[x], secHi[x], size[x], align[x]) <
             std::tie(secLo[y], secHi[y], size[y], align[y]);
    return x < y;
  });
  classOf.assign(numItems, 0);
  for (size_t k = 0; k < numItems; ++k)
    classOf[order[k]] =
        k > 0 && same(order[k - 1], order[k]) ? classOf[order[k - 1]]
                                              : uint32_t(k);
  // order is sorted by secLo first, so it lists each section's starters
  // with the members of a class adjacent.
  startBegin.assign(numSections + 1, 0);
  for (uint32_t i = 0; i < numItems; ++i)
    ++startBegin[secLo[i] + 1];
  for (size_t s = 0; s < numSections; ++s)
    startBegin[s + 1] += startBegin[s];
  starts = order;
  bySize = order;
  for (size_t s = 0; s < numSections; ++s)
    std::sort(bySize.begin() + startBegin[s], bySize.begin() + startBegin[s + 1],
              [&](uint32_t x, uint32_t y) { return size[x] > size[y]; });
  endBegin.assign(numSections + 2, 0);
  for (uint32_t i = 0; i < numItems; ++i)
    ++endBegin[secHi[i] + 1];
  for (size_t s = 0; s <= numSections; ++s)
    endBegin[s + 1] += endBegin[s];
  ends.resize(numItems);
  std::vector<uint32_t> fill(endBegin.begin(), endBegin.end() - 1);
  for (uint32_t i = 0; i < numItems; ++i)
    ends[fill[secHi[i]]++] = i;
  gaps.resize(numSections);
  score.assign(numItems, 0);
}

bool TimeSweep::charge(uint64_t units) {
  if (stopped || nodesLeft == 0 || !budget->charge(units)) {
    stopped = true;
    return false;
  }
  --nodesLeft;
  return true;
}

/// Section s begins: the buffers that ended before it leave gaps (their
/// merged address ranges; the whole arena in the first section), which its
/// starters must fill.
int TimeSweep::enterSection(uint32_t s) {
  std::vector<Gap> &here = gaps[s];
  here.clear();
  if (s == 0) {
    here.push_back({0, capacity});
  } else {
    for (uint32_t k = endBegin[s]; k < endBegin[s + 1]; ++k) {
      uint32_t i = ends[k];
      here.push_back({offset[i], offset[i] + size[i]});
    }
    std::sort(here.begin(), here.end(),
              [](const Gap &x, const Gap &y) { return x.begin < y.begin; });
    size_t kept = 0;
    for (const Gap &gap : here) {
      if (kept > 0 && here[kept - 1].end == gap.begin)
        here[kept - 1].end = gap.end;
      else
        here[kept++] = gap;
    }
    here.resize(kept);
    pendingWork += endBegin[s + 1] - endBegin[s];
  }
  return here.empty() ? completeSection(s) : fill(s, 0, here[0].begin, -1);
}

/// Section s is full: the buffers ending before it no longer constrain
/// anything, so they leave the state hash. Then the next section: of those
/// whose gaps are fixed, the one with the fewest starters (the most
/// constrained: one starter is a forced move), the earliest on ties. The
/// earliest unfilled section always qualifies, so the sweep never stalls.
int TimeSweep::completeSection(uint32_t s) {
  for (uint32_t k = endBegin[s]; k < endBegin[s + 1]; ++k)
    liveHash ^= itemKey(ends[k]);
  doneHash ^= sectionSalt[s];
  ++completed;
  int outcome = 1;
  if (completed < numSections) {
    size_t best = 0;
    for (size_t k = 1; k < ready.size(); ++k) {
      uint32_t x = ready[k], y = ready[best];
      uint32_t nx = startBegin[x + 1] - startBegin[x];
      uint32_t ny = startBegin[y + 1] - startBegin[y];
      if (nx < ny || (nx == ny && x < y))
        best = k;
    }
    pendingWork += ready.size();
    uint32_t next = ready[best];
    ready.erase(ready.begin() + best);
    outcome = enterSection(next);
    if (outcome != 1)
      ready.insert(ready.begin() + best, next);
  }
  if (outcome != 1) {
    --completed;
    doneHash ^= sectionSalt[s];
    for (uint32_t k = endBegin[s]; k < endBegin[s + 1]; ++k)
      liveHash ^= itemKey(ends[k]);
  }
  return outcome;
}

/// Whether section s's starters can be split into groups whose sizes sum to
/// the lengths of its gaps, which are fixed once every buffer ending before
/// it is placed (sizes only; true when the check runs out of nodes).
bool TimeSweep::startersFitGaps(uint32_t s) {
  scratch.clear();
  for (uint32_t k = endBegin[s]; k < endBegin[s + 1]; ++k) {
    uint32_t i = ends[k];
    scratch.push_back({offset[i], offset[i] + size[i]});
  }
  std::sort(scratch.begin(), scratch.end(),
            [](const Gap &x, const Gap &y) { return x.begin < y.begin; });
  room.clear();
  for (const Gap &gap : scratch) {
    if (!room.empty() && scratch[room.size() - 1].end == gap.begin) {
      // Merged: keep room parallel to the merged gaps.
      room.back() += gap.end - gap.begin;
      scratch[room.size() - 1].end = gap.end;
    } else {
      scratch[room.size()] = gap;
      room.push_back(gap.end - gap.begin);
    }
  }
  toAssign.clear();
  for (uint32_t k = startBegin[s]; k < startBegin[s + 1]; ++k)
    toAssign.push_back(size[bySize[k]]);
  pendingWork += 2 * (toAssign.size() + room.size());
  if (toAssign.empty())
    return room.empty();
  uint64_t largestRoom = *std::max_element(room.begin(), room.end());
  uint64_t smallestRoom = *std::min_element(room.begin(), room.end());
  if (toAssign.front() > largestRoom || toAssign.back() > smallestRoom ||
      room.size() > toAssign.size())
    return false;
  lookAheadLeft = kLookAheadNodes;
  bool fits = assignStarters(0);
  pendingWork += 4 * (kLookAheadNodes - lookAheadLeft);
  return fits;
}

/// Puts toAssign[k..] (descending) into room; the sizes sum to the rooms,
/// so using every size fills every room exactly. Equal rooms are tried once.
bool TimeSweep::assignStarters(size_t k) {
  if (k == toAssign.size())
    return true;
  if (lookAheadLeft == 0)
    return true;
  --lookAheadLeft;
  uint64_t need = toAssign[k];
  for (size_t r = 0; r < room.size(); ++r) {
    if (room[r] < need)
      continue;
    bool tried = false;
    for (size_t q = 0; q < r && !tried; ++q)
      tried = room[q] == room[r];
    if (tried)
      continue;
    // What is left of a room must still take the smallest size.
    uint64_t rest = room[r] - need;
    if (rest != 0 && rest < toAssign.back())
      continue;
    room[r] = rest;
    bool fits = assignStarters(k + 1);
    room[r] += need;
    if (fits)
      return true;
  }
  return false;
}

/// Orders pool[begin..]: one that fills the rest of the gap first, then one
/// ending with the buffer below it (their tops then free one gap together,
/// as the pieces of a strip do), then the largest, then the longest; ties
/// by the seeded key.
void TimeSweep::sortCandidates(size_t begin, uint64_t left, int64_t below) {
  for (size_t k = begin; k < pool.size(); ++k) {
    uint32_t i = pool[k];
    score[i] = 2 * (size[i] == left) +
               (below >= 0 && secHi[i] == secHi[uint32_t(below)]);
  }
  std::sort(pool.begin() + begin, pool.end(), [&](uint32_t x, uint32_t y) {
    if (score[x] != score[y])
      return score[x] > score[y];
    if (variant % 2 == 1 && secHi[x] != secHi[y])
      return secHi[x] > secHi[y];
    if (size[x] != size[y])
      return size[x] > size[y];
    if (secHi[x] != secHi[y])
      return secHi[x] > secHi[y];
    return tieKey[x] < tieKey[y];
  });
  size_t count = pool.size() - begin;
  pendingWork += count;
  if (variant >= 2 && count >= 2) {
    uint64_t r = mix(seed ^ mix(variant ^ mix(++perturbations)));
    if (r % 8 == 0)
      std::swap(pool[begin], pool[begin + 1 + (r >> 8) % (count - 1)]);
  }
}

/// Fills gap g of section s from address x on (below: the buffer just
/// below x in this gap, -1 at its start).
int TimeSweep::fill(uint32_t s, size_t g, uint64_t x, int64_t below) {
  const std::vector<Gap> &here = gaps[s];
  if (g == here.size())
    return completeSection(s);
  if (!charge(pendingWork + kNodeWork + kHashWork))
    return -1;
  pendingWork = 0;
  uint64_t key = liveHash ^ doneHash ^ mix(sectionSalt[s]);
  if (dead.contains(key))
    return 0;
  uint64_t gapEnd = here[g].end, left = gapEnd - x;
  size_t begin = pool.size();
  for (uint32_t k = startBegin[s]; k < startBegin[s + 1]; ++k) {
    uint32_t i = starts[k];
    if (offset[i] != kNone || size[i] > left || x % align[i] != 0)
      continue;
    // One unplaced member per class (members are adjacent in starts).
    if (pool.size() > begin && classOf[pool.back()] == classOf[i])
      continue;
    pool.push_back(i);
  }
  pendingWork += startBegin[s + 1] - startBegin[s];
  sortCandidates(begin, left, below);
  for (size_t k = begin; k < pool.size(); ++k) {
    uint32_t i = pool[k];
    offset[i] = x;
    liveHash ^= itemKey(i);
    double area = double(size[i]) * double(secHi[i] - secLo[i]);
    placedArea += area;
    if (partialArea && placedArea > *partialArea) {
      *partialArea = placedArea;
      *partialOffsets = offset;
      pendingWork += numItems;
    }
    bool viable = true, opened = false;
    if (--endersLeft[secHi[i]] == 0 && secHi[i] < numSections) {
      viable = startersFitGaps(secHi[i]);
      opened = viable;
      if (viable)
        ready.push_back(secHi[i]);
    }
    int outcome = 0;
    if (viable) {
      uint64_t next = x + size[i];
      outcome = next == gapEnd
                    ? fill(s, g + 1, g + 1 < here.size() ? here[g + 1].begin : 0,
                           -1)
                    : fill(s, g, next, int64_t(i));
    }
    if (outcome == 1)
      return 1;
    if (opened)
      ready.pop_back();
    ++endersLeft[secHi[i]];
    liveHash ^= itemKey(i);
    offset[i] = kNone;
    placedArea -= area;
    if (outcome == -1) {
      pool.resize(begin);
      return -1;
    }
  }
  pool.resize(begin);
  // Every branch failed (none was cut short): the state is a dead end.
  pendingWork += dead.insert(key) + kHashWork;
  return 0;
}

int TimeSweep::run(uint64_t nodeLimit, unsigned newVariant,
                   WorkBudget &newBudget) {
  variant = newVariant;
  if (variant > 0)
    for (uint32_t i = 0; i < numItems; ++i)
      tieKey[i] = mix(tieKey[i] ^ variant);
  budget = &newBudget;
  nodesLeft = nodeLimit;
  stopped = false;
  offset.assign(numItems, kNone);
  endersLeft.assign(numSections + 1, 0);
  for (uint32_t i = 0; i < numItems; ++i)
    ++endersLeft[secHi[i]];
  pool.clear();
  ready.clear();
  completed = 0;
  liveHash = doneHash = 0;
  placedArea = 0;
  pendingWork = 0;
  return numSections == 0 ? 1 : enterSection(0);
}

/// The Luby sequence 1, 1, 2, 1, 1, 2, 4, 1, ... (k >= 1).
static uint64_t luby(uint64_t k) {
  while (true) {
    uint64_t power = 1;
    while (power * 2 - 1 < k)
      power *= 2;
    if (power * 2 - 1 == k)
      return power;
    k -= power - 1;
  }
}

bool planner::packByTimeSweep(const Problem &problem, uint32_t part,
                              uint64_t capacity, WorkBudget &budget,
                              uint64_t seed,
                              std::vector<uint64_t> &localOffsets,
                              std::vector<uint64_t> *bestEffort) {
  if (problem.partItems[part].size() > kMaxSearchItems)
    return false;
  for (uint32_t s = problem.partSecBegin[part]; s < problem.partSecEnd[part];
       ++s)
    if (problem.sectionTotal[s] != capacity)
      return false;
  TimeSweep forward(problem, part, capacity, seed, false);
  TimeSweep backward(problem, part, capacity, seed, true);
  double bestArea = 0;
  std::vector<uint64_t> best;
  if (bestEffort) {
    forward.trackPartial(&bestArea, &best);
    backward.trackPartial(&bestArea, &best);
  }
  uint64_t nodeLimit =
      std::max<uint64_t>(4 * problem.partItems[part].size(), 1024);
  for (unsigned variant = 0; !budget.checkDeadline(); ++variant) {
    TimeSweep &search = variant % 2 ? backward : forward;
    int outcome = search.run(nodeLimit * luby(variant / 2 + 1), variant, budget);
    if (outcome == 1) {
      localOffsets = search.getSolution();
      return true;
    }
    // The whole tree was searched: no packing at this capacity.
    if (outcome == 0)
      break;
  }
  if (bestEffort && !best.empty()) {
    completeGreedily(problem, part, best);
    *bestEffort = std::move(best);
  }
  return false;
}
