#include "sparse/sparse_table.h"

#include <cmath>
#include <unordered_map>

#include "core/check.h"
#include "core/csv.h"

namespace tgemm {

double sparse_density_bucket(double density) {
  for (double b : {0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5}) {
    if (density <= b) return b;
  }
  return 1.0;
}

namespace {

constexpr std::string_view kOp = "sparse table";

std::optional<SparsePattern> pattern_from_name(const std::string& s) {
  if (s == "2:4") return SparsePattern::k2of4;
  if (s == "csr") return SparsePattern::kCsr;
  if (s == "block") return SparsePattern::kBlock;
  return std::nullopt;
}

std::optional<SparseBackend> backend_from_name(const std::string& s) {
  for (SparseBackend b : {SparseBackend::kCusparselt, SparseBackend::kCusparse, SparseBackend::kDense}) {
    if (s == sparse_backend_name(b)) return b;
  }
  return std::nullopt;
}

// One row's fields by column name, with the location for messages.
struct Fields {
  const std::unordered_map<std::string, std::size_t>& column;
  const std::vector<std::string>& values;
  const std::string& where;

  const std::string* get(const char* name) const {
    auto it = column.find(name);
    return it == column.end() || it->second >= values.size() ? nullptr : &values[it->second];
  }
  long long integer(const char* name, std::optional<long long> fallback = std::nullopt) const {
    const std::string* v = get(name);
    if ((v == nullptr || v->empty()) && fallback) return *fallback;
    TGEMM_CHECK(v != nullptr, kOp, where, ": column ", name, " is missing");
    auto parsed = csv::parse_int(*v);
    TGEMM_CHECK(parsed.has_value(), kOp, where, ": ", name, " must be an integer, got '", *v, "'");
    return *parsed;
  }
};

}  // namespace

void SparseTable::add(std::istream& in, const std::string& file) {
  csv::LineReader reader(in);
  std::string line;
  std::unordered_map<std::string, std::size_t> column;
  while (reader.next(&line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::string where = file + ":" + std::to_string(reader.line_no());
    auto values = csv::split_line(line);
    TGEMM_CHECK(values.has_value(), kOp, where, ": unterminated quote");
    if (column.empty()) {
      for (std::size_t i = 0; i < values->size(); ++i) column[(*values)[i]] = i;
      for (const char* required : {"pattern", "density", "M", "N", "K", "dtype", "backend"}) {
        TGEMM_CHECK(column.count(required) != 0, kOp, where, ": the header has no column ", required);
      }
      continue;
    }
    const Fields f{column, *values, where};
    const auto pattern = pattern_from_name(*f.get("pattern"));
    TGEMM_CHECK(pattern.has_value(), kOp, where, ": pattern must be 2:4, csr or block, got '", *f.get("pattern"), "'");
    const auto density = csv::parse_double(*f.get("density"));
    TGEMM_CHECK(density && *density > 0 && *density <= 1, kOp, where, ": density must be in (0, 1], got '",
                *f.get("density"), "'");
    const auto dtype = dtype_from_name(*f.get("dtype"));
    const bool fp8 = dtype == DType::kFloat8E4M3 && *pattern == SparsePattern::k2of4;
    TGEMM_CHECK(dtype == DType::kBFloat16 || dtype == DType::kFloat16 || fp8, kOp, where,
                ": dtype must be torch.bfloat16 or torch.float16 (or torch.float8_e4m3fn on a 2:4 row), got '",
                *f.get("dtype"), "'");
    const auto backend = backend_from_name(*f.get("backend"));
    TGEMM_CHECK(backend.has_value(), kOp, where, ": backend must be cusparselt, cusparse or dense, got '",
                *f.get("backend"), "'");
    TGEMM_CHECK(*backend != SparseBackend::kCusparselt || *pattern == SparsePattern::k2of4, kOp, where,
                ": backend cusparselt serves 2:4 rows only");
    TGEMM_CHECK(*backend != SparseBackend::kCusparse || *pattern != SparsePattern::k2of4, kOp, where,
                ": backend cusparse serves csr and block rows only");
    const long long block_size = f.integer("block_size", 0);
    TGEMM_CHECK((*pattern == SparsePattern::kBlock) == (block_size > 0) && block_size >= 0, kOp, where,
                ": block_size must be positive on a block row and 0 (or empty) elsewhere, got ", block_size);
    Row row;
    row.m = f.integer("M");
    const long long n = f.integer("N"), k = f.integer("K");
    TGEMM_CHECK(row.m > 0 && n > 0 && k > 0, kOp, where, ": M, N and K must be positive, got ", row.m, ", ", n, ", ",
                k);
    row.m_lo = f.integer("M_lo", row.m);
    row.m_hi = f.integer("M_hi", row.m);
    TGEMM_CHECK(row.m_lo <= row.m && row.m <= row.m_hi, kOp, where, ": M_lo <= M <= M_hi must hold, got ", row.m_lo,
                ", ", row.m, ", ", row.m_hi);
    row.choice.backend = *backend;
    row.choice.algorithm = static_cast<int>(f.integer("algorithm", -1));
    row.choice.split_k = static_cast<int>(f.integer("split_k", 0));
    TGEMM_CHECK(row.choice.algorithm >= -1 && row.choice.split_k >= 0, kOp, where,
                ": algorithm must be >= -1 and split_k >= 0, got ", row.choice.algorithm, ", ", row.choice.split_k);
    row.choice.where = where;
    const Key key{static_cast<int>(*pattern), sparse_density_bucket(*density), block_size, n, k,
                  static_cast<int>(*dtype)};
    rows_by_key_[key].push_back(row);
    ++rows_;
  }
  TGEMM_CHECK(reader.stop() == csv::LineReader::Stop::kEnd || reader.stop() == csv::LineReader::Stop::kNone, kOp, file,
              ": ", reader.stop_reason());
}

std::optional<SparseChoice> SparseTable::find(SparsePattern pattern, double density, std::int64_t block_size,
                                              std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const {
  const Key key{static_cast<int>(pattern), sparse_density_bucket(density), block_size, n, k, static_cast<int>(dtype)};
  auto it = rows_by_key_.find(key);
  if (it == rows_by_key_.end()) return std::nullopt;
  for (const Row& r : it->second) {
    if (r.m == m) return r.choice;
  }
  for (const Row& r : it->second) {
    if (r.m_lo <= m && m <= r.m_hi) return r.choice;
  }
  return std::nullopt;
}

}  // namespace tgemm
