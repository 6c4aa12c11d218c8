// The tuner on the GPU: its pair timing (what the confirmation and `tgemm compare --measure`
// use): a solution timed against itself is a tie, bad arguments are refused with a clear error;
// and a whole race of one problem, whose kept row obeys the confirmation's rules.
#include <gtest/gtest.h>

#include <string>

#include "core/problem.h"
#include "runtime/runtime.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/error.h"
#include "tune/racer.h"

namespace tgemm::test {
namespace {

GemmProblem plain_problem(std::int64_t m, std::int64_t n, std::int64_t k) {
  TableKey key;
  key.arch = "sm_90a";
  key.sm_count = 132;
  key.n = n;
  key.k = k;
  return problem_of_key(key, m, Runtime::get().platform().current_device());
}

SolutionPtr cublaslt_default(const GemmProblem& p) {
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  EXPECT_NE(lt, nullptr);
  SolutionPtr s = lt ? lt->default_solution(p) : nullptr;
  EXPECT_NE(s, nullptr);
  return s;
}

TEST(TimeSolutionPair, ASolutionAgainstItselfIsATie) {
  TGEMM_REQUIRE_GPU();
  for (std::int64_t m : {1, 64, 1000}) {
    const GemmProblem p = plain_problem(m, 4096, 4096);
    SolutionPtr s = cublaslt_default(p);
    ASSERT_NE(s, nullptr);
    const PairTiming t = time_solution_pair(p, *s, *s, RaceOptions{}, 6);
    EXPECT_GT(t.a_us, 0) << p.describe();
    EXPECT_GT(t.b_us, 0) << p.describe();
    // The same kernel on the same inputs, paired round by round: well inside 10% of 1.
    EXPECT_GT(t.ratio, 0.9) << p.describe();
    EXPECT_LT(t.ratio, 1.1) << p.describe();
  }
}

TEST(TimeSolutionPair, SeveralPlacementsReportTheirRange) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(16, 4096, 4096);
  SolutionPtr s = cublaslt_default(p);
  ASSERT_NE(s, nullptr);
  const PairTiming t = time_solution_pair(p, *s, *s, RaceOptions{}, 4, 3);
  EXPECT_EQ(t.placements, 3);
  EXPECT_GT(t.a_us, 0);
  EXPECT_GT(t.b_us, 0);
  EXPECT_LE(t.min_ratio, t.ratio);
  EXPECT_GE(t.max_ratio, t.ratio);
  EXPECT_GT(t.min_ratio, 0.9);
  EXPECT_LT(t.max_ratio, 1.1);
  // A memory budget that holds one placement only: one is measured.
  RaceOptions small;
  small.memory_budget = 1;
  EXPECT_EQ(time_solution_pair(p, *s, *s, small, 2, 3).placements, 1);
  try {
    time_solution_pair(p, *s, *s, RaceOptions{}, 2, 0);
    FAIL() << "0 placements accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("placements must be >= 1, got 0"), std::string::npos) << e.what();
  }
}

TEST(TimeSolutionPair, RefusesZeroRounds) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(16, 256, 128);
  SolutionPtr s = cublaslt_default(p);
  ASSERT_NE(s, nullptr);
  try {
    time_solution_pair(p, *s, *s, RaceOptions{}, 0);
    FAIL() << "0 rounds accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("time_solution_pair: rounds must be >= 1, got 0"), std::string::npos) << e.what();
  }
}

// A race of one decode problem over cuBLASLt's space: the kept row passes the checks, and a row
// other than the default was confirmed on every placement (no placement lost, median ratio
// beyond the margin); with confirm_best as well, and with the finals spread over placements.
TEST(RaceProblem, KeptRowObeysTheConfirmation) {
  TGEMM_REQUIRE_GPU();
  struct Case {
    bool best;
    int final_placements;
  };
  for (const Case c : {Case{false, 1}, Case{true, 1}, Case{false, 4}}) {
    const GemmProblem p = plain_problem(16, 1280, 8192);
    RaceOptions o;
    o.libtypes = {"cublaslt"};
    o.confirm_best = c.best;
    o.final_placements = c.final_placements;
    const RaceResult r = race_problem(p, o);
    SCOPED_TRACE(testing::Message() << "confirm_best " << c.best << ", final_placements " << c.final_placements);
    ASSERT_GE(r.winner, 0);
    // Finals ran (a 20 MB weight has many candidates within the margin of the fastest) on every
    // placement asked for: 4 of this problem fit the memory budget many times over.
    EXPECT_EQ(r.final_placements, c.final_placements);
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    EXPECT_TRUE(w.error.empty()) << w.name << ": " << w.error;
    EXPECT_GT(w.us, 0) << w.name;
    EXPECT_GE(w.err_ratio, 0) << w.name;
    EXPECT_LE(w.err_ratio, o.select.max_err_ratio) << w.name;
    EXPECT_TRUE(w.strict_ok) << w.name;
    EXPECT_GT(r.enumerated, 100);
    if (!w.is_default) {
      EXPECT_TRUE(r.confirmed) << w.name;
      EXPECT_GE(r.confirm_tried, 1);
      EXPECT_LE(r.confirm_tried, o.confirm_tries);
      EXPECT_GE(r.confirm_placements, 1);
      EXPECT_LE(r.confirm_placements, o.confirm_placements);
      EXPECT_GE(r.confirm_min_ratio, 1.0) << w.name;
      EXPECT_GT(r.confirm_ratio * (1.0 - o.confirm_margin), 1.0) << w.name;
      EXPECT_DOUBLE_EQ(w.us, r.confirm_winner_us);
    } else if (r.confirm_tried > 0) {
      EXPECT_FALSE(r.confirmed);  // every try failed: the default is kept
    }
  }
}

}  // namespace
}  // namespace tgemm::test
