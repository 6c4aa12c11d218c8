// The path rule of the MXFP4 weight GEMMs (src/fp4/fp4_route.h) over fake, never-mapped
// addresses: each path at the M it serves, the alignment and format conditions that send a call
// elsewhere, a forced path (TGEMM_FP4_PATH, parsed in tests/host/core/test_settings.cpp), the
// tensor-core kernel's split-K.
#include <gtest/gtest.h>

#include <cstdint>

#include "fp4/fp4_route.h"

namespace tgemm::fp4_route {
namespace {

const void* fake(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

// A bf16 x [m, 4096] and w [4096, 2048] with aligned rows.
W4GemmCall call(std::int64_t m, DType x_type = DType::kBFloat16) {
  W4GemmCall c;
  c.m = m;
  c.n = 4096;
  c.k = 4096;
  c.x = fake(0x100000);
  c.x_type = x_type;
  c.ldx = x_type == DType::kUInt8 ? c.k / 2 : c.k;
  c.w = static_cast<const std::uint8_t*>(fake(0x200000));
  c.ldw = c.k / 2;
  return c;
}

TEST(Fp4Route, EachPathServesItsRangeOfM) {
  for (std::int64_t m = 1; m <= 40; ++m) {
    const W4Path want = m <= kGemvMaxM ? W4Path::kGemv : (m <= kMmaMaxM ? W4Path::kMma : W4Path::kDequant);
    EXPECT_EQ(choose_w4_path(call(m), W4Force::kAuto), want) << "m=" << m;
    EXPECT_EQ(choose_w4_path(call(m, DType::kFloat8E4M3), W4Force::kAuto), want) << "e4m3 m=" << m;
  }
  EXPECT_EQ(choose_w4_path(call(16, DType::kFloat16), W4Force::kAuto), W4Path::kMma);
  EXPECT_EQ(choose_w4_path(call(32, DType::kFloat16), W4Force::kAuto), W4Path::kMma);
  // gemm_a4w4's x has no tensor-core form: its GEMV, then the dequantize path.
  EXPECT_EQ(choose_w4_path(call(4, DType::kUInt8), W4Force::kAuto), W4Path::kGemv);
  EXPECT_EQ(choose_w4_path(call(5, DType::kUInt8), W4Force::kAuto), W4Path::kDequant);
  EXPECT_EQ(choose_w4_path(call(16, DType::kUInt8), W4Force::kMma), W4Path::kDequant);
}

TEST(Fp4Route, UnalignedRowsOrShortKTakeTheDequantizePath) {
  W4GemmCall c = call(8);
  c.x = fake(0x100002);
  EXPECT_EQ(choose_w4_path(c, W4Force::kAuto), W4Path::kDequant);
  c = call(8);
  c.ldx = 4100;  // 8200 bytes: not a multiple of 16
  EXPECT_EQ(choose_w4_path(c, W4Force::kMma), W4Path::kDequant);
  c.m = 1;  // a single row's stride is never used
  EXPECT_EQ(choose_w4_path(c, W4Force::kAuto), W4Path::kGemv);
  c = call(8);
  c.ldw = 2064;  // padded rows, still 16-byte multiples
  EXPECT_EQ(choose_w4_path(c, W4Force::kAuto), W4Path::kMma);
  c.ldw = 2052;
  EXPECT_EQ(choose_w4_path(c, W4Force::kAuto), W4Path::kDequant);
  c = call(8);
  c.k = 0;
  EXPECT_EQ(choose_w4_path(c, W4Force::kAuto), W4Path::kDequant);
}

TEST(Fp4Route, ForcedPathIsTakenWhereItRuns) {
  EXPECT_EQ(choose_w4_path(call(1), W4Force::kMma), W4Path::kMma);
  EXPECT_EQ(choose_w4_path(call(4), W4Force::kDequant), W4Path::kDequant);
  EXPECT_EQ(choose_w4_path(call(12), W4Force::kDequant), W4Path::kDequant);
  EXPECT_EQ(choose_w4_path(call(12), W4Force::kGemv), W4Path::kMma);  // the GEMV stops at M = 4
  EXPECT_EQ(choose_w4_path(call(32), W4Force::kMma), W4Path::kMma);
  EXPECT_EQ(choose_w4_path(call(33), W4Force::kMma), W4Path::kDequant);  // two token tiles at most
  EXPECT_EQ(choose_w4_path(call(3), W4Force::kGemv), W4Path::kGemv);
  // The several-rows GEMV only where forced, at the GEMV's M, for every x format.
  EXPECT_EQ(choose_w4_path(call(1), W4Force::kGemvRows), W4Path::kGemvRows);
  EXPECT_EQ(choose_w4_path(call(4, DType::kFloat8E4M3), W4Force::kGemvRows), W4Path::kGemvRows);
  EXPECT_EQ(choose_w4_path(call(4, DType::kUInt8), W4Force::kGemvRows), W4Path::kGemvRows);
  EXPECT_EQ(choose_w4_path(call(5), W4Force::kGemvRows), W4Path::kMma);
  W4GemmCall c = call(2);
  c.x = fake(0x100002);
  EXPECT_EQ(choose_w4_path(c, W4Force::kGemvRows), W4Path::kDequant);
}

TEST(Fp4Route, SplitKFillsTheMachineWithinTheKSteps) {
  // 4096 x 4096: 256 tiles of 16 rows fill 132 SMs twice over without a split.
  EXPECT_EQ(mma_split_k(256, 32, 4, 132), 2);
  EXPECT_EQ(mma_split_k(512, 32, 4, 132), 1);
  // 576 x 7168: 36 tiles want 8 CTAs each; 56 k-steps over 4 warps keep 3 parts of >= 4 steps.
  EXPECT_EQ(mma_split_k(36, 56, 4, 132), 3);
  // Long K: the cluster limit of 8.
  EXPECT_EQ(mma_split_k(36, 1024, 4, 132), 8);
  // K = 32: one k-step, no split; an unknown SM count (-1) counts as one SM.
  EXPECT_EQ(mma_split_k(1, 1, 4, 132), 1);
  EXPECT_EQ(mma_split_k(1, 64, 4, -1), 2);
}

}  // namespace
}  // namespace tgemm::fp4_route
