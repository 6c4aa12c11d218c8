// The M grid (src/core/m_grid.h): its size and spread over 1..16384, the dense run, the
// geometric steps, other largest M values, and the arguments it refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/m_grid.h"
#include "tests/common/host_test_util.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

bool is_power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

void expect_strictly_increasing(const std::vector<std::int64_t>& grid) {
  for (std::size_t i = 1; i < grid.size(); ++i) EXPECT_LT(grid[i - 1], grid[i]) << "at index " << i;
}

TEST(MGrid, DefaultCoversOneTo16384WithMostValuesOffPowersOfTwo) {
  const std::vector<std::int64_t> grid = m_grid();
  ASSERT_GE(grid.size(), 48u);
  EXPECT_EQ(grid.front(), 1);
  EXPECT_EQ(grid.back(), 16384);
  EXPECT_EQ(grid.back(), kMGridMax);
  expect_strictly_increasing(grid);
  std::size_t off = 0;
  for (std::int64_t m : grid) off += is_power_of_two(m) ? 0 : 1;
  EXPECT_GE(2 * off, grid.size()) << off << " of " << grid.size() << " values are not powers of two";
  // The figures m_grid.h's comment gives.
  EXPECT_EQ(grid.size(), 56u);
  EXPECT_EQ(off, 41u);
}

TEST(MGrid, EveryMUpTo16ThenEveryPowerOfTwo) {
  const std::vector<std::int64_t> grid = m_grid();
  ASSERT_GE(grid.size(), 16u);
  for (std::int64_t m = 1; m <= 16; ++m) EXPECT_EQ(grid[static_cast<std::size_t>(m - 1)], m);
  for (std::int64_t p = 1; p <= kMGridMax; p *= 2) {
    EXPECT_NE(std::find(grid.begin(), grid.end(), p), grid.end()) << "power of two " << p << " missing";
  }
}

TEST(MGrid, AboveTheDenseRunFourRoundedStepsAnOctave) {
  const std::vector<std::int64_t> grid = m_grid();
  // The i-th value after 16 is 2^(4 + i / 4) rounded (computed here with pow, the grid with
  // written-out constants), and neighbours are 1.10-1.30 apart (2^(1/4) = 1.19 before rounding).
  for (std::size_t i = 16; i < grid.size(); ++i) {
    const double exact = std::pow(2.0, 4.0 + static_cast<double>(i - 15) / kMGridStepsPerOctave);
    EXPECT_EQ(grid[i], std::llround(exact)) << "at index " << i;
    const double ratio = static_cast<double>(grid[i]) / static_cast<double>(grid[i - 1]);
    EXPECT_GT(ratio, 1.10) << grid[i - 1] << " -> " << grid[i];
    EXPECT_LT(ratio, 1.30) << grid[i - 1] << " -> " << grid[i];
  }
  EXPECT_EQ(m_grid(), grid) << "the grid must be the same on every call";
}

TEST(MGrid, OtherLargestMEndsThereOnTheSameValues) {
  const std::vector<std::int64_t> full = m_grid();
  for (std::int64_t max_m : {5000, 300, 17, 19}) {
    SCOPED_TRACE(max_m);
    const std::vector<std::int64_t> grid = m_grid(max_m);
    ASSERT_FALSE(grid.empty());
    EXPECT_EQ(grid.back(), max_m);
    expect_strictly_increasing(grid);
    // Below max_m: exactly the default grid's values below it.
    std::vector<std::int64_t> below;
    for (std::int64_t m : full) {
      if (m < max_m) below.push_back(m);
    }
    EXPECT_EQ(std::vector<std::int64_t>(grid.begin(), grid.end() - 1), below);
  }
  EXPECT_EQ(m_grid(1), std::vector<std::int64_t>{1});
  EXPECT_EQ(m_grid(5), (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(m_grid(16).size(), 16u);
  // Beyond the default: the same values continue (65536 = 2^16 on the grid), and the largest
  // accepted M still ends the grid.
  const std::vector<std::int64_t> wide = m_grid(65536);
  EXPECT_EQ(std::vector<std::int64_t>(wide.begin(), wide.begin() + static_cast<long>(full.size())), full);
  EXPECT_EQ(wide.size(), full.size() + 2 * kMGridStepsPerOctave);
  const std::vector<std::int64_t> widest = m_grid(kMGridLimit);
  EXPECT_EQ(widest.back(), kMGridLimit);
  expect_strictly_increasing(widest);
}

TEST(MGrid, RefusesLargestMOutsideTheRange) {
  for (std::int64_t bad : {std::int64_t{0}, std::int64_t{-3}, kMGridLimit + 1}) {
    try {
      m_grid(bad);
      ADD_FAILURE() << "m_grid(" << bad << ") did not throw";
    } catch (const Error& e) {
      EXPECT_TRUE(test::contains(e.what(), std::to_string(bad))) << e.what();
      EXPECT_TRUE(test::contains(e.what(), "largest M")) << e.what();
    }
  }
}

TEST(TuneGrid, DenseWhereTheKernelsChangeThenRoundedGeometricStepsTo16384) {
  const std::vector<std::int64_t> grid = tune_grid();
  EXPECT_EQ(grid.size(), 28u);
  EXPECT_GE(grid.size(), 26u);
  EXPECT_LE(grid.size(), 30u);
  expect_strictly_increasing(grid);
  EXPECT_EQ(grid.front(), 1);
  EXPECT_EQ(grid.back(), kMGridMax);
  // Every M of 1..8, then 10, 12, 16.
  const std::vector<std::int64_t> small(grid.begin(), grid.begin() + 11);
  EXPECT_EQ(small, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16}));
  // Above 16 (max_m aside): multiples of 8, each step about the factor (rounding moves it by at
  // most 8 on either side).
  for (std::size_t i = 11; i + 1 < grid.size(); ++i) {
    EXPECT_EQ(grid[i] % 8, 0) << grid[i];
    const double ratio = static_cast<double>(grid[i]) / static_cast<double>(grid[i - 1]);
    EXPECT_GT(ratio, 1.2) << grid[i];
    EXPECT_LT(ratio, 1.8) << grid[i];
  }
  // The last step is at least half a step (sqrt(1.5)) and at most a step and a half.
  const double last = static_cast<double>(grid.back()) / static_cast<double>(grid[grid.size() - 2]);
  EXPECT_GE(last, std::sqrt(1.5));
  EXPECT_LE(last, 1.5 * std::sqrt(1.5));
}

TEST(TuneGrid, TheFactorSetsTheSizeAndMaxMEndsIt) {
  EXPECT_EQ(tune_grid(16384, 2.0).size(), 21u);
  EXPECT_EQ(tune_grid(16384, 1.25).size(), 41u);
  EXPECT_EQ(tune_grid(1), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(tune_grid(8), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(tune_grid(100), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24, 40, 56, 80, 100}));
  for (std::int64_t max_m : {2, 9, 17, 300, 4096, 65536}) {
    const auto g = tune_grid(max_m);
    expect_strictly_increasing(g);
    EXPECT_EQ(g.back(), max_m);
    EXPECT_LE(g.size(), tune_grid(max_m * 2).size());
  }
  EXPECT_THROW(tune_grid(0), Error);
  EXPECT_THROW(tune_grid(kMGridLimit + 1), Error);
  EXPECT_THROW(tune_grid(16384, 1.05), Error);
  EXPECT_THROW(tune_grid(16384, 5.0), Error);
}

}  // namespace
}  // namespace tgemm
