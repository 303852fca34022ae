//===- VerifierTest.cpp - Structural and type checks ----------------------===//
#include "ir/Module.h"
#include "ir/Parser.h"
#include "ir/OpInfo.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <set>

using namespace snug::ir;

static std::string verifyText(llvm::StringRef text) {
  SourceLocations locations;
  auto module = parseModule(text, "v.ir", &locations);
  if (!module)
    return "parse: " + toString(module.takeError());
  llvm::Error error = verifyModule(**module, &locations);
  return error ? toString(std::move(error)) : "";
}

TEST(VerifierTest, AcceptsWellTypedModule) {
  EXPECT_EQ(verifyText("func @f(%x: f32[2,3], %b: f32[3] weight) -> bool[2,3] "
                       "{\n  %0 = Add(%x, %b) : f32[2,3]\n"
                       "  %1 = Relu(%0) : f32[2,3]\n"
                       "  %2 = Less(%1, %x) : bool[2,3]\n  return %2\n}\n"),
            "");
}

TEST(VerifierTest, ReportsTypeErrorsAtTheirNode) {
  EXPECT_EQ(verifyText("func @f(%x: f32[2], %y: i64[2]) -> f32[2] {\n"
                       "  %0 = Add(%x, %y) : f32[2] loc(\"add1\")\n"
                       "  return %0\n}\n"),
            "v.ir:2:3: error: node 'add1' (Add): operand 1 has element type "
            "i64, operand 0 has f32");
  EXPECT_EQ(verifyText("func @f(%x: f32[2], %y: f32[3]) -> f32[2] {\n"
                       "  %0 = Mul(%x, %y) : f32[2]\n  return %0\n}\n"),
            "v.ir:2:3: error: node #0 (Mul): operand shapes do not broadcast: "
            "f32[2] and f32[3]");
  EXPECT_EQ(verifyText("func @f(%x: f32[2]) -> f16[2] {\n"
                       "  %0 = Relu(%x) : f16[2]\n  return %0\n}\n"),
            "v.ir:2:3: error: node #0 (Relu): result type f16[2] differs from "
            "operand type f32[2]");
  EXPECT_EQ(verifyText("func @f(%x: f32[2,1], %y: f32[3]) -> f32[2,3] {\n"
                       "  %0 = Equal(%x, %y) : f32[2,3]\n  return %0\n}\n"),
            "v.ir:2:3: error: node #0 (Equal): result type f32[2,3], expected "
            "bool[2,3]");
}

TEST(VerifierTest, ReportsArityAndDuplicateNames) {
  EXPECT_EQ(verifyText("func @f(%x: f32[2]) -> f32[2] {\n"
                       "  %0 = Relu(%x, %x) : f32[2]\n  return %0\n}\n"),
            "v.ir:2:3: error: node #0 (Relu): has 2 operands, expected 1");
  EXPECT_EQ(verifyText("func @f(%x: f32[2]) -> f32[2] {\n"
                       "  %x.1 = Relu(%x) : f32[2]\n"
                       "  %\"x\" = Neg(%x.1) : f32[2]\n  return %x.1\n}\n"),
            "parse: v.ir:3:3: error: redefinition of value '%x'\n"
            "  %\"x\" = Neg(%x.1) : f32[2]\n  ^");
}

TEST(VerifierTest, CatchesScheduleOrderBrokenByAPass) {
  auto module = parseModule("func @f(%x: f32[2]) -> f32[2] {\n"
                            "  %0 = Relu(%x) : f32[2]\n"
                            "  %1 = Neg(%0) : f32[2]\n  return %1\n}\n",
                            "v.ir");
  ASSERT_TRUE(static_cast<bool>(module));
  Module &m = **module;
  Node *relu = m.getNodes()[0].get();
  Node *neg = m.getNodes()[1].get();
  m.setSchedule({neg, relu});
  llvm::Error error = verifyModule(m);
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_EQ(toString(std::move(error)),
            "error: node #0 (Neg): operand 0 is not defined before this node "
            "in the schedule");
}

/// What the parser cannot produce, built through the API: a nested body,
/// a body node using an outer value, and a body value used outside.
TEST(VerifierTest, BodiesBuiltThroughTheApiAreClosed) {
  TensorType type(DType::F32, {2});
  Module module("f");
  Value *x = module.addInput("x", type);
  Node *outer = module.addNode(OpCode::SnugFused, {x}, {type});
  Region &body = outer->createBody();
  Value *a = body.addArgument(type, "a");
  Node *inner = body.addNode(OpCode::SnugFused, {a}, {type});
  Region &innerBody = inner->createBody();
  innerBody.setYield({innerBody.addArgument(type, "b")});
  Node *leak = body.addNode(OpCode::Add, {a, x}, {type});
  body.setYield({leak->getResult(0)});
  Node *user = module.addNode(OpCode::Neg, {leak->getResult(0)}, {type});
  module.setOutputs({user->getResult(0)});
  llvm::Error error = verifyModule(module);
  ASSERT_TRUE(static_cast<bool>(error));
  std::string text = toString(std::move(error));
  EXPECT_NE(text.find("error: node #0 (snug.fused) in the body of node #0 "
                      "(snug.fused): nested bodies are not supported"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("error: node #1 (Add) in the body of node #0 "
                      "(snug.fused): operand 1 is defined outside this body"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("error: node #1 (Neg): operand 0 is defined inside the "
                      "body of node #0 (snug.fused) and is not visible "
                      "outside it"),
            std::string::npos)
      << text;
}

// The verifier refuses an attribute the op does not declare.
TEST(VerifierTest, RefusesUndeclaredAttributes) {
  EXPECT_EQ(verifyText(R"(
func @f(%x: f32[2]) -> f32[2] {
  %0 = Relu(%x) {offset = 0} : f32[2]
  return %0
})"),
            "v.ir:3:3: error: node #0 (Relu): attribute 'offset' is not one "
            "Relu takes (it takes: none)");
}
