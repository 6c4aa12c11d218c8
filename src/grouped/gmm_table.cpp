#include "grouped/gmm_table.h"

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
  return hash_key(
      k.arch, {static_cast<std::size_t>(k.sm_count), static_cast<std::size_t>(k.groups),
               static_cast<std::size_t>(k.rows_per_group), static_cast<std::size_t>(k.n), static_cast<std::size_t>(k.k),
               static_cast<std::size_t>(k.rhs_nk) | static_cast<std::size_t>(k.bias) << 1 |
                   static_cast<std::size_t>(k.dtype) << 2 | static_cast<std::size_t>(k.out_dtype) << 10});
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
  static const std::vector<std::string> kColumns = with_race_columns(
      {"arch", "sm_count", "G", "rows_per_group", "M", "N", "K", "rhs", "dtype", "outdtype", "bias", "solution"});
  return kColumns;
}

const std::vector<std::string>& gmm_untuned_columns() {
  static const std::vector<std::string> kColumns = {"G", "M", "N", "K", "rhs", "dtype", "outdtype", "bias"};
  return kColumns;
}

namespace {

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
  key.sm_count = static_cast<int>(get_int("sm_count", -1, 1, kMaxTableDim));
  key.groups = get_int("G", -1, 1, kMaxTableDim);
  key.rows_per_group = get_bucket("rows_per_group", "gmm_rows_bucket");
  row->m = get_race_size(
      "M", [&key](long long m) { return gmm_rows_bucket(m, key.groups); }, key.rows_per_group, "rows_per_group",
      " with G=" + std::to_string(key.groups));
  key.n = get_int("N", -1, 1, kMaxTableDim);
  key.k = get_int("K", -1, 1, kMaxTableDim);
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
  get_race(row);
  return bad();
}

}  // namespace

ParsedGmmTable parse_gmm_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits) {
  return parse_keyed_rows<GmmRow, GmmRowReader>(
      in, file, limits, {"arch", "sm_count", "G", "rows_per_group", "N", "K", "rhs", "dtype", "solution"});
}

std::string format_gmm_row(const GmmRow& r) {
  return format_race_row(
      {r.key.arch, std::to_string(r.key.sm_count), std::to_string(r.key.groups), std::to_string(r.key.rows_per_group),
       r.m > 0 ? std::to_string(r.m) : "", std::to_string(r.key.n), std::to_string(r.key.k), gmm_rhs_name(r.key.rhs_nk),
       std::string(dtype_name(r.key.dtype)), std::string(dtype_name(r.key.out_dtype)), py_bool(r.key.bias), r.solution},
      r);
}

std::string format_gmm_untuned_row(const GmmKey& key) {
  return csv::join({std::to_string(key.groups), std::to_string(key.groups * key.rows_per_group), std::to_string(key.n),
                    std::to_string(key.k), gmm_rhs_name(key.rhs_nk), std::string(dtype_name(key.dtype)),
                    std::string(dtype_name(key.out_dtype)), py_bool(key.bias)});
}

}  // namespace tgemm
