// The sparse family of the `tgemm` command: `tgemm tune-sparse` (races sparse_gemm's candidates
// and writes the rows of configs/sparse_tuned_gemm.csv, src/sparse/sparse_table.h) and
// `tgemm bench --family sparse` (sparse_gemm's dispatch against tgemm's own dense GEMM on the same
// weight). A subcommand of its own rather than a family of `tgemm tune`: that tuner's problems are
// keyed by shape and dtype alone and come from an untuned CSV of captured calls, while a sparse
// row also depends on the weight's structure (pattern, density, block size), which a captured
// call does not carry and the weights are built here to measure.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tools/cli/bench.h"

namespace tgemm::cli {

// What both commands build: the problems of a shape suite at each M, for one pattern and dtype.
struct SparseSpec {
  std::string pattern = "2:4";   // 2:4, csr or block
  std::string dtype = "bf16";    // bf16, fp16; fp8 (float8_e4m3fn, 2:4 only)
  std::string densities;         // csr and block: comma list of densities (empty: 0.05 csr, 0.2 block)
  std::int64_t block_size = 64;  // block
  std::string suite = "bench/shapes/llm_shapes.csv";
  std::string ms = "512,2048";
  std::string filter;    // substring of "model/layer"
  int max_problems = 0;  // 0: all
};

struct TuneSparseOptions {
  SparseSpec spec;
  std::string output = "configs/sparse_tuned_gemm.csv";
  int rounds = 5;        // interleaved timing rounds per problem
  int replays = 10;      // timed replays per round
  bool dry_run = false;  // print the measured rows, write nothing
};

CLI::App* add_tune_sparse_command(CLI::App& app, TuneSparseOptions& options);
int run_tune_sparse(const TuneSparseOptions& options);

// `tgemm bench --family sparse`: o's timing options, the sparse problems of `spec`.
int run_bench_sparse(const BenchOptions& o, const SparseSpec& spec);

// Parses a comma list of densities in (0, 1]; tgemm::Error naming `option` otherwise.
std::vector<double> parse_densities(const std::string& list, const std::string& option);

}  // namespace tgemm::cli
