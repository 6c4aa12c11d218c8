// `tgemm bench`: side-by-side timing of cuBLASLt's heuristic default (what F.linear runs), tgemm
// dispatch, the streaming-read floor of each problem's bytes, and optionally every registered
// candidate; CUDA-graph replay, inputs rotated past L2, median and spread; table on stdout,
// JSON under bench/results/ (one file per suite and card, recording the command that made it).
// The M values: -m's list or the M grid (--m-grid, core/m_grid.h); a problem reading below
// --remeasure-below is timed again and the second reading counts.
#pragma once

#include <cstdint>
#include <cstddef>
#include <string>
#include <vector>

namespace tgemm::cli {

struct BenchOptions {
  std::string suite = "bench/shapes/llm_shapes.csv";
  std::string ms = "1,16,64,128,512,2048,8192";
  bool m_grid = false;              // instead of ms: the M grid (core/m_grid.h) up to m_grid_max
  std::int64_t m_grid_max = 16384;  // kMGridMax
  // a16w16 (gemm_a16w16 vs cuBLASLt's default as F.linear runs it), a8w8 (gemm_a8w8 vs the
  // cublaslt backend's a8w8 default, bench_a8w8.cpp), a8w8_blockscale (gemm_a8w8_blockscale vs
  // cuBLASLt's block-scaled default, bench_a8w8.cpp), batched (batched_gemm vs cuBLASLt's
  // strided-batched default, bench_batched.cpp) or batched_a8w8 (batched_gemm_a8w8 vs the
  // cublaslt backend's default for it, bench_batched_a8w8.cpp).
  std::string family = "a16w16";
  std::string dtype = "bf16";            // a8w8: fp8 or int8
  std::string scales = "token_channel";  // a8w8: the scale recipe (format_scale_recipe)
  std::string out_dtype;  // empty: same as dtype
  bool bias = false;
  std::string epilogue;   // activation: gelu, gelu_tanh or relu (baseline: GEMM + separate pass)
  std::string json;       // empty: bench/results/<suite>-<card>.json (card_slug); "-": none
  std::string command;    // the command line that runs this bench, recorded in the JSON
  bool candidates = false;
  bool check = true;
  bool overhead = false;
  int overhead_calls = 100000;
  int replays = 15;
  std::string filter;     // substring of "model/layer"
  int max_problems = 0;   // 0: all
  // Bytes of workspace the baseline's cublasLtMatmul is given: 0, the size its heuristic result
  // asks for; else max(that, this), as PyTorch passes its whole cuBLASLt workspace (and tgemm its
  // 32 MiB pool buffer).
  std::size_t baseline_workspace = 0;
  // A/A check of the harness: "off"; "baseline": both sides run the baseline; "dispatch": both
  // sides run tgemm's dispatch. The speedup column then measures the harness, not tgemm (a biased
  // harness reads rows that run the baseline's own algorithm at 0.95-0.97x).
  std::string aa = "off";
  int rounds = 0;    // interleaved baseline/tgemm rounds per problem (0: plan_slots' choice)
  // A problem whose speedup reads below this is timed again in the same run and the second
  // reading counts (the first is kept in the row's "first_reading"): a single reading can land
  // on a clock or power transient. 0: never.
  double remeasure_below = 0.98;
  int settle_rounds = 0;  // rounds run first and discarded (TimingOptions::settle_rounds)
  int launches = 0;       // calls captured per graph in the baseline/tgemm timing (0: plan_slots' choice)
  bool shuffle = false;   // TimingOptions::shuffle_order
  std::string data = "unit";   // weights U(-1, 1), or "fan_in": U(-3 / sqrt(K), 3 / sqrt(K)) (outputs ~ unit variance)
  std::string timing = "private";  // graphs on private streams, one "shared" stream, or "recapture"d each round
};

int run_bench(const BenchOptions& options);
// --family a8w8 and a8w8_blockscale, --family batched and batched_a8w8 (run_bench hands them over).
int run_bench_a8w8(const BenchOptions& options);
int run_bench_batched(const BenchOptions& options);
int run_bench_batched_a8w8(const BenchOptions& options);

}  // namespace tgemm::cli
