// The gmm family of the `tgemm` command: `tgemm tune-gmm` (races gmm's solutions on a uniform and
// a skewed routing of each key and writes the rows of configs/tuned_gmm.csv,
// src/grouped/gmm_table.h) and `tgemm bench --family gmm` (gmm's dispatch, table included, against
// its default rule on the MoE suite). A subcommand of its own rather than a family of `tgemm tune`:
// that tuner races the registry's solutions of one matrix product (GemmProblem) in worker
// processes, while gmm's candidates (the tile kernels, the CUTLASS grouped instances) are picked
// inside gmm, and a gmm key is raced on routings (group sizes) built for it, with a rule over both.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/cli/bench.h"
#include "tuner/gmm_tune.h"
#include "tuner/routing_race.h"

namespace tgemm::cli {

// What both commands take their problems from.
struct GmmSpec {
  std::string input;                                  // an untuned gmm CSV (tune-gmm -i), else the suite
  std::string suite = "bench/shapes/moe_shapes.csv";  // name,G,tokens_per_expert,N,K
  std::string rhs = "gnk";                            // suite problems: gnk ([G, N, K]) or gkn
  std::string dtype = "bf16";                         // suite problems: bf16 or fp16
  std::string out_dtype;                              // empty: dtype; else dtype or fp32
  bool bias = false;
  std::string filter;    // substring of the problem's name
  int max_problems = 0;  // 0: all
};

struct TuneGmmOptions {
  GmmSpec spec;
  std::string output = "configs/tuned_gmm.csv";
  RoutingRaceOptions race;
  bool dry_run = false;  // print the rows, write nothing
};

CLI::App* add_tune_gmm_command(CLI::App& app, TuneGmmOptions& options);
int run_tune_gmm(const TuneGmmOptions& options);

// `tgemm bench --family gmm`: o's timing options, the problems of `spec`, each on the uniform and
// the skewed routing.
int run_bench_gmm(const BenchOptions& o, const GmmSpec& spec);

// The problems of `spec` (the input file or the suite, filtered); tgemm::Error naming `op` and the
// option for a bad value or file. Needs no GPU.
std::vector<GmmTuneProblem> gmm_problems(const GmmSpec& spec, const std::string& op);

}  // namespace tgemm::cli
