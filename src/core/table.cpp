#include "core/table.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
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

// A family's columns: the shared ones, then its own key columns (family_key_fields' order).
std::vector<std::string> family_columns(std::vector<std::string> columns, OpFamily family) {
  if (quantized_family(family)) columns.push_back("scales");
  if (batched_family(family)) columns.insert(columns.end(), {"B", "transpose_a", "transpose_b"});
  return columns;
}

}  // namespace

const std::vector<std::string>& tuned_table_columns(OpFamily family) {
  static const std::vector<std::string> kColumns = {
      "arch", "sm_count", "M",       "N",  "K",          "bias",      "dtype",  "outdtype", "scaleAB",
      "bpreshuffle", "libtype", "solidx", "splitK", "us", "kernelName", "err_ratio", "tflops", "bw", "epilogue", "M_lo", "M_hi"};
  static const std::vector<std::string> kA8W8Columns = family_columns(kColumns, OpFamily::kA8W8);
  static const std::vector<std::string> kBatchedColumns = family_columns(kColumns, OpFamily::kBatched);
  static const std::vector<std::string> kA8W8BatchedColumns = family_columns(kColumns, OpFamily::kA8W8Batched);
  if (family == OpFamily::kA8W8Batched) return kA8W8BatchedColumns;
  return quantized_family(family) ? kA8W8Columns : family == OpFamily::kBatched ? kBatchedColumns : kColumns;
}

const std::vector<std::string>& untuned_table_columns(OpFamily family) {
  static const std::vector<std::string> kColumns = {"M",     "N",        "K",       "bias",       "dtype",
                                                    "outdtype", "scaleAB", "bpreshuffle", "epilogue"};
  static const std::vector<std::string> kA8W8Columns = family_columns(kColumns, OpFamily::kA8W8);
  static const std::vector<std::string> kBatchedColumns = family_columns(kColumns, OpFamily::kBatched);
  static const std::vector<std::string> kA8W8BatchedColumns = family_columns(kColumns, OpFamily::kA8W8Batched);
  if (family == OpFamily::kA8W8Batched) return kA8W8BatchedColumns;
  return quantized_family(family) ? kA8W8Columns : family == OpFamily::kBatched ? kBatchedColumns : kColumns;
}

std::vector<std::string> family_key_fields(const TableKey& key) {
  switch (key.family()) {
    case OpFamily::kA8W8:
    case OpFamily::kA8W8Blockscale: return {std::string(format_scale_recipe(key.a_scale, key.b_scale))};
    case OpFamily::kBatched: return {std::to_string(key.batch), py_bool(key.transpose_a), py_bool(key.transpose_b)};
    case OpFamily::kA8W8Batched:
      return {std::string(format_scale_recipe(key.a_scale, key.b_scale)), std::to_string(key.batch),
              py_bool(key.transpose_a), py_bool(key.transpose_b)};
    case OpFamily::kA16W16: break;
  }
  return {};
}

OpFamily family_of_dtype(DType dtype) {
  return dtype == DType::kFloat8E4M3 || dtype == DType::kFloat8E5M2 || dtype == DType::kInt8 ? OpFamily::kA8W8
                                                                                             : OpFamily::kA16W16;
}

OpFamily family_of_key(const TableKey& key) { return key.family(); }

namespace {

// Bounds of the numbers a row may hold. Dimensions: int32, the bound validate.cpp puts on a
// call's (kernels index rows and columns with int32), so no row describes a problem no call can
// have. The int columns are stored as int: a larger value would be truncated into another,
// valid-looking one (4294967428 SMs would become 132).
constexpr long long kMaxDim = std::numeric_limits<std::int32_t>::max();
constexpr long long kMaxInt = std::numeric_limits<std::int32_t>::max();

// The columns of a header, or why the header is unusable.
struct Header {
  Columns cols;
  std::size_t width = 0;  // fields on the header line: every row must have as many
  std::string error;
};

Header read_header(const std::vector<std::string>& fields) {
  Header h;
  h.width = fields.size();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    // An empty name cannot be asked for, so repeats of it are harmless (a trailing comma).
    if (fields[i].empty()) continue;
    if (!h.cols.index.emplace(fields[i], i).second) {
      h.error = "header names column '" + fields[i] + "' twice (fields " +
                std::to_string(h.cols.index.at(fields[i]) + 1) + " and " + std::to_string(i + 1) + "), file skipped";
      return h;
    }
  }
  for (const char* required : {"arch", "sm_count", "M", "N", "K", "dtype", "libtype", "kernelName"}) {
    if (!h.cols.has(required)) {
      h.error = std::string("header has no '") + required + "' column, file skipped";
      return h;
    }
  }
  return h;
}

// One data line's fields as a row; an empty return means the row is good, else the reason it is
// not (the first problem found).
class RowReader {
 public:
  RowReader(const Columns& cols, const std::vector<std::string>& fields) : cols_(cols), fields_(fields) {}

  std::string read(TableRow* row);

 private:
  const std::string* field(const std::string& name) const {
    auto it = cols_.index.find(name);
    return it == cols_.index.end() ? nullptr : &fields_[it->second];
  }
  void fail(std::string why) {
    if (bad_.empty()) bad_ = std::move(why);
  }
  long long get_int(const char* name, long long dflt, long long min_value, long long max_value);
  bool get_bool(const char* name);
  double get_measure(const char* name);
  DType get_dtype(const char* name, std::optional<DType> dflt);

  const Columns& cols_;
  const std::vector<std::string>& fields_;
  std::string bad_;
};

long long RowReader::get_int(const char* name, long long dflt, long long min_value, long long max_value) {
  const std::string* f = field(name);
  if (!f || f->empty()) {
    if (dflt < min_value) fail(std::string("missing ") + name);
    return dflt;
  }
  auto v = csv::parse_int(*f);
  if (!v) {
    fail(std::string("bad ") + name + " '" + *f + "'");
  } else if (*v < min_value) {
    fail(std::string(name) + " must be >= " + std::to_string(min_value) + ", got " + *f);
  } else if (*v > max_value) {
    fail(std::string(name) + " must be <= " + std::to_string(max_value) + ", got " + *f);
  } else {
    return *v;
  }
  return dflt;
}

bool RowReader::get_bool(const char* name) {
  const std::string* f = field(name);
  if (!f || f->empty()) return false;
  auto v = csv::parse_bool(*f);
  if (!v) fail(std::string("bad ") + name + " '" + *f + "' (expected True or False)");
  return v.value_or(false);
}

// A measured quantity (time, error ratio, rate): finite and >= 0, since a NaN or negative `us`
// would win every "lowest us" comparison against the real measurements of its key.
double RowReader::get_measure(const char* name) {
  const std::string* f = field(name);
  if (!f || f->empty()) return 0;
  auto v = csv::parse_double(*f);
  if (!v) {
    fail(std::string("bad ") + name + " '" + *f + "'");
    return 0;
  }
  if (!std::isfinite(*v) || *v < 0) {
    fail(std::string(name) + " must be a finite number >= 0, got '" + *f + "'");
    return 0;
  }
  return *v;
}

// `dflt` where the field is absent or empty; nullopt: the field is required.
DType RowReader::get_dtype(const char* name, std::optional<DType> dflt) {
  const std::string* f = field(name);
  if ((!f || f->empty()) && dflt) return *dflt;
  auto dt = f ? dtype_from_name(*f) : std::nullopt;
  if (!dt) fail(std::string("unknown ") + name + " '" + (f ? *f : std::string()) + "'");
  return dt.value_or(dflt.value_or(DType::kBFloat16));
}

std::string RowReader::read(TableRow* row) {
  row->key.arch = *field("arch");
  if (row->key.arch.empty()) fail("empty arch");
  row->key.sm_count = static_cast<int>(get_int("sm_count", -1, 1, kMaxInt));
  row->m = get_int("M", -1, 1, kMaxDim);
  row->key.n = get_int("N", -1, 1, kMaxDim);
  row->key.k = get_int("K", -1, 1, kMaxDim);
  row->key.bias = get_bool("bias");
  row->key.scale_ab = get_bool("scaleAB");
  row->key.bpreshuffle = get_bool("bpreshuffle");
  row->key.dtype = get_dtype("dtype", std::nullopt);
  row->key.out_dtype = get_dtype("outdtype", row->key.dtype);
  const std::string* ep = field("epilogue");
  if (ep && !ep->empty()) {
    auto e = parse_epilogue_key(*ep);
    if (!e) fail("unknown epilogue '" + *ep + "' (expected none|gelu|gelu_tanh|relu, optionally +alpha, +c)");
    row->key.epilogue = e.value_or(EpilogueKey{});
  }
  const std::string* scales = field("scales");
  const bool quantized = family_of_dtype(row->key.dtype) == OpFamily::kA8W8;
  if (scales && !scales->empty()) {
    auto recipe = parse_scale_recipe(*scales);
    if (!recipe) {
      fail("unknown scales '" + *scales + "' (expected tensor|token|channel|token_channel|block, or none)");
    } else if (quantized == (recipe->first == ScaleGranularity::kNone)) {
      fail("scales '" + *scales + "' with dtype " + std::string(dtype_name(row->key.dtype)) +
           (quantized ? ": an a8w8 row needs tensor|token|channel|token_channel|block"
                      : ": only a8w8 rows have scales"));
    } else if (recipe->first == ScaleGranularity::kBlock && row->key.dtype != DType::kFloat8E4M3) {
      fail("scales 'block' with dtype " + std::string(dtype_name(row->key.dtype)) +
           ": block scales belong to torch.float8_e4m3fn rows (gemm_a8w8_blockscale)");
    } else {
      row->key.a_scale = recipe->first;
      row->key.b_scale = recipe->second;
    }
  } else if (quantized) {
    // The scales decide the kernel's epilogue and are part of the key: a row that does not say
    // which it was tuned for cannot be matched to a call.
    fail("an a8w8 row (dtype " + std::string(dtype_name(row->key.dtype)) + ") needs a 'scales' value");
  }
  const std::string* batch = field("B");
  if (batch && !batch->empty()) {
    // batched: B, and the stored layouts (part of the key: they choose cuBLASLt's operations).
    row->key.batch = get_int("B", 0, 1, kMaxDim);
    row->key.transpose_a = get_bool("transpose_a");
    row->key.transpose_b = get_bool("transpose_b");
    if (quantized && row->key.a_scale == ScaleGranularity::kBlock) {
      fail("B with scales 'block': batched_gemm_a8w8 takes per-tensor, per-token and per-channel scales");
    } else if (quantized && (row->key.transpose_a || !row->key.transpose_b)) {
      fail(
          "an a8w8 batched row has transpose_a=False, transpose_b=True (a [B, M, K], b [B, N, K]: the only "
          "layout of batched_gemm_a8w8)");
    }
  }
  row->libtype = *field("libtype");
  if (row->libtype.empty()) fail("empty libtype");
  row->kernel_name = *field("kernelName");
  if (row->kernel_name.empty()) fail("empty kernelName");
  const std::string* lo = field("M_lo");
  const std::string* hi = field("M_hi");
  const bool has_lo = lo && !lo->empty(), has_hi = hi && !hi->empty();
  if (has_lo != has_hi) {
    fail("M_lo and M_hi go together (both empty: the row serves its own M only)");
  } else if (has_lo) {
    row->m_lo = get_int("M_lo", 0, 1, kMaxDim);
    row->m_hi = get_int("M_hi", 0, 1, kMaxDim);
    if (bad_.empty() && !(row->m_lo <= row->m && row->m <= row->m_hi)) {
      fail("M range [" + *lo + ", " + *hi + "] must hold the row's M " + std::to_string(row->m));
    }
  }
  row->solidx = static_cast<int>(get_int("solidx", 0, -1, kMaxInt));
  row->split_k = static_cast<int>(get_int("splitK", 0, 0, kMaxInt));
  row->us = get_measure("us");
  row->err_ratio = get_measure("err_ratio");
  row->tflops = get_measure("tflops");
  row->bw = get_measure("bw");
  return bad_;
}

}  // namespace

ParsedTable parse_tuned_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits) {
  ParsedTable out;
  csv::LineReader reader(in, limits);
  std::string line;
  Header header;
  bool have_header = false;
  int data_lines = 0;
  auto warn = [&](const std::string& why) {
    out.warnings.push_back(file + ":" + std::to_string(reader.line_no()) + ": " + why);
  };
  while (reader.next(&line)) {
    std::string_view view(line);
    if (view.find_first_not_of(" \t") == std::string_view::npos || view.front() == '#') continue;
    auto fields = csv::split_line(view);
    if (!have_header) {
      if (!fields) {
        warn("malformed header (unterminated quote), file skipped");
        return out;
      }
      header = read_header(*fields);
      if (!header.error.empty()) {
        warn(header.error);
        return out;
      }
      have_header = true;
      continue;
    }
    ++data_lines;
    if (!fields) {
      warn("malformed line (unterminated quote), row skipped");
      continue;
    }
    if (fields->size() != header.width) {
      warn("malformed line: " + std::to_string(fields->size()) + " fields where the header has " +
           std::to_string(header.width) + ", row skipped");
      continue;
    }
    TableRow row;
    row.file = file;
    row.line = reader.line_no();
    const std::string bad = RowReader(header.cols, *fields).read(&row);
    if (!bad.empty()) {
      warn(bad + ", row skipped");
      continue;
    }
    out.rows.push_back(std::move(row));
  }
  if (reader.stop() != csv::LineReader::Stop::kEnd) {
    out.warnings.push_back(file + ": " + reader.stop_reason() + ", the rest of the file is not read");
  } else if (!have_header && reader.line_no() > 0) {
    out.warnings.push_back(file + ": no header line, file skipped");
  } else if (have_header && out.rows.empty()) {
    out.warnings.push_back(file + (data_lines == 0 ? ": a header and no rows, no rows loaded from it"
                                                   : ": none of its " + std::to_string(data_lines) +
                                                         " data lines is a usable row, no rows loaded from it"));
  }
  return out;
}

std::string format_tuned_row(const TableRow& r) {
  std::vector<std::string> fields = {r.key.arch,
                                     std::to_string(r.key.sm_count),
                                     std::to_string(r.m),
                                     std::to_string(r.key.n),
                                     std::to_string(r.key.k),
                                     py_bool(r.key.bias),
                                     std::string(dtype_name(r.key.dtype)),
                                     std::string(dtype_name(r.key.out_dtype)),
                                     py_bool(r.key.scale_ab),
                                     py_bool(r.key.bpreshuffle),
                                     r.libtype,
                                     std::to_string(r.solidx),
                                     std::to_string(r.split_k),
                                     format_number(r.us),
                                     r.kernel_name,
                                     format_number(r.err_ratio),
                                     format_number(r.tflops),
                                     format_number(r.bw),
                                     format_epilogue_key(r.key.epilogue),
                                     r.m_lo > 0 ? std::to_string(r.m_lo) : "",
                                     r.m_hi > 0 ? std::to_string(r.m_hi) : ""};
  for (std::string& f : family_key_fields(r.key)) fields.push_back(std::move(f));
  return csv::join(fields);
}

void Table::load_file(const std::string& path, std::vector<std::string>& warnings) {
  // A directory opens as a stream that reads nothing, which would load no rows without a word.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    warnings.push_back(path + ": is a directory, not a table file; no rows loaded from it");
    return;
  }
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    warnings.push_back(path + ": cannot be opened" + (err != 0 ? std::string(" (") + std::strerror(err) + ")" : "") +
                       ", no rows loaded from it");
    return;
  }
  ParsedTable parsed = parse_tuned_table(in, path);
  warnings.insert(warnings.end(), parsed.warnings.begin(), parsed.warnings.end());
  add_rows(parsed.rows, &warnings);
}

namespace {

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
      if (last != nullptr && last->overlaps(it->second)) {
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
        old = old->second.overlaps(row) ? dst.erase(old) : std::next(old);
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
    return std::make_tuple(a->key.arch, a->key.sm_count, a->key.batch, a->key.n, a->key.k, a->key.bias,
                           static_cast<int>(a->key.dtype), static_cast<int>(a->key.out_dtype), a->m) <
           std::make_tuple(b->key.arch, b->key.sm_count, b->key.batch, b->key.n, b->key.k, b->key.bias,
                           static_cast<int>(b->key.dtype), static_cast<int>(b->key.out_dtype), b->m);
  });
  return out;
}

}  // namespace tgemm
