// libFuzzer target: a tuned table's text through the parser (parse_tuned_table), the merge
// (Table::add_rows) and the lookup walk (find_row) at each parsed row's M and at its range's
// edges. Malformed input must give warnings, never a crash, an exception or a sanitizer report;
// the walk must only return a row that serves the M it was asked for, and must find the row
// stored at exactly that M.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/lookup.h"
#include "core/table.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void check_walk(const tgemm::Table::RowsByM* rows, std::int64_t m) {
  const tgemm::TableRow* found = tgemm::find_row(rows, m);
  if (found != nullptr) {
    TGEMM_FUZZ_REQUIRE(found->serves(m), "row M=%lld [%lld, %lld] returned for M=%lld",
                       static_cast<long long>(found->m), static_cast<long long>(found->range_lo()),
                       static_cast<long long>(found->range_hi()), static_cast<long long>(m));
  }
  if (rows != nullptr && rows->count(m) != 0) {
    TGEMM_FUZZ_REQUIRE(found == &rows->at(m), "the row stored at M=%lld is not the one found",
                       static_cast<long long>(m));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  const tgemm::ParsedTable parsed = tgemm::parse_tuned_table(in, "fuzz.csv");

  tgemm::Table table;
  std::vector<std::string> warnings;
  table.add_rows(parsed.rows, &warnings);
  // A second file with the same rows replaces the first one's (the later-file rule).
  table.add_rows(parsed.rows, &warnings);
  TGEMM_FUZZ_REQUIRE(table.size() <= parsed.rows.size(), "%zu rows kept from %zu parsed", table.size(),
                     parsed.rows.size());

  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  for (const tgemm::TableRow& row : parsed.rows) {
    const tgemm::Table::RowsByM* rows = table.rows_for(row.key);
    for (std::int64_t m : {row.m, row.range_lo(), row.range_hi()}) {
      check_walk(rows, m);
      if (m > std::numeric_limits<std::int64_t>::min()) check_walk(rows, m - 1);
      if (m < kMax) check_walk(rows, m + 1);
    }
    (void)tgemm::format_tuned_row(row);
    (void)table.sm_counts_for_arch(row.key.arch);
    (void)table.files_for_other_sm_counts(row.key.arch, row.key.sm_count + 1);
  }
  for (const tgemm::TableRow* row : table.all_rows()) {
    TGEMM_FUZZ_REQUIRE(row->serves(row->m), "a kept row does not serve its own M=%lld", static_cast<long long>(row->m));
  }
  return 0;
}
