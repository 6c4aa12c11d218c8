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

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/capture.h"
#include "core/csv.h"
#include "core/platform.h"
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

struct ParsedGmmTable {
  std::vector<GmmRow> rows;
  std::vector<std::string> warnings;  // "file:line: reason, row skipped", one per skipped line
};

// Parses a tuned gmm table. A header lacking a required column or naming one twice skips the file
// (one warning); a malformed line is one warning and skipped.
ParsedGmmTable parse_gmm_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits = {});

// A row as a CSV line in gmm_tuned_columns() order.
std::string format_gmm_row(const GmmRow& row);

// One untuned key: the row of gmm_untuned_columns() for a call, at the bucket's representative M
// (groups x rows_per_group, the bucket's top), so each bucket is one row and `tgemm tune-gmm`
// races it where the bucket's calls are largest.
std::string format_gmm_untuned_row(const GmmKey& key);

class GmmTable {
 public:
  // Reads `path`; a missing or unreadable file is a warning, not an error.
  void load_file(const std::string& path, std::vector<std::string>& warnings);
  // The rows of one file: within it a repeated key keeps the lowest us; they replace earlier
  // files' rows of their keys.
  void add_rows(const std::vector<GmmRow>& rows_of_one_file);
  // The row of this key; nullptr if none.
  const GmmRow* find(const GmmKey& key) const;
  std::size_t size() const { return rows_.size(); }
  // SM counts of `arch` with rows in some file, where none has `sm_count`: a table of another GPU
  // of the same architecture, none of whose rows apply here (one warning says so).
  std::vector<int> other_sm_counts(const std::string& arch, int sm_count) const;
  // Every row, ordered by key.
  std::vector<const GmmRow*> all_rows() const;

 private:
  std::unordered_map<GmmKey, GmmRow, GmmKeyHash> rows_;
  std::map<std::string, std::set<int>> arch_sms_;
};

// gmm's tables of one configuration (one reload_config): the files of Settings::gmm, each device's
// card file where the shipped directory has one (configs/<card>/tuned_gmm.csv, used alone, as the
// other families' card tables), the TGEMM_TUNE_GEMM capture of untuned keys and the
// TGEMM_LOG_TUNED_CONFIG log. Thread-safe.
class GmmTables {
 public:
  GmmTables(FamilySettings settings, bool capture, bool log_choices);

  // The table of dev's card where one exists, else the shared table (env list or shipped file);
  // each loaded once, its warnings logged, with one warning where its rows are for another SM
  // count of dev's arch. Remembered per device ordinal, so later calls take no lock and allocate
  // nothing (gmm consults it on every call, CUDA-graph capture included).
  const GmmTable& table_for(const DeviceInfo& dev);
  // The files behind table_for(dev), in merge order.
  std::vector<std::string> files_for(const DeviceInfo& dev);
  // Records a key no row serves (TGEMM_TUNE_GEMM), once per key.
  void record_untuned(const GmmKey& key);
  // Whether TGEMM_LOG_TUNED_CONFIG asked for the log, and whether `line` (a key's choice) is said
  // for the first time.
  bool log_choices() const { return log_choices_; }
  bool first_time(const std::string& line);
  const FamilySettings& settings() const { return settings_; }

 private:
  const GmmTable* card_table(const DeviceInfo& dev, std::string* file);
  const GmmTable& load_for(const DeviceInfo& dev);

  static constexpr int kMaxDevices = 64;

  FamilySettings settings_;
  bool log_choices_;
  std::unique_ptr<Capture> capture_;
  std::once_flag shared_loaded_;
  GmmTable shared_;
  std::mutex mutex_;                                              // card_tables_, said_
  std::map<std::string, std::unique_ptr<GmmTable>> card_tables_;  // by path; null: no file
  std::set<std::string> said_;
  std::array<std::atomic<const GmmTable*>, kMaxDevices> by_device_{};
};

}  // namespace tgemm
