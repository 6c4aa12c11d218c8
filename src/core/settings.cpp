#include "core/settings.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <utility>

namespace tgemm {

const FamilySettings& Settings::family(OpFamily f) const {
  switch (f) {
    case OpFamily::kA16W16:
      return a16w16;
    case OpFamily::kA8W8: return a8w8;
    case OpFamily::kA8W8Blockscale: return a8w8_blockscale;
    case OpFamily::kBatched: return batched;
    case OpFamily::kA8W8Batched: return a8w8_batched;
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

std::string card_slug(std::string_view device_name) {
  std::string lower;
  for (char c : device_name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t pos = lower.find_first_not_of(' ');
  if (pos != std::string::npos && lower.compare(pos, 7, "nvidia ") == 0) pos += 7;
  std::string out;
  for (; pos != std::string::npos && pos < lower.size(); ++pos) {
    const char c = lower[pos];
    if (c == ' ') {
      if (out.empty()) continue;
      break;
    }
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

std::string card_table_path(const std::string& dir, const std::string& card, std::string_view table) {
  return card_table_file(dir, card, std::string(table) + "_tuned_gemm.csv");
}

std::string card_table_file(const std::string& dir, const std::string& card, std::string_view tuned_file) {
  return dir + "/" + card + "/" + std::string(tuned_file);
}

namespace {

// A routing variable's value among `values` (the first is auto, also what unset and "" mean); any
// other value is one warning naming the variable, the accepted values and the value, and auto.
template <typename E, std::size_t N>
E routing_setting(const Settings::Getenv& getenv, const char* var, const std::pair<std::string_view, E> (&values)[N],
                  std::vector<std::string>& warnings) {
  const char* value = getenv(var);
  if (value == nullptr || *value == '\0') return values[0].second;
  std::string accepted;
  for (const auto& [name, e] : values) {
    if (name == value) return e;
    accepted += (accepted.empty() ? "" : ", ") + std::string(name);
  }
  warnings.push_back(std::string(var) + "='" + value + "' is not one of " + accepted + ", so " +
                     std::string(values[0].first) + " is used");
  return values[0].second;
}

constexpr std::pair<std::string_view, GroupedBackend> kGroupedBackends[] = {
    {"auto", GroupedBackend::kAuto}, {"tile", GroupedBackend::kTile}, {"cutlass", GroupedBackend::kCutlass}};
constexpr std::pair<std::string_view, W4Force> kFp4Paths[] = {{"auto", W4Force::kAuto},
                                                              {"gemv", W4Force::kGemv},
                                                              {"gemv_rows", W4Force::kGemvRows},
                                                              {"mma", W4Force::kMma},
                                                              {"dequant", W4Force::kDequant}};

}  // namespace

Settings::Getenv Settings::process_env() {
  return [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
}

std::optional<std::string> Settings::config_dir_from_env(const Getenv& getenv) {
  const char* dir = getenv("TGEMM_CONFIG_DIR");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  return std::string(dir);
}

const FamilyInfo& gmm_family_info() {
  static const FamilyInfo kGmm{
      "gmm", "gmm", "tuned_gmm.csv", "untuned_gmm.csv", "TGEMM_CONFIG_GMM", "TGEMM_UNTUNED_GMM"};
  return kGmm;
}

const FamilyInfo& fmoe_family_info() {
  static const FamilyInfo kFmoe{"fused_moe",         "fmoe", "tuned_fmoe.csv", "untuned_fmoe.csv", "TGEMM_CONFIG_FMOE",
                                "TGEMM_UNTUNED_FMOE"};
  return kFmoe;
}

Settings Settings::from_env(const std::string& shipped_config_dir, const Getenv& getenv) {
  Settings s;
  // always_shipped: the shipped shared table is read (and its absence warned about) even where no
  // file exists.
  auto family_settings = [&](const FamilyInfo& info, bool always_shipped) {
    FamilySettings fs;
    const std::string tables_var(info.config_env);
    const char* tables = getenv(tables_var.c_str());
    if (tables != nullptr) {
      fs.table_files = split_path_list(tables);
      if (fs.table_files.empty()) {
        s.warnings.push_back(tables_var + "='" + tables + "' names no file, so no tuned table is loaded for " +
                             std::string(info.op) + " (unset it to use the shipped table)");
      }
    } else if (!shipped_config_dir.empty()) {
      const std::string shipped = shipped_config_dir + "/" + std::string(info.tuned_file);
      // Every install ships the a16w16 table, so its absence is worth the load's warning; the
      // other families ship a table only once rows were tuned for them, and read none until then.
      if (always_shipped || std::ifstream(shipped).good()) fs.table_files = {shipped};
      fs.card_table_dir = shipped_config_dir;
    }
    const char* untuned = getenv(std::string(info.untuned_env).c_str());
    fs.untuned_file = untuned != nullptr && *untuned != '\0' ? std::string(untuned) : std::string(info.untuned_file);
    return fs;
  };
  s.a16w16 = family_settings(family_info(OpFamily::kA16W16), true);
  s.a8w8 = family_settings(family_info(OpFamily::kA8W8), false);
  s.a8w8_blockscale = family_settings(family_info(OpFamily::kA8W8Blockscale), false);
  s.batched = family_settings(family_info(OpFamily::kBatched), false);
  s.a8w8_batched = family_settings(family_info(OpFamily::kA8W8Batched), false);
  s.gmm = family_settings(gmm_family_info(), false);
  s.fmoe = family_settings(fmoe_family_info(), false);
  s.capture = env_flag(getenv("TGEMM_TUNE_GEMM"));
  s.log_tuned_config = env_flag(getenv("TGEMM_LOG_TUNED_CONFIG"));
  s.grouped_backend = routing_setting(getenv, "TGEMM_GROUPED_BACKEND", kGroupedBackends, s.warnings);
  s.fp4_path = routing_setting(getenv, "TGEMM_FP4_PATH", kFp4Paths, s.warnings);
  return s;
}

}  // namespace tgemm
