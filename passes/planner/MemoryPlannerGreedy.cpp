//===- MemoryPlannerGreedy.cpp - Greedy packing in O(n log n) -------------===//
//
// The greedy strategies: items are placed one by one in a fixed order, each
// at the lowest (first fit) or tightest (best fit) hole left by the items
// already placed that it conflicts with.
//
// Finding those holes must not scan every placed item (training graphs have
// tens of thousands of buffers, many live across the whole step). Placed
// items go into a segment tree over the sweep's sections: two items conflict
// iff their section ranges intersect, and a range [lo, hi) splits into
// O(log S) canonical nodes. Each node keeps two sets of merged address
// ranges: `own`, the items one of whose canonical nodes it is, and `sub`,
// the items with a canonical node anywhere in its subtree. The placed items
// conflicting with a query are then exactly those in `sub` of its canonical
// nodes and in `own` of their proper ancestors, so the union of O(log S)
// sets is the busy address space, and holes are found by leapfrogging over
// those sets. Merging touching ranges keeps the sets small on good packings.
//
// Invariant: up to kLargeProblemItems items the offset chosen is the one the
// textbook scan (sort the conflicting byte ranges, walk the gaps) would
// choose, so the plans equal those of the O(n^2) formulation (the unit tests
// compare them). Above, best fit compares only the first few holes that hold
// the item, and first fit jumps over at most kApproximateFirstFitMoves busy
// ranges before it puts the item on top. The cost of a query is O(log S)
// set look-ups plus the busy ranges it steps over, which grows on
// fragmented packings: uncapped, first fit by size took about 1.4 s CPU at
// 20,000 training buffers and 7 s at 40,000; capped, about 1 s and 2 s at
// 20,000 and 50,000, within 0.1 % of the uncapped arena. The skyline greedy
// (runSkyline) is the one with a hard O(n log n) bound.
//
// Every greedy checks the deadline every kDeadlineStride placements and gives
// up (returns false) when it has passed; the driver then keeps what it has.
// Above kLargeProblemItems the hole-filling greedies instead finish with the
// skyline rule (a range-maximum tree of the tops kept alongside), so a
// loaded machine still gets most of the slow greedy's quality.
//
// References: the orders are those of the TFLite arena planner and XLA's
// heap simulator (size), TelaMalloc and MiniMalloc's preorders (lifetime,
// area, contention) and idealloc's observation that several cheap orders
// beat one clever one on real traces.
//
//===----------------------------------------------------------------------===//
#include "passes/planner/MemoryPlannerInternal.h"

#include "llvm/Support/MathExtras.h"

#include <limits>
#include <map>
#include <optional>

using namespace snug;
using namespace snug::planner;

namespace {

uint64_t alignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) & ~(align - 1);
}

uint64_t lifetime(const Item &item) {
  return uint64_t(item.last) - uint64_t(item.first) + 1;
}

/// On large problems (kLargeProblemItems) the number of holes that hold the item it compares.
constexpr uint64_t kApproximateBestFitHoles = 8;
/// On large problems, how many busy ranges first fit may jump over before
/// it settles for the top (a fragmented packing otherwise makes one query
/// walk hundreds of ranges in each of its O(log S) sets).
constexpr uint64_t kApproximateFirstFitMoves = 512;

/// Disjoint, non-touching half-open address ranges, begin -> end.
using RangeSet = std::map<uint64_t, uint64_t>;

void insertRange(RangeSet &set, uint64_t begin, uint64_t end) {
  auto it = set.upper_bound(begin);
  if (it != set.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= begin) {
      begin = prev->first;
      end = std::max(end, prev->second);
      set.erase(prev);
    }
  }
  while (it != set.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = set.erase(it);
  }
  set.emplace(begin, end);
}

/// The placed items, indexed by section range (see the file comment).
class PlacedItems {
public:
  explicit PlacedItems(size_t numSections) {
    leaves = 1;
    while (leaves < std::max<size_t>(numSections, 1))
      leaves *= 2;
    own.resize(2 * leaves);
    sub.resize(2 * leaves);
    stamp.assign(2 * leaves, 0);
  }

  /// Records [begin, end) as busy over sections [lo, hi).
  void insert(uint32_t lo, uint32_t hi, uint64_t begin, uint64_t end) {
    ++epoch;
    forEachCanonical(lo, hi, [&](size_t node) {
      insertRange(own[node], begin, end);
      for (size_t up = node; up && stamp[up] != epoch; up >>= 1) {
        stamp[up] = epoch;
        insertRange(sub[up], begin, end);
      }
    });
  }

  /// Collects the non-empty sets whose union is the busy space over
  /// sections [lo, hi).
  void gather(uint32_t lo, uint32_t hi, std::vector<const RangeSet *> &sets) {
    sets.clear();
    ++epoch;
    forEachCanonical(lo, hi, [&](size_t node) {
      if (!sub[node].empty())
        sets.push_back(&sub[node]);
      stamp[node] = epoch;
    });
    forEachCanonical(lo, hi, [&](size_t node) {
      for (size_t up = node >> 1; up && stamp[up] != epoch; up >>= 1) {
        stamp[up] = epoch;
        if (!own[up].empty())
          sets.push_back(&own[up]);
      }
    });
  }

private:
  template <typename Fn> void forEachCanonical(uint32_t lo, uint32_t hi, Fn fn) {
    for (size_t l = lo + leaves, r = hi + leaves; l < r; l >>= 1, r >>= 1) {
      if (l & 1)
        fn(l++);
      if (r & 1)
        fn(--r);
    }
  }

  size_t leaves;
  std::vector<RangeSet> own, sub;
  std::vector<uint64_t> stamp;
  uint64_t epoch = 0;
};

/// The lowest x in {alignUp(gap start)} with [x, x + size) free: every
/// move jumps past a busy range, so x only grows. The sets are visited round
/// robin until all of them have been checked since the last move.
uint64_t firstFit(const std::vector<const RangeSet *> &sets, uint64_t size,
                  uint64_t align, uint64_t maxMoves) {
  uint64_t x = 0, moves = 0;
  size_t k = sets.size(), checkedSinceMove = 0;
  for (size_t s = 0; checkedSinceMove < k; s = s + 1 == k ? 0 : s + 1) {
    const RangeSet &set = *sets[s];
    auto it = set.upper_bound(x);
    if (it != set.begin() && std::prev(it)->second > x)
      --it;
    bool moved = false;
    // Ranges are sorted and disjoint: walk them with the iterator.
    while (it != set.end() && it->first < x + size) {
      if (it->second > x) {
        x = alignUp(it->second, align);
        moved = true;
      }
      ++it;
    }
    checkedSinceMove = moved ? 1 : checkedSinceMove + 1;
    // Past the allowance (large problems only) the item goes on top of
    // everything it conflicts with, as the skyline greedy would put it.
    if (moved && ++moves > maxMoves) {
      uint64_t top = 0;
      for (const RangeSet *busy : sets)
        if (!busy->empty())
          top = std::max(top, std::prev(busy->end())->second);
      return alignUp(top, align);
    }
  }
  return x;
}

/// The smallest gap of the union that holds the item aligned (lowest on
/// ties) among the first maxFitting gaps that hold it; the top of the union
/// when none does. Each set keeps an iterator to its first range ending
/// above x, which only moves forward as x climbs the gaps.
uint64_t bestFit(const std::vector<const RangeSet *> &sets, uint64_t size,
                 uint64_t align, uint64_t maxFitting) {
  size_t k = sets.size();
  std::vector<RangeSet::const_iterator> pos(k);
  for (size_t s = 0; s < k; ++s)
    pos[s] = sets[s]->begin();
  uint64_t x = 0, bestOffset = 0, fitting = 0;
  uint64_t bestHole = std::numeric_limits<uint64_t>::max();
  bool found = false;
  while (true) {
    // Move x out of every busy range.
    size_t checkedSinceMove = 0;
    for (size_t s = 0; k && checkedSinceMove < k; s = s + 1 == k ? 0 : s + 1) {
      auto &it = pos[s];
      while (it != sets[s]->end() && it->second <= x)
        ++it;
      if (it != sets[s]->end() && it->first <= x) {
        x = it->second;
        checkedSinceMove = 1;
      } else {
        ++checkedSinceMove;
      }
    }
    uint64_t gapEnd = std::numeric_limits<uint64_t>::max();
    for (size_t s = 0; s < k; ++s) {
      auto &it = pos[s];
      while (it != sets[s]->end() && it->second <= x)
        ++it;
      // No range contains x now, so this one starts above it.
      if (it != sets[s]->end())
        gapEnd = std::min(gapEnd, it->first);
    }
    if (gapEnd == std::numeric_limits<uint64_t>::max())
      break; // x is the top of everything placed
    uint64_t candidate = alignUp(x, align);
    if (candidate < gapEnd && gapEnd - candidate >= size) {
      if (gapEnd - x < bestHole) {
        bestHole = gapEnd - x;
        bestOffset = candidate;
        found = true;
        if (bestHole == size)
          break; // nothing can be tighter
      }
      if (++fitting == maxFitting)
        break;
    }
    x = gapEnd;
  }
  return found ? bestOffset : alignUp(x, align);
}

std::vector<uint32_t> identityOrder(size_t n) {
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i)
    order[i] = i;
  return order;
}

/// Sorts by descending keys, then id, then input position.
template <typename Key>
std::vector<uint32_t> sortDescending(const Problem &problem, Key key) {
  std::vector<uint32_t> order = identityOrder(problem.items.size());
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    auto ka = key(a), kb = key(b);
    if (ka != kb)
      return ka > kb;
    if (problem.items[a].id != problem.items[b].id)
      return problem.items[a].id < problem.items[b].id;
    return a < b;
  });
  return order;
}

/// Per item, the largest section total over its lifetime (sparse table).
std::vector<uint64_t> computeBreadth(const Problem &problem) {
  size_t numSections = problem.sectionTotal.size();
  std::vector<std::vector<uint64_t>> table{problem.sectionTotal};
  for (size_t width = 2; width <= numSections; width *= 2) {
    const std::vector<uint64_t> &prev = table.back();
    std::vector<uint64_t> next(numSections - width + 1);
    for (size_t s = 0; s < next.size(); ++s)
      next[s] = std::max(prev[s], prev[s + width / 2]);
    table.push_back(std::move(next));
  }
  std::vector<uint64_t> breadth(problem.items.size());
  for (uint32_t i = 0; i < problem.items.size(); ++i) {
    uint32_t lo = problem.secBegin[i], hi = problem.secEnd[i];
    unsigned level = llvm::Log2_64(hi - lo);
    breadth[i] = std::max(table[level][lo], table[level][hi - (1u << level)]);
  }
  return breadth;
}

/// Per item, the number of items it conflicts with: all but those whose
/// section range ends before its own begins or begins after its own ends.
std::vector<uint64_t> computeDegree(const Problem &problem) {
  size_t n = problem.items.size();
  std::vector<uint32_t> begins(problem.secBegin), ends(problem.secEnd);
  std::sort(begins.begin(), begins.end());
  std::sort(ends.begin(), ends.end());
  std::vector<uint64_t> degree(n);
  for (uint32_t i = 0; i < n; ++i) {
    size_t endedBefore =
        std::upper_bound(ends.begin(), ends.end(), problem.secBegin[i]) -
        ends.begin();
    size_t startedAfter =
        begins.end() -
        std::lower_bound(begins.begin(), begins.end(), problem.secEnd[i]);
    degree[i] = n - endedBefore - startedAfter;
  }
  return degree;
}

/// Per section, the top of everything placed there: range maximum and range
/// assignment with lazy propagation, O(log S) each.
class Skyline {
public:
  explicit Skyline(size_t numSections) {
    leaves = 1;
    while (leaves < std::max<size_t>(numSections, 1))
      leaves *= 2;
    top.assign(2 * leaves, 0);
    pending.assign(2 * leaves, kNone);
  }
  uint64_t max(uint32_t lo, uint32_t hi) { return query(1, 0, leaves, lo, hi); }
  void raise(uint32_t lo, uint32_t hi, uint64_t value) {
    assign(1, 0, leaves, lo, hi, value);
  }

private:
  static constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
  void push(size_t node) {
    if (pending[node] == kNone)
      return;
    for (size_t child : {2 * node, 2 * node + 1}) {
      top[child] = pending[node];
      pending[child] = pending[node];
    }
    pending[node] = kNone;
  }
  uint64_t query(size_t node, size_t l, size_t r, uint32_t lo, uint32_t hi) {
    if (hi <= l || r <= lo)
      return 0;
    if (lo <= l && r <= hi)
      return top[node];
    push(node);
    size_t mid = (l + r) / 2;
    return std::max(query(2 * node, l, mid, lo, hi),
                    query(2 * node + 1, mid, r, lo, hi));
  }
  void assign(size_t node, size_t l, size_t r, uint32_t lo, uint32_t hi,
              uint64_t value) {
    if (hi <= l || r <= lo)
      return;
    if (lo <= l && r <= hi) {
      top[node] = value;
      pending[node] = value;
      return;
    }
    push(node);
    size_t mid = (l + r) / 2;
    assign(2 * node, l, mid, lo, hi, value);
    assign(2 * node + 1, mid, r, lo, hi, value);
    top[node] = std::max(top[2 * node], top[2 * node + 1]);
  }
  size_t leaves;
  std::vector<uint64_t> top, pending;
};

/// Per section, the top of everything placed there, when items may also go
/// below it (into holes): range "raise to at least" and range maximum, with
/// tags that only grow, O(log S) each.
class TopTree {
public:
  explicit TopTree(size_t numSections) {
    leaves = 1;
    while (leaves < std::max<size_t>(numSections, 1))
      leaves *= 2;
    top.assign(2 * leaves, 0);
    tag.assign(2 * leaves, 0);
  }
  uint64_t max(uint32_t lo, uint32_t hi) const {
    return query(1, 0, leaves, lo, hi);
  }
  void lift(uint32_t lo, uint32_t hi, uint64_t value) {
    update(1, 0, leaves, lo, hi, value);
  }

private:
  uint64_t query(size_t v, size_t l, size_t r, uint32_t lo,
                 uint32_t hi) const {
    if (hi <= l || r <= lo)
      return 0;
    if (lo <= l && r <= hi)
      return top[v];
    size_t mid = (l + r) / 2;
    // The tag covers all of v's range, so the overlapping part too.
    return std::max({tag[v], query(2 * v, l, mid, lo, hi),
                     query(2 * v + 1, mid, r, lo, hi)});
  }
  void update(size_t v, size_t l, size_t r, uint32_t lo, uint32_t hi,
              uint64_t value) {
    if (hi <= l || r <= lo)
      return;
    if (lo <= l && r <= hi) {
      top[v] = std::max(top[v], value);
      tag[v] = std::max(tag[v], value);
      return;
    }
    size_t mid = (l + r) / 2;
    update(2 * v, l, mid, lo, hi, value);
    update(2 * v + 1, mid, r, lo, hi, value);
    top[v] = std::max({tag[v], top[2 * v], top[2 * v + 1]});
  }
  size_t leaves;
  std::vector<uint64_t> top, tag;
};

} // namespace

bool planner::runSkyline(const Problem &problem,
                         const std::vector<uint32_t> &order,
                         Clock::time_point deadline, Packing &packing) {
  // Valid because an item goes above the top of every section it spans, and
  // every placed item it conflicts with shares one of those sections.
  const std::vector<Item> &items = problem.items;
  packing.offsets.assign(items.size(), 0);
  packing.arena = 0;
  Skyline skyline(problem.sectionTotal.size());
  uint32_t count = 0;
  for (uint32_t i : order) {
    if (++count % kDeadlineStride == 0 && Clock::now() >= deadline)
      return false;
    const Item &item = items[i];
    uint32_t lo = problem.secBegin[i], hi = problem.secEnd[i];
    uint64_t offset = alignUp(skyline.max(lo, hi), item.align);
    skyline.raise(lo, hi, offset + item.size);
    packing.offsets[i] = offset;
    packing.arena = std::max(packing.arena, offset + item.size);
  }
  return true;
}

bool planner::runGreedy(const Problem &problem,
                        const std::vector<uint32_t> &order, GreedyFit fit,
                        Clock::time_point deadline, Packing &packing) {
  if (fit == GreedyFit::Top)
    return runSkyline(problem, order, deadline, packing);
  const std::vector<Item> &items = problem.items;
  packing.offsets.assign(items.size(), 0);
  packing.arena = 0;
  PlacedItems placed(problem.sectionTotal.size());
  // The holes of the union grow with the number of conflicting items, so on
  // large problems best fit looks at the first few holes that hold the item
  // only; small problems (every recorded trace) get the exact rule.
  uint64_t maxFitting = items.size() > kLargeProblemItems
                            ? kApproximateBestFitHoles
                            : std::numeric_limits<uint64_t>::max();
  uint64_t maxMoves = items.size() > kLargeProblemItems
                          ? kApproximateFirstFitMoves
                          : std::numeric_limits<uint64_t>::max();
  // On large problems a greedy that runs out of time does not throw its
  // work away: the items left go on top of everything they conflict with
  // (the skyline rule, O(log S) each), so the packing is finished within
  // about a tenth of a second even at 60,000 buffers and still fills the
  // holes its first part found. Small problems keep the all-or-nothing
  // rule (and the textbook's offsets).
  bool large = items.size() > kLargeProblemItems;
  std::optional<TopTree> tops;
  if (large)
    tops.emplace(problem.sectionTotal.size());
  bool late = false;
  std::vector<const RangeSet *> sets;
  uint32_t count = 0;
  for (uint32_t i : order) {
    const Item &item = items[i];
    if (!late && ++count % kDeadlineStride == 0 && Clock::now() >= deadline) {
      if (!large)
        return false;
      late = true;
    }
    if (late) {
      uint32_t lo = problem.secBegin[i], hi = problem.secEnd[i];
      uint64_t offset = alignUp(tops->max(lo, hi), item.align);
      tops->lift(lo, hi, offset + item.size);
      packing.offsets[i] = offset;
      packing.arena = std::max(packing.arena, offset + item.size);
      continue;
    }
    placed.gather(problem.secBegin[i], problem.secEnd[i], sets);
    uint64_t offset = fit == GreedyFit::First
                          ? firstFit(sets, item.size, item.align, maxMoves)
                          : bestFit(sets, item.size, item.align, maxFitting);
    packing.offsets[i] = offset;
    packing.arena = std::max(packing.arena, offset + item.size);
    placed.insert(problem.secBegin[i], problem.secEnd[i], offset,
                  offset + item.size);
    if (large)
      tops->lift(problem.secBegin[i], problem.secEnd[i], offset + item.size);
  }
  return true;
}

std::vector<uint32_t> planner::makeGreedyOrder(const Problem &problem,
                                               GreedyOrder kind) {
  const std::vector<Item> &items = problem.items;
  switch (kind) {
  case GreedyOrder::Size:
    // Big, long-lived buffers first leave holes the many small ones fill.
    return sortDescending(problem, [&](uint32_t i) {
      return std::make_pair(items[i].size, lifetime(items[i]));
    });
  case GreedyOrder::Breadth: {
    std::vector<uint64_t> breadth = computeBreadth(problem);
    return sortDescending(problem, [&](uint32_t i) {
      return std::make_pair(breadth[i], double(items[i].size) *
                                            double(lifetime(items[i])));
    });
  }
  case GreedyOrder::Lifetime:
    // Long-lived first stacks nested lifetimes (forward activations and
    // their gradients) the way they nest.
    return sortDescending(problem, [&](uint32_t i) {
      return std::make_pair(lifetime(items[i]), items[i].size);
    });
  case GreedyOrder::Area:
    return sortDescending(problem, [&](uint32_t i) {
      return std::make_pair(double(items[i].size) * double(lifetime(items[i])),
                            items[i].size);
    });
  case GreedyOrder::Start:
    // Earliest first, longest first among equal starts: with nested
    // lifetimes every item lands on the one enclosing it.
    return sortDescending(problem, [&](uint32_t i) {
      return std::make_pair(~(uint64_t(items[i].first) ^ (uint64_t(1) << 63)),
                            lifetime(items[i]));
    });
  case GreedyOrder::SizeStart:
    // Among equal sizes (real traces have a few dozen distinct sizes) the
    // earliest start goes lowest: forward activations, saved until their
    // backward, then nest the way they are freed.
    return sortDescending(problem, [&](uint32_t i) {
      return std::make_pair(
          items[i].size, ~(uint64_t(items[i].first) ^ (uint64_t(1) << 63)));
    });
  case GreedyOrder::Degree: {
    std::vector<uint64_t> degree = computeDegree(problem);
    return sortDescending(problem, [&](uint32_t i) {
      return std::make_pair(degree[i], items[i].size);
    });
  }
  }
  return identityOrder(items.size());
}

std::vector<uint32_t> planner::movePeakFirst(const Problem &problem,
                                             const std::vector<uint32_t> &order,
                                             uint32_t window) {
  size_t numParts = problem.partItems.size();
  std::vector<uint32_t> peak(numParts);
  for (uint32_t part = 0; part < numParts; ++part) {
    uint32_t best = problem.partSecBegin[part];
    for (uint32_t s = best; s < problem.partSecEnd[part]; ++s)
      if (problem.sectionTotal[s] > problem.sectionTotal[best])
        best = s;
    peak[part] = best;
  }
  std::vector<uint32_t> first, rest;
  for (uint32_t i : order) {
    uint32_t at = peak[problem.partOf[i]];
    // Section ranges are half-open: [secBegin, secEnd) meets
    // [at - window, at + window].
    bool nearPeak = uint64_t(problem.secBegin[i]) <= uint64_t(at) + window &&
                    uint64_t(problem.secEnd[i]) + window > uint64_t(at);
    (nearPeak ? first : rest).push_back(i);
  }
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}
