//===- MemoryPlanner.cpp - Static arena packing ---------------------------===//
//
// The planner's driver: input validation, the sweep that derives sections,
// partitions and the conflict graph, the lower bound, the bump and greedy
// strategies, the Best/Search orchestration and the independent verifier.
// The canonical search itself lives in MemoryPlannerSearch.cpp.
//
// Invariants: every strategy returns a valid packing (greedies place each
// item below or between the conflicting items already placed, never over
// them); Search and Best never return anything worse than the best greedy;
// everything is ordered by (key, id, input index) so results do not depend
// on hash or pointer order.
//
// What it does not do: it does not try to prove optimality beyond reaching
// the lower bound, and it does not search partitions with more than
// kMaxSearchItems items (there the greedies are within a few percent of the
// bound and a search node would cost too much).
//
// References: TFLite's arena planner (size-ordered best fit), XLA's heap
// simulator (global decreasing-size best fit), MiniMalloc (Moffitt, ASPLOS
// 2023) and TelaMalloc (Maas et al., ASPLOS 2023).
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlanner.h"
#include "passes/MemoryPlannerInternal.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <string>

using namespace snug;
using namespace snug::planner;

namespace {

/// Sizes are capped so that an offset plus a size plus alignment padding can
/// never wrap around, whatever the packing does.
constexpr uint64_t kMaxTotalBytes = uint64_t(1) << 62;

/// Above this many conflicting pairs the conflict graph is not materialised
/// (64 MiB of indices); the greedies then test every placed item instead.
constexpr uint64_t kMaxAdjacencyPairs = uint64_t(8) << 20;

struct StrategyName {
  PlannerStrategy strategy;
  const char *name;
};

const StrategyName kStrategyNames[] = {
    {PlannerStrategy::None, "none"},
    {PlannerStrategy::GreedySize, "greedy-size"},
    {PlannerStrategy::GreedyBreadth, "greedy-breadth"},
    {PlannerStrategy::Search, "search"},
    {PlannerStrategy::Best, "best"},
};

/// One end of a live interval. Starts sort before ends at the same step
/// because intervals are closed: a buffer ending at t still conflicts with
/// one starting at t.
struct Event {
  int64_t step;
  bool isEnd;
  uint32_t item;
  bool operator<(const Event &other) const {
    if (step != other.step)
      return step < other.step;
    if (isEnd != other.isEnd)
      return !isEnd;
    return item < other.item;
  }
};

} // namespace

static uint64_t alignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) & ~(align - 1);
}

static uint64_t lifetime(const Item &item) {
  // Unsigned arithmetic: last - first can exceed INT64_MAX.
  return uint64_t(item.last) - uint64_t(item.first) + 1;
}

static bool isPowerOfTwo(uint64_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

llvm::StringRef snug::getPlannerStrategyName(PlannerStrategy strategy) {
  for (const StrategyName &entry : kStrategyNames)
    if (entry.strategy == strategy)
      return entry.name;
  return "unknown";
}

llvm::Expected<PlannerStrategy>
snug::parsePlannerStrategy(llvm::StringRef name) {
  std::string valid;
  for (const StrategyName &entry : kStrategyNames) {
    if (name == entry.name)
      return entry.strategy;
    if (!valid.empty())
      valid += ", ";
    valid += entry.name;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown planner strategy '%s' (valid: %s)",
                                 name.str().c_str(), valid.c_str());
}

//===----------------------------------------------------------------------===//
// Sweep
//===----------------------------------------------------------------------===//

static std::vector<Event> makeEvents(const std::vector<Item> &items) {
  std::vector<Event> events;
  events.reserve(items.size() * 2);
  for (uint32_t i = 0; i < items.size(); ++i) {
    events.push_back({items[i].first, false, i});
    events.push_back({items[i].last, true, i});
  }
  std::sort(events.begin(), events.end());
  return events;
}

/// Builds the conflict graph from the sweep order: an item starting conflicts
/// with exactly the items active at that moment.
static void buildAdjacency(Problem &problem, const std::vector<Event> &events) {
  size_t n = problem.items.size();
  std::vector<uint32_t> active, position(n, 0);
  std::vector<uint32_t> degree(n, 0);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (const Event &event : events) {
    if (event.isEnd) {
      uint32_t pos = position[event.item];
      position[active.back()] = pos;
      active[pos] = active.back();
      active.pop_back();
      continue;
    }
    if (pairs.size() + active.size() > kMaxAdjacencyPairs) {
      problem.hasAdjacency = false;
      return;
    }
    for (uint32_t other : active) {
      pairs.push_back({other, event.item});
      ++degree[other];
      ++degree[event.item];
    }
    position[event.item] = active.size();
    active.push_back(event.item);
  }
  problem.adjStart.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    problem.adjStart[i + 1] = problem.adjStart[i] + degree[i];
  problem.adj.resize(problem.adjStart[n]);
  std::vector<uint32_t> fill(problem.adjStart.begin(),
                             problem.adjStart.end() - 1);
  for (auto [a, b] : pairs) {
    problem.adj[fill[a]++] = b;
    problem.adj[fill[b]++] = a;
  }
  problem.hasAdjacency = true;
}

void planner::sweepProblem(Problem &problem) {
  size_t n = problem.items.size();
  problem.secBegin.assign(n, 0);
  problem.secEnd.assign(n, 0);
  problem.partOf.assign(n, 0);
  std::vector<Event> events = makeEvents(problem.items);

  // A section is the live set at each step where something ends, emitted
  // before the first end there. Every pair of conflicting items shares one
  // (at the first end after both started). Besides the maximal cliques this
  // keeps their shrinking tails, which the search's inference check uses.
  uint64_t live = 0;
  size_t activeCount = 0;
  bool emittedHere = false;
  int64_t lastStart = 0, lastEmit = 0;
  for (const Event &event : events) {
    const Item &item = problem.items[event.item];
    if (!event.isEnd) {
      if (activeCount == 0) {
        problem.partItems.emplace_back();
        problem.partSecBegin.push_back(problem.sectionTotal.size());
        problem.partSecEnd.push_back(problem.sectionTotal.size());
      }
      problem.partItems.back().push_back(event.item);
      problem.partOf[event.item] = problem.partItems.size() - 1;
      problem.secBegin[event.item] = problem.sectionTotal.size();
      ++activeCount;
      live += item.size;
      lastStart = event.step;
      continue;
    }
    if (!emittedHere || lastEmit != event.step) {
      // The live set is constant from the later of the last start and the
      // previous emission onwards; a new maximum always follows a start.
      int64_t since =
          emittedHere ? std::max(lastStart, lastEmit + 1) : lastStart;
      problem.sectionTotal.push_back(live);
      problem.sectionStep.push_back(since);
      if (live > problem.lowerBound) {
        problem.lowerBound = live;
        problem.peakStep = since;
      }
      emittedHere = true;
      lastEmit = event.step;
    }
    problem.secEnd[event.item] = problem.sectionTotal.size();
    --activeCount;
    live -= item.size;
    if (activeCount == 0)
      problem.partSecEnd.back() = problem.sectionTotal.size();
  }
  buildAdjacency(problem, events);
}

uint64_t snug::computeLowerBound(llvm::ArrayRef<PlanBuffer> buffers,
                                 int64_t *peakStep) {
  std::vector<Item> items;
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &buffer = buffers[i];
    if (buffer.bytes == 0 || buffer.firstStep > buffer.lastStep ||
        !isPowerOfTwo(buffer.alignment))
      continue;
    items.push_back({alignUp(buffer.bytes, buffer.alignment), buffer.alignment,
                     buffer.firstStep, buffer.lastStep, buffer.id, i});
  }
  uint64_t live = 0, best = 0;
  int64_t bestStep = -1;
  for (const Event &event : makeEvents(items)) {
    if (event.isEnd) {
      live -= items[event.item].size;
      continue;
    }
    live += items[event.item].size;
    if (live > best) {
      best = live;
      bestStep = event.step;
    }
  }
  if (peakStep)
    *peakStep = bestStep;
  return best;
}

uint64_t planner::partitionArena(const Problem &problem, const Packing &packing,
                                 uint32_t part) {
  uint64_t arena = 0;
  for (uint32_t i : problem.partItems[part])
    arena = std::max(arena, packing.offsets[i] + problem.items[i].size);
  return arena;
}

//===----------------------------------------------------------------------===//
// Greedy strategies
//===----------------------------------------------------------------------===//

namespace {
enum class Fit { Best, First };
} // namespace

/// Picks an offset for an item given the byte ranges of the conflicting items
/// already placed (sorted here). Best fit takes the smallest hole that holds
/// the item (lowest on ties), first fit the lowest; both fall back to the top.
static uint64_t pickOffset(std::vector<std::pair<uint64_t, uint64_t>> &busy,
                           uint64_t size, uint64_t align, Fit fit) {
  std::sort(busy.begin(), busy.end());
  uint64_t top = 0;
  uint64_t bestOffset = 0, bestHole = std::numeric_limits<uint64_t>::max();
  bool found = false;
  for (auto [begin, end] : busy) {
    if (begin > top) {
      uint64_t candidate = alignUp(top, align);
      if (candidate < begin && begin - candidate >= size) {
        if (fit == Fit::First)
          return candidate;
        if (begin - top < bestHole) {
          bestHole = begin - top;
          bestOffset = candidate;
          found = true;
        }
      }
    }
    top = std::max(top, end);
  }
  return found ? bestOffset : alignUp(top, align);
}

static Packing runGreedy(const Problem &problem,
                         const std::vector<uint32_t> &order, Fit fit) {
  const std::vector<Item> &items = problem.items;
  Packing packing;
  packing.offsets.assign(items.size(), 0);
  std::vector<char> placed(items.size(), 0);
  std::vector<uint32_t> placedList;
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (uint32_t i : order) {
    busy.clear();
    auto consider = [&](uint32_t j) {
      busy.push_back({packing.offsets[j], packing.offsets[j] + items[j].size});
    };
    if (problem.hasAdjacency) {
      for (uint32_t k = problem.adjStart[i]; k < problem.adjStart[i + 1]; ++k)
        if (placed[problem.adj[k]])
          consider(problem.adj[k]);
    } else {
      for (uint32_t j : placedList)
        if (items[j].first <= items[i].last && items[i].first <= items[j].last)
          consider(j);
    }
    uint64_t offset = pickOffset(busy, items[i].size, items[i].align, fit);
    packing.offsets[i] = offset;
    packing.arena = std::max(packing.arena, offset + items[i].size);
    placed[i] = 1;
    placedList.push_back(i);
  }
  return packing;
}

/// Size descending, then longer lifetime, then id: big, long-lived buffers
/// first leave holes that the many small ones fill.
static Packing runGreedySize(const Problem &problem) {
  const std::vector<Item> &items = problem.items;
  std::vector<uint32_t> order(items.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Item &x = items[a], &y = items[b];
    if (x.size != y.size)
      return x.size > y.size;
    if (lifetime(x) != lifetime(y))
      return lifetime(x) > lifetime(y);
    if (x.id != y.id)
      return x.id < y.id;
    return a < b;
  });
  return runGreedy(problem, order, Fit::Best);
}

/// Breadth is the largest live total over an item's lifetime: items in the
/// most crowded sections are the ones a bad placement hurts most.
static Packing runGreedyBreadth(const Problem &problem) {
  const std::vector<Item> &items = problem.items;
  size_t numSections = problem.sectionTotal.size();
  // Sparse table for range maxima over sections.
  std::vector<std::vector<uint64_t>> table{problem.sectionTotal};
  for (size_t width = 2; width <= numSections; width *= 2) {
    const std::vector<uint64_t> &prev = table.back();
    std::vector<uint64_t> next(numSections - width + 1);
    for (size_t s = 0; s < next.size(); ++s)
      next[s] = std::max(prev[s], prev[s + width / 2]);
    table.push_back(std::move(next));
  }
  std::vector<uint64_t> breadth(items.size());
  std::vector<double> area(items.size());
  for (uint32_t i = 0; i < items.size(); ++i) {
    uint32_t lo = problem.secBegin[i], hi = problem.secEnd[i];
    unsigned level = llvm::Log2_64(hi - lo);
    breadth[i] = std::max(table[level][lo], table[level][hi - (1u << level)]);
    area[i] = double(items[i].size) * double(lifetime(items[i]));
  }
  std::vector<uint32_t> order(items.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (breadth[a] != breadth[b])
      return breadth[a] > breadth[b];
    if (area[a] != area[b])
      return area[a] > area[b];
    if (items[a].id != items[b].id)
      return items[a].id < items[b].id;
    return a < b;
  });
  return runGreedy(problem, order, Fit::First);
}

/// Bump allocation. Largest alignment first means no padding is ever needed
/// (each footprint is a multiple of every later alignment), so the arena is
/// exactly the sum of footprints.
static Packing runBump(const Problem &problem) {
  const std::vector<Item> &items = problem.items;
  std::vector<uint32_t> order(items.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return items[a].align > items[b].align;
  });
  Packing packing;
  packing.offsets.assign(items.size(), 0);
  for (uint32_t i : order) {
    packing.offsets[i] = packing.arena;
    packing.arena += items[i].size;
  }
  return packing;
}

/// Bump allocation restarted at 0 in every partition: the search's
/// fallback, which keeps Search and Best within noReuseBytes even where
/// alignment padding makes the greedies overshoot it.
static Packing runBumpPerPartition(const Problem &problem) {
  Packing packing;
  packing.offsets.assign(problem.items.size(), 0);
  for (const std::vector<uint32_t> &part : problem.partItems) {
    std::vector<uint32_t> order = part;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return problem.items[a].align > problem.items[b].align;
    });
    uint64_t top = 0;
    for (uint32_t i : order) {
      packing.offsets[i] = top;
      top += problem.items[i].size;
    }
    packing.arena = std::max(packing.arena, top);
  }
  return packing;
}

/// Takes, partition by partition, the smallest of the packings there (the
/// first on ties). Valid because partitions never conflict.
static Packing
combinePerPartition(const Problem &problem,
                    std::initializer_list<const Packing *> packings) {
  Packing result = **packings.begin();
  result.arena = 0;
  for (uint32_t part = 0; part < problem.partItems.size(); ++part) {
    const Packing *best = nullptr;
    uint64_t bestArena = 0;
    for (const Packing *packing : packings) {
      uint64_t arena = partitionArena(problem, *packing, part);
      if (!best || arena < bestArena) {
        best = packing;
        bestArena = arena;
      }
    }
    for (uint32_t i : problem.partItems[part])
      result.offsets[i] = best->offsets[i];
    result.arena = std::max(result.arena, bestArena);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

llvm::Expected<MemoryPlan> snug::planMemory(llvm::ArrayRef<PlanBuffer> buffers,
                                            const PlannerOptions &options) {
  auto start = std::chrono::steady_clock::now();
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  plan.strategy = options.strategy;

  Problem problem;
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &buffer = buffers[i];
    if (buffer.firstStep > buffer.lastStep)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "buffer %lld: firstStep %lld is after lastStep %lld",
          (long long)buffer.id, (long long)buffer.firstStep,
          (long long)buffer.lastStep);
    if (!isPowerOfTwo(buffer.alignment))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "buffer %lld: alignment %llu is not a power of two",
          (long long)buffer.id, (unsigned long long)buffer.alignment);
    if (buffer.bytes == 0)
      continue;
    if (buffer.bytes > kMaxTotalBytes || buffer.alignment > kMaxTotalBytes ||
        alignUp(buffer.bytes, buffer.alignment) >
            kMaxTotalBytes - plan.noReuseBytes)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "buffer %lld: %llu bytes overflow the arena (the sizes must sum "
          "to at most 2^62 bytes)",
          (long long)buffer.id, (unsigned long long)buffer.bytes);
    uint64_t size = alignUp(buffer.bytes, buffer.alignment);
    plan.noReuseBytes += size;
    problem.items.push_back({size, buffer.alignment, buffer.firstStep,
                             buffer.lastStep, buffer.id, i});
  }
  sweepProblem(problem);
  plan.lowerBoundBytes = problem.lowerBound;
  plan.peakStep = problem.peakStep;

  Packing packing;
  switch (options.strategy) {
  case PlannerStrategy::None:
    packing = runBump(problem);
    break;
  case PlannerStrategy::GreedySize:
    packing = runGreedySize(problem);
    break;
  case PlannerStrategy::GreedyBreadth:
    packing = runGreedyBreadth(problem);
    break;
  case PlannerStrategy::Search:
  case PlannerStrategy::Best: {
    Packing bySize = runGreedySize(problem);
    Packing byBreadth = runGreedyBreadth(problem);
    bool breadthWins = byBreadth.arena < bySize.arena;
    Packing &greedy = breadthWins ? byBreadth : bySize;
    if (options.strategy == PlannerStrategy::Best &&
        greedy.arena == problem.lowerBound) {
      plan.strategy = breadthWins ? PlannerStrategy::GreedyBreadth
                                  : PlannerStrategy::GreedySize;
      packing = std::move(greedy);
      break;
    }
    Packing bump = runBumpPerPartition(problem);
    packing = combinePerPartition(problem, {&bySize, &byBreadth, &bump});
    // Clamped so that the conversions below cannot overflow.
    double seconds = std::min(std::max(0.0, options.timeLimitSeconds), 1e6);
    auto deadline =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(seconds));
    WorkBudget budget(uint64_t(seconds * kWorkUnitsPerSecond), deadline);
    improveBySearch(problem, packing, budget, options.seed);
    if (options.strategy == PlannerStrategy::Best) {
      if (packing.arena < greedy.arena) {
        plan.strategy = PlannerStrategy::Search;
      } else {
        plan.strategy = breadthWins ? PlannerStrategy::GreedyBreadth
                                    : PlannerStrategy::GreedySize;
        packing = std::move(greedy);
      }
    }
    break;
  }
  }

  for (uint32_t i = 0; i < problem.items.size(); ++i)
    plan.offsets[problem.items[i].index] = packing.offsets[i];
  plan.arenaBytes = packing.arena;
  plan.planningMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  return plan;
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

static std::string describe(const PlanBuffer &buffer, uint64_t offset) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << buffer.id << " (steps [" << buffer.firstStep << ", " << buffer.lastStep
     << "], bytes [" << offset << ", " << offset + buffer.bytes << "))";
  return os.str();
}

llvm::Error snug::verifyMemoryPlan(llvm::ArrayRef<PlanBuffer> buffers,
                                   const MemoryPlan &plan) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   message.c_str());
  };
  if (plan.offsets.size() != buffers.size())
    return fail("plan has " + std::to_string(plan.offsets.size()) +
                " offsets for " + std::to_string(buffers.size()) + " buffers");
  std::vector<Item> items;
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &buffer = buffers[i];
    uint64_t offset = plan.offsets[i];
    if (buffer.firstStep > buffer.lastStep)
      return fail("buffer " + describe(buffer, offset) +
                  " has an empty live interval");
    if (!isPowerOfTwo(buffer.alignment))
      return fail("buffer " + describe(buffer, offset) + " has alignment " +
                  std::to_string(buffer.alignment) + ", not a power of two");
    if (offset % buffer.alignment != 0)
      return fail("buffer " + describe(buffer, offset) + " is not aligned to " +
                  std::to_string(buffer.alignment));
    if (buffer.bytes == 0)
      continue;
    if (offset > plan.arenaBytes || plan.arenaBytes - offset < buffer.bytes)
      return fail("buffer " + describe(buffer, offset) +
                  " extends past the arena of " +
                  std::to_string(plan.arenaBytes) + " bytes");
    items.push_back({buffer.bytes, buffer.alignment, buffer.firstStep,
                     buffer.lastStep, buffer.id, i});
  }
  // Sweep over steps keeping the live buffers ordered by offset. They are
  // pairwise disjoint (or we would have failed), so a newcomer overlaps one
  // of them iff it overlaps its neighbour on either side.
  std::set<std::pair<uint64_t, uint32_t>> live;
  for (const Event &event : makeEvents(items)) {
    const Item &item = items[event.item];
    uint64_t offset = plan.offsets[item.index];
    if (event.isEnd) {
      live.erase({offset, event.item});
      continue;
    }
    auto next = live.lower_bound({offset, 0});
    const Item *clash = nullptr;
    if (next != live.end() && next->first < offset + item.size)
      clash = &items[next->second];
    if (!clash && next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + items[prev->second].size > offset)
        clash = &items[prev->second];
    }
    if (clash)
      return fail("buffers " +
                  describe(buffers[clash->index], plan.offsets[clash->index]) +
                  " and " + describe(buffers[item.index], offset) +
                  " are live at the same step but overlap in memory");
    live.insert({offset, event.item});
  }
  return llvm::Error::success();
}
