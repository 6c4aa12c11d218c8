// The FP8 grouped CUTLASS path's host-only rule (src/grouped/fp8_cutlass_route.cpp): which calls
// the kernel can take, and the choice between it and the tile kernel under TGEMM_GROUPED_BACKEND.
#include <gtest/gtest.h>

#include <cstdint>

#include "grouped/fp8_cutlass.h"

namespace tgemm::fp8_cutlass {
namespace {

// DeepGEMM's contiguous shape (4 x 8192 rows, N 4096, K 7168), packed operands, aligned bases
// (never dereferenced).
struct Call {
  Fp8GroupedProblem p;
  Fp8GroupedArgs a;
  Call() {
    p.groups = 4;
    p.rows = 4 * 8192;
    p.n = 4096;
    p.k = 7168;
    p.lda = p.k;
    p.w_group_stride = p.n * p.k;
    p.ldw = p.k;
    p.ldo = p.n;
    a.x = reinterpret_cast<const void*>(std::uintptr_t{0x10000});
    a.w = reinterpret_cast<const void*>(std::uintptr_t{0x20000});
    a.out = reinterpret_cast<void*>(std::uintptr_t{0x30000});
  }
  void make_masked(std::int64_t max_m) {
    p.masked = true;
    p.rows = max_m;
    p.x_group_stride = max_m * p.k;
    p.out_group_stride = max_m * p.n;
  }
};

TEST(Fp8CutlassRoute, TakesDeepGemmShapesContiguousAndMasked) {
  Call c;
  EXPECT_TRUE(can_take(c.p, c.a));
  c.make_masked(256);
  EXPECT_TRUE(can_take(c.p, c.a));
  c.p.n = 136;  // a partial weight-scale block along N, 16-byte output rows
  c.p.ldo = 136;
  c.p.out_group_stride = 256 * 136;
  EXPECT_TRUE(can_take(c.p, c.a));
  EXPECT_STREQ(instance_name(), "sm90_grouped_fp8_blockwise_128x128x128_c1x2_coop");
}

TEST(Fp8CutlassRoute, RefusesWhatTmaOrTheScaleBlocksCannotTake) {
  auto refused = [](auto edit) {
    Call c;
    edit(c);
    return !can_take(c.p, c.a);
  };
  EXPECT_TRUE(refused([](Call& c) { c.p.k = 7168 + 16; }));  // a partial K scale block
  EXPECT_TRUE(refused([](Call& c) { c.p.k = 0; }));
  EXPECT_TRUE(refused([](Call& c) { c.p.k = 128 * 65536; }));  // past the prepare kernel's grid.y
  EXPECT_TRUE(refused([](Call& c) { c.p.n = 4092; }));         // bf16 rows not a multiple of 16 bytes
  EXPECT_TRUE(refused([](Call& c) { c.p.lda = 7168 + 8; }));   // FP8 row stride not 16 bytes
  EXPECT_TRUE(refused([](Call& c) { c.p.ldw = 7168 + 8; }));
  EXPECT_TRUE(refused([](Call& c) { c.p.w_group_stride += 8; }));
  EXPECT_TRUE(refused([](Call& c) { c.p.ldo = 4096 + 4; }));
  EXPECT_TRUE(refused([](Call& c) { c.a.x = reinterpret_cast<const void*>(std::uintptr_t{0x10008}); }));
  EXPECT_TRUE(refused([](Call& c) { c.a.w = reinterpret_cast<const void*>(std::uintptr_t{0x20004}); }));
  EXPECT_TRUE(refused([](Call& c) { c.a.out = reinterpret_cast<void*>(std::uintptr_t{0x30002}); }));
  EXPECT_TRUE(refused([](Call& c) { c.p.groups = 0; }));
  EXPECT_TRUE(refused([](Call& c) { c.p.rows = std::int64_t{1} << 31; }));
  EXPECT_TRUE(refused([](Call& c) {
    c.make_masked(256);
    c.p.x_group_stride += 8;
  }));
  EXPECT_TRUE(refused([](Call& c) {
    c.make_masked(256);
    c.p.out_group_stride += 4;
  }));
  // The group strides of the masked layout do not matter to the contiguous one.
  EXPECT_FALSE(refused([](Call& c) {
    c.p.x_group_stride = 8;
    c.p.out_group_stride = 4;
  }));
}

TEST(Fp8CutlassRoute, TileForcesTheTileKernelAndCutlassNeedsAnInstance) {
  EXPECT_FALSE(choose_cutlass(true, true, GroupedBackend::kAuto));
  EXPECT_TRUE(choose_cutlass(true, true, GroupedBackend::kCutlass));
  EXPECT_FALSE(choose_cutlass(true, true, GroupedBackend::kTile));
  EXPECT_FALSE(choose_cutlass(false, true, GroupedBackend::kCutlass));
  EXPECT_FALSE(choose_cutlass(true, false, GroupedBackend::kCutlass));
  EXPECT_FALSE(choose_cutlass(true, false, GroupedBackend::kAuto));
}

}  // namespace
}  // namespace tgemm::fp8_cutlass
