// The batched family's table format (B, transpose_a and transpose_b in the key), its capture rows
// and the dispatcher's use of its own table, with the fake platform and backend of the host tests
// (its settings: test_settings.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/capture.h"
#include "core/csv.h"
#include "core/dispatcher.h"
#include "core/table.h"
#include "tests/common/host_fakes.h"
#include "tests/common/host_test_util.h"

namespace tgemm {
namespace {

using test::contains;

GemmProblem batched_problem(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, bool ta = false,
                            bool tb = false) {
  GemmProblem p;
  p.family = OpFamily::kBatched;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  p.transpose_a = ta;
  p.transpose_b = tb;
  p.lda = ta ? m : k;
  p.ldb = tb ? k : n;
  p.ldo = n;
  p.batch_stride_a = m * k;
  p.batch_stride_b = n * k;
  p.batch_stride_out = m * n;
  return p;
}

TableRow batched_row(std::int64_t batch, std::int64_t m, bool tb, const std::string& kernel) {
  TableRow r;
  r.key = table_key(batched_problem(batch, m, 512, 128, false, tb), "sm_90a", 132);
  r.m = m;
  r.libtype = "fake";
  r.kernel_name = kernel;
  r.us = 5;
  return r;
}

ParsedTable parse(const std::string& text) {
  std::istringstream in(text);
  return parse_tuned_table(in, "bf16_tuned_batched_gemm.csv");
}

TEST(BatchedTable, ColumnsAddTheBatchAndLayoutsLast) {
  EXPECT_EQ(csv::join(tuned_table_columns(OpFamily::kBatched)),
            csv::join(tuned_table_columns()) + ",B,transpose_a,transpose_b");
  EXPECT_EQ(csv::join(untuned_table_columns(OpFamily::kBatched)),
            csv::join(untuned_table_columns()) + ",B,transpose_a,transpose_b");
  EXPECT_EQ(family_info(OpFamily::kBatched).tuned_file, "bf16_tuned_batched_gemm.csv");
  EXPECT_EQ(family_info(OpFamily::kBatched).config_env, "TGEMM_CONFIG_BF16_BATCHED_GEMM");
}

TEST(BatchedTable, KeyHoldsBatchAndLayoutsAndRoundTrips) {
  const TableRow row = batched_row(16, 64, true, "fake:tile128");
  EXPECT_EQ(row.key.family(), OpFamily::kBatched);
  EXPECT_EQ(row.key.batch, 16);
  EXPECT_TRUE(row.key.transpose_b);
  ParsedTable t = parse(csv::join(tuned_table_columns(OpFamily::kBatched)) + "\n" + format_tuned_row(row) + "\n");
  ASSERT_EQ(t.rows.size(), 1u) << (t.warnings.empty() ? "" : t.warnings[0]);
  EXPECT_TRUE(t.rows[0].key == row.key);
  EXPECT_EQ(t.rows[0].key.family(), OpFamily::kBatched);
  // B and the layouts tell keys apart: another batch or transpose is another key.
  EXPECT_FALSE(batched_row(8, 64, true, "k").key == row.key);
  EXPECT_FALSE(batched_row(16, 64, false, "k").key == row.key);
  // A problem of the key is a batched problem with dense operands of those layouts.
  const GemmProblem p = problem_of_key(row.key, 64, 0);
  EXPECT_EQ(p.family, OpFamily::kBatched);
  EXPECT_EQ(p.batch, 16);
  EXPECT_EQ(p.ldb, 128);  // b [B, N, K]
  EXPECT_EQ(p.batch_stride_b, 512 * 128);
  EXPECT_EQ(p.batch_stride_out, 64 * 512);
  EXPECT_EQ(p.align_a, 16);
  EXPECT_TRUE(table_key(p, "sm_90a", 132) == row.key);
  // Odd dense strides: the later products' matrices are only element-aligned.
  TableKey odd = row.key;
  odd.n = 33;
  odd.k = 17;
  const GemmProblem q = problem_of_key(odd, 5, 0);
  EXPECT_EQ(q.align_a, 2);    // 5 * 17 elements
  EXPECT_EQ(q.align_b, 2);    // 33 * 17
  EXPECT_EQ(q.align_out, 2);  // 5 * 33
  EXPECT_EQ(stride_alignment(0, DType::kBFloat16), 16);
  EXPECT_EQ(stride_alignment(4, DType::kBFloat16), 8);
}

TEST(BatchedTable, BadBatchValuesAreSkippedWithAWarning) {
  const std::string header = csv::join(tuned_table_columns(OpFamily::kBatched)) + "\n";
  const std::string good = format_tuned_row(batched_row(16, 64, false, "fake:tile64"));
  auto with_batch = [&](const std::string& b) {
    std::string line = good;
    line.replace(line.rfind(",16,"), 4, "," + b + ",");
    return line;
  };
  ParsedTable zero = parse(header + with_batch("0") + "\n");
  EXPECT_TRUE(zero.rows.empty());
  ASSERT_FALSE(zero.warnings.empty());
  EXPECT_TRUE(contains(zero.warnings[0], "B must be >= 1, got 0")) << zero.warnings[0];
  ParsedTable text = parse(header + with_batch("x") + "\n");
  EXPECT_TRUE(text.rows.empty());
  ASSERT_FALSE(text.warnings.empty());
  EXPECT_TRUE(contains(text.warnings[0], "bad B 'x'")) << text.warnings[0];
}

TEST(BatchedCapture, RowCarriesBatchAndLayouts) {
  EXPECT_EQ(format_untuned_row(batched_problem(128, 1, 512, 128, true, false)),
            "1,512,128,False,torch.bfloat16,torch.bfloat16,False,False,none,128,True,False");
}

TEST(BatchedDispatch, BatchedProblemsUseTheirOwnTableAndCapture) {
  test::TempDir dir;
  test::LogCapture log;
  test::FakePlatform platform;
  Registry registry;
  registry.add(std::make_unique<test::FakeBackend>("fake", std::vector<std::string>{"tile64", "tile128"}, "tile64"));
  const std::string table = dir.file("bf16_tuned_batched_gemm.csv");
  test::write_file(table, csv::join(tuned_table_columns(OpFamily::kBatched)) + "\n" +
                              format_tuned_row(batched_row(16, 64, false, "fake:tile128")) + "\n");
  Settings s;
  s.batched.table_files = {table};
  s.batched.untuned_file = dir.file("bf16_untuned_batched_gemm.csv");
  s.a16w16.untuned_file = dir.file("bf16_untuned_gemm.csv");
  s.capture = true;
  Dispatcher d(registry, platform, s);
  EXPECT_EQ(d.table(OpFamily::kBatched).size(), 1u);
  EXPECT_EQ(d.table(OpFamily::kA16W16).size(), 0u);

  const Resolution& hit = d.resolve(batched_problem(16, 64, 512, 128));
  EXPECT_EQ(hit.level, WalkLevel::kExact);
  EXPECT_EQ(hit.solution->name(), "fake:tile128");
  // Another batch count of the same shape is another key: the default, and captured.
  const Resolution& other = d.resolve(batched_problem(8, 64, 512, 128));
  EXPECT_EQ(other.level, WalkLevel::kDefault);
  EXPECT_EQ(other.solution->name(), "fake:tile64");
  // The a16w16 problem of the same M, N, K is not served by the batched row.
  GemmProblem plain = batched_problem(1, 64, 512, 128);
  plain.family = OpFamily::kA16W16;
  plain.batch = 1;
  plain.transpose_b = true;
  plain.ldb = 128;
  EXPECT_EQ(d.resolve(plain).level, WalkLevel::kDefault);
  EXPECT_EQ(test::read_file(dir.file("bf16_untuned_batched_gemm.csv")),
            "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,B,transpose_a,transpose_b\n"
            "64,512,128,False,torch.bfloat16,torch.bfloat16,False,False,none,8,False,False\n");
  EXPECT_EQ(test::read_file(dir.file("bf16_untuned_gemm.csv")),
            "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue\n"
            "64,512,128,False,torch.bfloat16,torch.bfloat16,False,False,none\n");
}

}  // namespace
}  // namespace tgemm
