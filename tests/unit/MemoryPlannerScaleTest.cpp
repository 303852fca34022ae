//===- MemoryPlannerScaleTest.cpp - The planner at scale and on time ------===//
//
// Issue 13: --time-limit is a hard cap on the whole of planMemory (greedies
// included), the greedies' interval structure gives the same offsets as the
// textbook scan of every conflicting buffer, every order and fit (including
// the skyline and a deadline hit mid-greedy) gives valid plans, and the
// generators of guillotine tilings and training traces produce what they
// promise. Sizes stay small enough for the sanitizer build; the large
// figures are in bench/packing.
//
//===----------------------------------------------------------------------===//
#include "passes/planner/MemoryPlanner.h"
#include "passes/planner/MemoryPlannerInternal.h"
#include "tests/support/PackingInstances.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

using namespace snug;
using namespace snug::planner;

namespace {

using Random = SplitMix64;

Problem makeProblem(const std::vector<PlanBuffer> &buffers) {
  Problem problem;
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    const PlanBuffer &b = buffers[i];
    if (b.bytes == 0)
      continue;
    uint64_t size = (b.bytes + b.alignment - 1) / b.alignment * b.alignment;
    problem.items.push_back({size, b.alignment, b.firstStep, b.lastStep, b.id,
                             i});
  }
  sweepProblem(problem);
  return problem;
}

/// The O(n^2) reference: sort the byte ranges of every conflicting placed
/// item and walk the gaps (the planner's rule before the interval tree).
Packing referenceGreedy(const Problem &problem,
                        const std::vector<uint32_t> &order, GreedyFit fit) {
  const std::vector<Item> &items = problem.items;
  Packing packing;
  packing.offsets.assign(items.size(), 0);
  std::vector<uint32_t> placed;
  for (uint32_t i : order) {
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (uint32_t j : placed)
      if (items[j].first <= items[i].last && items[i].first <= items[j].last)
        busy.push_back(
            {packing.offsets[j], packing.offsets[j] + items[j].size});
    std::sort(busy.begin(), busy.end());
    uint64_t align = items[i].align, size = items[i].size;
    auto up = [&](uint64_t v) { return (v + align - 1) & ~(align - 1); };
    uint64_t top = 0, best = 0, bestHole = std::numeric_limits<uint64_t>::max();
    bool found = false, done = false;
    for (auto [begin, end] : busy) {
      if (begin > top) {
        uint64_t c = up(top);
        if (c < begin && begin - c >= size) {
          if (fit == GreedyFit::First) {
            best = c;
            found = done = true;
            break;
          }
          if (begin - top < bestHole) {
            bestHole = begin - top;
            best = c;
            found = true;
          }
        }
      }
      top = std::max(top, end);
    }
    uint64_t offset = found ? best : up(top);
    (void)done;
    packing.offsets[i] = offset;
    packing.arena = std::max(packing.arena, offset + size);
    placed.push_back(i);
  }
  return packing;
}

std::vector<PlanBuffer> randomBuffers(Random &random, size_t n,
                                      int64_t horizon) {
  const uint64_t kAlignments[] = {1, 1, 2, 8, 64, 256};
  std::vector<PlanBuffer> buffers;
  for (size_t i = 0; i < n; ++i) {
    PlanBuffer b;
    b.id = int64_t(random.below(50));
    b.firstStep = int64_t(random.below(horizon));
    b.lastStep = b.firstStep + int64_t(random.below(horizon / 2 + 1));
    b.bytes = random.below(10) == 0 ? 0 : 1 + random.below(5000);
    b.alignment = kAlignments[random.below(6)];
    buffers.push_back(b);
  }
  return buffers;
}

/// The verifier's message, or "" for a valid plan.
std::string check(llvm::ArrayRef<PlanBuffer> buffers, const MemoryPlan &plan) {
  llvm::Error error = verifyMemoryPlan(buffers, plan);
  return error ? toString(std::move(error)) : std::string();
}

MemoryPlan toPlan(const Problem &problem, const Packing &packing,
                  size_t numBuffers) {
  MemoryPlan plan;
  plan.offsets.assign(numBuffers, 0);
  for (uint32_t i = 0; i < problem.items.size(); ++i)
    plan.offsets[problem.items[i].index] = packing.offsets[i];
  plan.arenaBytes = packing.arena;
  return plan;
}

const GreedyOrder kOrders[] = {GreedyOrder::Size,   GreedyOrder::Breadth,
                               GreedyOrder::Lifetime, GreedyOrder::Area,
                               GreedyOrder::Degree, GreedyOrder::Start,
                               GreedyOrder::SizeStart};

} // namespace

// The interval structure must not change a single offset: every order, first
// and best fit, against the scan of all placed buffers.
TEST(MemoryPlannerScaleTest, IntervalGreedyMatchesTheScan) {
  Random random{2024};
  auto never = Clock::time_point::max();
  for (int iteration = 0; iteration < 400; ++iteration) {
    size_t n = 1 + random.below(40);
    std::vector<PlanBuffer> buffers =
        randomBuffers(random, n, 1 + int64_t(random.below(40)));
    Problem problem = makeProblem(buffers);
    for (GreedyOrder order : kOrders)
      for (GreedyFit fit : {GreedyFit::First, GreedyFit::Best}) {
        std::vector<uint32_t> sequence = makeGreedyOrder(problem, order);
        Packing fast;
        ASSERT_TRUE(runGreedy(problem, sequence, fit, never, fast));
        Packing slow = referenceGreedy(problem, sequence, fit);
        ASSERT_EQ(fast.offsets, slow.offsets)
            << "iteration " << iteration << " order " << int(order) << " fit "
            << int(fit);
        ASSERT_EQ(fast.arena, slow.arena);
      }
  }
}

// Every order with every fit, the skyline included, gives plans the
// independent verifier accepts.
TEST(MemoryPlannerScaleTest, EveryOrderAndFitIsValid) {
  Random random{77};
  auto never = Clock::time_point::max();
  for (int iteration = 0; iteration < 1000; ++iteration) {
    std::vector<PlanBuffer> buffers = randomBuffers(
        random, 1 + random.below(30), 1 + int64_t(random.below(20)));
    Problem problem = makeProblem(buffers);
    for (GreedyOrder order : kOrders)
      for (GreedyFit fit :
           {GreedyFit::First, GreedyFit::Best, GreedyFit::Top}) {
        Packing packing;
        ASSERT_TRUE(runGreedy(problem, makeGreedyOrder(problem, order), fit,
                              never, packing));
        llvm::Error error =
            verifyMemoryPlan(buffers, toPlan(problem, packing, buffers.size()));
        ASSERT_FALSE(bool(error))
            << "iteration " << iteration << ": " << toString(std::move(error));
        ASSERT_GE(packing.arena, problem.lowerBound);
      }
  }
}

// movePeakFirst keeps the order among the items it moves and among the rest,
// and with window 0 moves exactly the items live at their partition's peak:
// first fit then stacks them without a hole, up to the partition's bound.
TEST(MemoryPlannerScaleTest, PeakFirstStacksThePeakWithoutAHole) {
  Random random{4933};
  auto never = Clock::time_point::max();
  for (int iteration = 0; iteration < 500; ++iteration) {
    std::vector<PlanBuffer> buffers = randomBuffers(
        random, 1 + random.below(40), 1 + int64_t(random.below(30)));
    for (PlanBuffer &b : buffers)
      b.alignment = 1;
    Problem problem = makeProblem(buffers);
    std::vector<uint32_t> base =
        makeGreedyOrder(problem, GreedyOrder::SizeStart);
    for (uint32_t window : {0u, 1u, 3u}) {
      std::vector<uint32_t> order = movePeakFirst(problem, base, window);
      ASSERT_EQ(order.size(), base.size());
      std::vector<uint32_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      for (uint32_t k = 0; k < sorted.size(); ++k)
        ASSERT_EQ(sorted[k], k) << "not a permutation";
      std::vector<size_t> rank(base.size());
      for (size_t k = 0; k < base.size(); ++k)
        rank[base[k]] = k;
      Packing packing;
      ASSERT_TRUE(runGreedy(problem, order, GreedyFit::First, never, packing));
      ASSERT_EQ(check(buffers, toPlan(problem, packing, buffers.size())), "");
      // Per partition: its peak section (the first of largest total).
      for (uint32_t part = 0; part < problem.partItems.size(); ++part) {
        uint32_t peak = problem.partSecBegin[part];
        for (uint32_t sec = peak; sec < problem.partSecEnd[part]; ++sec)
          if (problem.sectionTotal[sec] > problem.sectionTotal[peak])
            peak = sec;
        auto near = [&](uint32_t i) {
          return problem.secBegin[i] <= peak + window &&
                 problem.secEnd[i] + window > peak;
        };
        // Moved items come first and keep their relative order; so do
        // the rest.
        std::vector<uint32_t> moved, kept;
        for (uint32_t i : order)
          if (problem.partOf[i] == part)
            (near(i) ? moved : kept).push_back(i);
        for (size_t k = 1; k < moved.size(); ++k)
          ASSERT_LT(rank[moved[k - 1]], rank[moved[k]]);
        for (size_t k = 1; k < kept.size(); ++k)
          ASSERT_LT(rank[kept[k - 1]], rank[kept[k]]);
        if (window != 0)
          continue;
        uint64_t top = 0;
        for (uint32_t i : moved) {
          ASSERT_TRUE(problem.secBegin[i] <= peak && peak < problem.secEnd[i]);
          top = std::max(top, packing.offsets[i] + problem.items[i].size);
        }
        EXPECT_EQ(top, problem.sectionTotal[peak]) << "iteration " << iteration;
      }
    }
  }
}

// A greedy whose deadline has passed gives up at its first clock check
// instead of finishing; planMemory then still returns a valid (bump) plan.
TEST(MemoryPlannerScaleTest, DeadlineStopsAGreedyMidway) {
  Random random{5};
  std::vector<PlanBuffer> buffers = randomBuffers(random, 500, 100);
  Problem problem = makeProblem(buffers);
  ASSERT_GT(problem.items.size(), kDeadlineStride);
  Packing packing;
  EXPECT_FALSE(runGreedy(problem, makeGreedyOrder(problem, GreedyOrder::Size),
                         GreedyFit::Best, Clock::now(), packing));
  PlannerOptions options;
  options.strategy = PlannerStrategy::GreedySize;
  options.timeLimitSeconds = 0;
  llvm::Expected<MemoryPlan> plan = planMemory(buffers, options);
  ASSERT_TRUE(bool(plan)) << toString(plan.takeError());
  EXPECT_EQ(check(buffers, *plan), "");
  EXPECT_EQ(plan->strategy, PlannerStrategy::None);
}

// Issue 13: 20,000 buffers all live at a common step took 10.6 s at the
// 2 s default. Now the whole call stays within the limit (with slack for a
// loaded machine; the bench measures the 10 % figure) and the plan is valid.
TEST(MemoryPlannerScaleTest, TimeLimitCapsAllOverlappingProblem) {
  Random random{13};
  std::vector<PlanBuffer> buffers;
  for (int64_t i = 0; i < 20000; ++i) {
    PlanBuffer b;
    b.id = i;
    b.firstStep = int64_t(random.below(20000));
    b.lastStep = 20000 + int64_t(random.below(20000));
    b.bytes = 256 * (1 + random.below(4096));
    b.alignment = 256;
    buffers.push_back(b);
  }
  for (PlannerStrategy strategy :
       {PlannerStrategy::Best, PlannerStrategy::GreedySize}) {
    PlannerOptions options;
    options.strategy = strategy;
    options.timeLimitSeconds = 0.3;
    llvm::Expected<MemoryPlan> plan = planMemory(buffers, options);
    ASSERT_TRUE(bool(plan)) << toString(plan.takeError());
    EXPECT_EQ(check(buffers, *plan), "");
    EXPECT_LT(plan->planningMs, 2 * 300.0)
        << getPlannerStrategyName(strategy).str();
    EXPECT_GE(plan->arenaBytes, plan->lowerBoundBytes);
  }
}

// The tiling covers capacity x steps exactly: every step is full, so the
// lower bound is the capacity, and the pieces' areas sum to the rectangle.
TEST(MemoryPlannerScaleTest, GuillotineTilingFillsItsRectangle) {
  for (uint64_t seed : {1, 2, 3}) {
    std::vector<PlanBuffer> tiling =
        makeGuillotineTiling(1 << 16, 300, 250, seed);
    EXPECT_EQ(tiling.size(), 250u);
    uint64_t area = 0;
    for (const PlanBuffer &b : tiling) {
      EXPECT_GE(b.firstStep, 0);
      EXPECT_LE(b.lastStep, 299);
      area += b.bytes * uint64_t(b.lastStep - b.firstStep + 1);
    }
    EXPECT_EQ(area, uint64_t(1 << 16) * 300);
    EXPECT_EQ(computeLowerBound(tiling), uint64_t(1) << 16);
    EXPECT_EQ(makeGuillotineTiling(1 << 16, 300, 250, seed)[7].bytes,
              tiling[7].bytes);
  }
}

// A fixed small set of tilings: the planner finds a valid plan and never does
// worse than size-ordered best fit.
TEST(MemoryPlannerScaleTest, TilingsArePlannedNoWorseThanGreedy) {
  for (uint64_t seed : {1000, 1001}) {
    std::vector<PlanBuffer> tiling =
        makeGuillotineTiling(1 << 20, 1000, 200 + 100 * (seed - 1000), seed);
    PlannerOptions options;
    options.timeLimitSeconds = 0.5;
    llvm::Expected<MemoryPlan> best = planMemory(tiling, options);
    options.strategy = PlannerStrategy::GreedySize;
    llvm::Expected<MemoryPlan> greedy = planMemory(tiling, options);
    ASSERT_TRUE(best && greedy);
    EXPECT_EQ(check(tiling, *best), "");
    EXPECT_LE(best->arenaBytes, greedy->arenaBytes);
    EXPECT_EQ(best->lowerBoundBytes, uint64_t(1) << 20);
  }
}

// Training traces: long-lived parameters, nested activations; above
// kLargeProblemItems the skyline runs first, so even a short limit gives a
// valid plan within a bounded distance of the bound.
TEST(MemoryPlannerScaleTest, TrainingTraceIsPlannedWithinTheLimit) {
  std::vector<PlanBuffer> trace = makeTrainingTrace(6000, 6000);
  ASSERT_GT(trace.size(), kLargeProblemItems);
  uint64_t longLived = 0;
  int64_t lastStep = 0;
  for (const PlanBuffer &b : trace)
    lastStep = std::max(lastStep, b.lastStep);
  for (const PlanBuffer &b : trace)
    longLived += b.firstStep == 0 && b.lastStep == lastStep;
  EXPECT_GT(longLived, trace.size() / 10);
  PlannerOptions options;
  options.timeLimitSeconds = 0.4;
  llvm::Expected<MemoryPlan> plan = planMemory(trace, options);
  ASSERT_TRUE(bool(plan)) << toString(plan.takeError());
  EXPECT_EQ(check(trace, *plan), "");
  EXPECT_LT(plan->planningMs, 2 * 400.0);
  EXPECT_LT(double(plan->arenaBytes), 1.2 * double(plan->lowerBoundBytes));
  EXPECT_NE(plan->strategy, PlannerStrategy::None);
}

// Issue 13: tilings leave no slack at the bound, where the skyline search's
// branching is complete and sharp. A fixed set, each solved within a few
// milliseconds in an optimised build (the larger ones are in bench/packing):
// every one must reach the bound exactly.
TEST(MemoryPlannerScaleTest, TilingsReachTheirOptimum) {
  const std::pair<size_t, uint64_t> kTilings[] = {
      {200, 1000}, {250, 1001}, {300, 1002}, {350, 1003}};
  for (auto [pieces, seed] : kTilings) {
    std::vector<PlanBuffer> tiling =
        makeGuillotineTiling(1 << 20, 1000, pieces, seed);
    PlannerOptions options;
    options.timeLimitSeconds = 2.0;
    llvm::Expected<MemoryPlan> plan = planMemory(tiling, options);
    ASSERT_TRUE(bool(plan)) << toString(plan.takeError());
    EXPECT_EQ(check(tiling, *plan), "");
    EXPECT_EQ(plan->arenaBytes, uint64_t(1) << 20)
        << pieces << " pieces, seed " << seed << ": arena/optimum "
        << double(plan->arenaBytes) / double(1 << 20);
  }
}

// The skyline search directly, on small tilings (zero slack) and on the
// same buffers at a capacity with slack, under budgets from a few nodes to
// plenty: whatever it returns is a valid packing within the capacity.
TEST(MemoryPlannerScaleTest, SkylineSearchIsValidUnderAnyBudget) {
  Random random{99};
  auto never = Clock::time_point::max();
  int found = 0;
  for (int iteration = 0; iteration < 150; ++iteration) {
    std::vector<PlanBuffer> buffers = makeGuillotineTiling(
        64 + random.below(4096), 1 + int64_t(random.below(60)),
        1 + random.below(60), iteration);
    if (iteration % 3 == 1)
      for (PlanBuffer &b : buffers)
        b.alignment = uint64_t(1) << random.below(4);
    Problem problem = makeProblem(buffers);
    for (uint64_t extra : {uint64_t(0), 1 + random.below(200)}) {
      uint64_t capacity = problem.lowerBound + extra;
      for (uint32_t part = 0; part < problem.partItems.size(); ++part) {
        WorkBudget budget(random.below(4) == 0 ? 1 + random.below(5000)
                                               : uint64_t(1) << 22,
                          never);
        std::vector<uint64_t> local;
        if (!packBySkylineSearch(problem, part, capacity, budget, iteration,
                                 local))
          continue;
        ++found;
        const std::vector<uint32_t> &items = problem.partItems[part];
        ASSERT_EQ(local.size(), items.size());
        Packing packing;
        packing.offsets.assign(problem.items.size(), 0);
        std::vector<PlanBuffer> partBuffers;
        for (uint32_t k = 0; k < items.size(); ++k) {
          const Item &item = problem.items[items[k]];
          packing.offsets[items[k]] = local[k];
          packing.arena = std::max(packing.arena, local[k] + item.size);
          ASSERT_LE(local[k] + item.size, capacity)
              << "iteration " << iteration;
        }
        // Only this partition's buffers are placed; check them alone.
        MemoryPlan plan = toPlan(problem, packing, buffers.size());
        std::vector<PlanBuffer> placed;
        MemoryPlan placedPlan;
        placedPlan.arenaBytes = packing.arena;
        for (uint32_t k = 0; k < items.size(); ++k) {
          placed.push_back(buffers[problem.items[items[k]].index]);
          placedPlan.offsets.push_back(
              plan.offsets[problem.items[items[k]].index]);
        }
        ASSERT_EQ(check(placed, placedPlan), "") << "iteration " << iteration;
      }
    }
  }
  // Most tilings are solved: the test is not vacuous.
  EXPECT_GT(found, 150);
}


// Above a tiling's bound the skyline search ranks first, on every other
// pair of restarts, the buffers whose top is level with a neighbouring
// section. On the bench's tiling-750, which the zero-slack search cannot
// pack at its bound, the search at 4 % above it with a fixed work budget
// (so the result is deterministic) leaves a most complete state that first
// fit finishes at 1.074 of the bound; ranking by length alone left 1.089.
TEST(MemoryPlannerScaleTest, SkylineSearchFinishesTilingCloseAboveBound) {
  std::vector<PlanBuffer> buffers =
      makeGuillotineTiling(1 << 20, 1000, 750, 1011);
  Problem problem = makeProblem(buffers);
  ASSERT_EQ(problem.partItems.size(), 1u);
  WorkBudget budget(100'000'000, Clock::time_point::max());
  std::vector<uint64_t> local, partial;
  uint64_t capacity = problem.lowerBound + problem.lowerBound / 25;
  if (packBySkylineSearch(problem, 0, capacity, budget, 0, local, &partial))
    partial = local;
  const std::vector<uint32_t> &items = problem.partItems[0];
  ASSERT_EQ(partial.size(), items.size());
  Packing packing;
  packing.offsets.assign(problem.items.size(), 0);
  for (uint32_t k = 0; k < items.size(); ++k) {
    packing.offsets[items[k]] = partial[k];
    packing.arena =
        std::max(packing.arena, partial[k] + problem.items[items[k]].size);
  }
  EXPECT_EQ(check(buffers, toPlan(problem, packing, buffers.size())), "");
  EXPECT_LE(double(packing.arena), 1.08 * double(problem.lowerBound));
}

// The order search (MemoryPlannerRepair.cpp) from size-ordered best fit on
// tilings, some with alignments: the packing stays valid, never grows, and
// on most of them gets smaller; the same budget gives the same offsets.
TEST(MemoryPlannerScaleTest, ReorderingNeverWorsensAPacking) {
  Random random{7};
  auto never = Clock::time_point::max();
  int improved = 0;
  for (int iteration = 0; iteration < 20; ++iteration) {
    std::vector<PlanBuffer> buffers = makeGuillotineTiling(
        1024 + random.below(1 << 16), 20 + int64_t(random.below(200)),
        20 + random.below(150), 500 + iteration);
    if (iteration % 4 == 3)
      for (PlanBuffer &b : buffers)
        b.alignment = uint64_t(1) << random.below(3);
    Problem problem = makeProblem(buffers);
    Packing packing;
    ASSERT_TRUE(runGreedy(problem,
                          makeGreedyOrder(problem, GreedyOrder::Size),
                          GreedyFit::Best, never, packing));
    Packing reordered = packing, again = packing;
    WorkBudget budget(uint64_t(1) << 24, never), same(uint64_t(1) << 24, never);
    improveByReordering(problem, reordered, budget, iteration);
    improveByReordering(problem, again, same, iteration);
    EXPECT_EQ(reordered.offsets, again.offsets) << "iteration " << iteration;
    EXPECT_LE(reordered.arena, packing.arena) << "iteration " << iteration;
    EXPECT_GE(reordered.arena, problem.lowerBound);
    improved += reordered.arena < packing.arena;
    EXPECT_EQ(check(buffers, toPlan(problem, reordered, buffers.size())), "")
        << "iteration " << iteration;
  }
  EXPECT_GT(improved, 10);
}

// A tiling the search cannot pack at its bound (the bench's tiling-750) on a
// small work budget, no clock: the finished partial states of the failed
// skyline attempts set the arena. Finishing every restart's deepest state
// and keeping the lowest, then polishing with what the bisection leaves,
// gets it to 1.0652 x the bound; finishing only the deepest state overall
// (the old rule) gave 1.0713. The packing stays valid and the same budget
// gives the same offsets.
TEST(MemoryPlannerScaleTest, TilingAboveItsBoundKeepsTheBestFinishedRestart) {
  std::vector<PlanBuffer> tiling =
      makeGuillotineTiling(1 << 20, 1000, 750, 1011);
  Problem problem = makeProblem(tiling);
  auto never = Clock::time_point::max();
  Packing greedy;
  ASSERT_TRUE(runGreedy(problem, makeGreedyOrder(problem, GreedyOrder::Size),
                        GreedyFit::Best, never, greedy));
  constexpr uint64_t kWork = 300'000'000;
  Packing searched = greedy, again = greedy;
  WorkBudget budget(kWork, never), same(kWork, never);
  improveBySearch(problem, searched, budget, 0);
  improveBySearch(problem, again, same, 0);
  EXPECT_LE(double(searched.arena), 1.068 * double(problem.lowerBound));
  EXPECT_EQ(searched.offsets, again.offsets);
  EXPECT_EQ(check(tiling, toPlan(problem, searched, tiling.size())), "");
}
