#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/lookup.h"

namespace tgemm {
namespace {

TEST(WalkLevelName, Names) {
  EXPECT_EQ(walk_level_name(WalkLevel::kExact), "exact");
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

TEST(FindRow, NullOrEmptyRowsGiveNone) {
  EXPECT_EQ(find_row(nullptr, 16), nullptr);
  Table::RowsByM empty;
  EXPECT_EQ(find_row(&empty, 16), nullptr);
}

TEST(FindRow, OnlyTheRowOfThisM) {
  auto rows = rows_at({1, 16, 64, 128, 512, 2048, 8192});
  for (const auto& [m, row] : rows) EXPECT_EQ(find_row(&rows, m), &row) << "M=" << m;
  // Every other M, the padded, power-of-two and nearest neighbours of rows included, gets none:
  // a row measured at one M can be 2.6x slower than the default at another.
  for (std::int64_t m = 0; m <= 9000; ++m) {
    if (rows.count(m)) continue;
    ASSERT_EQ(find_row(&rows, m), nullptr) << "M=" << m;
  }
}

}  // namespace
}  // namespace tgemm
