// Helpers shared by the tgemm subcommands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/table.h"
#include "tuner/tuned_file.h"
#include "tgemm/tensor.h"

namespace tgemm::cli {

// Exits the process with a clear message when no CUDA device is usable (status 2).
void require_gpu(const std::string& command);

DType parse_dtype(const std::string& name, const std::string& option);
std::vector<std::int64_t> parse_int_list(const std::string& list, const std::string& option);

// A GEMM dimension option (-m, -n, -k): an integer in [lo, 2^31 - 1], the range the kernels
// index with 32-bit integers (so products of two fit int64 when sizing buffers).
void check_dim(const std::string& op, const std::string& option, std::int64_t value, std::int64_t lo);

struct SuiteShape {
  std::string model, layer;
  std::int64_t n = 0, k = 0;
};
// model,layer,N,K rows (the shared shape suite format).
std::vector<SuiteShape> read_suite(const std::string& path);

// Writes text to path (truncating it), checking the open, every write and the close: a full disk
// or /dev/full is a tgemm::Error naming `op`, the `option` the path came from and the path.
void write_text_file(const std::string& path, const std::string& text, const std::string& op,
                     const std::string& option);

// The current UTC time as YYYY-MM-DDTHH:MM:SSZ.
std::string iso_date();

// The commit being measured: TGEMM_COMMIT, else `git rev-parse HEAD`, else "unknown".
std::string current_commit();

}  // namespace tgemm::cli
