// The skinny backend's solution names (src/backends/skinny/skinny_names.h): every tile of the
// instance lists round-trips through the formatter and the parser at every split, for every
// operand class its family has (16-bit, and FP8 / INT8 for the GEMV and weight-as-B); malformed
// names are refused; and every skinny kernelName of the shipped tables (configs/) parses to a tile
// this library instantiates, with the row's splitK.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "backends/skinny/skinny_names.h"
#include "core/table.h"

namespace tgemm::skinny {
namespace {

std::vector<MmaWeightATile> weight_a_tiles() {
  std::vector<MmaWeightATile> out;
#define TGEMM_TEST_ADD(MT, RW, WN, WK, U, S) out.push_back(MmaWeightATile{MT, RW, WN, WK, U, S});
  TGEMM_SKINNY_MMA_WEIGHT_A_TILES(TGEMM_TEST_ADD)
#undef TGEMM_TEST_ADD
  return out;
}

std::vector<MmaWeightBTile> weight_b_tiles() {
  std::vector<MmaWeightBTile> out;
#define TGEMM_TEST_ADD(RB, C, W, U) out.push_back(MmaWeightBTile{RB, C, W, U});
  TGEMM_SKINNY_MMA_WEIGHT_B_TILES(TGEMM_TEST_ADD)
#undef TGEMM_TEST_ADD
  return out;
}

std::vector<GemvTile> gemv_tiles() {
  std::vector<GemvTile> out;
#define TGEMM_TEST_ADD(MM, W, C)                 \
  out.push_back(GemvTile{MM, W, C, false});      \
  out.push_back(GemvTile{MM, W, C, true});
  TGEMM_SKINNY_GEMV_TILES(TGEMM_TEST_ADD)
#undef TGEMM_TEST_ADD
  return out;
}

template <class Tile>
bool contains(const std::vector<Tile>& tiles, const Tile& t) {
  return std::find(tiles.begin(), tiles.end(), t) != tiles.end();
}

// Whether the library registers the variant: its tile is in its family's list, its split one of
// the registered cluster sizes (1 for the GEMV).
bool is_registered(const SkinnyVariant& v) {
  const bool mma_split = v.split_k == 1 || v.split_k == 2 || v.split_k == 4 || v.split_k == 8;
  switch (v.family) {
    case SkinnyFamily::kGemv: return v.split_k == 1 && contains(gemv_tiles(), v.gemv);
    case SkinnyFamily::kMmaWeightA: return mma_split && contains(weight_a_tiles(), v.weight_a);
    case SkinnyFamily::kMmaWeightB: return mma_split && contains(weight_b_tiles(), v.weight_b);
  }
  return false;
}

TEST(SkinnyNames, EveryTileRoundTrips) {
  int names = 0;
  for (int sk : {1, 2, 4, 8}) {
    for (const MmaWeightATile& t : weight_a_tiles()) {
      const std::string name = mma_weight_a_name(t, sk);
      const auto v = parse_skinny_name(name);
      ASSERT_TRUE(v.has_value()) << name;
      EXPECT_EQ(v->family, SkinnyFamily::kMmaWeightA) << name;
      EXPECT_EQ(v->weight_a, t) << name;
      EXPECT_EQ(v->split_k, sk) << name;
      EXPECT_EQ(skinny_name(*v), name);
      ++names;
    }
    for (const MmaWeightBTile& t : weight_b_tiles()) {
      const std::string name = mma_weight_b_name(t, sk);
      const auto v = parse_skinny_name(name);
      ASSERT_TRUE(v.has_value()) << name;
      EXPECT_EQ(v->family, SkinnyFamily::kMmaWeightB) << name;
      EXPECT_EQ(v->weight_b, t) << name;
      EXPECT_EQ(v->split_k, sk) << name;
      EXPECT_EQ(skinny_name(*v), name);
      ++names;
    }
  }
  for (const GemvTile& t : gemv_tiles()) {
    const std::string name = gemv_name(t);
    const auto v = parse_skinny_name(name);
    ASSERT_TRUE(v.has_value()) << name;
    EXPECT_EQ(v->family, SkinnyFamily::kGemv) << name;
    EXPECT_EQ(v->gemv, t) << name;
    EXPECT_EQ(skinny_name(*v), name);
    ++names;
  }
  EXPECT_EQ(names, 4 * (31 + 6) + 16);
}

// The a8w8 classes of the GEMV and weight-as-B families: the tag after the family, parsed back
// with the tile; the 16-bit name of the same tile is another variant.
TEST(SkinnyNames, EightBitTilesRoundTripWithTheirTag) {
  int names = 0;
  for (SkinnyOperands o : {SkinnyOperands::kFp8, SkinnyOperands::kInt8}) {
    for (int sk : {1, 2, 4, 8}) {
      for (const MmaWeightBTile& t : weight_b_tiles()) {
        const std::string name = mma_weight_b_name(t, sk, o);
        const auto v = parse_skinny_name(name);
        ASSERT_TRUE(v.has_value()) << name;
        EXPECT_EQ(v->family, SkinnyFamily::kMmaWeightB) << name;
        EXPECT_EQ(v->operands, o) << name;
        EXPECT_EQ(v->weight_b, t) << name;
        EXPECT_EQ(v->split_k, sk) << name;
        EXPECT_EQ(skinny_name(*v), name);
        EXPECT_NE(name, mma_weight_b_name(t, sk));
        ++names;
      }
    }
    for (const GemvTile& t : gemv_tiles()) {
      const std::string name = gemv_name(t, o);
      const auto v = parse_skinny_name(name);
      ASSERT_TRUE(v.has_value()) << name;
      EXPECT_EQ(v->family, SkinnyFamily::kGemv) << name;
      EXPECT_EQ(v->operands, o) << name;
      EXPECT_EQ(v->gemv, t) << name;
      EXPECT_EQ(skinny_name(*v), name);
      EXPECT_NE(name, gemv_name(t));
      ++names;
    }
  }
  EXPECT_EQ(names, 2 * (4 * 6 + 16));
}

TEST(SkinnyNames, EightBitNamesSayWhatTheyAre) {
  EXPECT_EQ(gemv_name(GemvTile{1, 8, 4, false}, SkinnyOperands::kFp8), "skinny:sm90_gemv_fp8_m1_w8_c4");
  EXPECT_EQ(gemv_name(GemvTile{4, 8, 8, true}, SkinnyOperands::kInt8), "skinny:sm90_gemv_int8_m4_w8_c8_wp");
  EXPECT_EQ(mma_weight_b_name(MmaWeightBTile{2, 1, 4, 4}, 4, SkinnyOperands::kFp8),
            "skinny:sm90_mma_wb_fp8_m16_n16_wk4_u4_c1_sk4");
  const auto v = parse_skinny_name("skinny:sm90_mma_wb_int8_m16_n8_wk8_u2_c2_sk2");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->operands, SkinnyOperands::kInt8);
  EXPECT_EQ(v->weight_b, (MmaWeightBTile{1, 2, 8, 2}));
  const auto plain = parse_skinny_name("skinny:sm90_gemv_m1_w8_c4");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->operands, SkinnyOperands::k16Bit);
}

// A k-step and a GEMV row split count 16-byte chunks: 8 elements of a 16-bit dtype, 16 of an 8-bit
// one, so an 8-bit row of K elements splits as a 16-bit row of K / 2.
TEST(SkinnyNames, EightBitTilesCountChunksOfSixteenElements) {
  EXPECT_EQ(chunk_elems(DType::kBFloat16), 8);
  EXPECT_EQ(chunk_elems(DType::kFloat8E4M3), 16);
  EXPECT_EQ(chunk_elems(DType::kInt8), 16);
  EXPECT_EQ((MmaWeightBTile{2, 1, 4, 4}.k_step(8)), 32);
  EXPECT_EQ((MmaWeightBTile{2, 1, 4, 4}.k_step(16)), 64);
  EXPECT_EQ((MmaWeightBTile{1, 2, 8, 2}.k_step(16)), 128);
  for (const GemvTile& t : gemv_tiles())
    for (std::int64_t k : {16, 2048, 5120, 7168, 10240, 14336, 16384})
      EXPECT_EQ(t.segs(k, 16), t.segs(k / 2, 8)) << gemv_name(t) << " K=" << k;
  EXPECT_EQ((GemvTile{1, 8, 4, true}.segs(10240, 16)), 1);  // 640 chunks = 5 whole passes of 128
}

TEST(SkinnyNames, KnownNamesSayWhatTheyAre) {
  EXPECT_EQ(gemv_name(GemvTile{1, 8, 4, true}), "skinny:sm90_gemv_m1_w8_c4_wp");
  EXPECT_EQ(mma_weight_a_name(MmaWeightATile{16, 32, 2, 4, 2, 0}, 2), "skinny:sm90_mma_wa_m16_n64_wn2_wk4_u2_sk2");
  EXPECT_EQ(mma_weight_a_name(MmaWeightATile{8, 16, 1, 4, 2, 4}, 1), "skinny:sm90_mma_wa_m8_n16_wn1_wk4_u2_p4_sk1");
  EXPECT_EQ(mma_weight_b_name(MmaWeightBTile{2, 1, 4, 4}, 4), "skinny:sm90_mma_wb_m16_n16_wk4_u4_c1_sk4");
  const auto v = parse_skinny_name("skinny:sm90_mma_wb_m16_n8_wk8_u2_c2_sk2");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->weight_b, (MmaWeightBTile{1, 2, 8, 2}));
  EXPECT_EQ(v->split_k, 2);
}

TEST(SkinnyNames, MalformedNamesAreRefused) {
  for (const char* bad : {
           "",
           "skinny:",
           "skinny:sm90_gemv",
           "skinny:sm90_gemv_",
           "skinny:sm90_m1_gemv_w4_c4",                      // family after a field
           "skinny:sm90_m16_n16_wn1_wk4_u4_sk2",             // no family
           "skinny:sm90_gemv_m1_w4_c4_x16",                  // a field the grammar has not
           "skinny:sm90_gemv_m1_c4_w4",                      // fields out of order
           "skinny:sm90_gemv_m1_w4",                         // a field missing
           "skinny:sm90_gemv_m1_w4_c4_wp2",                  // a flag with a value
           "skinny:sm90_gemv_m1_w4_c04",                     // a leading zero
           "skinny:sm90_gemv_m0_w4_c4",                      // zero
           "skinny:sm90_gemv_m1_w4_c4_",                     // trailing '_'
           "skinny:sm90_gemv_m1_w4_c4x",                     // trailing text
           "skinny:sm90_gemvx_m1_w4_c4",                     // unknown family
           "skinny:sm80_gemv_m1_w4_c4",                      // other architecture
           "cublaslt:sm90_gemv_m1_w4_c4",                    // other backend
           "skinny:sm90_mma_wa_m16_n32_wn1_wk4_u2",          // no split
           "skinny:sm90_mma_wa_m16_n32_wn1_wk4_u2_sk1_sk2",  // repeated field
           "skinny:sm90_mma_wa_m16_n32_wn3_wk4_u2_sk1",      // rows not a multiple of wn
           "skinny:sm90_mma_wa_m16_n32_wn1_wk4_u2_c1_sk1",   // the other family's field
           "skinny:sm90_mma_wb_m8_n16_wk4_u4_c1_sk1",        // weight-as-B is M tile 16 only
           "skinny:sm90_mma_wb_m16_n12_wk4_u4_c1_sk1",       // rows not n8 blocks
           "skinny:sm90_mma_wb_m16_n16_wn1_wk4_u4_c1_sk1",   // no warps over rows there
           "skinny:sm90_mma_wb_m16_n16_wk4_u4_c1_sk1234567",
           "skinny:sm90_gemv_fp16_m1_w8_c4",  // operand tags: fp8 and int8 only
           "skinny:sm90_gemv_int4_m1_w8_c4",
           "skinny:sm90_gemv_m1_fp8_w8_c4",                  // the tag after a field
           "skinny:sm90_gemv_fp8_int8_m1_w8_c4",             // two tags
           "skinny:sm90_mma_wa_fp8_m16_n32_wn1_wk4_u2_sk1",  // weight-as-A has 16-bit instances only
           "skinny:sm90_mma_wb_m16_fp8_n16_wk4_u4_c1_sk1",
       })
    EXPECT_FALSE(parse_skinny_name(bad).has_value()) << bad;
}

// Every skinny kernelName of the shipped tables (directly or as a split row's inner solution)
// parses and names a registered variant, and a skinny row's splitK column is the name's split.
TEST(SkinnyNames, ShippedTablesUseRegisteredNames) {
  int rows = 0;
  for (const char* rel : {"configs/bf16_tuned_gemm.csv", "configs/h200/bf16_tuned_gemm.csv"}) {
    const std::string path = std::string(TGEMM_TEST_SOURCE_DIR) + "/" + rel;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const ParsedTable t = parse_tuned_table(in, path);
    EXPECT_TRUE(t.warnings.empty()) << path << ": " << t.warnings.front();
    for (const TableRow& row : t.rows) {
      std::string name = row.kernel_name;
      const bool split = name.rfind("split:", 0) == 0;
      if (split) name = name.substr(6);
      if (name.rfind("skinny:", 0) != 0) continue;
      ++rows;
      const auto v = parse_skinny_name(name);
      ASSERT_TRUE(v.has_value()) << path << ":" << row.line << ": " << name;
      EXPECT_TRUE(is_registered(*v)) << path << ":" << row.line << ": " << name;
      if (!split) {
        EXPECT_EQ(row.split_k, v->split_k) << path << ":" << row.line << ": " << name;
      }
    }
  }
  EXPECT_GT(rows, 0) << "no skinny row in the shipped tables";
}

}  // namespace
}  // namespace tgemm::skinny
