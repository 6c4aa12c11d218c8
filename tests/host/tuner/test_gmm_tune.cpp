// The host-only half of `tgemm tune-gmm` (src/tuner/gmm_tune.h): its inputs, the routings, the
// rule that writes a row, and the tuned file's merge.
#include <gtest/gtest.h>

#include <numeric>
#include <sstream>

#include "tgemm/error.h"
#include "tuner/gmm_tune.h"

namespace tgemm {
namespace {

TEST(GmmTune, UniformRoutingSpreadsTheRemainderOverTheFirstGroups) {
  EXPECT_EQ(gmm_routing(10, 4, false, 1), (std::vector<std::int32_t>{3, 3, 2, 2}));
  EXPECT_EQ(gmm_routing(8, 8, false, 1), std::vector<std::int32_t>(8, 1));
  EXPECT_EQ(gmm_routing(3, 8, false, 1), (std::vector<std::int32_t>{1, 1, 1, 0, 0, 0, 0, 0}));
}

TEST(GmmTune, SkewedRoutingSumsToMIsSeededAndSkewed) {
  const auto a = gmm_routing(32 * 128, 32, true, 7);
  EXPECT_EQ(std::accumulate(a.begin(), a.end(), std::int64_t{0}), 32 * 128);
  EXPECT_EQ(a, gmm_routing(32 * 128, 32, true, 7));
  EXPECT_NE(a, gmm_routing(32 * 128, 32, true, 8));
  // (i + 1)^-1.2 over 32 groups: the busiest holds ~27% of the rows, several times the mean.
  const std::int32_t busiest = *std::max_element(a.begin(), a.end());
  EXPECT_GT(busiest, 4 * 128);
  EXPECT_GE(*std::min_element(a.begin(), a.end()), 0);
}

GmmCandidateTiming timing(const std::string& name, double s_uniform, double s_skewed, const std::string& error = "") {
  GmmCandidateTiming t;
  t.solution = name;
  t.error = error;
  t.speedup[0] = s_uniform;
  t.speedup[1] = s_skewed;
  return t;
}

TEST(GmmTune, AWinnerBeatsTheDefaultBeyondTheBandOnBothRoutings) {
  // The default (index 0) never wins; b beats it on one routing only; c on both.
  std::vector<GmmCandidateTiming> c = {timing("default", 1, 1), timing("b", 1.5, 1.01), timing("c", 1.1, 1.05)};
  EXPECT_EQ(select_gmm_winner(c, 0, 0.02), 2);
  // Within the band on one routing: no row.
  c[2].speedup[1] = 1.02;
  EXPECT_EQ(select_gmm_winner(c, 0, 0.02), -1);
  // The larger of the smaller speedups wins; a failed candidate never does.
  c = {timing("default", 1, 1), timing("b", 1.3, 1.2), timing("c", 1.25, 1.25), timing("d", 2, 2, "3 bad")};
  EXPECT_EQ(select_gmm_winner(c, 0, 0.02), 2);
  // Equal candidates: the first in candidate order.
  c = {timing("b", 1.2, 1.2), timing("default", 1, 1), timing("c", 1.2, 1.2)};
  EXPECT_EQ(select_gmm_winner(c, 1, 0.02), 0);
}

TEST(GmmTune, ParsesAnUntunedFileAndRejectsABadRow) {
  std::istringstream in(
      "G,M,N,K,rhs,dtype,outdtype,bias\n32,4096,4096,7168,gnk,torch.bfloat16,torch.float32,True\n"
      "8,16,64,32,gkn,torch.float16,,\n");
  const auto p = parse_gmm_untuned(in, "u.csv");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].groups, 32);
  EXPECT_EQ(p[0].m, 4096);
  EXPECT_TRUE(p[0].rhs_nk);
  EXPECT_EQ(p[0].out_dtype, DType::kFloat32);
  EXPECT_TRUE(p[0].bias);
  EXPECT_EQ(p[0].name, "u.csv:2");
  EXPECT_FALSE(p[1].rhs_nk);
  EXPECT_EQ(p[1].out_dtype, DType::kFloat16);
  EXPECT_FALSE(p[1].bias);
  EXPECT_EQ(p[0].key("sm_90a", 132).rows_per_group, 128);

  std::istringstream bad("G,M,N,K,rhs,dtype\n8,16,64,32,nk,torch.bfloat16\n");
  try {
    parse_gmm_untuned(bad, "bad.csv");
    FAIL() << "no error for rhs 'nk'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rhs must be gnk or gkn"), std::string::npos) << e.what();
  }
}

TEST(GmmTune, ReadsTheMoeSuite) {
  std::istringstream in("name,G,tokens_per_expert,N,K\nmixtral-8x7b-down,8,1024,4096,14336\n");
  const auto p = parse_moe_suite(in, "moe.csv", false, DType::kBFloat16, DType::kBFloat16, false);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].name, "mixtral-8x7b-down");
  EXPECT_EQ(p[0].m, 8 * 1024);
  EXPECT_EQ(p[0].n, 4096);
  EXPECT_EQ(p[0].k, 14336);
  EXPECT_FALSE(p[0].rhs_nk);
}

TEST(GmmTune, TheMergeKeepsOtherKeysAndDropsARacedKeyWithoutARow) {
  auto row = [](std::int64_t g, const std::string& solution) {
    GmmRow r;
    r.key = gmm_key(g * 4, g, 64, 32, true, DType::kBFloat16, DType::kBFloat16, false, "sm_90a", 132);
    r.solution = solution;
    return r;
  };
  const std::vector<GmmRow> existing = {row(8, "old8"), row(16, "old16"), row(32, "old32")};
  // 16 raced, the default kept it (no row); 32 raced with a new row; 8 not raced.
  const std::string text = merged_gmm_table(existing, {row(16, "").key, row(32, "").key}, {row(32, "new32")});
  std::istringstream in(text);
  const ParsedGmmTable t = parse_gmm_table(in, "merged.csv");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].solution, "old8");
  EXPECT_EQ(t.rows[1].solution, "new32");
}

}  // namespace
}  // namespace tgemm
