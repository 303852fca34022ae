//===- MemoryPlanner.cpp - Static arena packing ---------------------------===//
//
// The planner's driver: input validation, the sweep that derives sections
// and partitions, the lower bound, the bump strategies, the Best/Search
// ensemble and the independent verifier. The greedies live in
// MemoryPlannerGreedy.cpp, the canonical search in MemoryPlannerSearch.cpp,
// the order search that takes what budget the searches leave (partitions
// still above their bound) in MemoryPlannerRepair.cpp.
//
// Invariants: every strategy returns a valid packing; the time limit caps the
// whole call (a per-partition bump packing is computed first, each greedy
// stops at the deadline, the search checks the clock every 256 nodes);
// Search and Best never return anything worse than the two classic greedies
// (which always start, and are never cut short below kDeadlineStride items);
// everything is ordered by (key, id, input index) so results do not depend
// on hash or pointer order.
//
// Scale: above kLargeProblemItems items the buffers live over the whole of
// their partition are stacked at the bottom first (exact: see
// runEnsembleAboveSpanning) and the ensemble runs on the rest, starting
// with the O(n log n) skyline greedy (a valid plan within about 12 % of the
// bound on training traces, in well under a second at 60,000 buffers), then
// size-ordered first fit and the other hole-filling greedies while time
// lasts; partitions above kMaxSearchItems get the skyline search only.
//
// What it does not do: it does not try to prove optimality beyond reaching
// the lower bound.
//
// References: TFLite's arena planner (size-ordered best fit), XLA's heap
// simulator (global decreasing-size best fit), MiniMalloc (Moffitt, ASPLOS
// 2023) and TelaMalloc (Maas et al., ASPLOS 2023).
//
//===----------------------------------------------------------------------===//
#include "passes/planner/MemoryPlanner.h"
#include "passes/planner/MemoryPlannerInternal.h"
#include "core/CheckedArithmetic.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <set>
#include <string>

using namespace snug;
using namespace snug::planner;

namespace {

/// Sizes are capped so that an offset plus a size plus alignment padding can
/// never wrap around, whatever the packing does.
constexpr uint64_t kMaxTotalBytes = uint64_t(1) << 62;

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
// Bump strategies
//===----------------------------------------------------------------------===//

/// Stacks `items` from offset 0, largest alignment first, writing their
/// offsets; returns the top. Largest alignment first means no padding is
/// ever needed (each footprint is a multiple of every later alignment), so
/// the top is exactly the sum of footprints.
static uint64_t stackByAlignment(const Problem &problem,
                                 std::vector<uint32_t> items,
                                 std::vector<uint64_t> &offsets) {
  std::stable_sort(items.begin(), items.end(), [&](uint32_t a, uint32_t b) {
    return problem.items[a].align > problem.items[b].align;
  });
  uint64_t top = 0;
  for (uint32_t i : items) {
    offsets[i] = top;
    top += problem.items[i].size;
  }
  return top;
}

/// Bump allocation: every item stacked once.
static Packing runBump(const Problem &problem) {
  std::vector<uint32_t> order(problem.items.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  Packing packing;
  packing.offsets.assign(problem.items.size(), 0);
  packing.arena = stackByAlignment(problem, std::move(order), packing.offsets);
  return packing;
}

/// Bump allocation restarted at 0 in every partition: the search's
/// fallback, which keeps Search and Best within noReuseBytes even where
/// alignment padding makes the greedies overshoot it.
static Packing runBumpPerPartition(const Problem &problem) {
  Packing packing;
  packing.offsets.assign(problem.items.size(), 0);
  for (const std::vector<uint32_t> &part : problem.partItems)
    packing.arena = std::max(packing.arena,
                             stackByAlignment(problem, part, packing.offsets));
  return packing;
}

/// Takes, partition by partition, the smallest of the packings there (the
/// first on ties). Valid because partitions never conflict.
static Packing combinePerPartition(const Problem &problem,
                                   llvm::ArrayRef<const Packing *> packings) {
  Packing result = *packings.front();
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

namespace {
/// One greedy of the ensemble: an order and a fit rule.
struct GreedyRun {
  GreedyOrder order;
  GreedyFit fit;
  /// When set, the items within this many sections of the peak go first
  /// (movePeakFirst).
  std::optional<uint32_t> peakWindow = std::nullopt;
};

std::vector<uint32_t> makeRunOrder(const Problem &problem,
                                   const GreedyRun &run) {
  std::vector<uint32_t> order = makeGreedyOrder(problem, run.order);
  return run.peakWindow ? movePeakFirst(problem, order, *run.peakWindow)
                        : order;
}

/// The ensemble Search and Best run, cheapest and most often best first:
/// the two classic rules, then the other orders with the other fit. Each
/// costs O(n log^2 n), so all of them fit in a second at 60,000 buffers.
/// On large problems: the O(n log n) skyline first (a valid plan within
/// about 12 % of the bound on generated training traces, 0.03 s CPU at
/// 50,000 buffers), then first fit (its walk over busy ranges capped,
/// kApproximateFirstFitMoves: about 0.05-0.3 s CPU at 18,000-62,000
/// buffers) and best fit in the orders that win on real training traces
/// (bench/packing/README.md): size then start, which is MindSpore SOMAS's
/// rule (PanGu 2.6B 1.0076), the same with the items around the peak first
/// (PanGu 1.0038, iopddl Y_1 at the bound), size then lifetime (generated
/// training steps 1.001-1.002), lifetime with best fit (iopddl S_1 1.0025),
/// then the rest while time lasts.
const GreedyRun kLargeEnsemble[] = {
    {GreedyOrder::Lifetime, GreedyFit::Top},
    {GreedyOrder::SizeStart, GreedyFit::First},
    {GreedyOrder::SizeStart, GreedyFit::First, 1},
    {GreedyOrder::Size, GreedyFit::First},
    {GreedyOrder::Lifetime, GreedyFit::Best},
    {GreedyOrder::SizeStart, GreedyFit::First, 0},
    {GreedyOrder::SizeStart, GreedyFit::Best},
    {GreedyOrder::Degree, GreedyFit::Best},
    {GreedyOrder::Lifetime, GreedyFit::Best, 0},
    {GreedyOrder::SizeStart, GreedyFit::First, 2},
    {GreedyOrder::Lifetime, GreedyFit::First},
    {GreedyOrder::Size, GreedyFit::Best},
};
const GreedyRun kEnsemble[] = {
    {GreedyOrder::Size, GreedyFit::Best},
    {GreedyOrder::Breadth, GreedyFit::First},
    {GreedyOrder::Lifetime, GreedyFit::First},
    {GreedyOrder::Area, GreedyFit::Best},
    {GreedyOrder::Degree, GreedyFit::Best},
    {GreedyOrder::Size, GreedyFit::First},
    {GreedyOrder::Lifetime, GreedyFit::Best},
    {GreedyOrder::Breadth, GreedyFit::Best},
    {GreedyOrder::Area, GreedyFit::First},
    {GreedyOrder::Degree, GreedyFit::First},
};
} // namespace

/// Runs one greedy; on a missed deadline returns the per-partition bump
/// packing instead, so the caller always gets a valid plan.
static Packing runGreedyOrBump(const Problem &problem, GreedyRun run,
                               Clock::time_point deadline, bool &finished) {
  Packing packing;
  finished = runGreedy(problem, makeGreedyOrder(problem, run.order), run.fit,
                       deadline, packing);
  return finished ? packing : runBumpPerPartition(problem);
}

static Packing runEnsemble(const Problem &problem,
                           const PlannerOptions &options,
                           Clock::time_point deadline, PlannerStrategy &winner,
                           bool stripSpanning);

/// On large problems: buffers live over the whole of their partition (a
/// training step's parameters) conflict with every other buffer there, so
/// some packing stacks them at the bottom without loss (remove one from any
/// packing, shift what lies above it down, put it below). They are stacked
/// first, largest alignment first so no padding is needed, and the rest is
/// packed above them as a smaller problem; the bound is unchanged when the
/// stack's height is a multiple of every remaining alignment (only then is
/// this done). Returns false when there is nothing to strip.
static bool runEnsembleAboveSpanning(const Problem &problem,
                                     const PlannerOptions &options,
                                     Clock::time_point deadline,
                                     PlannerStrategy &winner,
                                     Packing &packing) {
  size_t numParts = problem.partItems.size();
  std::vector<uint64_t> base(numParts, 0), restAlign(numParts, 1);
  std::vector<std::vector<uint32_t>> spanning(numParts);
  std::vector<uint8_t> isSpanning(problem.items.size(), 0);
  for (uint32_t part = 0; part < numParts; ++part)
    for (uint32_t i : problem.partItems[part]) {
      if (problem.secBegin[i] == problem.partSecBegin[part] &&
          problem.secEnd[i] == problem.partSecEnd[part]) {
        spanning[part].push_back(i);
        isSpanning[i] = 1;
        base[part] += problem.items[i].size;
      } else {
        restAlign[part] = std::max(restAlign[part], problem.items[i].align);
      }
    }
  bool any = false;
  for (uint32_t part = 0; part < numParts; ++part) {
    if (base[part] % restAlign[part] != 0)
      return false;
    // A partition of spanning buffers only is already a perfect stack.
    any |= !spanning[part].empty() &&
           spanning[part].size() < problem.partItems[part].size();
  }
  if (!any)
    return false;
  Problem rest;
  std::vector<uint32_t> restOf;
  for (uint32_t i = 0; i < problem.items.size(); ++i)
    if (!isSpanning[i]) {
      rest.items.push_back(problem.items[i]);
      restOf.push_back(i);
    }
  sweepProblem(rest);
  // Once: stripping again (the rest's partitions are narrower, so others may
  // span them now) would cost a sweep per level on deeply nested problems.
  Packing inner = runEnsemble(rest, options, deadline, winner,
                              /*stripSpanning=*/false);
  packing.offsets.assign(problem.items.size(), 0);
  packing.arena = 0;
  for (uint32_t part = 0; part < numParts; ++part)
    packing.arena = std::max(
        packing.arena, stackByAlignment(problem, spanning[part], packing.offsets));
  for (uint32_t k = 0; k < restOf.size(); ++k) {
    uint32_t i = restOf[k];
    packing.offsets[i] = base[problem.partOf[i]] + inner.offsets[k];
    packing.arena = std::max(packing.arena,
                             packing.offsets[i] + problem.items[i].size);
  }
  return true;
}

/// Search and Best: the bump fallback, the greedy ensemble while time lasts
/// and the bound is not reached, then (Search, or Best above the bound) the
/// canonical search on the partitions small enough for it.
static Packing runEnsemble(const Problem &problem,
                           const PlannerOptions &options,
                           Clock::time_point deadline, PlannerStrategy &winner,
                           bool stripSpanning) {
  Packing combined = runBumpPerPartition(problem);
  winner = PlannerStrategy::None;
  // The best single classic greedy: Best reports it by name when nothing
  // else does better.
  Packing classic;
  bool haveClassic = false, haveGreedy = false;
  PlannerStrategy classicName = PlannerStrategy::None;
  // On large problems the hole-filling greedies can take seconds, so the
  // O(n log n) skyline ones come first.
  bool large = problem.items.size() > kLargeProblemItems;
  if (large && stripSpanning) {
    Packing stacked;
    if (runEnsembleAboveSpanning(problem, options, deadline, winner, stacked))
      return stacked;
  }
  // A large greedy cut short finishes what it has with the skyline rule,
  // which takes a moment: it is cut short a little earlier (5 % of the
  // limit) so that the whole call still ends on time.
  Clock::time_point greedyDeadline = deadline;
  if (large)
    greedyDeadline -= std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(
            0.05 * std::min(std::max(0.0, options.timeLimitSeconds), 1e6)));
  llvm::ArrayRef<GreedyRun> ensemble =
      large ? llvm::ArrayRef<GreedyRun>(kLargeEnsemble)
            : llvm::ArrayRef<GreedyRun>(kEnsemble);
  for (size_t k = 0; k < ensemble.size(); ++k) {
    const GreedyRun &run = ensemble[k];
    // The two classic greedies always start (they stop themselves at the
    // deadline, but never on problems of fewer than kDeadlineStride items,
    // so Search and Best never lose to them); the rest only while there is
    // time and room above the bound.
    if (k > 0 && combined.arena == problem.lowerBound)
      break;
    if ((large || k > 1) && Clock::now() >= greedyDeadline)
      break;
    Packing packing;
    if (!runGreedy(problem, makeRunOrder(problem, run), run.fit,
                   greedyDeadline, packing))
      break;
    haveGreedy = true;
    bool isClassic = !run.peakWindow &&
                     ((run.order == GreedyOrder::Size &&
                       run.fit == GreedyFit::Best) ||
                      (run.order == GreedyOrder::Breadth &&
                       run.fit == GreedyFit::First));
    if (isClassic && (!haveClassic || packing.arena < classic.arena)) {
      classic = packing;
      haveClassic = true;
      classicName = run.order == GreedyOrder::Size
                        ? PlannerStrategy::GreedySize
                        : PlannerStrategy::GreedyBreadth;
    }
    combined = combinePerPartition(problem, {&combined, &packing});
  }
  if (options.strategy == PlannerStrategy::Search ||
      combined.arena > problem.lowerBound) {
    double seconds = std::min(std::max(0.0, options.timeLimitSeconds), 1e6);
    WorkBudget budget(uint64_t(seconds * kWorkUnitsPerSecond), deadline);
    if (Clock::now() < deadline)
      improveBySearch(problem, combined, budget, options.seed);
    // Whatever budget the bisection left (it stops once its heuristic
    // failures meet the best arena) goes to the order search.
    if (combined.arena > problem.lowerBound && !budget.checkDeadline())
      improveByReordering(problem, combined, budget, options.seed);
  }
  if (options.strategy == PlannerStrategy::Search) {
    winner = PlannerStrategy::Search;
    return combined;
  }
  if (haveClassic && classic.arena <= combined.arena) {
    winner = classicName;
    return classic;
  }
  // Nothing finished before the deadline: the bump fallback.
  winner = haveGreedy ? PlannerStrategy::Search : PlannerStrategy::None;
  return combined;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

llvm::Expected<MemoryPlan> snug::planMemory(llvm::ArrayRef<PlanBuffer> buffers,
                                            const PlannerOptions &options) {
  auto start = Clock::now();
  // Clamped so that the conversion cannot overflow.
  double seconds = std::min(std::max(0.0, options.timeLimitSeconds), 1e6);
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(seconds));
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
  bool finished = true;
  switch (options.strategy) {
  case PlannerStrategy::None:
    packing = runBump(problem);
    break;
  case PlannerStrategy::GreedySize:
    packing = runGreedyOrBump(problem, {GreedyOrder::Size, GreedyFit::Best},
                              deadline, finished);
    break;
  case PlannerStrategy::GreedyBreadth:
    packing = runGreedyOrBump(
        problem, {GreedyOrder::Breadth, GreedyFit::First}, deadline, finished);
    break;
  case PlannerStrategy::Search:
  case PlannerStrategy::Best:
    packing = runEnsemble(problem, options, deadline, plan.strategy,
                          /*stripSpanning=*/true);
    break;
  }
  // A greedy cut short by the deadline leaves the bump fallback.
  if (!finished)
    plan.strategy = PlannerStrategy::None;

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
     << "], ";
  // A crafted offset can put the end past 2^64: say so instead of wrapping.
  if (std::optional<uint64_t> end = checkedAdd(offset, buffer.bytes))
    os << "bytes [" << offset << ", " << *end << "))";
  else
    os << buffer.bytes << " bytes at offset " << offset << ", past 2^64)";
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
