//===- FrameFreeTrigTest.cpp - The device's sin/cos against long double ---===//
//
// The device computes Sin and Cos of a float with ScalarOps.h's
// frameFreeSin/frameFreeCos (CUDA's sinf/cosf keep a 32 B local frame for
// their Payne-Hanek path). They are plain C++, so the host checks them here
// against std::sin/std::cos in long double over floats spread across the
// whole finite range, both signs (every 4099th bit pattern: the Cody-Waite
// range, the switch to Payne-Hanek at 105615 and every exponent up to
// FLT_MAX), plus the special values: within 2 ulp (libdevice documents 2
// for sinf/cosf), sin(-0) = -0, Inf and NaN give NaN.
//
//===----------------------------------------------------------------------===//
#include "core/ScalarOps.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

using namespace snug::scalar;

namespace {

/// |got - want| in units of the last place of float(want).
double ulps(float got, long double want) {
  float rounded = float(want);
  float ulp = std::fabs(rounded) < FLT_MIN
                  ? std::numeric_limits<float>::denorm_min()
                  : std::nextafter(std::fabs(rounded), INFINITY) -
                        std::fabs(rounded);
  return double(std::fabs((long double)got - want) / ulp);
}

TEST(FrameFreeTrigTest, WithinTwoUlpOverTheFiniteFloats) {
  double worstSin = 0, worstCos = 0;
  float atSin = 0, atCos = 0;
  auto check = [&](float x) {
    double s = ulps(m::frameFreeSin(x), std::sin((long double)x));
    double c = ulps(m::frameFreeCos(x), std::cos((long double)x));
    if (s > worstSin)
      worstSin = s, atSin = x;
    if (c > worstCos)
      worstCos = c, atCos = x;
  };
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 4099) {
    check(floatFromBits(bits));
    check(floatFromBits(bits | 0x80000000u));
  }
  // Around the switch between the two reductions and near multiples of
  // pi/2 (where the reduced argument is smallest).
  for (float x : {105614.99f, 105615.0f, 105615.01f, 1.5707964f, 3.1415927f,
                  4.7123890f, 6.2831855f, 823549.6f, 1.0e10f, FLT_MAX,
                  -FLT_MAX, 16777216.0f, 3.7414441e+09f})
    check(x);
  EXPECT_LE(worstSin, 2.0) << "sin at " << atSin;
  EXPECT_LE(worstCos, 2.0) << "cos at " << atCos;
}

TEST(FrameFreeTrigTest, SpecialValues) {
  EXPECT_TRUE(std::signbit(m::frameFreeSin(-0.0f)));
  EXPECT_EQ(m::frameFreeSin(0.0f), 0.0f);
  EXPECT_EQ(m::frameFreeCos(-0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(m::frameFreeSin(INFINITY)));
  EXPECT_TRUE(std::isnan(m::frameFreeCos(-INFINITY)));
  EXPECT_TRUE(std::isnan(m::frameFreeSin(NAN)));
  EXPECT_TRUE(std::isnan(m::frameFreeCos(NAN)));
  float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(m::frameFreeSin(tiny), tiny);
}

} // namespace
