//===- TypesTest.cpp - DType, TensorType and f16/bf16 conversions ---------===//
#include "ir/DType.h"
#include "ir/Float16.h"
#include "ir/TensorType.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace snug;
using namespace snug::ir;

TEST(DTypeTest, NamesRoundTripAndSizes) {
  const DType all[] = {DType::F32, DType::F16, DType::BF16, DType::F64,
                       DType::I64, DType::I32, DType::I16,  DType::I8,
                       DType::U8,  DType::U16, DType::U32,  DType::U64,
                       DType::Bool};
  const unsigned sizes[] = {4, 2, 2, 8, 8, 4, 2, 1, 1, 2, 4, 8, 1};
  for (size_t i = 0; i < 13; ++i) {
    EXPECT_EQ(parseDType(getDTypeName(all[i])), all[i]);
    EXPECT_EQ(getDTypeSize(all[i]), sizes[i]) << getDTypeName(all[i]).str();
  }
  EXPECT_FALSE(parseDType("f8").hasValue());
  EXPECT_TRUE(isFloatDType(DType::BF16));
  EXPECT_FALSE(isFloatDType(DType::I32));
  EXPECT_TRUE(isIntegerDType(DType::U8));
  EXPECT_FALSE(isIntegerDType(DType::Bool));
  EXPECT_TRUE(isIntegerDType(DType::U64));
  EXPECT_TRUE(isUnsignedDType(DType::U16));
  EXPECT_FALSE(isUnsignedDType(DType::I64));
  EXPECT_FALSE(isUnsignedDType(DType::Bool));
}

TEST(TensorTypeTest, SizesAndPrinting) {
  TensorType image(DType::F16, {1, 3, 224, 224});
  EXPECT_EQ(image.getNumElements(), 150528);
  EXPECT_EQ(image.getByteSize(), 301056u);
  EXPECT_EQ(image.str(), "f16[1,3,224,224]");
  TensorType scalar(DType::I64, {});
  EXPECT_EQ(scalar.getNumElements(), 1);
  EXPECT_EQ(scalar.str(), "i64[]");
  TensorType empty(DType::F32, {0, 4});
  EXPECT_EQ(empty.getByteSize(), 0u);
  EXPECT_NE(image, TensorType(DType::F32, {1, 3, 224, 224}));
}

TEST(Float16Test, ExactValuesRoundTrip) {
  for (float value : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f,
                      5.9604645e-08f /* smallest subnormal */})
    EXPECT_EQ(f16ToFloat(floatToF16(value)), value) << value;
  EXPECT_TRUE(std::isinf(f16ToFloat(floatToF16(70000.0f))));
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(NAN))));
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.5f)), 1.5f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

TEST(Float16Test, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next f16 (1 + 2^-10): ties to even.
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 1.0f / 2048)), 1.0f);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: rounds up.
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 3.0f / 2048)), 1.0f + 1.0f / 512);
  // bf16 keeps 8 bits of mantissa: 1 + 2^-8 is a tie, rounds to 1.
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);
}
