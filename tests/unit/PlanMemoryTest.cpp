//===- PlanMemoryTest.cpp - Planning random graphs end to end -------------===//
//
// Property tests over random DAGs: under every planner strategy and with
// every sharing rule on or off, the plan passes verifyMemoryPlan (inside
// planModuleMemory) and the independent verify-plan pass, the arena is at
// least the lower bound, every scratch buffer (the cuBLAS workspace of a
// long-K MatMul) is what the target asked for, lives at its node's step
// only and overlaps no value live there, the problem getArenaPlanBuffers
// reads back from the module has the plan's bound and is solved by its
// offsets, and the schedule pass never raises the bound and keeps a module
// that verifies. Rematerialization keeps every output bit for bit (the
// module evaluated node by node with the host kernels), never raises the
// arena, and a smaller budget never ends at a larger one.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/simplify/ConstantEval.h"
#include "passes/memory/PlanMemory.h"
#include "passes/Passes.h"

#include <gtest/gtest.h>

#include <random>

using namespace snug;
using namespace snug::ir;

/// A random DAG over f32[1,k] values: elementwise unary and binary ops,
/// views, Concat along axis 1 (batch 1, so concat in place applies), Split,
/// DenseNet-style blocks of prefix Concats and MatMuls with a weight (those
/// with K >= 512 ask for a cuBLAS workspace), with random fan-out and some
/// dead values.
static std::unique_ptr<Module> makeRandomModule(std::mt19937_64 &rng) {
  auto module = std::make_unique<Module>("random");
  auto pick = [&](size_t bound) { return size_t(rng() % bound); };
  std::vector<Value *> values;
  for (size_t i = 0, inputs = 1 + pick(2); i < inputs; ++i)
    values.push_back(
        module->addInput("in" + std::to_string(i),
                         TensorType(DType::F32,
                                    {1, int64_t(1 + pick(pick(3) ? 300
                                                                 : 1500))})));
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
    switch (pick(9)) {
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
    case 7: {
      int64_t columns = 1 + pick(16);
      Value *weight = module->addElidedWeight(
          "w" + std::to_string(n), TensorType(DType::F32, {width, columns}));
      values.push_back(module
                           ->addNode("MatMul", {a, weight},
                                     {TensorType(DType::F32, {1, columns})})
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
  size_t scratchBuffers = 0;
  for (int dag = 0; dag < dags; ++dag) {
    std::unique_ptr<Module> module = makeRandomModule(rng);
    ASSERT_FALSE(static_cast<bool>(verifyModule(*module)));
    PlanMemoryOptions options;
    options.alignment = uint64_t(1) << (rng() % 9); // 1 .. 256
    options.planner.timeLimitSeconds = 0.005;
    options.sharing = {bool(rng() % 4), bool(rng() % 4), bool(rng() % 4)};
    PlannerStrategy strategy = strategies[dag % 5];
    options.planner.strategy = strategy;
    options.scratch.cuda = rng() % 4 != 0;
    options.scratch.cublasWorkspaceCap = 256 * (1 + rng() % 256);
    llvm::Expected<ModuleMemoryPlan> plan = planModuleMemory(*module, options);
    ASSERT_TRUE(static_cast<bool>(plan))
        << "dag " << dag << ": " << toString(plan.takeError());
    EXPECT_GE(plan->arenaBytes, plan->lowerBoundBytes);
    EXPECT_LE(plan->arenaBytes, plan->noReuseBytes);
    // Scratch: exactly the requests, at their step alone, clear of every
    // value live there (in address, by the values' own offsets).
    auto nodes = module->getNodes();
    size_t requests = 0;
    for (size_t step = 0; step < nodes.size(); ++step) {
      ScratchRequest request = getScratchRequest(*nodes[step], options.scratch);
      const ArenaBuffer *scratch = plan->getScratch(step);
      if (!request.bytes) {
        EXPECT_EQ(scratch, nullptr) << "dag " << dag << " step " << step;
        continue;
      }
      ++requests;
      ASSERT_NE(scratch, nullptr) << "dag " << dag << " step " << step;
      EXPECT_EQ(scratch->bytes, request.bytes);
      EXPECT_LE(scratch->bytes, options.scratch.cublasWorkspaceCap);
      EXPECT_EQ(scratch->firstStep, int64_t(step));
      EXPECT_EQ(scratch->lastStep, int64_t(step));
      EXPECT_EQ(scratch->node, nodes[step].get());
      EXPECT_EQ(scratch->offset % 256, 0u);
      EXPECT_LE(scratch->offset + scratch->bytes, plan->arenaBytes);
      for (const auto &entry : plan->intervals) {
        const Value *value = entry.first;
        uint64_t bytes = value->getType().getByteSize();
        if (entry.second.first > int64_t(step) ||
            entry.second.second < int64_t(step) || !bytes)
          continue;
        uint64_t offset = *value->getArenaOffset();
        EXPECT_FALSE(offset < scratch->offset + scratch->bytes &&
                     scratch->offset < offset + bytes)
            << "dag " << dag << ": the scratch of step " << step << " ["
            << scratch->offset << ", " << scratch->offset + scratch->bytes
            << ") overlaps %" << value->getName().str() << " [" << offset
            << ", " << offset + bytes << ")";
      }
    }
    EXPECT_EQ(plan->getNumScratchBuffers(), requests);
    scratchBuffers += requests;
    // The packing problem read back from the module alone (what snugc
    // --emit=buffers writes): the plan's buffers numbered by index, with
    // the plan's bound and peak, and the recorded offsets solve it.
    llvm::Expected<ModuleMemoryPlan> recorded = getModuleMemoryPlan(*module);
    ASSERT_TRUE(static_cast<bool>(recorded))
        << "dag " << dag << ": " << toString(recorded.takeError());
    std::vector<PlanBuffer> problem = getArenaPlanBuffers(*recorded);
    ASSERT_EQ(problem.size(), plan->buffers.size()) << "dag " << dag;
    int64_t peak = -1;
    EXPECT_EQ(computeLowerBound(problem, &peak), plan->lowerBoundBytes)
        << "dag " << dag;
    EXPECT_EQ(peak, plan->peakStep) << "dag " << dag;
    MemoryPlan solution;
    solution.arenaBytes = recorded->arenaBytes;
    for (size_t i = 0; i < problem.size(); ++i) {
      EXPECT_EQ(problem[i].id, int64_t(i));
      EXPECT_EQ(problem[i].alignment,
                recorded->buffers[i].kind == ArenaBuffer::Kind::Scratch
                    ? std::max<uint64_t>(options.alignment, 256)
                    : options.alignment);
      solution.offsets.push_back(recorded->buffers[i].offset);
    }
    llvm::Error solved = verifyMemoryPlan(problem, solution);
    EXPECT_FALSE(static_cast<bool>(solved))
        << "dag " << dag << ": " << toString(std::move(solved));
    // The independent check re-derives liveness from the IR offsets.
    llvm::Expected<bool> checked =
        createPassByName("verify-plan")->run(*module);
    ASSERT_TRUE(static_cast<bool>(checked))
        << "dag " << dag << ": " << toString(checked.takeError());
  }
  // The graphs must exercise scratch at all for the checks above to mean
  // anything.
  EXPECT_GT(scratchBuffers, size_t(dags / 4));
}

// A textual round trip keeps the plan: the scratch triples print as a
// module attribute, and verify-plan checks the parsed module.
TEST(PlanMemoryTest, ThePlanSurvivesPrintingAndParsing) {
  auto module = std::make_unique<Module>("m");
  Value *x = module->addInput("x", TensorType(DType::F32, {1, 4096}));
  Value *w = module->addElidedWeight("w", TensorType(DType::F32, {4096, 8}));
  Value *y = module->addNode("MatMul", {x, w}, {TensorType(DType::F32, {1, 8})})
                 ->getResult(0);
  module->setOutputs({y});
  llvm::Expected<ModuleMemoryPlan> plan =
      planModuleMemory(*module, PlanMemoryOptions());
  ASSERT_TRUE(static_cast<bool>(plan)) << toString(plan.takeError());
  const ArenaBuffer *scratch = plan->getScratch(0);
  ASSERT_NE(scratch, nullptr);
  // 1 x 4096 by 4096 x 8: one tile, 16 slices of 8 floats; the 16 KiB floor.
  EXPECT_EQ(scratch->bytes, 16384u);
  const Attribute *recorded = module->getAttribute("scratch");
  ASSERT_NE(recorded, nullptr);
  EXPECT_EQ(recorded->getInts().vec(),
            (std::vector<int64_t>{0, int64_t(scratch->offset), 16384}));
  std::string text;
  llvm::raw_string_ostream os(text);
  printModule(*module, os);
  auto parsed = parseModule(os.str(), "planned.ir");
  ASSERT_TRUE(static_cast<bool>(parsed)) << toString(parsed.takeError());
  llvm::Expected<ModuleMemoryPlan> reread = getModuleMemoryPlan(**parsed);
  ASSERT_TRUE(static_cast<bool>(reread)) << toString(reread.takeError());
  EXPECT_EQ(reread->arenaBytes, plan->arenaBytes);
  ASSERT_EQ(reread->buffers.size(), plan->buffers.size());
  ASSERT_NE(reread->getScratch(0), nullptr);
  EXPECT_EQ(reread->getScratch(0)->offset, scratch->offset);
  EXPECT_EQ(reread->getScratch(0)->bytes, 16384u);
  llvm::Expected<bool> checked = createPassByName("verify-plan")->run(**parsed);
  EXPECT_TRUE(static_cast<bool>(checked)) << toString(checked.takeError());
  // The host target plans no scratch.
  PlanMemoryOptions host;
  host.scratch.cuda = false;
  llvm::Expected<ModuleMemoryPlan> hostPlan = planModuleMemory(*module, host);
  ASSERT_TRUE(static_cast<bool>(hostPlan));
  EXPECT_EQ(hostPlan->getNumScratchBuffers(), 0u);
  EXPECT_EQ(module->getAttribute("scratch"), nullptr);
  EXPECT_LT(hostPlan->arenaBytes, plan->arenaBytes);
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

/// The outputs of `module` on inputs filled from `seed`, evaluated node by
/// node with the host kernels (evaluateModule), as bytes. The random DAGs'
/// weights are elided: they read fixed values of their size.
static std::vector<std::vector<uint8_t>> evaluate(const Module &module,
                                                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint8_t>> inputs;
  for (const Value *input : module.getInputs()) {
    std::vector<float> values(input->getType().getByteSize() / 4);
    for (float &v : values)
      v = float(int(rng() % 2001) - 1000) / 1000.0f;
    const uint8_t *bytes = reinterpret_cast<const uint8_t *>(values.data());
    inputs.emplace_back(bytes, bytes + values.size() * 4);
  }
  llvm::DenseMap<const Value *, std::vector<uint8_t>> weights;
  auto elided = [&](const Value &weight) -> llvm::ArrayRef<uint8_t> {
    std::vector<uint8_t> &bytes = weights[&weight];
    if (bytes.empty()) {
      std::vector<float> values(weight.getType().getByteSize() / 4);
      for (size_t k = 0; k < values.size(); ++k)
        values[k] = float(int(k % 7) - 3) / 8.0f;
      const uint8_t *raw = reinterpret_cast<const uint8_t *>(values.data());
      bytes.assign(raw, raw + values.size() * 4);
    }
    return bytes;
  };
  llvm::Expected<std::vector<std::vector<uint8_t>>> outputs =
      evaluateModule(module, inputs, nullptr, elided);
  if (!outputs) {
    ADD_FAILURE() << llvm::toString(outputs.takeError());
    return {};
  }
  return std::move(*outputs);
}

TEST(PlanMemoryTest, RematKeepsResultsAndNeverRaisesTheArena) {
  std::mt19937_64 rng(23);
  unsigned changedDags = 0;
  for (int dag = 0; dag < 120; ++dag) {
    std::mt19937_64 copyRng = rng;
    std::unique_ptr<Module> module = makeRandomModule(rng);
    llvm::Expected<ModuleMemoryPlan> free =
        planModuleMemory(*module, PlanMemoryOptions());
    ASSERT_TRUE(static_cast<bool>(free));
    std::vector<std::vector<uint8_t>> expected = evaluate(*module, dag);
    uint64_t previous = free->arenaBytes;
    // Budgets from 90 % of the arena down: each ends no higher than the
    // plan without remat and no higher than the bigger budget before it.
    for (uint64_t percent : {90, 70, 50}) {
      std::mt19937_64 again = copyRng;
      std::unique_ptr<Module> variant = makeRandomModule(again);
      uint64_t budget = std::max<uint64_t>(1, free->arenaBytes * percent / 100);
      std::unique_ptr<Pass> remat = createPassByName("remat");
      ASSERT_FALSE(static_cast<bool>(
          remat->setOption("arena-budget", std::to_string(budget))));
      llvm::Expected<bool> changed = remat->run(*variant);
      ASSERT_TRUE(static_cast<bool>(changed)) << "dag " << dag;
      ASSERT_FALSE(static_cast<bool>(verifyModule(*variant))) << "dag " << dag;
      llvm::Expected<ModuleMemoryPlan> plan =
          planModuleMemory(*variant, PlanMemoryOptions());
      ASSERT_TRUE(static_cast<bool>(plan));
      ASSERT_FALSE(static_cast<bool>(
          createPassByName("verify-plan")->run(*variant).takeError()));
      EXPECT_LE(plan->arenaBytes, free->arenaBytes)
          << "dag " << dag << " remat said "
          << remat->getStatistics().lookup("arena-after") << " from "
          << remat->getStatistics().lookup("arena-before");
      EXPECT_LE(plan->arenaBytes, previous) << "dag " << dag << " " << percent;
      previous = plan->arenaBytes;
      changedDags += *changed;
      EXPECT_EQ(evaluate(*variant, dag), expected) << "dag " << dag;
    }
  }
  // The property is not vacuous: some DAGs do get rematerialized.
  EXPECT_GT(changedDags, 10u);
}

// Offload (passes/memory/budget/Offload.cpp) over a link so fast that every value live
// across a peak qualifies, at three budgets: the copies out to pinned host
// memory and back keep every output bit for bit, the module and both its
// plans (the arena and the pinned host region) verify, and the arena never
// ends above the plan without offload.
TEST(PlanMemoryTest, OffloadKeepsResultsAndNeverRaisesTheArena) {
  std::mt19937_64 rng(29);
  unsigned offloadedDags = 0;
  for (int dag = 0; dag < 60; ++dag) {
    std::mt19937_64 copyRng = rng;
    std::unique_ptr<Module> module = makeRandomModule(rng);
    llvm::Expected<ModuleMemoryPlan> free =
        planModuleMemory(*module, PlanMemoryOptions());
    ASSERT_TRUE(static_cast<bool>(free));
    std::vector<std::vector<uint8_t>> expected = evaluate(*module, dag);
    for (uint64_t percent : {90, 70, 50}) {
      std::mt19937_64 again = copyRng;
      std::unique_ptr<Module> variant = makeRandomModule(again);
      uint64_t budget = std::max<uint64_t>(1, free->arenaBytes * percent / 100);
      std::unique_ptr<Pass> offload = createPassByName("offload");
      ASSERT_FALSE(static_cast<bool>(
          offload->setOption("arena-budget", std::to_string(budget))));
      ASSERT_FALSE(static_cast<bool>(
          offload->setOption("host-bandwidth", "1000000")));
      llvm::Expected<bool> changed = offload->run(*variant);
      ASSERT_TRUE(static_cast<bool>(changed)) << "dag " << dag;
      ASSERT_FALSE(static_cast<bool>(verifyModule(*variant))) << "dag " << dag;
      llvm::Expected<ModuleMemoryPlan> plan =
          planModuleMemory(*variant, PlanMemoryOptions());
      ASSERT_TRUE(static_cast<bool>(plan));
      ASSERT_FALSE(static_cast<bool>(
          createPassByName("verify-plan")->run(*variant).takeError()));
      EXPECT_LE(plan->arenaBytes, free->arenaBytes) << "dag " << dag;
      EXPECT_EQ(plan->hostBuffers.empty(), !*changed) << "dag " << dag;
      offloadedDags += *changed;
      EXPECT_EQ(evaluate(*variant, dag), expected) << "dag " << dag;
    }
  }
  // Not vacuous: some DAGs do send values to pinned host memory.
  EXPECT_GT(offloadedDags, 5u);
}

// Issue 41: computeLiveness tries Concat operands out of their result one
// rebuild at a time; on a 20,000-node fan-out (one input, 20,000 Relus, one
// Concat of them all) the 64 trials of each of the four liveness runs took
// 9 s of planning. The trials are bounded by the steps they visit together:
// a short module keeps all 64, a 20,000-step one gets 6.
TEST(PlanMemoryTest, ConcatTrialsAreBoundedOnLongModules) {
  for (int64_t width : {200, 20000}) {
    Module module("fan");
    Value *x = module.addInput("x", TensorType(DType::F32, {1, 16}));
    std::vector<Value *> pieces;
    for (int64_t i = 0; i < width; ++i)
      pieces.push_back(
          module.addNode("Relu", {x}, {x->getType()})->getResult(0));
    Value *y = module
                   .addNode("Concat", pieces,
                            {TensorType(DType::F32, {width, 16})},
                            {{"axis", Attribute::getInt(0)}})
                   ->getResult(0);
    module.setOutputs({y});
    LivenessInfo info = computeLiveness(module);
    EXPECT_EQ(info.numSteps, width + 1);
    if (width == 200)
      EXPECT_EQ(info.concatTrials, 64u);
    else
      EXPECT_EQ(info.concatTrials, (size_t(1) << 17) / size_t(width + 1));
  }
}
