#include "grouped/gmm_table.h"

#include <functional>
#include <limits>
#include <optional>

#include "core/table_rows.h"

namespace tgemm {

std::int64_t gmm_rows_bucket(std::int64_t m, std::int64_t groups) {
  if (m <= 0 || groups <= 0) return 0;
  const std::int64_t per_group = m / groups + (m % groups != 0 ? 1 : 0);
  std::int64_t b = 1;
  while (b < per_group) b *= 2;
  return b;
}

bool GmmKey::operator==(const GmmKey& o) const {
  return arch == o.arch && sm_count == o.sm_count && groups == o.groups && rows_per_group == o.rows_per_group &&
         n == o.n && k == o.k && rhs_nk == o.rhs_nk && dtype == o.dtype && out_dtype == o.out_dtype && bias == o.bias;
}

std::string GmmKey::describe() const {
  return "G=" + std::to_string(groups) + " rows_per_group=" + std::to_string(rows_per_group) +
         " N=" + std::to_string(n) + " K=" + std::to_string(k) + " rhs=" + gmm_rhs_name(rhs_nk) +
         " dtype=" + std::string(dtype_name(dtype)) + " outdtype=" + std::string(dtype_name(out_dtype)) +
         " bias=" + (bias ? "True" : "False");
}

std::size_t GmmKeyHash::operator()(const GmmKey& k) const noexcept {
  std::size_t h = std::hash<std::string>()(k.arch);
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<std::size_t>(k.sm_count));
  mix(static_cast<std::size_t>(k.groups));
  mix(static_cast<std::size_t>(k.rows_per_group));
  mix(static_cast<std::size_t>(k.n));
  mix(static_cast<std::size_t>(k.k));
  mix(static_cast<std::size_t>(k.rhs_nk) | static_cast<std::size_t>(k.bias) << 1 |
      static_cast<std::size_t>(k.dtype) << 2 | static_cast<std::size_t>(k.out_dtype) << 10);
  return h;
}

GmmKey gmm_key(std::int64_t m, std::int64_t groups, std::int64_t n, std::int64_t k, bool rhs_nk, DType dtype,
               DType out_dtype, bool bias, const std::string& arch, int sm_count) {
  GmmKey key;
  key.arch = arch;
  key.sm_count = sm_count;
  key.groups = groups;
  key.rows_per_group = gmm_rows_bucket(m, groups);
  key.n = n;
  key.k = k;
  key.rhs_nk = rhs_nk;
  key.dtype = dtype;
  key.out_dtype = out_dtype;
  key.bias = bias;
  return key;
}

const char* gmm_rhs_name(bool rhs_nk) { return rhs_nk ? "gnk" : "gkn"; }

const std::vector<std::string>& gmm_tuned_columns() {
  static const std::vector<std::string> kColumns = {
      "arch", "sm_count",  "G",       "rows_per_group", "M",      "N",
      "K",    "rhs",       "dtype",   "outdtype",       "bias",   "solution",
      "us",   "us_skewed", "speedup", "speedup_skewed", "default"};
  return kColumns;
}

const std::vector<std::string>& gmm_untuned_columns() {
  static const std::vector<std::string> kColumns = {"G", "M", "N", "K", "rhs", "dtype", "outdtype", "bias"};
  return kColumns;
}

namespace {

// Dimensions within int32: the bound validate_gmm puts on a call's (the kernels index with int32).
constexpr long long kMaxDim = std::numeric_limits<std::int32_t>::max();

bool is_power_of_two(long long v) { return v > 0 && (v & (v - 1)) == 0; }

// One data line's fields as a row: an empty return means the row is good, else the first reason
// it is not.
class GmmRowReader : public RowFields {
 public:
  using RowFields::RowFields;
  std::string read(GmmRow* row);

 private:
  std::optional<DType> get_optional_dtype(const char* name) {
    const std::string* f = field(name);
    if (f == nullptr || f->empty()) return std::nullopt;
    auto dt = dtype_from_name(*f);
    if (!dt) fail(std::string("unknown ") + name + " '" + *f + "'");
    return dt;
  }
};

std::string GmmRowReader::read(GmmRow* row) {
  GmmKey& key = row->key;
  key.arch = *field("arch");
  if (key.arch.empty()) fail("empty arch");
  key.sm_count = static_cast<int>(get_int("sm_count", -1, 1, kMaxDim));
  key.groups = get_int("G", -1, 1, kMaxDim);
  key.rows_per_group = get_int("rows_per_group", -1, 1, kMaxDim);
  if (bad().empty() && !is_power_of_two(key.rows_per_group)) {
    fail("rows_per_group must be a power of two (a bucket of gmm_rows_bucket), got " +
         std::to_string(key.rows_per_group));
  }
  const std::string* m = field("M");
  row->m = m != nullptr && !m->empty() ? get_int("M", 0, 1, kMaxDim) : 0;
  if (bad().empty() && row->m > 0 && gmm_rows_bucket(row->m, key.groups) != key.rows_per_group) {
    fail("M=" + std::to_string(row->m) + " with G=" + std::to_string(key.groups) + " is in bucket " +
         std::to_string(gmm_rows_bucket(row->m, key.groups)) + ", not rows_per_group " +
         std::to_string(key.rows_per_group));
  }
  key.n = get_int("N", -1, 1, kMaxDim);
  key.k = get_int("K", -1, 1, kMaxDim);
  const std::string& rhs = *field("rhs");
  if (rhs == "gnk" || rhs == "gkn") {
    key.rhs_nk = rhs == "gnk";
  } else {
    fail("rhs must be gkn ([G, K, N]) or gnk ([G, N, K]), got '" + rhs + "'");
  }
  const auto dtype = get_optional_dtype("dtype");
  if (!dtype) {
    fail("missing dtype");
  } else if (*dtype != DType::kBFloat16 && *dtype != DType::kFloat16) {
    fail("dtype must be torch.bfloat16 or torch.float16 (gmm's inputs), got " + std::string(dtype_name(*dtype)));
  }
  key.dtype = dtype.value_or(DType::kBFloat16);
  const auto out = get_optional_dtype("outdtype");
  key.out_dtype = out.value_or(key.dtype);
  if (out && *out != key.dtype && *out != DType::kFloat32) {
    fail("outdtype must be dtype or torch.float32, got " + std::string(dtype_name(*out)));
  }
  const std::string* bias = field("bias");
  if (bias != nullptr && !bias->empty()) {
    const auto b = csv::parse_bool(*bias);
    if (!b) fail("bad bias '" + *bias + "' (expected True or False)");
    key.bias = b.value_or(false);
  }
  row->solution = *field("solution");
  if (row->solution.empty()) fail("empty solution");
  row->us = get_measure("us");
  row->us_skewed = get_measure("us_skewed");
  row->speedup = get_measure("speedup");
  row->speedup_skewed = get_measure("speedup_skewed");
  if (const std::string* d = field("default")) row->default_solution = *d;
  return bad();
}

}  // namespace

ParsedGmmTable parse_gmm_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits) {
  ParsedGmmTable out;
  TableScan scan = read_table_rows(in, file, limits,
                                   {"arch", "sm_count", "G", "rows_per_group", "N", "K", "rhs", "dtype", "solution"},
                                   [&](const TableColumns& cols, const std::vector<std::string>& fields, int line) {
                                     GmmRow row;
                                     row.file = file;
                                     row.line = line;
                                     std::string bad = GmmRowReader(cols, fields).read(&row);
                                     if (bad.empty()) out.rows.push_back(std::move(row));
                                     return bad;
                                   });
  out.warnings = std::move(scan.warnings);
  return out;
}

std::string format_gmm_row(const GmmRow& r) {
  return csv::join({r.key.arch, std::to_string(r.key.sm_count), std::to_string(r.key.groups),
                    std::to_string(r.key.rows_per_group), r.m > 0 ? std::to_string(r.m) : "", std::to_string(r.key.n),
                    std::to_string(r.key.k), gmm_rhs_name(r.key.rhs_nk), std::string(dtype_name(r.key.dtype)),
                    std::string(dtype_name(r.key.out_dtype)), py_bool(r.key.bias), r.solution, format_measure(r.us),
                    format_measure(r.us_skewed), format_measure(r.speedup), format_measure(r.speedup_skewed),
                    r.default_solution});
}

std::string format_gmm_untuned_row(const GmmKey& key) {
  return csv::join({std::to_string(key.groups), std::to_string(key.groups * key.rows_per_group), std::to_string(key.n),
                    std::to_string(key.k), gmm_rhs_name(key.rhs_nk), std::string(dtype_name(key.dtype)),
                    std::string(dtype_name(key.out_dtype)), py_bool(key.bias)});
}

}  // namespace tgemm
