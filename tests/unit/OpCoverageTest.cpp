//===- OpCoverageTest.cpp - Every op of the table, implemented everywhere -===//
//
// The op table (core/Ops.def) is the one list of ops. These tests check it in
// both directions: every op in the table has a shape function, a host
// kernel, a CUDA lowering (views need none: the planner aliases them), a
// folding rule, or is marked as not foldable, and a split-batch rule; and
// nothing outside the table implements an op (a host kernel for a name the
// table does not list is a kernel nothing can reach). The traits are checked for consistency.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/KernelEmitter.h"
#include "ir/OpInfo.h"
#include "passes/memory/budget/SplitBatch.h"
#include "passes/simplify/ConstantEval.h"
#include "passes/training/GradientRules.h"
#include "ir/ShapeFunctions.h"
#include "runtime/host/Kernels.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

namespace snug {
namespace {

using ir::OpInfo;

TEST(OpCoverageTest, EveryOpHasAShapeFunction) {
  for (const OpInfo &info : ir::getAllOps())
    EXPECT_TRUE(hasShapeFunction(info.code)) << info.name;
}

TEST(OpCoverageTest, EveryOpHasAHostKernel) {
  for (const OpInfo &info : ir::getAllOps())
    EXPECT_NE(rt::findHostKernel(info.code), nullptr) << info.name;
}

TEST(OpCoverageTest, EveryOpHasACudaLoweringOrIsAView) {
  for (const OpInfo &info : ir::getAllOps()) {
    bool lowered = cuda::lookupEmitter(info.code) != nullptr;
    if (info.isView())
      EXPECT_FALSE(lowered) << info.name << " is a view: the planner aliases "
                                            "it, no kernel may run for it";
    else
      EXPECT_TRUE(lowered) << info.name << " has no CUDA lowering";
  }
}

// Constant folding evaluates through the host kernels, so every op the
// table calls foldable folds.
TEST(OpCoverageTest, EveryFoldableOpFolds) {
  for (const OpInfo &info : ir::getAllOps())
    EXPECT_EQ(canEvaluate(info.code), info.isFoldable()) << info.name;
}

// Gradient rules (passes/training/GradientRules*.cpp) are declared by the table's
// GRAD lines: each declared op has exactly one rule and no other op has one.
TEST(OpCoverageTest, GradientRulesMatchTheTable) {
  std::set<ir::OpCode> registered;
  for (auto table : getGradientRuleTables())
    for (const GradientRuleEntry &entry : table)
      EXPECT_TRUE(registered.insert(entry.op).second)
          << ir::getOpInfo(entry.op).name << " has two gradient rules";
  size_t declared = 0;
  for (const OpInfo &info : ir::getAllOps()) {
    bool claims = ir::declaresGradientRule(info.code);
    declared += claims;
    EXPECT_EQ(claims, findGradientRule(info.code) != nullptr)
        << info.name
        << (claims ? " has a GRAD line and no gradient rule"
                   : " has a gradient rule and no GRAD line in core/Ops.def");
  }
  EXPECT_EQ(declared, registered.size());
  std::printf("gradient rules: %zu of %zu ops\n", declared,
              ir::getAllOps().size());
}

// split-batch decides per op whether it may run on a slice of the batch
// (passes/memory/budget/BatchRules.def); an op without a line would reach
// its llvm_unreachable.
TEST(OpCoverageTest, EveryOpHasABatchRule) {
  for (const OpInfo &info : ir::getAllOps()) {
    const BatchRule &rule = getBatchRule(info.code);
    EXPECT_NE(rule.check, SplitCheck::None)
        << info.name << " has no line in BatchRules.def";
    // Shared operands broadcast along dim 0 for the elementwise ops and
    // snug.fused (whose body is elementwise) and for no other op.
    bool broadcasts = rule.shared == SharedOperands::Broadcast ||
                      rule.shared == SharedOperands::BroadcastOrParameters;
    EXPECT_EQ(broadcasts,
              info.isElementwise() || info.code == ir::OpCode::SnugFused)
        << info.name;
  }
}

TEST(OpCoverageTest, EveryCudaEmitterIsRegisteredOnce) {
  std::set<ir::OpCode> seen;
  for (llvm::ArrayRef<cuda::EmitterEntry> table : cuda::getEmitterFamilies())
    for (const cuda::EmitterEntry &entry : table)
      EXPECT_TRUE(seen.insert(entry.op).second)
          << ir::getOpInfo(entry.op).name << " has two CUDA emitters";
}

TEST(OpCoverageTest, TableEntriesAreConsistent) {
  std::set<std::string> names;
  for (size_t i = 0; i < ir::getAllOps().size(); ++i) {
    const OpInfo &info = ir::getAllOps()[i];
    EXPECT_EQ(size_t(info.code), i) << info.name;
    EXPECT_EQ(&ir::getOpInfo(info.code), &info) << info.name;
    EXPECT_EQ(ir::lookupOp(info.name), &info) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << info.name << " twice";
    EXPECT_NE(info.dtypes, 0) << info.name << " takes no element type";
    // In place is only safe for kernels that read element i before writing
    // it, which is what elementwise promises (and snug.fused, whose body is
    // elementwise, run per element).
    EXPECT_TRUE(!info.mayRunInPlace() || info.isElementwise() ||
                info.code == ir::OpCode::SnugFused)
        << info.name;
    EXPECT_TRUE(!info.isView() ||
                !(info.isElementwise() || info.mayRunInPlace()))
        << info.name;
    EXPECT_TRUE(!info.isCommutative() || info.isElementwise()) << info.name;
    bool broadcasts = info.family == ir::OpFamily::Broadcast ||
                      info.family == ir::OpFamily::Compare;
    EXPECT_TRUE(!broadcasts || info.isElementwise()) << info.name;
    // A conversion (Cast, snug.cast) is fusable but neither Elementwise (no
    // struct walked by ScalarOpTable.h; no lone epilogue) nor InPlace (its
    // element size may change), and its result dtype is its `to`
    // attribute, which scalar::Cast's users read.
    if (info.isConversion()) {
      EXPECT_FALSE(info.isElementwise()) << info.name;
      EXPECT_FALSE(info.mayRunInPlace()) << info.name;
      EXPECT_TRUE(info.isFusable()) << info.name;
      EXPECT_EQ(info.minOperands, 1) << info.name;
      EXPECT_EQ(info.maxOperands, 1) << info.name;
      EXPECT_EQ(info.maxResults, 1) << info.name;
      EXPECT_NE(ir::findAttrSpec(info.code, "to"), nullptr) << info.name;
    }
    EXPECT_GE(info.maxOperands < 0 ? 1 << 30 : info.maxOperands,
              info.minOperands)
        << info.name;
    EXPECT_GE(info.maxResults < 0 ? 1 << 30 : info.maxResults, info.minResults)
        << info.name;
  }
  EXPECT_EQ(ir::getAllOps().size(), ir::getAllOpsCount());
}

} // namespace
} // namespace snug
