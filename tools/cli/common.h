// Helpers shared by the tgemm subcommands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/table.h"
#include "tgemm/tensor.h"

namespace tgemm::cli {

// Exits the process with a clear message when no CUDA device is usable (status 2).
void require_gpu(const std::string& command);

DType parse_dtype(const std::string& name, const std::string& option);
std::vector<std::int64_t> parse_int_list(const std::string& list, const std::string& option);

struct SuiteShape {
  std::string model, layer;
  std::int64_t n = 0, k = 0;
};
// model,layer,N,K rows (the shared shape suite format).
std::vector<SuiteShape> read_suite(const std::string& path);

// "NVIDIA H200" -> "h200"
std::string device_slug(const std::string& device_name);
std::string today_yyyymmdd();
std::string iso_date();
// Writes a tuned table sorted by key and M, atomically (temp file + fsync + rename): an
// interrupted writer never leaves a torn table.
void write_tuned_table(const std::string& path, const std::vector<TableRow>& rows);

// The commit being measured: TGEMM_COMMIT, else `git rev-parse HEAD`, else "unknown".
std::string current_commit();

}  // namespace tgemm::cli
