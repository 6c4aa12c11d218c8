#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/lookup.h"

namespace tgemm {
namespace {

TEST(WalkLevelName, Names) {
  EXPECT_EQ(walk_level_name(WalkLevel::kExact), "exact");
  EXPECT_EQ(walk_level_name(WalkLevel::kRange), "range");
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

TEST(FindRow, ARowServesExactlyItsRange) {
  // Disjoint ranges of several widths, with gaps between them and point rows among them.
  Table::RowsByM rows = rows_at({1, 2, 64, 300, 4096});
  auto set_range = [&](std::int64_t m, std::int64_t lo, std::int64_t hi) {
    rows[m].m_lo = lo;
    rows[m].m_hi = hi;
  };
  set_range(2, 2, 7);
  set_range(64, 33, 100);
  set_range(300, 256, 511);
  set_range(4096, 3000, 8192);
  for (std::int64_t m = 0; m <= 10000; ++m) {
    const TableRow* want = nullptr;
    for (const auto& [row_m, row] : rows) {
      const std::int64_t lo = row.m_lo > 0 ? row.m_lo : row_m, hi = row.m_hi > 0 ? row.m_hi : row_m;
      if (lo <= m && m <= hi) want = &row;
    }
    ASSERT_EQ(find_row(&rows, m), want) << "M=" << m;
  }
  EXPECT_EQ(find_row(&rows, 40)->m, 64);
  EXPECT_EQ(find_row(&rows, 511)->m, 300);
  EXPECT_EQ(find_row(&rows, 512), nullptr);
  EXPECT_EQ(find_row(&rows, 8), nullptr);
}

}  // namespace
}  // namespace tgemm
