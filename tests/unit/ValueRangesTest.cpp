//===- ValueRangesTest.cpp - The range analysis of lower-precision --------===//
//
// passes/precision/ValueRanges: every op of the table, with the fewest
// operands it takes and no attributes (Clip's bounds and CumSum's axis may
// be attributes or operands), gets a range for each float result without
// reading past its operands; and the intervals of a few ops, exactly.
//
//===----------------------------------------------------------------------===//
#include "passes/precision/ValueRanges.h"

#include "ir/Module.h"
#include "ir/OpInfo.h"
#include "ir/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

namespace snug {
namespace {

TEST(ValueRangesTest, EveryOpWithItsFewestOperands) {
  for (const ir::OpInfo &info : ir::getAllOps()) {
    ir::Module module("one_op");
    std::vector<ir::Value *> operands;
    for (int i = 0; i < info.minOperands; ++i)
      operands.push_back(module.addInput(
          "x" + std::to_string(i), ir::TensorType(ir::DType::F32, {2, 3})));
    int results = std::max(info.minResults, 1);
    std::vector<ir::TensorType> types(size_t(results),
                                      ir::TensorType(ir::DType::F32, {2, 3}));
    ir::Node *node = module.addNode(info.code, operands, types);
    auto ranges = computeValueRanges(module);
    for (int i = 0; i < results; ++i) {
      auto found = ranges.find(node->getResult(unsigned(i)));
      ASSERT_NE(found, ranges.end()) << info.name;
      EXPECT_FALSE(std::isnan(found->second.lo) ||
                   std::isnan(found->second.hi))
          << info.name;
      EXPECT_LE(found->second.lo, found->second.hi) << info.name;
    }
  }
}

TEST(ValueRangesTest, IntervalsOfOps) {
  auto module = ir::parseModule(
      "func @r(%x: f32[2,4], %w: f32[2] weight = [-3.0, 5.0], "
      "%three: f32[] weight = [3.0]) -> (f32[2,4], f32[2,4], f32[2,4], "
      "f32[2,1], f32[2,4], f32[2,4]) {\n"
      "  %m = ReduceMax(%x) {axes = [1], keepdims = 1} : f32[2,1]\n"
      "  %d = Sub(%x, %m) : f32[2,4]\n"
      "  %e = Exp(%d) : f32[2,4]\n"
      "  %c = Pow(%x, %three) : f32[2,4]\n"
      "  %s = ReduceSum(%x) {axes = [1], keepdims = 1} : f32[2,1]\n"
      "  %q = Mul(%x, %x) : f32[2,4]\n"
      "  %k = Clip(%x) {max = 1.0, min = 0.5} : f32[2,4]\n"
      "  return %e, %c, %q, %s, %k, %d\n"
      "}\n",
      "ranges.ir");
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  auto ranges = computeValueRanges(**module);
  auto of = [&](llvm::StringRef name) {
    for (const std::unique_ptr<ir::Node> &node : (*module)->getNodes())
      if (node->getResult(0)->getName() == name)
        return ranges.lookup(node->getResult(0));
    ADD_FAILURE() << name.str();
    return ValueRange{};
  };
  const double a = kOrdinaryActivation;
  EXPECT_EQ(of("d").lo, -2 * a);
  EXPECT_EQ(of("d").hi, 0);
  EXPECT_DOUBLE_EQ(of("e").hi, 1);
  EXPECT_EQ(of("c").hi, a * a * a);
  EXPECT_EQ(of("c").lo, -a * a * a);
  EXPECT_EQ(of("s").hi, 4 * a);
  EXPECT_EQ(of("q").lo, 0);
  EXPECT_EQ(of("q").hi, a * a);
  EXPECT_EQ(of("k").lo, 0.5);
  EXPECT_EQ(of("k").hi, 1);
}

} // namespace
} // namespace snug
