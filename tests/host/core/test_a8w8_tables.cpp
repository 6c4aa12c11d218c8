// The a8w8 family's table format (the `scales` column in the key), its capture rows, its
// settings (TGEMM_CONFIG_GEMM_A8W8, TGEMM_UNTUNED_GEMM_A8W8) and the dispatcher's use of its own
// table (a card's own in place of the shared one), with the fake platform and backend of the host
// tests.
#include <gtest/gtest.h>

#include <cstdlib>
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

GemmProblem a8w8_problem(std::int64_t m, std::int64_t n, std::int64_t k, ScaleGranularity xs = ScaleGranularity::kRow,
                         ScaleGranularity ws = ScaleGranularity::kRow, DType dtype = DType::kFloat8E4M3) {
  GemmProblem p;
  p.family = OpFamily::kA8W8;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = dtype;
  p.out_type = DType::kBFloat16;
  p.bias_type = DType::kBFloat16;
  p.a_scale = xs;
  p.b_scale = ws;
  p.lda = p.ldb = k;
  p.ldo = n;
  return p;
}

TableRow a8w8_row(std::int64_t m, ScaleGranularity xs, ScaleGranularity ws, const std::string& kernel) {
  TableRow r;
  r.key = table_key(a8w8_problem(m, 4096, 4096, xs, ws), "sm_90a", 132);
  r.m = m;
  r.libtype = "fake";
  r.kernel_name = kernel;
  r.us = 5;
  return r;
}

ParsedTable parse(const std::string& text) {
  std::istringstream in(text);
  return parse_tuned_table(in, "a8w8.csv");
}

TEST(A8W8Table, ColumnsAddScalesLast) {
  EXPECT_EQ(csv::join(tuned_table_columns(OpFamily::kA8W8)), csv::join(tuned_table_columns()) + ",scales");
  EXPECT_EQ(csv::join(untuned_table_columns(OpFamily::kA8W8)),
            "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,scales");
  EXPECT_EQ(family_of_dtype(DType::kFloat8E4M3), OpFamily::kA8W8);
  EXPECT_EQ(family_of_dtype(DType::kInt8), OpFamily::kA8W8);
  EXPECT_EQ(family_of_dtype(DType::kBFloat16), OpFamily::kA16W16);
}

TEST(A8W8Table, FormatThenParseKeepsTheScaleRecipe) {
  const std::string header = csv::join(tuned_table_columns(OpFamily::kA8W8));
  for (auto [xs, ws] : {std::pair{ScaleGranularity::kTensor, ScaleGranularity::kTensor},
                        std::pair{ScaleGranularity::kRow, ScaleGranularity::kTensor},
                        std::pair{ScaleGranularity::kTensor, ScaleGranularity::kRow},
                        std::pair{ScaleGranularity::kRow, ScaleGranularity::kRow}}) {
    const TableRow r = a8w8_row(64, xs, ws, "fake:tile64");
    const std::string line = format_tuned_row(r);
    EXPECT_TRUE(contains(line, ",torch.float8_e4m3fn,torch.bfloat16,")) << line;
    EXPECT_TRUE(contains(line, "," + std::string(format_scale_recipe(xs, ws)))) << line;
    ParsedTable t = parse(header + "\n" + line + "\n");
    ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
    ASSERT_EQ(t.rows.size(), 1u);
    EXPECT_TRUE(t.rows[0].key == r.key) << t.rows[0].key.describe() << " vs " << r.key.describe();
  }
}

TEST(A8W8Table, RecipesAreDifferentKeys) {
  const TableRow a = a8w8_row(64, ScaleGranularity::kTensor, ScaleGranularity::kTensor, "fake:tile64");
  const TableRow b = a8w8_row(64, ScaleGranularity::kRow, ScaleGranularity::kRow, "fake:tile64");
  EXPECT_FALSE(a.key == b.key);
  Table t;
  t.add_rows({a, b});
  EXPECT_EQ(t.size(), 2u);
  ASSERT_NE(t.rows_for(b.key), nullptr);
  EXPECT_EQ(t.rows_for(b.key)->at(64).key.a_scale, ScaleGranularity::kRow);
}

TEST(A8W8Table, RowsWithoutOrWithWrongScalesAreSkippedWithAWarning) {
  const std::string header = csv::join(tuned_table_columns(OpFamily::kA8W8));
  std::string good = format_tuned_row(a8w8_row(16, ScaleGranularity::kRow, ScaleGranularity::kRow, "fake:tile64"));
  const std::string missing = good.substr(0, good.rfind(',') + 1);  // scales field empty
  const std::string unknown = missing + "rowwise";
  TableRow bf16 = a8w8_row(16, ScaleGranularity::kNone, ScaleGranularity::kNone, "fake:tile64");
  bf16.key.dtype = bf16.key.out_dtype = DType::kBFloat16;
  const std::string bf16_line = format_tuned_row(bf16) + ",tensor";  // a16w16 row naming scales
  const std::string fp8_none = missing + "none";
  ParsedTable t = parse(header + "\n" + missing + "\n" + unknown + "\n" + bf16_line + "\n" + fp8_none + "\n");
  EXPECT_TRUE(t.rows.empty());
  ASSERT_EQ(t.warnings.size(), 5u);  // four rows, then "none of its 4 data lines is a usable row"
  EXPECT_TRUE(contains(t.warnings[0], "a8w8.csv:2: an a8w8 row (dtype torch.float8_e4m3fn) needs a 'scales' value"))
      << t.warnings[0];
  EXPECT_TRUE(contains(t.warnings[1], "unknown scales 'rowwise'")) << t.warnings[1];
  EXPECT_TRUE(contains(t.warnings[2], "only a8w8 rows have scales")) << t.warnings[2];
  EXPECT_TRUE(contains(t.warnings[3], "an a8w8 row needs tensor|token|channel|token_channel")) << t.warnings[3];
}

TEST(A8W8Table, A16W16RowsReadAsBeforeWithoutTheColumn) {
  const std::string header = csv::join(tuned_table_columns());
  TableRow r = a8w8_row(16, ScaleGranularity::kNone, ScaleGranularity::kNone, "fake:tile64");
  r.key.dtype = r.key.out_dtype = DType::kBFloat16;
  const std::string line = format_tuned_row(r);
  EXPECT_EQ(csv::split_line(line)->size(), tuned_table_columns().size()) << line;
  ParsedTable t = parse(header + "\n" + line + "\n");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  EXPECT_EQ(t.rows[0].key.a_scale, ScaleGranularity::kNone);
}

TEST(A8W8Capture, RowAndHeaderNameTheScales) {
  EXPECT_EQ(
      format_untuned_row(a8w8_problem(16, 4096, 1024, ScaleGranularity::kRow, ScaleGranularity::kTensor, DType::kInt8)),
      "16,4096,1024,False,torch.int8,torch.bfloat16,False,False,none,token");
  test::TempDir dir;
  const std::string path = dir.file("a8w8_untuned_gemm.csv");
  Capture c(path, OpFamily::kA8W8);
  c.record(a8w8_problem(1, 4096, 4096));
  c.record(a8w8_problem(1, 4096, 4096));
  c.record(a8w8_problem(1, 4096, 4096, ScaleGranularity::kTensor, ScaleGranularity::kTensor));
  EXPECT_EQ(test::read_file(path),
            "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,scales\n"
            "1,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,token_channel\n"
            "1,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,tensor\n");
}

Settings settings_with(const std::map<std::string, std::string>& env, const std::string& shipped_dir) {
  return Settings::from_env(shipped_dir, [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(A8W8Settings, EnvironmentNamesTheFamilysTablesAndCapture) {
  Settings s = settings_with({{"TGEMM_CONFIG_GEMM_A8W8", "a.csv::b.csv"}, {"TGEMM_UNTUNED_GEMM_A8W8", "u.csv"}},
                             "/opt/tgemm/configs");
  EXPECT_EQ(s.a8w8.table_files, (std::vector<std::string>{"a.csv", "b.csv"}));
  EXPECT_EQ(s.a8w8.untuned_file, "u.csv");
  EXPECT_EQ(&s.family(OpFamily::kA8W8), &s.a8w8);
  EXPECT_EQ(s.a16w16.table_files, (std::vector<std::string>{"/opt/tgemm/configs/bf16_tuned_gemm.csv"}));
}

TEST(A8W8Settings, ShippedTableIsReadOnlyWhereItExists) {
  test::TempDir dir;
  Settings none = settings_with({}, dir.path());
  EXPECT_TRUE(none.a8w8.table_files.empty());
  EXPECT_EQ(none.a8w8.untuned_file, "a8w8_untuned_gemm.csv");
  EXPECT_TRUE(none.warnings.empty());
  test::write_file(dir.file("a8w8_tuned_gemm.csv"), csv::join(tuned_table_columns(OpFamily::kA8W8)) + "\n");
  Settings shipped = settings_with({}, dir.path());
  EXPECT_EQ(shipped.a8w8.table_files, (std::vector<std::string>{dir.file("a8w8_tuned_gemm.csv")}));
}

TEST(A8W8Dispatch, A8W8ProblemsUseTheirOwnTableAndCapture) {
  test::TempDir dir;
  test::LogCapture log;
  test::FakePlatform platform;
  Registry registry;
  registry.add(std::make_unique<test::FakeBackend>("fake", std::vector<std::string>{"tile64", "tile128"}, "tile64"));
  const std::string table = dir.file("a8w8_tuned_gemm.csv");
  test::write_file(
      table, csv::join(tuned_table_columns(OpFamily::kA8W8)) + "\n" +
                 format_tuned_row(a8w8_row(32, ScaleGranularity::kRow, ScaleGranularity::kRow, "fake:tile128")) + "\n");
  Settings s;
  s.a8w8.table_files = {table};
  s.a8w8.untuned_file = dir.file("a8w8_untuned_gemm.csv");
  s.a16w16.untuned_file = dir.file("bf16_untuned_gemm.csv");
  s.capture = true;
  Dispatcher d(registry, platform, s);
  EXPECT_EQ(d.table(OpFamily::kA8W8).size(), 1u);
  EXPECT_EQ(d.table(OpFamily::kA16W16).size(), 0u);

  const Resolution& hit = d.resolve(a8w8_problem(32, 4096, 4096));
  EXPECT_EQ(hit.level, WalkLevel::kExact);
  EXPECT_EQ(hit.solution->name(), "fake:tile128");
  // Another recipe of the same shape is another key: the default, and captured.
  const Resolution& other =
      d.resolve(a8w8_problem(32, 4096, 4096, ScaleGranularity::kTensor, ScaleGranularity::kTensor));
  EXPECT_EQ(other.level, WalkLevel::kDefault);
  EXPECT_EQ(other.solution->name(), "fake:tile64");
  EXPECT_EQ(test::read_file(dir.file("a8w8_untuned_gemm.csv")),
            "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,scales\n"
            "32,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,tensor\n");
  EXPECT_FALSE(std::ifstream(dir.file("bf16_untuned_gemm.csv")).good());
}

// The per-card rule holds for every family: with the shipped directory, an H200 reads
// h200/a8w8_tuned_gemm.csv alone (a shared row does not serve it), another card the shared file;
// a card's file applies even where no shared file ships.
TEST(A8W8Dispatch, ACardsTableReplacesTheSharedOne) {
  test::TempDir dir;
  test::LogCapture log;
  test::FakePlatform other;
  test::FakePlatform h200("sm_90a", 132, "NVIDIA H200");
  Registry registry;
  registry.add(std::make_unique<test::FakeBackend>("fake", std::vector<std::string>{"tile64", "tile128"}, "tile64"));
  const std::string header = csv::join(tuned_table_columns(OpFamily::kA8W8)) + "\n";
  const auto row = [](std::int64_t m, const std::string& kernel) {
    return format_tuned_row(a8w8_row(m, ScaleGranularity::kRow, ScaleGranularity::kRow, kernel)) + "\n";
  };
  ASSERT_EQ(std::system(("mkdir -p '" + dir.file("h200") + "'").c_str()), 0);
  const std::string own = dir.file("h200/a8w8_tuned_gemm.csv");
  test::write_file(own, header + row(64, "fake:tile128"));
  const auto no_env = [](const char*) -> const char* { return nullptr; };
  {
    Dispatcher d(registry, h200, Settings::from_env(dir.path(), no_env));  // no shared a8w8 table ships
    EXPECT_EQ(d.table_files_for(OpFamily::kA8W8, h200.device_info(0)), (std::vector<std::string>{own}));
    EXPECT_EQ(d.resolve(a8w8_problem(64, 4096, 4096)).file, own);
  }
  const std::string shared = dir.file("a8w8_tuned_gemm.csv");
  test::write_file(shared, header + row(32, "fake:tile128") + row(64, "fake:tile128"));
  Dispatcher on_h200(registry, h200, Settings::from_env(dir.path(), no_env));
  EXPECT_EQ(on_h200.table_files_for(OpFamily::kA8W8, h200.device_info(0)), (std::vector<std::string>{own}));
  EXPECT_EQ(on_h200.resolve(a8w8_problem(64, 4096, 4096)).file, own);
  EXPECT_EQ(on_h200.resolve(a8w8_problem(32, 4096, 4096)).level, WalkLevel::kDefault);
  Dispatcher on_other(registry, other, Settings::from_env(dir.path(), no_env));
  EXPECT_EQ(on_other.table_files_for(OpFamily::kA8W8, other.device_info(0)), (std::vector<std::string>{shared}));
  EXPECT_EQ(on_other.resolve(a8w8_problem(32, 4096, 4096)).file, shared);
  EXPECT_EQ(on_other.resolve(a8w8_problem(64, 4096, 4096)).file, shared);
}

}  // namespace
}  // namespace tgemm
