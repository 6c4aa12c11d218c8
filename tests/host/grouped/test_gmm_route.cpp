// The CUTLASS grouped backend's host-only logic (src/grouped/gmm_route.cpp): instance names (they
// must match tools/generate_cutlass_instances.py's) and the rule that picks the tile kernels or a
// CUTLASS configuration under each backend setting (TGEMM_GROUPED_BACKEND, parsed in
// tests/host/core/test_settings.cpp).
#include <gtest/gtest.h>

#include <vector>

#include "grouped/gmm_cutlass.h"

namespace tgemm::grouped_cutlass {
namespace {

constexpr int kSms = 132;

GroupedConfig config(DType in, bool bk, int m, int n, Schedule s) { return {in, bk, m, n, 64, s}; }

// The catalog of tools/generate_cutlass_instances.py for bf16 K-major B, in its order.
std::vector<GroupedConfig> bf16_bk() {
  return {config(DType::kBFloat16, true, 64, 128, Schedule::kPingpong),
          config(DType::kBFloat16, true, 128, 128, Schedule::kCooperative),
          config(DType::kBFloat16, true, 128, 256, Schedule::kCooperative)};
}

GroupedShape shape(std::int64_t rows, std::int64_t groups, std::int64_t n, std::int64_t k) {
  GroupedShape s;
  s.rows = rows;
  s.groups = groups;
  s.n = n;
  s.k = k;
  s.tma_compatible = true;
  return s;
}

TEST(GmmRoute, InstanceNamesMatchTheGenerator) {
  EXPECT_EQ(instance_name(config(DType::kBFloat16, true, 64, 128, Schedule::kPingpong)),
            "sm90_grouped_bf16_bk_64x128x64_pingpong");
  EXPECT_EQ(instance_name(config(DType::kFloat16, false, 128, 256, Schedule::kCooperative)),
            "sm90_grouped_fp16_bn_128x256x64_coop");
}

TEST(GmmRoute, AutoTakesCutlassAtEveryRowsPerGroup) {
  const auto all = bf16_bk();
  // One token's 8 slots over 128 experts (decode), 31 and 32 rows a group: the 64-row pingpong tile.
  EXPECT_EQ(choose_grouped_config(all, shape(8, 128, 2048, 768), GroupedBackend::kAuto, kSms), 0);
  EXPECT_EQ(choose_grouped_config(all, shape(128 * 31, 128, 2048, 4096), GroupedBackend::kAuto, kSms), 0);
  EXPECT_EQ(choose_grouped_config(all, shape(128 * 32, 128, 2048, 4096), GroupedBackend::kAuto, kSms), 0);
  // Forced: the CUTLASS kernel even at 1 row per group; forced tile: never.
  EXPECT_EQ(choose_grouped_config(all, shape(8, 8, 4096, 4096), GroupedBackend::kCutlass, kSms), 0);
  EXPECT_EQ(choose_grouped_config(all, shape(8192, 8, 4096, 4096), GroupedBackend::kTile, kSms), -1);
}

TEST(GmmRoute, TileShapeFollowsRowsPerGroupAndTheTileCount) {
  const auto all = bf16_bk();
  // 128 rows a group, 8 groups, N = 4096: 8 x 16 = 128 tiles of 128x256 < 132 SMs: 128x128.
  EXPECT_EQ(choose_grouped_config(all, shape(8 * 128, 8, 4096, 4096), GroupedBackend::kAuto, kSms), 1);
  // 256 rows a group: 8 x 2 x 16 = 256 tiles of 128x256 fill every SM: 128x256.
  EXPECT_EQ(choose_grouped_config(all, shape(8 * 256, 8, 4096, 4096), GroupedBackend::kAuto, kSms), 2);
}

TEST(GmmRoute, RefusesWhatTmaCannotLoadOrNoInstanceMatches) {
  const auto all = bf16_bk();
  GroupedShape s = shape(4096, 8, 4096, 4096);
  EXPECT_TRUE(cutlass_can_take(s));
  s.k = 4100;  // K not a multiple of 8 elements (16 bytes)
  EXPECT_FALSE(cutlass_can_take(s));
  EXPECT_EQ(choose_grouped_config(all, s, GroupedBackend::kCutlass, kSms), -1);
  s = shape(4096, 8, 4092, 4096);  // N
  EXPECT_EQ(choose_grouped_config(all, s, GroupedBackend::kCutlass, kSms), -1);
  s = shape(4096, 8, 4096, 0);  // K = 0 writes zeros or the bias: the tile kernels
  EXPECT_EQ(choose_grouped_config(all, s, GroupedBackend::kCutlass, kSms), -1);
  s = shape(4096, 8, 4096, 4096);
  s.tma_compatible = false;  // misaligned pointer, bias, fp32 output
  EXPECT_EQ(choose_grouped_config(all, s, GroupedBackend::kCutlass, kSms), -1);
  s = shape(4096, 8, 4096, 4096);
  s.b_k_major = false;  // no [G, K, N] instance among these
  EXPECT_EQ(choose_grouped_config(all, s, GroupedBackend::kCutlass, kSms), -1);
  s = shape(4096, 8, 4096, 4096);
  s.in = DType::kFloat16;
  EXPECT_EQ(choose_grouped_config(all, s, GroupedBackend::kCutlass, kSms), -1);
}

TEST(GmmRoute, FallsBackToTheNearestBuiltInstance) {
  // The CI subset builds only the 64x128 pingpong instance: every prefill shape takes it.
  const std::vector<GroupedConfig> ci = {config(DType::kBFloat16, true, 64, 128, Schedule::kPingpong)};
  EXPECT_EQ(choose_grouped_config(ci, shape(8 * 256, 8, 4096, 4096), GroupedBackend::kAuto, kSms), 0);
  // Without the pingpong tile, small groups take 128x128 over 128x256.
  const std::vector<GroupedConfig> coop = {config(DType::kBFloat16, true, 128, 256, Schedule::kCooperative),
                                           config(DType::kBFloat16, true, 128, 128, Schedule::kCooperative)};
  EXPECT_EQ(choose_grouped_config(coop, shape(128 * 40, 128, 2048, 4096), GroupedBackend::kAuto, kSms), 1);
}

}  // namespace
}  // namespace tgemm::grouped_cutlass
