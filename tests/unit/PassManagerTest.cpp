//===- PassManagerTest.cpp - Pipelines, options, dumps, statistics --------===//
#include "ir/Module.h"
#include "ir/Parser.h"
#include "passes/PassManager.h"
#include "passes/Passes.h"

#include <gtest/gtest.h>

using namespace snug;

static const char *deadCode = "func @f(%x: f32[2]) -> f32[2] {\n"
                              "  %0 = Relu(%x) : f32[2]\n"
                              "  %1 = Neg(%0) : f32[2]\n"
                              "  %2 = Exp(%x) : f32[2]\n"
                              "  return %2\n}\n";

static std::unique_ptr<ir::Module> parse(llvm::StringRef text) {
  auto module = ir::parseModule(text, "pm.ir");
  EXPECT_TRUE(static_cast<bool>(module));
  return module ? std::move(*module) : nullptr;
}

TEST(PassManagerTest, RunsPipelineAndCollectsStatistics) {
  std::string log;
  llvm::raw_string_ostream os(log);
  PassManagerOptions options;
  options.diagnostics = &os;
  options.statistics = true;
  options.printIrAfter = {"dce"};
  PassManager passManager(options);
  ASSERT_FALSE(static_cast<bool>(passManager.addPipeline("dce")));
  auto module = parse(deadCode);
  ASSERT_FALSE(static_cast<bool>(passManager.run(*module)));
  EXPECT_EQ(module->getNodes().size(), 1u);
  os.flush();
  EXPECT_NE(log.find("// -----// IR Dump After dce //----- //"),
            std::string::npos);
  EXPECT_NE(log.find("2 dce - nodes-erased"), std::string::npos) << log;
}

TEST(PassManagerTest, DisabledPassDoesNotRun) {
  PassManagerOptions options;
  options.disabledPasses = {"dce"};
  PassManager passManager(options);
  ASSERT_FALSE(static_cast<bool>(passManager.addPipeline("dce")));
  auto module = parse(deadCode);
  ASSERT_FALSE(static_cast<bool>(passManager.run(*module)));
  EXPECT_EQ(module->getNodes().size(), 3u);
}

TEST(PassManagerTest, RejectsBadPipelines) {
  struct Case {
    const char *pipeline;
    const char *message;
  } cases[] = {
      {"dce,nope", "unknown pass 'nope'"},
      {"dce,,dce", "empty pass name"},
      {"dce{", "unbalanced '{'"},
      {"dce}", "unbalanced '}'"},
      {"dce{x=1}", "pass 'dce' has no option 'x'"},
      {"dce{x}", "option 'x' of 'dce' is not key=value"},
  };
  for (const Case &c : cases) {
    PassManager passManager;
    llvm::Error error = passManager.addPipeline(c.pipeline);
    ASSERT_TRUE(static_cast<bool>(error)) << c.pipeline;
    std::string message = toString(std::move(error));
    EXPECT_NE(message.find(c.message), std::string::npos)
        << c.pipeline << ": " << message;
  }
}

namespace {
/// Breaks the schedule on purpose, to show verify-after-each catches it.
class SwapFirstTwoPass : public Pass {
public:
  llvm::StringRef getName() const override { return "swap-first-two"; }
  llvm::Expected<bool> run(ir::Module &module) override {
    auto nodes = module.getNodes();
    std::vector<ir::Node *> order;
    for (const auto &node : nodes)
      order.push_back(node.get());
    std::swap(order[0], order[1]);
    module.setSchedule(order);
    return true;
  }
};
} // namespace

TEST(PassManagerTest, VerifyEachCatchesABrokenModule) {
  PassManagerOptions options;
  options.verifyEach = true;
  PassManager passManager(options);
  passManager.addPass(std::make_unique<SwapFirstTwoPass>());
  auto module = parse(deadCode);
  llvm::Error error = passManager.run(*module);
  ASSERT_TRUE(static_cast<bool>(error));
  std::string message = toString(std::move(error));
  EXPECT_NE(message.find("does not verify after pass 'swap-first-two'"),
            std::string::npos)
      << message;
}

TEST(PassManagerTest, DceKeepsEverythingAnOutputNeeds) {
  auto module = parse("func @f(%x: f32[2]) -> (f32[2], f32[2]) {\n"
                      "  %0 = Relu(%x) : f32[2]\n"
                      "  %1, %2 = Split(%0) : f32[1], f32[1]\n"
                      "  %3 = Neg(%0) : f32[2]\n"
                      "  return %3, %0\n}\n");
  auto dce = createPassByName("dce");
  llvm::Expected<bool> changed = dce->run(*module);
  ASSERT_TRUE(static_cast<bool>(changed));
  EXPECT_TRUE(*changed);
  ASSERT_EQ(module->getNodes().size(), 2u);
  EXPECT_EQ(module->getNodes()[0]->getOpName(), "Relu");
  EXPECT_EQ(module->getNodes()[1]->getOpName(), "Neg");
  changed = dce->run(*module);
  ASSERT_TRUE(static_cast<bool>(changed));
  EXPECT_FALSE(*changed);
}

TEST(PassManagerTest, PrintsPipelineStepsAsItReadsThem) {
  PipelineSteps steps = {
      {"dce", {}},
      {"fuse", {{"max-ops", "8"}, {"patterns", "layernorm+elementwise"}}},
      {"plan-memory", {{"alignment", "64"}}}};
  std::string text = printPipeline(steps);
  EXPECT_EQ(text, "dce,fuse{max-ops=8 patterns=layernorm+elementwise},"
                  "plan-memory{alignment=64}");
  EXPECT_EQ(printPipeline({}), "");
  PassManager passManager;
  ASSERT_FALSE(static_cast<bool>(passManager.addPipeline(text)));
  EXPECT_EQ(passManager.size(), 3u);
}

TEST(PassManagerTest, InsertsAStepBeforeAPass) {
  PipelineSteps steps = {{"dce", {}}, {"fuse", {}}, {"dce", {}}};
  EXPECT_TRUE(insertStepBefore(steps, "dce", {"fold-constants", {}}));
  EXPECT_TRUE(
      insertStepBefore(steps, "fuse", {"lower-precision", {{"to", "f16"}}}));
  EXPECT_EQ(printPipeline(steps),
            "fold-constants,dce,lower-precision{to=f16},fuse,dce");
  // No such pass: nothing is inserted.
  EXPECT_FALSE(insertStepBefore(steps, "remat", {"offload", {}}));
  EXPECT_EQ(steps.size(), 5u);
}

TEST(PassManagerTest, RemovesEveryStepOfAPass) {
  PipelineSteps steps = {{"dce", {}},
                         {"fuse", {{"max-ops", "8"}}},
                         {"tf32-math", {{"keep", "Conv"}}},
                         {"fuse", {}}};
  EXPECT_EQ(removeSteps(steps, "fuse"), 2u);
  EXPECT_EQ(printPipeline(steps), "dce,tf32-math{keep=Conv}");
  EXPECT_EQ(removeSteps(steps, "remat"), 0u);
  EXPECT_EQ(steps.size(), 2u);
}
