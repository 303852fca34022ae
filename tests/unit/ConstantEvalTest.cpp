//===- ConstantEvalTest.cpp - Folding arithmetic, element by element -----===//
//
// Folding runs the host reference kernels: these check the plumbing
// (attributes, broadcasting, operands without data, kernel errors naming
// the node) and the cases where folding used to disagree with running
// (NaN through Relu/Sign/Max, out-of-range casts, INT64_MIN / -1). The
// op-by-op parity over special values is ScalarParityTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/simplify/ConstantEval.h"

#include "ir/Float16.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace snug;
using ir::Attribute;
using ir::DType;
using ir::TensorType;

namespace {
template <typename T> std::vector<uint8_t> bytesOf(std::vector<T> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> valuesOf(const std::vector<uint8_t> &bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// Builds one node over weight operands and evaluates it.
struct Fold {
  ir::Module module;
  std::vector<ir::Value *> operands;
  std::vector<std::vector<uint8_t>> data;

  template <typename T>
  Fold &operand(DType dtype, llvm::ArrayRef<int64_t> dims,
                std::vector<T> values) {
    data.push_back(bytesOf(values));
    operands.push_back(module.addWeight("w" + std::to_string(operands.size()),
                                        TensorType(dtype, dims), data.back()));
    return *this;
  }
  std::vector<uint8_t> run(llvm::StringRef op, TensorType result,
                           ir::AttributeMap attrs = {}) {
    ir::Node *node = module.addNode(op, operands, {result}, std::move(attrs));
    std::vector<OperandData> inputs;
    for (ir::Value *value : operands)
      inputs.push_back(module.getWeightData(value));
    auto results = evaluateNode(*node, inputs);
    EXPECT_TRUE(bool(results));
    if (!results || !*results)
      return {};
    return (**results)[0];
  }
};
} // namespace

TEST(ConstantEvalTest, GatherNegativeIndexAndBounds) {
  Fold fold;
  fold.operand<int64_t>(DType::I64, {4}, {10, 20, 30, 40})
      .operand<int64_t>(DType::I64, {2}, {-1, 1});
  auto result = fold.run("Gather", TensorType(DType::I64, {2}),
                         {{"axis", Attribute::getInt(0)}});
  EXPECT_EQ(valuesOf<int64_t>(result), (std::vector<int64_t>{40, 20}));

  Fold bad;
  bad.operand<int64_t>(DType::I64, {2}, {1, 2})
      .operand<int64_t>(DType::I64, {}, {5});
  ir::Node *node =
      bad.module.addNode("Gather", bad.operands, {TensorType(DType::I64, {})},
                         {{"axis", Attribute::getInt(0)}});
  auto results =
      evaluateNode(*node, {bad.module.getWeightData(bad.operands[0]),
                           bad.module.getWeightData(bad.operands[1])});
  ASSERT_FALSE(bool(results));
  EXPECT_EQ(toString(results.takeError()),
            "node #0 (Gather): index 5 out of range for dim 2 (indices must "
            "lie in [-2, 2))");
}

TEST(ConstantEvalTest, SliceTransposeConcat) {
  Fold slice;
  slice.operand<int32_t>(DType::I32, {6}, {0, 1, 2, 3, 4, 5});
  // 5 down to index 0 (end -1) by -2: 5, 3, 1.
  auto sliced = slice.run("Slice", TensorType(DType::I32, {3}),
                          {{"starts", Attribute::getInts({5})},
                           {"ends", Attribute::getInts({-1})},
                           {"axes", Attribute::getInts({0})},
                           {"steps", Attribute::getInts({-2})}});
  EXPECT_EQ(valuesOf<int32_t>(sliced), (std::vector<int32_t>{5, 3, 1}));

  Fold transpose;
  transpose.operand<float>(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto transposed = transpose.run("Transpose", TensorType(DType::F32, {3, 2}),
                                  {{"perm", Attribute::getInts({1, 0})}});
  EXPECT_EQ(valuesOf<float>(transposed),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));

  Fold concat;
  concat.operand<float>(DType::F32, {2, 1}, {1, 2})
      .operand<float>(DType::F32, {2, 2}, {3, 4, 5, 6});
  auto joined = concat.run("Concat", TensorType(DType::F32, {2, 3}),
                           {{"axis", Attribute::getInt(1)}});
  EXPECT_EQ(valuesOf<float>(joined), (std::vector<float>{1, 3, 4, 2, 5, 6}));
}

TEST(ConstantEvalTest, ArithmeticAndCasts) {
  Fold div;
  div.operand<int64_t>(DType::I64, {2}, {7, -7})
      .operand<int64_t>(DType::I64, {}, {2});
  // Integer division truncates toward zero.
  EXPECT_EQ(valuesOf<int64_t>(div.run("Div", TensorType(DType::I64, {2}))),
            (std::vector<int64_t>{3, -3}));

  Fold cast;
  cast.operand<float>(DType::F32, {3}, {1.9f, -1.9f, 65504.0f});
  EXPECT_EQ(valuesOf<int64_t>(cast.run("Cast", TensorType(DType::I64, {3}),
                                       {{"to", Attribute::getString("i64")}})),
            (std::vector<int64_t>{1, -1, 65504}));
  Fold half;
  half.operand<float>(DType::F32, {2}, {0.1f, 1.0f});
  auto halves =
      valuesOf<uint16_t>(half.run("Cast", TensorType(DType::F16, {2}),
                                  {{"to", Attribute::getString("f16")}}));
  EXPECT_EQ(halves, (std::vector<uint16_t>{floatToF16(0.1f), 0x3c00}));

  Fold where;
  where.operand<uint8_t>(DType::Bool, {2, 1}, {1, 0})
      .operand<float>(DType::F32, {2}, {1, 2})
      .operand<float>(DType::F32, {}, {-1});
  EXPECT_EQ(valuesOf<float>(where.run("Where", TensorType(DType::F32, {2, 2}))),
            (std::vector<float>{1, 2, -1, -1}));

  Fold expand;
  expand.operand<int64_t>(DType::I64, {2, 1}, {1, 2});
  EXPECT_EQ(
      valuesOf<int64_t>(expand.run("Expand", TensorType(DType::I64, {2, 3}),
                                   {{"shape", Attribute::getInts({2, 3})}})),
      (std::vector<int64_t>{1, 1, 1, 2, 2, 2}));
}

TEST(ConstantEvalTest, SpecialValuesFoldAsTheyRun) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Fold relu;
  relu.operand<float>(DType::F32, {3}, {nan, -0.0f, -1.0f});
  auto relus = valuesOf<float>(relu.run("Relu", TensorType(DType::F32, {3})));
  ASSERT_EQ(relus.size(), 3u);
  EXPECT_TRUE(std::isnan(relus[0]));
  EXPECT_TRUE(std::signbit(relus[1])); // Relu(-0) = -0, as onnxruntime
  EXPECT_EQ(relus[2], 0.0f);

  Fold sign;
  sign.operand<float>(DType::F32, {2}, {nan, -0.0f});
  auto signs = valuesOf<float>(sign.run("Sign", TensorType(DType::F32, {2})));
  ASSERT_EQ(signs.size(), 2u);
  EXPECT_TRUE(std::isnan(signs[0]));
  EXPECT_FALSE(std::signbit(signs[1]));

  Fold max;
  max.operand<float>(DType::F32, {2}, {nan, 1}).operand<float>(DType::F32, {2}, {1, nan});
  auto maxes = valuesOf<float>(max.run("Max", TensorType(DType::F32, {2})));
  ASSERT_EQ(maxes.size(), 2u);
  EXPECT_TRUE(std::isnan(maxes[0]));
  EXPECT_TRUE(std::isnan(maxes[1]));

  // Out of range and NaN to i64: INT64_MIN (onnxruntime's x86 rule); to i8
  // through i32, wrapped.
  Fold cast;
  cast.operand<float>(DType::F32, {3}, {1e19f, nan, -1e19f});
  EXPECT_EQ(valuesOf<int64_t>(cast.run("Cast", TensorType(DType::I64, {3}),
                                       {{"to", Attribute::getString("i64")}})),
            (std::vector<int64_t>(3, std::numeric_limits<int64_t>::min())));
  Fold narrow;
  narrow.operand<float>(DType::F32, {3}, {300.0f, -129.0f, 3e9f});
  EXPECT_EQ(valuesOf<int8_t>(narrow.run("Cast", TensorType(DType::I8, {3}),
                                        {{"to", Attribute::getString("i8")}})),
            (std::vector<int8_t>{44, 127, 0}));

  // Integer division never traps: INT64_MIN / -1 wraps, x / 0 is 0.
  Fold div;
  div.operand<int64_t>(DType::I64, {2},
                       {std::numeric_limits<int64_t>::min(), 5})
      .operand<int64_t>(DType::I64, {2}, {-1, 0});
  EXPECT_EQ(valuesOf<int64_t>(div.run("Div", TensorType(DType::I64, {2}))),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 0}));
  Fold mod;
  mod.operand<int64_t>(DType::I64, {2},
                       {std::numeric_limits<int64_t>::min(), -7})
      .operand<int64_t>(DType::I64, {2}, {-1, 2});
  EXPECT_EQ(valuesOf<int64_t>(mod.run("Mod", TensorType(DType::I64, {2}))),
            (std::vector<int64_t>{0, 1}));
}

TEST(ConstantEvalTest, OperandsWithoutData) {
  // Shape reads only its operand's type.
  ir::Module module;
  ir::Value *x = module.addInput("x", TensorType(DType::F32, {2, 5, 3}));
  ir::Node *shape = module.addNode("Shape", {x}, {TensorType(DType::I64, {3})});
  auto dims = evaluateNode(*shape, {OperandData()});
  ASSERT_TRUE(bool(dims)) << toString(dims.takeError());
  ASSERT_TRUE(bool(*dims));
  EXPECT_EQ(valuesOf<int64_t>((**dims)[0]), (std::vector<int64_t>{2, 5, 3}));
  // Relu needs its operand: not evaluated.
  ir::Node *relu = module.addNode("Relu", {x}, {TensorType(DType::F32, {2, 5, 3})});
  auto none = evaluateNode(*relu, {OperandData()});
  ASSERT_TRUE(bool(none));
  EXPECT_FALSE(bool(*none));
  // Foldable by the table with a host kernel (Conv included), or a view.
  EXPECT_TRUE(canEvaluate(ir::OpCode::Conv));
  EXPECT_TRUE(canEvaluate(ir::OpCode::Reshape));
  EXPECT_TRUE(canEvaluate(ir::OpCode::Acos));

  // Dropout's ratio without data: the identity of its data operand.
  Fold dropout;
  dropout.operand<float>(DType::F32, {2}, {1.5f, -2});
  ir::Value *ratio = dropout.module.addInput("ratio", TensorType(DType::F32, {}));
  ir::Node *node = dropout.module.addNode(
      "Dropout", {dropout.operands[0], ratio}, {TensorType(DType::F32, {2})});
  auto same = evaluateNode(
      *node, {dropout.module.getWeightData(dropout.operands[0]), OperandData()});
  ASSERT_TRUE(bool(same)) << toString(same.takeError());
  ASSERT_TRUE(bool(*same));
  EXPECT_EQ(valuesOf<float>((**same)[0]), (std::vector<float>{1.5f, -2}));
}

/// A result type whose size passes kMaxTensorBytes (or wraps 64 bits) is an
/// error naming the node, checked before anything is allocated: before, the
/// evaluator allocated getByteSize() bytes, which wraps for such dims.
TEST(ConstantEvalTest, HugeResultIsAnErrorNotAnAllocation) {
  ir::Module module;
  ir::Value *shape = module.addWeight("s", TensorType(DType::I64, {2}),
                                      bytesOf<int64_t>({1, 1}));
  // 2^32 * 2^32 f32 elements: the byte size wraps to 0 in 64 bits.
  int64_t big = int64_t(1) << 32;
  ir::Node *fill = module.addNode("ConstantOfShape", {shape},
                                  {TensorType(DType::F32, {big, big})});
  fill->setName("fill");
  auto results = evaluateNode(*fill, {module.getWeightData(shape)});
  ASSERT_FALSE(bool(results));
  std::string message = toString(results.takeError());
  EXPECT_NE(message.find("node 'fill' (ConstantOfShape)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("too large to evaluate"), std::string::npos)
      << message;
  // A large but valid type is not refused by the evaluator (the pass's
  // max-bytes decides what is worth folding): 2^20 i8 elements.
  ir::Node *ok = module.addNode("ConstantOfShape", {shape},
                                {TensorType(DType::I8, {1024, 1024})},
                                {{"value", Attribute::getTensor(
                                               TensorType(DType::I8, {1}),
                                               bytesOf<int8_t>({3}))}});
  auto filled = evaluateNode(*ok, {module.getWeightData(shape)});
  ASSERT_TRUE(bool(filled)) << toString(filled.takeError());
  ASSERT_TRUE(bool(*filled));
  ASSERT_EQ((**filled)[0].size(), 1024u * 1024u);
  EXPECT_EQ((**filled)[0].back(), 3);
}

/// Range over i64 wraps past INT64_MAX (two's complement, as the CUDA
/// emitter computes it) instead of overflowing a signed integer.
TEST(ConstantEvalTest, IntegerRangeWraps) {
  Fold range;
  int64_t max = std::numeric_limits<int64_t>::max();
  range.operand<int64_t>(DType::I64, {}, {max - 1})
      .operand<int64_t>(DType::I64, {}, {max})
      .operand<int64_t>(DType::I64, {}, {1});
  // The result type (3 elements) is given: the kernel fills what it is told.
  auto values = valuesOf<int64_t>(range.run("Range", TensorType(DType::I64, {3})));
  EXPECT_EQ(values, (std::vector<int64_t>{max - 1, max,
                                          std::numeric_limits<int64_t>::min()}));
}
