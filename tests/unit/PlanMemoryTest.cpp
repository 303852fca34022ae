//===- PlanMemoryTest.cpp - Planning random graphs end to end -------------===//
//
// Property tests over random DAGs: under every planner strategy and with
// every sharing rule on or off, the plan passes verifyMemoryPlan (inside
// planModuleMemory) and the independent verify-plan pass, the arena is at
// least the lower bound, and the schedule pass never raises the bound and
// keeps a module that verifies.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "ir/Verifier.h"
#include "passes/PlanMemory.h"
#include "passes/Passes.h"

#include <gtest/gtest.h>

#include <random>

using namespace snug;
using namespace snug::ir;

/// A random DAG over f32[1,k] values: elementwise unary and binary ops,
/// views, Concat along axis 1 (batch 1, so concat in place applies), Split
/// and DenseNet-style blocks of prefix Concats, with random fan-out and some
/// dead values.
static std::unique_ptr<Module> makeRandomModule(std::mt19937_64 &rng) {
  auto module = std::make_unique<Module>("random");
  auto pick = [&](size_t bound) { return size_t(rng() % bound); };
  std::vector<Value *> values;
  for (size_t i = 0, inputs = 1 + pick(2); i < inputs; ++i)
    values.push_back(
        module->addInput("in" + std::to_string(i),
                         TensorType(DType::F32, {1, int64_t(1 + pick(300))})));
  size_t nodes = 3 + pick(40);
  for (size_t n = 0; n < nodes; ++n) {
    // Prefer recent values so that chains form; sometimes reach far back.
    auto operand = [&]() {
      size_t window = std::min<size_t>(values.size(), 1 + pick(6));
      return values[values.size() - 1 - pick(window)];
    };
    Value *a = operand();
    int64_t width = a->getType().getDims()[1];
    TensorType type = a->getType();
    switch (pick(8)) {
    case 0:
    case 1: {
      static const char *unary[] = {"Relu", "Exp", "Neg", "Sigmoid", "Tanh"};
      values.push_back(module->addNode(unary[pick(5)], {a}, {type})->getResult(0));
      break;
    }
    case 2: {
      // Binary with an operand of the same width if one exists.
      Value *b = a;
      for (size_t tries = 0; tries < 8; ++tries) {
        Value *candidate = values[pick(values.size())];
        if (candidate->getType() == type) {
          b = candidate;
          break;
        }
      }
      values.push_back(
          module->addNode(pick(2) ? "Add" : "Mul", {a, b}, {type})->getResult(0));
      break;
    }
    case 3:
      values.push_back(module
                           ->addNode("Flatten", {a}, {type},
                                     {{"axis", Attribute::getInt(1)}})
                           ->getResult(0));
      break;
    case 4: {
      Value *b = operand();
      int64_t total = width + b->getType().getDims()[1];
      values.push_back(module
                           ->addNode("Concat", {a, b},
                                     {TensorType(DType::F32, {1, total})},
                                     {{"axis", Attribute::getInt(1)}})
                           ->getResult(0));
      break;
    }
    case 5: {
      if (width < 2) {
        values.push_back(module->addNode("Identity", {a}, {type})->getResult(0));
        break;
      }
      int64_t left = 1 + pick(width - 1);
      Node *split = module->addNode(
          "Split", {a},
          {TensorType(DType::F32, {1, left}),
           TensorType(DType::F32, {1, width - left})},
          {{"axis", Attribute::getInt(1)},
           {"split", Attribute::getInts({left, width - left})}});
      values.push_back(split->getResult(0));
      values.push_back(split->getResult(1));
      break;
    }
    case 6: {
      // A DenseNet block: Concat(x0, f1..fk) grows by one feature a layer,
      // each Concat a prefix of the next.
      llvm::SmallVector<Value *, 6> features{a};
      for (size_t layer = 0, layers = 2 + pick(3); layer < layers; ++layer) {
        int64_t total = width * int64_t(features.size());
        Value *joined =
            features.size() == 1
                ? a
                : module
                      ->addNode("Concat", features,
                                {TensorType(DType::F32, {1, total})},
                                {{"axis", Attribute::getInt(1)}})
                      ->getResult(0);
        Value *mean = module
                          ->addNode("ReduceMean", {joined},
                                    {TensorType(DType::F32, {1, 1})},
                                    {{"axes", Attribute::getInts({1})},
                                     {"keepdims", Attribute::getInt(1)}})
                          ->getResult(0);
        features.push_back(
            module->addNode("Mul", {mean, a}, {type})->getResult(0));
      }
      values.push_back(module
                           ->addNode("Concat", features,
                                     {TensorType(DType::F32,
                                                 {1, width * int64_t(
                                                      features.size())})},
                                     {{"axis", Attribute::getInt(1)}})
                           ->getResult(0));
      break;
    }
    default:
      values.push_back(module->addNode("Abs", {a}, {type})->getResult(0));
      break;
    }
  }
  // One to three outputs among the later values.
  std::vector<Value *> outputs;
  for (size_t i = 0, count = 1 + pick(3); i < count; ++i) {
    Value *candidate = values[values.size() - 1 - pick(std::min<size_t>(
                                                       values.size(), 8))];
    if (!llvm::is_contained(outputs, candidate))
      outputs.push_back(candidate);
  }
  module->setOutputs(outputs);
  return module;
}

TEST(PlanMemoryTest, RandomDagsPlanAndVerifyUnderEveryStrategy) {
  std::mt19937_64 rng(7);
  const PlannerStrategy strategies[] = {
      PlannerStrategy::None, PlannerStrategy::GreedySize,
      PlannerStrategy::GreedyBreadth, PlannerStrategy::Search,
      PlannerStrategy::Best};
  const int dags = 1000;
  for (int dag = 0; dag < dags; ++dag) {
    std::unique_ptr<Module> module = makeRandomModule(rng);
    ASSERT_FALSE(static_cast<bool>(verifyModule(*module)));
    PlanMemoryOptions options;
    options.alignment = uint64_t(1) << (rng() % 9); // 1 .. 256
    options.planner.timeLimitSeconds = 0.005;
    options.sharing = {bool(rng() % 4), bool(rng() % 4), bool(rng() % 4)};
    PlannerStrategy strategy = strategies[dag % 5];
    options.planner.strategy = strategy;
    llvm::Expected<MemoryPlan> plan = planModuleMemory(*module, options);
    ASSERT_TRUE(static_cast<bool>(plan))
        << "dag " << dag << ": " << toString(plan.takeError());
    EXPECT_GE(plan->arenaBytes, plan->lowerBoundBytes);
    EXPECT_LE(plan->arenaBytes, plan->noReuseBytes);
    // The independent check re-derives liveness from the IR offsets.
    llvm::Expected<bool> checked =
        createPassByName("verify-plan")->run(*module);
    ASSERT_TRUE(static_cast<bool>(checked))
        << "dag " << dag << ": " << toString(checked.takeError());
  }
}

TEST(PlanMemoryTest, ScheduleNeverRaisesTheLowerBound) {
  std::mt19937_64 rng(11);
  for (int dag = 0; dag < 300; ++dag) {
    std::unique_ptr<Module> module = makeRandomModule(rng);
    // The bound plan-memory sees with its defaults, which the pass targets.
    PlanMemoryOptions options;
    LivenessOptions sharing = options.sharing;
    sharing.alignment = options.alignment;
    uint64_t boundBefore = computeLowerBound(
        getPlanBuffers(computeLiveness(*module, sharing), options.alignment));
    llvm::Expected<bool> changed = createPassByName("schedule")->run(*module);
    ASSERT_TRUE(static_cast<bool>(changed));
    ASSERT_FALSE(static_cast<bool>(verifyModule(*module))) << "dag " << dag;
    uint64_t boundAfter = computeLowerBound(
        getPlanBuffers(computeLiveness(*module, sharing), options.alignment));
    EXPECT_LE(boundAfter, boundBefore) << "dag " << dag;
    if (!*changed) {
      EXPECT_EQ(boundAfter, boundBefore);
    }
  }
}

TEST(PlanMemoryTest, SharingNeverRaisesTheLowerBound) {
  std::mt19937_64 rng(13);
  for (int dag = 0; dag < 300; ++dag) {
    std::unique_ptr<Module> module = makeRandomModule(rng);
    uint64_t shared =
        computeLowerBound(getPlanBuffers(computeLiveness(*module), 1));
    uint64_t unshared = computeLowerBound(
        getPlanBuffers(computeLiveness(*module, {false, false, false}), 1));
    EXPECT_LE(shared, unshared) << "dag " << dag;
  }
}
