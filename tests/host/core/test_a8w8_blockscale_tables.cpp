// The a8w8_blockscale family's table (scales `block` in the key), capture rows, settings
// (TGEMM_CONFIG_GEMM_A8W8_BLOCKSCALE, TGEMM_UNTUNED_GEMM_A8W8_BLOCKSCALE) and the dispatcher's
// use of its own table, with the fake platform and backend of the host tests.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/capture.h"
#include "core/csv.h"
#include "core/dispatcher.h"
#include "core/settings.h"
#include "core/table.h"
#include "tests/common/host_fakes.h"
#include "tests/common/host_test_util.h"

namespace tgemm {
namespace {

using test::contains;

GemmProblem blockscale_problem(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmProblem p;
  p.family = OpFamily::kA8W8Blockscale;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = DType::kFloat8E4M3;
  p.out_type = p.bias_type = DType::kBFloat16;
  p.a_scale = p.b_scale = ScaleGranularity::kBlock;
  p.ld_a_scale = (k + 127) / 128;
  p.ld_b_scale = (k + 127) / 128;
  p.lda = p.ldb = k;
  p.ldo = n;
  return p;
}

TableRow blockscale_row(std::int64_t m, const std::string& kernel) {
  TableRow r;
  r.key = table_key(blockscale_problem(m, 7168, 2048), "sm_90a", 132);
  r.m = m;
  r.libtype = "fake";
  r.kernel_name = kernel;
  r.us = 5;
  return r;
}

ParsedTable parse(const std::string& text) {
  std::istringstream in(text);
  return parse_tuned_table(in, "a8w8_blockscale.csv");
}

TEST(BlockscaleTable, FamilyNamesItsTableAndVariables) {
  const FamilyInfo& f = family_info(OpFamily::kA8W8Blockscale);
  EXPECT_EQ(f.op, "gemm_a8w8_blockscale");
  EXPECT_EQ(f.table, "a8w8_blockscale");
  EXPECT_EQ(f.config_env, "TGEMM_CONFIG_GEMM_A8W8_BLOCKSCALE");
  EXPECT_EQ(f.untuned_env, "TGEMM_UNTUNED_GEMM_A8W8_BLOCKSCALE");
  EXPECT_EQ(f.tuned_file, "a8w8_blockscale_tuned_gemm.csv");
  EXPECT_TRUE(quantized_family(OpFamily::kA8W8Blockscale));
  EXPECT_EQ(csv::join(tuned_table_columns(OpFamily::kA8W8Blockscale)), csv::join(tuned_table_columns(OpFamily::kA8W8)));
  EXPECT_EQ(csv::join(untuned_table_columns(OpFamily::kA8W8Blockscale)),
            "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,scales");
}

TEST(BlockscaleTable, FormatThenParseKeepsTheBlockKey) {
  const TableRow r = blockscale_row(64, "fake:tile64");
  const std::string line = format_tuned_row(r);
  EXPECT_TRUE(contains(line, ",torch.float8_e4m3fn,torch.bfloat16,")) << line;
  EXPECT_EQ(line.substr(line.rfind(',')), ",block") << line;
  ParsedTable t = parse(csv::join(tuned_table_columns(OpFamily::kA8W8Blockscale)) + "\n" + line + "\n");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_TRUE(t.rows[0].key == r.key) << t.rows[0].key.describe() << " vs " << r.key.describe();
  EXPECT_EQ(family_of_key(t.rows[0].key), OpFamily::kA8W8Blockscale);
  // The same shape with per-token x per-channel scales is another key (and another family).
  TableRow token = r;
  token.key.a_scale = token.key.b_scale = ScaleGranularity::kRow;
  EXPECT_FALSE(token.key == r.key);
  EXPECT_EQ(family_of_key(token.key), OpFamily::kA8W8);
}

TEST(BlockscaleTable, BlockScalesOnInt8RowsAreSkippedWithAWarning) {
  std::string line = format_tuned_row(blockscale_row(16, "fake:tile64"));
  const std::string fp8 = "torch.float8_e4m3fn";
  line.replace(line.find(fp8), fp8.size(), "torch.int8");
  ParsedTable t = parse(csv::join(tuned_table_columns(OpFamily::kA8W8Blockscale)) + "\n" + line + "\n");
  EXPECT_TRUE(t.rows.empty());
  ASSERT_FALSE(t.warnings.empty());
  EXPECT_TRUE(contains(t.warnings[0], "scales 'block' with dtype torch.int8")) << t.warnings[0];
}

TEST(BlockscaleTable, ProblemOfKeyRacesTheLayoutCuBlasLtReads) {
  const TableRow r = blockscale_row(30, "fake:tile64");
  const GemmProblem p = problem_of_key(r.key, 30, 0);
  EXPECT_EQ(p.family, OpFamily::kA8W8Blockscale);
  EXPECT_TRUE(p.a_scale_mn_major);
  EXPECT_EQ(p.ld_a_scale, 32);  // M rounded up to 4: the TMA-aligned column stride
  EXPECT_EQ(p.ld_b_scale, 16);  // ceil(2048 / 128), a multiple of 4
  EXPECT_TRUE(table_key(p, "sm_90a", 132) == r.key);
}

TEST(BlockscaleCapture, RowsNameBlockScales) {
  EXPECT_EQ(format_untuned_row(blockscale_problem(16, 7168, 2048)),
            "16,7168,2048,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,block");
}

Settings settings_with(const std::map<std::string, std::string>& env, const std::string& shipped_dir) {
  return Settings::from_env(shipped_dir, [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(BlockscaleSettings, EnvironmentNamesTheFamilysTablesAndCapture) {
  Settings s = settings_with(
      {{"TGEMM_CONFIG_GEMM_A8W8_BLOCKSCALE", "a.csv:b.csv"}, {"TGEMM_UNTUNED_GEMM_A8W8_BLOCKSCALE", "u.csv"}},
      "/opt/tgemm/configs");
  EXPECT_EQ(s.a8w8_blockscale.table_files, (std::vector<std::string>{"a.csv", "b.csv"}));
  EXPECT_EQ(s.a8w8_blockscale.untuned_file, "u.csv");
  EXPECT_EQ(&s.family(OpFamily::kA8W8Blockscale), &s.a8w8_blockscale);
  // The a8w8 family keeps its own variables.
  EXPECT_TRUE(s.a8w8.table_files.empty());
  EXPECT_EQ(s.a8w8.untuned_file, "a8w8_untuned_gemm.csv");
  Settings defaults = settings_with({}, "/nonexistent");
  EXPECT_EQ(defaults.a8w8_blockscale.untuned_file, "a8w8_blockscale_untuned_gemm.csv");
}

TEST(BlockscaleDispatch, BlockscaleProblemsUseTheirOwnTableAndCapture) {
  test::TempDir dir;
  test::LogCapture log;
  test::FakePlatform platform;
  Registry registry;
  registry.add(std::make_unique<test::FakeBackend>("fake", std::vector<std::string>{"tile64", "tile128"}, "tile64"));
  const std::string header = csv::join(tuned_table_columns(OpFamily::kA8W8Blockscale)) + "\n";
  const std::string table = dir.file("a8w8_blockscale_tuned_gemm.csv");
  test::write_file(table, header + format_tuned_row(blockscale_row(32, "fake:tile128")) + "\n");
  Settings s;
  s.a8w8_blockscale.table_files = {table};
  s.a8w8_blockscale.untuned_file = dir.file("a8w8_blockscale_untuned_gemm.csv");
  s.a8w8.untuned_file = dir.file("a8w8_untuned_gemm.csv");
  s.a16w16.untuned_file = dir.file("bf16_untuned_gemm.csv");
  s.capture = true;
  Dispatcher d(registry, platform, s);
  EXPECT_EQ(d.table(OpFamily::kA8W8Blockscale).size(), 1u);
  EXPECT_EQ(d.table(OpFamily::kA8W8).size(), 0u);

  const Resolution& hit = d.resolve(blockscale_problem(32, 7168, 2048));
  EXPECT_EQ(hit.level, WalkLevel::kExact);
  EXPECT_EQ(hit.solution->name(), "fake:tile128");
  const Resolution& miss = d.resolve(blockscale_problem(48, 7168, 2048));
  EXPECT_EQ(miss.level, WalkLevel::kDefault);
  EXPECT_EQ(test::read_file(dir.file("a8w8_blockscale_untuned_gemm.csv")),
            "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,scales\n"
            "48,7168,2048,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,block\n");
  EXPECT_FALSE(std::ifstream(dir.file("a8w8_untuned_gemm.csv")).good());
}

}  // namespace
}  // namespace tgemm
