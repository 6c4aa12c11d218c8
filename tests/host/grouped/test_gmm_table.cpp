// gmm's tuned table (src/grouped/gmm_table.h): the rows-per-group bucket, parsing, bad rows (one
// warning naming file and line, row skipped), merging, lookup by key, and the capture's rows.
#include <gtest/gtest.h>

#include <string>

#include "grouped/gmm_table.h"
#include "tests/host/core/keyed_table_checks.h"

namespace tgemm {
namespace {

const std::string kHeader =
    "arch,sm_count,G,rows_per_group,M,N,K,rhs,dtype,outdtype,bias,solution,us,us_skewed,speedup,speedup_skewed,"
    "default\n";

ParsedGmmTable parse(const std::string& text) { return test::parse_text<GmmTableTraits>(text); }

GmmKey key_of(std::int64_t m, std::int64_t g, std::int64_t n, std::int64_t k, bool nk = true) {
  return gmm_key(m, g, n, k, nk, DType::kBFloat16, DType::kBFloat16, false, "sm_90a", 132);
}

TEST(GmmTable, BucketIsThePowerOfTwoAboveTheRowsPerGroup) {
  EXPECT_EQ(gmm_rows_bucket(8, 8), 1);
  EXPECT_EQ(gmm_rows_bucket(4, 8), 1);  // fewer rows than groups: at most one a group on average
  EXPECT_EQ(gmm_rows_bucket(16, 8), 2);
  EXPECT_EQ(gmm_rows_bucket(17, 8), 4);  // ceil(17 / 8) = 3
  EXPECT_EQ(gmm_rows_bucket(8 * 1024, 8), 1024);
  EXPECT_EQ(gmm_rows_bucket(8 * 1024 + 1, 8), 2048);
  EXPECT_EQ(gmm_rows_bucket(128 * 33, 128), 64);
  EXPECT_EQ(gmm_rows_bucket(0, 8), 0);
  EXPECT_EQ(gmm_rows_bucket(8, 0), 0);
}

TEST(GmmTable, ParsesARowAndFormatsItBack) {
  const std::string line =
      "sm_90a,132,32,128,4096,4096,7168,gnk,torch.bfloat16,torch.bfloat16,False,sm90_grouped_bf16_bk_128x128x64_coop,"
      "210.5,230.25,1.12,1.08,tile";
  auto t = parse(kHeader + line + "\n");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  const GmmRow& r = t.rows[0];
  EXPECT_EQ(r.key, key_of(4096, 32, 4096, 7168));
  EXPECT_EQ(r.m, 4096);
  EXPECT_EQ(r.solution, "sm90_grouped_bf16_bk_128x128x64_coop");
  EXPECT_DOUBLE_EQ(r.us, 210.5);
  EXPECT_DOUBLE_EQ(r.us_skewed, 230.25);
  EXPECT_DOUBLE_EQ(r.speedup, 1.12);
  EXPECT_DOUBLE_EQ(r.speedup_skewed, 1.08);
  EXPECT_EQ(r.default_solution, "tile");
  EXPECT_EQ(r.file, "t.csv");
  EXPECT_EQ(r.line, 2);
  EXPECT_EQ(format_gmm_row(r), line);
}

TEST(GmmTable, OptionalColumnsTakeTheirDefaults) {
  auto t =
      parse("arch,sm_count,G,rows_per_group,N,K,rhs,dtype,solution\nsm_90a,132,8,4,64,32,gkn,torch.float16,tile\n");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].key.out_dtype, DType::kFloat16);
  EXPECT_FALSE(t.rows[0].key.bias);
  EXPECT_FALSE(t.rows[0].key.rhs_nk);
  EXPECT_EQ(t.rows[0].m, 0);
}

TEST(GmmTable, EachBadRowIsOneWarningWithFileAndLineAndIsSkipped) {
  const std::string good = "sm_90a,132,8,4,32,64,32,gnk,torch.bfloat16,torch.bfloat16,False,tile,1,1,1,1,tile\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"sm_90a,132,8,3,24,64,32,gnk,torch.bfloat16,torch.bfloat16,False,tile,1,1,1,1,tile\n", "power of two"},
      {"sm_90a,132,8,4,64,64,32,gnk,torch.bfloat16,torch.bfloat16,False,tile,1,1,1,1,tile\n", "bucket 8"},
      {"sm_90a,132,8,4,32,64,32,nk,torch.bfloat16,torch.bfloat16,False,tile,1,1,1,1,tile\n", "rhs must be"},
      {"sm_90a,132,8,4,32,64,32,gnk,torch.float32,torch.float32,False,tile,1,1,1,1,tile\n", "dtype must be"},
      {"sm_90a,132,8,4,32,64,32,gnk,torch.bfloat16,torch.float16,False,tile,1,1,1,1,tile\n", "outdtype"},
      {"sm_90a,132,8,4,32,64,32,gnk,torch.bfloat16,torch.bfloat16,maybe,tile,1,1,1,1,tile\n", "bias"},
      {"sm_90a,132,8,4,32,64,32,gnk,torch.bfloat16,torch.bfloat16,False,,1,1,1,1,tile\n", "empty solution"},
      {"sm_90a,132,8,4,32,64,32,gnk,torch.bfloat16,torch.bfloat16,False,tile,-1,1,1,1,tile\n", "us must be"},
      {"sm_90a,132,0,4,32,64,32,gnk,torch.bfloat16,torch.bfloat16,False,tile,1,1,1,1,tile\n", "G must be"},
      {"sm_90a,132,8,4,32,64,32,gnk,torch.bfloat16\n", "fields where the header has"},
  };
  test::expect_each_bad_line_skipped<GmmTableTraits>(kHeader, good, bad);
}

TEST(GmmTable, AHeaderWithoutAKeyColumnSkipsTheFile) {
  test::expect_header_without_column_skips<GmmTableTraits>(
      "arch,sm_count,G,N,K,rhs,dtype,solution\nsm_90a,132,8,64,32,gnk,torch.bfloat16,tile\n", "rows_per_group");
}

TEST(GmmTable, LookupServesTheRowsBucketOnly) {
  GmmTable table;
  table.add_rows(parse(kHeader + "sm_90a,132,32,128,,4096,7168,gnk,torch.bfloat16,torch.bfloat16,False,tile,1,1,1,1,"
                                 "sm90_grouped_bf16_bk_64x128x64_pingpong\n")
                     .rows);
  ASSERT_EQ(table.size(), 1u);
  // ceil(M / 32) in (64, 128]: served.
  EXPECT_NE(table.find(key_of(32 * 128, 32, 4096, 7168)), nullptr);
  EXPECT_NE(table.find(key_of(32 * 64 + 1, 32, 4096, 7168)), nullptr);
  // Next to the bucket: the default rule.
  EXPECT_EQ(table.find(key_of(32 * 64, 32, 4096, 7168)), nullptr);
  EXPECT_EQ(table.find(key_of(32 * 128 + 1, 32, 4096, 7168)), nullptr);
  // Another G, layout, dtype, out dtype, bias, N or SM count: no row.
  EXPECT_EQ(table.find(key_of(16 * 128, 16, 4096, 7168)), nullptr);
  EXPECT_EQ(table.find(key_of(32 * 128, 32, 4096, 7168, false)), nullptr);
  EXPECT_EQ(table.find(key_of(32 * 128, 32, 4096, 2048)), nullptr);
  GmmKey other = key_of(32 * 128, 32, 4096, 7168);
  other.out_dtype = DType::kFloat32;
  EXPECT_EQ(table.find(other), nullptr);
  other = key_of(32 * 128, 32, 4096, 7168);
  other.bias = true;
  EXPECT_EQ(table.find(other), nullptr);
  test::expect_another_sm_count_misses(table, key_of(32 * 128, 32, 4096, 7168));
}

TEST(GmmTable, AFileKeepsItsFastestRowAndALaterFileWins) {
  const std::string key = "sm_90a,132,8,4,,64,32,gnk,torch.bfloat16,torch.bfloat16,False,";
  test::expect_fastest_row_then_later_file_wins<GmmTableTraits>(
      kHeader, key + "tile,5,5,1.1,1.1,x\n", key + "fast,4,4,1.2,1.2,x\n", key + "later,9,9,1.1,1.1,x\n",
      key_of(32, 8, 64, 32), "fast", "later");
}

TEST(GmmTable, AMissingFileIsAWarning) { test::expect_missing_file_warns<GmmTableTraits>(); }

TEST(GmmTable, TheUntunedRowIsTheBucketsTopAndParsesAsATableKey) {
  GmmKey key = key_of(32 * 100, 32, 4096, 7168, false);
  key.out_dtype = DType::kFloat32;
  key.bias = true;
  EXPECT_EQ(format_gmm_untuned_row(key), "32,4096,4096,7168,gkn,torch.bfloat16,torch.float32,True");
  EXPECT_EQ(gmm_untuned_columns().size(), 8u);
}

// TGEMM_TUNE_GEMM: GmmTables writes each untuned key once, under gmm's untuned header.
TEST(GmmTable, CaptureWritesEachKeyOnce) {
  test::expect_capture_writes_each_key_once<GmmTableTraits>(
      {key_of(32 * 128, 32, 4096, 7168), key_of(32 * 100, 32, 4096, 7168) /* the same bucket */,
       key_of(8 * 2, 8, 4096, 7168)},
      "G,M,N,K,rhs,dtype,outdtype,bias\n"
      "32,4096,4096,7168,gnk,torch.bfloat16,torch.bfloat16,False\n"
      "8,16,4096,7168,gnk,torch.bfloat16,torch.bfloat16,False\n");
}

TEST(GmmTable, CardFileServesItsCardAndOtherSmCountsWarn) {
  test::expect_card_file_serves_its_card<GmmTableTraits>(
      kHeader, "sm_90a,114,8,4,,64,32,gnk,torch.bfloat16,torch.bfloat16,False,shared,1,1,1,1,x\n",
      "sm_90a,132,8,4,,64,32,gnk,torch.bfloat16,torch.bfloat16,False,card,1,1,1,1,x\n", key_of(32, 8, 64, 32), "card");
}

}  // namespace
}  // namespace tgemm
