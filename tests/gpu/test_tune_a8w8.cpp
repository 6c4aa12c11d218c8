// The tuner on gemm_a8w8 and gemm_a8w8_blockscale problems: the cublaslt backend's a8w8 candidates
// (the two heuristic solutions and explicit configurations in the problem's form) load back from
// their names as a table row names them; a small race of an FP8 per-tensor, an INT8 per-token x
// per-channel and an FP8 block-scaled problem keeps a checked winner against the dispatcher's
// default, and rows written from it (and from an explicit configuration) load from the family's
// table, dispatch at their M and compute within the a8w8 tolerance.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cublaslt/cublaslt_config.h"
#include "core/problem.h"
#include "core/table.h"
#include "runtime/runtime.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/host_test_util.h"
#include "tuner/tuned_file.h"
#include "tuner/tuner.h"

namespace tgemm::test {
namespace {

GemmProblem a8w8_problem(std::int64_t m, DType in, ScaleGranularity xs, ScaleGranularity ws) {
  const DeviceInfo& dev = Runtime::get().platform().device_info(Runtime::get().platform().current_device());
  TableKey key;
  key.arch = dev.arch;
  key.sm_count = dev.sm_count;
  key.n = 1024;
  key.k = 2048;
  key.dtype = in;
  key.out_dtype = DType::kBFloat16;
  key.a_scale = xs;
  key.b_scale = ws;
  return problem_of_key(key, m, Runtime::get().platform().current_device());
}

struct Case {
  DType in;
  ScaleGranularity xs, ws;
  const char* form;  // the prefix of the explicit configurations' names
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {DType::kFloat8E4M3, ScaleGranularity::kTensor, ScaleGranularity::kTensor, "cublaslt:fused_"},
      {DType::kInt8, ScaleGranularity::kRow, ScaleGranularity::kRow, "cublaslt:staged_"},
      // Block scales at M = 16 and 32 (multiples of 4): cuBLASLt's block-scaled kernels write out.
      {DType::kFloat8E4M3, ScaleGranularity::kBlock, ScaleGranularity::kBlock, "cublaslt:fused_"}};
  return c;
}

const Backend& cublaslt() {
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  EXPECT_NE(lt, nullptr);
  return *lt;
}

TableRow row_for(const GemmProblem& p, const std::string& kernel, double us) {
  const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
  TableRow r;
  r.key = table_key(p, dev.arch, dev.sm_count);
  r.m = p.m;
  r.libtype = "cublaslt";
  r.kernel_name = kernel;
  r.us = us;
  return r;
}

TEST(TuneA8W8, CandidatesLoadBackFromTheirNames) {
  TGEMM_REQUIRE_GPU();
  for (const Case& c : cases()) {
    const GemmProblem p = a8w8_problem(16, c.in, c.xs, c.ws);
    SCOPED_TRACE(p.describe() + " scales=" + std::string(format_scale_recipe(c.xs, c.ws)));
    const std::vector<SolutionPtr> cands = cublaslt().candidates(p);
    int explicit_configs = 0;
    std::vector<ScreenedCandidate> screened;
    for (const SolutionPtr& s : cands) {
      const bool heuristic = s->solidx() == -1;
      if (!heuristic) {
        ++explicit_configs;
        EXPECT_EQ(s->name().rfind(c.form, 0), 0u) << s->name();
        if (screened.size() < 4) screened.push_back({s->name(), 1.0});
      }
      if (!heuristic && explicit_configs > 48) continue;  // a sample keeps the test short
      std::string why;
      SolutionPtr back = cublaslt().from_row(row_for(p, s->name(), 1.0), p, why);
      ASSERT_NE(back, nullptr) << s->name() << ": " << why;
      EXPECT_EQ(back->name(), s->name());
      EXPECT_TRUE(back->can_implement(p)) << s->name();
    }
    EXPECT_GT(explicit_configs, 0) << "no explicit configuration enumerated";
    const std::vector<SolutionPtr> refined = cublaslt().refine(p, screened, RefineOptions{});
    EXPECT_FALSE(refined.empty());
    for (const SolutionPtr& s : refined) EXPECT_EQ(s->name().rfind(c.form, 0), 0u) << s->name();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// The fastest passing explicit configuration of a race that also loads for problem `other`, or ""
// when none does. A configuration cuBLASLt runs at one M may be refused at another (an IMMA
// cluster shape taken from the heuristic at M=16 fails cublasLtMatmulAlgoCheck at M=32), so the
// row written for `other` must be one its loader accepts.
std::string fastest_configuration(const RaceResult& r, const GemmProblem& other) {
  const CandidateResult* best = nullptr;
  for (const CandidateResult& x : r.candidates) {
    if (!x.error.empty() || x.us <= 0 || x.err_ratio != 0 || !x.strict_ok ||
        x.name.find("heuristic") != std::string::npos || (best != nullptr && x.us >= best->us)) {
      continue;
    }
    std::string why;
    if (cublaslt().from_row(row_for(other, x.name, x.us), other, why) != nullptr) {
      best = &x;
    }
  }
  return best ? best->name : "";
}

// The solution dispatch resolves for p runs within the a8w8 tolerance on the tuner's operands.
void expect_dispatch_correct(const GemmProblem& p, const Resolution& res) {
  const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
  const RaceData data = make_data(p, DataOptions{}, dev);
  DeviceBuffer ws(std::max<std::size_t>(res.solution->workspace_size(p), 16));
  CandidateResult r;
  r.name = res.solution->name();
  check_solution(p, data, *res.solution, Workspace{ws.data(), ws.bytes()}, r);
  EXPECT_TRUE(r.strict_ok) << r.name;
  EXPECT_EQ(r.err_ratio, 0.0) << r.name;
}

TEST(TuneA8W8, TinyRaceRowsLoadBackAndDispatch) {
  TGEMM_REQUIRE_GPU();
  TempDir dir;
  const std::string table = dir.file("a8w8_tuned_gemm.csv");
  std::vector<TableRow> rows;
  std::vector<GemmProblem> problems;
  for (const Case& c : cases()) {
    const GemmProblem p = a8w8_problem(16, c.in, c.xs, c.ws);
    SCOPED_TRACE(p.describe());
    RaceOptions o;
    o.libtypes = {"cublaslt"};
    o.select.min_accurate = 8;
    o.accurate.check_all = true;  // every accurately timed candidate checked: fastest_configuration picks among them
    const RaceResult r = race_problem(p, o);
    const SolutionPtr def = Runtime::get().registry().default_solution(p);
    ASSERT_NE(def, nullptr);
    int defaults = 0;
    for (const CandidateResult& x : r.candidates) {
      if (!x.is_default) continue;
      ++defaults;
      EXPECT_EQ(x.name, def->name());  // the race's default is the dispatcher's
    }
    EXPECT_EQ(defaults, 1);
    ASSERT_GE(r.winner, 0);
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    EXPECT_TRUE(w.strict_ok) << w.name;
    EXPECT_TRUE(w.is_default || r.confirmed) << w.name;
    rows.push_back(row_for(p, w.name, w.us));
    problems.push_back(p);
    // An explicit configuration as the row of another M, so a configured a8w8 row dispatches too.
    const GemmProblem q = a8w8_problem(32, c.in, c.xs, c.ws);
    const std::string configured = fastest_configuration(r, q);
    ASSERT_FALSE(configured.empty()) << "no explicit configuration passed the check and loads at M=32";
    rows.push_back(row_for(q, configured, w.us));
    problems.push_back(q);
  }
  write_tuned_table(table, rows);
  // One file for both families: each loads the rows of its own key.
  ASSERT_EQ(::setenv("TGEMM_CONFIG_GEMM_A8W8", table.c_str(), 1), 0);
  ASSERT_EQ(::setenv("TGEMM_CONFIG_GEMM_A8W8_BLOCKSCALE", table.c_str(), 1), 0);
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
  ::unsetenv("TGEMM_CONFIG_GEMM_A8W8");
  ::unsetenv("TGEMM_CONFIG_GEMM_A8W8_BLOCKSCALE");
  Runtime::get().reload();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tgemm::test
