#include "core/settings.h"

#include <string_view>

namespace tgemm {

const FamilySettings& Settings::family(OpFamily f) const {
  switch (f) {
    case OpFamily::kA16W16:
      return a16w16;
  }
  return a16w16;
}

std::vector<std::string> split_path_list(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool env_flag(const char* value) {
  if (value == nullptr) return false;
  std::string_view v(value);
  return v == "1" || v == "true" || v == "True" || v == "TRUE" || v == "yes" || v == "on";
}

Settings Settings::from_env(const std::string& shipped_config_dir, const Getenv& getenv) {
  Settings s;
  auto family_settings = [&](OpFamily f) {
    const FamilyInfo& info = family_info(f);
    FamilySettings fs;
    std::string suffix(info.env_suffix);
    std::string table(info.table);
    const char* tables = getenv(("TGEMM_CONFIG_GEMM_" + suffix).c_str());
    if (tables != nullptr) {
      fs.table_files = split_path_list(tables);
    } else if (!shipped_config_dir.empty()) {
      fs.table_files = {shipped_config_dir + "/" + table + "_tuned_gemm.csv"};
    }
    const char* untuned = getenv(("TGEMM_UNTUNED_GEMM_" + suffix).c_str());
    fs.untuned_file = untuned != nullptr && *untuned != '\0' ? std::string(untuned)
                                                             : table + "_untuned_gemm.csv";
    return fs;
  };
  s.a16w16 = family_settings(OpFamily::kA16W16);
  s.capture = env_flag(getenv("TGEMM_TUNE_GEMM"));
  s.log_tuned_config = env_flag(getenv("TGEMM_LOG_TUNED_CONFIG"));
  return s;
}

}  // namespace tgemm
