// The host-only half of `tgemm tune-fmoe` (src/tuner/fmoe_tune.h): its inputs, the routings, the
// rank's expert map, a worker's share of `--mp` and the tuned file's merge.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "tgemm/error.h"
#include "tuner/fmoe_tune.h"

namespace tgemm {
namespace {

// Whether each token's k ids are distinct and in [0, e), and its weights positive summing to 1.
void expect_valid(const FmoeRouting& r, std::int64_t t, std::int64_t k, std::int64_t e) {
  ASSERT_EQ(r.ids.size(), static_cast<std::size_t>(t * k));
  ASSERT_EQ(r.weights.size(), static_cast<std::size_t>(t * k));
  for (std::int64_t i = 0; i < t; ++i) {
    const std::set<std::int32_t> ids(r.ids.begin() + i * k, r.ids.begin() + (i + 1) * k);
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(k)) << "token " << i;
    EXPECT_GE(*ids.begin(), 0);
    EXPECT_LT(*ids.rbegin(), e);
    const float sum = std::accumulate(r.weights.begin() + i * k, r.weights.begin() + (i + 1) * k, 0.0f);
    EXPECT_NEAR(sum, 1.0f, 1e-6f) << "token " << i;
    for (std::int64_t j = 0; j < k; ++j) EXPECT_GT(r.weights[static_cast<std::size_t>(i * k + j)], 0.0f);
  }
}

std::vector<std::int64_t> per_expert(const FmoeRouting& r, std::int64_t e) {
  std::vector<std::int64_t> n(static_cast<std::size_t>(e), 0);
  for (std::int32_t id : r.ids) ++n[static_cast<std::size_t>(id)];
  return n;
}

TEST(FmoeTune, RoutingsAreDistinctPerTokenSeededAndTheSkewedOneSkewed) {
  const FmoeRouting u = fmoe_routing(512, 8, 128, false, 3);
  expect_valid(u, 512, 8, 128);
  const FmoeRouting s = fmoe_routing(512, 8, 128, true, 3);
  expect_valid(s, 512, 8, 128);
  EXPECT_EQ(s.ids, fmoe_routing(512, 8, 128, true, 3).ids);
  EXPECT_NE(s.ids, fmoe_routing(512, 8, 128, true, 4).ids);
  // 4096 slots over 128 experts, a mean of 32: uniform stays near it; skewed piles several times
  // the mean on its busiest expert.
  const auto nu = per_expert(u, 128), ns = per_expert(s, 128);
  EXPECT_LT(*std::max_element(nu.begin(), nu.end()), 3 * 32);
  EXPECT_GT(*std::max_element(ns.begin(), ns.end()), 4 * 32);
  // k = E: every token takes every expert once.
  const FmoeRouting all = fmoe_routing(3, 8, 8, true, 1);
  expect_valid(all, 3, 8, 8);
  EXPECT_THROW(fmoe_routing(3, 9, 8, false, 1), Error);
}

TEST(FmoeTune, TheRankMapHoldsTheFirstExperts) {
  EXPECT_EQ(fmoe_rank_map(2, 5), (std::vector<std::int32_t>{0, 1, -1, -1, -1}));
}

TEST(FmoeTune, ParsesAnUntunedFileAndRejectsABadRow) {
  std::istringstream in(
      "T,E,topk,H,I,dtype,quant,activation\n64,8,2,4096,14336,torch.bfloat16,none,silu\n"
      "1,128,8,2048,768,torch.float16,,gelu\n");
  const auto p = parse_fmoe_untuned(in, "u.csv");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, "u.csv:2");
  EXPECT_EQ(p[0].tokens, 64);
  EXPECT_EQ(p[0].experts, 8);
  EXPECT_EQ(p[0].topk, 2);
  EXPECT_EQ(p[0].hidden, 4096);
  EXPECT_EQ(p[0].inter, 14336);
  EXPECT_EQ(p[0].activation, MoeActivation::kSilu);
  EXPECT_EQ(p[1].dtype, DType::kFloat16);
  EXPECT_EQ(p[1].activation, MoeActivation::kGelu);
  EXPECT_EQ(p[0].key("sm_90a", 132).tokens, 64);
  EXPECT_EQ(p[1].key("sm_90a", 132).describe(),
            "tokens=1 E=128 topk=8 H=2048 I=768 dtype=torch.float16 quant=none activation=gelu");

  auto error_of = [](const std::string& text) {
    std::istringstream bad(text);
    try {
      parse_fmoe_untuned(bad, "bad.csv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string quant = error_of("T,E,topk,H,I,dtype,quant\n8,8,2,64,32,torch.bfloat16,fp8_block\n");
  EXPECT_NE(quant.find("bad.csv:2: quant fp8_block: fused_moe takes no quantized weights"), std::string::npos) << quant;
  const std::string topk = error_of("T,E,topk,H,I,dtype\n8,4,5,64,32,torch.bfloat16\n");
  EXPECT_NE(topk.find("bad.csv:2: topk (5) exceeds the experts (4)"), std::string::npos) << topk;
  const std::string act = error_of("T,E,topk,H,I,dtype,activation\n8,8,2,64,32,torch.bfloat16,relu\n");
  EXPECT_NE(act.find("bad.csv:2: activation must be silu or gelu, got 'relu'"), std::string::npos) << act;
  const std::string dtype = error_of("T,E,topk,H,I,dtype\n8,8,2,64,32,torch.float32\n");
  EXPECT_NE(dtype.find("bad.csv:2: dtype must be torch.bfloat16 or torch.float16"), std::string::npos) << dtype;
  const std::string zero = error_of("T,E,topk,H,I,dtype\n0,8,2,64,32,torch.bfloat16\n");
  EXPECT_NE(zero.find("bad.csv:2: T must be an integer in [1, "), std::string::npos) << zero;
  const std::string header = error_of("T,E,topk,H,dtype\n8,8,2,64,torch.bfloat16\n");
  EXPECT_NE(header.find("bad.csv:1: the header has no column I"), std::string::npos) << header;
}

TEST(FmoeTune, ReadsTheLayerSuiteAtEachTokenCount) {
  std::istringstream in("name,E,topk,H,I,E_global\nmixtral-8x7b,8,2,4096,14336,\ndsv3-ep8,32,8,7168,2048,256\n");
  const auto p = parse_fmoe_suite(in, "fmoe.csv", {1, 4096}, DType::kBFloat16, MoeActivation::kSilu);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].name, "mixtral-8x7b T=1");
  EXPECT_EQ(p[1].name, "mixtral-8x7b T=4096");
  EXPECT_EQ(p[1].tokens, 4096);
  EXPECT_EQ(p[0].global_experts, 0);
  EXPECT_EQ(p[2].name, "dsv3-ep8 T=1");
  EXPECT_EQ(p[2].experts, 32);
  EXPECT_EQ(p[2].global_experts, 256);
  EXPECT_EQ(p[3].key("sm_90a", 132).experts, 32);

  std::istringstream below("name,E,topk,H,I,E_global\nx,32,8,64,32,16\n");
  EXPECT_THROW(parse_fmoe_suite(below, "fmoe.csv", {1}, DType::kBFloat16, MoeActivation::kSilu), Error);
  std::istringstream fine("name,E,topk,H,I\nx,32,8,64,32\n");
  EXPECT_THROW(parse_fmoe_suite(fine, "fmoe.csv", {0}, DType::kBFloat16, MoeActivation::kSilu), Error);
}

TEST(FmoeTune, AWorkersShareReadsBackAsTheSameProblems) {
  std::istringstream in("name,E,topk,H,I,E_global\ndsv3-ep8,32,8,7168,2048,256\nqwen3,128,8,2048,768,\n");
  const auto p = parse_fmoe_suite(in, "fmoe.csv", {24}, DType::kFloat16, MoeActivation::kGelu);
  std::istringstream share(fmoe_problems_csv(p));
  const auto back = parse_fmoe_untuned(share, "share.csv");
  ASSERT_EQ(back.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].name, "share.csv:" + std::to_string(i + 2));
    EXPECT_EQ(back[i].tokens, 24);  // as given, not the bucket's top
    EXPECT_EQ(back[i].experts, p[i].experts);
    EXPECT_EQ(back[i].topk, p[i].topk);
    EXPECT_EQ(back[i].hidden, p[i].hidden);
    EXPECT_EQ(back[i].inter, p[i].inter);
    EXPECT_EQ(back[i].global_experts, p[i].global_experts);
    EXPECT_EQ(back[i].dtype, DType::kFloat16);
    EXPECT_EQ(back[i].activation, MoeActivation::kGelu);
  }
  EXPECT_EQ(back[0].global_experts, 256);
  EXPECT_EQ(back[1].global_experts, 0);
}

TEST(FmoeTune, TheMergeKeepsOtherKeysAndDropsARacedKeyWithoutARow) {
  auto row = [](std::int64_t t, const std::string& solution) {
    FmoeRow r;
    r.key = fmoe_key(t, 8, 2, 4096, 14336, DType::kBFloat16, FmoeQuant::kNone, MoeActivation::kSilu, "sm_90a", 132);
    r.t = t;
    r.solution = solution;
    return r;
  };
  const std::vector<FmoeRow> existing = {row(8, kFmoeTileSolution), row(64, kFmoeTileSolution),
                                         row(512, kFmoeTileSolution)};
  FmoeRow cutlass = row(512, kFmoeCutlassSolution);
  cutlass.up = "sm90_grouped_bf16_bk_128x128x64_coop";
  cutlass.down = "sm90_grouped_bf16_bk_128x128x64_coop";
  // 64 raced, the default kept it (no row); 512 raced with a new row; 8 not raced.
  const std::string text = merged_fmoe_table(existing, {row(64, "").key, row(512, "").key}, {cutlass});
  std::istringstream in(text);
  const ParsedFmoeTable t = parse_fmoe_table(in, "merged.csv");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].key.tokens, 8);
  EXPECT_EQ(t.rows[0].solution, kFmoeTileSolution);
  EXPECT_EQ(t.rows[1].key.tokens, 512);
  EXPECT_EQ(t.rows[1].solution, kFmoeCutlassSolution);
  EXPECT_EQ(t.rows[1].up, "sm90_grouped_bf16_bk_128x128x64_coop");
}

}  // namespace
}  // namespace tgemm
