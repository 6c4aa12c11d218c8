#include "core/table.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <cstdio>
#include <tuple>

#include "core/csv.h"

namespace tgemm {
namespace {

const char* py_bool(bool b) { return b ? "True" : "False"; }

std::string format_number(double v) {
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "%.6g", v);
  return std::string(buf, static_cast<std::size_t>(n > 0 ? n : 0));
}

struct Columns {
  std::unordered_map<std::string, std::size_t> index;
  bool has(const std::string& name) const { return index.count(name) != 0; }
};

}  // namespace

const std::vector<std::string>& tuned_table_columns() {
  static const std::vector<std::string> kColumns = {
      "arch", "sm_count", "M",       "N",  "K",          "bias",      "dtype",  "outdtype", "scaleAB",
      "bpreshuffle", "libtype", "solidx", "splitK", "us", "kernelName", "err_ratio", "tflops", "bw", "epilogue", "M_lo", "M_hi"};
  return kColumns;
}

const std::vector<std::string>& untuned_table_columns() {
  static const std::vector<std::string> kColumns = {"M",     "N",        "K",       "bias",       "dtype",
                                                    "outdtype", "scaleAB", "bpreshuffle", "epilogue"};
  return kColumns;
}

ParsedTable parse_tuned_table(std::istream& in, const std::string& file) {
  ParsedTable out;
  std::string line;
  int line_no = 0;
  Columns cols;
  bool have_header = false;
  auto warn = [&](const std::string& why) {
    out.warnings.push_back(file + ":" + std::to_string(line_no) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string_view view(line);
    if (view.find_first_not_of(" \t") == std::string_view::npos || view.front() == '#') continue;
    auto fields = csv::split_line(view);
    if (!fields) {
      warn("malformed line (unterminated quote), row skipped");
      continue;
    }
    if (!have_header) {
      for (std::size_t i = 0; i < fields->size(); ++i) cols.index[(*fields)[i]] = i;
      for (const char* required : {"arch", "sm_count", "M", "N", "K", "dtype", "libtype", "kernelName"}) {
        if (!cols.has(required)) {
          warn(std::string("header has no '") + required + "' column, file skipped");
          return out;
        }
      }
      have_header = true;
      continue;
    }
    if (fields->size() != cols.index.size()) {
      warn("malformed line: " + std::to_string(fields->size()) + " fields where the header has " +
           std::to_string(cols.index.size()) + ", row skipped");
      continue;
    }
    auto field = [&](const std::string& name) -> const std::string* {
      auto it = cols.index.find(name);
      return it == cols.index.end() ? nullptr : &(*fields)[it->second];
    };
    TableRow row;
    row.file = file;
    row.line = line_no;
    std::string bad;
    auto get_int = [&](const char* name, long long dflt, long long min_value) -> long long {
      const std::string* f = field(name);
      if (!f || f->empty()) {
        if (dflt < min_value) bad = std::string("missing ") + name;
        return dflt;
      }
      auto v = csv::parse_int(*f);
      if (!v) bad = std::string("bad ") + name + " '" + *f + "'";
      else if (*v < min_value) bad = std::string(name) + " must be >= " + std::to_string(min_value) + ", got " + *f;
      return v.value_or(dflt);
    };
    auto get_bool = [&](const char* name) -> bool {
      const std::string* f = field(name);
      if (!f || f->empty()) return false;
      auto v = csv::parse_bool(*f);
      if (!v) bad = std::string("bad ") + name + " '" + *f + "' (expected True or False)";
      return v.value_or(false);
    };
    auto get_double = [&](const char* name) -> double {
      const std::string* f = field(name);
      if (!f || f->empty()) return 0;
      auto v = csv::parse_double(*f);
      if (!v) bad = std::string("bad ") + name + " '" + *f + "'";
      return v.value_or(0);
    };
    row.key.arch = *field("arch");
    if (row.key.arch.empty()) bad = "empty arch";
    row.key.sm_count = static_cast<int>(get_int("sm_count", -1, 1));
    row.m = get_int("M", -1, 1);
    row.key.n = get_int("N", -1, 1);
    row.key.k = get_int("K", -1, 1);
    row.key.bias = get_bool("bias");
    row.key.scale_ab = get_bool("scaleAB");
    row.key.bpreshuffle = get_bool("bpreshuffle");
    auto dt = dtype_from_name(*field("dtype"));
    if (!dt) bad = "unknown dtype '" + *field("dtype") + "'";
    row.key.dtype = dt.value_or(DType::kBFloat16);
    const std::string* od = field("outdtype");
    if (od && !od->empty()) {
      auto odt = dtype_from_name(*od);
      if (!odt) bad = "unknown outdtype '" + *od + "'";
      row.key.out_dtype = odt.value_or(row.key.dtype);
    } else {
      row.key.out_dtype = row.key.dtype;
    }
    const std::string* ep = field("epilogue");
    if (ep && !ep->empty()) {
      auto e = parse_epilogue_key(*ep);
      if (!e) bad = "unknown epilogue '" + *ep + "' (expected none|gelu|gelu_tanh|relu, optionally +alpha, +c)";
      row.key.epilogue = e.value_or(EpilogueKey{});
    }
    row.libtype = *field("libtype");
    if (row.libtype.empty()) bad = "empty libtype";
    row.kernel_name = *field("kernelName");
    if (row.kernel_name.empty()) bad = "empty kernelName";
    const std::string* lo = field("M_lo");
    const std::string* hi = field("M_hi");
    const bool has_lo = lo && !lo->empty(), has_hi = hi && !hi->empty();
    if (has_lo != has_hi) {
      bad = "M_lo and M_hi go together (both empty: the row serves its own M only)";
    } else if (has_lo) {
      row.m_lo = get_int("M_lo", 0, 1);
      row.m_hi = get_int("M_hi", 0, 1);
      if (bad.empty() && !(row.m_lo <= row.m && row.m <= row.m_hi)) {
        bad = "M range [" + *lo + ", " + *hi + "] must hold the row's M " + std::to_string(row.m);
      }
    }
    row.solidx = static_cast<int>(get_int("solidx", 0, -1));
    row.split_k = static_cast<int>(get_int("splitK", 0, 0));
    row.us = get_double("us");
    row.err_ratio = get_double("err_ratio");
    row.tflops = get_double("tflops");
    row.bw = get_double("bw");
    if (!bad.empty()) {
      warn(bad + ", row skipped");
      continue;
    }
    out.rows.push_back(std::move(row));
  }
  if (!have_header && line_no > 0) {
    out.warnings.push_back(file + ": no header line, file skipped");
  }
  return out;
}

std::string format_tuned_row(const TableRow& r) {
  return csv::join({r.key.arch, std::to_string(r.key.sm_count), std::to_string(r.m),
                    std::to_string(r.key.n), std::to_string(r.key.k), py_bool(r.key.bias),
                    std::string(dtype_name(r.key.dtype)), std::string(dtype_name(r.key.out_dtype)),
                    py_bool(r.key.scale_ab), py_bool(r.key.bpreshuffle), r.libtype,
                    std::to_string(r.solidx), std::to_string(r.split_k), format_number(r.us),
                    r.kernel_name, format_number(r.err_ratio), format_number(r.tflops),
                    format_number(r.bw), format_epilogue_key(r.key.epilogue),
                    r.m_lo > 0 ? std::to_string(r.m_lo) : "", r.m_hi > 0 ? std::to_string(r.m_hi) : ""});
}

void Table::load_file(const std::string& path, std::vector<std::string>& warnings) {
  std::ifstream in(path);
  if (!in) {
    warnings.push_back(path + ": cannot be opened, no rows loaded from it");
    return;
  }
  ParsedTable parsed = parse_tuned_table(in, path);
  warnings.insert(warnings.end(), parsed.warnings.begin(), parsed.warnings.end());
  add_rows(parsed.rows, &warnings);
}

namespace {

bool ranges_overlap(const TableRow& a, const TableRow& b) {
  return a.range_lo() <= b.range_hi() && b.range_lo() <= a.range_hi();
}

std::string range_text(const TableRow& r) {
  return "M=" + std::to_string(r.m) + " [" + std::to_string(r.range_lo()) + ", " + std::to_string(r.range_hi()) + "]";
}

}  // namespace

void Table::add_rows(const std::vector<TableRow>& rows, std::vector<std::string>* warnings) {
  // Within one file, keep the fastest of duplicate keys and M, then drop rows whose ranges
  // overlap an earlier-kept one; then let the file's rows replace older files' rows they overlap.
  std::unordered_map<TableKey, RowsByM, TableKeyHash> file_rows;
  for (const auto& r : rows) {
    file_arch_sms_[r.file][r.key.arch].insert(r.key.sm_count);
    auto& by_m = file_rows[r.key];
    auto it = by_m.find(r.m);
    if (it == by_m.end() || r.us < it->second.us) by_m[r.m] = r;
  }
  for (auto& [key, by_m] : file_rows) {
    // Kept ranges are disjoint and each holds its row's M, so in M order a row overlapping any
    // kept range overlaps the last one.
    const TableRow* last = nullptr;
    for (auto it = by_m.begin(); it != by_m.end();) {
      if (last != nullptr && ranges_overlap(*last, it->second)) {
        if (warnings) {
          warnings->push_back(it->second.file + ":" + std::to_string(it->second.line) + ": " + range_text(it->second) +
                              " overlaps the row at line " + std::to_string(last->line) + " (" + range_text(*last) +
                              "), row skipped");
        }
        it = by_m.erase(it);
        continue;
      }
      last = &it->second;
      ++it;
    }
    auto& dst = rows_[key];
    for (auto& [m, row] : by_m) {
      for (auto old = dst.begin(); old != dst.end();) {
        old = ranges_overlap(old->second, row) ? dst.erase(old) : std::next(old);
      }
      dst[m] = std::move(row);
    }
  }
}

const Table::RowsByM* Table::rows_for(const TableKey& key) const {
  auto it = rows_.find(key);
  return it == rows_.end() ? nullptr : &it->second;
}

std::size_t Table::size() const {
  std::size_t n = 0;
  for (const auto& [key, by_m] : rows_) n += by_m.size();
  return n;
}

std::vector<int> Table::sm_counts_for_arch(const std::string& arch) const {
  std::set<int> counts;
  for (const auto& [key, by_m] : rows_) {
    if (key.arch == arch) counts.insert(key.sm_count);
  }
  return {counts.begin(), counts.end()};
}

std::vector<std::pair<std::string, std::vector<int>>> Table::files_for_other_sm_counts(const std::string& arch,
                                                                                       int sm_count) const {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (const auto& [file, archs] : file_arch_sms_) {
    auto it = archs.find(arch);
    if (it == archs.end() || it->second.count(sm_count)) continue;
    out.emplace_back(file, std::vector<int>(it->second.begin(), it->second.end()));
  }
  return out;
}

std::vector<const TableRow*> Table::all_rows() const {
  std::vector<const TableRow*> out;
  for (const auto& [key, by_m] : rows_) {
    for (const auto& [m, row] : by_m) out.push_back(&row);
  }
  std::sort(out.begin(), out.end(), [](const TableRow* a, const TableRow* b) {
    return std::make_tuple(a->key.arch, a->key.sm_count, a->key.n, a->key.k, a->key.bias,
                           static_cast<int>(a->key.dtype), static_cast<int>(a->key.out_dtype), a->m) <
           std::make_tuple(b->key.arch, b->key.sm_count, b->key.n, b->key.k, b->key.bias,
                           static_cast<int>(b->key.dtype), static_cast<int>(b->key.out_dtype), b->m);
  });
  return out;
}

}  // namespace tgemm
