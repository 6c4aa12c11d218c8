// The host reference of MXFP4 (tests/common/mxfp4_ref.h) on the edge values of the OCP rules:
// the e2m1 grid and its ties, saturation, the scale's exponent and its clamps, amax 0, subnormal
// inputs, non-finite inputs, and the nibble order of the packing. The GPU quantizer is compared
// with this reference byte for byte (tests/gpu/test_fp4.cpp), so these pin down both.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/common/mxfp4_ref.h"

namespace tgemm::test {
namespace {

TEST(Mxfp4Ref, CodesDecodeToTheE2m1Grid) {
  const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (std::uint8_t c = 0; c < 8; ++c) {
    EXPECT_EQ(e2m1_value(c), grid[c]) << int{c};
    EXPECT_EQ(e2m1_value(static_cast<std::uint8_t>(c | 8)), -grid[c]) << int{c};
    EXPECT_EQ(e2m1_encode(grid[c]), c);
    EXPECT_EQ(e2m1_encode(-grid[c]), c | 8);
  }
  EXPECT_TRUE(std::signbit(e2m1_value(8)));  // 0x8 is -0
}

TEST(Mxfp4Ref, TiesRoundToTheEvenCode) {
  EXPECT_EQ(e2m1_encode(0.25f), 0);  // 0 | 0.5
  EXPECT_EQ(e2m1_encode(0.75f), 2);  // 0.5 | 1
  EXPECT_EQ(e2m1_encode(1.25f), 2);  // 1 | 1.5
  EXPECT_EQ(e2m1_encode(1.75f), 4);  // 1.5 | 2
  EXPECT_EQ(e2m1_encode(2.5f), 4);   // 2 | 3
  EXPECT_EQ(e2m1_encode(3.5f), 6);   // 3 | 4
  EXPECT_EQ(e2m1_encode(5.0f), 6);   // 4 | 6
  EXPECT_EQ(e2m1_encode(-5.0f), 14);
  // Just off the ties: nearest.
  EXPECT_EQ(e2m1_encode(std::nextafter(0.25f, 1.0f)), 1);
  EXPECT_EQ(e2m1_encode(std::nextafter(0.75f, 0.0f)), 1);
  EXPECT_EQ(e2m1_encode(std::nextafter(5.0f, 6.0f)), 7);
}

TEST(Mxfp4Ref, SaturatesToSixAndKeepsTheSign) {
  EXPECT_EQ(e2m1_encode(6.5f), 7);
  EXPECT_EQ(e2m1_encode(7.99f), 7);
  EXPECT_EQ(e2m1_encode(1e30f), 7);
  EXPECT_EQ(e2m1_encode(-100.0f), 15);
  EXPECT_EQ(e2m1_encode(-0.1f), 8);  // rounds to -0
  EXPECT_EQ(e2m1_encode(-0.0f), 8);
  EXPECT_EQ(e2m1_encode(0.1f), 0);
}

TEST(Mxfp4Ref, ScaleIsFloorLog2OfAmaxMinusTwo) {
  std::vector<float> v(32, 0.0f);
  v[5] = 6.0f;  // floor(log2 6) = 2 -> 2^0
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 127);
  v[5] = -8.0f;  // 3 -> 2^1
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 128);
  v[5] = 7.99f;  // still 2: 7.99 saturates to 6
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 127);
  v[5] = 1.0f;  // 0 -> 2^-2
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 125);
  v[5] = std::numeric_limits<float>::max();  // floor(log2) = 127 -> 125 + 127
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 252);
  EXPECT_EQ(e8m0_value(127), 1.0f);
  EXPECT_EQ(e8m0_value(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0_value(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(e8m0_value(255)));
}

TEST(Mxfp4Ref, SmallAndZeroBlocksClampTheScaleAt2PowMinus127) {
  std::vector<float> v(32, 0.0f);
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 0);  // amax 0
  v[0] = std::ldexp(1.0f, -124);                 // floor(log2) - 2 = -126
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 1);
  v[0] = std::ldexp(1.0f, -125);  // -127
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 0);
  v[0] = std::ldexp(1.0f, -133);  // a bf16 subnormal: clamped to -127
  EXPECT_EQ(e8m0_block_scale(v.data(), 32), 0);
  // Under the clamp, values keep their own magnitude: 2^-127 * 4 = 2^-125 is code 6 (4).
  std::vector<float> x(32, 0.0f);
  x[0] = std::ldexp(1.0f, -125);
  x[1] = std::ldexp(1.0f, -128);  // 0.5 * 2^-127: code 1
  x[2] = std::ldexp(1.0f, -130);  // 0.125: code 0
  std::vector<std::uint8_t> q, s;
  quant_mxfp4_ref(x, 1, 32, q, s);
  EXPECT_EQ(s[0], 0);
  EXPECT_EQ(q[0], 6 | (1 << 4));
  EXPECT_EQ(q[1], 0);
}

TEST(Mxfp4Ref, NonFiniteBlocksGetTheNaNScaleAndZeroCodes) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> x(64, 1.0f);
    x[40] = bad;  // second block only
    std::vector<std::uint8_t> q, s;
    quant_mxfp4_ref(x, 1, 64, q, s);
    EXPECT_EQ(s[0], 125);
    EXPECT_EQ(s[1], 255);
    for (int i = 16; i < 32; ++i) EXPECT_EQ(q[static_cast<std::size_t>(i)], 0) << i;
    const std::vector<float> w = dequant_mxfp4_ref(q, s, 1, 64);
    EXPECT_EQ(w[0], 1.0f);
    for (int i = 32; i < 64; ++i) EXPECT_TRUE(std::isnan(w[static_cast<std::size_t>(i)])) << i;
  }
}

TEST(Mxfp4Ref, PacksElement2iLowAnd2iPlus1High) {
  std::vector<float> x(32, 0.0f);
  x[0] = 6.0f;   // code 7 at the scale 2^0
  x[1] = -1.0f;  // code 10
  x[31] = 0.5f;  // code 1, high nibble of byte 15
  std::vector<std::uint8_t> q, s;
  quant_mxfp4_ref(x, 1, 32, q, s);
  ASSERT_EQ(q.size(), 16u);
  EXPECT_EQ(s[0], 127);
  EXPECT_EQ(q[0], 0xa7);
  EXPECT_EQ(q[15], 0x10);
}

TEST(Mxfp4Ref, RoundTripIsExactOnGridValuesAndWithinHalfAStepElsewhere) {
  // Row 0: grid values times 2^5 decode exactly. Row 1: a ramp, each value within half a grid
  // step (at its block's scale) of its decoded value, or saturated.
  const std::int64_t k = 64;
  std::vector<float> x(static_cast<std::size_t>(2 * k));
  const float grid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (std::int64_t i = 0; i < k; ++i) {
    x[static_cast<std::size_t>(i)] = (i % 2 ? -1.0f : 1.0f) * grid[i % 8] * 32.0f;
    x[static_cast<std::size_t>(k + i)] = 0.37f * static_cast<float>(i) - 9.0f;
  }
  std::vector<std::uint8_t> q, s;
  quant_mxfp4_ref(x, 2, k, q, s);
  const std::vector<float> w = dequant_mxfp4_ref(q, s, 2, k);
  for (std::int64_t i = 0; i < k; ++i) EXPECT_EQ(w[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i)]) << i;
  for (std::int64_t i = 0; i < k; ++i) {
    const float sc = e8m0_value(s[static_cast<std::size_t>(2 + i / 32)]);
    const float xv = x[static_cast<std::size_t>(k + i)], wv = w[static_cast<std::size_t>(k + i)];
    if (std::fabs(xv) >= 6.0f * sc) {
      EXPECT_EQ(std::fabs(wv), 6.0f * sc) << i;
    } else {
      EXPECT_LE(std::fabs(xv - wv), 1.0f * sc) << i;  // half the widest step (4 -> 6)
    }
  }
}

}  // namespace
}  // namespace tgemm::test
