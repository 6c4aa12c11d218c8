#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/csv.h"
#include "core/settings.h"
#include "core/table.h"
#include "tests/common/host_test_util.h"

namespace tgemm {
namespace {

using Strings = std::vector<std::string>;

// An injected environment: only the variables in `env` are set.
Settings settings_with(const std::map<std::string, std::string>& env,
                       const std::string& shipped_dir = "/opt/tgemm/configs") {
  return Settings::from_env(shipped_dir, [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(SettingsFromEnv, UnsetUsesTheShippedTableAndDefaults) {
  Settings s = settings_with({});
  EXPECT_EQ(s.a16w16.table_files, (Strings{"/opt/tgemm/configs/bf16_tuned_gemm.csv"}));
  EXPECT_EQ(s.a16w16.card_table_dir, "/opt/tgemm/configs");  // per-card tables apply
  EXPECT_EQ(s.a16w16.untuned_file, "bf16_untuned_gemm.csv");
  EXPECT_FALSE(s.capture);
  EXPECT_FALSE(s.log_tuned_config);
  EXPECT_EQ(&s.family(OpFamily::kA16W16), &s.a16w16);
}

TEST(SettingsFromEnv, NoShippedDirMeansNoTables) {
  Settings s = settings_with({}, "");
  EXPECT_TRUE(s.a16w16.table_files.empty());
}

TEST(SettingsFromEnv, ConfigVariableReplacesTheShippedTable) {
  Settings s = settings_with({{"TGEMM_CONFIG_GEMM_BF16", "/data/mine.csv"}});
  EXPECT_EQ(s.a16w16.table_files, (Strings{"/data/mine.csv"}));
  EXPECT_EQ(s.a16w16.card_table_dir, "");  // the user's tables: no per-card table
}

TEST(SettingsFromEnv, ColonSeparatedListInOrderWithEmptyEntriesDropped) {
  Settings s = settings_with({{"TGEMM_CONFIG_GEMM_BF16", "a.csv:b.csv"}});
  EXPECT_EQ(s.a16w16.table_files, (Strings{"a.csv", "b.csv"}));
  Settings s2 = settings_with({{"TGEMM_CONFIG_GEMM_BF16", ":a.csv::b.csv:"}});
  EXPECT_EQ(s2.a16w16.table_files, (Strings{"a.csv", "b.csv"}));
}

TEST(SettingsFromEnv, ATableVariableThatNamesNoFileWarnsNamingIt) {
  // Each of these leaves no table at all, which once happened without a word.
  for (const char* value : {"", ":", "::", ":::"}) {
    Settings s = settings_with({{"TGEMM_CONFIG_GEMM_BF16", value}});
    EXPECT_TRUE(s.a16w16.table_files.empty()) << "'" << value << "'";
    EXPECT_EQ(s.a16w16.card_table_dir, "");
    ASSERT_EQ(s.warnings.size(), 1u) << "'" << value << "'";
    EXPECT_EQ(s.warnings[0], std::string("TGEMM_CONFIG_GEMM_BF16='") + value +
                                 "' names no file, so no tuned table is loaded for gemm_a16w16 (unset it to use "
                                 "the shipped table)");
  }
}

TEST(SettingsFromEnv, NoWarningWhenTheVariableNamesAFileOrIsUnset) {
  EXPECT_TRUE(settings_with({}).warnings.empty());
  EXPECT_TRUE(settings_with({}, "").warnings.empty());
  EXPECT_TRUE(settings_with({{"TGEMM_CONFIG_GEMM_BF16", "a.csv"}}).warnings.empty());
  EXPECT_TRUE(settings_with({{"TGEMM_CONFIG_GEMM_BF16", ":a.csv::"}}).warnings.empty());
  EXPECT_TRUE(settings_with({{"TGEMM_UNTUNED_GEMM_BF16", ""}}).warnings.empty());
}

TEST(SettingsFromEnv, Flags) {
  EXPECT_TRUE(settings_with({{"TGEMM_TUNE_GEMM", "1"}}).capture);
  EXPECT_FALSE(settings_with({{"TGEMM_TUNE_GEMM", "0"}}).capture);
  EXPECT_FALSE(settings_with({{"TGEMM_TUNE_GEMM", "1"}}).log_tuned_config);
  EXPECT_TRUE(settings_with({{"TGEMM_LOG_TUNED_CONFIG", "1"}}).log_tuned_config);
  EXPECT_FALSE(settings_with({{"TGEMM_LOG_TUNED_CONFIG", "1"}}).capture);
  Settings both = settings_with({{"TGEMM_TUNE_GEMM", "true"}, {"TGEMM_LOG_TUNED_CONFIG", "True"}});
  EXPECT_TRUE(both.capture);
  EXPECT_TRUE(both.log_tuned_config);
}

TEST(SettingsFromEnv, RoutingSettingsUnsetOrEmptyAreAuto) {
  for (const Settings& s :
       {settings_with({}), settings_with({{"TGEMM_GROUPED_BACKEND", ""}, {"TGEMM_FP4_PATH", ""}})}) {
    EXPECT_EQ(s.grouped_backend, GroupedBackend::kAuto);
    EXPECT_EQ(s.fp4_path, W4Force::kAuto);
    EXPECT_TRUE(s.warnings.empty());
  }
}

TEST(SettingsFromEnv, EachAcceptedRoutingValueIsItsSetting) {
  struct Case {
    const char* var;
    const char* value;
    GroupedBackend backend;
    W4Force fp4;
  };
  const Case cases[] = {
      {"TGEMM_GROUPED_BACKEND", "auto", GroupedBackend::kAuto, W4Force::kAuto},
      {"TGEMM_GROUPED_BACKEND", "tile", GroupedBackend::kTile, W4Force::kAuto},
      {"TGEMM_GROUPED_BACKEND", "cutlass", GroupedBackend::kCutlass, W4Force::kAuto},
      {"TGEMM_FP4_PATH", "auto", GroupedBackend::kAuto, W4Force::kAuto},
      {"TGEMM_FP4_PATH", "gemv", GroupedBackend::kAuto, W4Force::kGemv},
      {"TGEMM_FP4_PATH", "gemv_rows", GroupedBackend::kAuto, W4Force::kGemvRows},
      {"TGEMM_FP4_PATH", "mma", GroupedBackend::kAuto, W4Force::kMma},
      {"TGEMM_FP4_PATH", "dequant", GroupedBackend::kAuto, W4Force::kDequant},
  };
  for (const Case& c : cases) {
    Settings s = settings_with({{c.var, c.value}});
    EXPECT_EQ(s.grouped_backend, c.backend) << c.var << "=" << c.value;
    EXPECT_EQ(s.fp4_path, c.fp4) << c.var << "=" << c.value;
    EXPECT_TRUE(s.warnings.empty()) << c.var << "=" << c.value;
  }
}

TEST(SettingsFromEnv, AnInvalidRoutingValueIsOneWarningAndAuto) {
  // Names are case-sensitive: "Tile" and "MMA" are not the accepted values.
  Settings s = settings_with({{"TGEMM_GROUPED_BACKEND", "Tile"}});
  EXPECT_EQ(s.grouped_backend, GroupedBackend::kAuto);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "TGEMM_GROUPED_BACKEND='Tile' is not one of auto, tile, cutlass, so auto is used");

  Settings f = settings_with({{"TGEMM_FP4_PATH", "MMA"}, {"TGEMM_GROUPED_BACKEND", "cutlass"}});
  EXPECT_EQ(f.fp4_path, W4Force::kAuto);
  EXPECT_EQ(f.grouped_backend, GroupedBackend::kCutlass);  // the valid one still applies
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0], "TGEMM_FP4_PATH='MMA' is not one of auto, gemv, gemv_rows, mma, dequant, so auto is used");

  Settings both = settings_with({{"TGEMM_FP4_PATH", "wmma"}, {"TGEMM_GROUPED_BACKEND", "wmma"}});
  EXPECT_EQ(both.warnings.size(), 2u);
}

TEST(SettingsFromEnv, UntunedFilePath) {
  EXPECT_EQ(settings_with({{"TGEMM_UNTUNED_GEMM_BF16", "/tmp/u.csv"}}).a16w16.untuned_file,
            "/tmp/u.csv");
  // Empty means unset.
  EXPECT_EQ(settings_with({{"TGEMM_UNTUNED_GEMM_BF16", ""}}).a16w16.untuned_file,
            "bf16_untuned_gemm.csv");
}

TEST(SettingsFromEnv, AsksForTheFamilyVariablesByName) {
  std::vector<std::string> asked;
  Settings::from_env("/c", [&asked](const char* name) -> const char* {
    asked.emplace_back(name);
    return nullptr;
  });
  for (const char* name : {"TGEMM_CONFIG_GEMM_BF16", "TGEMM_UNTUNED_GEMM_BF16", "TGEMM_TUNE_GEMM",
                           "TGEMM_LOG_TUNED_CONFIG", "TGEMM_GROUPED_BACKEND", "TGEMM_FP4_PATH"}) {
    EXPECT_NE(std::find(asked.begin(), asked.end(), name), asked.end()) << name;
  }
}

TEST(SettingsConfigDir, SetAndNotEmptyWins) {
  auto env_of = [](const char* value) {
    return [value](const char* name) -> const char* {
      return std::string(name) == "TGEMM_CONFIG_DIR" ? value : nullptr;
    };
  };
  EXPECT_EQ(Settings::config_dir_from_env(env_of("/srv/tables")), std::optional<std::string>("/srv/tables"));
  EXPECT_EQ(Settings::config_dir_from_env(env_of("")), std::nullopt);  // empty means unset
  EXPECT_EQ(Settings::config_dir_from_env(env_of(nullptr)), std::nullopt);
}

TEST(SettingsProcessEnv, ReadsTheProcessEnvironment) {
  ASSERT_EQ(::setenv("TGEMM_SETTINGS_TEST_VARIABLE", "seen", 1), 0);
  const Settings::Getenv env = Settings::process_env();
  ASSERT_NE(env("TGEMM_SETTINGS_TEST_VARIABLE"), nullptr);
  EXPECT_STREQ(env("TGEMM_SETTINGS_TEST_VARIABLE"), "seen");
  ASSERT_EQ(::unsetenv("TGEMM_SETTINGS_TEST_VARIABLE"), 0);
  EXPECT_EQ(env("TGEMM_SETTINGS_TEST_VARIABLE"), nullptr);
}

TEST(EnvFlag, Spellings) {
  for (const char* on : {"1", "true", "True", "TRUE", "yes", "on"}) EXPECT_TRUE(env_flag(on)) << on;
  for (const char* off : {"0", "false", "False", "", "no", "off", "2"}) {
    EXPECT_FALSE(env_flag(off)) << "'" << off << "'";
  }
  EXPECT_FALSE(env_flag(nullptr));
}

TEST(SplitPathList, Cases) {
  EXPECT_EQ(split_path_list("a:b::c"), (Strings{"a", "b", "c"}));
  EXPECT_EQ(split_path_list(""), Strings{});
  EXPECT_EQ(split_path_list(":"), Strings{});
  EXPECT_EQ(split_path_list("/x/y.csv"), (Strings{"/x/y.csv"}));
  EXPECT_EQ(split_path_list("a:"), (Strings{"a"}));
}

TEST(BatchedSettings, EnvironmentNamesTheFamilysTablesAndCapture) {
  Settings s =
      settings_with({{"TGEMM_CONFIG_BF16_BATCHED_GEMM", "a.csv:b.csv"}, {"TGEMM_UNTUNED_BF16_BATCHED_GEMM", "u.csv"}},
                    "/opt/tgemm/configs");
  EXPECT_EQ(s.batched.table_files, (std::vector<std::string>{"a.csv", "b.csv"}));
  EXPECT_EQ(s.batched.untuned_file, "u.csv");
  EXPECT_EQ(&s.family(OpFamily::kBatched), &s.batched);
  EXPECT_EQ(s.a16w16.table_files, (std::vector<std::string>{"/opt/tgemm/configs/bf16_tuned_gemm.csv"}));
}

TEST(BatchedSettings, ShippedTableIsReadWhereItExists) {
  test::TempDir dir;
  Settings none = settings_with({}, dir.path());
  EXPECT_TRUE(none.batched.table_files.empty());
  EXPECT_EQ(none.batched.untuned_file, "bf16_untuned_batched_gemm.csv");
  test::write_file(dir.file("bf16_tuned_batched_gemm.csv"), csv::join(tuned_table_columns(OpFamily::kBatched)) + "\n");
  Settings shipped = settings_with({}, dir.path());
  EXPECT_EQ(shipped.batched.table_files, (std::vector<std::string>{dir.file("bf16_tuned_batched_gemm.csv")}));
}

TEST(GmmSettings, EnvironmentNamesItsTablesAndCaptureAndTheShippedTableIsReadWhereItExists) {
  Settings s = settings_with({{"TGEMM_CONFIG_GMM", "a.csv::b.csv"}, {"TGEMM_UNTUNED_GMM", "u.csv"}});
  EXPECT_EQ(s.gmm.table_files, (Strings{"a.csv", "b.csv"}));
  EXPECT_EQ(s.gmm.untuned_file, "u.csv");
  EXPECT_TRUE(s.gmm.card_table_dir.empty());
  Settings empty = settings_with({{"TGEMM_CONFIG_GMM", ":"}});
  EXPECT_TRUE(empty.gmm.table_files.empty());
  ASSERT_EQ(empty.warnings.size(), 1u);
  EXPECT_NE(empty.warnings[0].find("TGEMM_CONFIG_GMM=':' names no file"), std::string::npos) << empty.warnings[0];

  test::TempDir dir;
  Settings none = settings_with({}, dir.path());
  EXPECT_TRUE(none.gmm.table_files.empty());
  EXPECT_EQ(none.gmm.card_table_dir, dir.path());
  EXPECT_EQ(none.gmm.untuned_file, "untuned_gmm.csv");
  test::write_file(dir.file("tuned_gmm.csv"), "arch,sm_count,G,rows_per_group,N,K,rhs,dtype,solution\n");
  Settings shipped = settings_with({}, dir.path());
  EXPECT_EQ(shipped.gmm.table_files, (Strings{dir.file("tuned_gmm.csv")}));
}

TEST(FmoeSettings, EnvironmentNamesItsTablesAndCaptureAndTheShippedTableIsReadWhereItExists) {
  Settings s = settings_with({{"TGEMM_CONFIG_FMOE", "a.csv:b.csv"}, {"TGEMM_UNTUNED_FMOE", "u.csv"}});
  EXPECT_EQ(s.fmoe.table_files, (Strings{"a.csv", "b.csv"}));
  EXPECT_EQ(s.fmoe.untuned_file, "u.csv");
  EXPECT_TRUE(s.fmoe.card_table_dir.empty());

  test::TempDir dir;
  Settings none = settings_with({}, dir.path());
  EXPECT_TRUE(none.fmoe.table_files.empty());
  EXPECT_EQ(none.fmoe.card_table_dir, dir.path());
  EXPECT_EQ(none.fmoe.untuned_file, "untuned_fmoe.csv");
  test::write_file(dir.file("tuned_fmoe.csv"), "arch,sm_count,tokens,E,topk,H,I,dtype,solution\n");
  Settings shipped = settings_with({}, dir.path());
  EXPECT_EQ(shipped.fmoe.table_files, (Strings{dir.file("tuned_fmoe.csv")}));
}

}  // namespace
}  // namespace tgemm
