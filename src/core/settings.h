// Settings read from the environment once (at first use and on reload_config):
//   TGEMM_CONFIG_GEMM_<FAM>   tuned table(s) of a family: a path or a ':'-separated list, merged
//                             in order; unset = the shipped configs/<fam>_tuned_gemm.csv
//   TGEMM_TUNE_GEMM=1         record untuned problems to TGEMM_UNTUNED_GEMM_<FAM>
//                             (default ./<fam>_untuned_gemm.csv)
//   TGEMM_LOG_TUNED_CONFIG=1  log, once per shape, where the lookup walk landed
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/problem.h"

namespace tgemm {

struct FamilySettings {
  std::vector<std::string> table_files;
  std::string untuned_file;
};

struct Settings {
  FamilySettings a16w16;
  bool capture = false;
  bool log_tuned_config = false;

  const FamilySettings& family(OpFamily f) const;

  // `getenv` is injectable for tests.
  using Getenv = std::function<const char*(const char*)>;
  static Settings from_env(const std::string& shipped_config_dir, const Getenv& getenv);
};

// Splits "a:b::c" into {"a","b","c"}.
std::vector<std::string> split_path_list(const std::string& list);
// True for "1", "true", "True", "yes", "on".
bool env_flag(const char* value);

}  // namespace tgemm
