//===- LtEpilogueTest.cpp - Which epilogues cuBLASLt runs itself ----------===//
//
// matchLtEpilogue on epilogue regions as EpiloguePattern leaves them
// (parsed), and on a producer and consumer before it builds one: the five
// kinds, both operand orders, a bias vector of any rank with N elements,
// Gemm without C; and what must not match: the Erf Gelu, a bias of the
// wrong length or broadcast along the rows, a residual, Gemm with C, an
// activation before the bias, a longer chain, SiLU, f64, a 1-d B.
//
//===----------------------------------------------------------------------===//
#include "ir/Parser.h"
#include "passes/fusion/LtEpilogue.h"

#include <gtest/gtest.h>

using namespace snug;

namespace {

std::unique_ptr<ir::Module> parse(const std::string &text) {
  auto module = ir::parseModule(text, "lt.ir");
  if (!module) {
    ADD_FAILURE() << llvm::toString(module.takeError()) << "\n" << text;
    return nullptr;
  }
  return std::move(*module);
}

/// The match of the one node of `func @f(ARGS) -> RESULT { %y = PRODUCT
/// {BODY} return %y }`: PRODUCT is the product's head ("MatMul(%x, %w,
/// %b)"), BODY the region over ^bb(ARGUMENTS).
LtEpilogueMatch matchFused(const std::string &args, const std::string &type,
                           const std::string &product,
                           const std::string &arguments,
                           const std::string &body) {
  auto module = parse("func @f(" + args + ") -> " + type + " {\n  %y = " +
                      product + " : " + type + " {\n  ^bb(" + arguments +
                      "):\n" + body + "  }\n  return %y\n}\n");
  if (!module)
    return LtEpilogueMatch();
  return matchLtEpilogue(*module->getNodes()[0]);
}

const char *kMatMulArgs = "%x: f32[2,8,32], %w: f32[32,64], %b: f32[64]";

/// MatMul(x[2,8,32], w[32,64]) with the epilogue `body` over ^bb(%0: the
/// product, %1: f32[64] the bias).
LtEpilogueMatch matMulWithBias(const std::string &body) {
  return matchFused(kMatMulArgs, "f32[2,8,64]", "MatMul(%x, %w, %b)",
                    "%0: f32[2,8,64], %1: f32[64]", body);
}

LtEpilogue kindOf(const LtEpilogueMatch &match) { return match.kind; }

} // namespace

TEST(LtEpilogueTest, BiasAndActivationsMatch) {
  LtEpilogueMatch bias = matMulWithBias(
      "    %2 = Add(%0, %1) : f32[2,8,64]\n    yield %2\n");
  EXPECT_EQ(bias.kind, LtEpilogue::Bias);
  EXPECT_EQ(bias.biasOperand, 2);
  // The bias first, as exporters write it too.
  EXPECT_EQ(kindOf(matMulWithBias(
                "    %2 = Add(%1, %0) : f32[2,8,64]\n    yield %2\n")),
            LtEpilogue::Bias);
  EXPECT_EQ(kindOf(matMulWithBias("    %2 = Add(%0, %1) : f32[2,8,64]\n"
                                  "    %3 = Relu(%2) : f32[2,8,64]\n"
                                  "    yield %3\n")),
            LtEpilogue::ReluBias);
  EXPECT_EQ(kindOf(matMulWithBias(
                "    %2 = Add(%0, %1) : f32[2,8,64]\n"
                "    %3 = Gelu(%2) {approximate = \"tanh\"} : f32[2,8,64]\n"
                "    yield %3\n")),
            LtEpilogue::GeluBias);
  // Without a bias: no extra operand.
  EXPECT_EQ(kindOf(matchFused(kMatMulArgs, "f32[2,8,64]", "MatMul(%x, %w)",
                              "%0: f32[2,8,64]",
                              "    %1 = Relu(%0) : f32[2,8,64]\n"
                              "    yield %1\n")),
            LtEpilogue::Relu);
  LtEpilogueMatch gelu = matchFused(
      kMatMulArgs, "f32[2,8,64]", "MatMul(%x, %w)", "%0: f32[2,8,64]",
      "    %1 = Gelu(%0) {approximate = \"tanh\"} : f32[2,8,64]\n"
      "    yield %1\n");
  EXPECT_EQ(gelu.kind, LtEpilogue::Gelu);
  EXPECT_EQ(gelu.biasOperand, -1);
  // A bias of any rank with N elements: [1, N].
  EXPECT_EQ(kindOf(matchFused("%x: f16[8,32], %w: f16[32,64], %b: f16[1,64]",
                              "f16[8,64]", "MatMul(%x, %w, %b)",
                              "%0: f16[8,64], %1: f16[1,64]",
                              "    %2 = Add(%0, %1) : f16[8,64]\n"
                              "    yield %2\n")),
            LtEpilogue::Bias);
}

TEST(LtEpilogueTest, GemmMatchesOnlyWithoutC) {
  const char *args = "%a: bf16[70,20], %w: bf16[24,20], %c: bf16[24], "
                     "%b: bf16[24]";
  const char *body = "    %2 = Add(%0, %1) : bf16[70,24]\n"
                     "    %3 = Gelu(%2) {approximate = \"tanh\"} : "
                     "bf16[70,24]\n"
                     "    yield %3\n";
  LtEpilogueMatch noC = matchFused(
      args, "bf16[70,24]", "Gemm(%a, %w, _, %b) {alpha = 0.5, transB = 1}",
      "%0: bf16[70,24], %1: bf16[24]", body);
  EXPECT_EQ(noC.kind, LtEpilogue::GeluBias);
  EXPECT_EQ(noC.biasOperand, 3);
  // cuBLASLt would add beta * C before the bias: the tiled kernel's.
  EXPECT_EQ(kindOf(matchFused(args, "bf16[70,24]",
                              "Gemm(%a, %w, %c, %b) {transB = 1}",
                              "%0: bf16[70,24], %1: bf16[24]", body)),
            LtEpilogue::None);
}

TEST(LtEpilogueTest, OthersDoNotMatch) {
  // The Erf Gelu (cuBLASLt's is the tanh form), alone and after the bias.
  EXPECT_EQ(kindOf(matchFused(kMatMulArgs, "f32[2,8,64]", "MatMul(%x, %w)",
                              "%0: f32[2,8,64]",
                              "    %1 = Gelu(%0) : f32[2,8,64]\n"
                              "    yield %1\n")),
            LtEpilogue::None);
  EXPECT_EQ(kindOf(matMulWithBias("    %2 = Add(%0, %1) : f32[2,8,64]\n"
                                  "    %3 = Gelu(%2) : f32[2,8,64]\n"
                                  "    yield %3\n")),
            LtEpilogue::None);
  // A bias of the wrong length (one element broadcast), one along the
  // rows ([M, 1]: per row of the row-major result), a residual.
  EXPECT_EQ(kindOf(matchFused("%x: f32[8,32], %w: f32[32,64], %b: f32[1]",
                              "f32[8,64]", "MatMul(%x, %w, %b)",
                              "%0: f32[8,64], %1: f32[1]",
                              "    %2 = Add(%0, %1) : f32[8,64]\n"
                              "    yield %2\n")),
            LtEpilogue::None);
  EXPECT_EQ(kindOf(matchFused("%x: f32[64,32], %w: f32[32,64], %b: f32[64,1]",
                              "f32[64,64]", "MatMul(%x, %w, %b)",
                              "%0: f32[64,64], %1: f32[64,1]",
                              "    %2 = Add(%0, %1) : f32[64,64]\n"
                              "    yield %2\n")),
            LtEpilogue::None);
  EXPECT_EQ(kindOf(matchFused("%x: f32[8,32], %w: f32[32,64], %r: f32[8,64]",
                              "f32[8,64]", "MatMul(%x, %w, %r)",
                              "%0: f32[8,64], %1: f32[8,64]",
                              "    %2 = Add(%0, %1) : f32[8,64]\n"
                              "    yield %2\n")),
            LtEpilogue::None);
  // The activation before the bias; two activations; SiLU; Sub.
  EXPECT_EQ(kindOf(matMulWithBias("    %2 = Relu(%0) : f32[2,8,64]\n"
                                  "    %3 = Add(%2, %1) : f32[2,8,64]\n"
                                  "    yield %3\n")),
            LtEpilogue::None);
  EXPECT_EQ(kindOf(matMulWithBias("    %2 = Add(%0, %1) : f32[2,8,64]\n"
                                  "    %3 = Relu(%2) : f32[2,8,64]\n"
                                  "    %4 = Relu(%3) : f32[2,8,64]\n"
                                  "    yield %4\n")),
            LtEpilogue::None);
  EXPECT_EQ(kindOf(matchFused(kMatMulArgs, "f32[2,8,64]", "MatMul(%x, %w)",
                              "%0: f32[2,8,64]",
                              "    %1 = Sigmoid(%0) : f32[2,8,64]\n"
                              "    %2 = Mul(%0, %1) : f32[2,8,64]\n"
                              "    yield %2\n")),
            LtEpilogue::None);
  EXPECT_EQ(kindOf(matMulWithBias(
                "    %2 = Sub(%0, %1) : f32[2,8,64]\n    yield %2\n")),
            LtEpilogue::None);
  // f64 (cuBLASLt's epilogues: f32, f16, bf16).
  EXPECT_EQ(kindOf(matchFused("%x: f64[8,32], %w: f64[32,64], %b: f64[64]",
                              "f64[8,64]", "MatMul(%x, %w, %b)",
                              "%0: f64[8,64], %1: f64[64]",
                              "    %2 = Add(%0, %1) : f64[8,64]\n"
                              "    yield %2\n")),
            LtEpilogue::None);
  // A 1-d B: the result's last dim is M, not N.
  EXPECT_EQ(kindOf(matchFused("%x: f32[8,32], %v: f32[32], %b: f32[8]",
                              "f32[8]", "MatMul(%x, %v, %b)",
                              "%0: f32[8], %1: f32[8]",
                              "    %2 = Add(%0, %1) : f32[8]\n"
                              "    yield %2\n")),
            LtEpilogue::None);
}

// Before EpiloguePattern builds the region: a consumer node, or a
// snug.fused group whose block argument stands for the product.
TEST(LtEpilogueTest, ConsumersBeforeFusion) {
  auto module = parse(
      "func @f(%x: f32[8,32], %w: f32[32,64], %b: f32[64], %r: f32[8,64]) "
      "-> (f32[8,64], f32[8,64], f32[8,64], f32[8,64]) {\n"
      "  %m = MatMul(%x, %w) : f32[8,64]\n"
      "  %a = Add(%m, %b) : f32[8,64]\n"
      "  %n = MatMul(%x, %w) : f32[8,64]\n"
      "  %g = snug.fused(%b, %n) : f32[8,64] {\n"
      "  ^bb(%0: f32[64], %1: f32[8,64]):\n"
      "    %2 = Add(%1, %0) : f32[8,64]\n"
      "    %3 = Relu(%2) : f32[8,64]\n"
      "    yield %3\n"
      "  }\n"
      "  %p = MatMul(%x, %w) : f32[8,64]\n"
      "  %e = snug.fused(%p, %b) : f32[8,64] {\n"
      "  ^bb(%4: f32[8,64], %5: f32[64]):\n"
      "    %6 = Add(%4, %5) : f32[8,64]\n"
      "    %7 = Gelu(%6) : f32[8,64]\n"
      "    yield %7\n"
      "  }\n"
      "  %q = MatMul(%x, %w) : f32[8,64]\n"
      "  %s = Add(%q, %r) : f32[8,64]\n"
      "  return %a, %g, %e, %s\n"
      "}\n");
  ASSERT_TRUE(module);
  auto nodes = module->getNodes();
  auto match = [&](size_t producer, size_t consumer) {
    return matchLtEpilogue(*nodes[producer], *nodes[consumer],
                           nodes[producer]->getResult(0));
  };
  EXPECT_EQ(match(0, 1), LtEpilogue::Bias);
  EXPECT_EQ(match(2, 3), LtEpilogue::ReluBias);
  EXPECT_EQ(match(4, 5), LtEpilogue::None); // the Erf Gelu
  EXPECT_EQ(match(6, 7), LtEpilogue::None); // a residual
}

TEST(LtEpilogueTest, Names) {
  EXPECT_STREQ(getLtEpilogueName(LtEpilogue::GeluBias), "gelu_bias");
  EXPECT_STREQ(getLtEpilogueName(LtEpilogue::None), "none");
}
