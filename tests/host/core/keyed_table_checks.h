// What every keyed table (src/core/keyed_table.h: gmm's, fused_moe's) must do, as checks over its
// Traits, so each table's test states only its own rows: a bad line is one warning naming file and
// line and is skipped, a file keeps its fastest row of a key and a later file wins, a missing file
// is a warning, the capture writes each untuned key once, and a card's own file serves that card
// alone while rows of another SM count are one warning.
#pragma once

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/keyed_table.h"
#include "tests/common/host_test_util.h"

namespace tgemm::test {

template <typename Traits>
auto parse_text(const std::string& text, const std::string& file = "t.csv") {
  std::istringstream in(text);
  return Traits::parse(in, file);
}

// Each of `bad` (a data line and a part of its reason) between two good lines: one warning
// "bad.csv:3: <reason>, row skipped", and both good rows kept.
template <typename Traits>
void expect_each_bad_line_skipped(const std::string& header, const std::string& good,
                                  const std::vector<std::pair<std::string, std::string>>& bad) {
  for (const auto& [line, why] : bad) {
    auto t = parse_text<Traits>(header + good + line + good, "bad.csv");
    ASSERT_EQ(t.warnings.size(), 1u) << line;
    EXPECT_TRUE(contains(t.warnings[0], "bad.csv:3: ")) << t.warnings[0];
    EXPECT_TRUE(contains(t.warnings[0], why)) << t.warnings[0];
    EXPECT_TRUE(contains(t.warnings[0], "row skipped")) << t.warnings[0];
    EXPECT_EQ(t.rows.size(), 2u) << line;
  }
}

// `text` (a header without the key column `column`, then a row): the file is skipped, with one
// warning at its line 1.
template <typename Traits>
void expect_header_without_column_skips(const std::string& text, const std::string& column) {
  auto t = parse_text<Traits>(text, "h.csv");
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_TRUE(contains(t.warnings[0], "h.csv:1: header has no '" + column + "' column")) << t.warnings[0];
  EXPECT_TRUE(t.rows.empty());
}

// `table` holds rows of sm_90a with 132 SMs only, one of them `served`'s: the same key on 114 SMs
// finds none, and other_sm_counts says which counts the rows are for.
template <typename Traits>
void expect_another_sm_count_misses(const KeyedTable<Traits>& table, typename Traits::Key served) {
  ASSERT_NE(table.find(served), nullptr);
  served.sm_count = 114;
  EXPECT_EQ(table.find(served), nullptr);
  EXPECT_EQ(table.other_sm_counts("sm_90a", 114), std::vector<int>{132});
  EXPECT_TRUE(table.other_sm_counts("sm_90a", 132).empty());
}

// `slow` and `fast` (one key, fast's us lower) in one file: fast's solution serves `key`; `later`
// (the same key, slower) in a later file replaces it.
template <typename Traits>
void expect_fastest_row_then_later_file_wins(const std::string& header, const std::string& slow,
                                             const std::string& fast, const std::string& later,
                                             const typename Traits::Key& key, const std::string& fast_solution,
                                             const std::string& later_solution) {
  KeyedTable<Traits> table;
  table.add_rows(parse_text<Traits>(header + slow + fast).rows);
  const auto* r = table.find(key);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->solution, fast_solution);
  table.add_rows(parse_text<Traits>(header + later, "later.csv").rows);
  r = table.find(key);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->solution, later_solution);
  EXPECT_EQ(r->file, "later.csv");
}

template <typename Traits>
void expect_missing_file_warns() {
  const std::string path = "/nonexistent/" + std::string(Traits::family().tuned_file);
  KeyedTable<Traits> table;
  std::vector<std::string> warnings;
  table.load_file(path, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], path + ": cannot be opened")) << warnings[0];
  EXPECT_EQ(table.size(), 0u);
}

// TGEMM_TUNE_GEMM: the tables record `keys` (repeats included) into `expected` (the untuned header
// and each key's row once).
template <typename Traits>
void expect_capture_writes_each_key_once(const std::vector<typename Traits::Key>& keys, const std::string& expected) {
  TempDir dir;
  FamilySettings fs;
  fs.untuned_file = dir.file(std::string(Traits::family().untuned_file));
  KeyedTables<Traits> tables(fs, true, false);
  for (const auto& key : keys) tables.record_untuned(key);
  EXPECT_EQ(read_file(fs.untuned_file), expected);
}

// The shared file holds `shared_row` (sm_90a, 114 SMs), the H200's card file `card_row` (sm_90a,
// 132 SMs, solution `card_solution`), both of `key` (132 SMs): an H200 reads its card file alone,
// silently; an H100 of 132 SMs reads the shared file, whose rows serve none of its keys, and is
// told so once.
template <typename Traits>
void expect_card_file_serves_its_card(const std::string& header, const std::string& shared_row,
                                      const std::string& card_row, const typename Traits::Key& key,
                                      const std::string& card_solution) {
  TempDir dir;
  const std::string tuned(Traits::family().tuned_file);
  ASSERT_EQ(::mkdir(dir.file("h200").c_str(), 0755), 0);
  write_file(dir.file(tuned), header + shared_row);
  write_file(dir.file("h200/" + tuned), header + card_row);
  FamilySettings fs;
  fs.table_files = {dir.file(tuned)};
  fs.card_table_dir = dir.path();
  LogCapture log;
  KeyedTables<Traits> tables(fs, false, false);
  const DeviceInfo h200{0, "NVIDIA H200", "sm_90a", 132, 0};
  const DeviceInfo h100{1, "NVIDIA H100 80GB HBM3", "sm_90a", 132, 0};
  const auto* r = tables.table_for(h200).find(key);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->solution, card_solution);
  EXPECT_EQ(tables.files_for(h200), std::vector<std::string>{dir.file("h200/" + tuned)});
  EXPECT_EQ(log.dump(), "");
  EXPECT_EQ(tables.table_for(h100).find(key), nullptr);
  const std::vector<std::string> said = log.warnings();
  ASSERT_EQ(said.size(), 1u) << log.dump();
  EXPECT_TRUE(log.infos().empty()) << log.dump();
  EXPECT_TRUE(contains(said[0], std::string(Traits::kName) + " rows for sm_90a exist only for sm_count 114"))
      << said[0];
  EXPECT_TRUE(contains(said[0], Traits::kTuneCommand)) << said[0];
}

}  // namespace tgemm::test
