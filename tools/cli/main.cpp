// The `tgemm` command: bench, show (tune, shapes and merge come with the tuner).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tgemm/error.h"
#include "tools/cli/bench.h"
#include "tools/cli/show.h"

int main(int argc, char** argv) {
  CLI::App app{"tgemm: per-shape tuned GEMM engine for NVIDIA Hopper"};
  app.require_subcommand(1);

  tgemm::cli::BenchOptions bench;
  CLI::App* b = app.add_subcommand("bench", "time cuBLASLt default vs tgemm dispatch on a shape suite");
  b->add_option("--suite", bench.suite, "shape suite CSV (model,layer,N,K)")->capture_default_str();
  b->add_option("-m,--m", bench.ms, "comma-separated M values")->capture_default_str();
  b->add_option("--dtype", bench.dtype, "input dtype (bf16, fp16)")->capture_default_str();
  b->add_option("--out-dtype", bench.out_dtype, "output dtype (default: input dtype)");
  b->add_flag("--bias", bench.bias, "add a bias [N]");
  b->add_option("--json", bench.json, "results JSON path ('-' for none; default bench/results/<suite>-<device>-<date>.json)");
  b->add_flag("--candidates", bench.candidates, "also time every registered candidate and report the best");
  b->add_flag("!--no-check", bench.check, "skip the correctness check of tgemm's output against the reference");
  b->add_flag("--overhead", bench.overhead, "time host dispatch overhead vs cublasLtMatmul (100k calls)");
  b->add_option("--overhead-calls", bench.overhead_calls, "calls per side in --overhead mode")->capture_default_str();
  b->add_option("--replays", bench.replays, "timed graph replays per measurement")->capture_default_str();
  b->add_option("--filter", bench.filter, "only problems whose model/layer contains this");
  b->add_option("--max-problems", bench.max_problems, "stop after this many problems (0: all)");

  tgemm::cli::ShowOptions show;
  CLI::App* s = app.add_subcommand("show", "show the loaded tables and where a problem resolves");
  s->add_flag("--rows", show.rows, "print the rows (filtered by -n/-k when given)");
  s->add_option("--config-dir", show.config_dir, "directory of the shipped tables");
  s->add_option("-m", show.m, "M of a problem to resolve (needs a GPU)");
  s->add_option("-n", show.n, "N");
  s->add_option("-k", show.k, "K");
  s->add_flag("--bias", show.bias, "problem has a bias");
  s->add_option("--dtype", show.dtype, "input dtype")->capture_default_str();
  s->add_option("--out-dtype", show.out_dtype, "output dtype");

  CLI11_PARSE(app, argc, argv);
  try {
    if (b->parsed()) return tgemm::cli::run_bench(bench);
    if (s->parsed()) return tgemm::cli::run_show(show);
  } catch (const tgemm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
