// The batched shape suite (bench/shapes/batched_shapes.csv: name,B,M,N,K,transpose_a,transpose_b)
// that `tgemm bench --family batched` and `--family batched_a8w8` read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tgemm::cli {

struct BatchedShape {
  std::string name;
  std::int64_t batch = 0, m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
};

// The suite's rows; a tgemm::Error naming file and line for a malformed one.
std::vector<BatchedShape> read_batched_suite(const std::string& path);

}  // namespace tgemm::cli
