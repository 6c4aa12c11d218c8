// The fused_moe family of the `tgemm` command: `tgemm tune-fmoe` (races fused_moe's paths on a
// uniform and a skewed routing of each key and writes the rows of configs/tuned_fmoe.csv,
// src/moe/fmoe_table.h) and `tgemm bench --family fmoe` (fused_moe's dispatch, table included,
// against its default rule on the MoE layer suite). A subcommand of its own, as tune-gmm (see
// tools/cli/gmm_cli.h): fused_moe's candidates are picked inside it and raced on routings.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/cli/bench.h"
#include "tuner/fmoe_tune.h"
#include "tuner/routing_race.h"

namespace tgemm::cli {

// What both commands take their problems from.
struct FmoeSpec {
  std::string input;                                   // an untuned fmoe CSV (tune-fmoe -i), else the suite
  std::string suite = "bench/shapes/fmoe_shapes.csv";  // name,E,topk,H,I[,E_global]
  std::string tokens = "1,8,32,512,4096";              // suite problems: the token counts T
  std::string tokens_option = "--tokens";              // the option `tokens` came from, for messages
  std::string dtype = "bf16";                          // suite problems: bf16 or fp16
  std::string activation = "silu";                     // suite problems: silu or gelu
  std::string filter;                                  // substring of the problem's name
  int max_problems = 0;                                // 0: all
};

struct TuneFmoeOptions {
  FmoeSpec spec;
  std::string output = "configs/tuned_fmoe.csv";
  RoutingRaceOptions race;
  int mp = 1;            // worker processes, one per GPU, the keys dealt among them
  bool all = false;      // race keys that already have a row in the output too
  bool dry_run = false;  // print the rows, write nothing
};

CLI::App* add_tune_fmoe_command(CLI::App& app, TuneFmoeOptions& options);
int run_tune_fmoe(const TuneFmoeOptions& options);

// `tgemm bench --family fmoe`: o's timing options, the problems of `spec`, each on the uniform and
// the skewed routing.
int run_bench_fmoe(const BenchOptions& o, const FmoeSpec& spec);

// The problems of `spec` (the input file or the suite, filtered); tgemm::Error naming `op` and the
// option for a bad value or file. Needs no GPU.
std::vector<FmoeTuneProblem> fmoe_problems(const FmoeSpec& spec, const std::string& op);

}  // namespace tgemm::cli
