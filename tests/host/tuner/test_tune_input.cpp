// The tune command's input (tuner/tune_job.h): the untuned CSV of either family as the capture
// writes it, the problem sent to a worker and back, the table key and the row written with its
// `scales` column (a8w8), and the tuned file's header following its rows' family.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/capture.h"
#include "core/csv.h"
#include "core/table.h"
#include "tests/common/host_test_util.h"
#include "tgemm/error.h"
#include "tuner/tune_job.h"
#include "tuner/tuned_file.h"

namespace tgemm {
namespace {

// An a8w8 problem as gemm_a8w8's validation builds it (what the capture records).
GemmProblem a8w8_problem(std::int64_t m, std::int64_t n, std::int64_t k, DType in, ScaleGranularity xs,
                         ScaleGranularity ws, bool bias) {
  GemmProblem p;
  p.family = OpFamily::kA8W8;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.out_type = DType::kBFloat16;
  p.bias_type = DType::kFloat32;
  p.epilogue = bias ? Epilogue::kBias : Epilogue::kNone;
  p.a_scale = xs;
  p.b_scale = ws;
  p.lda = p.ldb = k;
  p.ldo = n;
  return p;
}

// An untuned CSV with the capture's header and rows for these problems.
std::string capture_csv(OpFamily family, const std::vector<GemmProblem>& problems) {
  std::string text = csv::join(untuned_table_columns(family)) + "\n";
  for (const GemmProblem& p : problems) text += format_untuned_row(p) + "\n";
  return text;
}

std::string write_input(const test::TempDir& dir, const std::string& text) {
  const std::string path = dir.file("untuned.csv");
  test::write_file(path, text);
  return path;
}

// The message of the error read_untuned throws, or "" when it does not.
std::string read_error(const std::string& text) {
  test::TempDir dir;
  const std::string path = write_input(dir, text);
  try {
    read_untuned(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr auto kTensor = ScaleGranularity::kTensor;
constexpr auto kRow = ScaleGranularity::kRow;

TEST(TuneInput, ReadsTheA8W8CaptureWithItsScales) {
  test::TempDir dir;
  const std::string path = write_input(
      dir, capture_csv(OpFamily::kA8W8, {a8w8_problem(16, 4096, 4096, DType::kFloat8E4M3, kTensor, kTensor, false),
                                         a8w8_problem(16, 4096, 4096, DType::kFloat8E4M3, kRow, kRow, false),
                                         a8w8_problem(16, 4096, 4096, DType::kFloat8E4M3, kTensor, kTensor, false),
                                         a8w8_problem(64, 1024, 512, DType::kInt8, kRow, kRow, true)}));
  const std::vector<UntunedProblem> got = read_untuned(path);
  ASSERT_EQ(got.size(), 3u);  // the repeated row dropped; the two recipes of one shape kept apart
  EXPECT_EQ(got[0].dtype, DType::kFloat8E4M3);
  EXPECT_EQ(got[0].out_dtype, DType::kBFloat16);
  EXPECT_EQ(got[0].a_scale, kTensor);
  EXPECT_EQ(got[0].b_scale, kTensor);
  EXPECT_EQ(got[0].family(), OpFamily::kA8W8);
  EXPECT_EQ(got[1].a_scale, kRow);
  EXPECT_EQ(got[1].b_scale, kRow);
  EXPECT_EQ(got[2].dtype, DType::kInt8);
  EXPECT_TRUE(got[2].bias);
  EXPECT_EQ(got[2].m, 64);
  EXPECT_TRUE(test::contains(got[1].describe(), "scales=token_channel")) << got[1].describe();
}

TEST(TuneInput, A16W16InputReadsAsBefore) {
  test::TempDir dir;
  const std::string path = write_input(dir, "M,N,K,bias,dtype,outdtype\n8,4096,4096,True,torch.bfloat16,\n");
  const std::vector<UntunedProblem> got = read_untuned(path);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].family(), OpFamily::kA16W16);
  EXPECT_EQ(got[0].out_dtype, DType::kBFloat16);
  EXPECT_EQ(got[0].a_scale, ScaleGranularity::kNone);
  EXPECT_FALSE(test::contains(got[0].describe(), "scales")) << got[0].describe();
}

TEST(TuneInput, RefusesA8W8RowsItCannotTune) {
  const std::string header = csv::join(untuned_table_columns(OpFamily::kA8W8)) + "\n";
  struct Case {
    std::string line, message;
  };
  const std::vector<Case> cases = {
      {"16,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,", "needs a scales column"},
      {"16,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,none", "needs a scales column"},
      {"16,4096,4096,False,torch.int8,torch.bfloat16,False,False,none,rowwise", "needs a scales column"},
      {"16,4096,4100,False,torch.int8,torch.bfloat16,False,False,none,tensor", "multiple of 16"},
      {"16,4096,4096,False,torch.float8_e5m2,torch.bfloat16,False,False,none,tensor", "float8_e4m3fn or torch.int8"},
      {"16,4096,4096,False,torch.int8,torch.int8,False,False,none,tensor", "outdtype must be"},
      {"16,4096,4096,True,torch.float8_e4m3fn,torch.bfloat16,False,False,gelu,tensor", "adds a bias only"},
      {"16,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,none,tensor", "scales belong to"},
  };
  for (const Case& c : cases) {
    const std::string error = read_error(header + c.line + "\n");
    EXPECT_TRUE(test::contains(error, c.message)) << c.line << " -> '" << error << "'";
    EXPECT_TRUE(test::contains(error, ":2:")) << "names the line: " << error;
  }
}

TEST(TuneInput, OneFamilyAFile) {
  const std::string error =
      read_error(csv::join(untuned_table_columns(OpFamily::kA8W8)) + "\n" +
                 "16,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,none,none\n"
                 "16,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,tensor\n");
  EXPECT_TRUE(test::contains(error, "one family a file")) << error;
  EXPECT_TRUE(test::contains(error, ":3:")) << error;
}

TEST(TuneInput, WorkerProblemCarriesFamilyScalesAndKey) {
  test::TempDir dir;
  const std::string path = write_input(
      dir, capture_csv(OpFamily::kA8W8, {a8w8_problem(48, 2048, 7168, DType::kFloat8E4M3, kRow, kTensor, true),
                                         a8w8_problem(1, 1024, 512, DType::kInt8, kTensor, kRow, false)}));
  for (const UntunedProblem& u : read_untuned(path)) {
    const GemmProblem p = problem_from_json(problem_json(u), 0);
    EXPECT_EQ(p.family, OpFamily::kA8W8) << u.describe();
    EXPECT_EQ(p.a_scale, u.a_scale) << u.describe();
    EXPECT_EQ(p.b_scale, u.b_scale) << u.describe();
    EXPECT_EQ(p.m, u.m);
    EXPECT_EQ(p.a_type, u.dtype);
    // The bias is raced in out's dtype, as problem_of_key builds a row's problem.
    if (u.bias) {
      EXPECT_EQ(p.bias_type, p.out_type) << u.describe();
    }
    const TableKey key = key_of(u, "sm_90a", 132);
    EXPECT_EQ(key.a_scale, u.a_scale);
    EXPECT_EQ(key.b_scale, u.b_scale);
    EXPECT_TRUE(table_key(p, "sm_90a", 132) == key) << key.describe();
    // The reconfirmation rebuilds the problem from the row's key: the same family, scales and bias.
    const GemmProblem back = problem_of_key(key, u.m, 0);
    EXPECT_EQ(back.family, p.family);
    EXPECT_EQ(back.a_scale, p.a_scale);
    EXPECT_EQ(back.b_scale, p.b_scale);
    EXPECT_EQ(back.bias_type, p.bias_type);
  }
}

TEST(TuneInput, A16W16WorkerProblemHasNoScales) {
  UntunedProblem u;
  u.m = 8;
  u.n = 256;
  u.k = 512;
  u.bias = true;
  const nlohmann::json pj = problem_json(u);
  const GemmProblem p = problem_from_json(pj, 0);
  EXPECT_EQ(p.family, OpFamily::kA16W16);
  EXPECT_EQ(p.a_scale, ScaleGranularity::kNone);
  EXPECT_EQ(p.bias_type, DType::kBFloat16);
  EXPECT_TRUE(table_key(p, "sm_90a", 132) == key_of(u, "sm_90a", 132));
  // A message from a parent that knows no scales (no "scales" field) is an a16w16 problem.
  nlohmann::json old = pj;
  old.erase("scales");
  EXPECT_TRUE(problem_from_json(old, 0) == p);
}

TableRow a8w8_row(std::int64_t m, ScaleGranularity xs, ScaleGranularity ws, const std::string& kernel) {
  UntunedProblem u;
  u.m = m;
  u.n = 4096;
  u.k = 4096;
  u.dtype = DType::kFloat8E4M3;
  u.a_scale = xs;
  u.b_scale = ws;
  TableRow r;
  r.key = key_of(u, "sm_90a", 132);
  r.m = m;
  r.libtype = "cublaslt";
  r.kernel_name = kernel;
  r.solidx = 66;
  r.us = 10.5;
  return r;
}

TEST(TuneInput, A8W8RowsAreWrittenWithScalesAndReadBack) {
  test::TempDir dir;
  const std::string path = dir.file("a8w8_tuned_gemm.csv");
  const std::string staged = "cublaslt:staged_algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100";
  const std::string fused = "cublaslt:fused_algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100";
  write_tuned_table(path, {a8w8_row(16, kRow, kRow, staged), a8w8_row(16, kTensor, kTensor, fused)});
  const std::vector<std::string> lines = test::read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], csv::join(tuned_table_columns(OpFamily::kA8W8)));
  std::istringstream in(test::read_file(path));
  const ParsedTable parsed = parse_tuned_table(in, path);
  EXPECT_TRUE(parsed.warnings.empty()) << parsed.warnings.front();
  ASSERT_EQ(parsed.rows.size(), 2u);
  // Sorted by key: per tensor before per token x per channel.
  EXPECT_EQ(parsed.rows[0].kernel_name, fused);
  EXPECT_EQ(parsed.rows[0].key.a_scale, kTensor);
  EXPECT_EQ(parsed.rows[1].kernel_name, staged);
  EXPECT_TRUE(parsed.rows[1].key == a8w8_row(16, kRow, kRow, staged).key) << parsed.rows[1].key.describe();
  EXPECT_TRUE(test::contains(lines[2], ",token_channel")) << lines[2];
  // A later update of one recipe's key keeps the other's row.
  update_tuned_table(path, {a8w8_row(16, kRow, kRow, "cublaslt:heuristic_staged")});
  std::istringstream again(test::read_file(path));
  const ParsedTable updated = parse_tuned_table(again, path);
  ASSERT_EQ(updated.rows.size(), 2u);
  EXPECT_EQ(updated.rows[0].kernel_name, fused);
  EXPECT_EQ(updated.rows[1].kernel_name, "cublaslt:heuristic_staged");
}

// A batched problem as validate_batched builds it (what the capture records).
GemmProblem batched_problem(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb,
                            bool bias) {
  TableKey key;
  key.n = n;
  key.k = k;
  key.bias = bias;
  key.batch = batch;
  key.transpose_a = ta;
  key.transpose_b = tb;
  return problem_of_key(key, m, 0);
}

TEST(TuneInput, ReadsTheBatchedCaptureWithBatchAndLayouts) {
  test::TempDir dir;
  const std::string path =
      write_input(dir, capture_csv(OpFamily::kBatched, {batched_problem(16, 64, 512, 128, false, false, false),
                                                        batched_problem(8, 256, 16, 4096, false, true, true),
                                                        batched_problem(8, 2048, 2048, 2048, true, false, false)}));
  const std::vector<UntunedProblem> problems = read_untuned(path);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[1].family(), OpFamily::kBatched);
  EXPECT_EQ(problems[1].batch, 8);
  EXPECT_TRUE(problems[1].transpose_b);
  EXPECT_TRUE(problems[2].transpose_a);
  EXPECT_TRUE(test::contains(problems[1].describe(), "B=8 transpose_a=False transpose_b=True"))
      << problems[1].describe();
  for (const UntunedProblem& u : problems) {
    // The worker's problem is the dense batched problem of the row's key (what problem_of_key races).
    const GemmProblem p = problem_from_json(problem_json(u), 0);
    EXPECT_EQ(p.family, OpFamily::kBatched) << u.describe();
    EXPECT_EQ(p.batch, u.batch);
    EXPECT_EQ(p.transpose_a, u.transpose_a);
    EXPECT_EQ(p.transpose_b, u.transpose_b);
    EXPECT_EQ(p.batch_stride_out, u.m * u.n);
    const TableKey key = key_of(u, "sm_90a", 132);
    EXPECT_EQ(key.batch, u.batch);
    EXPECT_TRUE(table_key(p, "sm_90a", 132) == key) << key.describe();
    EXPECT_TRUE(problem_of_key(key, u.m, 0) == p) << u.describe();
  }
  // Rates count every product of the batch.
  TableRow row;
  row.us = 1.0;
  const GemmProblem p0 = problem_from_json(problem_json(problems[0]), 0);
  set_row_rates(row, p0);
  EXPECT_NEAR(row.tflops, 2.0 * 16 * 64 * 512 * 128 / 1e6, 1e-6);
}

TEST(TuneInput, RefusesBatchedRowsItCannotTune) {
  const std::string header = csv::join(untuned_table_columns(OpFamily::kBatched)) + "\n";
  // An 8-bit batched row is batched_gemm_a8w8's: b [B, N, K] (transpose_b=True), scales named.
  EXPECT_TRUE(test::contains(
      read_error(header + "16,512,128,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,16,False,False\n"),
      "an 8-bit batched problem has transpose_a=False, transpose_b=True"));
  EXPECT_TRUE(test::contains(
      read_error(header + "16,512,128,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,16,False,True\n"),
      "torch.float8_e4m3fn problem needs a scales column"));
  EXPECT_TRUE(test::contains(
      read_error(header + "16,512,128,False,torch.bfloat16,torch.bfloat16,False,False,gelu,16,False,False\n"),
      "batched_gemm adds a bias only"));
  EXPECT_TRUE(test::contains(
      read_error(header + "16,512,128,False,torch.bfloat16,torch.bfloat16,False,False,none,0,False,False\n"),
      "B must be an integer in [1, "));
  EXPECT_TRUE(test::contains(
      read_error(header + "16,512,128,False,torch.bfloat16,torch.bfloat16,False,False,none,4,maybe,False\n"),
      "transpose_a must be True or False"));
}

// A batched_gemm_a8w8 problem as validate_batched_a8w8 builds it for dense operands.
GemmProblem a8w8_batched_problem(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, DType in,
                                 ScaleGranularity xs, ScaleGranularity ws, bool bias) {
  TableKey key;
  key.n = n;
  key.k = k;
  key.bias = bias;
  key.dtype = in;
  key.a_scale = xs;
  key.b_scale = ws;
  key.batch = batch;
  key.transpose_b = true;
  return problem_of_key(key, m, 0);
}

TEST(TuneInput, ReadsTheA8W8BatchedCaptureWithScalesAndBatch) {
  test::TempDir dir;
  const std::string path =
      write_input(dir, capture_csv(OpFamily::kA8W8Batched,
                                   {a8w8_batched_problem(16, 64, 512, 128, DType::kFloat8E4M3, kRow, kRow, false),
                                    a8w8_batched_problem(128, 1, 1536, 512, DType::kInt8, kTensor, kTensor, true)}));
  const std::vector<UntunedProblem> problems = read_untuned(path);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].family(), OpFamily::kA8W8Batched);
  EXPECT_EQ(problems[1].batch, 128);
  EXPECT_EQ(problems[1].a_scale, kTensor);
  EXPECT_TRUE(test::contains(problems[0].describe(), "B=16 transpose_a=False transpose_b=True"))
      << problems[0].describe();
  for (const UntunedProblem& u : problems) {
    const GemmProblem p = problem_from_json(problem_json(u), 0);
    EXPECT_EQ(p.family, OpFamily::kA8W8Batched) << u.describe();
    EXPECT_EQ(p.batch, u.batch);
    EXPECT_TRUE(p.transpose_b);
    EXPECT_EQ(p.batch_stride_a_scale, u.a_scale == kRow ? u.m : 1);
    const TableKey key = key_of(u, "sm_90a", 132);
    EXPECT_EQ(key.family(), OpFamily::kA8W8Batched);
    EXPECT_TRUE(table_key(p, "sm_90a", 132) == key) << key.describe();
    EXPECT_TRUE(problem_of_key(key, u.m, 0) == p) << u.describe();
  }
}

TEST(TuneInput, RefusesA8W8BatchedRowsItCannotTune) {
  const std::string header = csv::join(untuned_table_columns(OpFamily::kA8W8Batched)) + "\n";
  EXPECT_TRUE(test::contains(
      read_error(header + "16,512,128,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,block,4,False,True\n"),
      "scales 'block' on a batched problem"));
  EXPECT_TRUE(test::contains(
      read_error(header + "16,512,128,False,torch.int8,torch.bfloat16,False,False,none,tensor,4,True,True\n"),
      "transpose_a=False, transpose_b=True"));
  EXPECT_TRUE(test::contains(
      read_error(header + "16,512,120,False,torch.int8,torch.bfloat16,False,False,none,tensor,4,False,True\n"),
      "K must be a multiple of 16"));
}

TEST(TuneInput, BatchedRowsAreWrittenWithTheirColumnsAndReadBack) {
  test::TempDir dir;
  const std::string path = dir.file("bf16_tuned_batched_gemm.csv");
  TableRow r;
  r.key = table_key(batched_problem(16, 64, 512, 128, false, true, false), "sm_90a", 132);
  r.m = 64;
  r.libtype = "cublaslt";
  r.kernel_name = "cublaslt:heuristic";
  r.solidx = -1;
  r.us = 7;
  write_tuned_table(path, {r});
  const std::vector<std::string> lines = test::read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], csv::join(tuned_table_columns(OpFamily::kBatched)));
  EXPECT_TRUE(test::contains(lines[1], ",16,False,True")) << lines[1];
  std::istringstream in(test::read_file(path));
  const ParsedTable parsed = parse_tuned_table(in, path);
  ASSERT_EQ(parsed.rows.size(), 1u);
  EXPECT_TRUE(parsed.rows[0].key == r.key) << parsed.rows[0].key.describe();
}

TEST(TuneInput, A16W16TablesKeepTheirHeader) {
  test::TempDir dir;
  const std::string path = dir.file("bf16_tuned_gemm.csv");
  TableRow r;
  r.key.arch = "sm_90a";
  r.key.sm_count = 132;
  r.key.n = r.key.k = 4096;
  r.m = 1;
  r.libtype = "cublaslt";
  r.kernel_name = "cublaslt:heuristic";
  r.us = 3;
  write_tuned_table(path, {r});
  EXPECT_EQ(test::read_lines(path).front(), csv::join(tuned_table_columns()));
}

TEST(TuneInput, BlockscaleCaptureIsItsOwnFamily) {
  GemmProblem b =
      a8w8_problem(48, 7168, 2048, DType::kFloat8E4M3, ScaleGranularity::kBlock, ScaleGranularity::kBlock, false);
  b.family = OpFamily::kA8W8Blockscale;
  test::TempDir dir;
  const std::string path = write_input(dir, capture_csv(OpFamily::kA8W8Blockscale, {b}));
  const std::vector<UntunedProblem> got = read_untuned(path);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].family(), OpFamily::kA8W8Blockscale);
  EXPECT_TRUE(test::contains(got[0].describe(), "scales=block")) << got[0].describe();
  // The worker races the block-scale layout cuBLASLt reads without a copy; the key is the family's.
  const GemmProblem p = problem_from_json(problem_json(got[0]), 0);
  EXPECT_EQ(p.family, OpFamily::kA8W8Blockscale);
  EXPECT_EQ(p.a_scale, ScaleGranularity::kBlock);
  EXPECT_TRUE(p.a_scale_mn_major);
  EXPECT_EQ(p.ld_a_scale, 48);
  EXPECT_EQ(p.ld_b_scale, 16);
  EXPECT_EQ(family_of_key(key_of(got[0], "sm_90a", 132)), OpFamily::kA8W8Blockscale);
  // Block scales belong to FP8 rows; a file mixing them with per-token rows mixes two tables.
  const std::string header = csv::join(untuned_table_columns(OpFamily::kA8W8Blockscale)) + "\n";
  const std::string int8 = read_error(header + "16,4096,4096,False,torch.int8,torch.bfloat16,False,False,none,block\n");
  EXPECT_TRUE(test::contains(int8, "scales 'block' need torch.float8_e4m3fn operands")) << int8;
  const std::string mixed =
      read_error(header + "16,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,block\n" +
                 "16,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,False,False,none,token\n");
  EXPECT_TRUE(test::contains(mixed, "one family a file")) << mixed;
}

}  // namespace
}  // namespace tgemm
