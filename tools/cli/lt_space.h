#pragma once

#include <cstdint>
#include <string>

namespace tgemm::cli {

struct LtSpaceCliOptions {
  std::int64_t m = 1, n = 4096, k = 4096;
  bool bias = false;
  std::string dtype = "bf16";
  bool launches = false;  // run each configuration once and count the distinct launches
};

int run_lt_space(const LtSpaceCliOptions& options);

}  // namespace tgemm::cli
