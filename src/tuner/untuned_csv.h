// Reading the problem lists of the grouped tuners (`tgemm tune-gmm`, `tgemm tune-fmoe`): CSV files
// whose columns are found by name, where a malformed line is an error naming file, line and value
// (a tune input is written by a capture or by hand, and a row that cannot be raced is a mistake to
// fix, not a row to skip). Host-only.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <istream>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "core/csv.h"
#include "tgemm/tensor.h"

namespace tgemm::untuned_csv {

// Dimensions within int32: the bound the entry points put on a call's (the kernels index rows
// with int32).
inline constexpr long long kMaxDim = std::numeric_limits<std::int32_t>::max();

// One data line's fields by column name, with its location for messages.
struct Fields {
  const std::unordered_map<std::string, std::size_t>& column;
  const std::vector<std::string>& values;
  const std::string& where;
  const char* op;

  const std::string* get(const char* name) const {
    auto it = column.find(name);
    return it == column.end() ? nullptr : &values[it->second];
  }
  // An integer in [1, kMaxDim].
  std::int64_t dim(const char* name) const {
    const std::string* v = get(name);
    const auto parsed = v ? csv::parse_int(*v) : std::nullopt;
    TGEMM_CHECK(parsed && *parsed >= 1 && *parsed <= kMaxDim, op, where, ": ", name, " must be an integer in [1, ",
                kMaxDim, "], got '", v ? *v : std::string(), "'");
    return *parsed;
  }
  // A dtype name; an absent or empty field is `fallback` where one is given.
  DType dtype(const char* name, std::optional<DType> fallback) const {
    const std::string* v = get(name);
    if ((v == nullptr || v->empty()) && fallback) return *fallback;
    const auto dt = v ? dtype_from_name(*v) : std::nullopt;
    TGEMM_CHECK(dt.has_value(), op, where, ": unknown ", name, " '", v ? *v : std::string(), "'");
    return *dt;
  }
};

// Calls f(fields, "file:line") for every data line of a CSV whose header has `required` (blank
// lines and lines starting with '#' skipped).
template <typename F>
void for_each_row(std::istream& in, const std::string& file, const char* op,
                  std::initializer_list<const char*> required, F f) {
  csv::LineReader reader(in);
  std::string line;
  std::unordered_map<std::string, std::size_t> column;
  std::size_t width = 0;
  while (reader.next(&line)) {
    if (line.find_first_not_of(" \t") == std::string::npos || line[0] == '#') continue;
    const std::string where = file + ":" + std::to_string(reader.line_no());
    const auto values = csv::split_line(line);
    TGEMM_CHECK(values.has_value(), op, where, ": unterminated quote");
    if (column.empty()) {
      for (std::size_t i = 0; i < values->size(); ++i) column[(*values)[i]] = i;
      for (const char* name : required) {
        TGEMM_CHECK(column.count(name) != 0, op, where, ": the header has no column ", name);
      }
      width = values->size();
      continue;
    }
    TGEMM_CHECK(values->size() == width, op, where, ": ", values->size(), " fields where the header has ", width);
    f(Fields{column, *values, where, op}, where);
  }
  TGEMM_CHECK(reader.stop() == csv::LineReader::Stop::kEnd, op, file, ": ", reader.stop_reason());
  TGEMM_CHECK(!column.empty(), op, file, ": no header line");
}

}  // namespace tgemm::untuned_csv
