// libFuzzer target: the environment parser (Settings::from_env) with an injected getenv built
// from the input, one NAME=VALUE per line (a line without '=' names a variable set to ""), plus
// the helpers it uses on the same text: split_path_list, env_flag, card_slug. Invariants: a path
// list yields no empty entry and no ':'; a card slug holds lower-case letters and digits only.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/settings.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void check_path_list(const std::string& list) {
  for (const std::string& entry : tgemm::split_path_list(list)) {
    TGEMM_FUZZ_REQUIRE(!entry.empty() && entry.find(':') == std::string::npos, "entry '%s' of '%s'", entry.c_str(),
                       list.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> env;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos)
      env[line] = "";
    else
      env[line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  const tgemm::Settings::Getenv getenv = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };

  const tgemm::Settings s = tgemm::Settings::from_env("/shipped", getenv);
  for (const std::string& f : s.a16w16.table_files) {
    TGEMM_FUZZ_REQUIRE(!f.empty(), "an empty table path");
  }
  TGEMM_FUZZ_REQUIRE(!s.a16w16.untuned_file.empty(), "an empty untuned path");
  (void)tgemm::Settings::config_dir_from_env(getenv);
  for (const auto& [name, value] : env) {
    check_path_list(value);
    (void)tgemm::env_flag(value.c_str());
  }
  check_path_list(text);
  for (char c : tgemm::card_slug(text)) {
    const unsigned char u = static_cast<unsigned char>(c);
    TGEMM_FUZZ_REQUIRE(std::isdigit(u) || (std::isalpha(u) && std::islower(u)), "card slug character 0x%02x", u);
  }
  (void)tgemm::card_table_path("/shipped", tgemm::card_slug(text), "bf16");
  return 0;
}
