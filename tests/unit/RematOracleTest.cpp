//===- RematOracleTest.cpp - The exact remat oracle and the heuristic -----===//
//
// Three tiers. Hand-made graphs of 3-6 nodes whose optimum is worked out
// beside them check the MILP (RematOracle.h) and the schedule replay
// (RematGraph.h). Training-like chains (RematInstances.h) go through both
// the remat pass and the oracle: wherever the pass meets a budget, its
// extra FLOPs must be the optimum's. Small random DAGs check the weaker
// property: the pass never beats the oracle, and both schedules replay
// within the budget at the cost claimed. Wherever the oracle runs, the
// step-by-step lower bound (boundRematExtraCost) must stay at or below its
// optimum. Two random DAGs of 60 nodes check the pass alone against the
// figures remat-oracle-bench measured on them.
//
// Budgets are comparable because the pass's budget bounds the packed arena
// and the oracle's the live bytes of the same schedule model (no in-place
// or concat sharing, no scratch, alignment 256), and the comparison checks
// that plan-memory's bound is the replayed peak of the pass's schedule.
//
//===----------------------------------------------------------------------===//
#include "tests/support/RematOracle.h"
#include "ir/Module.h"
#include "tests/support/RematInstances.h"

#include <gtest/gtest.h>

using namespace snug;
using Status = RematOracleResult::Status;

namespace {

/// A node of a hand-made graph; bytes in hundreds, for reading.
RematNode node(uint64_t cost, uint64_t hundreds,
               std::vector<unsigned> operands = {}, bool output = false) {
  RematNode result;
  result.cost = cost;
  result.bytes = hundreds * 100;
  result.operands = std::move(operands);
  result.isOutput = output;
  return result;
}

RematNode input(uint64_t hundreds) {
  RematNode result = node(0, hundreds);
  result.isInput = true;
  return result;
}

RematOracleResult solve(const RematGraph &graph, uint64_t budget) {
  llvm::Expected<RematOracleResult> result = solveRematOracle(graph, budget);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return {};
  }
  if (result->status == Status::Optimal || result->status == Status::Feasible) {
    EXPECT_FALSE(static_cast<bool>(
        checkRematSchedule(graph, result->schedule, budget, result->cost)));
  }
  return std::move(*result);
}

RematLowerBound bound(const RematGraph &graph, uint64_t budget) {
  llvm::Expected<RematLowerBound> result = boundRematExtraCost(graph, budget);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return {};
  }
  return *result;
}

uint64_t peakOf(const RematGraph &graph, llvm::ArrayRef<unsigned> schedule) {
  llvm::Expected<RematReplay> replay = replayRematSchedule(graph, schedule);
  if (!replay) {
    ADD_FAILURE() << llvm::toString(replay.takeError());
    return 0;
  }
  return replay->peakBytes;
}

} // namespace

// A (cost 5, 100 B), B = f(A) (200 B), C = g(B) (100 B), D = h(A, C)
// (100 B, the output). In order, step 2 holds A, B and C: 400 B. C's step
// needs B and C (300 B) anyway, so at 300 B A must not be live there: it
// dies after B reads it and is computed again before D, for 5 more:
// A B C A D, peaks 100, 300, 300, 200, 300.
TEST(RematOracleTest, RecomputesTheOneValueInTheWay) {
  RematGraph graph{
      {node(5, 1), node(1, 2, {0}), node(1, 1, {1}), node(1, 1, {0, 2}, true)}};
  EXPECT_EQ(peakOf(graph, getInOrderSchedule(graph)), 400u);
  RematOracleResult free = solve(graph, 400);
  EXPECT_EQ(free.status, Status::Optimal);
  EXPECT_EQ(free.extraCost, 0u);
  RematOracleResult tight = solve(graph, 300);
  EXPECT_EQ(tight.status, Status::Optimal);
  EXPECT_EQ(tight.extraCost, 5u);
  EXPECT_EQ(tight.schedule, (RematSchedule{0, 1, 2, 0, 3}));
  EXPECT_EQ(solve(graph, 299).status, Status::Infeasible);
  // The lower bound sees it at C's step alone: B and C fill 300 B, so A,
  // which D reads later, is computed again after it.
  EXPECT_EQ(bound(graph, 400).extraCost, 0u);
  EXPECT_EQ(bound(graph, 300).extraCost, 5u);
  EXPECT_FALSE(bound(graph, 300).infeasible);
  EXPECT_TRUE(bound(graph, 299).infeasible);
}

// A (cost 10) and B (cost 3), 100 B each, are both read only by E, after
// C (200 B) and D = f(C) (100 B): step 3 holds A, B, C, D = 500 B. At 400 B
// one of A and B must be computed again after D; B is cheaper (extra 3):
// A B C D B E peaks at E's step with A, B', D and E, 400 B. E's step needs
// 400 B whatever happens, so 399 B is infeasible.
TEST(RematOracleTest, RecomputesTheCheaperOfTwo) {
  RematGraph graph{{node(10, 1), node(3, 1), node(1, 2), node(1, 1, {2}),
                    node(1, 1, {0, 1, 3}, true)}};
  EXPECT_EQ(peakOf(graph, getInOrderSchedule(graph)), 500u);
  RematOracleResult result = solve(graph, 400);
  EXPECT_EQ(result.status, Status::Optimal);
  EXPECT_EQ(result.extraCost, 3u);
  EXPECT_EQ(result.schedule, (RematSchedule{0, 1, 2, 3, 1, 4}));
  EXPECT_EQ(solve(graph, 399).status, Status::Infeasible);
}

// An input X (100 B) read by A (cost 2, 200 B); B = f(A) and C = g(B)
// (200 B, 100 B); D = h(A, C). In order, C's step holds A, B, C: 500 B.
// Recomputing A after C would need X kept to then, and X, A and B live at
// B's step are 500 B again: inputs cannot be recomputed, so nothing fits in
// 400 B although the same graph without X's constraint would.
TEST(RematOracleTest, AnInputKeptForARecomputationCostsItsBytes) {
  RematGraph graph{{input(1), node(2, 2, {0}), node(1, 2, {1}), node(1, 1, {2}),
                    node(1, 1, {1, 3}, true)}};
  EXPECT_EQ(peakOf(graph, getInOrderSchedule(graph)), 500u);
  EXPECT_EQ(solve(graph, 500).extraCost, 0u);
  EXPECT_EQ(solve(graph, 400).status, Status::Infeasible);
  // A schedule that recomputes A replays with X live up to it.
  EXPECT_EQ(peakOf(graph, {1, 2, 3, 1, 4}), 500u);
}

// A graph input nothing reads is live at the first step only and does not
// make the MILP infeasible.
TEST(RematOracleTest, AnUnreadInputIsNoObstacle) {
  RematGraph graph{
      {input(1), input(2), node(1, 1, {1}), node(1, 1, {2}, true)}};
  EXPECT_EQ(peakOf(graph, getInOrderSchedule(graph)), 400u);
  RematOracleResult result = solve(graph, 400);
  EXPECT_EQ(result.status, Status::Optimal);
  EXPECT_EQ(result.extraCost, 0u);
  EXPECT_EQ(solve(graph, 399).status, Status::Infeasible);
}

// An output is kept from its computation to the end: O (300 B) computed
// first raises every later step.
TEST(RematOracleTest, OutputsLiveToTheEnd) {
  RematGraph graph{{node(1, 3, {}, true), node(1, 1), node(1, 1, {1}, true)}};
  EXPECT_EQ(peakOf(graph, getInOrderSchedule(graph)), 500u);
  EXPECT_EQ(solve(graph, 500).extraCost, 0u);
  EXPECT_EQ(solve(graph, 499).status, Status::Infeasible);
}

// A start goes to CBC when it fits the stages, after dropping what nothing
// reads: here B computed again twice in a row before E, the first of the
// two never read (kept, B would be twice in E's stage, which the MILP
// cannot say); one whose first computations are out of order does not
// fit. Either way the answer is the optimum.
TEST(RematOracleTest, AStartIsGivenWhenItFitsTheStages) {
  RematGraph graph{{node(10, 1), node(3, 1), node(1, 2), node(1, 1, {2}),
                    node(1, 1, {0, 1, 3}, true)}};
  auto solveFrom = [&](RematSchedule start) {
    RematOracleOptions options;
    options.start = std::move(start);
    llvm::Expected<RematOracleResult> result =
        solveRematOracle(graph, 400, options);
    if (!result) {
      ADD_FAILURE() << llvm::toString(result.takeError());
      return RematOracleResult();
    }
    EXPECT_EQ(result->status, Status::Optimal);
    EXPECT_EQ(result->extraCost, 3u);
    return std::move(*result);
  };
  EXPECT_TRUE(solveFrom({0, 1, 2, 3, 1, 4}).startGiven);
  EXPECT_TRUE(solveFrom({0, 1, 2, 3, 1, 1, 4}).startGiven);
  EXPECT_FALSE(solveFrom({1, 0, 2, 3, 1, 4}).startGiven);
  EXPECT_FALSE(solve(graph, 400).startGiven);
}

TEST(RematOracleTest, ReplayRejectsBrokenSchedules) {
  RematGraph graph{{input(1), node(2, 2, {0}), node(1, 1, {1}, true)}};
  auto error = [&](llvm::ArrayRef<unsigned> schedule) {
    llvm::Expected<RematReplay> replay = replayRematSchedule(graph, schedule);
    return replay ? std::string() : llvm::toString(replay.takeError());
  };
  EXPECT_NE(error({2, 1}).find("never computed before"), std::string::npos);
  EXPECT_NE(error({1}).find("node 2 is never computed"), std::string::npos);
  EXPECT_NE(error({0, 1, 2}).find("graph input"), std::string::npos);
  EXPECT_EQ(error({1, 2}), "");
  llvm::Error over = checkRematSchedule(graph, {1, 2}, 299, 3);
  EXPECT_NE(llvm::toString(std::move(over)).find("over the budget"),
            std::string::npos);
  llvm::Error cost = checkRematSchedule(graph, {1, 1, 2}, 1000, 3);
  EXPECT_NE(llvm::toString(std::move(cost)).find("not the 3 claimed"),
            std::string::npos);
}

namespace {

/// Runs both methods on a module from `make` at every budget from the
/// remat-free peak down in steps of `step` bytes until the oracle proves
/// one infeasible; calls `check` on each comparison.
void sweep(llvm::function_ref<std::unique_ptr<ir::Module>()> make,
           uint64_t step, unsigned maxBudgets,
           llvm::function_ref<void(const RematComparison &)> check) {
  llvm::Expected<RematComparison> free =
      compareRemat(make, uint64_t(1) << 40, {}, false);
  ASSERT_TRUE(static_cast<bool>(free)) << llvm::toString(free.takeError());
  for (uint64_t budget = free->freePeak, k = 0; budget > step && k < maxBudgets;
       budget -= step, ++k) {
    llvm::Expected<RematComparison> comparison =
        compareRemat(make, budget, {}, false);
    ASSERT_TRUE(static_cast<bool>(comparison))
        << llvm::toString(comparison.takeError());
    const RematOracleResult &oracle = comparison->oracle;
    ASSERT_NE(oracle.status, Status::Unknown) << "budget " << budget;
    ASSERT_NE(oracle.status, Status::Feasible) << "budget " << budget;
    if (oracle.status == Status::Infeasible) {
      // The pass's schedule would be one the oracle missed.
      EXPECT_FALSE(comparison->heuristicMet) << "budget " << budget;
      return;
    }
    EXPECT_FALSE(static_cast<bool>(checkRematSchedule(
        comparison->graph, oracle.schedule, budget, oracle.cost)));
    // The step-by-step lower bound holds: at most the optimum.
    RematLowerBound lower = bound(comparison->graph, budget);
    EXPECT_FALSE(lower.infeasible) << "budget " << budget;
    EXPECT_LE(lower.extraCost, oracle.extraCost) << "budget " << budget;
    if (comparison->heuristicMet) {
      EXPECT_FALSE(static_cast<bool>(checkRematSchedule(
          comparison->graph, comparison->heuristicSchedule, budget,
          comparison->graph.getBaseCost() + comparison->heuristicExtra)));
      EXPECT_GE(comparison->heuristicExtra, oracle.extraCost)
          << "budget " << budget;
    }
    check(*comparison);
  }
}

} // namespace

// Chains of 3-6 layers (7-13 nodes), every budget from the remat-free peak
// down to the smallest feasible in steps of 512 B (two alignment units).
// Wherever the pass meets the budget it must recompute exactly the
// optimum's FLOPs, and it must meet all 28 feasible budgets. Two of them
// (chain 11 at 4352 and 3840 B) need the pass's lookahead: the optimum
// recomputes a MatMul together with two ancestors at two places, which no
// single decision at the peak step lowers the arena with; two decisions
// together do.
TEST(RematOracleTest, HeuristicMatchesTheOptimumOnChains) {
  unsigned budgets = 0, met = 0, matched = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    unsigned layers = 3 + seed % 4;
    sweep([&] { return makeRematChainModule(seed, layers); }, 512, 12,
          [&](const RematComparison &comparison) {
            ++budgets;
            if (!comparison.heuristicMet) {
              std::printf("chain seed %u, budget %llu: the pass ends at "
                          "%llu B\n",
                          unsigned(seed), (unsigned long long)comparison.budget,
                          (unsigned long long)comparison.heuristicArena);
              return;
            }
            ++met;
            matched += comparison.heuristicExtra == comparison.oracle.extraCost;
            EXPECT_EQ(comparison.heuristicExtra, comparison.oracle.extraCost)
                << "chain seed " << seed << ", budget " << comparison.budget;
          });
  }
  std::printf("chains: the heuristic met %u of %u feasible budgets and "
              "matched the optimum at %u of them\n",
              met, budgets, matched);
  EXPECT_GT(budgets, 20u);
  EXPECT_GE(met, 28u);
}

// One kept value, two cheap chains (the shape of the 60-node DAG of seed 2
// below, cut down): K = MatMul(x) (768 B, 24576 FLOPs), P = Relu(K),
// A = Exp(Neg(P)) and B = Add(P, K) (768 B and 192 FLOPs each). A and B
// are read after G1 -> G2 -> G3 (2048 B each, 5632 B live at G2 and G3),
// A by RA next to G3, B by RB after H1 -> H2 (2048 B each, with B 4864 B).
// At 4864 B the optimum recomputes P before each reader: P, Neg, Exp before
// RA and P, Add before RB (960 FLOPs), K kept alive instead of A and B.
// One copy of P for both does not fit (next to G3 it would be live with
// K and two more, across H with K). Neither chain alone saves anything: it
// keeps a value as large as the one it frees; deeper, from the MatMul
// (keeping x, 256 B), each costs 24576 FLOPs more. So the pass meets the
// optimum only by recomputing both chains in one decision.
TEST(RematOracleTest, RecomputesTwoCheapChainsThatKeepOneValue) {
  auto make = [] {
    auto module = std::make_unique<ir::Module>("two-chains");
    unsigned weights = 0;
    auto matMul = [&](ir::Value *value, int64_t columns) {
      int64_t rows = value->getType().getDims()[1];
      ir::Value *weight = module->addElidedWeight(
          "w" + std::to_string(weights++),
          ir::TensorType(ir::DType::F32, {rows, columns}));
      return module
          ->addNode("MatMul", {value, weight},
                    {ir::TensorType(ir::DType::F32, {1, columns})})
          ->getResult(0);
    };
    auto add = [&](llvm::StringRef op, llvm::ArrayRef<ir::Value *> operands) {
      return module->addNode(op, operands, {operands[0]->getType()})
          ->getResult(0);
    };
    ir::Value *x =
        module->addInput("x", ir::TensorType(ir::DType::F32, {1, 64}));
    ir::Value *k = matMul(x, 192);
    ir::Value *p = add("Relu", {k});
    ir::Value *a = add("Exp", {add("Neg", {p})});
    ir::Value *b = add("Add", {p, k});
    ir::Value *g3 = add("Tanh", {add("Sigmoid", {matMul(x, 512)})});
    ir::Value *ra = matMul(a, 64);
    ir::Value *s = add("Add", {ra, matMul(g3, 64)});
    ir::Value *h3 = matMul(add("Sigmoid", {matMul(s, 512)}), 64);
    module->setOutputs({add("Add", {h3, matMul(b, 64)})});
    return module;
  };
  llvm::Expected<RematComparison> comparison =
      compareRemat(make, 4864, {}, false);
  ASSERT_TRUE(static_cast<bool>(comparison))
      << llvm::toString(comparison.takeError());
  EXPECT_EQ(comparison->freePeak, 5632u);
  ASSERT_EQ(comparison->oracle.status, Status::Optimal);
  EXPECT_EQ(comparison->oracle.extraCost, 960u);
  ASSERT_TRUE(comparison->heuristicMet)
      << "arena " << comparison->heuristicArena;
  EXPECT_EQ(comparison->heuristicExtra, 960u);
  EXPECT_FALSE(static_cast<bool>(
      checkRematSchedule(comparison->graph, comparison->heuristicSchedule, 4864,
                         comparison->graph.getBaseCost() + 960)));
  // P is computed three times: once, then before each reader.
  EXPECT_EQ(llvm::count(comparison->heuristicSchedule, 2u), 3);
}

// Random DAGs of 8-13 nodes at up to 3 budgets each (CBC takes up to a
// second on the larger ones).
TEST(RematOracleTest, HeuristicNeverBeatsTheOracleOnRandomGraphs) {
  unsigned budgets = 0, met = 0, equal = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    unsigned nodes = 7 + seed;
    sweep([&] { return makeRematRandomModule(seed, nodes); }, 256, 3,
          [&](const RematComparison &comparison) {
            ++budgets;
            met += comparison.heuristicMet;
            equal += comparison.heuristicMet &&
                     comparison.heuristicExtra == comparison.oracle.extraCost;
          });
  }
  std::printf("random DAGs: the heuristic met %u of %u feasible budgets, "
              "at the optimum at %u\n",
              met, budgets, equal);
  EXPECT_GT(budgets, 5u);
}

// Two instances of remat-oracle-bench's random DAGs of 60 nodes, at 97 % of
// the remat-free peak; the pass alone (CBC takes minutes on them). Seed 2
// is one step over the budget by 246 B; CBC proves 960 extra FLOPs optimal
// in 300 s: a cheap chain of three nodes before one reader and two of them
// again before another, one value they read kept alive for both (what
// RecomputesTwoCheapChainsThatKeepOneValue above cuts down). With single
// decisions only the pass recomputed a four-node chain with an 8192-FLOP
// MatMul in it (8576); before that, its chains grown depth first, a
// five-node one (13056). Seed 1: the step-by-step lower bound proves the
// pass's schedule optimal.
TEST(RematOracleTest, HeuristicOnRandomGraphsOfSixtyNodes) {
  for (uint64_t seed : {1, 2}) {
    auto make = [&] { return makeRematRandomModule(seed, 60); };
    llvm::Expected<RematComparison> free =
        runRematHeuristic(make, uint64_t(1) << 40);
    ASSERT_TRUE(static_cast<bool>(free)) << llvm::toString(free.takeError());
    uint64_t budget = free->freePeak * 97 / 100;
    llvm::Expected<RematComparison> comparison =
        runRematHeuristic(make, budget);
    ASSERT_TRUE(static_cast<bool>(comparison))
        << llvm::toString(comparison.takeError());
    ASSERT_TRUE(comparison->heuristicMet) << "seed " << seed;
    EXPECT_FALSE(static_cast<bool>(checkRematSchedule(
        comparison->graph, comparison->heuristicSchedule, budget,
        comparison->graph.getBaseCost() + comparison->heuristicExtra)));
    RematLowerBound lower = bound(comparison->graph, budget);
    EXPECT_LE(lower.extraCost, comparison->heuristicExtra) << "seed " << seed;
    if (seed == 1)
      EXPECT_EQ(comparison->heuristicExtra, lower.extraCost);
    else
      EXPECT_EQ(comparison->heuristicExtra, 960u);
  }
}
