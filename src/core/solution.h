// The Solution interface (one runnable way to solve a problem) and the Backend interface (one
// family of solutions: cublaslt, skinny, cutlass, reference, ...). Backends reach the core only
// through these two classes and their registration function.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"

namespace tgemm {

struct TableRow;

class Solution {
 public:
  virtual ~Solution() = default;
  // Full, stable identity, written to the kernelName column: "<libtype>:<procedural name>".
  virtual const std::string& name() const = 0;
  virtual std::string_view libtype() const = 0;
  // The solidx and splitK columns of a table row for this solution.
  virtual int solidx() const { return 0; }
  virtual int split_k() const { return 0; }
  // Never throws; false when this solution cannot compute the problem exactly.
  virtual bool can_implement(const GemmProblem& p) const noexcept = 0;
  virtual std::size_t workspace_size(const GemmProblem& p) const = 0;
  // Enqueues the GEMM on `stream`. `ws` holds at least workspace_size(p) bytes.
  virtual void run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws,
                   Stream stream) const = 0;
};

using SolutionPtr = std::shared_ptr<const Solution>;

// A candidate's name and its fast-screen time, fed back to Backend::refine.
struct ScreenedCandidate {
  std::string name;
  double screen_us = 0;
};

// How far Backend::refine reaches (the tuner's RaceOptions::refine_bases).
struct RefineOptions {
  std::size_t max_bases = 0;  // screened configurations expanded at most; 0: the backend's own default
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view libtype() const = 0;
  // The solution a table row names, bound to problem p; nullptr with `why` set when the row
  // names nothing this build has or its configuration is invalid for p.
  virtual SolutionPtr from_row(const TableRow& row, const GemmProblem& p, std::string& why) const = 0;
  // This backend's choice when no row applies, or nullptr when it offers none for p. The
  // registry asks backends in registration order.
  virtual SolutionPtr default_solution(const GemmProblem& p) const = 0;
  // Every solution the tuner should race for p (first stage).
  virtual std::vector<SolutionPtr> candidates(const GemmProblem& p) const = 0;
  // Second-stage candidates built around the fastest screened ones (this backend's own, best
  // first), for spaces too large to race whole; none by default.
  virtual std::vector<SolutionPtr> refine(const GemmProblem& p, const std::vector<ScreenedCandidate>& screened,
                                          const RefineOptions& options) const {
    return {};
  }
};

}  // namespace tgemm
