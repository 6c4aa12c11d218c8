// The batched skinny backend's names and the problems its tiles accept
// (src/backends/skinny/skinny_batched_names.h): every tile round-trips through the formatter and
// the parser, malformed names are refused, and batched_tile_accepts takes the decode-shaped
// problems of the batched suite in the right layout and declines every problem a kernel would
// compute wrongly.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <tuple>

#include "backends/skinny/skinny_batched_names.h"

namespace tgemm::skinny {
namespace {

TEST(BatchedSkinnyNames, EveryTileRoundTrips) {
  const auto tiles = batched_tiles();
  EXPECT_EQ(tiles.size(), 10u + 12u + 2u);
  for (const BatchedTile& t : tiles) {
    const std::string name = batched_skinny_name(t);
    const auto parsed = parse_batched_skinny_name(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, t) << name;
    for (const BatchedTile& o : tiles) {
      if (!(o == t)) {
        EXPECT_NE(batched_skinny_name(o), name);
      }
    }
  }
  EXPECT_EQ(batched_skinny_name(BatchedTile{BatchedLayout::kNK, 1, 32}), "batched_skinny:sm90_bgemv_nk_m1_l32");
  EXPECT_EQ(batched_skinny_name(BatchedTile{BatchedLayout::kKN, 4, 8}), "batched_skinny:sm90_bgemv_kn_m4_c8");
  const BatchedTile mma{BatchedLayout::kNK, 16, 4, BatchedFamily::kMma};
  EXPECT_EQ(batched_skinny_name(mma), "batched_skinny:sm90_bmma_nk_m16_u4");
  EXPECT_EQ(mma.block_n(), 32);
  EXPECT_FALSE(mma == (BatchedTile{BatchedLayout::kNK, 16, 4}));
}

TEST(BatchedSkinnyNames, MalformedNamesAreRefused) {
  for (const char* bad :
       {"", "batched_skinny:", "skinny:sm90_bgemv_nk_m1_l32", "batched_skinny:sm90_bgemv_nn_m1_l32",
        "batched_skinny:sm90_bgemv_nk_m1", "batched_skinny:sm90_bgemv_nk_l32_m1", "batched_skinny:sm90_bgemv_nk_m1_c32",
        "batched_skinny:sm90_bgemv_kn_m1_l8", "batched_skinny:sm90_bgemv_nk_m01_l32",
        "batched_skinny:sm90_bgemv_nk_m0_l32", "batched_skinny:sm90_bgemv_nk_m1_l32_",
        "batched_skinny:sm90_bgemv_nk_m1_l32x", "batched_skinny:sm90_bgemv_kn_m1_c99999",
        "batched_skinny:sm90_bgemv_kn_m_c8", "batched_skinny:sm90_bmma_kn_m16_u2", "batched_skinny:sm90_bmma_nk_m16_l2",
        "batched_skinny:sm90_bmm_nk_m16_u2", "batched_skinny:sm90_nk_m1_l32"}) {
    EXPECT_FALSE(parse_batched_skinny_name(bad).has_value()) << bad;
  }
}

// A contiguous batched_gemm problem: a [B, M, K], b [B, N, K] (transpose_b) or [B, K, N].
GemmProblem batched_problem(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, bool transpose_b) {
  GemmProblem p;
  p.family = OpFamily::kBatched;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  p.transpose_a = false;
  p.transpose_b = transpose_b;
  p.lda = k;
  p.ldb = transpose_b ? k : n;
  p.ldo = n;
  p.batch_stride_a = m * k;
  p.batch_stride_b = n * k;
  p.batch_stride_out = m * n;
  return p;
}

const BatchedTile kNk1{BatchedLayout::kNK, 1, 32};
const BatchedTile kNk16{BatchedLayout::kNK, 16, 8};
const BatchedTile kKn1{BatchedLayout::kKN, 1, 8};
const BatchedTile kKn8{BatchedLayout::kKN, 8, 2};
const BatchedTile kMma{BatchedLayout::kNK, 16, 2, BatchedFamily::kMma};

TEST(BatchedSkinnyAccepts, TheSuitesDecodeProblemsInTheirLayout) {
  // DeepSeek MLA's absorbed projections: b [B, K, N], not transposed.
  for (auto [batch, n, k] : {std::tuple{16, 512, 128}, {16, 128, 512}, {128, 512, 128}}) {
    const GemmProblem p = batched_problem(batch, 1, n, k, false);
    EXPECT_TRUE(batched_tile_accepts(kKn1, p)) << p.describe();
    EXPECT_TRUE(batched_tile_accepts(kKn8, p)) << p.describe();
    EXPECT_FALSE(batched_tile_accepts(kNk1, p)) << "b [K, N] is not the nk kernel's layout";
  }
  const GemmProblem shrink = batched_problem(8, 4, 16, 4096, true);
  EXPECT_TRUE(batched_tile_accepts(kNk16, shrink));
  EXPECT_TRUE(batched_tile_accepts(kMma, shrink));
  EXPECT_FALSE(batched_tile_accepts(kNk1, shrink)) << "M = 4 > m_max 1";
  EXPECT_FALSE(batched_tile_accepts(kKn1, shrink)) << "b [N, K] is not the kn kernel's layout";
}

TEST(BatchedSkinnyAccepts, TokensDtypesAndEpilogue) {
  GemmProblem p = batched_problem(16, 8, 512, 128, false);
  EXPECT_TRUE(batched_tile_accepts(kKn8, p));
  p.m = 9;
  EXPECT_FALSE(batched_tile_accepts(kKn8, p));
  p.m = 0;
  EXPECT_FALSE(batched_tile_accepts(kKn8, p));

  GemmProblem q = batched_problem(16, 1, 512, 128, false);
  q.a_type = q.b_type = DType::kFloat16;
  q.out_type = DType::kFloat32;
  q.epilogue = Epilogue::kBias;
  q.bias_type = DType::kFloat32;
  EXPECT_TRUE(batched_tile_accepts(kKn1, q));
  for (auto change : std::initializer_list<void (*)(GemmProblem&)>{
           [](GemmProblem& r) { r.family = OpFamily::kA16W16; },
           [](GemmProblem& r) { r.family = OpFamily::kA8W8Batched; },
           [](GemmProblem& r) { r.b_type = DType::kBFloat16; },
           [](GemmProblem& r) { r.a_type = r.b_type = DType::kFloat8E4M3; },
           [](GemmProblem& r) { r.activation = Activation::kRelu; },
           [](GemmProblem& r) { r.unit_alpha = false; },
           [](GemmProblem& r) { r.use_c = true; },
           [](GemmProblem& r) { r.out_type = DType::kInt8; },
           [](GemmProblem& r) { r.align_out = 2; },
           [](GemmProblem& r) { r.bias_type = DType::kInt8; },
           [](GemmProblem& r) { r.align_bias = 2; },
           [](GemmProblem& r) { r.batch = 65536; },
           [](GemmProblem& r) { r.k = std::int64_t{1} << 31; },
           [](GemmProblem& r) { r.align_b = 8; },
           [](GemmProblem& r) { r.ldb = 516; },
           [](GemmProblem& r) { r.transpose_b = true; },
       }) {
    GemmProblem r = q;
    change(r);
    EXPECT_FALSE(batched_tile_accepts(kKn1, r)) << r.describe();
  }
}

TEST(BatchedSkinnyAccepts, StridesAndTails) {
  // kn: a by elements (either transpose, odd strides), N odd (the last column chunk by elements).
  GemmProblem kn = batched_problem(3, 5, 13, 7, false);
  kn.lda = 7;
  kn.ldb = 16;
  kn.batch_stride_b = 0;  // one b broadcast to every product
  kn.align_a = 2;
  EXPECT_TRUE(batched_tile_accepts(kKn8, kn));
  kn.transpose_a = true;
  kn.lda = 5;
  EXPECT_TRUE(batched_tile_accepts(kKn8, kn));
  kn.ldb = 13;
  EXPECT_FALSE(batched_tile_accepts(kKn8, kn)) << "rows of b not 16-byte chunks";

  // nk: K odd where the row strides are whole chunks; a never transposed.
  GemmProblem nk = batched_problem(4, 3, 9, 13, true);
  nk.lda = 16;
  nk.ldb = 24;
  nk.batch_stride_a = 0;
  EXPECT_TRUE(batched_tile_accepts(kNk16, nk));
  GemmProblem r = nk;
  r.lda = 13;
  EXPECT_FALSE(batched_tile_accepts(kNk16, r)) << "a's rows not 16-byte chunks";
  r = nk;
  r.m = 1;
  r.lda = 13;
  EXPECT_TRUE(batched_tile_accepts(kNk16, r)) << "one row of a: its stride is never stepped";
  r = nk;
  r.ldb = 13;
  EXPECT_FALSE(batched_tile_accepts(kNk16, r));
  r = nk;
  r.transpose_a = true;
  EXPECT_FALSE(batched_tile_accepts(kNk16, r));
  EXPECT_FALSE(batched_tile_accepts(kMma, r)) << "the mma tiles read a as the nk ones do";
  r = nk;
  r.align_a = 8;
  EXPECT_FALSE(batched_tile_accepts(kNk16, r));
  r = nk;
  r.ldo = 8;
  EXPECT_FALSE(batched_tile_accepts(kNk16, r)) << "out's rows overlap";
}

}  // namespace
}  // namespace tgemm::skinny
