//===- MemoryPlannerTest.cpp - Tests for the static memory planner --------===//
//
// Hand-worked plans for every strategy (the arithmetic is beside each
// buffer), the lower bound, the verifier's diagnostics, the CSV reader's
// errors, a randomised property test over all strategies, and the acceptance
// checks on the packing benchmarks (all 79 real traces at the lower bound).
// The benchmark tests look for the data in $SNUG_BENCH_DATA (the packing
// directory itself) or under SNUG_SHARED_DIR, and skip when neither exists.
// Timing is measured by bench/packing/PlanBuffersBench, not asserted here.
//
//===----------------------------------------------------------------------===//
#include "passes/planner/MemoryPlanner.h"
#include "tests/support/PackingInstances.h"
#include "passes/planner/BufferTrace.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace snug;

namespace {

PlanBuffer buf(int64_t id, uint64_t bytes, int64_t first, int64_t last,
               uint64_t alignment = 1) {
  PlanBuffer buffer;
  buffer.id = id;
  buffer.bytes = bytes;
  buffer.alignment = alignment;
  buffer.firstStep = first;
  buffer.lastStep = last;
  return buffer;
}

/// Plans with one strategy and checks the result with the verifier.
MemoryPlan plan(llvm::ArrayRef<PlanBuffer> buffers, PlannerStrategy strategy,
                double timeLimitSeconds = 2.0, uint64_t seed = 0) {
  PlannerOptions options;
  options.strategy = strategy;
  options.timeLimitSeconds = timeLimitSeconds;
  options.seed = seed;
  llvm::Expected<MemoryPlan> result = planMemory(buffers, options);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return MemoryPlan();
  }
  if (llvm::Error error = verifyMemoryPlan(buffers, *result))
    ADD_FAILURE() << getPlannerStrategyName(strategy).str() << ": "
                  << llvm::toString(std::move(error));
  return std::move(*result);
}

std::string errorText(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : std::string("<success>");
}

template <typename T> std::string errorText(llvm::Expected<T> value) {
  return value ? std::string("<success>") : llvm::toString(value.takeError());
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

using Random = SplitMix64;

const PlannerStrategy kAllStrategies[] = {
    PlannerStrategy::None, PlannerStrategy::GreedySize,
    PlannerStrategy::GreedyBreadth, PlannerStrategy::Search,
    PlannerStrategy::Best};

/// The packing benchmark directory, or "" when it is not available.
std::string benchDataDir() {
  if (const char *env = std::getenv("SNUG_BENCH_DATA"))
    return env;
#ifdef SNUG_SHARED_DIR
  return std::string(SNUG_SHARED_DIR) + "/bench-data/packing";
#else
  return "";
#endif
}

std::vector<std::string> csvFiles(const std::string &dir) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".csv")
      paths.push_back(it->path());
  std::sort(paths.begin(), paths.end());
  return paths;
}

} // namespace

//===----------------------------------------------------------------------===//
// Strategy names
//===----------------------------------------------------------------------===//

TEST(MemoryPlannerTest, StrategyNamesRoundTrip) {
  for (PlannerStrategy strategy : kAllStrategies) {
    llvm::Expected<PlannerStrategy> parsed =
        parsePlannerStrategy(getPlannerStrategyName(strategy));
    ASSERT_TRUE(bool(parsed)) << errorText(parsed.takeError());
    EXPECT_EQ(*parsed, strategy);
  }
  EXPECT_EQ(getPlannerStrategyName(PlannerStrategy::GreedyBreadth),
            "greedy-breadth");
  std::string message = errorText(parsePlannerStrategy("fastest"));
  EXPECT_TRUE(contains(message, "'fastest'")) << message;
  EXPECT_TRUE(
      contains(message, "none, greedy-size, greedy-breadth, search, best"))
      << message;
}

//===----------------------------------------------------------------------===//
// Lower bound
//===----------------------------------------------------------------------===//

TEST(MemoryPlannerTest, LowerBound) {
  std::vector<PlanBuffer> buffers = {
      buf(0, 100, 0, 1), // steps 0-1
      buf(1, 60, 1, 3),  // steps 1-3
      buf(2, 40, 2, 4),  // steps 2-4
      buf(3, 0, 0, 9),   // zero bytes: never counts
  };
  // step 0: 100; step 1: 100 + 60 = 160; step 2: 60 + 40 = 100; ...
  int64_t peak = -2;
  EXPECT_EQ(computeLowerBound(buffers, &peak), 160u);
  EXPECT_EQ(peak, 1);
  EXPECT_EQ(computeLowerBound({}, &peak), 0u);
  EXPECT_EQ(peak, -1);
}

TEST(MemoryPlannerTest, LowerBoundRoundsUpToAlignment) {
  std::vector<PlanBuffer> buffers = {
      buf(0, 1, 5, 6, 256), // footprint 256
      buf(1, 10, 6, 7, 16), // footprint 16
      buf(2, 3, 7, 7),      // footprint 3
  };
  // step 5: 256; step 6: 256 + 16 = 272; step 7: 16 + 3 = 19.
  int64_t peak = -2;
  EXPECT_EQ(computeLowerBound(buffers, &peak), 272u);
  EXPECT_EQ(peak, 6);
  MemoryPlan result = plan(buffers, PlannerStrategy::Best);
  EXPECT_EQ(result.lowerBoundBytes, 272u);
  EXPECT_EQ(result.peakStep, 6);
  EXPECT_GE(result.arenaBytes, result.lowerBoundBytes);
}

//===----------------------------------------------------------------------===//
// Hand-worked plans
//===----------------------------------------------------------------------===//

TEST(MemoryPlannerTest, NoneBumpsLargestAlignmentFirst) {
  std::vector<PlanBuffer> buffers = {
      buf(0, 10, 0, 0),     // align 1: third, at 256 + 32 = 288
      buf(1, 1, 0, 0, 256), // align 256: first, at 0, footprint 256
      buf(2, 20, 5, 5, 16), // align 16: second, at 256, footprint 32
      buf(3, 0, 0, 0, 64),  // zero bytes: offset 0
  };
  MemoryPlan result = plan(buffers, PlannerStrategy::None);
  EXPECT_EQ(result.offsets, (std::vector<uint64_t>{288, 0, 256, 0}));
  EXPECT_EQ(result.arenaBytes, 298u); // 288 + 10
  EXPECT_EQ(result.noReuseBytes, 298u);
  EXPECT_EQ(result.strategy, PlannerStrategy::None);
}

// Two holes at steps 2-9: [0, 100) and [190, 275). Best fit puts E in the
// tighter upper hole, which leaves the lower one for F.
std::vector<PlanBuffer> twoHoleProblem() {
  return {
      buf(0, 100, 0, 1), // A
      buf(1, 90, 0, 9),  // B
      buf(2, 85, 0, 1),  // C
      buf(3, 70, 0, 9),  // D
      buf(4, 60, 2, 9),  // E
      buf(5, 50, 2, 9),  // F
  };
}

TEST(MemoryPlannerTest, GreedySizeIsBestFit) {
  std::vector<PlanBuffer> buffers = twoHoleProblem();
  MemoryPlan result = plan(buffers, PlannerStrategy::GreedySize);
  // Order: A 100, B 90, C 85, D 70, E 60, F 50.
  // A: nothing placed                                   -> 0    [0, 100)
  // B: above A                                          -> 100  [100, 190)
  // C: above A, B                                       -> 190  [190, 275)
  // D: above A, B, C                                    -> 275  [275, 345)
  // E: conflicts B, D; holes [0,100) (100), [190,275) (85): best fit -> 190
  // F: conflicts B, D, E; holes [0,100) (100), [250,275) (25)       -> 0
  EXPECT_EQ(result.offsets, (std::vector<uint64_t>{0, 100, 190, 275, 190, 0}));
  EXPECT_EQ(result.arenaBytes, 345u);
  EXPECT_EQ(result.lowerBoundBytes, 345u); // step 0: 100 + 90 + 85 + 70
}

TEST(MemoryPlannerTest, GreedySizeTieBreaksOnLifetimeThenId) {
  std::vector<PlanBuffer> buffers = {
      buf(7, 40, 0, 0), // same size, shorter: after id 9
      buf(9, 40, 0, 3), // longest 40-byte buffer: first -> 0
      buf(5, 40, 1, 1), // same size and lifetime as id 7, smaller id
  };
  MemoryPlan result = plan(buffers, PlannerStrategy::GreedySize);
  // id 9 -> 0; id 5 (beats id 7 on id) -> above 9 -> 40; id 7 conflicts
  // only with id 9 -> 40.
  EXPECT_EQ(result.offsets, (std::vector<uint64_t>{40, 0, 40}));
}

TEST(MemoryPlannerTest, GreedyBreadthIsFirstFitByBreadthThenArea) {
  std::vector<PlanBuffer> buffers = twoHoleProblem();
  MemoryPlan result = plan(buffers, PlannerStrategy::GreedyBreadth);
  // Breadth: A, B, C, D see step 0 (345); E, F see at most 270.
  // Area (bytes x steps): B 900, D 700, A 200, C 170; E 480, F 400.
  // B -> 0 [0, 90); D -> 90 [90, 160); A -> 160; C -> 260;
  // E: conflicts B, D -> 160; F: conflicts B, D, E -> 220.
  EXPECT_EQ(result.offsets, (std::vector<uint64_t>{160, 0, 260, 90, 160, 220}));
  EXPECT_EQ(result.arenaBytes, 345u);
}

TEST(MemoryPlannerTest, GreedyBreadthTakesLowestHole) {
  std::vector<PlanBuffer> buffers = {
      buf(0, 100, 0, 1), // L1
      buf(1, 10, 0, 9),  // L2
      buf(2, 45, 0, 1),  // L3
      buf(3, 8, 0, 9),   // L4
      buf(4, 40, 2, 9),  // M1
      buf(5, 30, 2, 9),  // M2
  };
  MemoryPlan result = plan(buffers, PlannerStrategy::GreedyBreadth);
  // Breadth 163 (step 0) for L1-L4, 88 for M1, M2. Areas: L1 200, L2 100,
  // L3 90, L4 80; M1 320, M2 240.
  // L1 -> 0; L2 -> 100; L3 -> 110; L4 -> 155 (each above the previous).
  // Steps 2-9 leave holes [0, 100) and [110, 155): M1 takes the lowest -> 0
  // (best fit would pick 110); M2: hole [40, 100) -> 40.
  EXPECT_EQ(result.offsets, (std::vector<uint64_t>{0, 100, 110, 155, 0, 40}));
  EXPECT_EQ(result.arenaBytes, 163u);
}

TEST(MemoryPlannerTest, GreedyRespectsAlignment) {
  std::vector<PlanBuffer> buffers = {
      buf(0, 120, 0, 3),    // Q: 120 -> 0 [0, 120)
      buf(1, 100, 0, 1),    // P: 100 -> above Q -> 120 [120, 220)
      buf(2, 40, 2, 3, 64), // R: footprint 64; above Q: alignUp(120) = 128
      buf(3, 30, 2, 3),     // S: hole [120, 128) too small -> 128 + 64 = 192
  };
  // Size order: Q 120, P 100, R 64 (footprint), S 30.
  MemoryPlan result = plan(buffers, PlannerStrategy::GreedySize);
  EXPECT_EQ(result.offsets, (std::vector<uint64_t>{0, 120, 128, 192}));
  EXPECT_EQ(result.arenaBytes, 222u); // 192 + 30
  EXPECT_EQ(result.lowerBoundBytes, 220u);
}

// Found by random search: both greedies miss the bound, the search meets it.
std::vector<PlanBuffer> greedyTrap() {
  return {
      buf(0, 80, 0, 3), buf(1, 40, 2, 5), buf(2, 60, 4, 5),
      buf(3, 50, 4, 4), buf(4, 40, 3, 3),
  };
}

TEST(MemoryPlannerTest, SearchBeatsGreedies) {
  std::vector<PlanBuffer> buffers = greedyTrap();
  // Size order 0, 2, 3, 1, 4: 0 -> 0; 2 -> 0 (0 has ended); 3 -> 60;
  // 1 -> 110 (above 0, 2, 3); 4: hole [80, 110) is too small -> 150.
  MemoryPlan bySize = plan(buffers, PlannerStrategy::GreedySize);
  EXPECT_EQ(bySize.arenaBytes, 190u);
  MemoryPlan byBreadth = plan(buffers, PlannerStrategy::GreedyBreadth);
  EXPECT_GT(byBreadth.arenaBytes, 160u);
  // Step 3: 80 + 40 + 40 = 160.
  MemoryPlan searched = plan(buffers, PlannerStrategy::Search);
  EXPECT_EQ(searched.lowerBoundBytes, 160u);
  EXPECT_EQ(searched.peakStep, 3);
  EXPECT_EQ(searched.arenaBytes, 160u);
  EXPECT_EQ(searched.strategy, PlannerStrategy::Search);
  MemoryPlan best = plan(buffers, PlannerStrategy::Best);
  EXPECT_EQ(best.arenaBytes, 160u);
  EXPECT_EQ(best.strategy, PlannerStrategy::Search);
  EXPECT_EQ(best.offsets, searched.offsets);
}

TEST(MemoryPlannerTest, BestPrefersEarliestStrategyOnTies) {
  // Both greedies reach the bound; GreedySize is listed first.
  MemoryPlan best = plan(twoHoleProblem(), PlannerStrategy::Best);
  EXPECT_EQ(best.arenaBytes, 345u);
  EXPECT_EQ(best.strategy, PlannerStrategy::GreedySize);
}

TEST(MemoryPlannerTest, ZeroByteBuffersAndEmptyInput) {
  std::vector<PlanBuffer> buffers = {buf(0, 0, 0, 5, 64), buf(1, 8, 0, 5),
                                     buf(2, 0, 3, 3)};
  for (PlannerStrategy strategy : kAllStrategies) {
    MemoryPlan result = plan(buffers, strategy);
    EXPECT_EQ(result.offsets, (std::vector<uint64_t>{0, 0, 0}));
    EXPECT_EQ(result.arenaBytes, 8u);
  }
  for (PlannerStrategy strategy : kAllStrategies) {
    MemoryPlan result = plan({}, strategy);
    EXPECT_TRUE(result.offsets.empty());
    EXPECT_EQ(result.arenaBytes, 0u);
    EXPECT_EQ(result.peakStep, -1);
  }
}

TEST(MemoryPlannerTest, DisjointPartitionsShareAddresses) {
  // Two independent phases; each is packed on its own from offset 0.
  std::vector<PlanBuffer> buffers = {buf(0, 64, 0, 1), buf(1, 32, 1, 2),
                                     buf(2, 128, 10, 11), buf(3, 16, 11, 12)};
  MemoryPlan result = plan(buffers, PlannerStrategy::Best);
  EXPECT_EQ(result.arenaBytes, 144u); // 128 + 16 at step 11
  EXPECT_TRUE(result.offsets[0] == 0 || result.offsets[1] == 0);
  EXPECT_TRUE(result.offsets[2] == 0 || result.offsets[3] == 0);
}

//===----------------------------------------------------------------------===//
// Input errors
//===----------------------------------------------------------------------===//

TEST(MemoryPlannerTest, RejectsBadInput) {
  PlannerOptions options;
  std::string message = errorText(planMemory({buf(4, 8, 3, 2)}, options));
  EXPECT_TRUE(contains(message, "buffer 4")) << message;
  EXPECT_TRUE(contains(message, "firstStep 3")) << message;

  message = errorText(planMemory({buf(5, 8, 0, 2, 24)}, options));
  EXPECT_TRUE(contains(message, "alignment 24 is not a power of two"))
      << message;
  message = errorText(planMemory({buf(5, 8, 0, 2, 0)}, options));
  EXPECT_TRUE(contains(message, "not a power of two")) << message;

  uint64_t huge = uint64_t(1) << 61;
  message = errorText(planMemory(
      {buf(6, huge, 0, 2), buf(7, huge, 0, 2), buf(8, huge, 0, 2)}, options));
  EXPECT_TRUE(contains(message, "buffer 8")) << message;
  EXPECT_TRUE(contains(message, "overflow")) << message;
  message = errorText(planMemory({buf(9, ~uint64_t(0), 0, 2, 2)}, options));
  EXPECT_TRUE(contains(message, "overflow")) << message;
}

TEST(MemoryPlannerTest, ExtremeSteps) {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  std::vector<PlanBuffer> buffers = {buf(0, 8, lo, hi), buf(1, 8, hi, hi),
                                     buf(2, 8, lo, lo)};
  for (PlannerStrategy strategy : kAllStrategies) {
    MemoryPlan result = plan(buffers, strategy);
    EXPECT_EQ(result.lowerBoundBytes, 16u);
    if (strategy != PlannerStrategy::None) {
      EXPECT_EQ(result.arenaBytes, 16u);
    }
  }
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

TEST(MemoryPlannerTest, VerifierAcceptsValidPlan) {
  std::vector<PlanBuffer> buffers = {buf(1, 10, 0, 4), buf(2, 10, 4, 8),
                                     buf(3, 10, 5, 6)};
  MemoryPlan manual;
  manual.offsets = {0, 10, 0}; // 3 reuses 1's bytes after step 4
  manual.arenaBytes = 20;
  EXPECT_EQ(errorText(verifyMemoryPlan(buffers, manual)), "<success>");
}

TEST(MemoryPlannerTest, VerifierCatchesOverlap) {
  std::vector<PlanBuffer> buffers = {buf(11, 100, 0, 4), buf(12, 50, 4, 8),
                                     buf(13, 10, 9, 9)};
  MemoryPlan manual;
  // 11 and 12 are both live at step 4 (closed intervals) and share
  // [64, 100).
  manual.offsets = {0, 64, 0};
  manual.arenaBytes = 114;
  std::string message = errorText(verifyMemoryPlan(buffers, manual));
  EXPECT_TRUE(contains(message, "11 (steps [0, 4], bytes [0, 100))"))
      << message;
  EXPECT_TRUE(contains(message, "12 (steps [4, 8], bytes [64, 114))"))
      << message;
  EXPECT_TRUE(contains(message, "overlap")) << message;
  // Touching ranges and touching-but-disjoint intervals are fine.
  manual.offsets = {0, 100, 0};
  manual.arenaBytes = 150;
  EXPECT_EQ(errorText(verifyMemoryPlan(buffers, manual)), "<success>");
}

TEST(MemoryPlannerTest, VerifierMessagesDoNotWrap) {
  // An offset 8 bytes below 2^64: the end of the range is past 2^64, and
  // the message says so instead of printing [18446744073709551608, 16).
  std::vector<PlanBuffer> buffers = {buf(7, 24, 0, 1)};
  MemoryPlan manual;
  manual.offsets = {~uint64_t(0) - 7};
  manual.arenaBytes = 64;
  std::string message = errorText(verifyMemoryPlan(buffers, manual));
  EXPECT_TRUE(contains(message, "24 bytes at offset 18446744073709551608, "
                                "past 2^64"))
      << message;
  EXPECT_FALSE(contains(message, ", 16)")) << message;
  EXPECT_TRUE(contains(message, "extends past the arena")) << message;
}

TEST(MemoryPlannerTest, VerifierCatchesOverlapAmongMany) {
  // The clash is between neighbours deep inside a crowded live set.
  std::vector<PlanBuffer> buffers;
  MemoryPlan manual;
  for (int i = 0; i < 100; ++i) {
    buffers.push_back(buf(i, 16, 0, 10));
    manual.offsets.push_back(uint64_t(i) * 16);
  }
  buffers.push_back(buf(500, 16, 3, 3));
  manual.offsets.push_back(808); // straddles ids 50 and 51
  manual.arenaBytes = 1600;
  std::string message = errorText(verifyMemoryPlan(buffers, manual));
  EXPECT_TRUE(contains(message, "500 (steps [3, 3]")) << message;
  EXPECT_TRUE(contains(message, "50 (steps [0, 10], bytes [800, 816))") ||
              contains(message, "51 (steps [0, 10], bytes [816, 832))"))
      << message;
}

TEST(MemoryPlannerTest, VerifierCatchesMisalignment) {
  std::vector<PlanBuffer> buffers = {buf(21, 32, 0, 1, 64)};
  MemoryPlan manual;
  manual.offsets = {32};
  manual.arenaBytes = 64;
  std::string message = errorText(verifyMemoryPlan(buffers, manual));
  EXPECT_TRUE(contains(message, "21 (steps [0, 1], bytes [32, 64))"))
      << message;
  EXPECT_TRUE(contains(message, "not aligned to 64")) << message;
}

TEST(MemoryPlannerTest, VerifierCatchesOutOfArena) {
  std::vector<PlanBuffer> buffers = {buf(31, 32, 0, 1), buf(32, 8, 0, 1)};
  MemoryPlan manual;
  manual.offsets = {0, 32};
  manual.arenaBytes = 36;
  std::string message = errorText(verifyMemoryPlan(buffers, manual));
  EXPECT_TRUE(contains(message, "32 (steps [0, 1], bytes [32, 40))"))
      << message;
  EXPECT_TRUE(contains(message, "past the arena of 36 bytes")) << message;
  manual.offsets = {0};
  message = errorText(verifyMemoryPlan(buffers, manual));
  EXPECT_TRUE(contains(message, "1 offsets for 2 buffers")) << message;
}

//===----------------------------------------------------------------------===//
// Property test
//===----------------------------------------------------------------------===//

TEST(MemoryPlannerTest, RandomProblemsAreValidUnderEveryStrategy) {
  const uint64_t kAlignments[] = {1, 1, 1, 2, 4, 8, 16, 64, 256};
  Random random{12345};
  for (int iteration = 0; iteration < 10000; ++iteration) {
    std::vector<PlanBuffer> buffers;
    size_t n = 1 + random.below(14);
    int64_t horizon = 1 + int64_t(random.below(12));
    for (size_t i = 0; i < n; ++i) {
      int64_t first = int64_t(random.below(horizon));
      int64_t last = first + int64_t(random.below(5));
      uint64_t bytes = random.below(8) == 0 ? 0 : 1 + random.below(600);
      uint64_t alignment = kAlignments[random.below(9)];
      // Ids are not unique on purpose: the planner must not care.
      buffers.push_back(
          buf(int64_t(random.below(20)), bytes, first, last, alignment));
    }
    uint64_t bound = computeLowerBound(buffers);
    uint64_t arenas[5];
    for (size_t s = 0; s < 5; ++s) {
      MemoryPlan result = plan(buffers, kAllStrategies[s],
                               /*timeLimitSeconds=*/0.0005);
      ASSERT_EQ(result.offsets.size(), buffers.size());
      ASSERT_EQ(result.lowerBoundBytes, bound) << "iteration " << iteration;
      ASSERT_GE(result.arenaBytes, bound) << "iteration " << iteration;
      // Alignment padding can push a greedy past the sum of footprints,
      // but Search and Best fall back to bump allocation then.
      if (kAllStrategies[s] == PlannerStrategy::Search ||
          kAllStrategies[s] == PlannerStrategy::Best) {
        ASSERT_LE(result.arenaBytes, result.noReuseBytes);
      }
      arenas[s] = result.arenaBytes;
      if (kAllStrategies[s] == PlannerStrategy::None) {
        ASSERT_EQ(result.arenaBytes, result.noReuseBytes);
      }
      if (kAllStrategies[s] == PlannerStrategy::Best) {
        ASSERT_NE(result.strategy, PlannerStrategy::None);
      }
    }
    ASSERT_LE(arenas[3], std::min(arenas[1], arenas[2]))
        << "search worse than a greedy, iteration " << iteration;
    ASSERT_LE(arenas[4], std::min(arenas[1], arenas[2]))
        << "best worse than a greedy, iteration " << iteration;
    if (HasFailure())
      break;
  }
}

TEST(MemoryPlannerTest, DeterministicForSameSeed) {
  std::vector<PlanBuffer> buffers;
  Random random{7};
  for (int i = 0; i < 60; ++i) {
    int64_t first = int64_t(random.below(40));
    buffers.push_back(buf(i, 64 * (1 + random.below(50)), first,
                          first + int64_t(random.below(10))));
  }
  for (uint64_t seed : {0, 1, 2}) {
    MemoryPlan a = plan(buffers, PlannerStrategy::Search, 2.0, seed);
    MemoryPlan b = plan(buffers, PlannerStrategy::Search, 2.0, seed);
    EXPECT_EQ(a.offsets, b.offsets) << "seed " << seed;
    EXPECT_EQ(a.arenaBytes, b.arenaBytes);
  }
}

/// A DAG-like activation trace like the benchmark's synthetic problems.
std::vector<PlanBuffer> randomTrace(size_t n, uint64_t seed) {
  Random random{seed};
  std::vector<PlanBuffer> buffers;
  for (size_t i = 0; i < n; ++i) {
    uint64_t kind = random.below(100);
    uint64_t life = kind < 70   ? 1 + random.below(8)
                    : kind < 95 ? 1 + random.below(64)
                                : 1 + random.below(std::max<size_t>(n / 8, 1));
    buffers.push_back(buf(int64_t(i), 256 * (1 + random.below(4096)),
                          int64_t(i), int64_t(i + life - 1), 256));
  }
  return buffers;
}

TEST(MemoryPlannerTest, LargeProblemIsPlanned) {
  // Timing is measured by the benchmark (--random=10000); here only
  // validity and that the large input takes the greedy path.
  std::vector<PlanBuffer> buffers = randomTrace(10000, 10000);
  MemoryPlan best = plan(buffers, PlannerStrategy::Best);
  MemoryPlan bySize = plan(buffers, PlannerStrategy::GreedySize);
  EXPECT_GE(best.arenaBytes, best.lowerBoundBytes);
  EXPECT_LE(best.arenaBytes, bySize.arenaBytes);
  EXPECT_LT(best.arenaBytes, best.noReuseBytes / 10);
}

//===----------------------------------------------------------------------===//
// CSV reader
//===----------------------------------------------------------------------===//

TEST(BufferTraceTest, ParsesHalfOpenIntervals) {
  llvm::Expected<std::vector<PlanBuffer>> buffers = parseBufferTrace(
      "id,lower,upper,size\r\n3,0,4,100\r\n\r\n9, 4, 5, 0\n", "t.csv");
  ASSERT_TRUE(bool(buffers)) << errorText(buffers.takeError());
  ASSERT_EQ(buffers->size(), 2u);
  EXPECT_EQ((*buffers)[0].id, 3);
  EXPECT_EQ((*buffers)[0].firstStep, 0);
  EXPECT_EQ((*buffers)[0].lastStep, 3); // [0, 4) -> [0, 3]
  EXPECT_EQ((*buffers)[0].bytes, 100u);
  EXPECT_EQ((*buffers)[0].alignment, 1u);
  EXPECT_EQ((*buffers)[1].firstStep, 4);
  EXPECT_EQ((*buffers)[1].lastStep, 4);
  EXPECT_EQ((*buffers)[1].bytes, 0u);
}

TEST(BufferTraceTest, AcceptsReorderedColumnsAndAlignment) {
  llvm::Expected<std::vector<PlanBuffer>> buffers = parseBufferTrace(
      "size,upper,alignment,lower,id\n64,9,256,2,1\n", "t.csv");
  ASSERT_TRUE(bool(buffers)) << errorText(buffers.takeError());
  ASSERT_EQ(buffers->size(), 1u);
  EXPECT_EQ((*buffers)[0].bytes, 64u);
  EXPECT_EQ((*buffers)[0].alignment, 256u);
  EXPECT_EQ((*buffers)[0].firstStep, 2);
  EXPECT_EQ((*buffers)[0].lastStep, 8);
}

TEST(BufferTraceTest, ReportsMalformedLines) {
  struct Case {
    const char *text;
    const char *expected;
  } cases[] = {
      {"", "t.csv:1: error: empty file"},
      {"\n\n", "t.csv:1: error: empty file"},
      {"id,lower,size\n", "t.csv:1: error: header lacks column 'upper'"},
      {"id,lower,upper,size,colour\n",
       "t.csv:1: error: unknown column 'colour'"},
      {"id,lower,upper,size\n1,0,x,4\n",
       "t.csv:2: error: upper 'x' is not a non-negative integer"},
      {"id,lower,upper,size\n1,0,3,4k\n",
       "t.csv:2: error: size '4k' is not a non-negative integer"},
      {"id,lower,upper,size\n1,0,3,\n",
       "t.csv:2: error: size '' is not a non-negative integer"},
      {"id,lower,upper,size\n1,0,3,4\n2,-1,3,4\n",
       "t.csv:3: error: lower '-1' is negative"},
      {"id,lower,upper,size\n1,0,3,-4\n", "t.csv:2: error: size '-4' is "
                                          "negative"},
      {"id,lower,upper,size\n1,5,5,4\n",
       "t.csv:2: error: lower 5 is not below upper 5"},
      {"id,lower,upper,size\n1,6,5,4\n",
       "t.csv:2: error: lower 6 is not below upper 5"},
      {"id,lower,upper,size\n1,0,5\n",
       "t.csv:2: error: expected 4 comma-separated fields, found 3"},
      {"id,lower,upper,size\n1,0,5,1,1\n",
       "t.csv:2: error: expected 4 comma-separated fields, found 5"},
      {"id,lower,upper,size\n7,0,5,1\n\n7,1,2,3\n",
       "t.csv:4: error: duplicate id 7 (first defined on line 2)"},
      {"id,lower,upper,size\n1,0,99999999999999999999,1\n",
       "t.csv:2: error: upper '99999999999999999999' is not a non-negative "
       "integer"},
  };
  for (const Case &c : cases) {
    std::string message = errorText(parseBufferTrace(c.text, "t.csv"));
    EXPECT_TRUE(contains(message, c.expected))
        << "input:\n"
        << c.text << "\nmessage: " << message;
  }
}

TEST(BufferTraceTest, ReportsUnreadableFile) {
  std::string message =
      errorText(readBufferTrace("/nonexistent/snug/trace.csv"));
  EXPECT_TRUE(contains(message, "/nonexistent/snug/trace.csv: error:"))
      << message;
}

//===----------------------------------------------------------------------===//
// Benchmarks
//===----------------------------------------------------------------------===//

TEST(MemoryPlannerBenchTest, RealTracesReachLowerBound) {
  std::string dir = benchDataDir() + "/real-traces";
  if (benchDataDir().empty() || !llvm::sys::fs::is_directory(dir))
    GTEST_SKIP() << "packing benchmark data not found at '" << dir
                 << "' (set SNUG_BENCH_DATA)";
  std::vector<std::string> files = csvFiles(dir);
  EXPECT_EQ(files.size(), 79u);
  for (const std::string &path : files) {
    llvm::Expected<std::vector<PlanBuffer>> buffers = readBufferTrace(path);
    ASSERT_TRUE(bool(buffers)) << errorText(buffers.takeError());
    MemoryPlan result = plan(*buffers, PlannerStrategy::Best);
    EXPECT_EQ(result.arenaBytes, result.lowerBoundBytes)
        << llvm::sys::path::filename(path).str();
  }
}

TEST(MemoryPlannerBenchTest, HardInstancesStayValid) {
  std::string dir = benchDataDir() + "/hard";
  if (benchDataDir().empty() || !llvm::sys::fs::is_directory(dir))
    GTEST_SKIP() << "packing benchmark data not found at '" << dir
                 << "' (set SNUG_BENCH_DATA)";
  for (const std::string &path : csvFiles(dir)) {
    llvm::Expected<std::vector<PlanBuffer>> buffers = readBufferTrace(path);
    ASSERT_TRUE(bool(buffers)) << errorText(buffers.takeError());
    // A short search must still return a valid plan no worse than greedy.
    MemoryPlan searched = plan(*buffers, PlannerStrategy::Search, 0.1);
    MemoryPlan bySize = plan(*buffers, PlannerStrategy::GreedySize);
    EXPECT_LE(searched.arenaBytes, bySize.arenaBytes);
    // C needs only a few thousand nodes to reach its bound.
    if (llvm::sys::path::filename(path) == "C.csv") {
      MemoryPlan full = plan(*buffers, PlannerStrategy::Best, 10.0);
      EXPECT_EQ(full.arenaBytes, full.lowerBoundBytes);
    }
  }
}
