// The tuned table of gmm (configs/tuned_gmm.csv, configs/<card>/tuned_gmm.csv, or the files of
// TGEMM_CONFIG_GMM, ':'-separated and merged in order): which grouped solution serves a key, as
// measured by `tgemm tune-gmm` against gmm's default rule. Host-only.
//
// Columns (found by name, any order, unknown columns ignored):
//   arch, sm_count   the GPU the row was measured on (rows of another arch or SM count never serve)
//   G                the groups
//   rows_per_group   the bucket of the expected rows per group (gmm_rows_bucket): a power of two b;
//                    the row serves calls whose ceil(M / G) lies in (b / 2, b]. Group sizes live on
//                    the device, so the key holds what the host knows: M (lhs's rows) and G.
//   M                optional: the total rows the race used (its ceil(M / G) must lie in the bucket)
//   N, K             out [M, N], lhs [M, K]
//   rhs              gkn (rhs [G, K, N], transpose_rhs false) | gnk (rhs [G, N, K], transpose_rhs true)
//   dtype            torch.bfloat16 | torch.float16 (lhs and rhs)
//   outdtype         optional, default dtype: torch.bfloat16 | torch.float16 | torch.float32
//   bias             optional, default False: True | False
//   solution         tile (the WMMA tile kernels) or a CUTLASS grouped instance name
//                    (sm90_grouped_bf16_bk_128x128x64_coop, src/grouped/gmm_cutlass.h)
//   us, us_skewed    optional: the solution's median time on the uniform and the skewed routing
//   speedup, speedup_skewed  optional: the default's time over the solution's (paired rounds)
//   default          optional: the default rule's solution the row was measured against
// A malformed row is one warning naming file and line, and is skipped. Within one file a repeated
// key keeps the row with the lowest `us`; a later file's row replaces an earlier file's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <tuple>
#include <vector>

#include "core/csv.h"
#include "core/keyed_table.h"
#include "core/settings.h"
#include "tgemm/tensor.h"

namespace tgemm {

// The bucket of a call's expected rows per group: the smallest power of two >= ceil(m / groups)
// (so 1, 2, 4, 8, ...); 0 for groups <= 0 or m <= 0 (no row serves such a call).
std::int64_t gmm_rows_bucket(std::int64_t m, std::int64_t groups);

struct GmmKey {
  std::string arch;  // "sm_90a"
  int sm_count = 0;
  std::int64_t groups = 0;
  std::int64_t rows_per_group = 0;  // gmm_rows_bucket
  std::int64_t n = 0, k = 0;
  bool rhs_nk = false;  // rhs [G, N, K] (transpose_rhs); else [G, K, N]
  DType dtype = DType::kBFloat16;
  DType out_dtype = DType::kBFloat16;
  bool bias = false;

  bool operator==(const GmmKey& o) const;
  // "G=8 rows_per_group=1024 N=4096 K=7168 rhs=gnk dtype=torch.bfloat16 outdtype=torch.bfloat16 bias=False"
  std::string describe() const;
};

struct GmmKeyHash {
  std::size_t operator()(const GmmKey& k) const noexcept;
};

// The key of a call with M rows (lhs [M, K]) on a device of `arch` and `sm_count`.
GmmKey gmm_key(std::int64_t m, std::int64_t groups, std::int64_t n, std::int64_t k, bool rhs_nk, DType dtype,
               DType out_dtype, bool bias, const std::string& arch, int sm_count);

// The `rhs` column: "gnk" for rhs [G, N, K], "gkn" for [G, K, N].
const char* gmm_rhs_name(bool rhs_nk);

struct GmmRow {
  GmmKey key;
  std::int64_t m = 0;    // the race's total rows; 0 when the file does not say
  std::string solution;  // "tile" or a CUTLASS grouped instance name
  double us = 0, us_skewed = 0;
  double speedup = 0, speedup_skewed = 0;
  std::string default_solution;
  std::string file;
  int line = 0;
};

// The solution name of the WMMA tile kernels in the table.
inline constexpr const char* kGmmTileSolution = "tile";

// Column names of the tuned table, in the order tgemm writes them.
const std::vector<std::string>& gmm_tuned_columns();
// Column names of the untuned table (the capture's rows, tgemm tune-gmm's input).
const std::vector<std::string>& gmm_untuned_columns();

using ParsedGmmTable = ParsedRows<GmmRow>;

// Parses a tuned gmm table. A header lacking a required column or naming one twice skips the file
// (one warning); a malformed line is one warning and skipped.
ParsedGmmTable parse_gmm_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits = {});

// A row as a CSV line in gmm_tuned_columns() order.
std::string format_gmm_row(const GmmRow& row);

// One untuned key: the row of gmm_untuned_columns() for a call, at the bucket's representative M
// (groups x rows_per_group, the bucket's top), so each bucket is one row and `tgemm tune-gmm`
// races it where the bucket's calls are largest.
std::string format_gmm_untuned_row(const GmmKey& key);

struct GmmTableTraits {
  using Key = GmmKey;
  using Row = GmmRow;
  using Hash = GmmKeyHash;
  static constexpr const char* kName = "gmm";
  static constexpr const char* kTuneCommand = "tgemm tune-gmm";
  static ParsedGmmTable parse(std::istream& in, const std::string& file) { return parse_gmm_table(in, file); }
  static std::string untuned_row(const GmmKey& key) { return format_gmm_untuned_row(key); }
  static const std::vector<std::string>& untuned_columns() { return gmm_untuned_columns(); }
  static const FamilyInfo& family() { return gmm_family_info(); }
  static auto order(const GmmKey& k) {
    return std::make_tuple(k.arch, k.sm_count, k.groups, k.n, k.k, k.rhs_nk, static_cast<int>(k.dtype),
                           static_cast<int>(k.out_dtype), k.bias, k.rows_per_group);
  }
};

// gmm's table: one row per key (core/keyed_table.h).
using GmmTable = KeyedTable<GmmTableTraits>;
// gmm's tables of one configuration (one reload_config): the files of Settings::gmm, each device's
// card file where the shipped directory has one (configs/<card>/tuned_gmm.csv, used alone, as the
// other families' card tables), the TGEMM_TUNE_GEMM capture of untuned keys and the
// TGEMM_LOG_TUNED_CONFIG log. Thread-safe.
using GmmTables = KeyedTables<GmmTableTraits>;

}  // namespace tgemm
