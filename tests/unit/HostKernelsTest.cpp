//===- HostKernelsTest.cpp - Host reference kernels vs hand-computed values ===//
//
// Each test is one or two nodes of textual IR with hand-written offsets, run
// through bundle and C API on the host (with poisoning on), and compared with
// values worked out by hand in the comments.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"

#include "core/ScalarOps.h"
#include "runtime/host/Kernels.h"

#include <cmath>
#include <set>

using namespace snug;
using namespace snug::testing;

namespace {

/// One-node module: operands `%a`, `%b`, ... of `types` at offsets 0, 1024,
/// ...; `node` (using those names) with result type `result` at 8192.
std::string oneNode(const std::vector<std::string> &types,
                    const std::string &node, const std::string &result,
                    const std::string &weights = "") {
  std::string text = "func @t(";
  for (size_t i = 0; i < types.size(); ++i)
    text += (i ? ", %" : "%") + std::string(1, char('a' + i)) + ": " +
            types[i] + " {offset = " + std::to_string(i * 1024) + "}";
  if (!weights.empty())
    text += ", " + weights;
  text += ") -> " + result + " attributes {arena = 16384} {\n  %y = " + node +
          " : " + result + " {offset = 8192}\n  return %y\n}\n";
  return text;
}

std::vector<float> run1(const std::vector<std::string> &types,
                        const std::string &node, const std::string &result,
                        const std::vector<std::vector<float>> &inputs,
                        const std::string &weights = "") {
  auto outputs = runF32(oneNode(types, node, result, weights), inputs);
  return outputs.empty() ? std::vector<float>{} : outputs[0];
}

void expectNear(const std::vector<float> &actual,
                const std::vector<float> &expected, float tolerance = 1e-5f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
}

} // namespace

TEST(HostKernelsTest, Activations) {
  expectNear(run1({"f32[4]"}, "Relu(%a)", "f32[4]", {{-1, 0, 2, -3}}), {0, 0, 2, 0});
  expectNear(run1({"f32[3]"}, "LeakyRelu(%a) {alpha = 0.1}", "f32[3]", {{-10, 0, 5}}),
             {-1, 0, 5});
  expectNear(run1({"f32[2]"}, "Sigmoid(%a)", "f32[2]", {{0, 2}}),
             {0.5f, 0.880797078f});
  // HardSigmoid: max(0, min(1, 0.2x + 0.5)); HardSwish: x * that with 1/6.
  expectNear(run1({"f32[3]"}, "HardSigmoid(%a)", "f32[3]", {{-5, 0, 1}}), {0, 0.5f, 0.7f});
  expectNear(run1({"f32[3]"}, "HardSwish(%a)", "f32[3]", {{-4, 0, 3}}), {0, 0, 3});
  expectNear(run1({"f32[2]"}, "Tanh(%a)", "f32[2]", {{0, 1}}), {0, 0.761594156f});
  expectNear(run1({"f32[2]"}, "Erf(%a)", "f32[2]", {{0, 1}}), {0, 0.842700793f});
  // Gelu(1) = 0.5 * (1 + erf(1/sqrt 2)) = 0.841344746
  expectNear(run1({"f32[2]"}, "Gelu(%a)", "f32[2]", {{0, 1}}), {0, 0.841344746f});
  expectNear(run1({"f32[4]"}, "Clip(%a) {max = 1.0, min = -1.0}", "f32[4]",
                  {{-3, -0.5, 0.5, 3}}),
             {-1, -0.5f, 0.5f, 1});
  // Clip bounds as scalar weight operands (opset 11+).
  expectNear(run1({"f32[3]"}, "Clip(%a, %lo, %hi)", "f32[3]", {{-3, 0.25, 3}},
                  "%lo: f32[] weight = [0.0], %hi: f32[] weight = [6.0]"),
             {0, 0.25f, 3});
}

TEST(HostKernelsTest, UnaryMath) {
  expectNear(run1({"f32[3]"}, "Sqrt(%a)", "f32[3]", {{0, 4, 2.25}}), {0, 2, 1.5});
  expectNear(run1({"f32[2]"}, "Exp(%a)", "f32[2]", {{0, 1}}), {1, 2.718281828f});
  expectNear(run1({"f32[2]"}, "Log(%a)", "f32[2]", {{1, 2.718281828f}}), {0, 1});
  expectNear(run1({"f32[2]"}, "Neg(%a)", "f32[2]", {{1, -2}}), {-1, 2});
  expectNear(run1({"f32[2]"}, "Reciprocal(%a)", "f32[2]", {{4, -0.5}}), {0.25f, -2});
  expectNear(run1({"f32[2]"}, "Abs(%a)", "f32[2]", {{-4, 3}}), {4, 3});
  // Round: half to even.
  expectNear(run1({"f32[4]"}, "Round(%a)", "f32[4]", {{0.5, 1.5, 2.5, -0.5}}),
             {0, 2, 2, -0.0f});
}

TEST(HostKernelsTest, BroadcastArithmetic) {
  // [2,3] + [3]: row vector added to each row.
  expectNear(run1({"f32[2,3]", "f32[3]"}, "Add(%a, %b)", "f32[2,3]",
                  {{1, 2, 3, 4, 5, 6}, {10, 20, 30}}),
             {11, 22, 33, 14, 25, 36});
  // [2,1] - [1,3]: outer difference.
  expectNear(run1({"f32[2,1]", "f32[1,3]"}, "Sub(%a, %b)", "f32[2,3]",
                  {{10, 20}, {1, 2, 3}}),
             {9, 8, 7, 19, 18, 17});
  expectNear(run1({"f32[2]", "f32[]"}, "Mul(%a, %b)", "f32[2]", {{3, -4}, {0.5}}),
             {1.5f, -2});
  expectNear(run1({"f32[2]", "f32[2]"}, "Div(%a, %b)", "f32[2]", {{1, 9}, {4, -3}}),
             {0.25f, -3});
  expectNear(run1({"f32[2]", "f32[2]"}, "Pow(%a, %b)", "f32[2]", {{2, 9}, {3, 0.5}}),
             {8, 3});
  expectNear(run1({"f32[3]", "f32[3]", "f32[1]"}, "Max(%a, %b, %c)", "f32[3]",
                  {{1, 5, -1}, {4, 2, -2}, {3}}),
             {4, 5, 3});
  expectNear(run1({"f32[3]", "f32[3]"}, "Min(%a, %b)", "f32[3]",
                  {{1, 5, -1}, {4, 2, -2}}),
             {1, 2, -2});
}

TEST(HostKernelsTest, IntegerShapeArithmetic) {
  std::string text = oneNode({"i64[3]", "i64[3]"}, "Div(%a, %b)", "i64[3]");
  auto out = runOnHost(text, {toBytes(std::vector<int64_t>{7, -7, 6}),
                              toBytes(std::vector<int64_t>{2, 2, 3})});
  ASSERT_EQ(out.size(), 1u);
  // Integer division truncates toward zero, as in onnxruntime.
  EXPECT_EQ(fromBytes<int64_t>(out[0]), (std::vector<int64_t>{3, -3, 2}));
  text = oneNode({"i64[2]", "i64[]"}, "Mul(%a, %b)", "i64[2]");
  out = runOnHost(text, {toBytes(std::vector<int64_t>{3, 5}),
                         toBytes(std::vector<int64_t>{(int64_t(1) << 40)})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(fromBytes<int64_t>(out[0]),
            (std::vector<int64_t>{3 * (int64_t(1) << 40), 5 * (int64_t(1) << 40)}));
}

TEST(HostKernelsTest, CompareWhereNot) {
  std::string text =
      "func @t(%a: f32[3] {offset = 0}, %b: f32[3] {offset = 64}) -> (bool[3], "
      "bool[3], bool[3], f32[3], bool[3]) attributes {arena = 512} {\n"
      "  %eq = Equal(%a, %b) : bool[3] {offset = 128}\n"
      "  %lt = Less(%a, %b) : bool[3] {offset = 192}\n"
      "  %gt = Greater(%a, %b) : bool[3] {offset = 256}\n"
      "  %w = Where(%lt, %a, %b) : f32[3] {offset = 320}\n"
      "  %n = Not(%eq) : bool[3] {offset = 384}\n"
      "  return %eq, %lt, %gt, %w, %n\n}\n";
  auto out = runOnHost(text, {toBytes(std::vector<float>{1, 5, 3}),
                              toBytes(std::vector<float>{2, 5, 1})});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0], (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(out[1], (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(out[2], (std::vector<uint8_t>{0, 0, 1}));
  EXPECT_EQ(fromBytes<float>(out[3]), (std::vector<float>{1, 5, 1})); // min
  EXPECT_EQ(out[4], (std::vector<uint8_t>{1, 0, 1}));
}

TEST(HostKernelsTest, CastRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between two f16 values: rounds to even (1.0);
  // 1 + 3*2^-11 rounds up to 1 + 2^-9... (ties to even on the last bit).
  float halfway = 1.0f + std::ldexp(1.0f, -11);
  float upper = 1.0f + 3 * std::ldexp(1.0f, -11);
  std::string text = oneNode({"f32[4]"}, "Cast(%a) {to = \"f16\"}", "f16[4]");
  auto out = runOnHost(text, {toBytes(std::vector<float>{halfway, upper, 65520.0f, -2.5f})});
  ASSERT_EQ(out.size(), 1u);
  std::vector<uint16_t> bits = fromBytes<uint16_t>(out[0]);
  EXPECT_EQ(bits[0], 0x3c00); // 1.0
  EXPECT_EQ(bits[1], 0x3c02); // 1 + 2^-9
  EXPECT_EQ(bits[2], 0x7c00); // overflow to inf
  EXPECT_EQ(f16ToFloat(bits[3]), -2.5f);
  // Float to int truncates toward zero; int to bool is != 0.
  text = oneNode({"f32[3]"}, "Cast(%a) {to = \"i64\"}", "i64[3]");
  out = runOnHost(text, {toBytes(std::vector<float>{2.7f, -2.7f, 0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(fromBytes<int64_t>(out[0]), (std::vector<int64_t>{2, -2, 0}));
}

TEST(HostKernelsTest, Float16ArithmeticRoundsOnStore) {
  // f16: 1 + 2^-10 (0x3c01) + 2^-11 (0x1000) = 1 + 3*2^-11, rounds to even
  // 1 + 2^-9 (0x3c02).
  std::string text = oneNode({"f16[1]", "f16[1]"}, "Add(%a, %b)", "f16[1]");
  auto out = runOnHost(text, {toBytes(std::vector<uint16_t>{0x3c01}),
                              toBytes(std::vector<uint16_t>{0x1000})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(fromBytes<uint16_t>(out[0])[0], 0x3c02);
  text = oneNode({"bf16[2]"}, "Relu(%a)", "bf16[2]");
  out = runOnHost(text, {toBytes(std::vector<uint16_t>{floatToBf16(-1.5f),
                                                       floatToBf16(2.5f)})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(bf16ToFloat(fromBytes<uint16_t>(out[0])[1]), 2.5f);
  EXPECT_EQ(bf16ToFloat(fromBytes<uint16_t>(out[0])[0]), 0.0f);
}

TEST(HostKernelsTest, MatMulAndGemm) {
  // [2,3] x [3,2]
  expectNear(run1({"f32[2,3]", "f32[3,2]"}, "MatMul(%a, %b)", "f32[2,2]",
                  {{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}}),
             {58, 64, 139, 154});
  // Batched with broadcast: [2,1,2] x [2,1] -> [2,1,1]
  expectNear(run1({"f32[2,1,2]", "f32[2,1]"}, "MatMul(%a, %b)", "f32[2,1,1]",
                  {{1, 2, 3, 4}, {10, 1}}),
             {12, 34});
  // 1-d x 2-d: [2] x [2,3] -> [3]
  expectNear(run1({"f32[2]", "f32[2,3]"}, "MatMul(%a, %b)", "f32[3]",
                  {{1, 2}, {1, 2, 3, 4, 5, 6}}),
             {9, 12, 15});
  // Gemm: alpha * A^T * B + beta * C, A stored [3,2], C row [2].
  expectNear(run1({"f32[3,2]", "f32[3,2]", "f32[2]"},
                  "Gemm(%a, %b, %c) {alpha = 2.0, beta = 0.5, transA = 1}",
                  "f32[2,2]", {{1, 4, 2, 5, 3, 6}, {7, 8, 9, 10, 11, 12}, {2, 4}}),
             {2 * 58 + 1, 2 * 64 + 2, 2 * 139 + 1, 2 * 154 + 2});
  // transB: B stored [2,3].
  expectNear(run1({"f32[2,3]", "f32[2,3]"}, "Gemm(%a, %b) {transB = 1}", "f32[2,2]",
                  {{1, 2, 3, 4, 5, 6}, {1, 0, 0, 0, 1, 0}}),
             {1, 2, 4, 5});
}

TEST(HostKernelsTest, Conv) {
  // 1x1x3x3 input 1..9, 2x2 kernel of ones, no pad: window sums.
  expectNear(run1({"f32[1,1,3,3]", "f32[1,1,2,2]"},
                  "Conv(%a, %b) {kernel_shape = [2, 2]}", "f32[1,1,2,2]",
                  {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 1, 1}}),
             {12, 16, 24, 28});
  // Pad 1, stride 2, bias 1: output 2x2 at input (-1,-1), (-1,1), (1,-1), (1,1).
  expectNear(run1({"f32[1,1,3,3]", "f32[1,1,2,2]", "f32[1]"},
                  "Conv(%a, %b, %c) {kernel_shape = [2, 2], pads = [1, 1, 1, 1], "
                  "strides = [2, 2]}",
                  "f32[1,1,2,2]",
                  {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 1, 1}, {1}}),
             {1 + 1, 1 + 2 + 3, 1 + 4 + 7, 1 + 5 + 6 + 8 + 9});
  // Depthwise (group 2), 1x1 kernels scale each channel.
  expectNear(run1({"f32[1,2,1,2]", "f32[2,1,1,1]"},
                  "Conv(%a, %b) {group = 2, kernel_shape = [1, 1]}", "f32[1,2,1,2]",
                  {{1, 2, 3, 4}, {10, -1}}),
             {10, 20, -3, -4});
  // 1-d with dilation 2: taps at i and i+2.
  expectNear(run1({"f32[1,1,5]", "f32[1,1,2]"},
                  "Conv(%a, %b) {dilations = [2], kernel_shape = [2]}", "f32[1,1,3]",
                  {{1, 2, 3, 4, 5}, {1, 10}}),
             {31, 42, 53});
}

TEST(HostKernelsTest, ConvTranspose) {
  // 1x1x2x2 input, 2x2 kernel of ones, stride 2: each input becomes a block.
  expectNear(run1({"f32[1,1,2,2]", "f32[1,1,2,2]"},
                  "ConvTranspose(%a, %b) {kernel_shape = [2, 2], strides = [2, 2]}",
                  "f32[1,1,4,4]", {{1, 2, 3, 4}, {1, 1, 1, 1}}),
             {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // Stride 1: overlapping blocks add; 1-d [1,2] * kernel [1,1] -> [1,3,2].
  expectNear(run1({"f32[1,1,2]", "f32[1,1,2]"},
                  "ConvTranspose(%a, %b) {kernel_shape = [2]}", "f32[1,1,3]",
                  {{1, 2}, {1, 1}}),
             {1, 3, 2});
}

TEST(HostKernelsTest, Pooling) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  expectNear(run1({"f32[1,1,4,4]"},
                  "MaxPool(%a) {kernel_shape = [2, 2], strides = [2, 2]}",
                  "f32[1,1,2,2]", {x}),
             {6, 8, 14, 16});
  expectNear(run1({"f32[1,1,4,4]"},
                  "AveragePool(%a) {kernel_shape = [2, 2], strides = [2, 2]}",
                  "f32[1,1,2,2]", {x}),
             {3.5f, 5.5f, 11.5f, 13.5f});
  // Padding 1 with a 2x2 window, stride 2 on a 2x2 input: corners alone.
  // Excluding pads: the mean of one element; including: that element / 4.
  expectNear(run1({"f32[1,1,2,2]"},
                  "AveragePool(%a) {kernel_shape = [2, 2], pads = [1, 1, 1, 1], "
                  "strides = [2, 2]}",
                  "f32[1,1,2,2]", {{4, 8, 12, 16}}),
             {4, 8, 12, 16});
  expectNear(run1({"f32[1,1,2,2]"},
                  "AveragePool(%a) {count_include_pad = 1, kernel_shape = [2, 2], "
                  "pads = [1, 1, 1, 1], strides = [2, 2]}",
                  "f32[1,1,2,2]", {{4, 8, 12, 16}}),
             {1, 2, 3, 4});
  expectNear(run1({"f32[1,2,2,2]"}, "GlobalAveragePool(%a)", "f32[1,2,1,1]",
                  {{1, 2, 3, 4, 10, 20, 30, 40}}),
             {2.5f, 25});
  expectNear(run1({"f32[1,2,2,2]"}, "GlobalMaxPool(%a)", "f32[1,2,1,1]",
                  {{1, 2, 3, 4, 10, 20, 30, 40}}),
             {4, 40});
}

TEST(HostKernelsTest, Normalizations) {
  // BatchNorm: (x - mean) / sqrt(var + eps) * scale + bias, per channel.
  expectNear(run1({"f32[1,2,1,2]"},
                  "BatchNormalization(%a, %s, %b, %m, %v) {epsilon = 0.0}",
                  "f32[1,2,1,2]", {{1, 3, 10, 20}},
                  "%s: f32[2] weight = [1.0, 2.0], %b: f32[2] weight = [0.0, 1.0], "
                  "%m: f32[2] weight = [2.0, 10.0], %v: f32[2] weight = [1.0, 4.0]"),
             {-1, 1, 1, 11});
  // LayerNorm over the last axis: [1, 3] -> mean 2, var 1 -> [-1, 1].
  expectNear(run1({"f32[2,2]"},
                  "LayerNormalization(%a, %s, %b) {epsilon = 1.0e-05}", "f32[2,2]",
                  {{1, 3, 5, 5}},
                  "%s: f32[2] weight = [2.0, 2.0], %b: f32[2] weight = [0.5, 0.5]"),
             {-1.5f, 2.5f, 0.5f, 0.5f}, 1e-4f);
  // Softmax of [0, ln 3] = [1/4, 3/4]; LogSoftmax = log of that.
  expectNear(run1({"f32[1,2]"}, "Softmax(%a) {axis = -1}", "f32[1,2]",
                  {{0, std::log(3.0f)}}),
             {0.25f, 0.75f});
  expectNear(run1({"f32[1,2]"}, "LogSoftmax(%a) {axis = 1}", "f32[1,2]",
                  {{0, std::log(3.0f)}}),
             {std::log(0.25f), std::log(0.75f)});
  // Softmax along axis 0 of a [2,2].
  expectNear(run1({"f32[2,2]"}, "Softmax(%a) {axis = 0}", "f32[2,2]",
                  {{0, 5, 0, 5}}),
             {0.5f, 0.5f, 0.5f, 0.5f});
  // LRN size 3 over 3 channels at one pixel: x / (1 + 1/3 * sum sq)^1.
  expectNear(run1({"f32[1,3,1,1]"},
                  "LRN(%a) {alpha = 1.0, beta = 1.0, bias = 1.0, size = 3}",
                  "f32[1,3,1,1]", {{1, 2, 3}}),
             {1.0f / (1 + 5.0f / 3), 2.0f / (1 + 14.0f / 3), 3.0f / (1 + 13.0f / 3)});
}

TEST(HostKernelsTest, Reductions) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  expectNear(run1({"f32[2,3]"}, "ReduceMean(%a) {axes = [1], keepdims = 1}",
                  "f32[2,1]", {x}),
             {2, 5});
  expectNear(run1({"f32[2,3]"}, "ReduceSum(%a) {axes = [0], keepdims = 0}",
                  "f32[3]", {x}),
             {5, 7, 9});
  expectNear(run1({"f32[2,3]"}, "ReduceMax(%a) {axes = [0, 1], keepdims = 0}",
                  "f32[]", {x}),
             {6});
  std::string text = oneNode({"f32[2,3]"}, "ArgMax(%a) {axis = 1, keepdims = 0}", "i64[2]");
  auto out = runOnHost(text, {toBytes(std::vector<float>{1, 9, 3, 7, 5, 6})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(fromBytes<int64_t>(out[0]), (std::vector<int64_t>{1, 0}));
}

TEST(HostKernelsTest, ViewsTransposeConcatSplit) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  expectNear(run1({"f32[2,3]"}, "Reshape(%a, %s) {shape = [3, 2]}", "f32[3,2]",
                  {x}, "%s: i64[2] weight = [3, 2]"),
             x);
  expectNear(run1({"f32[2,3]"}, "Transpose(%a) {perm = [1, 0]}", "f32[3,2]", {x}),
             {1, 4, 2, 5, 3, 6});
  expectNear(run1({"f32[2,3]"}, "Flatten(%a) {axis = 0}", "f32[1,6]", {x}), x);
  expectNear(run1({"f32[2,1]", "f32[2,2]"}, "Concat(%a, %b) {axis = 1}", "f32[2,3]",
                  {{1, 4}, {2, 3, 5, 6}}),
             x);
  std::string text =
      "func @t(%a: f32[2,3] {offset = 0}) -> (f32[2,1], f32[2,2]) attributes "
      "{arena = 256} {\n"
      "  %p, %q = Split(%a) {axis = 1, split = [1, 2]} : f32[2,1] {offset = 64}, "
      "f32[2,2] {offset = 128}\n"
      "  return %p, %q\n}\n";
  auto out = runF32(text, {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (std::vector<float>{1, 4}));
  EXPECT_EQ(out[1], (std::vector<float>{2, 3, 5, 6}));
}

TEST(HostKernelsTest, SliceGatherPad) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  // Columns 3, 1 (start 3, step -2) of a [2,4].
  expectNear(run1({"f32[2,4]"},
                  "Slice(%a) {axes = [1], ends = [0], starts = [3], steps = [-2]}",
                  "f32[2,2]", {x}),
             {4, 2, 8, 6});
  expectNear(run1({"f32[2,4]"},
                  "Slice(%a) {axes = [0, 1], ends = [2, 3], starts = [1, 1], "
                  "steps = [1, 1]}",
                  "f32[1,2]", {x}),
             {6, 7});
  // Gather rows with a negative index.
  expectNear(run1({"f32[3,2]"}, "Gather(%a, %i) {axis = 0}", "f32[2,2]",
                  {{1, 2, 3, 4, 5, 6}}, "%i: i64[2] weight = [-1, 0]"),
             {5, 6, 1, 2});
  expectNear(run1({"f32[3]"}, "Pad(%a) {pads = [1, 2], value = 9.0}", "f32[6]",
                  {{1, 2, 3}}),
             {9, 1, 2, 3, 9, 9});
  expectNear(run1({"f32[3]"}, "Pad(%a) {mode = \"reflect\", pads = [2, 2]}",
                  "f32[7]", {{1, 2, 3}}),
             {3, 2, 1, 2, 3, 2, 1});
  expectNear(run1({"f32[3]"}, "Pad(%a) {mode = \"edge\", pads = [1, 1]}",
                  "f32[5]", {{1, 2, 3}}),
             {1, 1, 2, 3, 3});
}

TEST(HostKernelsTest, ExpandTileResize) {
  expectNear(run1({"f32[2,1]"}, "Expand(%a) {shape = [2, 3]}", "f32[2,3]",
                  {{1, 2}}),
             {1, 1, 1, 2, 2, 2});
  expectNear(run1({"f32[1,2]"}, "Tile(%a) {repeats = [2, 2]}", "f32[2,4]",
                  {{1, 2}}),
             {1, 2, 1, 2, 1, 2, 1, 2});
  // Nearest, asymmetric, x2: each element repeated.
  expectNear(run1({"f32[1,1,1,2]"},
                  "Resize(%a) {coordinate_transformation_mode = \"asymmetric\", "
                  "mode = \"nearest\", nearest_mode = \"floor\", sizes = [1, 1, 2, 4]}",
                  "f32[1,1,2,4]", {{1, 2}}),
             {1, 1, 2, 2, 1, 1, 2, 2});
  // Linear, half_pixel, 2 -> 4: source coords -0.25, 0.25, 0.75, 1.25
  // clamp to [0,1]: values 1, 1.25, 1.75, 2 (between 1 and 2).
  expectNear(run1({"f32[1,2]"},
                  "Resize(%a) {mode = \"linear\", sizes = [1, 4]}", "f32[1,4]",
                  {{1, 2}}),
             {1, 1.25f, 1.75f, 2});
  // Linear, align_corners, 2 -> 3: 1, 1.5, 2.
  expectNear(run1({"f32[1,2]"},
                  "Resize(%a) {coordinate_transformation_mode = \"align_corners\", "
                  "mode = \"linear\", sizes = [1, 3]}",
                  "f32[1,3]", {{1, 2}}),
             {1, 1.5f, 2});
}

TEST(HostKernelsTest, InPlaceResultsAliasingTheirOperand) {
  // The planner may put an elementwise result on its dying operand and a
  // view on its operand; the executor must run exactly that.
  std::string text =
      "func @t(%x: f32[4] {offset = 0}, %b: f32[4] {offset = 64}) -> f32[2,2] "
      "attributes {arena = 128} {\n"
      "  %0 = Add(%x, %b) : f32[4] {offset = 32}\n"
      "  %1 = Relu(%0) : f32[4] {offset = 32}\n"
      "  %2 = Reshape(%1) {shape = [2, 2]} : f32[2,2] {offset = 32}\n"
      "  return %2\n}\n";
  auto out = runF32(text, {{1, -2, 3, -4}, {1, 1, 1, 1}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (std::vector<float>{2, 0, 4, 0}));
}

TEST(HostKernelsTest, ConcatWithOperandsAlreadyInPlace) {
  // Both operands were produced straight into their slices of the result.
  std::string text =
      "func @t(%x: f32[2] {offset = 64}) -> f32[4] attributes {arena = 128} {\n"
      "  %a = Neg(%x) : f32[2] {offset = 0}\n"
      "  %b = Relu(%x) : f32[2] {offset = 8}\n"
      "  %c = Concat(%a, %b) {axis = 0} : f32[4] {offset = 0}\n"
      "  return %c\n}\n";
  auto out = runF32(text, {{1, -2}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (std::vector<float>{-1, 2, 1, 0}));
}

TEST(HostKernelsTest, ShapeOpsAndConstants) {
  std::string text =
      "func @t(%x: f32[2,3] {offset = 0}) -> (i64[2], i64[], f32[2,2], i64[3]) "
      "attributes {arena = 512} {\n"
      "  %s = Shape(%x) : i64[2] {offset = 64}\n"
      "  %n = Size(%x) : i64[] {offset = 128}\n"
      "  %c = ConstantOfShape(%s) {value = dense<f32[1] [7.0]>} : f32[2,2] "
      "{offset = 192}\n"
      "  %r = Range(%a, %l, %d) : i64[3] {offset = 256}\n"
      "  return %s, %n, %c, %r\n}\n";
  // Range's scalars are weights (constants after folding).
  text.replace(text.find("%x: f32[2,3] {offset = 0}"),
               std::string("%x: f32[2,3] {offset = 0}").size(),
               "%x: f32[2,3] {offset = 0}, %a: i64[] weight = [1], "
               "%l: i64[] weight = [7], %d: i64[] weight = [2]");
  auto out = runOnHost(text, {toBytes(std::vector<float>(6, 0))});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(fromBytes<int64_t>(out[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(fromBytes<int64_t>(out[1]), (std::vector<int64_t>{6}));
  EXPECT_EQ(fromBytes<float>(out[2]), (std::vector<float>{7, 7, 7, 7}));
  EXPECT_EQ(fromBytes<int64_t>(out[3]), (std::vector<int64_t>{1, 3, 5}));
}

// The hash of snug.dropout_mask (core/ScalarOps.h) against values from
// outside snug: murmur3's published fmix32(1), and hashes and masks from
// the Python port (tests/lit/snugc/Inputs/dropout_mask.py hash S T I).
TEST(HostKernelsTest, DropoutMaskHashFixedValues) {
  EXPECT_EQ(scalar::dropoutMix(0), 0u);
  EXPECT_EQ(scalar::dropoutMix(1), 0x514e28b7u);
  EXPECT_EQ(scalar::dropoutHash(0, 0, 0), 1608878740u);
  EXPECT_EQ(scalar::dropoutHash(1, 0, 0), 4228506846u);
  EXPECT_EQ(scalar::dropoutHash(0, 1, 0), 2438189228u);
  EXPECT_EQ(scalar::dropoutHash(0, 0, 1), 1654878407u);
  EXPECT_EQ(scalar::dropoutHash(uint64_t(-1), 3, 5), 54270597u);
  EXPECT_EQ(scalar::dropoutHash(123456789012u, 7, uint64_t(1) << 33),
            2066091761u);
  // Ratio 0 keeps everything (every hash >= 0).
  EXPECT_TRUE(scalar::dropoutKeeps(0, 0, 0, 0.0f));
  EXPECT_EQ(scalar::dropoutScale(0.5f), 2.0f);
}

TEST(HostKernelsTest, DropoutMaskKernel) {
  const float k = 1.0f / (1.0f - 0.3f);
  std::string text =
      "func @t(%s: i64[] weight = [7], %n: i64[] weight = [-3]) -> (f32[8], "
      "f32[8]) attributes {arena = 128} {\n"
      "  %m = snug.dropout_mask(%s) {ratio = 0.3, salt = 2, shape = [8]} : "
      "f32[8] {offset = 0}\n"
      "  %h = snug.dropout_mask(%n) {ratio = 0.5, salt = 9, shape = [8]} : "
      "f32[8] {offset = 64}\n"
      "  return %m, %h\n}\n";
  auto out = runOnHost(text, {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(fromBytes<float>(out[0]),
            (std::vector<float>{k, 0, k, k, k, k, k, k}));
  EXPECT_EQ(fromBytes<float>(out[1]),
            (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 2}));
}

TEST(HostKernelsTest, KernelErrorsNameTheNode) {
  // Gather with an index out of range fails the run with the node named.
  std::vector<uint8_t> bytes = bundleOf(
      "func @t(%x: f32[2] {offset = 0}, %i: i64[1] weight = [5]) -> f32[1] "
      "attributes {arena = 64} {\n"
      "  %y = Gather(%x, %i) {axis = 0} : f32[1] {offset = 8} loc(\"g1\")\n"
      "  return %y\n}\n");
  TempFile file;
  writeFile(file.path, bytes);
  snug_bundle *bundle = nullptr;
  ASSERT_EQ(snug_bundle_load(file.path.c_str(), &bundle), SNUG_OK);
  snug_session *session = nullptr;
  ASSERT_EQ(snug_session_create(bundle, nullptr, &session), SNUG_OK);
  float x[2] = {1, 2};
  ASSERT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
  EXPECT_EQ(snug_session_run(session), SNUG_ERROR_RUNTIME);
  EXPECT_NE(std::string(snug_last_error()).find("node 'g1' (Gather)"),
            std::string::npos)
      << snug_last_error();
  snug_session_destroy(session);
  snug_bundle_destroy(bundle);
}

//===----------------------------------------------------------------------===//
// Indexing ops (IndexingKernels.cpp)
//===----------------------------------------------------------------------===//

TEST(HostKernelsTest, CumSumModes) {
  // x = [[1,2,3],[4,5,6]]. Along axis 1: [1,3,6, 4,9,15]; exclusive shifts
  // by one ([0,1,3, 0,4,9]); reverse sums from the end ([6,5,3, 15,11,6]);
  // both: [5,3,0, 11,6,0]. Along axis 0 (negative -2): [1,2,3, 5,7,9].
  std::vector<std::vector<float>> x = {{1, 2, 3, 4, 5, 6}};
  expectNear(run1({"f32[2,3]"}, "CumSum(%a) {axis = 1}", "f32[2,3]", x),
             {1, 3, 6, 4, 9, 15});
  expectNear(run1({"f32[2,3]"}, "CumSum(%a) {axis = 1, exclusive = 1}",
                  "f32[2,3]", x),
             {0, 1, 3, 0, 4, 9});
  expectNear(run1({"f32[2,3]"}, "CumSum(%a) {axis = 1, reverse = 1}",
                  "f32[2,3]", x),
             {6, 5, 3, 15, 11, 6});
  expectNear(run1({"f32[2,3]"},
                  "CumSum(%a) {axis = 1, exclusive = 1, reverse = 1}",
                  "f32[2,3]", x),
             {5, 3, 0, 11, 6, 0});
  // The axis as a (runtime-shaped) operand, negative.
  expectNear(run1({"f32[2,3]"}, "CumSum(%a, %ax)", "f32[2,3]", x,
                  "%ax: i32[] weight = [-2]"),
             {1, 2, 3, 5, 7, 9});
}

TEST(HostKernelsTest, CumSumIntegersWrap) {
  // i64 sums wrap (two's complement) rather than overflow.
  auto out = runOnHost(
      "func @t(%w: i64[2] weight = [9223372036854775807, 1]) -> i64[2] "
      "attributes {arena = 64} {\n"
      "  %y = CumSum(%w) {axis = 0} : i64[2] {offset = 0}\n"
      "  return %y\n}\n",
      {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(fromBytes<int64_t>(out[0]),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN}));
}

TEST(HostKernelsTest, GathersWithNegativeIndicesAndBatches) {
  // GatherElements along axis 1: [[1,2],[3,4]] at [[0,0],[-1,0]].
  expectNear(run1({"f32[2,2]"}, "GatherElements(%a, %i) {axis = 1}",
                  "f32[2,2]", {{1, 2, 3, 4}},
                  "%i: i64[2,2] weight = [0, 0, -1, 0]"),
             {1, 1, 4, 3});
  // GatherND with batch_dims 1: data [2,2,2] = 0..7, each batch picks one
  // row: batch 0 row 1 = [2,3], batch 1 row 0 = [4,5].
  expectNear(run1({"f32[2,2,2]"}, "GatherND(%a, %i) {batch_dims = 1}",
                  "f32[2,2]", {{0, 1, 2, 3, 4, 5, 6, 7}},
                  "%i: i64[2,1] weight = [1, 0]"),
             {2, 3, 4, 5});
}

TEST(HostKernelsTest, ScattersApplyDuplicatesInOrder) {
  // ScatterElements add with a duplicate index: both updates land.
  expectNear(run1({"f32[1,5]", "f32[1,2]"},
                  "ScatterElements(%a, %i, %b) {axis = 1, reduction = \"add\"}",
                  "f32[1,5]", {{1, 2, 3, 4, 5}, {1.5f, 2}},
                  "%i: i64[1,2] weight = [1, 1]"),
             {1, 5.5f, 3, 4, 5});
  // reduction none: the later duplicate wins (the order CUDA keeps too).
  expectNear(run1({"f32[1,3]", "f32[1,2]"},
                  "ScatterElements(%a, %i, %b) {axis = 1}", "f32[1,3]",
                  {{1, 2, 3}, {7, 8}}, "%i: i64[1,2] weight = [-1, 2]"),
             {1, 2, 8});
  // ScatterND max with a duplicate tuple: row 0 = max([1,6], [5,0], [2,9]).
  expectNear(run1({"f32[2,2]", "f32[2,2]"},
                  "ScatterND(%a, %i, %b) {reduction = \"max\"}", "f32[2,2]",
                  {{1, 6, 3, 4}, {5, 0, 2, 9}}, "%i: i64[2,1] weight = [0, 0]"),
             {5, 9, 3, 4});
  expectNear(run1({"f32[2,2]", "f32[2,2]"},
                  "ScatterND(%a, %i, %b) {reduction = \"mul\"}", "f32[2,2]",
                  {{1, 6, 3, 4}, {5, 0.5f, 2, 2}},
                  "%i: i64[2,1] weight = [1, -1]"),
             {1, 6, 30, 4});
  // mul: both tuples name row 1, so [3,4] * [5,0.5] * [2,2] = [30,4].
}

// snug.attention on its planned scratch (the module's scratch triple: step
// 0, 256 B at 12288; the bundle writer hands it to the kernel as a second
// result). Q [2,1], Kᵀ [1,2], V [2,1], a causal Where mask filling -inf:
//   row 0: scores [1, -1], the second masked -> p = [1, 0] -> 10
//   row 1: scores [2, -2] -> p = [e^2, e^-2] / (e^2 + e^-2)
//          = [0.98201379, 0.01798621] -> 10 p0 + 20 p1 = 10.1798621
TEST(HostKernelsTest, AttentionInItsScratch) {
  std::string text =
      "func @t(%q: f32[2,1] {offset = 0}, %k: f32[1,2] {offset = 1024}, "
      "%v: f32[2,1] {offset = 2048}, %m: bool[2,2] weight = [false, true, "
      "false, false]) -> f32[2,1] attributes {arena = 16384, scratch = [0, "
      "12288, 256]} {\n"
      "  %y = snug.attention(%q, %k, %v, %m) {fill = -inf, fill_if = 1, "
      "mask = \"where\", scale = 1.0} : f32[2,1] "
      "{offset = 8192}\n  return %y\n}\n";
  auto outputs = runF32(text, {{1, 2}, {1, -1}, {10, 20}});
  ASSERT_EQ(outputs.size(), 1u);
  expectNear(outputs[0], {10, 10.1798621f});
}

TEST(HostKernelsTest, RoundToTf32AsCvtRna) {
  using snug::scalar::floatBits;
  using snug::scalar::floatFromBits;
  using snug::scalar::roundToTf32;
  auto bits = [](float x) { return floatBits(roundToTf32(x)); };
  // tf32 keeps 10 explicit mantissa bits: the low 13 of a float go. 1 + 2^-10
  // is a tf32 value; 1 + 2^-11 lies halfway between 1 and it, and ties go
  // away from zero (cvt.rna), so up, and -(1 + 2^-11) down to -(1 + 2^-10).
  EXPECT_EQ(bits(1.0f), 0x3f800000u);
  EXPECT_EQ(bits(1.0f + std::ldexp(1.0f, -10)), 0x3f802000u);
  EXPECT_EQ(bits(1.0f + std::ldexp(1.0f, -11)), 0x3f802000u);
  EXPECT_EQ(bits(-(1.0f + std::ldexp(1.0f, -11))), 0xbf802000u);
  // (Nearest even would give 1.0 for 1 + 2^-11.) Just below the tie: down;
  // just above: up.
  EXPECT_EQ(bits(floatFromBits(0x3f800fffu)), 0x3f800000u);
  EXPECT_EQ(bits(floatFromBits(0x3f801001u)), 0x3f802000u);
  // A tie below a power of two rounds up into the next exponent: 0x3ffff000
  // (halfway between 0x3fffe000, the largest tf32 below 2, and 2) -> 2.0;
  // 0x3fbff000 (1.49951171875) -> 1.5.
  EXPECT_EQ(bits(floatFromBits(0x3ffff000u)), 0x40000000u);
  EXPECT_EQ(bits(floatFromBits(0x3fbff000u)), 0x3fc00000u);
  // Past the largest tf32 value (0x7f7fe000) by half an ulp: Inf.
  EXPECT_EQ(bits(floatFromBits(0x7f7ff000u)), 0x7f800000u);
  EXPECT_EQ(bits(floatFromBits(0x7f7fefffu)), 0x7f7fe000u);
  // Zeros, subnormals (the same 13 bits go), Inf and NaN.
  EXPECT_EQ(bits(0.0f), 0u);
  EXPECT_EQ(bits(-0.0f), 0x80000000u);
  EXPECT_EQ(bits(floatFromBits(0x00001000u)), 0x00002000u);
  EXPECT_EQ(bits(floatFromBits(0x00000fffu)), 0u);
  EXPECT_EQ(bits(INFINITY), 0x7f800000u);
  EXPECT_EQ(bits(-INFINITY), 0xff800000u);
  EXPECT_TRUE(std::isnan(roundToTf32(NAN)));
  // A NaN whose payload lies only in the low 13 bits stays NaN (quiet),
  // with its sign; masking alone would make it Inf.
  EXPECT_TRUE(std::isnan(roundToTf32(floatFromBits(0x7f800001u))));
  EXPECT_EQ(bits(floatFromBits(0xff800001u)), 0xffc00000u);
  // Every tf32 value is its own rounding.
  for (uint32_t x : {0x3f802000u, 0xc1234000u, 0x00002000u, 0x7f7fe000u})
    EXPECT_EQ(bits(floatFromBits(x)), x);
}

TEST(HostKernelsTest, Tf32ContractionsRoundTheirOperands) {
  // 1 + 2^-11 rounds to 1 + 2^-10 in tf32; times 1 + 2^-11 again that is
  // (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20, where f32 gives (1 + 2^-11)^2 =
  // 1 + 2^-10 + 2^-22. Conv (1x1), MatMul and Gemm alike; the bias and C
  // are added unrounded.
  float a = 1.0f + std::ldexp(1.0f, -11);
  double tf32 = 1.0 + std::ldexp(1.0, -9) + std::ldexp(1.0, -20);
  double f32 = 1.0 + std::ldexp(1.0, -10) + std::ldexp(1.0, -22);
  float c = std::ldexp(1.0f, -12);
  for (const char *math : {"", ", math = \"tf32\""}) {
    bool on = *math != 0;
    std::vector<float> conv = run1(
        {"f32[1,1,1,1]", "f32[1,1,1,1]", "f32[1]"},
        std::string("Conv(%a, %b, %c) {kernel_shape = [1, 1]") + math + "}",
        "f32[1,1,1,1]", {{a}, {a}, {c}});
    ASSERT_EQ(conv.size(), 1u);
    EXPECT_EQ(conv[0], float((on ? tf32 : f32) + c)) << math;
    std::vector<float> matmul =
        run1({"f32[1,1]", "f32[1,1]"},
             std::string("MatMul(%a, %b)") + (on ? " {math = \"tf32\"}" : ""),
             "f32[1,1]", {{a}, {a}});
    ASSERT_EQ(matmul.size(), 1u);
    EXPECT_EQ(matmul[0], float(on ? tf32 : f32)) << math;
    std::vector<float> gemm =
        run1({"f32[1,1]", "f32[1,1]", "f32[1,1]"},
             std::string("Gemm(%a, %b, %c) {beta = 1.0") + math + "}",
             "f32[1,1]", {{a}, {a}, {c}});
    ASSERT_EQ(gemm.size(), 1u);
    EXPECT_EQ(gemm[0], float((on ? tf32 : f32) + c)) << math;
  }
}
