// The one exception type of tgemm. Messages name the op, the argument, what was expected and
// what was given: "gemm_a16w16: w.size(1) must equal x.size(-1) (K), got 4095 vs 4096".
#pragma once

#include <stdexcept>
#include <string>

namespace tgemm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace tgemm
