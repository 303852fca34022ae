//===- AttributeTest.cpp - Attribute kinds and their printing -------------===//
#include "ir/Attribute.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace snug::ir;

static std::string print(const Attribute &attribute) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attribute.print(os);
  return os.str();
}

TEST(AttributeTest, PrintsEveryKind) {
  EXPECT_EQ(print(Attribute::getInt(-3)), "-3");
  EXPECT_EQ(print(Attribute::getFloat(0.5f)), "0.5");
  EXPECT_EQ(print(Attribute::getFloat(2.0f)), "2.0");
  EXPECT_EQ(print(Attribute::getFloat(1e-20f)), "1e-20");
  EXPECT_EQ(print(Attribute::getFloat(NAN)), "nan");
  EXPECT_EQ(print(Attribute::getFloat(-INFINITY)), "-inf");
  EXPECT_EQ(print(Attribute::getString("a\"b\n")), "\"a\\\"b\\0A\"");
  EXPECT_EQ(print(Attribute::getInts({1, 2})), "[1, 2]");
  EXPECT_EQ(print(Attribute::getFloats({1.0f, 0.25f})), "[1.0, 0.25]");
  EXPECT_EQ(print(Attribute::getStrings({"x", "y"})), "[\"x\", \"y\"]");
  int64_t data[] = {7, -1};
  Attribute tensor = Attribute::getTensor(
      TensorType(DType::I64, {2}),
      llvm::ArrayRef<uint8_t>(reinterpret_cast<uint8_t *>(data), 16));
  EXPECT_EQ(print(tensor), "dense<i64[2] [7, -1]>");
}

TEST(AttributeTest, FloatsPrintShortestExactForm) {
  // 0.1f is not 0.1: nine digits are needed to read the same float back.
  std::string text = print(Attribute::getFloat(0.1f));
  EXPECT_EQ(std::strtof(text.c_str(), nullptr), 0.1f);
  EXPECT_EQ(text, "0.1");
  float awkward = 1.0f / 3.0f;
  EXPECT_EQ(std::strtof(print(Attribute::getFloat(awkward)).c_str(), nullptr),
            awkward);
}

TEST(AttributeTest, EqualityIsByKindAndValue) {
  EXPECT_EQ(Attribute::getInt(1), Attribute::getInt(1));
  EXPECT_NE(Attribute::getInt(1), Attribute::getInts({1}));
  EXPECT_NE(Attribute::getFloat(1.0f), Attribute::getInt(1));
  EXPECT_EQ(Attribute::getFloat(NAN), Attribute::getFloat(NAN));
}
