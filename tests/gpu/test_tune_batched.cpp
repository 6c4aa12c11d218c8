// The tuner on batched_gemm and batched_gemm_a8w8 problems: the cublaslt backend's candidates for a
// batched problem (its heuristic, the heuristic's top choices and the configuration space, all with
// batched layouts; staged only for the 8-bit family) load back from their names as a table row
// names them; a small race of two problems of each family (bf16 [B, M, K] x [B, K, N] and
// [B, M, K] x [B, N, K]; FP8 per-token x per-channel and INT8 per-product x per-channel) keeps a
// checked winner against the dispatcher's default, and rows written from it (and from an explicit
// configuration at another M) load from the family's table, dispatch at their M and compute within
// the tuner's tolerance.
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

// The dense problem of `key` (its n, k, dtype, scales, batch and layouts) at M on this device.
GemmProblem problem_on_device(TableKey key, std::int64_t m) {
  const int device = Runtime::get().platform().current_device();
  const DeviceInfo& dev = Runtime::get().platform().device_info(device);
  key.arch = dev.arch;
  key.sm_count = dev.sm_count;
  return problem_of_key(key, m, device);
}

GemmProblem batched_problem(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, bool tb) {
  TableKey key;
  key.n = n;
  key.k = k;
  key.batch = batch;
  key.transpose_b = tb;
  return problem_on_device(key, m);
}

GemmProblem a8w8_batched_problem(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, DType in,
                                 ScaleGranularity xs) {
  TableKey key;
  key.n = n;
  key.k = k;
  key.dtype = in;
  key.a_scale = xs;
  key.b_scale = ScaleGranularity::kRow;
  key.batch = batch;
  key.transpose_b = true;
  return problem_on_device(key, m);
}

std::vector<GemmProblem> problems_at(OpFamily family, std::int64_t m) {
  if (family == OpFamily::kA8W8Batched) {
    return {a8w8_batched_problem(16, m, 512, 128, DType::kFloat8E4M3, ScaleGranularity::kRow),
            a8w8_batched_problem(8, m, 256, 1024, DType::kInt8, ScaleGranularity::kTensor)};
  }
  return {batched_problem(16, m, 512, 128, false), batched_problem(8, m, 256, 1024, true)};
}

const Backend& cublaslt() {
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  EXPECT_NE(lt, nullptr);
  return *lt;
}

void expect_candidates_load_back(OpFamily family) {
  for (const GemmProblem& p : problems_at(family, 64)) {
    SCOPED_TRACE(p.describe());
    const std::vector<SolutionPtr> cands = cublaslt().candidates(p);
    int explicit_configs = 0;
    std::vector<ScreenedCandidate> screened;
    for (const SolutionPtr& s : cands) {
      // batched_gemm_a8w8's scale pointers step with no batch: its candidates are all staged.
      if (family == OpFamily::kA8W8Batched) EXPECT_NE(s->name().find("staged"), std::string::npos) << s->name();
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

void expect_race_rows_dispatch(OpFamily family) {
  const FamilyInfo& info = family_info(family);
  const std::string env(info.config_env);
  TempDir dir;
  const std::string table = dir.file(std::string(info.tuned_file));
  std::vector<TableRow> rows;
  std::vector<GemmProblem> problems;
  const std::vector<GemmProblem> at_64 = problems_at(family, 64), at_96 = problems_at(family, 96);
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
  ASSERT_EQ(::setenv(env.c_str(), table.c_str(), 1), 0);
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
  ::unsetenv(env.c_str());
  Runtime::get().reload();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(TuneBatched, CandidatesLoadBackFromTheirNames) {
  TGEMM_REQUIRE_GPU();
  expect_candidates_load_back(OpFamily::kBatched);
}

TEST(TuneBatched, TinyRaceRowsLoadBackAndDispatch) {
  TGEMM_REQUIRE_GPU();
  expect_race_rows_dispatch(OpFamily::kBatched);
}

TEST(TuneBatchedA8W8, CandidatesAreStagedAndLoadBackFromTheirNames) {
  TGEMM_REQUIRE_GPU();
  expect_candidates_load_back(OpFamily::kA8W8Batched);
}

TEST(TuneBatchedA8W8, TinyRaceRowsLoadBackAndDispatch) {
  TGEMM_REQUIRE_GPU();
  expect_race_rows_dispatch(OpFamily::kA8W8Batched);
}

}  // namespace
}  // namespace tgemm::test
