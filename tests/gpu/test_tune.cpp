// The tuner's pair timing on the GPU (what the confirmation and `tgemm compare --measure` use):
// a solution timed against itself is a tie, and bad arguments are refused with a clear error.
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

}  // namespace
}  // namespace tgemm::test
