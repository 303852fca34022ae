//===- MemoryPlannerSearch.cpp - Canonical packing search -----------------===//
//
// A budgeted exact search for packings that fit a given capacity, in the
// style of MiniMalloc (Moffitt, ASPLOS 2023), and the capacity schedule that
// drives it.
//
// The search only enumerates canonical packings: buffers are placed in
// non-decreasing (offset, preorder index) order, each directly on top of the
// highest already placed buffer it conflicts with. Every packing can be
// pushed down into one of these, so nothing is lost, and the branching is
// over which buffer comes next, not over offsets. Pruning:
//  - dominance: a buffer whose lowest offset is at or above the lowest top
//    any unplaced buffer could reach would leave a hole that buffer fits in;
//  - inference: in every section, the floor (the lowest offset any unplaced
//    member can still take) plus the unplaced members' total must fit;
//  - decomposition: once no unplaced buffer spans a section boundary, the
//    two sides are independent subproblems and are searched separately.
// A static preorder (three rules, tried round-robin with doubling node
// limits) breaks ties and orders the branches.
//
// The driver tries the lower bound first (most real problems reach it), then
// bisects between it and the best arena found so far. It treats a search
// that runs out of budget as a failure, so below the true optimum it can stop
// short of it; it never returns anything worse than its input packing.
//
// All state lives in flat arrays with undo trails; nothing is allocated per
// node except the branching order. A node costs O(unplaced buffers +
// sections), which is why partitions above kMaxSearchItems are left to the
// greedies and the skyline search (MemoryPlannerSkyline.cpp). The driver
// tries the skyline search first where it is sharper: on partitions with
// no slack at the target (every section exactly full), where the canonical
// search's branching over every buffer that could come next is hopeless
// (guillotine tilings), and on partitions too large for this one.
//
//===----------------------------------------------------------------------===//
#include "passes/planner/MemoryPlannerInternal.h"

#include <algorithm>
#include <limits>
#include <memory>

using namespace snug;
using namespace snug::planner;

namespace {

constexpr uint64_t kUnplaced = std::numeric_limits<uint64_t>::max();

enum class Outcome { Found, NotFound, Aborted };

/// Fixed work charged per search node and per candidate examined, on top of
/// the per-element counts, so that work tracks time on small subproblems.
constexpr uint64_t kNodeWork = 64;
constexpr uint64_t kCandidateWork = 8;

/// Static preorders: W = lifetime, A = area, T = the largest unplaced total
/// among the buffer's sections; all descending, in the order given.
enum class Preorder { WAT, TAW, TWA };
constexpr Preorder kPreorders[] = {Preorder::WAT, Preorder::TAW, Preorder::TWA};

/// A branching candidate: a buffer (by preorder position) and its offset.
struct Candidate {
  uint64_t offset;
  uint32_t pre;
  uint32_t item; // sub.items[pre], cached: the order is rebuilt every node
  bool operator<(const Candidate &other) const {
    return offset != other.offset ? offset < other.offset : pre < other.pre;
  }
};

/// A subproblem: unplaced buffers (in preorder) and the sections they span.
struct Subproblem {
  std::vector<uint32_t> items;
  uint32_t secBegin, secEnd;
};

class CanonicalSearch {
public:
  CanonicalSearch(const Problem &problem, uint32_t part, uint64_t seed);

  /// Looks for a packing of the partition into capacity bytes; on Found the
  /// local offsets (parallel to the partition's item list) are in solution.
  Outcome solve(uint64_t capacity, WorkBudget &budget);

  const std::vector<uint64_t> &getSolution() const { return solution; }

private:
  Outcome solveOnce();
  Outcome solveRanges(const std::vector<uint32_t> &candidates,
                      std::vector<uint32_t> &cutpoints);
  Outcome solveSubproblem(std::vector<uint32_t> items, uint32_t secBegin,
                          uint32_t secEnd);
  Outcome search(const Subproblem &sub, const std::vector<Candidate> &prev,
                 uint64_t lastOffset, uint32_t lastPre);
  Outcome decompose(const Subproblem &sub, const std::vector<Candidate> &order,
                    uint64_t offset, uint32_t pre, uint32_t item);
  bool place(uint32_t item, uint64_t offset);
  void unplace(uint32_t item, size_t minMark, size_t floorMark);
  bool fits(const Subproblem &sub, uint64_t offset);

  // The partition, with local item and section numbers.
  size_t numItems = 0, numSections = 0;
  std::vector<uint64_t> size, align, lifetime, tieKey;
  std::vector<double> area;
  std::vector<uint32_t> secLo, secHi;
  std::vector<uint32_t> memberStart, members;   // section -> items
  std::vector<uint32_t> overlapStart, overlaps; // item -> conflicting items
  std::vector<uint64_t> initialTotal;
  std::vector<uint32_t> initialCuts; // items spanning boundary s | s+1

  // Search state, restored through the trails on backtracking.
  uint64_t capacity = 0;
  std::vector<uint64_t> offset, minOffset, floor, total;
  std::vector<uint32_t> cuts;
  std::vector<std::pair<uint32_t, uint64_t>> minTrail, floorTrail;
  std::vector<uint32_t> witness; // a member per section, see fits()
  std::vector<uint64_t> solution;

  Preorder preorder = Preorder::WAT;
  uint64_t nodesLeft = 0, pendingWork = 0;
  WorkBudget *budget = nullptr;
  uint64_t seed;
};

} // namespace

static uint64_t mix(uint64_t x) {
  // splitmix64 finaliser: a seeded, platform-independent tie-break.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t alignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) & ~(align - 1);
}

CanonicalSearch::CanonicalSearch(const Problem &problem, uint32_t part,
                                 uint64_t seed)
    : seed(seed) {
  const std::vector<uint32_t> &partItems = problem.partItems[part];
  uint32_t secBase = problem.partSecBegin[part];
  numItems = partItems.size();
  numSections = problem.partSecEnd[part] - secBase;
  for (uint32_t local = 0; local < numItems; ++local) {
    uint32_t global = partItems[local];
    const Item &item = problem.items[global];
    size.push_back(item.size);
    align.push_back(item.align);
    lifetime.push_back(uint64_t(item.last) - uint64_t(item.first) + 1);
    area.push_back(double(item.size) * double(lifetime.back()));
    tieKey.push_back(seed == 0 ? local : mix(seed ^ mix(item.index)));
    secLo.push_back(problem.secBegin[global] - secBase);
    secHi.push_back(problem.secEnd[global] - secBase);
  }
  // Section membership and per-section totals.
  memberStart.assign(numSections + 1, 0);
  initialTotal.assign(numSections, 0);
  initialCuts.assign(numSections, 0);
  for (uint32_t i = 0; i < numItems; ++i) {
    for (uint32_t s = secLo[i]; s < secHi[i]; ++s) {
      ++memberStart[s + 1];
      initialTotal[s] += size[i];
    }
    for (uint32_t s = secLo[i]; s + 1 < secHi[i]; ++s)
      ++initialCuts[s];
  }
  for (size_t s = 0; s < numSections; ++s)
    memberStart[s + 1] += memberStart[s];
  members.resize(memberStart[numSections]);
  std::vector<uint32_t> fill(memberStart.begin(), memberStart.end() - 1);
  for (uint32_t i = 0; i < numItems; ++i)
    for (uint32_t s = secLo[i]; s < secHi[i]; ++s)
      members[fill[s]++] = i;
  // Two buffers conflict iff their section ranges intersect (every
  // conflicting pair shares a section, and a section is a set of buffers
  // live at one step).
  std::vector<std::vector<uint32_t>> lists(numItems);
  std::vector<uint32_t> byStart(numItems);
  for (uint32_t i = 0; i < numItems; ++i)
    byStart[i] = i;
  std::sort(byStart.begin(), byStart.end(), [&](uint32_t a, uint32_t b) {
    return secLo[a] != secLo[b] ? secLo[a] < secLo[b] : a < b;
  });
  for (size_t x = 0; x < numItems; ++x)
    for (size_t y = x + 1;
         y < numItems && secLo[byStart[y]] < secHi[byStart[x]]; ++y) {
      lists[byStart[x]].push_back(byStart[y]);
      lists[byStart[y]].push_back(byStart[x]);
    }
  overlapStart.assign(numItems + 1, 0);
  for (uint32_t i = 0; i < numItems; ++i) {
    overlapStart[i + 1] = overlapStart[i] + lists[i].size();
    overlaps.insert(overlaps.end(), lists[i].begin(), lists[i].end());
  }
  witness.assign(numSections, 0);
  for (uint32_t s = 0; s < numSections; ++s)
    witness[s] = members[memberStart[s]];
}

Outcome CanonicalSearch::solve(uint64_t newCapacity, WorkBudget &newBudget) {
  capacity = newCapacity;
  budget = &newBudget;
  for (uint64_t t : initialTotal)
    if (t > capacity)
      return Outcome::NotFound;
  // Round robin over the preorders with doubling node limits: whichever
  // preorder suits the instance finishes early, at most a constant factor
  // after it would have alone.
  uint64_t nodeLimit = std::max<uint64_t>(numItems, 16);
  unsigned rotation = seed % 3;
  while (true) {
    nodeLimit *= 2;
    for (unsigned k = 0; k < 3; ++k) {
      preorder = kPreorders[(k + rotation) % 3];
      nodesLeft = nodeLimit;
      Outcome outcome = solveOnce();
      if (outcome != Outcome::Aborted)
        return outcome;
      if (budget->exhausted())
        return Outcome::Aborted;
    }
  }
}

Outcome CanonicalSearch::solveOnce() {
  offset.assign(numItems, kUnplaced);
  minOffset.assign(numItems, 0);
  floor.assign(numSections, 0);
  total = initialTotal;
  cuts = initialCuts;
  minTrail.clear();
  floorTrail.clear();
  solution.assign(numItems, 0);
  pendingWork = 0;
  std::vector<uint32_t> all(numItems), cutpoints;
  for (uint32_t i = 0; i < numItems; ++i)
    all[i] = i;
  for (uint32_t s = 0; s + 1 < numSections; ++s)
    if (cuts[s] == 0)
      cutpoints.push_back(s + 1);
  cutpoints.insert(cutpoints.begin(), 0);
  cutpoints.push_back(numSections);
  return solveRanges(all, cutpoints);
}

/// Solves the unplaced candidates as independent subproblems, one per range
/// of sections between consecutive cutpoints.
Outcome CanonicalSearch::solveRanges(const std::vector<uint32_t> &candidates,
                                     std::vector<uint32_t> &cutpoints) {
  for (size_t c = 1; c < cutpoints.size(); ++c) {
    uint32_t lo = cutpoints[c - 1], hi = cutpoints[c];
    std::vector<uint32_t> items;
    for (uint32_t i : candidates)
      if (offset[i] == kUnplaced && secLo[i] < hi && secHi[i] > lo)
        items.push_back(i);
    if (items.empty())
      continue;
    Outcome outcome = solveSubproblem(std::move(items), lo, hi);
    if (outcome != Outcome::Found)
      return outcome;
  }
  return Outcome::Found;
}

Outcome CanonicalSearch::solveSubproblem(std::vector<uint32_t> items,
                                         uint32_t secBegin, uint32_t secEnd) {
  std::vector<uint64_t> crowd(numItems, 0);
  for (uint32_t i : items)
    for (uint32_t s = secLo[i]; s < secHi[i]; ++s)
      crowd[i] = std::max(crowd[i], total[s]);
  auto key = [&](uint32_t i, char rule) -> double {
    switch (rule) {
    case 'W':
      return double(lifetime[i]);
    case 'A':
      return area[i];
    default:
      return double(crowd[i]);
    }
  };
  const char *rules = preorder == Preorder::WAT   ? "WAT"
                      : preorder == Preorder::TAW ? "TAW"
                                                  : "TWA";
  std::sort(items.begin(), items.end(), [&](uint32_t a, uint32_t b) {
    for (const char *rule = rules; *rule; ++rule) {
      double ka = key(a, *rule), kb = key(b, *rule);
      if (ka != kb)
        return ka > kb;
    }
    return tieKey[a] != tieKey[b] ? tieKey[a] < tieKey[b] : a < b;
  });
  Subproblem sub{std::move(items), secBegin, secEnd};
  std::vector<Candidate> order(sub.items.size());
  for (uint32_t k = 0; k < order.size(); ++k)
    order[k] = {0, k, sub.items[k]};
  return search(sub, order, 0, 0);
}

Outcome CanonicalSearch::search(const Subproblem &sub,
                                const std::vector<Candidate> &prev,
                                uint64_t lastOffset, uint32_t lastPre) {
  if (nodesLeft == 0)
    return Outcome::Aborted;
  --nodesLeft;
  std::vector<Candidate> order(prev.size());
  size_t count = 0;
  for (const Candidate &candidate : prev)
    if (offset[candidate.item] == kUnplaced)
      order[count++] = {minOffset[candidate.item], candidate.pre,
                        candidate.item};
  order.resize(count);
  pendingWork += kNodeWork + 2 * prev.size();
  if (!budget->charge(pendingWork))
    return Outcome::Aborted;
  pendingWork = 0;
  if (order.empty()) {
    for (uint32_t i : sub.items)
      solution[i] = offset[i];
    return Outcome::Found;
  }
  // The previous order is almost sorted (only conflicting buffers moved up),
  // which insertion sort handles in near-linear time.
  for (size_t k = 1; k < order.size(); ++k) {
    Candidate value = order[k];
    size_t j = k;
    for (; j > 0 && value < order[j - 1]; --j)
      order[j] = order[j - 1];
    order[j] = value;
    pendingWork += k - j;
  }
  uint64_t crowded = 0;
  for (uint32_t s = sub.secBegin; s < sub.secEnd; ++s)
    crowded = std::max(crowded, total[s]);
  pendingWork += sub.secEnd - sub.secBegin;
  uint64_t minHeight = kUnplaced;
  for (const Candidate &candidate : order)
    minHeight = std::min(minHeight, candidate.offset + size[candidate.item]);
  for (const Candidate &candidate : order) {
    // Dominance: placing here would strand a hole below minHeight that the
    // buffer defining minHeight fits in; the order is sorted, so stop.
    if (candidate.offset >= minHeight)
      break;
    // Canonical order: offsets (then preorder positions) never decrease.
    if (candidate.offset < lastOffset ||
        (candidate.offset == lastOffset && candidate.pre < lastPre))
      continue;
    // Every later buffer of the subproblem goes at or above this offset, so
    // the most crowded section must fit above it. (Floors are already known
    // to fit: the parent's fits() checked them.)
    if (candidate.offset + crowded > capacity)
      break;
    uint32_t i = candidate.item;
    if (candidate.offset + size[i] > capacity)
      continue;
    pendingWork += kCandidateWork;
    size_t minMark = minTrail.size(), floorMark = floorTrail.size();
    bool hatless = place(i, candidate.offset);
    Outcome outcome = Outcome::NotFound;
    if (fits(sub, candidate.offset))
      outcome = decompose(sub, order, candidate.offset, candidate.pre, i);
    unplace(i, minMark, floorMark);
    if (outcome != Outcome::NotFound)
      return outcome;
    // A buffer that conflicts with no unplaced buffer constrains nobody: if
    // the rest fails with it placed at its lowest offset, it fails anyway.
    if (hatless)
      break;
  }
  return Outcome::NotFound;
}

Outcome CanonicalSearch::decompose(const Subproblem &sub,
                                   const std::vector<Candidate> &order,
                                   uint64_t at, uint32_t pre, uint32_t item) {
  solution[item] = at;
  std::vector<uint32_t> cutpoints;
  for (uint32_t s = secLo[item]; s + 1 < secHi[item]; ++s)
    if (--cuts[s] == 0)
      cutpoints.push_back(s + 1);
  Outcome outcome;
  if (cutpoints.empty()) {
    outcome = search(sub, order, at, pre);
  } else {
    cutpoints.insert(cutpoints.begin(), sub.secBegin);
    cutpoints.push_back(sub.secEnd);
    outcome = solveRanges(sub.items, cutpoints);
  }
  for (uint32_t s = secLo[item]; s + 1 < secHi[item]; ++s)
    ++cuts[s];
  return outcome;
}

/// Places item at offset; returns true if no unplaced buffer conflicts
/// with it.
bool CanonicalSearch::place(uint32_t item, uint64_t at) {
  offset[item] = at;
  uint64_t height = at + size[item];
  bool hatless = true;
  for (uint32_t k = overlapStart[item]; k < overlapStart[item + 1]; ++k) {
    uint32_t other = overlaps[k];
    if (offset[other] != kUnplaced)
      continue;
    hatless = false;
    if (minOffset[other] >= height)
      continue;
    minTrail.push_back({other, minOffset[other]});
    minOffset[other] = alignUp(height, align[other]);
  }
  for (uint32_t s = secLo[item]; s < secHi[item]; ++s) {
    floorTrail.push_back({s, floor[s]});
    floor[s] = height;
    total[s] -= size[item];
  }
  pendingWork +=
      overlapStart[item + 1] - overlapStart[item] + (secHi[item] - secLo[item]);
  return hatless;
}

void CanonicalSearch::unplace(uint32_t item, size_t minMark, size_t floorMark) {
  while (floorTrail.size() > floorMark) {
    floor[floorTrail.back().first] = floorTrail.back().second;
    floorTrail.pop_back();
  }
  while (minTrail.size() > minMark) {
    minOffset[minTrail.back().first] = minTrail.back().second;
    minTrail.pop_back();
  }
  for (uint32_t s = secLo[item]; s < secHi[item]; ++s)
    total[s] += size[item];
  offset[item] = kUnplaced;
}

/// Inference: every later placement in this subproblem is at or above
/// offset, and no unplaced member of a section can go below the lowest of
/// their minimum offsets, so each section still needs
/// max(offset, floor, lowest minimum offset) + total bytes. The last member
/// found low enough is remembered per section, which usually settles the
/// scan in one probe.
bool CanonicalSearch::fits(const Subproblem &sub, uint64_t at) {
  for (uint32_t s = sub.secBegin; s < sub.secEnd; ++s) {
    if (total[s] == 0)
      continue;
    uint64_t threshold = total[s] > capacity ? 0 : capacity - total[s];
    if (total[s] > capacity || at > threshold || floor[s] > threshold) {
      pendingWork += s - sub.secBegin;
      return false;
    }
    uint32_t w = witness[s];
    if (offset[w] == kUnplaced && minOffset[w] <= threshold)
      continue;
    bool low = false;
    for (uint32_t k = memberStart[s]; k < memberStart[s + 1]; ++k) {
      uint32_t j = members[k];
      if (offset[j] == kUnplaced && minOffset[j] <= threshold) {
        witness[s] = j;
        low = true;
        pendingWork += k - memberStart[s];
        break;
      }
    }
    if (!low) {
      pendingWork += s - sub.secBegin + memberStart[s + 1] - memberStart[s];
      return false;
    }
  }
  pendingWork += sub.secEnd - sub.secBegin;
  return true;
}

//===----------------------------------------------------------------------===//
// Capacity schedule
//===----------------------------------------------------------------------===//

/// Whether every section of the partition is exactly full at capacity.
static bool isZeroSlack(const Problem &problem, uint32_t part,
                        uint64_t capacity) {
  for (uint32_t s = problem.partSecBegin[part]; s < problem.partSecEnd[part];
       ++s)
    if (problem.sectionTotal[s] != capacity)
      return false;
  return true;
}

/// Work of one polishing attempt (about a quarter of a second of the time
/// limit at kWorkUnitsPerSecond).
constexpr uint64_t kPolishWork = 150'000'000;

/// Tilings (partitions exactly full at their own bound) that the searches
/// could not pack at that bound: the finished partial state of a failed
/// skyline search above the bound varies widely with the seed and the
/// target (on the bench's tiling-750 from 4.5 % to 10 % above the bound at
/// 1.5e8 work each), so what the bisection left, less a quarter kept for
/// the order search, goes to short attempts with fresh seeds at targets
/// just below the arena and 3/4 and 1/2 of the way down to the bound, each
/// on the partition that sets the arena, keeping whatever lowers it.
static void polishTilings(const Problem &problem, Packing &best,
                          std::vector<uint64_t> &arena,
                          const std::vector<bool> &uniform,
                          const std::vector<uint64_t> &partPeak,
                          WorkBudget &budget, uint64_t seed) {
  uint64_t reserve = budget.remaining() / 8;
  for (uint64_t round = 0;
       !budget.checkDeadline() && budget.remaining() > reserve; ++round) {
    uint32_t part = uint32_t(std::max_element(arena.begin(), arena.end()) -
                             arena.begin());
    const std::vector<uint32_t> &items = problem.partItems[part];
    if (!uniform[part] || items.size() > kMaxSearchItems ||
        arena[part] <= partPeak[part] + 1)
      return;
    uint64_t above = arena[part] - partPeak[part];
    uint64_t target = round % 2 == 0 ? arena[part] - 1
                                     : partPeak[part] + above / 8 * 7;
    target = std::max(target, partPeak[part] + 1);
    uint64_t given = std::min(kPolishWork, budget.remaining() - reserve);
    WorkBudget attempt = budget.split(given);
    std::vector<uint64_t> local, partial;
    uint64_t attemptSeed = seed ^ (0x9e3779b97f4a7c15ULL * (round + 1));
    if (packBySkylineSearch(problem, part, target, attempt, attemptSeed, local,
                            &partial))
      partial = std::move(local);
    budget.settle(attempt, given);
    if (partial.empty())
      continue;
    uint64_t top = 0;
    for (uint32_t k = 0; k < items.size(); ++k)
      top = std::max(top, partial[k] + problem.items[items[k]].size);
    if (top >= arena[part])
      continue;
    for (uint32_t k = 0; k < items.size(); ++k)
      best.offsets[items[k]] = partial[k];
    arena[part] = top;
    best.arena = *std::max_element(arena.begin(), arena.end());
  }
}

void planner::improveBySearch(const Problem &problem, Packing &best,
                              WorkBudget &budget, uint64_t seed) {
  size_t numParts = problem.partItems.size();
  std::vector<uint64_t> arena(numParts), failedAt(numParts, 0);
  uint64_t lo = problem.lowerBound;
  // Per partition: its own bound, and whether every section reaches it (a
  // tiling, packed with no byte to spare at that bound).
  std::vector<uint64_t> partPeak(numParts, 0);
  std::vector<bool> uniform(numParts);
  for (uint32_t part = 0; part < numParts; ++part) {
    arena[part] = partitionArena(problem, best, part);
    for (uint32_t s = problem.partSecBegin[part]; s < problem.partSecEnd[part];
         ++s)
      partPeak[part] = std::max(partPeak[part], problem.sectionTotal[s]);
    uniform[part] = isZeroSlack(problem, part, partPeak[part]);
  }
  if (best.arena == 0)
    return;
  uint64_t hi = best.arena - 1;
  std::vector<std::unique_ptr<CanonicalSearch>> searches(numParts);
  bool first = true;
  // The clock is read at every attempt too: an attempt that gives up at
  // once (a hopeless target) charges almost nothing.
  while (lo <= hi && !budget.checkDeadline()) {
    // The bound itself is the likeliest target, so it gets most of the
    // budget; bisection steps then get a third of what is left each.
    uint64_t target = first ? lo : lo + (hi - lo) / 2;
    uint64_t share =
        first ? budget.remaining() / 5 * 3 : budget.remaining() / 3;
    share = std::max<uint64_t>(share, 1);
    first = false;
    WorkBudget attempt = budget.split(share);
    bool feasible = true;
    for (uint32_t part = 0; part < numParts && feasible; ++part) {
      if (arena[part] <= target)
        continue;
      if (failedAt[part] >= target) {
        feasible = false;
        break;
      }
      // The skyline search first where it is sharp (zero slack) or the only
      // search that scales (partitions above kMaxSearchItems), then the
      // canonical search where the partition is small enough for it, with
      // what is left.
      std::vector<uint64_t> local;
      bool small = problem.partItems[part].size() <= kMaxSearchItems;
      bool found = false;
      // Above the bound of a tiling (which the zero-slack search failed to
      // reach) every section has the same slack: the skyline search with
      // waste, or the most complete state it reaches finished greedily,
      // gets far closer than the canonical search, which gets the rest.
      bool tiled = small && uniform[part] && target > partPeak[part];
      if (!small || tiled || isZeroSlack(problem, part, target)) {
        // At zero slack the canonical search, which branches over every
        // buffer that could come next, rarely succeeds: the skyline search
        // gets nearly everything.
        uint64_t given = !small  ? attempt.remaining()
                         : tiled ? attempt.remaining() / 4 * 3
                                 : attempt.remaining() / 20 * 19;
        WorkBudget skyline = attempt.split(given);
        std::vector<uint64_t> partial;
        found = packBySkylineSearch(problem, part, target, skyline, seed,
                                    local, &partial);
        attempt.settle(skyline, given);
        // A failed search's deepest state, finished greedily, is often
        // close to the bound: keep it if it beats what the partition has.
        if (!found && !partial.empty()) {
          const std::vector<uint32_t> &items = problem.partItems[part];
          uint64_t top = 0;
          for (uint32_t k = 0; k < items.size(); ++k)
            top = std::max(top, partial[k] + problem.items[items[k]].size);
          if (top < arena[part]) {
            for (uint32_t k = 0; k < items.size(); ++k)
              best.offsets[items[k]] = partial[k];
            arena[part] = top;
          }
        }
      }
      if (!found && small && !attempt.exhausted()) {
        if (!searches[part])
          searches[part] =
              std::make_unique<CanonicalSearch>(problem, part, seed);
        found = searches[part]->solve(target, attempt) == Outcome::Found;
        if (found)
          local = searches[part]->getSolution();
      }
      if (!found) {
        failedAt[part] = target;
        feasible = false;
        break;
      }
      const std::vector<uint32_t> &items = problem.partItems[part];
      arena[part] = 0;
      for (uint32_t k = 0; k < items.size(); ++k) {
        best.offsets[items[k]] = local[k];
        arena[part] =
            std::max(arena[part], local[k] + problem.items[items[k]].size);
      }
    }
    budget.settle(attempt, share);
    // Even a failed attempt may have shrunk some partitions.
    best.arena = *std::max_element(arena.begin(), arena.end());
    hi = std::min(hi, best.arena - 1);
    if (!feasible)
      lo = target + 1;
  }
  if (best.arena > problem.lowerBound)
    polishTilings(problem, best, arena, uniform, partPeak, budget, seed);
}
