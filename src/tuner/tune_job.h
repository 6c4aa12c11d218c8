// Internal to the tune command (tuner/command.h): the untuned problems, the messages between the
// parent and its workers, and the worker's loop.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/table.h"
#include "tgemm/tensor.h"
#include "tuner/command.h"

namespace tgemm {

struct UntunedProblem {
  std::int64_t m = 0, n = 0, k = 0;
  bool bias = false;
  DType dtype = DType::kBFloat16, out_dtype = DType::kBFloat16;
  bool scale_ab = false, bpreshuffle = false;
  EpilogueKey epilogue;
  // a8w8 (dtype float8_e4m3fn or int8): the scale recipe, the `scales` column; kNone for a16w16,
  // kBlock for a8w8_blockscale.
  ScaleGranularity a_scale = ScaleGranularity::kNone, b_scale = ScaleGranularity::kNone;
  // batched_gemm (the B column given): the batch and the stored layouts; batch 0 otherwise.
  std::int64_t batch = 0;
  bool transpose_a = false, transpose_b = false;
  OpFamily family() const {
    if (batch > 0) return a_scale == ScaleGranularity::kNone ? OpFamily::kBatched : OpFamily::kA8W8Batched;
    if (a_scale == ScaleGranularity::kNone) return OpFamily::kA16W16;
    return a_scale == ScaleGranularity::kBlock ? OpFamily::kA8W8Blockscale : OpFamily::kA8W8;
  }
  std::string describe() const;
};

// The untuned CSV (M,N,K[,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue,scales,B,transpose_a,
// transpose_b]); duplicates dropped. The family follows from dtype, scales and B: bf16/fp16 rows are
// a16w16, or batched where they give B (the capture's bf16_untuned_batched_gemm.csv does), 8-bit
// rows with B a8w8_batched (a8w8_untuned_batched_gemm.csv);
// float8_e4m3fn and int8 rows a8w8 and must name their scales (the capture's a8w8_untuned_gemm.csv
// does), `block` making a float8_e4m3fn row a8w8_blockscale; one family a file, since the rows go
// to one tuned table.
std::vector<UntunedProblem> read_untuned(const std::string& path);

// A problem as the parent sends it to a worker, and the GemmProblem the worker races on `device`.
nlohmann::json problem_json(const UntunedProblem& p);
GemmProblem problem_from_json(const nlohmann::json& pj, int device);

// The table key of an untuned problem on a GPU of `arch` with `sm` SMs.
TableKey key_of(const UntunedProblem& u, const std::string& arch, int sm);

// "1m05s", "42s"; "?" for a negative or non-finite time.
std::string format_duration(double seconds);

// A tuned row's throughput columns from its time.
void set_row_rates(TableRow& row, const GemmProblem& p);

// The worker: problems in as JSON lines on stdin, progress and results out as JSON lines on stdout.
int run_worker(const TuneOptions& options);

}  // namespace tgemm
