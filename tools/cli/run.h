// `tgemm run`: one problem through one named solution (or through dispatch), a few eager calls,
// checked against the fp32 reference: the command to put under ncu, nsys or compute-sanitizer
// for a single kernel on any shape.
#pragma once

#include <cstdint>
#include <string>

namespace tgemm::cli {

struct RunOptions {
  std::string solution;  // "libtype:..." as in a table's kernelName; empty: what dispatch picks
  std::int64_t m = 1, n = 4096, k = 4096;
  std::string dtype = "bf16";
  std::string out_dtype;  // default: dtype
  bool bias = false;
  std::string epilogue = "none";  // none | gelu | gelu_tanh | relu
  int iters = 5;
  bool check = true;
};

int run_run(const RunOptions& options);

}  // namespace tgemm::cli
