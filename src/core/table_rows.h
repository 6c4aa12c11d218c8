// What every tuned-table parser shares: the header (columns by name), the loop over data lines
// with one "file:line: reason" warning per skipped line, and the typed reads of one row's fields
// (first failure kept). Each table adds only its own columns and checks. Host-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <istream>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/csv.h"
#include "tgemm/tensor.h"

namespace tgemm {

// The largest dimension a tuned row of a keyed table (gmm's, fused_moe's) may name: the bound
// their validators put on a call's, since the kernels index rows with int32.
inline constexpr long long kMaxTableDim = std::numeric_limits<std::int32_t>::max();

// A header line's columns: index by name and the line's width (every row must have as many).
struct TableColumns {
  std::unordered_map<std::string, std::size_t> index;
  std::size_t width = 0;
  bool has(const std::string& name) const { return index.count(name) != 0; }
};

// What read_table_rows saw besides the rows it handed on.
struct TableScan {
  std::vector<std::string> warnings;  // "file:line: reason, row skipped" and file-level reasons
  bool have_header = false;           // a usable header was read
  bool read_to_end = false;           // no read limit stopped it early
  int data_lines = 0;                 // lines after the header that were not blank or comments
};

// Reads `in`: blank lines and '#' lines skipped, the first other line the header (which must name
// each of `required` once, else the file is skipped with one warning), then each data line of the
// header's width handed to `row(columns, fields, line_no)`, which returns an empty string for a
// kept row or the reason it is skipped (then warned as "file:line: reason, row skipped").
TableScan read_table_rows(
    std::istream& in, const std::string& file, const csv::ReadLimits& limits, const std::vector<const char*>& required,
    const std::function<std::string(const TableColumns&, const std::vector<std::string>&, int)>& row);

// Typed reads of one data line's fields by column name; the first failure is kept as the row's
// reason (bad()).
class RowFields {
 public:
  RowFields(const TableColumns& cols, const std::vector<std::string>& fields) : cols_(cols), fields_(fields) {}

  // The field of a column, nullptr where the header has no such column.
  const std::string* field(const std::string& name) const;
  void fail(std::string why);
  const std::string& bad() const { return bad_; }

  // An integer in [min_value, max_value]; `dflt` where absent or empty, which fails where dflt <
  // min_value (the column is required).
  long long get_int(const char* name, long long dflt, long long min_value, long long max_value);
  // True/False; false where absent or empty.
  bool get_bool(const char* name);
  // A measured quantity (time, error ratio, rate, speedup): finite and >= 0, since a NaN or
  // negative `us` would win every "lowest us" comparison against the real measurements of its key.
  // 0 where absent or empty.
  double get_measure(const char* name);
  // `dflt` where the field is absent or empty; nullopt: the field is required.
  DType get_dtype(const char* name, std::optional<DType> dflt);
  // A required bucket column in [1, kMaxTableDim] that must be a power of two, the values of
  // `bucket_of` (the function that buckets a call, named in the reason).
  long long get_bucket(const char* name, const char* bucket_of);
  // An optional column of the size a race ran at (gmm's M, fused_moe's T): 0 where absent or empty,
  // else in [1, kMaxTableDim] and in the row's bucket: bucket_of(size) == bucket, else the reason
  // names both buckets (`context` follows the size in it, e.g. " with G=8").
  long long get_race_size(const char* name, const std::function<long long(long long)>& bucket_of, long long bucket,
                          const char* bucket_name, const std::string& context = {});
  // The columns of race_columns() into a row of a raced table (us, us_skewed, speedup,
  // speedup_skewed, default_solution).
  template <typename Row>
  void get_race(Row* row) {
    row->us = get_measure("us");
    row->us_skewed = get_measure("us_skewed");
    row->speedup = get_measure("speedup");
    row->speedup_skewed = get_measure("speedup_skewed");
    if (const std::string* d = field("default")) row->default_solution = *d;
  }

 private:
  const TableColumns& cols_;
  const std::vector<std::string>& fields_;
  std::string bad_;
};

// Opens a table file into *in; a directory or an unopenable file is one warning in `warnings` and
// false (a directory opens as a stream that reads nothing, which would load no rows without a
// word).
bool open_table_file(const std::string& path, std::ifstream* in, std::vector<std::string>& warnings);

// The columns a `tgemm tune-gmm` / `tune-fmoe` race adds after a row's key and solution: us,
// us_skewed (the solution's median time on the uniform and the skewed routing), speedup,
// speedup_skewed (the default's time over the solution's) and default (the default rule's
// solution).
const std::vector<std::string>& race_columns();
// `key_columns` followed by race_columns().
std::vector<std::string> with_race_columns(std::vector<std::string> key_columns);

// A bool as the tables write it (Python's spelling, as the tuned tables of the torch world).
inline const char* py_bool(bool b) { return b ? "True" : "False"; }
// A measured quantity as the tables write it: six significant digits.
std::string format_measure(double v);

// A raced row as a CSV line: `fields` (its key and solution) followed by its race_columns().
template <typename Row>
std::string format_race_row(std::vector<std::string> fields, const Row& r) {
  fields.push_back(format_measure(r.us));
  fields.push_back(format_measure(r.us_skewed));
  fields.push_back(format_measure(r.speedup));
  fields.push_back(format_measure(r.speedup_skewed));
  fields.push_back(r.default_solution);
  return csv::join(fields);
}

}  // namespace tgemm
