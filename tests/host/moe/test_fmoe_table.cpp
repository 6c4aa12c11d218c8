// fused_moe's tuned table (src/moe/fmoe_table.h): the token bucket, parsing, bad rows (one warning
// naming file and line, row skipped), merging, lookup by key and bucket, the capture's rows, the
// per-card file and the TGEMM_CONFIG_FMOE setting.
#include <gtest/gtest.h>

#include <string>

#include "moe/fmoe_table.h"
#include "tests/host/core/keyed_table_checks.h"

namespace tgemm {
namespace {

const std::string kHeader =
    "arch,sm_count,tokens,T,E,topk,H,I,dtype,quant,activation,solution,up,down,us,us_skewed,speedup,speedup_skewed,"
    "default\n";
const std::string kUp = "sm90_grouped_bf16_bk_64x128x64_pingpong";
const std::string kDown = "sm90_grouped_bf16_bk_128x128x64_coop";

ParsedFmoeTable parse(const std::string& text) { return test::parse_text<FmoeTableTraits>(text); }

// Mixtral-8x7B's layer: E 8, topk 2, H 4096, I 14336.
FmoeKey key_of(std::int64_t t, std::int64_t e = 8, std::int64_t topk = 2, std::int64_t h = 4096,
               std::int64_t i = 14336) {
  return fmoe_key(t, e, topk, h, i, DType::kBFloat16, FmoeQuant::kNone, MoeActivation::kSilu, "sm_90a", 132);
}

TEST(FmoeTable, BucketIsThePowerOfTwoAtOrAboveTheTokens) {
  EXPECT_EQ(fmoe_tokens_bucket(1), 1);
  EXPECT_EQ(fmoe_tokens_bucket(2), 2);
  EXPECT_EQ(fmoe_tokens_bucket(3), 4);
  EXPECT_EQ(fmoe_tokens_bucket(32), 32);
  EXPECT_EQ(fmoe_tokens_bucket(33), 64);
  EXPECT_EQ(fmoe_tokens_bucket(4097), 8192);
  EXPECT_EQ(fmoe_tokens_bucket(0), 0);
  EXPECT_EQ(fmoe_tokens_bucket(-5), 0);
}

TEST(FmoeTable, ParsesACutlassRowAndFormatsItBack) {
  const std::string line = "sm_90a,132,512,400,8,2,4096,14336,torch.bfloat16,none,silu,cutlass," + kUp + "," + kDown +
                           ",810.5,902.25,1.21,1.14,tile";
  auto t = parse(kHeader + line + "\n");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  const FmoeRow& r = t.rows[0];
  EXPECT_EQ(r.key, key_of(512));
  EXPECT_EQ(r.t, 400);
  EXPECT_EQ(r.solution, "cutlass");
  EXPECT_EQ(r.up, kUp);
  EXPECT_EQ(r.down, kDown);
  EXPECT_DOUBLE_EQ(r.us, 810.5);
  EXPECT_DOUBLE_EQ(r.us_skewed, 902.25);
  EXPECT_DOUBLE_EQ(r.speedup, 1.21);
  EXPECT_DOUBLE_EQ(r.speedup_skewed, 1.14);
  EXPECT_EQ(r.default_solution, "tile");
  EXPECT_EQ(r.file, "t.csv");
  EXPECT_EQ(r.line, 2);
  EXPECT_EQ(format_fmoe_row(r), line);
}

TEST(FmoeTable, OptionalColumnsTakeTheirDefaults) {
  auto t = parse("arch,sm_count,tokens,E,topk,H,I,dtype,solution\nsm_90a,132,8,16,4,2048,768,torch.float16,tile\n");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].key.quant, FmoeQuant::kNone);
  EXPECT_EQ(t.rows[0].key.activation, MoeActivation::kSilu);
  EXPECT_EQ(t.rows[0].key.dtype, DType::kFloat16);
  EXPECT_EQ(t.rows[0].t, 0);
  EXPECT_TRUE(t.rows[0].up.empty());
}

TEST(FmoeTable, EachBadRowIsOneWarningWithFileAndLineAndIsSkipped) {
  const std::string good = "sm_90a,132,8,8,8,2,64,32,torch.bfloat16,none,silu,tile,,,1,1,1,1,tile\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"sm_90a,132,6,6,8,2,64,32,torch.bfloat16,none,silu,tile,,,1,1,1,1,tile\n", "power of two"},
      {"sm_90a,132,8,9,8,2,64,32,torch.bfloat16,none,silu,tile,,,1,1,1,1,tile\n", "bucket 16"},
      {"sm_90a,132,8,8,8,9,64,32,torch.bfloat16,none,silu,tile,,,1,1,1,1,tile\n", "topk 9 must be <= E 8"},
      {"sm_90a,132,8,8,8,2,64,32,torch.float32,none,silu,tile,,,1,1,1,1,tile\n", "dtype must be"},
      {"sm_90a,132,8,8,8,2,64,32,torch.bfloat16,fp8_block,silu,tile,,,1,1,1,1,tile\n", "needs dtype"},
      {"sm_90a,132,8,8,8,2,64,32,torch.bfloat16,int4,silu,tile,,,1,1,1,1,tile\n", "unknown quant"},
      {"sm_90a,132,8,8,8,2,64,32,torch.bfloat16,none,relu,tile,,,1,1,1,1,tile\n", "unknown activation"},
      {"sm_90a,132,8,8,8,2,64,32,torch.bfloat16,none,silu,triton,,,1,1,1,1,tile\n", "solution must be"},
      {"sm_90a,132,8,8,8,2,64,32,torch.bfloat16,none,silu,cutlass," + kUp + ",,1,1,1,1,tile\n", "both GEMMs"},
      {"sm_90a,132,8,8,8,2,64,32,torch.bfloat16,none,silu,tile," + kUp + ",,1,1,1,1,tile\n", "a tile row"},
      {"sm_90a,132,8,8,8,2,64,32,torch.bfloat16,none,silu,tile,,,nan,1,1,1,tile\n", "us must be"},
      {"sm_90a,132,8,8,0,2,64,32,torch.bfloat16,none,silu,tile,,,1,1,1,1,tile\n", "E must be >= 1"},
      {"sm_90a,132,8,8,8,2,64\n", "fields where the header has"},
  };
  test::expect_each_bad_line_skipped<FmoeTableTraits>(kHeader, good, bad);
}

TEST(FmoeTable, AHeaderWithoutAKeyColumnSkipsTheFile) {
  test::expect_header_without_column_skips<FmoeTableTraits>(
      "arch,sm_count,E,topk,H,I,dtype,solution\nsm_90a,132,8,2,64,32,torch.bfloat16,tile\n", "tokens");
}

TEST(FmoeTable, LookupServesTheRowsBucketOnly) {
  FmoeTable table;
  table.add_rows(
      parse(kHeader + "sm_90a,132,32,,8,2,4096,14336,torch.bfloat16,none,silu,tile,,,1,1,1.3,1.2,cutlass\n").rows);
  ASSERT_EQ(table.size(), 1u);
  // T in (16, 32]: served.
  EXPECT_NE(table.find(key_of(32)), nullptr);
  EXPECT_NE(table.find(key_of(17)), nullptr);
  // Next to the bucket: the default rule.
  EXPECT_EQ(table.find(key_of(16)), nullptr);
  EXPECT_EQ(table.find(key_of(33)), nullptr);
  // Another E, topk, H, I, dtype, activation, quant or SM count: no row.
  EXPECT_EQ(table.find(key_of(32, 16)), nullptr);
  EXPECT_EQ(table.find(key_of(32, 8, 1)), nullptr);
  EXPECT_EQ(table.find(key_of(32, 8, 2, 2048)), nullptr);
  EXPECT_EQ(table.find(key_of(32, 8, 2, 4096, 1024)), nullptr);
  FmoeKey other = key_of(32);
  other.dtype = DType::kFloat16;
  EXPECT_EQ(table.find(other), nullptr);
  other = key_of(32);
  other.activation = MoeActivation::kGelu;
  EXPECT_EQ(table.find(other), nullptr);
  other = key_of(32);
  other.quant = FmoeQuant::kFp8Rowwise;
  EXPECT_EQ(table.find(other), nullptr);
  test::expect_another_sm_count_misses(table, key_of(32));
}

TEST(FmoeTable, AFileKeepsItsFastestRowAndALaterFileWins) {
  const std::string key = "sm_90a,132,8,,8,2,64,32,torch.bfloat16,none,silu,";
  test::expect_fastest_row_then_later_file_wins<FmoeTableTraits>(
      kHeader, key + "tile,,,5,5,1.1,1.1,x\n", key + "cutlass," + kUp + "," + kDown + ",4,4,1.2,1.2,x\n",
      key + "tile,,,9,9,1.1,1.1,x\n", key_of(8, 8, 2, 64, 32), "cutlass", "tile");
}

TEST(FmoeTable, AMissingFileIsAWarning) { test::expect_missing_file_warns<FmoeTableTraits>(); }

TEST(FmoeTable, TheUntunedRowIsTheBucketsTop) {
  FmoeKey key = key_of(100, 128, 8, 2048, 768);
  key.activation = MoeActivation::kGelu;
  EXPECT_EQ(format_fmoe_untuned_row(key), "128,128,8,2048,768,torch.bfloat16,none,gelu");
  EXPECT_EQ(fmoe_untuned_columns().size(), 8u);
}

// TGEMM_TUNE_GEMM: FmoeTables writes each untuned key once, under fused_moe's untuned header.
TEST(FmoeTable, CaptureWritesEachKeyOnce) {
  test::expect_capture_writes_each_key_once<FmoeTableTraits>({key_of(32), key_of(20) /* the same bucket */, key_of(1)},
                                                             "T,E,topk,H,I,dtype,quant,activation\n"
                                                             "32,8,2,4096,14336,torch.bfloat16,none,silu\n"
                                                             "1,8,2,4096,14336,torch.bfloat16,none,silu\n");
}

TEST(FmoeTable, CardFileServesItsCardAndOtherSmCountsWarn) {
  test::expect_card_file_serves_its_card<FmoeTableTraits>(
      kHeader, "sm_90a,114,8,,8,2,64,32,torch.bfloat16,none,silu,tile,,,1,1,1,1,x\n",
      "sm_90a,132,8,,8,2,64,32,torch.bfloat16,none,silu,cutlass," + kUp + "," + kDown + ",1,1,1,1,x\n",
      key_of(8, 8, 2, 64, 32), "cutlass");
}

}  // namespace
}  // namespace tgemm
