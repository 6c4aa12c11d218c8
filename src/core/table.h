// Tuned tables: one CSV family per op family, AITER's columns with NVIDIA names:
//   arch,sm_count,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,
//   kernelName,err_ratio,tflops,bw
// plus tgemm's own optional columns: epilogue, and M_lo,M_hi (the M range the row serves), and
// for the a8w8 families `scales` (format_scale_recipe: tensor | token | channel | token_channel,
// and block for a8w8_blockscale), part of the key. An a8w8 row (dtype torch.float8_e4m3fn or
// torch.int8) must name its scales; any other row must not (or say "none").
// A row with a `B` value is a batched_gemm row (bf16_tuned_batched_gemm.csv): B, transpose_a
// and transpose_b are part of its key.
// Columns are found by name, so their order is free and unknown columns are ignored.
//
// M ranges: a row serves its own M and, where M_lo and M_hi are given, every M in
// [M_lo, M_hi] (inclusive; M_lo <= M <= M_hi), a range where the tuner measured it against the
// default and it held. A row without them serves its own M only. The ranges of one key never
// overlap: within a file, a row whose range overlaps an earlier-kept row's is warned about and
// skipped; a later file's row removes the earlier files' rows whose ranges it overlaps.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/csv.h"
#include "core/problem.h"

namespace tgemm {

struct TableRow {
  TableKey key;
  std::int64_t m = 0;
  // The measured M range; 0 and 0 = the row's own M only.
  std::int64_t m_lo = 0, m_hi = 0;
  std::string libtype;
  int solidx = 0;
  int split_k = 0;
  double us = 0;
  std::string kernel_name;
  double err_ratio = 0;
  double tflops = 0;
  double bw = 0;
  // Where the row came from, for warnings and logs.
  std::string file;
  int line = 0;

  std::int64_t range_lo() const { return m_lo > 0 ? m_lo : m; }
  std::int64_t range_hi() const { return m_hi > 0 ? m_hi : m; }
  bool serves(std::int64_t at_m) const { return range_lo() <= at_m && at_m <= range_hi(); }
  bool overlaps(const TableRow& o) const { return range_lo() <= o.range_hi() && o.range_lo() <= range_hi(); }
};

// Column names of a tuned table, in the order tgemm writes them (the a8w8 families add `scales`
// last, batched `B,transpose_a,transpose_b`).
const std::vector<std::string>& tuned_table_columns(OpFamily family = OpFamily::kA16W16);
// Column names of an untuned (capture / tuner input) table (the same family columns last).
const std::vector<std::string>& untuned_table_columns(OpFamily family = OpFamily::kA16W16);
// The values of key.family()'s own columns, in their column order (none for a16w16).
std::vector<std::string> family_key_fields(const TableKey& key);
// The family whose table holds rows of this input dtype: a8w8 for float8_e4m3fn and int8.
OpFamily family_of_dtype(DType dtype);
// The family of a row's key (TableKey::family): batched where it has a batch, a8w8_blockscale for
// block scales, else family_of_dtype.
OpFamily family_of_key(const TableKey& key);

struct ParsedTable {
  std::vector<TableRow> rows;
  std::vector<std::string> warnings;  // "file:line: reason", one per skipped line
};

// Parses a tuned table; malformed lines are reported in `warnings` and skipped. A header that
// cannot be split, lacks a required column or names one twice skips the file; a line or an input
// over `limits` stops reading (rows before it are kept). Each such case, and a file with a header
// that gives no row, is one warning. Numbers are range-checked: dimensions and the int columns
// within int32, the measured columns (us, err_ratio, tflops, bw) finite and >= 0.
ParsedTable parse_tuned_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits = {});

// Formats a row as a CSV line in tuned_table_columns(row.key.family()) order.
std::string format_tuned_row(const TableRow& row);

// Rows of several files merged: within one file a repeated key keeps the lowest `us`; across
// files, a later file's row replaces an earlier one.
class Table {
 public:
  using RowsByM = std::map<std::int64_t, TableRow>;

  // Reads `path`; a missing or unreadable file is a warning, not an error.
  void load_file(const std::string& path, std::vector<std::string>& warnings);
  // Rows whose M range overlaps an earlier-kept row of the same key in this file are skipped,
  // with a warning in *warnings where given.
  void add_rows(const std::vector<TableRow>& rows_of_one_file, std::vector<std::string>* warnings = nullptr);

  // Rows for a key, ordered by M; nullptr if none.
  const RowsByM* rows_for(const TableKey& key) const;
  std::size_t size() const;
  // SM counts for which rows of `arch` exist.
  std::vector<int> sm_counts_for_arch(const std::string& arch) const;
  // Files that have rows for `arch` but none for `sm_count`, each with the SM counts it has: a
  // table tuned on another GPU of the same architecture, none of whose rows apply here.
  std::vector<std::pair<std::string, std::vector<int>>> files_for_other_sm_counts(const std::string& arch,
                                                                                  int sm_count) const;
  // Every row, ordered by key then M (for `tgemm show`).
  std::vector<const TableRow*> all_rows() const;

 private:
  std::unordered_map<TableKey, RowsByM, TableKeyHash> rows_;
  std::map<std::string, std::map<std::string, std::set<int>>> file_arch_sms_;  // file -> arch -> SMs
};

}  // namespace tgemm
