// `tgemm reconfirm --alternatives`: the tune's profile read into candidates per problem, and
// their ranking (tuner/alternatives.cpp).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "tuner/alternatives.h"

namespace tgemm {
namespace {

const char* kHeader =
    "arch,sm_count,M,N,K,bias,dtype,outdtype,epilogue,libtype,kernelName,screen_us,us,spread,err_ratio,strict_ok,"
    "error,stage,final_ratio,confirm_ratio,accurate_us\n";

std::string line(int m, const std::string& name, double err, const std::string& strict, const std::string& error,
                 double final_ratio, double confirm_ratio, double accurate_us) {
  std::ostringstream s;
  s << "sm_90a,132," << m << ",4096,4096,False,torch.bfloat16,torch.bfloat16,none,cublaslt," << name
    << ",10.0,10.0,0.01," << err << "," << strict << "," << error << ",final," << final_ratio << ","
    << confirm_ratio << "," << accurate_us << "\n";
  return s.str();
}

TableRow row_of(int m) {
  TableRow r;
  r.key.arch = "sm_90a";
  r.key.sm_count = 132;
  r.key.n = 4096;
  r.key.k = 4096;
  r.m = m;
  return r;
}

TEST(ProfileCandidates, KeepsCheckedAccuratelyTimedCandidatesByProblem) {
  std::istringstream in(std::string(kHeader) + line(16, "h", 0, "True", "", 1.0, -1, 20.0) +
                        line(16, "a", 0, "True", "", 0.95, 1.04, 19.0) +
                        line(16, "bad_err", 0.2, "True", "", 0.90, -1, 18.0) +  // over --errRatio
                        line(16, "not_strict", 0, "False", "", 0.90, -1, 18.0) +
                        line(16, "errored", 0, "True", "launch failed", 0.90, -1, 18.0) +
                        line(16, "screened_only", 0, "True", "", -1, -1, -1) + line(64, "b", 0, "True", "", 0.9, -1, 30.0) +
                        "sm_90a,132,16,4096\n" + line(16, "a", 0.01, "True", "", 0.97, 1.02, 19.5));  // resumed: replaces
  std::vector<std::string> warnings;
  const auto got = read_profile_candidates(in, "prof.csv", 0.05, false, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("prof.csv:9: expected 21 fields, got 4"), std::string::npos) << warnings[0];
  const auto it = got.find(profile_problem_key(row_of(16)));
  ASSERT_NE(it, got.end());
  ASSERT_EQ(it->second.size(), 2u);
  EXPECT_EQ(it->second[0].name, "h");
  EXPECT_EQ(it->second[1].name, "a");
  EXPECT_DOUBLE_EQ(it->second[1].final_ratio, 0.97);
  EXPECT_DOUBLE_EQ(it->second[1].err_ratio, 0.01);
  EXPECT_EQ(got.count(profile_problem_key(row_of(64))), 1u);
  EXPECT_EQ(got.count(profile_problem_key(row_of(1))), 0u);

  std::istringstream loose_in(std::string(kHeader) + line(16, "not_strict", 0, "False", "", 0.90, -1, 18.0));
  EXPECT_EQ(read_profile_candidates(loose_in, "prof.csv", 0.05, true, warnings).size(), 1u);
}

TEST(ProfileCandidates, AnOldProfileWithoutStageColumnsIsRefusedByName) {
  std::istringstream in("arch,sm_count,M,N,K,bias,dtype,outdtype,epilogue,libtype,kernelName,screen_us,us,spread,"
                        "err_ratio,strict_ok,error\n");
  std::vector<std::string> warnings;
  try {
    read_profile_candidates(in, "old.csv", 0.05, false, warnings);
    FAIL() << "no error for a profile without final_ratio";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--profile old.csv must have a 'final_ratio' column"), std::string::npos)
        << e.what();
  }
}

TEST(RankAlternatives, FastestEstimateFirstFromFinalsConfirmationOrAccurateTime) {
  const std::vector<ProfiledCandidate> c = {
      {"cublaslt", "h", 1.0, -1, 20.0, 0},      // the default
      {"cublaslt", "fin", 0.96, -1, 19.0, 0},   // finals: 0.96
      {"cublaslt", "conf", -1, 1.05, 19.5, 0},  // confirmation only: 1 / 1.05 = 0.952
      {"cublaslt", "acc", -1, -1, 19.4, 0},     // accurate only: 19.4 / 20 = 0.97
      {"cublaslt", "slow", 1.02, -1, 19.0, 0},  // slower than the default in the finals: never
      {"cublaslt", "own", 0.90, -1, 18.0, 0},   // the row's own pick: excluded
      {"cublaslt", "tie_b", 0.98, -1, 19.0, 0},
      {"cublaslt", "tie_a", 0.98, -1, 19.0, 0},
  };
  std::vector<std::string> names;
  for (const auto& a : rank_alternatives(c, "h", {"own"}, 10)) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conf", "fin", "acc", "tie_a", "tie_b"}));
  EXPECT_EQ(rank_alternatives(c, "h", {"own"}, 2).size(), 2u);
  EXPECT_TRUE(rank_alternatives(c, "h", {"own"}, 0).empty());
  // No default timed: candidates known only by their accurate time cannot be placed.
  const std::vector<ProfiledCandidate> no_default = {{"cublaslt", "acc", -1, -1, 19.4, 0},
                                                     {"cublaslt", "fin", 0.96, -1, 19.0, 0}};
  ASSERT_EQ(rank_alternatives(no_default, "h", {}, 10).size(), 1u);
  EXPECT_EQ(rank_alternatives(no_default, "h", {}, 10)[0].name, "fin");
}

// An a8w8 tune's profile ends with `scales`: the same shape under two recipes is two problems,
// and an a8w8 row finds the candidates of its own recipe.
TEST(ProfileCandidates, A8W8RecipesAreSeparateProblems) {
  auto a8w8_line = [](const std::string& name, const std::string& scales) {
    return "sm_90a,132,16,4096,4096,False,torch.float8_e4m3fn,torch.bfloat16,none,cublaslt," + name +
           ",10.0,10.0,0.01,0,True,,final,0.9,-1,9.0," + scales + "\n";
  };
  std::string header = kHeader;
  header.insert(header.size() - 1, ",scales");
  std::istringstream in(header + a8w8_line("cublaslt:fused_x", "tensor") +
                        a8w8_line("cublaslt:staged_y", "token_channel") +
                        a8w8_line("cublaslt:staged_z", "token_channel"));
  std::vector<std::string> warnings;
  const auto got = read_profile_candidates(in, "prof.csv", 0.05, false, warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  TableRow r = row_of(16);
  r.key.dtype = DType::kFloat8E4M3;
  r.key.a_scale = r.key.b_scale = ScaleGranularity::kTensor;
  const auto tensor = got.find(profile_problem_key(r));
  ASSERT_NE(tensor, got.end());
  ASSERT_EQ(tensor->second.size(), 1u);
  EXPECT_EQ(tensor->second[0].name, "cublaslt:fused_x");
  r.key.a_scale = r.key.b_scale = ScaleGranularity::kRow;
  const auto rowwise = got.find(profile_problem_key(r));
  ASSERT_NE(rowwise, got.end());
  ASSERT_EQ(rowwise->second.size(), 2u);
  EXPECT_EQ(rowwise->second[0].name, "cublaslt:staged_y");
  // An a16w16 row's key is the profile's nine columns, as before.
  EXPECT_EQ(profile_problem_key(row_of(16)), "sm_90a,132,16,4096,4096,False,torch.bfloat16,torch.bfloat16,none");
}

// A batched tune's profile ends with B,transpose_a,transpose_b: two batches (or layouts) of one
// shape are two problems, and a batched row finds the candidates of its own batch.
TEST(ProfileCandidates, BatchesAreSeparateProblems) {
  auto batched_line = [](const std::string& name, const std::string& batch, const std::string& tb) {
    return "sm_90a,132,16,4096,4096,False,torch.bfloat16,torch.bfloat16,none,cublaslt," + name +
           ",10.0,10.0,0.01,0,True,,final,0.9,-1,9.0," + batch + ",False," + tb + "\n";
  };
  std::string header = kHeader;
  header.insert(header.size() - 1, ",B,transpose_a,transpose_b");
  std::istringstream in(header + batched_line("cublaslt:x", "16", "False") + batched_line("cublaslt:y", "8", "False") +
                        batched_line("cublaslt:z", "8", "True"));
  std::vector<std::string> warnings;
  const auto got = read_profile_candidates(in, "prof.csv", 0.05, false, warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  TableRow r = row_of(16);
  r.key.batch = 8;
  const auto eight = got.find(profile_problem_key(r));
  ASSERT_NE(eight, got.end());
  ASSERT_EQ(eight->second.size(), 1u);
  EXPECT_EQ(eight->second[0].name, "cublaslt:y");
  r.key.transpose_b = true;
  const auto eight_t = got.find(profile_problem_key(r));
  ASSERT_NE(eight_t, got.end());
  EXPECT_EQ(eight_t->second[0].name, "cublaslt:z");
  r.key.batch = 16;
  r.key.transpose_b = false;
  ASSERT_NE(got.find(profile_problem_key(r)), got.end());
  EXPECT_EQ(got.size(), 3u);
}

}  // namespace
}  // namespace tgemm
