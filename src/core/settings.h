// Every environment variable the library reads is read here. Once, at first use and on
// reload_config:
//   TGEMM_CONFIG_GEMM_<FAM>   tuned table(s) of a family: a path or a ':'-separated list, merged
//                             in order (set but naming no file, e.g. "" or ":": no table, and a
//                             warning); unset = the shipped table: for a device whose card has
//                             one, configs/<card>/<fam>_tuned_gemm.csv alone (card_slug; e.g.
//                             configs/h200/ on an H200), else configs/<fam>_tuned_gemm.csv; a
//                             family other than a16w16 reads its shared table only where it exists
//                             <FAM>: BF16 (gemm_a16w16), A8W8 (gemm_a8w8), A8W8_BLOCKSCALE
//                             (gemm_a8w8_blockscale)
//   TGEMM_CONFIG_BF16_BATCHED_GEMM  the same for batched_gemm (bf16_tuned_batched_gemm.csv; AITER's
//                             name for it)
//   TGEMM_CONFIG_A8W8_BATCHED_GEMM  the same for batched_gemm_a8w8 (a8w8_tuned_batched_gemm.csv)
//   TGEMM_CONFIG_GMM          the same for gmm (tuned_gmm.csv, src/grouped/gmm_table.h)
//   TGEMM_CONFIG_FMOE         the same for fused_moe (tuned_fmoe.csv, src/moe/fmoe_table.h)
//   TGEMM_TUNE_GEMM=1         record untuned problems to TGEMM_UNTUNED_GEMM_<FAM>
//                             (default ./<fam>_untuned_gemm.csv), TGEMM_UNTUNED_BF16_BATCHED_GEMM
//                             (default ./bf16_untuned_batched_gemm.csv), TGEMM_UNTUNED_A8W8_BATCHED_GEMM
//                             (default ./a8w8_untuned_batched_gemm.csv), TGEMM_UNTUNED_GMM
//                             (default ./untuned_gmm.csv), TGEMM_UNTUNED_FMOE
//                             (default ./untuned_fmoe.csv)
// (FamilyInfo in core/problem.h holds each family's names.)
//   TGEMM_LOG_TUNED_CONFIG=1  log, once per shape, where the lookup walk landed
//   TGEMM_GROUPED_BACKEND     auto (or unset), tile, cutlass: forces gmm's and fused_moe's backend
//   TGEMM_FP4_PATH            auto (or unset), gemv, gemv_rows, mma, dequant: forces the MXFP4 weight GEMMs' path
// A value outside those lists is one warning and means auto.
// On every call of shipped_config_dir():
//   TGEMM_CONFIG_DIR          directory of the shipped tables, before every other candidate
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"

namespace tgemm {

// TGEMM_GROUPED_BACKEND: kAuto: gmm's and fused_moe's tables, then the default rule; kTile: the
// WMMA tile kernels; kCutlass: the CUTLASS kernel wherever it can take the call (elsewhere the
// tile kernels). src/grouped/gmm_cutlass.h routes by it.
enum class GroupedBackend : std::uint8_t { kAuto, kTile, kCutlass };

// TGEMM_FP4_PATH: the path the MXFP4 weight GEMMs take where it can run (src/fp4/fp4_route.h).
enum class W4Force : std::uint8_t { kAuto, kGemv, kGemvRows, kMma, kDequant };

struct FamilySettings {
  std::vector<std::string> table_files;
  std::string untuned_file;
  // The shipped directory when table_files is the shipped table (no TGEMM_CONFIG_GEMM_<FAM>): a
  // device whose card has <card_table_dir>/<card_slug>/<tuned_file> uses that file as its whole
  // table, in place of table_files, which serve the devices of every other card. Empty (an env
  // list): table_files on every device.
  std::string card_table_dir;
};

struct Settings {
  FamilySettings a16w16;
  FamilySettings a8w8;
  FamilySettings a8w8_blockscale;
  FamilySettings batched;
  FamilySettings a8w8_batched;
  FamilySettings gmm;  // gmm's table (src/grouped/gmm_table.h): not an OpFamily, its key is its own
  FamilySettings fmoe;  // fused_moe's table (src/moe/fmoe_table.h), likewise
  bool capture = false;
  bool log_tuned_config = false;
  GroupedBackend grouped_backend = GroupedBackend::kAuto;
  W4Force fp4_path = W4Force::kAuto;
  // What the environment asked for that cannot be what was meant (a table variable that names no
  // file, a value no routing setting takes), one message each; the dispatcher logs them.
  std::vector<std::string> warnings;

  const FamilySettings& family(OpFamily f) const;

  // `getenv` is injectable for tests; process_env() is the process's environment (std::getenv).
  using Getenv = std::function<const char*(const char*)>;
  static Getenv process_env();
  static Settings from_env(const std::string& shipped_config_dir, const Getenv& getenv);
  // TGEMM_CONFIG_DIR when set and not empty, else nullopt.
  static std::optional<std::string> config_dir_from_env(const Getenv& getenv);
};

// gmm's names: table "gmm", files tuned_gmm.csv and untuned_gmm.csv, TGEMM_CONFIG_GMM and
// TGEMM_UNTUNED_GMM.
const FamilyInfo& gmm_family_info();
// fused_moe's names: table "fmoe", files tuned_fmoe.csv and untuned_fmoe.csv, TGEMM_CONFIG_FMOE
// and TGEMM_UNTUNED_FMOE.
const FamilyInfo& fmoe_family_info();

// The card a device name names, for per-card tables: lower case, a leading "nvidia"
// dropped, the first word, letters and digits only. "NVIDIA H100 80GB HBM3" -> "h100",
// "NVIDIA H200" -> "h200", "NVIDIA GH200 480GB" -> "gh200"; "" when nothing is left.
std::string card_slug(std::string_view device_name);

// The table of `table` (e.g. "bf16") for `card` under `dir`: dir/card/<table>_tuned_gemm.csv.
std::string card_table_path(const std::string& dir, const std::string& card, std::string_view table);
// A family's tuned file (FamilyInfo::tuned_file) for `card`: dir/card/<tuned_file>.
std::string card_table_file(const std::string& dir, const std::string& card, std::string_view tuned_file);

// Splits "a:b::c" into {"a","b","c"}.
std::vector<std::string> split_path_list(const std::string& list);
// True for "1", "true", "True", "yes", "on".
bool env_flag(const char* value);

}  // namespace tgemm
