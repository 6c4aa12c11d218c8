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
#include "core/table_rows.h"

namespace tgemm {
namespace {

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

// One data line's fields as a row; an empty return means the row is good, else the reason it is
// not (the first problem found).
class RowReader : public RowFields {
 public:
  using RowFields::RowFields;
  std::string read(TableRow* row);
};

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
    if (bad().empty() && !(row->m_lo <= row->m && row->m <= row->m_hi)) {
      fail("M range [" + *lo + ", " + *hi + "] must hold the row's M " + std::to_string(row->m));
    }
  }
  row->solidx = static_cast<int>(get_int("solidx", 0, -1, kMaxInt));
  row->split_k = static_cast<int>(get_int("splitK", 0, 0, kMaxInt));
  row->us = get_measure("us");
  row->err_ratio = get_measure("err_ratio");
  row->tflops = get_measure("tflops");
  row->bw = get_measure("bw");
  return bad();
}

}  // namespace

ParsedTable parse_tuned_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits) {
  ParsedTable out;
  TableScan scan =
      read_table_rows(in, file, limits, {"arch", "sm_count", "M", "N", "K", "dtype", "libtype", "kernelName"},
                      [&](const TableColumns& cols, const std::vector<std::string>& fields, int line) {
                        TableRow row;
                        row.file = file;
                        row.line = line;
                        std::string bad = RowReader(cols, fields).read(&row);
                        if (bad.empty()) out.rows.push_back(std::move(row));
                        return bad;
                      });
  out.warnings = std::move(scan.warnings);
  if (scan.read_to_end && scan.have_header && out.rows.empty()) {
    out.warnings.push_back(file + (scan.data_lines == 0 ? ": a header and no rows, no rows loaded from it"
                                                        : ": none of its " + std::to_string(scan.data_lines) +
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
                                     format_measure(r.us),
                                     r.kernel_name,
                                     format_measure(r.err_ratio),
                                     format_measure(r.tflops),
                                     format_measure(r.bw),
                                     format_epilogue_key(r.key.epilogue),
                                     r.m_lo > 0 ? std::to_string(r.m_lo) : "",
                                     r.m_hi > 0 ? std::to_string(r.m_hi) : ""};
  for (std::string& f : family_key_fields(r.key)) fields.push_back(std::move(f));
  return csv::join(fields);
}

void Table::load_file(const std::string& path, std::vector<std::string>& warnings) {
  std::ifstream in;
  if (!open_table_file(path, &in, warnings)) return;
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
