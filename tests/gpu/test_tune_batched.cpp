// The tuner on batched_gemm problems: the cublaslt backend's candidates for a batched problem (its
// heuristic, the heuristic's top choices and the configuration space, all with batched layouts)
// load back from their names as a table row names them; a small race of a [B, M, K] x [B, K, N]
// and a [B, M, K] x [B, N, K] problem keeps a checked winner against the dispatcher's default, and
// rows written from it (and from an explicit configuration at another M) load from a batched table,
// dispatch at their M and compute within the tuner's tolerance.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "core/problem.h"
#include "core/table.h"
#include "runtime/runtime.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/host_test_util.h"
#include "tests/gpu/tune_checks.h"
#include "tuner/tuned_file.h"
#include "tuner/tuner.h"

namespace tgemm::test {
namespace {

GemmProblem batched_problem(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, bool tb) {
  const int device = Runtime::get().platform().current_device();
  const DeviceInfo& dev = Runtime::get().platform().device_info(device);
  TableKey key;
  key.arch = dev.arch;
  key.sm_count = dev.sm_count;
  key.n = n;
  key.k = k;
  key.batch = batch;
  key.transpose_b = tb;
  return problem_of_key(key, m, device);
}

std::vector<GemmProblem> problems_at(std::int64_t m) {
  return {batched_problem(16, m, 512, 128, false), batched_problem(8, m, 256, 1024, true)};
}

const Backend& cublaslt() {
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  EXPECT_NE(lt, nullptr);
  return *lt;
}

TEST(TuneBatched, CandidatesLoadBackFromTheirNames) {
  TGEMM_REQUIRE_GPU();
  for (const GemmProblem& p : problems_at(64)) {
    SCOPED_TRACE(p.describe());
    const std::vector<SolutionPtr> cands = cublaslt().candidates(p);
    int explicit_configs = 0;
    std::vector<ScreenedCandidate> screened;
    for (const SolutionPtr& s : cands) {
      const bool heuristic = s->solidx() == -1;
      if (!heuristic) {
        ++explicit_configs;
        if (screened.size() < 4) screened.push_back({s->name(), 1.0});
      }
      if (!heuristic && explicit_configs > 48) continue;  // a sample keeps the test short
      std::string why;
      SolutionPtr back = cublaslt().from_row(cublaslt_row_for(p, s->name(), 1.0), p, why);
      ASSERT_NE(back, nullptr) << s->name() << ": " << why;
      EXPECT_EQ(back->name(), s->name());
      EXPECT_TRUE(back->can_implement(p)) << s->name();
    }
    EXPECT_GT(explicit_configs, 0) << "no explicit configuration enumerated";
    EXPECT_FALSE(cublaslt().refine(p, screened, RefineOptions{}).empty());
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(TuneBatched, TinyRaceRowsLoadBackAndDispatch) {
  TGEMM_REQUIRE_GPU();
  TempDir dir;
  const std::string table = dir.file("bf16_tuned_batched_gemm.csv");
  std::vector<TableRow> rows;
  std::vector<GemmProblem> problems;
  const std::vector<GemmProblem> at_64 = problems_at(64), at_96 = problems_at(96);
  for (std::size_t i = 0; i < at_64.size(); ++i) {
    const GemmProblem& p = at_64[i];
    SCOPED_TRACE(p.describe());
    const RaceResult r = race_cublaslt(p);
    ASSERT_GE(r.winner, 0);
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    rows.push_back(cublaslt_row_for(p, w.name, w.us));
    problems.push_back(p);
    // An explicit configuration as the row of another M, so a configured batched row dispatches too.
    const std::string configured = fastest_configuration(r, at_96[i]);
    ASSERT_FALSE(configured.empty()) << "no explicit configuration passed the check and loads at M=96";
    rows.push_back(cublaslt_row_for(at_96[i], configured, w.us));
    problems.push_back(at_96[i]);
  }
  write_tuned_table(table, rows);
  ASSERT_EQ(::setenv("TGEMM_CONFIG_BF16_BATCHED_GEMM", table.c_str(), 1), 0);
  Runtime::get().reload();
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const GemmProblem& p = problems[i];
    SCOPED_TRACE(p.describe() + " row " + rows[i].kernel_name);
    const Resolution& res = Runtime::get().dispatcher().resolve(p);
    EXPECT_EQ(res.level, WalkLevel::kExact);
    EXPECT_EQ(res.file, table);
    EXPECT_EQ(res.matched_m, p.m);
    ASSERT_NE(res.solution, nullptr);
    EXPECT_EQ(res.solution->name(), rows[i].kernel_name);
    expect_dispatch_correct(p, res);
  }
  ::unsetenv("TGEMM_CONFIG_BF16_BATCHED_GEMM");
  Runtime::get().reload();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tgemm::test
