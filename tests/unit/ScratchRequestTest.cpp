//===- ScratchRequestTest.cpp - The cuBLAS workspace rule -----------------===//
//
// getScratchRequest on nodes (what plan-memory asks) and
// getGemmWorkspaceBytes on raw shapes: cuBLAS's 16 KiB minimum for every
// GEMM cuBLAS runs, also where split-K cannot help (short K, or enough
// output tiles to fill the GPU), a bounded larger one for small-M x N,
// long-K products, nothing for the host target or for dtypes cuBLAS does
// not take, and never more than the cap.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "ir/Parser.h"
#include "passes/memory/ScratchRequest.h"

#include <gtest/gtest.h>

using namespace snug;
using namespace snug::ir;

namespace {

/// The request of Y = MatMul(X[a], W[b]) with W a weight.
ScratchRequest matMulRequest(std::vector<int64_t> a, std::vector<int64_t> b,
                             std::vector<int64_t> y,
                             const ScratchOptions &options = {},
                             DType dtype = DType::F32) {
  Module module("m");
  Value *x = module.addInput("x", TensorType(dtype, a));
  Value *w = module.addElidedWeight("w", TensorType(dtype, b));
  Node *node = module.addNode("MatMul", {x, w}, {TensorType(dtype, y)});
  return getScratchRequest(*node, options);
}

} // namespace

// cuBLAS, cublasSetWorkspace: below 16 KiB "some routines" fail with
// CUBLAS_STATUS_ALLOC_FAILED; a GEMM that does not split gets that much.
TEST(ScratchRequestTest, ASmallGemmGetsCublasMinimum) {
  // The demo's classifier shape: K = 64 leaves no slice of 256.
  EXPECT_EQ(matMulRequest({1, 64}, {64, 10}, {1, 10}).bytes, 16384u);
  EXPECT_EQ(getGemmWorkspaceBytes(10, 1, 64, 1, DType::F32, 4 << 20), 16384u);
  EXPECT_EQ(kMinCublasWorkspace, 16384u);
  // K = 0 is still a cuBLAS call (C = beta C); an empty C is none.
  EXPECT_EQ(getGemmWorkspaceBytes(10, 1, 0, 1, DType::F32, 4 << 20), 16384u);
  EXPECT_EQ(getGemmWorkspaceBytes(0, 1, 64, 1, DType::F32, 4 << 20), 0u);
  // f16, bf16 and f64 alike.
  for (DType dtype : {DType::F16, DType::BF16, DType::F64})
    EXPECT_EQ(matMulRequest({1, 64}, {64, 10}, {1, 10}, {}, dtype).bytes,
              16384u);
}

TEST(ScratchRequestTest, ALongKGemmGetsABoundedWorkspace) {
  // 64 x 64 by K = 65536: one output tile, 32 slices (the most) of 64 x 64
  // floats: 512 KiB, under the 4 MiB cap.
  ScratchRequest request = matMulRequest({64, 65536}, {65536, 64}, {64, 64});
  EXPECT_EQ(request.bytes, 32u * 64 * 64 * 4);
  EXPECT_STREQ(request.purpose, "cuBLAS workspace");
  // resnet50's classifier: 8 column tiles, 8 slices (K / 256) of 1000.
  EXPECT_EQ(getGemmWorkspaceBytes(1000, 1, 2048, 1, DType::F32, 4 << 20),
            32000u);
  // A tiny product that still splits gets cuBLAS's 16 KiB minimum.
  EXPECT_EQ(getGemmWorkspaceBytes(8, 1, 4096, 1, DType::F32, 4 << 20), 16384u);
  // f64 accumulates in f64: twice the bytes.
  EXPECT_EQ(getGemmWorkspaceBytes(64, 64, 65536, 1, DType::F64, 4 << 20),
            2u * 32 * 64 * 64 * 4);
}

TEST(ScratchRequestTest, TheCapBoundsEveryRequest) {
  ScratchOptions options;
  options.cublasWorkspaceCap = 64 << 10;
  EXPECT_EQ(
      matMulRequest({64, 65536}, {65536, 64}, {64, 64}, options).bytes,
      64u << 10);
  // The option parsers refuse a cap under the minimum; given one anyway,
  // the cap wins.
  options.cublasWorkspaceCap = 0;
  EXPECT_EQ(
      matMulRequest({64, 65536}, {65536, 64}, {64, 64}, options).bytes, 0u);
  // A long K with a big output: hundreds of tiles fill the GPU, no split:
  // the minimum.
  EXPECT_EQ(getGemmWorkspaceBytes(4096, 4096, 65536, 1, DType::F32,
                                  uint64_t(1) << 40),
            16384u);
}

TEST(ScratchRequestTest, BatchesCountAsTiles) {
  // 128 x 128 by K = 4096 over 8 batch items: 8 tiles, 16 slices each,
  // 8 MiB of partial sums: the 4 MiB cap.
  EXPECT_EQ(getGemmWorkspaceBytes(128, 128, 4096, 8, DType::F32, 4 << 20),
            4u << 20);
  // Over 2 items: 2 tiles, 16 slices, 2 MiB.
  EXPECT_EQ(getGemmWorkspaceBytes(128, 128, 4096, 2, DType::F32, 4 << 20),
            16u * 128 * 128 * 2 * 4);
  // 200 items fill the GPU on their own: the minimum.
  EXPECT_EQ(getGemmWorkspaceBytes(128, 128, 4096, 200, DType::F32, 4 << 20),
            16384u);
  // A batch over the left operand alone folds into M (one taller GEMM, as
  // the emitter runs it): 64 x 1 rows by K = 2048 is one tile of 64 x 16.
  EXPECT_EQ(matMulRequest({64, 1, 2048}, {2048, 16}, {64, 1, 16}).bytes,
            getGemmWorkspaceBytes(16, 64, 2048, 1, DType::F32, 4 << 20));
  EXPECT_GT(matMulRequest({64, 1, 2048}, {2048, 16}, {64, 1, 16}).bytes, 0u);
}

TEST(ScratchRequestTest, TheHostTargetAndOtherOpsAskForNothing) {
  ScratchOptions host;
  host.cuda = false;
  EXPECT_EQ(matMulRequest({64, 65536}, {65536, 64}, {64, 64}, host).bytes, 0u);
  // Integers run as a tiled kernel, not through cuBLAS.
  EXPECT_EQ(matMulRequest({64, 65536}, {65536, 64}, {64, 64}, {}, DType::I32)
                .bytes,
            0u);
  Module module("m");
  Value *x = module.addInput("x", TensorType(DType::F32, {1, 65536}));
  Node *relu = module.addNode("Relu", {x}, {TensorType(DType::F32, {1, 65536})});
  EXPECT_EQ(getScratchRequest(*relu, {}).bytes, 0u);
}

TEST(ScratchRequestTest, GemmFollowsItsTransposes) {
  Module module("m");
  // A stored [K, M] = [8192, 4], transA: M = 4, K = 8192.
  Value *a = module.addInput("a", TensorType(DType::F32, {8192, 4}));
  Value *b = module.addElidedWeight("b", TensorType(DType::F32, {8192, 10}));
  Node *gemm = module.addNode("Gemm", {a, b}, {TensorType(DType::F32, {4, 10})},
                              {{"transA", Attribute::getInt(1)}});
  EXPECT_EQ(getScratchRequest(*gemm, {}).bytes,
            getGemmWorkspaceBytes(10, 4, 8192, 1, DType::F32, 4 << 20));
  EXPECT_GT(getScratchRequest(*gemm, {}).bytes, 0u);
}

// snug.attention asks for one row block of scores (AttentionShape.h) on
// both targets: the host kernel computes in it, and a bundle's host plan
// runs in the CUDA plan's arena.
TEST(ScratchRequestTest, AttentionAsksForARowBlockOnBothTargets) {
  Module module("m");
  Value *q = module.addInput("q", TensorType(DType::F32, {4, 100, 8}));
  Value *k = module.addInput("k", TensorType(DType::F32, {4, 8, 70}));
  Value *v = module.addInput("v", TensorType(DType::F32, {4, 70, 8}));
  Node *node = module.addNode("snug.attention", {q, k, v},
                              {TensorType(DType::F32, {4, 100, 8})},
                              {{"mask", Attribute::getString("none")}});
  // 16 rows x 70 keys x 4 B = 4480, rounded up to 256: 4608.
  EXPECT_EQ(getScratchRequest(*node, {}).bytes, 4608u);
  ScratchOptions host;
  host.cuda = false;
  EXPECT_EQ(getScratchRequest(*node, host).bytes, 4608u);
  EXPECT_STREQ(getScratchRequest(*node, host).purpose, "attention row block");
  // Fewer query rows than a block: the block shrinks to them.
  Value *q1 = module.addInput("q1", TensorType(DType::F32, {4, 3, 8}));
  Node *small = module.addNode("snug.attention", {q1, k, v},
                               {TensorType(DType::F32, {4, 3, 8})},
                               {{"mask", Attribute::getString("none")}});
  EXPECT_EQ(getScratchRequest(*small, host).bytes, 1024u); // 3 x 70 x 4 = 840
}

// A product with an epilogue is the tiled kernel and needs no workspace,
// unless cuBLASLt runs the epilogue (passes/fusion/LtEpilogue.h): then it is a
// cuBLAS GEMM as before, with the same workspace (64 x 64 by K = 65536).
TEST(ScratchRequestTest, OnlyCublasLtEpiloguesKeepTheWorkspace) {
  auto module = ir::parseModule(
      "func @f(%x: f32[64,65536], %w: f32[65536,64], %b: f32[64], "
      "%r: f32[64,64]) -> (f32[64,64], f32[64,64]) {\n"
      "  %y = MatMul(%x, %w, %b) : f32[64,64] {\n"
      "  ^bb(%0: f32[64,64], %1: f32[64]):\n"
      "    %2 = Add(%0, %1) : f32[64,64]\n"
      "    %3 = Relu(%2) : f32[64,64]\n"
      "    yield %3\n"
      "  }\n"
      "  %z = MatMul(%x, %w, %r) : f32[64,64] {\n"
      "  ^bb(%4: f32[64,64], %5: f32[64,64]):\n"
      "    %6 = Add(%4, %5) : f32[64,64]\n"
      "    yield %6\n"
      "  }\n"
      "  return %y, %z\n"
      "}\n",
      "scratch.ir");
  ASSERT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  auto nodes = (*module)->getNodes();
  EXPECT_EQ(getScratchRequest(*nodes[0], {}).bytes, 32u * 64 * 64 * 4);
  EXPECT_EQ(getScratchRequest(*nodes[1], {}).bytes, 0u);
}

// Every cuBLAS GEMM has a workspace now, so the epilogue fusion asks
// splitsAlongK, not for a nonzero request, whether cuBLAS would split K.
TEST(ScratchRequestTest, SplitKIsNotTheWorkspace) {
  Module module("m");
  Value *x = module.addInput("x", TensorType(DType::F32, {64, 65536}));
  Value *w = module.addElidedWeight("w", TensorType(DType::F32, {65536, 64}));
  Node *longK = module.addNode("MatMul", {x, w}, {TensorType(DType::F32, {64, 64})});
  EXPECT_TRUE(splitsAlongK(*longK));
  Value *s = module.addInput("s", TensorType(DType::F32, {1, 64}));
  Value *v = module.addElidedWeight("v", TensorType(DType::F32, {64, 10}));
  Node *small = module.addNode("MatMul", {s, v}, {TensorType(DType::F32, {1, 10})});
  EXPECT_FALSE(splitsAlongK(*small));
  EXPECT_EQ(getScratchRequest(*small, {}).bytes, 16384u);
  Value *i = module.addInput("i", TensorType(DType::I32, {64, 65536}));
  Value *j = module.addElidedWeight("j", TensorType(DType::I32, {65536, 64}));
  Node *integer = module.addNode("MatMul", {i, j}, {TensorType(DType::I32, {64, 64})});
  EXPECT_FALSE(splitsAlongK(*integer));
}
