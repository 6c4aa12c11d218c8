// Pieces of a GPU tuner test for any family (test_tune_batched.cpp; test_tune_a8w8.cpp has its own
// copies): a cuBLASLt table row for a problem, the fastest checked explicit configuration of a race
// that loads for another problem, and the check that a resolved solution computes the problem
// within the tuner's strict tolerance.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/table.h"
#include "runtime/runtime.h"
#include "tuner/tuner.h"

namespace tgemm::test {

inline TableRow cublaslt_row_for(const GemmProblem& p, const std::string& kernel, double us) {
  const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
  TableRow r;
  r.key = table_key(p, dev.arch, dev.sm_count);
  r.m = p.m;
  r.libtype = "cublaslt";
  r.kernel_name = kernel;
  r.us = us;
  return r;
}

// The fastest passing explicit configuration of a race that the cublaslt backend also loads for
// problem `other`, or "" when none does: a configuration cuBLASLt runs at one M may be refused at
// another (cublasLtMatmulAlgoCheck), so a row written for `other` must be one its loader accepts.
inline std::string fastest_configuration(const RaceResult& r, const GemmProblem& other) {
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  const CandidateResult* best = nullptr;
  for (const CandidateResult& x : r.candidates) {
    if (!x.error.empty() || x.us <= 0 || x.err_ratio != 0 || !x.strict_ok ||
        x.name.find("heuristic") != std::string::npos || (best != nullptr && x.us >= best->us)) {
      continue;
    }
    std::string why;
    if (lt != nullptr && lt->from_row(cublaslt_row_for(other, x.name, x.us), other, why) != nullptr) best = &x;
  }
  return best ? best->name : "";
}

// Races p on the cublaslt backend with every accurately timed candidate checked (so
// fastest_configuration picks among checked ones), expecting one default, the dispatcher's, and a
// strictly checked winner that is the default or was confirmed against it.
inline RaceResult race_cublaslt(const GemmProblem& p) {
  RaceOptions o;
  o.libtypes = {"cublaslt"};
  o.select.min_accurate = 8;
  o.accurate.check_all = true;
  const RaceResult r = race_problem(p, o);
  const SolutionPtr def = Runtime::get().registry().default_solution(p);
  EXPECT_NE(def, nullptr);
  int defaults = 0;
  for (const CandidateResult& x : r.candidates) {
    if (!x.is_default) continue;
    ++defaults;
    if (def != nullptr) EXPECT_EQ(x.name, def->name());  // the race's default is the dispatcher's
  }
  EXPECT_EQ(defaults, 1);
  EXPECT_GE(r.winner, 0);
  if (r.winner >= 0) {
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    EXPECT_TRUE(w.strict_ok) << w.name;
    EXPECT_TRUE(w.is_default || r.confirmed) << w.name;
  }
  return r;
}

// The solution dispatch resolved for p runs within the strict tolerance on the tuner's operands.
inline void expect_dispatch_correct(const GemmProblem& p, const Resolution& res) {
  const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
  const RaceData data = make_data(p, DataOptions{}, dev);
  DeviceBuffer ws(std::max<std::size_t>(res.solution->workspace_size(p), 16));
  CandidateResult r;
  r.name = res.solution->name();
  check_solution(p, data, *res.solution, Workspace{ws.data(), ws.bytes()}, r);
  EXPECT_TRUE(r.strict_ok) << r.name;
  EXPECT_EQ(r.err_ratio, 0.0) << r.name;
}

}  // namespace tgemm::test
