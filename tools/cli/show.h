#pragma once

#include <cstdint>
#include <string>

namespace tgemm::cli {

struct ShowOptions {
  bool rows = false;
  std::string config_dir;  // override of the shipped directory
  std::int64_t m = -1, n = -1, k = -1;
  bool bias = false;
  std::string dtype = "bf16";
  std::string out_dtype;
};

int run_show(const ShowOptions& options);

}  // namespace tgemm::cli
