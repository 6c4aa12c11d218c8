// The `tgemm` command: bench, show, tune, tune-sparse, tune-gmm, tune-fmoe, reconfirm, shapes, merge, compare,
// run, lt-space.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "core/check.h"
#include "core/m_grid.h"
#include "tgemm/error.h"
#include "tools/cli/bench.h"
#include "tools/cli/fmoe_cli.h"
#include "tools/cli/gmm_cli.h"
#include "tools/cli/lt_space.h"
#include "tools/cli/run.h"
#include "tools/cli/shapes.h"
#include "tools/cli/show.h"
#include "tools/cli/sparse_cli.h"
#include "tools/cli/tune_cli.h"
#include "tuner/command.h"

namespace {

// The command line as a shell would take it back: arguments with characters other than
// [A-Za-z0-9_./,:=+-] in single quotes.
std::string command_line(int argc, char** argv) {
  std::string out = "tgemm";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool plain = !a.empty() && a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                         "0123456789_./,:=+-") == std::string::npos;
    std::string quoted = "'";
    for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += " " + (plain ? a : quoted + "'");
  }
  return out;
}

// Options that check or diagnose the bench harness itself rather than measure tgemm.
constexpr const char* kHarnessGroup = "Expert: harness checks and diagnostics";

CLI::App* add_bench_command(CLI::App& app, tgemm::cli::BenchOptions& bench, tgemm::cli::SparseSpec& sparse,
                            tgemm::cli::GmmSpec& gmm, tgemm::cli::FmoeSpec& fmoe) {
  CLI::App* b = app.add_subcommand("bench", "time cuBLASLt default vs tgemm dispatch on a shape suite");
  b->add_option("--suite", bench.suite, "shape suite CSV (model,layer,N,K)")->capture_default_str();
  CLI::Option* ms = b->add_option("-m,--m", bench.ms, "comma-separated M values")->capture_default_str();
  CLI::Option* grid = b->add_flag("--m-grid", bench.m_grid,
                                  "instead of -m: the M grid, 1..16 one by one, then four steps an octave up to "
                                  "--m-grid-max, so a slow M between tuned points cannot hide")
                          ->excludes(ms);
  b->add_option("--m-grid-max", bench.m_grid_max, "the largest M of --m-grid")
      ->needs(grid)
      ->check(CLI::Range(std::int64_t{1}, tgemm::kMGridLimit))
      ->capture_default_str();
  b->add_option("--family", bench.family,
                "op family: a16w16 (gemm_a16w16), a8w8 (gemm_a8w8), a8w8_blockscale (gemm_a8w8_blockscale) or "
                "batched (batched_gemm, on a suite of name,B,M,N,K,transpose_a,transpose_b rows; default "
                "bench/shapes/batched_shapes.csv) or batched_a8w8 (batched_gemm_a8w8 on that suite) or sparse "
                "(sparse_gemm against tgemm's dense GEMM on the same weight: --pattern, --density, --block-size) "
                "or gmm (gmm's dispatch against its default rule, uniform and skewed routings, on a suite of "
                "name,G,tokens_per_expert,N,K rows; default bench/shapes/moe_shapes.csv; --rhs) or fmoe "
                "(fused_moe's dispatch against its default rule, uniform and skewed routings, on a suite of "
                "name,E,topk,H,I[,E_global] rows at -m tokens; default bench/shapes/fmoe_shapes.csv at "
                "1,8,32,512,4096; --activation)")
      ->check(CLI::IsMember({"a16w16", "a8w8", "a8w8_blockscale", "batched", "batched_a8w8", "sparse", "gmm", "fmoe"}))
      ->capture_default_str();
  b->add_option("--pattern", sparse.pattern, "--family sparse: 2:4, csr or block")->capture_default_str();
  b->add_option("--density", sparse.densities, "--family sparse, csr/block: comma list of densities");
  b->add_option("--block-size", sparse.block_size, "--family sparse, block: the blocks' side")->capture_default_str();
  b->add_option("--rhs", gmm.rhs, "--family gmm: rhs layout gnk ([G, N, K]) or gkn ([G, K, N])")->capture_default_str();
  b->add_option("--activation", fmoe.activation, "--family fmoe: silu or gelu")->capture_default_str();
  b->add_option("--dtype", bench.dtype, "input dtype (bf16, fp16; with --family a8w8: fp8, int8)")
      ->capture_default_str();
  b->add_option("--scales", bench.scales, "--family a8w8: scale recipe tensor|token|channel|token_channel")
      ->capture_default_str();
  b->add_option("--out-dtype", bench.out_dtype, "output dtype (default: input dtype)");
  b->add_flag("--bias", bench.bias, "add a bias [N]");
  b->add_option("--epilogue", bench.epilogue, "activation gelu|gelu_tanh|relu: fused vs GEMM + separate pass");
  b->add_option("--json", bench.json, "results JSON path ('-' for none; default bench/results/<suite>-<card>.json)");
  b->add_flag("--candidates", bench.candidates, "also time every registered candidate and report the best");
  b->add_flag("!--no-check", bench.check, "skip the correctness check of tgemm's output against the reference");
  b->add_flag("--overhead", bench.overhead, "time host dispatch overhead vs cublasLtMatmul (100k calls)");
  b->add_option("--overhead-calls", bench.overhead_calls, "calls per side in --overhead mode")->capture_default_str();
  b->add_option("--replays", bench.replays, "timed graph replays per measurement")
      ->capture_default_str()
      ->group(kHarnessGroup);
  b->add_option("--filter", bench.filter, "only problems whose model/layer contains this");
  b->add_option("--max-problems", bench.max_problems, "stop after this many problems (0: all)");
  b->add_option("--aa", bench.aa,
                "harness A/A check: off, baseline (both sides run the baseline) or dispatch (both run tgemm); a "
                "sound harness reads 1.00x")
      ->check(CLI::IsMember({"off", "baseline", "dispatch"}))
      ->capture_default_str()
      ->group(kHarnessGroup);
  b->add_option("--data", bench.data,
                "operand data: unit (x, w ~ U(-1, 1): outputs of std ~sqrt(K / 9)) or fan_in (w scaled by 3 / sqrt(K): "
                "outputs of unit variance, as torch_bench's and a model's)")
      ->check(CLI::IsMember({"unit", "fan_in"}))
      ->capture_default_str();
  b->add_option("--baseline-workspace", bench.baseline_workspace,
                "bytes of workspace given to the baseline's cublasLtMatmul (0: what its heuristic asks for; "
                "PyTorch passes its whole cuBLASLt workspace)")
      ->capture_default_str()
      ->group(kHarnessGroup);
  b->add_option("--timing", bench.timing,
                "graphs on a stream each (private), on one stream (shared) or captured anew each round (recapture): "
                "tells a stream or capture effect from a kernel's")
      ->check(CLI::IsMember({"private", "shared", "recapture"}))
      ->capture_default_str()
      ->group(kHarnessGroup);
  b->add_option("--settle-rounds", bench.settle_rounds,
                "interleaved rounds run first and discarded, so timing starts at the sustained state")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str()
      ->group(kHarnessGroup);
  b->add_option("--launches", bench.launches,
                "calls captured in each timed graph (baseline and tgemm); 0: a graph of ~6 ms of work, 2-20 calls, "
                "whose short slots keep the GPU's clock controller from favouring one side")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str()
      ->group(kHarnessGroup);
  b->add_flag("--shuffle", bench.shuffle,
              "a random order of baseline and tgemm in each round instead of ABBA, so neither keeps a phase against "
              "a periodic clock or power controller")
      ->group(kHarnessGroup);
  b->add_option("--remeasure-below", bench.remeasure_below,
                "a problem whose speedup reads below this is timed again and the second reading counts (both "
                "recorded); 0: never")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str()
      ->group(kHarnessGroup);
  b->add_option("--rounds", bench.rounds,
                "interleaved baseline/tgemm rounds per problem; 0: 10, more (up to 60) where a graph holds fewer calls")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str()
      ->group(kHarnessGroup);

  return b;
}

CLI::App* add_show_command(CLI::App& app, tgemm::cli::ShowOptions& show) {
  CLI::App* s = app.add_subcommand("show", "show the loaded tables and where a problem resolves");
  s->add_flag("--rows", show.rows, "print the rows (filtered by -n/-k when given)");
  s->add_option("--config-dir", show.config_dir, "directory of the shipped tables");
  s->add_option("-m", show.m, "M of a problem to resolve (needs a GPU)");
  s->add_option("-n", show.n, "N");
  s->add_option("-k", show.k, "K");
  s->add_flag("--bias", show.bias, "problem has a bias");
  s->add_option("--dtype", show.dtype, "input dtype")->capture_default_str();
  s->add_option("--out-dtype", show.out_dtype, "output dtype");
  return s;
}

CLI::App* add_lt_space_command(CLI::App& app, tgemm::cli::LtSpaceCliOptions& lts) {
  CLI::App* l = app.add_subcommand("lt-space", "size of cuBLASLt's configuration space for a problem");
  l->add_option("-m", lts.m, "M")->capture_default_str();
  l->add_option("-n", lts.n, "N")->capture_default_str();
  l->add_option("-k", lts.k, "K")->capture_default_str();
  l->add_flag("--bias", lts.bias, "with bias");
  l->add_option("--dtype", lts.dtype, "input dtype")->capture_default_str();
  l->add_flag("--launches", lts.launches,
              "run every configuration once and count the distinct launches (kernel, shape, arguments) among them");
  return l;
}

CLI::App* add_shapes_command(CLI::App& app, tgemm::cli::ShapesOptions& shapes) {
  CLI::App* sh = app.add_subcommand("shapes", "write the untuned CSV of a model (config.json) or a shape suite");
  sh->add_option("--model_dir", shapes.model_dir, "directory with the Hugging Face config.json (or the file)");
  sh->add_option("--suite", shapes.suite, "shape suite CSV (model,layer,N,K) instead of a model");
  sh->add_option("--tp", shapes.tp, "tensor-parallel degree")->capture_default_str();
  CLI::Option* nsets = sh->add_option("--nsets", shapes.nsets, "token counts (M), comma list")->capture_default_str();
  CLI::Option* shapes_grid =
      sh->add_flag("--m-grid", shapes.m_grid,
                   "instead of --nsets: each (N, K) over the M grid (1..16, then four steps an octave) up to the M it "
                   "sees at --m-grid-max tokens, so a tune covers M, not points")
          ->excludes(nsets);
  sh->add_option("--m-grid-max", shapes.m_grid_max, "the largest token count of --m-grid")
      ->needs(shapes_grid)
      ->check(CLI::Range(std::int64_t{1}, tgemm::kMGridLimit))
      ->capture_default_str();
  sh->add_option("--batch_size", shapes.batch_size, "multiplies every token count")->capture_default_str();
  sh->add_flag("--lm_head", shapes.lm_head, "include the LM head (vocab_size x hidden)");
  sh->add_flag("--bias", shapes.bias, "problems with bias");
  sh->add_option("--dtype", shapes.dtype, "input dtype (default: the model's torch_dtype, else bf16)");
  sh->add_option("--outdtype", shapes.out_dtype, "output dtype (default: dtype)");
  sh->add_option("-o,--output", shapes.output, "untuned CSV to write")->capture_default_str();
  return sh;
}

CLI::App* add_merge_command(CLI::App& app, tgemm::cli::MergeOptions& merge) {
  CLI::App* mg = app.add_subcommand(
      "merge", "merge tuned tables: rows of one key and M keep the lowest us, a key's M ranges stay disjoint");
  mg->add_option("inputs", merge.inputs, "tuned CSVs")->required();
  mg->add_option("-o,--output", merge.output, "merged table")->required();
  mg->add_flag("--later-wins", merge.later_wins,
               "a later file's row replaces the earlier files' rows whose M ranges it overlaps, whatever their us "
               "(as TGEMM_CONFIG_GEMM_BF16=a:b layers them)");
  return mg;
}

CLI::App* add_compare_command(CLI::App& app, tgemm::cli::CompareOptions& compare) {
  CLI::App* cmp = app.add_subcommand("compare", "how far two tuned tables of the same problems agree");
  cmp->add_option("a", compare.a, "tuned CSV A")->required();
  cmp->add_option("b", compare.b, "tuned CSV B")->required();
  cmp->add_option("--tie-band", compare.tie_band, "rows whose times differ by at most this fraction tie")
      ->capture_default_str();
  cmp->add_flag("--measure", compare.measure,
                "time each differing row's two solutions against each other on this GPU (one run, paired) "
                "and judge the tie band on those times");
  cmp->add_option("--rounds", compare.rounds, "interleaved rounds of --measure")->capture_default_str();
  cmp->add_flag("--short_slots,!--no-short_slots", compare.short_slots,
                "--measure in ~6 ms graphs with proportionally more rounds (on by default, as tgemm bench and tune)");
  cmp->add_option("--placements", compare.placements,
                  "operand placements of --measure (the median ratio is judged)")
      ->capture_default_str();
  cmp->add_option("--min_rotation_sets", compare.min_rotation_sets,
                  "--measure: operand sets rotated over at least, even where one set exceeds 3 L2 sizes")
      ->capture_default_str();
  cmp->add_option("--json", compare.json,
                  "write each common row's verdict (with --measure: its paired ratio, A's time / B's) to this file");
  return cmp;
}

CLI::App* add_run_command(CLI::App& app, tgemm::cli::RunOptions& run) {
  CLI::App* rn = app.add_subcommand(
      "run", "one problem through one named solution (or dispatch), checked: for ncu, nsys, compute-sanitizer");
  rn->add_option("--solution", run.solution, "a table kernelName ('skinny:...', 'cublaslt:...'); default: dispatch");
  rn->add_option("-m", run.m, "M")->capture_default_str();
  rn->add_option("-n", run.n, "N")->capture_default_str();
  rn->add_option("-k", run.k, "K")->capture_default_str();
  rn->add_option("--dtype", run.dtype, "input dtype (bf16, fp16)")->capture_default_str();
  rn->add_option("--out-dtype", run.out_dtype, "output dtype (default: input dtype)");
  rn->add_flag("--bias", run.bias, "add a bias [N]");
  rn->add_option("--epilogue", run.epilogue, "none, gelu, gelu_tanh or relu")->capture_default_str();
  rn->add_option("--iters", run.iters, "eager calls")->capture_default_str();
  rn->add_flag("!--no-check", run.check, "skip the check against the fp32 reference");
  return rn;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tgemm: per-shape tuned GEMM engine for NVIDIA Hopper"};
  app.require_subcommand(1);

  tgemm::cli::BenchOptions bench;
  bench.command = command_line(argc, argv);
  tgemm::cli::SparseSpec sparse;
  tgemm::cli::GmmSpec bench_gmm;
  tgemm::cli::FmoeSpec bench_fmoe;
  CLI::App* b = add_bench_command(app, bench, sparse, bench_gmm, bench_fmoe);

  tgemm::cli::ShowOptions show;
  CLI::App* s = add_show_command(app, show);
  tgemm::cli::LtSpaceCliOptions lts;
  CLI::App* l = add_lt_space_command(app, lts);
  tgemm::TuneOptions tune;
  CLI::App* t = tgemm::cli::add_tune_command(app, tune);

  tgemm::cli::TuneSparseOptions tune_sparse;
  CLI::App* ts = tgemm::cli::add_tune_sparse_command(app, tune_sparse);

  tgemm::cli::TuneGmmOptions tune_gmm;
  CLI::App* tg = tgemm::cli::add_tune_gmm_command(app, tune_gmm);

  tgemm::cli::TuneFmoeOptions tune_fmoe;
  CLI::App* tf = tgemm::cli::add_tune_fmoe_command(app, tune_fmoe);

  tgemm::ReconfirmOptions reconfirm;
  CLI::App* rc = tgemm::cli::add_reconfirm_command(app, reconfirm);

  tgemm::cli::ShapesOptions shapes;
  CLI::App* sh = add_shapes_command(app, shapes);
  tgemm::cli::MergeOptions merge;
  CLI::App* mg = add_merge_command(app, merge);
  tgemm::cli::CompareOptions compare;
  CLI::App* cmp = add_compare_command(app, compare);
  tgemm::cli::RunOptions run;
  CLI::App* rn = add_run_command(app, run);

  CLI11_PARSE(app, argc, argv);
  try {
    if (b->parsed()) {
      // a8w8's inputs are 8-bit: an unset --dtype means fp8 there.
      if (bench.family != "a16w16" && bench.family != "batched" && bench.family != "sparse" && bench.family != "gmm" &&
          bench.family != "fmoe" && b->get_option("--dtype")->count() == 0) {
        bench.dtype = "fp8";
      }
      if (bench.family == "gmm") {
        if (b->get_option("--suite")->count() != 0) bench_gmm.suite = bench.suite;
        bench_gmm.dtype = bench.dtype;
        bench_gmm.out_dtype = bench.out_dtype;
        bench_gmm.bias = bench.bias;
        bench_gmm.filter = bench.filter;
        bench_gmm.max_problems = bench.max_problems;
        return tgemm::cli::run_bench_gmm(bench, bench_gmm);
      }
      if (bench.family == "fmoe") {
        if (b->get_option("--suite")->count() != 0) bench_fmoe.suite = bench.suite;
        if (b->get_option("-m")->count() != 0) {
          bench_fmoe.tokens = bench.ms;
          bench_fmoe.tokens_option = "-m";
        }
        bench_fmoe.dtype = bench.dtype;
        bench_fmoe.filter = bench.filter;
        bench_fmoe.max_problems = bench.max_problems;
        return tgemm::cli::run_bench_fmoe(bench, bench_fmoe);
      }
      if (bench.family == "sparse") {
        sparse.dtype = bench.dtype;
        sparse.suite = bench.suite;
        sparse.ms = bench.ms;
        sparse.filter = bench.filter;
        sparse.max_problems = bench.max_problems;
        return tgemm::cli::run_bench_sparse(bench, sparse);
      }
      // batched problems carry their own M, B and layouts: their own suite.
      const bool batched = bench.family == "batched" || bench.family == "batched_a8w8";
      if (batched && b->get_option("--suite")->count() == 0) {
        bench.suite = "bench/shapes/batched_shapes.csv";
      }
      return tgemm::cli::run_bench(bench);
    }
    if (s->parsed()) return tgemm::cli::run_show(show);
    if (l->parsed()) return tgemm::cli::run_lt_space(lts);
    if (rc->parsed()) return tgemm::run_reconfirm(reconfirm);
    if (ts->parsed()) return tgemm::cli::run_tune_sparse(tune_sparse);
    if (tg->parsed()) return tgemm::cli::run_tune_gmm(tune_gmm);
    if (tf->parsed()) return tgemm::cli::run_tune_fmoe(tune_fmoe);
    if (t->parsed()) {
      if (!tune.model_dir.empty() && !tune.worker) {
        TGEMM_CHECK(!tune.tuned_file.empty(), "tgemm tune", "-o/--tuned_file is required");
        tune.input_file = tgemm::cli::write_model_keys(tune.model_dir, tune.tp, tune.tuned_file + ".model-keys");
      }
      return tgemm::run_tune(tune);
    }
    if (sh->parsed()) return tgemm::cli::run_shapes(shapes);
    if (mg->parsed()) return tgemm::cli::run_merge(merge);
    if (cmp->parsed()) return tgemm::cli::run_compare(compare);
    if (rn->parsed()) return tgemm::cli::run_run(run);
  } catch (const tgemm::NoGpu& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const tgemm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    // A library exception (std::filesystem, nlohmann::json, allocation) is a failed command with
    // its message, not an abort.
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
