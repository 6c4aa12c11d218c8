// Fakes of the two interfaces the core reaches the machine through (Platform, Backend/Solution),
// so the dispatcher, registry and lookup walk run in host tests without a GPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/platform.h"
#include "core/problem.h"
#include "core/solution.h"

namespace tgemm::test {

// One device: "sm_90a" with 132 SMs unless told otherwise.
class FakePlatform : public Platform {
 public:
  explicit FakePlatform(std::string arch = "sm_90a", int sm_count = 132, std::string name = "Fake H100");
  int current_device() const override { return 0; }
  const DeviceInfo& device_info(int ordinal) const override;

 private:
  DeviceInfo info_;
};

// A solution that runs nothing; `can_implement` is a predicate the test sets.
class FakeSolution : public Solution {
 public:
  using Predicate = std::function<bool(const GemmProblem&)>;
  FakeSolution(std::string name, std::string libtype, Predicate accepts = {});

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return libtype_; }
  bool can_implement(const GemmProblem& p) const noexcept override;
  std::size_t workspace_size(const GemmProblem&) const override { return 0; }
  void run(const GemmProblem&, const GemmArgs&, const Workspace&, Stream) const override {}

 private:
  std::string name_;
  std::string libtype_;
  Predicate accepts_;
};

// A backend of named solutions "<libtype>:<tile>", e.g. "fake:tile64". from_row finds the row's
// kernelName among them (else nullptr, why = "unknown kernelName '...'") and counts its calls per
// M, so tests can prove the dispatcher caches.
class FakeBackend : public Backend {
 public:
  // `tiles` {"tile64", "tile128"} give solutions "fake:tile64", "fake:tile128". `default_tile`
  // names the default solution ("" = this backend offers none).
  FakeBackend(std::string libtype, const std::vector<std::string>& tiles,
              const std::string& default_tile = "");

  // Makes solution `name` reject problems for which `accepts` is false. Call before resolving.
  void set_accepts(const std::string& name, FakeSolution::Predicate accepts);
  // Makes from_row throw for rows naming `name`.
  void set_throws(const std::string& name) { throws_ = name; }
  // Calls `hook` (outside any lock of the fake) at the start of every from_row.
  void set_from_row_hook(std::function<void(const GemmProblem&)> hook) { hook_ = std::move(hook); }

  SolutionPtr solution(const std::string& name) const;
  int from_row_calls() const { return total_calls_.load(); }
  int from_row_calls_for_m(std::int64_t m) const;

  std::string_view libtype() const override { return libtype_; }
  SolutionPtr from_row(const TableRow& row, const GemmProblem& p, std::string& why) const override;
  SolutionPtr default_solution(const GemmProblem& p) const override;
  std::vector<SolutionPtr> candidates(const GemmProblem& p) const override;

 private:
  std::string libtype_;
  std::map<std::string, std::shared_ptr<FakeSolution>> solutions_;
  std::string default_name_;
  std::string throws_;
  std::function<void(const GemmProblem&)> hook_;
  mutable std::atomic<int> total_calls_{0};
  mutable std::mutex calls_mutex_;
  mutable std::map<std::int64_t, int> calls_by_m_;
};

// A bf16 a16w16 problem M x N x K with contiguous operands, as validate_a16w16 would build it.
GemmProblem a16w16_problem(std::int64_t m, std::int64_t n, std::int64_t k, bool bias = false);

}  // namespace tgemm::test
