// The tuned table of sparse_gemm (configs/sparse_tuned_gemm.csv, or the files of
// TGEMM_CONFIG_GEMM_SPARSE, ':'-separated): which backend, cuSPARSELt configuration id and split-K
// serve a problem. Host-only. Columns, in any order, extra columns ignored:
//   pattern   2:4 | csr | block
//   density   the weight's density bucket (sparse_density_bucket; 0.5 for 2:4)
//   block_size the block's side for block rows (optional column, 0 elsewhere; required > 0 on a
//             block row)
//   M, N, K   the problem; optional M_lo, M_hi: the row also serves M in [M_lo, M_hi]
//   dtype     torch.bfloat16 | torch.float16 | torch.float8_e4m3fn (2:4 only) (or short names)
//   backend   cusparselt | cusparse | dense
//   algorithm cuSPARSELt's configuration id (2:4) or the cusparseSpMMAlg_t value (csr, block),
//             -1 for the default (optional, default -1)
//   split_k   cuSPARSELt's split-K, 0 for its default (optional, default 0)
// A row naming "dense" says dense is faster at that density: sparse_gemm takes it where the
// weight carries its dense copy (SparseWeight::with_dense) and the default rule otherwise.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tgemm/sparse.h"

namespace tgemm {

// The density bucket of a weight: the smallest of 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1 that
// is >= density (CSR at 4% and 5% share a row; 2:4 weights are always 0.5).
double sparse_density_bucket(double density);

struct SparseChoice {
  SparseBackend backend = SparseBackend::kDefault;
  int algorithm = -1;
  int split_k = 0;
  std::string where;  // "file:line" of the row
};

class SparseTable {
 public:
  // Adds the rows of `in` (named `file` in messages). Throws tgemm::Error naming file, line, column
  // and value for a malformed row or a missing required column.
  void add(std::istream& in, const std::string& file);
  // The row for this problem: M exact first, then a row whose [M_lo, M_hi] holds M; nullopt where
  // none does.
  std::optional<SparseChoice> find(SparsePattern pattern, double density, std::int64_t block_size, std::int64_t m,
                                   std::int64_t n, std::int64_t k, DType dtype) const;
  std::size_t rows() const { return rows_; }

 private:
  struct Row {
    std::int64_t m, m_lo, m_hi;
    SparseChoice choice;
  };
  using Key = std::tuple<int, double, std::int64_t, std::int64_t, std::int64_t, int>;
  std::map<Key, std::vector<Row>> rows_by_key_;
  std::size_t rows_ = 0;
};

}  // namespace tgemm
