#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/lookup.h"

namespace tgemm {
namespace {

TEST(PaddedM, EveryBreakpoint) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> cases = {
      {1, 16},      {15, 16},     {16, 16},        {17, 32},     {255, 256},   {256, 256},
      {257, 288},   {288, 288},   {289, 320},      {1023, 1024}, {1024, 1024}, {1025, 1088},
      {1088, 1088}, {1089, 1152}, {4095, 4096},    {4096, 4096}, {4097, 4224}, {4224, 4224},
      {4225, 4352}, {8191, 8192}, {100000, 100096}};
  for (const auto& [m, want] : cases) EXPECT_EQ(padded_m(m), want) << "M=" << m;
}

TEST(PaddedM, IsAMultipleOfItsRegionsStepAndNeverSmaller) {
  for (std::int64_t m = 1; m <= 10000; ++m) {
    const std::int64_t p = padded_m(m);
    const std::int64_t step = m <= 256 ? 16 : m <= 1024 ? 32 : m <= 4096 ? 64 : 128;
    ASSERT_GE(p, m) << "M=" << m;
    ASSERT_LT(p - m, step) << "M=" << m;
    ASSERT_EQ(p % step, 0) << "M=" << m;
  }
}

TEST(NextPow2, Values) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> cases = {
      {1, 1},
      {2, 2},
      {3, 4},
      {4, 4},
      {5, 8},
      {17, 32},
      {257, 512},
      {1024, 1024},
      {1025, 2048},
      {4097, 8192},
      {(std::int64_t{1} << 31) - 1, std::int64_t{1} << 31}};
  for (const auto& [m, want] : cases) EXPECT_EQ(next_pow2(m), want) << "M=" << m;
}

TEST(WalkLevelName, Names) {
  EXPECT_EQ(walk_level_name(WalkLevel::kExact), "exact");
  EXPECT_EQ(walk_level_name(WalkLevel::kPaddedM), "padded_m");
  EXPECT_EQ(walk_level_name(WalkLevel::kPow2M), "pow2_m");
  EXPECT_EQ(walk_level_name(WalkLevel::kNearestM), "nearest_m");
  EXPECT_EQ(walk_level_name(WalkLevel::kDefault), "default");
}

Table::RowsByM rows_at(const std::vector<std::int64_t>& ms) {
  Table::RowsByM rows;
  for (std::int64_t m : ms) {
    TableRow r;
    r.m = m;
    r.kernel_name = "fake:m" + std::to_string(m);
    rows[m] = r;
  }
  return rows;
}

// The walk as "level:M" steps, e.g. {"exact:300", "padded_m:320", "nearest_m:64"}.
using Walk = std::vector<std::string>;

Walk walk_of(const Table::RowsByM& rows, std::int64_t m) {
  Walk out;
  for (const WalkStep& s : walk(&rows, m)) {
    EXPECT_EQ(s.row, &rows.at(s.row->m)) << "steps must point into the table";
    out.push_back(std::string(walk_level_name(s.level)) + ":" + std::to_string(s.row->m));
  }
  return out;
}

std::string step(const char* level, std::int64_t m) {
  return std::string(level) + ":" + std::to_string(m);
}

TEST(Walk, NullOrEmptyRowsGiveNoSteps) {
  EXPECT_TRUE(walk(nullptr, 16).empty());
  Table::RowsByM empty;
  EXPECT_TRUE(walk(&empty, 16).empty());
}

TEST(Walk, ExactThenPaddedThenPow2ThenNearest) {
  // M=300: padded 320, pow2 512.
  auto rows = rows_at({160, 300, 320, 512, 580});
  Walk w = walk_of(rows, 300);
  // Nearest by ratio from 300: 580 (x1.93) vs 160 (x1.875) -> 160 first.
  EXPECT_EQ(w, (Walk{"exact:300", "padded_m:320", "pow2_m:512", "nearest_m:160", "nearest_m:580"}));
}

TEST(Walk, MissingLevelsAreSkipped) {
  auto rows = rows_at({512, 590});
  Walk w = walk_of(rows, 300);  // no 300, no 320
  EXPECT_EQ(w, (Walk{"pow2_m:512", "nearest_m:590"}));

  auto rows2 = rows_at({320, 200});
  Walk w2 = walk_of(rows2, 300);
  EXPECT_EQ(w2, (Walk{"padded_m:320", "nearest_m:200"}));
}

TEST(Walk, EachTunedMAppearsOnce) {
  // M=16: exact, padded and pow2 are all 16: one step.
  auto rows = rows_at({16, 32});
  Walk w = walk_of(rows, 16);
  EXPECT_EQ(w, (Walk{"exact:16", "nearest_m:32"}));
  // M=17: padded 32 and pow2 32: 32 once, as padded.
  Walk w17 = walk_of(rows, 17);
  EXPECT_EQ(w17, (Walk{"padded_m:32", "nearest_m:16"}));
  // M=1: padded 16, pow2 1.
  auto rows1 = rows_at({1, 16, 2});
  Walk w1 = walk_of(rows1, 1);
  EXPECT_EQ(w1, (Walk{"exact:1", "padded_m:16", "nearest_m:2"}));
}

TEST(Walk, EveryRowWithinTheRatioIsOfferedExactlyOnce) {
  auto rows = rows_at({1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 320, 512, 1024, 4096, 8192});
  for (std::int64_t m : {1, 3, 17, 100, 300, 1000, 5000, 20000}) {
    std::vector<std::int64_t> want;
    for (const auto& [row_m, row] : rows) {
      // The exact, padded and pow2 levels take their rows whatever the ratio (at most 2x away).
      const bool level = row_m == m || row_m == padded_m(m) || row_m == next_pow2(m);
      if (level || std::max(row_m, m) <= kNearestMaxRatio * std::min(row_m, m)) want.push_back(row_m);
    }
    std::vector<std::int64_t> seen;
    for (const WalkStep& s : walk(&rows, m)) seen.push_back(s.row->m);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, want) << "M=" << m;
  }
}

// Rows further than kNearestMaxRatio from M are not offered: rows tuned for 512 tokens ran one
// token at 0.18-0.78x of the default, 128 tokens at 0.41-0.95x (session 26).
TEST(Walk, NearestStopsAtTheRatioLimit) {
  auto rows = rows_at({512, 2048, 8192});
  EXPECT_TRUE(walk_of(rows, 1).empty());
  EXPECT_TRUE(walk_of(rows, 128).empty());
  EXPECT_TRUE(walk_of(rows, 255).empty());  // padded 256, pow2 256: absent; 512 is x2.008
  EXPECT_EQ(walk_of(rows, 256), (Walk{"nearest_m:512"}));  // exactly x2
  EXPECT_EQ(walk_of(rows, 1000), (Walk{"nearest_m:512"}));  // 2048 is x2.048
  EXPECT_EQ(walk_of(rows, 40000), (Walk{}));
  EXPECT_EQ(walk_of(rows, 16384), (Walk{"nearest_m:8192"}));
}

TEST(Walk, NearestIsByRatioNotDifference) {
  // From M=100, 55 is closer by difference (45 vs 80) but further by ratio (x1.82 vs x1.8), so
  // 180 comes first; 60 (x1.67) beats 190 (x1.9) by both measures.
  auto rows = rows_at({55, 180});
  Walk w = walk_of(rows, 100);
  EXPECT_EQ(w, (Walk{"nearest_m:180", "nearest_m:55"}));
  auto rows2 = rows_at({60, 190});
  Walk w2 = walk_of(rows2, 100);
  EXPECT_EQ(w2, (Walk{"nearest_m:60", "nearest_m:190"}));
}

TEST(Walk, NearestOrdersAllRemainingRowsByRatio) {
  auto rows = rows_at({2, 55, 70, 150, 180, 201, 3000});
  Walk w = walk_of(rows, 100);  // padded 112, pow2 128: none
  // Ratios from 100: 70 x1.43, 150 x1.5, 180 x1.8, 55 x1.82; 201, 3000 and 2 are beyond x2.
  EXPECT_EQ(w, (Walk{"nearest_m:70", "nearest_m:150", "nearest_m:180", "nearest_m:55"}));
}

struct Tie {
  std::int64_t m, smaller, larger;  // larger / m == m / smaller
};

void expect_larger_first(const std::vector<Tie>& ties) {
  for (const Tie& t : ties) {
    auto rows = rows_at({t.smaller, t.larger});
    // Neither row is M, padded_m(M) or next_pow2(M), so both are at the nearest level.
    Walk w = walk_of(rows, t.m);
    EXPECT_EQ(w, (Walk{step("nearest_m", t.larger), step("nearest_m", t.smaller)}))
        << "M=" << t.m << " rows " << t.smaller << ", " << t.larger;
  }
}

TEST(Walk, NearestTiesGoToTheLargerM) {
  expect_larger_first({{32, 16, 64}, {100, 50, 200}, {6, 4, 9}, {24, 12, 48}, {3000, 2000, 4500}});
}

// Ties that floating-point log2 distances would break by rounding: from M=10, 5 and 20 are both a
// factor 2 away; from M=210, 140 and 315 are both a factor 1.5 away. The larger M must come first.
TEST(Walk, NearestTiesAreDecidedExactlyNotByRounding) {
  expect_larger_first({{10, 5, 20},
                       {210, 140, 315},
                       {6, 3, 12},
                       {12, 8, 18},
                       {30, 20, 45},
                       {60, 40, 90},
                       {96, 64, 144},
                       {20, 16, 25},
                       {40, 20, 80},
                       {1000, 500, 2000},
                       {1200, 800, 1800},
                       {5000, 2500, 10000}});
}

TEST(Walk, MBeyondEveryRow) {
  auto rows = rows_at({1024, 4096});
  Walk w = walk_of(rows, 8000);  // padded 8064, pow2 8192: absent
  EXPECT_EQ(w, (Walk{"nearest_m:4096"}));
  EXPECT_TRUE(walk_of(rows, 1 << 20).empty());
}

TEST(Walk, MZeroUsesTheSmallestRowsFirst) {
  // An empty problem never reaches a kernel, but the walk must still be well defined.
  auto rows = rows_at({1, 2, 16, 64});
  Walk w = walk_of(rows, 0);
  EXPECT_EQ(w, (Walk{"pow2_m:1", "nearest_m:2"}));
}

}  // namespace
}  // namespace tgemm
