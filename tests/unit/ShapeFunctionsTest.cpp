//===- ShapeFunctionsTest.cpp - Result types of the supported ops ---------===//
//
// Each test states a case as ONNX defines it (the arithmetic in a comment
// where it is not obvious) and checks the shape function's answer, or that
// it rejects the case with a reason.
//
//===----------------------------------------------------------------------===//
#include "ir/ShapeFunctions.h"

#include "gtest/gtest.h"

using namespace snug;
using ir::Attribute;
using ir::AttributeMap;
using ir::DType;
using ir::TensorType;

namespace {
struct Case {
  std::string op;
  std::vector<TensorType> operands;
  AttributeMap attributes;
  unsigned numResults = 1;

  llvm::Expected<ResultTypes> infer() const {
    std::vector<const TensorType *> pointers;
    for (const TensorType &type : operands)
      pointers.push_back(&type);
    const ir::OpInfo *info = ir::lookupOp(op);
    if (!info)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "not in the op table: " + op);
    ShapeQuery query{info->code, pointers, attributes, numResults};
    return inferResultTypes(query);
  }
  /// The first result type as text, or "error: reason".
  std::string result() const {
    auto types = infer();
    if (!types)
      return "error: " + toString(types.takeError());
    return (*types)[0].str();
  }
};

TensorType f32(llvm::ArrayRef<int64_t> dims) {
  return TensorType(DType::F32, dims);
}
Attribute ints(llvm::ArrayRef<int64_t> values) {
  return Attribute::getInts(values);
}
} // namespace

TEST(ShapeFunctionsTest, ElementwiseFamilies) {
  EXPECT_EQ((Case{"Relu", {f32({2, 3})}, {}}.result()), "f32[2,3]");
  EXPECT_EQ((Case{"Add", {f32({4, 1, 3}), f32({5, 1})}, {}}.result()),
            "f32[4,5,3]");
  EXPECT_EQ((Case{"Less", {f32({3}), f32({2, 1})}, {}}.result()), "bool[2,3]");
  EXPECT_EQ((Case{"Add", {f32({3}), f32({4})}, {}}.result()),
            "error: operand shapes do not broadcast: [3] and f32[4]");
  EXPECT_EQ((Case{"Add", {f32({3}), TensorType(DType::I64, {3})}, {}}.result()),
            "error: operand 1 has element type i64, operand 0 has f32");
  // Where takes its dtype from X and broadcasts all three.
  EXPECT_EQ(
      (Case{"Where", {TensorType(DType::Bool, {2, 1}), f32({3}), f32({1})}, {}}
           .result()),
      "f32[2,3]");
  EXPECT_EQ(
      (Case{"Pow", {f32({2, 3}), TensorType(DType::I64, {})}, {}}.result()),
      "f32[2,3]");
  EXPECT_EQ((Case{"Cast", {f32({2})}, {{"to", Attribute::getString("f16")}}}
                 .result()),
            "f16[2]");
}

TEST(ShapeFunctionsTest, Convolution) {
  AttributeMap attrs{{"kernel_shape", ints({3, 3})},
                     {"strides", ints({2, 2})},
                     {"pads", ints({1, 1, 1, 1})},
                     {"dilations", ints({1, 1})},
                     {"group", Attribute::getInt(1)}};
  // (224 + 2 - 3) / 2 + 1 = 112
  EXPECT_EQ((Case{"Conv", {f32({1, 3, 224, 224}), f32({64, 3, 3, 3})}, attrs}
                 .result()),
            "f32[1,64,112,112]");
  // Dilation 2: extent 5, (10 - 5) / 1 + 1 = 6.
  AttributeMap dilated{{"kernel_shape", ints({3})}, {"dilations", ints({2})}};
  EXPECT_EQ((Case{"Conv", {f32({1, 4, 10}), f32({8, 4, 3})}, dilated}.result()),
            "f32[1,8,6]");
  // Depthwise: group = channels, weight [C, 1, k, k].
  AttributeMap depthwise{{"kernel_shape", ints({3, 3})},
                         {"pads", ints({1, 1, 1, 1})},
                         {"group", Attribute::getInt(32)}};
  EXPECT_EQ((Case{"Conv", {f32({1, 32, 7, 7}), f32({32, 1, 3, 3})}, depthwise}
                 .result()),
            "f32[1,32,7,7]");
  EXPECT_EQ(
      (Case{"Conv",
            {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})},
            {{"kernel_shape", ints({3, 3})}}}
           .result()),
      "error: input channels 3, weight f32[4,2,3,3] and group 1 disagree");
  // ConvTranspose: 2 * (4 - 1) + 0 + 3 - 1 - 1 = 7, channels W[1] * group.
  AttributeMap transposed{{"kernel_shape", ints({3, 3})},
                          {"strides", ints({2, 2})},
                          {"pads", ints({1, 1, 1, 1})}};
  EXPECT_EQ(
      (Case{"ConvTranspose", {f32({1, 8, 4, 4}), f32({8, 5, 3, 3})}, transposed}
           .result()),
      "f32[1,5,7,7]");
}

TEST(ShapeFunctionsTest, Pooling) {
  // floor((112 + 2 - 3) / 2) + 1 = 56
  AttributeMap pool{{"kernel_shape", ints({3, 3})},
                    {"strides", ints({2, 2})},
                    {"pads", ints({1, 1, 1, 1})}};
  EXPECT_EQ((Case{"MaxPool", {f32({1, 64, 112, 112})}, pool}.result()),
            "f32[1,64,56,56]");
  // ceil_mode: ceil((6 - 3) / 2) + 1 = 3; the last window starts at 4 < 6.
  AttributeMap ceil{{"kernel_shape", ints({3})},
                    {"strides", ints({2})},
                    {"ceil_mode", Attribute::getInt(1)}};
  EXPECT_EQ((Case{"MaxPool", {f32({1, 1, 6})}, ceil}.result()), "f32[1,1,3]");
  // ceil_mode where the extra window would start in the end padding only:
  // in 5, k 2, s 2, pads 0/1: ceil(4/2)+1 = 3, but window 3 starts at 4 < 5
  // is fine; with in 4, pads 0/1: ceil(3/2)+1 = 3 starts at 4 >= 4: 2.
  AttributeMap padded{{"kernel_shape", ints({2})},
                      {"strides", ints({2})},
                      {"pads", ints({0, 1})},
                      {"ceil_mode", Attribute::getInt(1)}};
  EXPECT_EQ((Case{"AveragePool", {f32({1, 1, 4})}, padded}.result()),
            "f32[1,1,2]");
  EXPECT_EQ((Case{"GlobalAveragePool", {f32({2, 8, 7, 7})}, {}}.result()),
            "f32[2,8,1,1]");
  auto withIndices =
      Case{"MaxPool",
           {f32({1, 1, 4, 4})},
           {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}},
           2}
          .infer();
  ASSERT_TRUE(bool(withIndices));
  EXPECT_EQ((*withIndices)[1].str(), "i64[1,1,2,2]");
}

TEST(ShapeFunctionsTest, MatrixProducts) {
  EXPECT_EQ((Case{"MatMul", {f32({2, 4, 16, 8}), f32({8, 16})}, {}}.result()),
            "f32[2,4,16,16]");
  EXPECT_EQ((Case{"MatMul", {f32({3, 1, 5, 6}), f32({4, 6, 2})}, {}}.result()),
            "f32[3,4,5,2]");
  // 1-d operands are promoted and the added dim removed.
  EXPECT_EQ((Case{"MatMul", {f32({6}), f32({4, 6, 2})}, {}}.result()),
            "f32[4,2]");
  EXPECT_EQ((Case{"MatMul", {f32({5, 6}), f32({6})}, {}}.result()), "f32[5]");
  EXPECT_EQ((Case{"MatMul", {f32({5, 6}), f32({7, 2})}, {}}.result()),
            "error: inner dims differ: f32[5,6] and f32[7,2]");
  EXPECT_EQ((Case{"Gemm",
                  {f32({1, 512}), f32({1000, 512}), f32({1000})},
                  {{"transB", Attribute::getInt(1)}}}
                 .result()),
            "f32[1,1000]");
  EXPECT_EQ((Case{"Gemm",
                  {f32({4, 3}), f32({4, 5})},
                  {{"transA", Attribute::getInt(1)}}}
                 .result()),
            "f32[3,5]");
}

TEST(ShapeFunctionsTest, DataMovement) {
  EXPECT_EQ(
      (Case{"Reshape", {f32({2, 3, 4})}, {{"shape", ints({6, 4})}}}.result()),
      "f32[6,4]");
  EXPECT_EQ(
      (Case{"Reshape", {f32({2, 3, 4})}, {{"shape", ints({5, 4})}}}.result()),
      "error: cannot reshape f32[2,3,4] (24 elements) to [5,4]");
  EXPECT_EQ((Case{"Reshape", {f32({2, 3})}, {{"shape", ints({-1})}}}.result()),
            "error: shape [-1] is not resolved (negative dim)");
  EXPECT_EQ(
      (Case{"Flatten", {f32({2, 3, 4, 5})}, {{"axis", Attribute::getInt(2)}}}
           .result()),
      "f32[6,20]");
  EXPECT_EQ((Case{"Transpose", {f32({2, 3, 4})}, {{"perm", ints({2, 0, 1})}}}
                 .result()),
            "f32[4,2,3]");
  EXPECT_EQ((Case{"Transpose", {f32({2, 3, 4})}, {}}.result()), "f32[4,3,2]");
  EXPECT_EQ((Case{"Concat",
                  {f32({2, 3}), f32({2, 5})},
                  {{"axis", Attribute::getInt(-1)}}}
                 .result()),
            "f32[2,8]");
  EXPECT_EQ((Case{"Concat",
                  {f32({2, 3}), f32({3, 5})},
                  {{"axis", Attribute::getInt(1)}}}
                 .result()),
            "error: operand 1 f32[3,5] does not concatenate with f32[2,3] on "
            "axis 1");
  // Gather: data[:axis] + indices + data[axis+1:].
  EXPECT_EQ((Case{"Gather",
                  {f32({1000, 256}), TensorType(DType::I64, {1, 128})},
                  {{"axis", Attribute::getInt(0)}}}
                 .result()),
            "f32[1,128,256]");
  EXPECT_EQ((Case{"Gather",
                  {f32({3, 4}), TensorType(DType::I64, {})},
                  {{"axis", Attribute::getInt(1)}}}
                 .result()),
            "f32[3]");
  EXPECT_EQ(
      (Case{"Squeeze", {f32({1, 3, 1})}, {{"axes", ints({0, 2})}}}.result()),
      "f32[3]");
  EXPECT_EQ((Case{"Squeeze", {f32({1, 3, 1})}, {{"axes", ints({1})}}}.result()),
            "error: cannot squeeze axis 1 of f32[1,3,1]");
  EXPECT_EQ(
      (Case{"Unsqueeze", {f32({3, 4})}, {{"axes", ints({0, 3})}}}.result()),
      "f32[1,3,4,1]");
  // Slice with a negative step: from 9 down to (not including) 1 by 3:
  // 9, 6, 3 -> 3 elements.
  EXPECT_EQ((Case{"Slice",
                  {f32({10, 4})},
                  {{"starts", ints({9})},
                   {"ends", ints({1})},
                   {"axes", ints({0})},
                   {"steps", ints({-3})}}}
                 .result()),
            "f32[3,4]");
  auto split = Case{"Split",
                    {f32({4, 10})},
                    {{"axis", Attribute::getInt(1)}, {"split", ints({3, 7})}},
                    2}
                   .infer();
  ASSERT_TRUE(bool(split));
  EXPECT_EQ((*split)[0].str(), "f32[4,3]");
  EXPECT_EQ((*split)[1].str(), "f32[4,7]");
  EXPECT_EQ(
      (Case{"Expand", {f32({3, 1})}, {{"shape", ints({2, 3, 4})}}}.result()),
      "f32[2,3,4]");
  EXPECT_EQ((Case{"Tile", {f32({2, 3})}, {{"repeats", ints({2, 2})}}}.result()),
            "f32[4,6]");
  EXPECT_EQ((Case{"Pad",
                  {f32({1, 3, 4, 4})},
                  {{"pads", ints({0, 0, 1, 2, 0, 0, 1, 2})}}}
                 .result()),
            "f32[1,3,6,8]");
  EXPECT_EQ(
      (Case{"Resize", {f32({1, 3, 4, 4})}, {{"sizes", ints({1, 3, 8, 8})}}}
           .result()),
      "f32[1,3,8,8]");
  EXPECT_EQ((Case{"Shape", {f32({2, 3, 4})}, {}}.result()), "i64[3]");
  EXPECT_EQ(
      (Case{"Shape",
            {f32({2, 3, 4})},
            {{"start", Attribute::getInt(1)}, {"end", Attribute::getInt(3)}}}
           .result()),
      "i64[2]");
}

TEST(ShapeFunctionsTest, ReductionsAndNormalization) {
  EXPECT_EQ((Case{"ReduceMean",
                  {f32({2, 3, 4})},
                  {{"axes", ints({2})}, {"keepdims", Attribute::getInt(1)}}}
                 .result()),
            "f32[2,3,1]");
  EXPECT_EQ((Case{"ReduceSum",
                  {f32({2, 3, 4})},
                  {{"axes", ints({0, 2})}, {"keepdims", Attribute::getInt(0)}}}
                 .result()),
            "f32[3]");
  EXPECT_EQ((Case{"ArgMax",
                  {f32({2, 3})},
                  {{"axis", Attribute::getInt(1)},
                   {"keepdims", Attribute::getInt(0)}}}
                 .result()),
            "i64[2]");
  auto norm = Case{"LayerNormalization",
                   {f32({2, 8, 16}), f32({16})},
                   {{"axis", Attribute::getInt(2)}},
                   3}
                  .infer();
  ASSERT_TRUE(bool(norm));
  EXPECT_EQ((*norm)[0].str(), "f32[2,8,16]");
  EXPECT_EQ((*norm)[1].str(), "f32[2,8,1]");
}

// snug.attention (core/AttentionShape.h): Q's dims with V's last; K as
// the MatMul read it or through a perm; the result stored through y_perm;
// masks that broadcast to the scores, of the element type their kind says;
// errors that say which rule broke.
TEST(ShapeFunctionsTest, Attention) {
  AttributeMap none{{"mask", Attribute::getString("none")}};
  AttributeMap add{{"mask", Attribute::getString("add")}};
  AttributeMap where{{"mask", Attribute::getString("where")}};
  AttributeMap untransposed{{"k_perm", ints({0, 1, 3, 2})}};
  // The heads split from [1, 16, 4, 8] and merged back.
  AttributeMap heads{{"q_perm", ints({0, 2, 1, 3})},
                     {"y_perm", ints({0, 2, 1, 3})}};
  TensorType q = f32({1, 4, 16, 8}), kt = f32({1, 4, 8, 32}),
             v = f32({1, 4, 32, 6});
  EXPECT_EQ((Case{"snug.attention", {q, kt, v}, none}.result()),
            "f32[1,4,16,6]");
  EXPECT_EQ((Case{"snug.attention", {q, f32({1, 4, 32, 8}), v}, untransposed}
                 .result()),
            "f32[1,4,16,6]");
  EXPECT_EQ((Case{"snug.attention", {f32({1, 16, 4, 8}), kt, v}, heads}
                 .result()),
            "f32[1,16,4,6]");
  EXPECT_EQ((Case{"snug.attention",
                  {q, kt, v},
                  {{"q_perm", ints({0, 2, 2, 3})}}}
                 .result()),
            "error: a perm of Q [1,4,16,8], K [1,4,8,32] and V [1,4,32,6] is "
            "no permutation of their 4 dims");
  EXPECT_EQ((Case{"snug.attention", {q, kt, v, f32({4, 1, 32})}, add}.result()),
            "f32[1,4,16,6]");
  EXPECT_EQ((Case{"snug.attention",
                  {q, kt, v, TensorType(DType::Bool, {16, 32})},
                  where}
                 .result()),
            "f32[1,4,16,6]");
  EXPECT_EQ((Case{"snug.attention", {q, f32({1, 4, 32, 8}), v}, none}.result()),
            "error: Q [1,4,16,8], K [1,4,32,8] and V [1,4,32,6] do not chain");
  EXPECT_EQ((Case{"snug.attention", {q, f32({1, 2, 8, 32}), v}, none}.result()),
            "error: Q [1,4,16,8], K [1,2,8,32] and V [1,4,32,6] differ in "
            "their batch dims");
  EXPECT_EQ((Case{"snug.attention", {q, kt, v, f32({2, 1, 4, 1, 32})}, add}
                 .result()),
            "error: mask [2,1,4,1,32] has more dims than the scores "
            "[1,4,16,32]");
  EXPECT_EQ((Case{"snug.attention", {q, kt, v, f32({3, 1, 32})}, add}.result()),
            "error: mask [3,1,32] does not broadcast to the scores [1,4,16,32]");
  EXPECT_EQ((Case{"snug.attention", {q, kt, v, f32({16, 32})}, where}.result()),
            "error: mask f32[16,32] must be bool for mask = \"where\"");
  EXPECT_EQ((Case{"snug.attention", {q, kt, v}, add}.result()),
            "error: mask = \"add\" needs a mask operand");
}

TEST(ShapeFunctionsTest, UnknownOpAndNodeMessages) {
  EXPECT_EQ((Case{"NoSuchOp", {f32({1})}, {}}.result()),
            "error: not in the op table: NoSuchOp");
  for (const ir::OpInfo &info : ir::getAllOps())
    EXPECT_TRUE(hasShapeFunction(info.code)) << info.name;

  ir::Module module;
  ir::Value *x = module.addInput("x", f32({2, 3}));
  ir::Node *node =
      module.addNode("Reshape", {x}, {f32({6})}, {{"shape", ints({7})}});
  node->setName("flatten1");
  auto types = inferResultTypes(*node);
  ASSERT_FALSE(bool(types));
  EXPECT_EQ(toString(types.takeError()),
            "node 'flatten1' (Reshape): cannot reshape f32[2,3] (6 elements) "
            "to [7]");
}

// Issue 12: shape formulas over attribute values at the edges of int64 give
// the ONNX answer or an overflow error, never a wrapped dim.
TEST(ShapeFunctionsTest, ExtremeAttributesDoNotWrap) {
  const int64_t max = INT64_MAX, min = INT64_MIN;
  auto slice = [](int64_t start, int64_t end, int64_t step) {
    return Case{"Slice",
                {f32({4, 10})},
                {{"starts", ints({start})},
                 {"ends", ints({end})},
                 {"axes", ints({0})},
                 {"steps", ints({step})}}}
        .result();
  };
  EXPECT_EQ(slice(0, 4, max), "f32[1,10]");
  EXPECT_EQ(slice(3, -1, min), "f32[1,10]");
  EXPECT_EQ(slice(3, -1, -2), "f32[2,10]");
  EXPECT_EQ(slice(1, 4, 2), "f32[2,10]");
  EXPECT_EQ(slice(4, 0, 1), "f32[0,10]");
  EXPECT_EQ(slice(0, max, 1),
            "error: slice of axis 0: start 0 or end 9223372036854775807 lies "
            "outside [0, 4] (canonical Slice clamps them to the dim)");

  auto pool = [](AttributeMap attributes) {
    attributes["kernel_shape"] = ints({2, 2});
    return Case{"MaxPool", {f32({1, 1, 4, 4})}, attributes}.result();
  };
  EXPECT_EQ(pool({{"strides", ints({max, 1})}}), "f32[1,1,1,3]");
  EXPECT_EQ(pool({{"strides", ints({max, 1})},
                  {"ceil_mode", Attribute::getInt(1)}}),
            "f32[1,1,1,3]");
  EXPECT_EQ(pool({{"pads", ints({0, 0, max, 0})}}),
            "error: the window of spatial dim 0 (kernel_shape, dilations or "
            "pads) overflows a 64-bit integer");
  EXPECT_EQ(pool({{"dilations", ints({max, 1})}}),
            "error: the window of spatial dim 0 (kernel_shape, dilations or "
            "pads) overflows a 64-bit integer");
  EXPECT_EQ((Case{"Tile", {f32({2, 3})}, {{"repeats", ints({max, 1})}}}
                 .result()),
            "error: repeats [9223372036854775807,1] times f32[2,3] overflows a "
            "64-bit integer");
  EXPECT_EQ((Case{"Pad", {f32({2, 3})}, {{"pads", ints({0, min, 0, min})}}}
                 .result()),
            "error: pads [0,-9223372036854775808,0,-9223372036854775808] "
            "overflows a 64-bit integer");
}
