//===- CostModelTest.cpp - FLOPs, bytes and the roofline ------------------===//
//
// Each case is textual IR that the verifier accepts, with the count it must
// cost worked out beside it from the op's formula (CostModel.h's
// conventions), then groups costed at their boundary, the device table and
// the roofline, the coverage of the op table, and resnet50 against the
// published 4.09 GMACs (skipped when the zoo model is not in the cache).
//
//===----------------------------------------------------------------------===//
#include "passes/analysis/CostModel.h"

#include "compiler/MemoryReport.h"
#include "compiler/Pipeline.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

using namespace snug;
using ir::DType;
using ir::Module;
using ir::Node;
using ir::OpCode;

namespace {
std::unique_ptr<Module> parse(llvm::StringRef text) {
  auto module = ir::parseModule(text, "cost.ir");
  if (!module) {
    ADD_FAILURE() << llvm::toString(module.takeError());
    return nullptr;
  }
  if (llvm::Error error = ir::verifyModule(**module)) {
    ADD_FAILURE() << llvm::toString(std::move(error));
    return nullptr;
  }
  return std::move(*module);
}

/// The node defining the value named `name`.
const Node *nodeDefining(const Module &module, llvm::StringRef name) {
  for (const auto &node : module.getNodes())
    for (const ir::Value *result : node->getResults())
      if (result->getName() == name)
        return node.get();
  ADD_FAILURE() << "no value %" << name.str();
  return nullptr;
}

std::vector<const Node *> allNodes(const Module &module) {
  std::vector<const Node *> nodes;
  for (const auto &node : module.getNodes())
    nodes.push_back(node.get());
  return nodes;
}
} // namespace

TEST(CostModelTest, Conv3x3WithBias) {
  // x f32[2,16,32,32] (131072 B), w f32[32,16,3,3] (18432 B), b f32[32]
  // (128 B), pads 1: y f32[2,32,32,32] (262144 B).
  auto module = parse(R"(
func @conv(%x: f32[2,16,32,32], %w: f32[32,16,3,3] weight, %b: f32[32] weight) -> f32[2,32,32,32] {
  %y = Conv(%x, %w, %b) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : f32[2,32,32,32]
  return %y
})");
  ASSERT_TRUE(module);
  Cost cost = costOfNode(*nodeDefining(*module, "y"));
  // N Cout Hout Wout Cin/group Kh Kw = 2*32*32*32*16*3*3.
  const uint64_t macs = 2ull * 32 * 32 * 32 * 16 * 3 * 3;
  EXPECT_EQ(cost.getMacs(), macs);
  EXPECT_EQ(macs, 9437184u);
  // 2 per MAC, plus the bias add per result element (2*32*32*32).
  EXPECT_EQ(cost.getFlops(), 2 * macs + 2 * 32 * 32 * 32);
  EXPECT_EQ(cost.getContractionFlops(), cost.getFlops());
  EXPECT_EQ(cost.getBytesRead(), 131072u + 18432u + 128u);
  EXPECT_EQ(cost.getBytesWritten(), 262144u);
  ASSERT_EQ(cost.getDTypes().size(), 1u);
  EXPECT_EQ(cost.getDTypes()[0], DType::F32);
}

TEST(CostModelTest, StridedConvWithoutBias) {
  // x f32[1,3,224,224], w f32[64,3,7,7], stride 2, pads 3: 112x112.
  auto module = parse(R"(
func @stem(%x: f32[1,3,224,224], %w: f32[64,3,7,7] weight) -> f32[1,64,112,112] {
  %y = Conv(%x, %w) {dilations = [1, 1], group = 1, kernel_shape = [7, 7], pads = [3, 3, 3, 3], strides = [2, 2]} : f32[1,64,112,112]
  return %y
})");
  ASSERT_TRUE(module);
  Cost cost = costOfNode(*nodeDefining(*module, "y"));
  // resnet50's stem: 1*64*112*112*3*7*7 = 118013952 MACs, no bias.
  EXPECT_EQ(cost.getMacs(), 118013952u);
  EXPECT_EQ(cost.getFlops(), 2 * 118013952u);
}

TEST(CostModelTest, DepthwiseConv) {
  // group = Cin = Cout = 32: each output sums one channel's 3x3 window.
  auto module = parse(R"(
func @dw(%x: f32[1,32,56,56], %w: f32[32,1,3,3] weight, %b: f32[32] weight) -> f32[1,32,56,56] {
  %y = Conv(%x, %w, %b) {dilations = [1, 1], group = 32, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : f32[1,32,56,56]
  return %y
})");
  ASSERT_TRUE(module);
  Cost cost = costOfNode(*nodeDefining(*module, "y"));
  // N Cout Hout Wout Cin/group Kh Kw = 1*32*56*56*1*3*3 = 903168.
  EXPECT_EQ(cost.getMacs(), 903168u);
  EXPECT_EQ(cost.getFlops(), 2 * 903168u + 32 * 56 * 56);
  EXPECT_EQ(cost.getBytesRead(), (32u * 56 * 56 + 32 * 9 + 32) * 4);
}

TEST(CostModelTest, ConvTranspose) {
  // Each of the 1*8*4*4 input elements scatters into Cout/group*Kh*Kw =
  // 4*2*2 results: 2048 MACs; the bias adds once per result (1*4*8*8).
  auto module = parse(R"(
func @up(%x: f32[1,8,4,4], %w: f32[8,4,2,2] weight, %b: f32[4] weight) -> f32[1,4,8,8] {
  %y = ConvTranspose(%x, %w, %b) {dilations = [1, 1], group = 1, kernel_shape = [2, 2], output_padding = [0, 0], pads = [0, 0, 0, 0], strides = [2, 2]} : f32[1,4,8,8]
  return %y
})");
  ASSERT_TRUE(module);
  Cost cost = costOfNode(*nodeDefining(*module, "y"));
  EXPECT_EQ(cost.getMacs(), 2048u);
  EXPECT_EQ(cost.getFlops(), 2 * 2048u + 256);
}

TEST(CostModelTest, Gemm) {
  // A f32[8,64], B f32[32,64] transposed, C f32[32]: M=8, N=32, K=64.
  auto module = parse(R"(
func @gemm(%a: f32[8,64], %b: f32[32,64] weight, %c: f32[32] weight, %at: f32[64,8]) -> (f32[8,32], f32[8,32], f32[8,32], f32[8,32]) {
  %plain = Gemm(%a, %b, %c) {alpha = 1.0, beta = 1.0, transA = 0, transB = 1} : f32[8,32]
  %scaled = Gemm(%a, %b, %c) {alpha = 0.5, beta = 2.0, transA = 0, transB = 1} : f32[8,32]
  %noc = Gemm(%a, %b) {alpha = 1.0, beta = 1.0, transA = 0, transB = 1} : f32[8,32]
  %ta = Gemm(%at, %b, %c) {alpha = 1.0, beta = 0.0, transA = 1, transB = 1} : f32[8,32]
  return %plain, %scaled, %noc, %ta
})");
  ASSERT_TRUE(module);
  const uint64_t mnk = 8 * 32 * 64, mn = 8 * 32;
  // alpha = beta = 1: the products and adding C.
  Cost plain = costOfNode(*nodeDefining(*module, "plain"));
  EXPECT_EQ(plain.getMacs(), mnk);
  EXPECT_EQ(plain.getFlops(), 2 * mnk + mn);
  EXPECT_EQ(plain.getBytesRead(), (8u * 64 + 32 * 64 + 32) * 4);
  EXPECT_EQ(plain.getBytesWritten(), mn * 4);
  // alpha != 1 scales the product, beta != 1 scales C before the add.
  Cost scaled = costOfNode(*nodeDefining(*module, "scaled"));
  EXPECT_EQ(scaled.getFlops(), 2 * mnk + mn + 2 * mn);
  // Without C the products alone.
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "noc")).getFlops(), 2 * mnk);
  // transA takes K from A's first dim; beta = 0 drops C's terms (C is
  // still an operand, so still read).
  Cost ta = costOfNode(*nodeDefining(*module, "ta"));
  EXPECT_EQ(ta.getMacs(), mnk);
  EXPECT_EQ(ta.getFlops(), 2 * mnk);
  EXPECT_EQ(ta.getBytesRead(), (64u * 8 + 32 * 64 + 32) * 4);
}

TEST(CostModelTest, MatMulBroadcastsBatchDims) {
  // [2,1,8,16] x [3,16,4]: batch dims broadcast to [2,3], so 2*3 products
  // of 8x16 by 16x4: 2*3*8*4*16 = 3072 MACs. Vectors: [16] x [16,4] is
  // 4 dot products of 16; [16] x [16] one.
  auto module = parse(R"(
func @mm(%a: f32[2,1,8,16], %b: f32[3,16,4], %v: f32[16], %m: f32[16,4]) -> (f32[2,3,8,4], f32[4], f32[]) {
  %y = MatMul(%a, %b) : f32[2,3,8,4]
  %vm = MatMul(%v, %m) : f32[4]
  %vv = MatMul(%v, %v) : f32[]
  return %y, %vm, %vv
})");
  ASSERT_TRUE(module);
  Cost cost = costOfNode(*nodeDefining(*module, "y"));
  EXPECT_EQ(cost.getMacs(), 3072u);
  EXPECT_EQ(cost.getFlops(), 2 * 3072u);
  // Each operand is read once, not once per broadcast copy.
  EXPECT_EQ(cost.getBytesRead(), (2u * 8 * 16 + 3 * 16 * 4) * 4);
  EXPECT_EQ(cost.getBytesWritten(), 2u * 3 * 8 * 4 * 4);
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "vm")).getMacs(), 64u);
  Cost dot = costOfNode(*nodeDefining(*module, "vv"));
  EXPECT_EQ(dot.getMacs(), 16u);
  // The same vector on both sides is read once.
  EXPECT_EQ(dot.getBytesRead(), 64u);
}

TEST(CostModelTest, SoftmaxAndItsFamily) {
  // Per element: max, subtract, exp, sum, divide = 5. LogSoftmax adds a
  // log per row (4 rows of 10). Hardmax: one compare per element.
  auto module = parse(R"(
func @sm(%x: f32[4,10]) -> (f32[4,10], f32[4,10], f32[4,10]) {
  %s = Softmax(%x) {axis = -1} : f32[4,10]
  %l = LogSoftmax(%x) {axis = 1} : f32[4,10]
  %h = Hardmax(%x) {axis = -1} : f32[4,10]
  return %s, %l, %h
})");
  ASSERT_TRUE(module);
  Cost softmax = costOfNode(*nodeDefining(*module, "s"));
  EXPECT_EQ(softmax.getFlops(), 5u * 40);
  EXPECT_EQ(softmax.getMacs(), 0u);
  EXPECT_EQ(softmax.getBytesRead(), 160u);
  EXPECT_EQ(softmax.getBytesWritten(), 160u);
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "l")).getFlops(), 5u * 40 + 4);
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "h")).getFlops(), 40u);
}

TEST(CostModelTest, ElementwiseCountsTheirFormula) {
  auto module = parse(R"(
func @ew(%x: f32[2,8], %y: f32[8], %c: bool[2,8]) -> (f32[2,8], f32[2,8], f32[2,8], bool[2,8], f32[2,8], f32[2,8], f32[2,8], f32[2,8], f32[2,8]) {
  %add = Add(%x, %y) : f32[2,8]
  %sig = Sigmoid(%x) : f32[2,8]
  %gelu = Gelu(%x) {approximate = "tanh"} : f32[2,8]
  %less = Less(%x, %y) : bool[2,8]
  %where = Where(%c, %x, %y) : f32[2,8]
  %clip = Clip(%x) {max = 6.0} : f32[2,8]
  %sum = Sum(%x, %y, %x) : f32[2,8]
  %mean = Mean(%x, %y) : f32[2,8]
  %twice = Add(%x, %x) : f32[2,8]
  return %add, %sig, %gelu, %less, %where, %clip, %sum, %mean, %twice
})");
  ASSERT_TRUE(module);
  auto flops = [&](llvm::StringRef name) {
    return costOfNode(*nodeDefining(*module, name)).getFlops();
  };
  EXPECT_EQ(flops("add"), 16u);      // 1 per result element
  EXPECT_EQ(flops("sig"), 4u * 16);  // neg, exp, add, divide
  EXPECT_EQ(flops("gelu"), 9u * 16); // the tanh form
  EXPECT_EQ(flops("less"), 16u);
  EXPECT_EQ(flops("clip"), 16u);     // only an upper bound: one min
  EXPECT_EQ(flops("sum"), 2u * 16);  // 3 operands: 2 adds
  EXPECT_EQ(flops("mean"), 2u * 16); // an add and a divide
  // Where computes in its branches' dtype, not the condition's.
  Cost where = costOfNode(*nodeDefining(*module, "where"));
  EXPECT_EQ(where.get(DType::F32).flops, 16u);
  EXPECT_EQ(where.get(DType::Bool).flops, 0u);
  EXPECT_EQ(where.get(DType::Bool).bytesRead, 16u);
  EXPECT_EQ(where.get(DType::F32).bytesRead, 64u + 32u);
  // A compare's result is bool bytes; its FLOPs are f32.
  Cost less = costOfNode(*nodeDefining(*module, "less"));
  EXPECT_EQ(less.get(DType::Bool).bytesWritten, 16u);
  EXPECT_EQ(less.get(DType::F32).flops, 16u);
  // Sum(x, y, x) reads x once.
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "sum")).getBytesRead(), 96u);
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "twice")).getBytesRead(), 64u);
}

TEST(CostModelTest, NormalizationPoolsAndReductions) {
  auto module = parse(R"(
func @nr(%x: f32[1,4,6,6], %s: f32[4] weight, %b: f32[4] weight, %m: f32[4] weight, %v: f32[4] weight, %r: f32[3,16], %g: f32[16] weight, %gb: f32[16] weight) -> (f32[1,4,6,6], f32[3,16], f32[1,4,3,3], f32[1,4,3,3], f32[1,4,1,1], f32[3,1], f32[3,1]) {
  %bn = BatchNormalization(%x, %s, %b, %m, %v) {epsilon = 1.0e-05} : f32[1,4,6,6]
  %ln = LayerNormalization(%r, %g, %gb) {axis = -1, epsilon = 1.0e-05} : f32[3,16]
  %mp = MaxPool(%x) {ceil_mode = 0, dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : f32[1,4,3,3]
  %ap = AveragePool(%x) {ceil_mode = 0, count_include_pad = 0, kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : f32[1,4,3,3]
  %gap = GlobalAveragePool(%x) : f32[1,4,1,1]
  %mean = ReduceMean(%r) {axes = [1], keepdims = 1} : f32[3,1]
  %l2 = ReduceL2(%r) {axes = [1], keepdims = 1} : f32[3,1]
  return %bn, %ln, %mp, %ap, %gap, %mean, %l2
})");
  ASSERT_TRUE(module);
  auto flops = [&](llvm::StringRef name) {
    return costOfNode(*nodeDefining(*module, name)).getFlops();
  };
  // 144 elements x (multiply, add) + 4 channels x 5 for the factors.
  EXPECT_EQ(flops("bn"), 2u * 144 + 5 * 4);
  // 48 elements x (4 statistics + normalize + scale + bias) + 3 rows x 5.
  EXPECT_EQ(flops("ln"), 7u * 48 + 5 * 3);
  // 36 results x 4 window positions; average adds a divide.
  EXPECT_EQ(flops("mp"), 36u * 4);
  EXPECT_EQ(flops("ap"), 36u * 5);
  // Sum 144 inputs, divide 4 results.
  EXPECT_EQ(flops("gap"), 144u + 4);
  EXPECT_EQ(flops("mean"), 48u + 3);
  EXPECT_EQ(flops("l2"), 2u * 48 + 3);
  // BatchNorm reads x and its four parameter vectors.
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "bn")).getBytesRead(),
            144u * 4 + 4 * 16);
}

TEST(CostModelTest, ViewsAndMovement) {
  // Views cost nothing. Transpose moves bytes and computes nothing; Gather
  // reads the rows it takes (2 of 100) and its i64 indices; Shape reads no
  // data; linear Resize blends 4 neighbours (3 lerps of 3 FLOPs).
  auto module = parse(R"(
func @mv(%x: f32[2,3,4], %t: f32[100,8] weight, %i: i64[2], %img: f32[1,1,4,4]) -> (f32[6,4], f32[4,3,2], f32[2,8], i64[3], f32[1,1,8,8]) {
  %r = Reshape(%x) {shape = [6, 4]} : f32[6,4]
  %tr = Transpose(%x) {perm = [2, 1, 0]} : f32[4,3,2]
  %g = Gather(%t, %i) {axis = 0} : f32[2,8]
  %sh = Shape(%x) : i64[3]
  %up = Resize(%img) {coordinate_transformation_mode = "half_pixel", cubic_coeff_a = -0.75, mode = "linear", nearest_mode = "round_prefer_floor", scales = [1.0, 1.0, 2.0, 2.0], sizes = [1, 1, 8, 8]} : f32[1,1,8,8]
  return %r, %tr, %g, %sh, %up
})");
  ASSERT_TRUE(module);
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "r")), Cost());
  Cost transpose = costOfNode(*nodeDefining(*module, "tr"));
  EXPECT_EQ(transpose.getFlops(), 0u);
  EXPECT_EQ(transpose.getBytesRead(), 96u);
  EXPECT_EQ(transpose.getBytesWritten(), 96u);
  Cost gather = costOfNode(*nodeDefining(*module, "g"));
  EXPECT_EQ(gather.get(DType::F32).bytesRead, 2u * 8 * 4);
  EXPECT_EQ(gather.get(DType::I64).bytesRead, 16u);
  EXPECT_EQ(gather.getBytesWritten(), 64u);
  Cost shape = costOfNode(*nodeDefining(*module, "sh"));
  EXPECT_EQ(shape.getBytesRead(), 0u);
  EXPECT_EQ(shape.get(DType::I64).bytesWritten, 24u);
  EXPECT_EQ(costOfNode(*nodeDefining(*module, "up")).getFlops(), 64u * 9);
}

TEST(CostModelTest, GroupCountsBytesAtItsBoundary) {
  // x -> Relu -> Reshape -> Exp -> Add(., x) -> out, and the Relu also
  // leaves to Neg, outside the group.
  auto module = parse(R"(
func @chain(%x: f32[4,16]) -> (f32[64], f32[4,16]) {
  %a = Relu(%x) : f32[4,16]
  %v = Reshape(%a) {shape = [64]} : f32[64]
  %e = Exp(%v) : f32[64]
  %w = Reshape(%x) {shape = [64]} : f32[64]
  %s = Add(%e, %w) : f32[64]
  %n = Neg(%a) : f32[4,16]
  return %s, %n
})");
  ASSERT_TRUE(module);
  const Node *relu = nodeDefining(*module, "a"),
             *view = nodeDefining(*module, "v"),
             *exp = nodeDefining(*module, "e"),
             *xview = nodeDefining(*module, "w"),
             *add = nodeDefining(*module, "s");
  // Each node alone: 256 B in and out, views free.
  Cost unfused;
  for (const Node *node : {relu, view, exp, xview, add})
    unfused += costOfNode(*node);
  EXPECT_EQ(unfused.getFlops(), 3u * 64);
  EXPECT_EQ(unfused.getBytesRead(), 256u * 4); // x, a, v, e and w
  EXPECT_EQ(unfused.getBytesWritten(), 256u * 3);

  // Fused: x is read once (directly and through its view), the Relu's
  // result is written because Neg reads it, the Add's because it is an
  // output; the Exp's stays inside.
  std::vector<const Node *> group{relu, view, exp, xview, add};
  Cost fused = costOfGroup(group);
  EXPECT_EQ(fused.getFlops(), unfused.getFlops());
  EXPECT_EQ(fused.getBytesRead(), 256u);
  EXPECT_EQ(fused.getBytesWritten(), 512u);
  GroupBoundary boundary = findGroupBoundary(group);
  ASSERT_EQ(boundary.inputs.size(), 1u);
  EXPECT_EQ(boundary.inputs[0].first->getName(), "x");
  ASSERT_EQ(boundary.outputs.size(), 2u);
  EXPECT_EQ(boundary.outputs[0]->getName(), "a");
  EXPECT_EQ(boundary.outputs[1]->getName(), "s");

  // A view leaving the group writes what it names: {Relu, Reshape} writes
  // the Relu's result once although both it and its view leave.
  Cost reluAndView = costOfGroup({relu, view});
  EXPECT_EQ(reluAndView.getBytesWritten(), 256u);
  EXPECT_EQ(reluAndView.getBytesRead(), 256u);

  // The explicit-boundary form (a fused node's operands and results) gives
  // the same as the group when the boundary is the group's.
  EXPECT_EQ(costOfBody(group, {boundary.inputs[0].first},
                       {boundary.outputs[0], boundary.outputs[1]}),
            fused);

  // A group of one is the node.
  for (const Node *node : allNodes(*module))
    EXPECT_EQ(costOfGroup(node), costOfNode(*node)) << node->describe();
}

TEST(CostModelTest, DeadResultsAreWrittenAndWholeModuleSums) {
  // MaxPool's unused indices are still written by its kernel (8 x i64).
  auto module = parse(R"(
func @pool(%x: f32[1,2,4,4]) -> f32[1,2,2,2] {
  %y, %idx = MaxPool(%x) {ceil_mode = 0, dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], storage_order = 0, strides = [2, 2]} : f32[1,2,2,2], i64[1,2,2,2]
  %z = Relu(%y) : f32[1,2,2,2]
  return %z
})");
  ASSERT_TRUE(module);
  Cost pool = costOfNode(*nodeDefining(*module, "y"));
  EXPECT_EQ(pool.get(DType::I64).bytesWritten, 64u);
  EXPECT_EQ(pool.get(DType::F32).bytesWritten, 32u);
  Cost total = costOfModule(*module);
  Cost sum = pool;
  sum += costOfNode(*nodeDefining(*module, "z"));
  EXPECT_EQ(total, sum);
  EXPECT_EQ(total.getFlops(), 8u * 4 + 8);
}

TEST(CostModelTest, Tf32ContractionsAtTheTf32Peak) {
  // --precision=tf32 marks the f32 conv math = "tf32": its FLOPs (7.40 G, as
  // above) run at H200's dense TF32 peak, 495 TFLOP/s (15 us, above the
  // 15.2 MB memory time of 3.17 us), where the unmarked conv takes the
  // CUDA-core 67; a device without a TF32 figure uses its f32 one. The cost
  // counts are the same (tf32 is math, not storage).
  auto module = parse(R"(
func @conv(%x: f32[8,256,28,28], %w: f32[256,256,3,3] weight) -> (f32[8,256,28,28], f32[8,256,28,28]) {
  %y = Conv(%x, %w) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : f32[8,256,28,28]
  %t = Conv(%x, %w) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], math = "tf32", pads = [1, 1, 1, 1], strides = [1, 1]} : f32[8,256,28,28]
  return %y, %t
})");
  ASSERT_TRUE(module);
  const DeviceSpec &h200 = getDefaultDevice();
  EXPECT_EQ(h200.tf32FlopsPerSecond, 495e12);
  Cost f32 = costOfNode(*nodeDefining(*module, "y"));
  Cost tf32 = costOfNode(*nodeDefining(*module, "t"));
  EXPECT_EQ(f32.get(DType::F32).tf32Flops, 0u);
  EXPECT_EQ(tf32.get(DType::F32).tf32Flops, tf32.getFlops());
  EXPECT_EQ(tf32.getMacs(), f32.getMacs());
  EXPECT_EQ(tf32.getBytesMoved(), f32.getBytesMoved());
  EXPECT_DOUBLE_EQ(estimateComputeSeconds(f32, h200), f32.getFlops() / 67e12);
  EXPECT_DOUBLE_EQ(estimateComputeSeconds(tf32, h200),
                   tf32.getFlops() / 495e12);
  EXPECT_DOUBLE_EQ(estimateSeconds(tf32, h200), tf32.getFlops() / 495e12);
  DeviceSpec noTf32 = h200;
  noTf32.tf32FlopsPerSecond = 0;
  EXPECT_DOUBLE_EQ(estimateComputeSeconds(tf32, noTf32),
                   tf32.getFlops() / 67e12);
  // Added costs keep the share.
  Cost both = f32;
  both += tf32;
  EXPECT_EQ(both.get(DType::F32).tf32Flops, tf32.getFlops());
}

TEST(CostModelTest, TensorFiguresOnlyForHalfContractions) {
  // The same conv in f32 and f16: the f16 one runs at the tensor-core peak,
  // the f32 one at the CUDA-core peak. 8*256*28*28*256*9 = 3699376128 MACs:
  // 7.40 GFLOP take 110 us in f32 and 7.48 us in f16, both above the
  // memory time (15.2 MB: 3.17 us; 7.6 MB: 1.58 us). The f16 Relu is
  // memory-bound: 1 FLOP per 4 bytes.
  auto module = parse(R"(
func @conv(%x: f32[8,256,28,28], %w: f32[256,256,3,3] weight, %h: f16[8,256,28,28], %hw: f16[256,256,3,3] weight) -> (f32[8,256,28,28], f16[8,256,28,28], f16[8,256,28,28]) {
  %y = Conv(%x, %w) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : f32[8,256,28,28]
  %yh = Conv(%h, %hw) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : f16[8,256,28,28]
  %rh = Relu(%h) : f16[8,256,28,28]
  return %y, %yh, %rh
})");
  ASSERT_TRUE(module);
  const DeviceSpec *h200 = lookupDevice("H200");
  ASSERT_TRUE(h200);
  EXPECT_EQ(h200, &getDefaultDevice());
  EXPECT_EQ(h200->memoryBytesPerSecond, 4.8e12);
  EXPECT_EQ(h200->vectorFlopsPerSecond, 67e12);
  EXPECT_EQ(h200->tensorFlopsPerSecond, 989e12);
  EXPECT_EQ(lookupDevice("tpu"), nullptr);

  Cost f32 = costOfNode(*nodeDefining(*module, "y"));
  Cost f16 = costOfNode(*nodeDefining(*module, "yh"));
  EXPECT_EQ(f32.getMacs(), f16.getMacs());
  EXPECT_EQ(f16.get(DType::F16).contractionFlops, f16.getFlops());
  EXPECT_DOUBLE_EQ(estimateComputeSeconds(f32, *h200),
                   f32.getFlops() / 67e12);
  EXPECT_DOUBLE_EQ(estimateComputeSeconds(f16, *h200),
                   f16.getFlops() / 989e12);
  EXPECT_DOUBLE_EQ(estimateSeconds(f32, *h200), f32.getFlops() / 67e12);
  EXPECT_DOUBLE_EQ(estimateSeconds(f16, *h200),
                   std::max(f16.getFlops() / 989e12,
                            f16.getBytesMoved() / 4.8e12));
  // An f16 elementwise op is no contraction: the f32 figure.
  Cost relu = costOfNode(*nodeDefining(*module, "rh"));
  EXPECT_DOUBLE_EQ(estimateComputeSeconds(relu, *h200),
                   relu.getFlops() / 67e12);

  EXPECT_EQ(f32.getMacs(), 3699376128u);
  EXPECT_DOUBLE_EQ(estimateSeconds(relu, *h200),
                   relu.getBytesMoved() / 4.8e12);

  // The module: each node its own max, summed; the convs compute-bound,
  // the Relu memory-bound.
  RooflineEstimate estimate = estimateModule(*module, *h200);
  EXPECT_DOUBLE_EQ(estimate.seconds, estimateSeconds(f32, *h200) +
                                         estimateSeconds(f16, *h200) +
                                         estimateSeconds(relu, *h200));
  EXPECT_EQ(estimate.computeBoundNodes, 2u);
  EXPECT_EQ(estimate.memoryBoundNodes, 1u);
  EXPECT_DOUBLE_EQ(estimate.computeBoundSeconds,
                   estimateSeconds(f32, *h200) + estimateSeconds(f16, *h200));
  EXPECT_GT(f32.getArithmeticIntensity(), relu.getArithmeticIntensity());
}

TEST(CostModelTest, TheReportNamesItsDevice) {
  auto module = parse(R"(
func @mm(%a: f32[64,64], %b: f32[64,64] weight) -> f32[64,64] {
  %y = MatMul(%a, %b) : f32[64,64]
  return %y
})");
  ASSERT_TRUE(module);
  // H200 unless told; another device of the table by name.
  auto h200 = buildCostEstimate(*module);
  ASSERT_TRUE(bool(h200)) << llvm::toString(h200.takeError());
  EXPECT_EQ(h200->device, "H200");
  EXPECT_EQ(h200->macs, 64u * 64 * 64);
  auto a100 = buildCostEstimate(*module, "a100");
  ASSERT_TRUE(bool(a100)) << llvm::toString(a100.takeError());
  EXPECT_EQ(a100->device, "A100");
  EXPECT_DOUBLE_EQ(a100->rooflineSeconds,
                   estimateModule(*module, *lookupDevice("a100")).seconds);
  EXPECT_GT(a100->rooflineSeconds, h200->rooflineSeconds);
  auto unknown = buildCostEstimate(*module, "tpu");
  ASSERT_FALSE(bool(unknown));
  EXPECT_EQ(llvm::toString(unknown.takeError()),
            "unknown device 'tpu' (known: h200, h100, a100)");
}

TEST(CostModelTest, EveryOpHasARule) {
  for (const ir::OpInfo &op : ir::getAllOps()) {
    CostRule rule = getCostRule(op.code);
    EXPECT_NE(rule, CostRule::None) << op.name << " has no cost rule";
    // The table's View trait and the cost model's free ops are one set.
    EXPECT_EQ(op.isView(), rule == CostRule::View)
        << op.name << " is costed as " << getCostRuleName(rule).str();
    if (op.isElementwise()) {
      EXPECT_TRUE(rule == CostRule::Elementwise || rule == CostRule::Variadic)
          << op.name << " is elementwise but costed as "
          << getCostRuleName(rule).str();
    }
    // A line in CostRules.def for an op whose traits give its rule would
    // never be read.
    if (op.isView() || op.isElementwise()) {
      EXPECT_EQ(getDeclaredCostRule(op.code), CostRule::None)
          << op.name << " has a line in CostRules.def and a rule by trait";
    }
  }
}

TEST(CostModelTest, EveryElementwiseOpCostsPerElement) {
  // Every elementwise op of the table, built over [3,5] operands of a type
  // it takes: at least one FLOP per result element, each operand read once
  // and the result written once.
  for (const ir::OpInfo &op : ir::getAllOps()) {
    if (!op.isElementwise())
      continue;
    DType type = op.acceptsDType(DType::F32) ? DType::F32 : DType::Bool;
    ir::TensorType operandType(type, {3, 5});
    Module module;
    llvm::SmallVector<ir::Value *, 3> operands;
    // Variadic ops get two operands (one is a copy, no FLOPs).
    unsigned count = op.maxOperands == -1 ? 2 : std::max(op.minOperands, 1);
    for (unsigned i = 0; i < count; ++i) {
      bool condition = op.code == OpCode::Where && i == 0;
      operands.push_back(module.addInput(
          "in" + std::to_string(i),
          condition ? ir::TensorType(DType::Bool, {3, 5}) : operandType));
    }
    ir::DType resultDType =
        op.family == ir::OpFamily::Compare ? DType::Bool : type;
    ir::AttributeMap attributes;
    if (op.code == OpCode::Clip)
      attributes["min"] = ir::Attribute::getFloat(0);
    const Node *node = module.addNode(op.code, operands,
                                      {ir::TensorType(resultDType, {3, 5})},
                                      attributes);
    Cost cost = costOfNode(*node);
    uint64_t operandBytes = 0;
    for (const ir::Value *operand : operands)
      operandBytes += operand->getType().getByteSize();
    EXPECT_GE(cost.getFlops(), 15u) << op.name;
    EXPECT_EQ(cost.getFlops() % 15, 0u) << op.name;
    EXPECT_EQ(cost.getBytesRead(), operandBytes) << op.name;
    EXPECT_EQ(cost.getBytesWritten(), 15u * ir::getDTypeSize(resultDType))
        << op.name;
  }
}

namespace {
/// The zoo cache, as tests/e2e finds it: $SNUG_MODEL_CACHE, else the
/// checkout's .cache/models.
std::string getModelCache() {
  if (const char *cache = std::getenv("SNUG_MODEL_CACHE"))
    return cache;
  return SNUG_MODEL_CACHE;
}
} // namespace

TEST(CostModelTest, Resnet50MatchesThePublishedMacs) {
  llvm::SmallString<256> path(getModelCache());
  llvm::sys::path::append(path, "resnet50-opset17", "model.onnx");
  if (!llvm::sys::fs::exists(path)) {
    // The e2e tier runs this test again after exporting the model, with
    // SNUG_REQUIRE_ZOO set: there a missing model is a failure.
    if (std::getenv("SNUG_REQUIRE_ZOO"))
      FAIL() << path.str().str() << " is missing";
    GTEST_SKIP() << path.str().str()
                 << " is missing (`make zoo` exports the zoo)";
  }
  ImportOptions options;
  options.dims["batch"] = 1;
  // As snugc plans it: imported, folded, dead code removed.
  auto module = importAndRunPipeline(path, options);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  Cost cost = costOfModule(**module);
  // torchvision lists 4.09 GMACs (as "GFLOPS") for resnet50 at 224x224:
  // convolutions and the classifier. Within 2 %.
  double gmacs = cost.getMacs() / 1e9;
  std::cout << "resnet50: " << gmacs << " GMACs, "
            << cost.getFlops() / 1e9 << " GFLOPs, "
            << cost.getBytesMoved() / 1e6 << " MB moved\n";
  EXPECT_NEAR(gmacs, 4.09, 0.02 * 4.09);
  // Everything is f32; the contractions are almost all the FLOPs.
  EXPECT_EQ(cost.getDTypes().front(), DType::F32);
  EXPECT_GT(double(cost.getContractionFlops()) / cost.getFlops(), 0.99);
  // Weights are read: at least the 25.5 M parameters' 102 MB.
  EXPECT_GT(cost.getBytesRead(), 100000000u);
  // The roofline on H200: conv FLOPs at 67 TFLOP/s dominate.
  RooflineEstimate estimate = estimateModule(**module, getDefaultDevice());
  EXPECT_GT(estimate.seconds, cost.getFlops() / 67e12);
  EXPECT_LT(estimate.seconds, estimateComputeSeconds(cost, getDefaultDevice()) +
                                  cost.getBytesMoved() / 4.8e12);
}

/// A snug.fused node computes what its body's ops compute, and moves only
/// its own operands and results (what fusion saves).
TEST(CostModelTest, FusedRegionsCountTheirBody) {
  auto module = parse(R"(
func @fused(%x: f32[4,8], %b: f32[8], %s: f32[4,1]) -> f32[4,8] {
  %y = snug.fused(%x, %b, %s) : f32[4,8] {
  ^bb(%a: f32[4,8], %c: f32[8], %d: f32[4,1]):
    %t0 = Add(%a, %c) : f32[4,8]
    %t1 = Mul(%t0, %d) : f32[4,8]
    %t2 = Relu(%t1) : f32[4,8]
    %t3 = Sub(%t2, %c) : f32[4,8]
    %t4 = Sigmoid(%t3) : f32[4,8]
    yield %t4
  }
  return %y
})");
  ASSERT_TRUE(module);
  Cost cost = costOfNode(*nodeDefining(*module, "y"));
  EXPECT_EQ(cost.getFlops(), (1u + 1 + 1 + 1 + 4) * 32); // Sigmoid is 4
  EXPECT_EQ(cost.get(DType::F32).bytesRead, 128u + 32 + 16);
  EXPECT_EQ(cost.get(DType::F32).bytesWritten, 128u);
}
