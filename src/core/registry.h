// The registry of backends. Filled explicitly (register_<backend>_solutions), no static
// initialisers; the order of registration is the order in which defaults are offered.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/solution.h"

namespace tgemm {

class Registry {
 public:
  void add(std::unique_ptr<Backend> backend);
  // nullptr when no backend of that libtype is registered in this build.
  const Backend* find(std::string_view libtype) const;
  // First backend default that can implement p; nullptr if none.
  SolutionPtr default_solution(const GemmProblem& p) const;
  const std::vector<std::unique_ptr<Backend>>& backends() const { return backends_; }

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
};

}  // namespace tgemm
