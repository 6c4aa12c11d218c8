// The a8w8_batched family's table format (scales, B, transpose_a and transpose_b in the key), its
// settings, capture rows and the dispatcher's use of its own table, with the fake platform and
// backend of the host tests.
#include <gtest/gtest.h>

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

// The problem validate_batched_a8w8 gives for dense operands: a [B, M, K], b [B, N, K], FP8 in,
// bf16 out, per-token x per-channel scales of each product.
GemmProblem a8w8_batched_problem(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                                 DType dtype = DType::kFloat8E4M3) {
  GemmProblem p;
  p.family = OpFamily::kA8W8Batched;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = dtype;
  p.bias_type = p.out_type;
  p.a_scale = p.b_scale = ScaleGranularity::kRow;
  p.transpose_b = true;
  p.lda = p.ldb = k;
  p.ldo = p.ldc = n;  // problem_of_key's (c is never read: no beta)
  p.batch_stride_a = m * k;
  p.batch_stride_b = n * k;
  p.batch_stride_out = m * n;
  p.batch_stride_a_scale = m;
  p.batch_stride_b_scale = n;
  return p;
}

TableRow a8w8_batched_row(std::int64_t batch, std::int64_t m, const std::string& kernel) {
  TableRow r;
  r.key = table_key(a8w8_batched_problem(batch, m, 512, 128), "sm_90a", 132);
  r.m = m;
  r.libtype = "fake";
  r.kernel_name = kernel;
  r.us = 5;
  return r;
}

ParsedTable parse(const std::string& text) {
  std::istringstream in(text);
  return parse_tuned_table(in, "a8w8_tuned_batched_gemm.csv");
}

TEST(A8W8BatchedTable, ColumnsAddScalesThenTheBatchAndLayouts) {
  EXPECT_EQ(csv::join(tuned_table_columns(OpFamily::kA8W8Batched)),
            csv::join(tuned_table_columns()) + ",scales,B,transpose_a,transpose_b");
  EXPECT_EQ(csv::join(untuned_table_columns(OpFamily::kA8W8Batched)),
            csv::join(untuned_table_columns()) + ",scales,B,transpose_a,transpose_b");
  const FamilyInfo& info = family_info(OpFamily::kA8W8Batched);
  EXPECT_EQ(info.op, "batched_gemm_a8w8");
  EXPECT_EQ(info.tuned_file, "a8w8_tuned_batched_gemm.csv");
  EXPECT_EQ(info.config_env, "TGEMM_CONFIG_A8W8_BATCHED_GEMM");
  EXPECT_TRUE(quantized_family(OpFamily::kA8W8Batched));
  EXPECT_TRUE(batched_family(OpFamily::kA8W8Batched));
  EXPECT_FALSE(batched_family(OpFamily::kA8W8));
}

TEST(A8W8BatchedTable, ShippedTableIsAHeader) {
  const std::string path = std::string(TGEMM_TEST_SOURCE_DIR) + "/configs/a8w8_tuned_batched_gemm.csv";
  const std::string text = test::read_file(path);
  EXPECT_EQ(text, csv::join(tuned_table_columns(OpFamily::kA8W8Batched)) + "\n");
}

TEST(A8W8BatchedTable, KeyHoldsScalesBatchAndRoundTrips) {
  const TableRow row = a8w8_batched_row(16, 64, "fake:tile128");
  EXPECT_EQ(row.key.family(), OpFamily::kA8W8Batched);
  EXPECT_EQ(row.key.batch, 16);
  EXPECT_TRUE(row.key.transpose_b);
  const std::string line = format_tuned_row(row);
  EXPECT_TRUE(contains(line, ",token_channel,16,False,True")) << line;
  ParsedTable t = parse(csv::join(tuned_table_columns(OpFamily::kA8W8Batched)) + "\n" + line + "\n");
  ASSERT_EQ(t.rows.size(), 1u) << (t.warnings.empty() ? "" : t.warnings[0]);
  EXPECT_TRUE(t.rows[0].key == row.key);
  // The batch and the scales tell keys apart.
  EXPECT_FALSE(a8w8_batched_row(8, 64, "k").key == row.key);
  GemmProblem tensor = a8w8_batched_problem(16, 64, 512, 128);
  tensor.a_scale = ScaleGranularity::kTensor;
  EXPECT_FALSE(table_key(tensor, "sm_90a", 132) == row.key);
  // A problem of the key: dense operands, each product's own scale vectors.
  const GemmProblem p = problem_of_key(row.key, 64, 0);
  EXPECT_EQ(p.family, OpFamily::kA8W8Batched);
  EXPECT_EQ(p.batch, 16);
  EXPECT_EQ(p.ldb, 128);
  EXPECT_EQ(p.batch_stride_b, 512 * 128);
  EXPECT_EQ(p.batch_stride_a_scale, 64);
  EXPECT_EQ(p.batch_stride_b_scale, 512);
  EXPECT_EQ(p.bias_type, p.out_type);
  EXPECT_TRUE(p == a8w8_batched_problem(16, 64, 512, 128));
  EXPECT_TRUE(table_key(p, "sm_90a", 132) == row.key);
}

TEST(A8W8BatchedTable, RowsOutsideTheOpAreSkippedWithAWarning) {
  const std::string header = csv::join(tuned_table_columns(OpFamily::kA8W8Batched)) + "\n";
  const std::string good = format_tuned_row(a8w8_batched_row(16, 64, "fake:tile64"));
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string line = good;
    line.replace(line.rfind(from), from.size(), to);
    return line;
  };
  ParsedTable block = parse(header + replaced(",token_channel,", ",block,") + "\n");
  EXPECT_TRUE(block.rows.empty());
  ASSERT_FALSE(block.warnings.empty());
  EXPECT_TRUE(contains(block.warnings[0], "B with scales 'block'")) << block.warnings[0];
  ParsedTable layout = parse(header + replaced(",False,True", ",True,True") + "\n");
  EXPECT_TRUE(layout.rows.empty());
  ASSERT_FALSE(layout.warnings.empty());
  EXPECT_TRUE(contains(layout.warnings[0], "transpose_a=False, transpose_b=True")) << layout.warnings[0];
}

TEST(A8W8BatchedCapture, RowCarriesScalesBatchAndLayouts) {
  EXPECT_EQ(format_untuned_row(a8w8_batched_problem(128, 1, 512, 128, DType::kInt8)),
            "1,512,128,False,torch.int8,torch.bfloat16,False,False,none,token_channel,128,False,True");
}

TEST(A8W8BatchedSettings, OwnTableVariableAndUntunedFile) {
  test::TempDir dir;
  const std::string table = dir.file("mine.csv");
  test::write_file(table, csv::join(tuned_table_columns(OpFamily::kA8W8Batched)) + "\n");
  const Settings s = Settings::from_env("", [&](const char* name) -> const char* {
    const std::string n(name);
    if (n == "TGEMM_CONFIG_A8W8_BATCHED_GEMM") return table.c_str();
    if (n == "TGEMM_UNTUNED_A8W8_BATCHED_GEMM") return "captured.csv";
    return nullptr;
  });
  EXPECT_EQ(&s.family(OpFamily::kA8W8Batched), &s.a8w8_batched);
  EXPECT_EQ(s.a8w8_batched.table_files, std::vector<std::string>{table});
  EXPECT_EQ(s.a8w8_batched.untuned_file, "captured.csv");
  EXPECT_TRUE(s.batched.table_files.empty());
}

TEST(A8W8BatchedDispatch, ProblemsUseTheirOwnTableAndCapture) {
  test::TempDir dir;
  test::LogCapture log;
  test::FakePlatform platform;
  Registry registry;
  registry.add(std::make_unique<test::FakeBackend>("fake", std::vector<std::string>{"tile64", "tile128"}, "tile64"));
  const std::string table = dir.file("a8w8_tuned_batched_gemm.csv");
  test::write_file(table, csv::join(tuned_table_columns(OpFamily::kA8W8Batched)) + "\n" +
                              format_tuned_row(a8w8_batched_row(16, 64, "fake:tile128")) + "\n");
  Settings s;
  s.a8w8_batched.table_files = {table};
  s.a8w8_batched.untuned_file = dir.file("a8w8_untuned_batched_gemm.csv");
  s.batched.untuned_file = dir.file("bf16_untuned_batched_gemm.csv");
  s.capture = true;
  Dispatcher d(registry, platform, s);
  EXPECT_EQ(d.table(OpFamily::kA8W8Batched).size(), 1u);
  EXPECT_EQ(d.table(OpFamily::kBatched).size(), 0u);

  const Resolution& hit = d.resolve(a8w8_batched_problem(16, 64, 512, 128));
  EXPECT_EQ(hit.level, WalkLevel::kExact);
  EXPECT_EQ(hit.solution->name(), "fake:tile128");
  // Another batch count is another key: the default, and captured in the family's own file.
  const Resolution& other = d.resolve(a8w8_batched_problem(8, 64, 512, 128));
  EXPECT_EQ(other.level, WalkLevel::kDefault);
  EXPECT_EQ(test::read_file(dir.file("a8w8_untuned_batched_gemm.csv")),
            "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,scales,B,transpose_a,transpose_b\n"
            "64,512,128,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,token_channel,8,False,True\n");
}

}  // namespace
}  // namespace tgemm
