// The `tgemm` command: bench, show, tune, reconfirm, shapes, merge, compare, run, lt-space.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tgemm/error.h"
#include "tools/cli/bench.h"
#include "tools/cli/lt_space.h"
#include "tools/cli/run.h"
#include "tools/cli/shapes.h"
#include "tools/cli/show.h"
#include "tools/cli/tune.h"

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
  b->add_option("--epilogue", bench.epilogue, "activation gelu|gelu_tanh|relu: fused vs GEMM + separate pass");
  b->add_option("--json", bench.json, "results JSON path ('-' for none; default bench/results/<suite>-<device>-<date>.json)");
  b->add_flag("--candidates", bench.candidates, "also time every registered candidate and report the best");
  b->add_flag("!--no-check", bench.check, "skip the correctness check of tgemm's output against the reference");
  b->add_flag("--overhead", bench.overhead, "time host dispatch overhead vs cublasLtMatmul (100k calls)");
  b->add_flag("--layout-study", bench.layout_study,
              "per suite weight: linear read vs the skinny kernels' row-tiled read (what a weight layout could gain)");
  b->add_option("--overhead-calls", bench.overhead_calls, "calls per side in --overhead mode")->capture_default_str();
  b->add_option("--replays", bench.replays, "timed graph replays per measurement")->capture_default_str();
  b->add_option("--filter", bench.filter, "only problems whose model/layer contains this");
  b->add_option("--max-problems", bench.max_problems, "stop after this many problems (0: all)");
  b->add_option("--baseline-workspace", bench.baseline_workspace,
                "bytes of workspace given to the baseline's cublasLtMatmul (0: what its heuristic asks for; "
                "PyTorch passes its whole cuBLASLt workspace)")
      ->capture_default_str();
  b->add_option("--aa", bench.aa,
                "harness A/A check: off, baseline (both sides run the baseline) or dispatch (both run tgemm)")
      ->check(CLI::IsMember({"off", "baseline", "dispatch"}))
      ->capture_default_str();
  b->add_option("--data", bench.data,
                "operand data: unit (x, w ~ U(-1, 1): outputs of std ~sqrt(K / 9)) or fan_in (w scaled by 3 / sqrt(K): "
                "outputs of unit variance, as torch_bench's and a model's)")
      ->check(CLI::IsMember({"unit", "fan_in"}))
      ->capture_default_str();
  b->add_option("--timing", bench.timing,
                "harness diagnostic: private (a stream per graph), shared (one stream) or recapture (graphs anew each round)")
      ->check(CLI::IsMember({"private", "shared", "recapture"}))
      ->capture_default_str();
  b->add_option("--settle-rounds", bench.settle_rounds,
                "interleaved rounds run first and discarded, so timing starts at the sustained state")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  b->add_option("--launches", bench.launches, "calls captured in each timed graph (baseline and tgemm); 0: a graph of ~6 ms of work, 2-20 calls")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  b->add_flag("--shuffle", bench.shuffle, "a random order of baseline and tgemm in each round instead of ABBA");
  b->add_option("--rounds", bench.rounds, "interleaved baseline/tgemm rounds per problem; 0: 10, more (up to 60) where a graph holds fewer calls")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();

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

  tgemm::cli::LtSpaceCliOptions lts;
  CLI::App* l = app.add_subcommand("lt-space", "size of cuBLASLt's configuration space for a problem");
  l->add_option("-m", lts.m, "M")->capture_default_str();
  l->add_option("-n", lts.n, "N")->capture_default_str();
  l->add_option("-k", lts.k, "K")->capture_default_str();
  l->add_flag("--bias", lts.bias, "with bias");
  l->add_option("--dtype", lts.dtype, "input dtype")->capture_default_str();
  l->add_flag("--launches", lts.launches,
              "run every configuration once and count the distinct launches (kernel, shape, arguments) among them");

  tgemm::cli::TuneOptions tune;
  CLI::App* t = app.add_subcommand("tune", "race every candidate of every backend per problem; write the tuned CSV");
  t->add_option("-i,--input_file", tune.input_file, "untuned CSV (M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle)");
  t->add_option("-o,--tuned_file", tune.tuned_file, "tuned CSV to write (resumed: tuned keys are skipped)");
  t->add_option("--libtype", tune.libtype, "backends to race: all or a comma list (cublaslt,skinny,...)")->capture_default_str();
  t->add_option("--errRatio", tune.err_ratio, "max fraction of elements outside the tuner tolerance")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  t->add_option("--mp", tune.mp, "worker processes, one per GPU (GPUs 0..mp-1)")->capture_default_str();
  t->add_option("--devices", tune.devices, "GPU ordinals of the workers (comma list; overrides --mp)");
  t->add_option("--batch", tune.batch, "write the tuned file after this many results")->capture_default_str();
  t->add_flag("--all", tune.all, "retune problems already in the tuned file");
  t->add_option("--profile_file", tune.profile_file, "append every candidate's timing and error here");
  t->add_option("--timeout", tune.timeout, "seconds per problem")->capture_default_str();
  t->add_option("--candidate_timeout", tune.candidate_timeout, "seconds without progress before a worker counts as hung")->capture_default_str();
  t->add_option("--warmup", tune.warmup, "graph replays before accurate timing")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  t->add_option("--iters", tune.iters, "timed graph replays of accurate timing")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  t->add_option("--confirm_placements", tune.confirm_placements,
                 "operand placements a winner must beat the default on (1: the race's only)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  t->add_option("--final_placements", tune.final_placements,
                 "operand placements the finalists are ranked over (paired with the default; 1: the race's only)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  t->add_option("--finalists", tune.finalists,
                 "candidates (besides the default) re-timed with the default in the finals")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  t->add_option("--finalists_mem", tune.finalists_mem,
                 "finalists of a problem that is not compute-bound (FLOPs/byte <= 128), when more than --finalists")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  t->add_option("--final_margin", tune.final_margin,
                 "finalists must be within this fraction of the fastest accurate time")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  t->add_option("--final_contenders", tune.final_contenders,
                 "candidates besides the default re-timed in the finals even beyond --final_margin (0: none)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  t->add_option("--refine_bases", tune.refine_bases,
                 "screened configurations each backend expands in the second stage (0: the backend's default, cuBLASLt 24)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  t->add_option("--final_rounds", tune.final_rounds, "interleaved rounds of the finals (over all placements)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  t->add_option("--confirm_tries", tune.confirm_tries,
                 "finalists confirmed against the default at most (the winner, then the next fastest)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  t->add_option("--confirm_rounds", tune.confirm_rounds,
                 "interleaved rounds a placement of the confirmation against the default (0: no confirmation)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  t->add_option("--confirm_margin", tune.confirm_margin,
                 "a row other than the default is kept only if the confirmation measures it faster by this fraction "
                 "(compute-bound problems: by the larger of this and --sustained_margin)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  t->add_option("--sustained_round_ms", tune.sustained_round_ms,
                 "GPU milliseconds per finalist and round in the finals of compute-bound problems")
      ->check(CLI::Range(1.0, 10000.0))
      ->capture_default_str();
  t->add_option("--sustained_margin", tune.sustained_margin,
                 "compute-bound problems: a winner must beat the default by this fraction in the finals and the "
                 "confirmation (other problems: in the confirmation only, by 0.01)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  t->add_option("--placement_tolerance", tune.placement_tolerance,
                 "the confirmation and the reconfirmation: a row loses a placement only below 1 - this ratio to the "
                 "default (0: below 1.0, the default rule)")
      ->check(CLI::Range(0.0, 0.49))
      ->capture_default_str();
  t->add_option("--min_rotation_sets", tune.min_rotation_sets,
                 "operand sets the race rotates over at least, even where one set exceeds 3 L2 sizes (1: as needed)")
      ->check(CLI::Range(1, 32))
      ->capture_default_str();
  t->add_option("--accurate_block", tune.accurate_block,
                 "time the accurate stage in blocks of this many candidates interleaved with the default, ranked on "
                 "the paired ratio to it (0: each candidate alone)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  t->add_option("--min_accurate", tune.min_accurate,
                 "screened candidates timed accurately at least (the screen's fastest first)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  t->add_option("--accurate_margin", tune.accurate_margin,
                 "and every candidate within this fraction of the screen's fastest")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  t->add_option("--order_band", tune.order_band,
                 "candidates other than the default within this fraction of the fastest tie and the first by name wins "
                 "(default: the 1% tie band, within which the default wins)")
      ->check(CLI::Range(0.0, 0.1));
  t->add_option("--graph_screen", tune.graph_screen_us,
                 "screen candidates whose first launch takes less than this many us by CUDA-graph replays (0: off)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  t->add_flag("--sustained_confirm_all,!--no-sustained_confirm_all", tune.sustained_confirm_all,
              "compute-bound problems: no finals; confirm the --confirm_tries fastest finalists against the default "
              "and keep the best (on by default since session 33)");
  t->add_flag("--check_all", tune.check_all,
              "check every accurately timed candidate against the reference (default: the default and the "
              "candidates that can still reach the finals or the confirmation; the rest are profiled unchecked)");
  t->add_flag("--short_slots,!--no-short_slots", tune.short_slots,
              "finals, confirmation and reconfirmation in ~6-30 ms slots with more rounds (on by default; the "
              "bench's A/A: long slots bias big problems by 2-5%)");
  t->add_flag("--dedupe_launches", tune.dedupe_launches,
              "race candidates that launch identical kernels with identical arguments once (the first in tie order)");
  t->add_flag("--confirm_best,!--no-confirm_best", tune.confirm_best,
              "confirm each of the top finalists on every placement and keep the best (slower; off by default)");
  t->add_flag("--confirm_near_default", tune.confirm_near_default,
              "when the finals keep the default, confirm the finalists they put at or under it (--confirm_tries of "
              "them) and keep one that passes (off by default)");
  t->add_flag("-v,--verbose", tune.verbose, "more output");
  t->add_flag("--loose", tune.loose, "accept winners that pass --errRatio but not the strict check");
  t->add_flag("--reconfirm,!--no-reconfirm", tune.reconfirm,
              "after the tune, time every non-default row against the default again in a fresh process; "
              "rows that do not pass revert to the default (tgemm reconfirm; on by default)");
  t->add_option("--reconfirm_margin", tune.reconfirm_margin,
                 "the reconfirmation's margin for every problem: a row or alternative is kept only where the fresh "
                 "process measures it faster than the default by this fraction in the median (0: revert only rows "
                 "not faster than the default in the median or slower on a placement)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  t->add_option("--reconfirm_rounds", tune.reconfirm_rounds,
                 "the reconfirmation's interleaved rounds a placement (default: the tune's --confirm_rounds)")
      ->check(CLI::Range(1, 64));
  t->add_option("--reconfirm_placements", tune.reconfirm_placements,
                 "the reconfirmation's operand placements")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  t->add_option("--reconfirm_tolerance", tune.reconfirm_tolerance,
                 "the reconfirmation: a row loses a placement only below 1 - this ratio to the default")
      ->check(CLI::Range(0.0, 0.49))
      ->capture_default_str();
  t->add_option("--reconfirm_alternatives", tune.reconfirm_alternatives,
                 "the reconfirmation also times the profile's next best candidates of each problem against the "
                 "default, up to this many with the row's own pick, and keeps the fastest that passes (default 3; "
                 "without --profile_file the profile goes to a temporary file; 0: the row alone)")
      ->check(CLI::Range(0, 16));
  t->add_flag("--worker", tune.worker, "internal: run as a worker")->group("");

  tgemm::cli::ReconfirmOptions reconfirm;
  CLI::App* rc = app.add_subcommand(
      "reconfirm", "time each non-default row of a tuned table against the default again; revert those that lose");
  rc->add_option("tuned_file", reconfirm.tuned_file, "tuned CSV (rewritten in place unless -o)")->required();
  rc->add_option("-o,--output", reconfirm.output, "write the result here instead");
  rc->add_option("--libtype", reconfirm.libtype, "the tune's --libtype (decides the race's default)")->capture_default_str();
  rc->add_option("--errRatio", reconfirm.err_ratio, "the default must pass this to replace a row")->capture_default_str();
  rc->add_option("--rounds", reconfirm.rounds, "interleaved rounds a placement")->capture_default_str();
  rc->add_option("--placements", reconfirm.placements, "operand placements (a row must not lose on any)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  rc->add_option("--margin", reconfirm.margin, "a row must beat the default by this fraction (median)")
      ->capture_default_str();
  rc->add_option("--sustained_margin", reconfirm.sustained_margin,
                 "compute-bound problems: by the larger of --margin and this (tgemm tune passes its own)")
      ->capture_default_str();
  rc->add_option("--placement_tolerance", reconfirm.placement_tolerance,
                 "a row loses a placement only below 1 - this ratio to the default (0: below 1.0)")
      ->capture_default_str();
  rc->add_option("--min_rotation_sets", reconfirm.min_rotation_sets, "operand sets rotated over at least")
      ->capture_default_str();
  rc->add_flag("--short_slots,!--no-short_slots", reconfirm.short_slots,
               "time in ~6 ms graphs with proportionally more rounds (on by default, as tgemm tune)");
  rc->add_option("--alternatives", reconfirm.alternatives,
                 "also time the tune's next best candidates of each problem (from --profile), up to this many with "
                 "the row's own pick, and keep the fastest that passes (0: the row alone)")
      ->capture_default_str();
  rc->add_option("--profile", reconfirm.profile_file, "the tune's --profile_file (for --alternatives)");
  rc->add_option("--choice_band", reconfirm.choice_band,
                 "--alternatives: of those that pass within this fraction of the fastest time, the first in tie order "
                 "(backend, then name)")
      ->capture_default_str();

  tgemm::cli::ShapesOptions shapes;
  CLI::App* sh = app.add_subcommand("shapes", "write the untuned CSV of a model (config.json) or a shape suite");
  sh->add_option("--model_dir", shapes.model_dir, "directory with the Hugging Face config.json (or the file)");
  sh->add_option("--suite", shapes.suite, "shape suite CSV (model,layer,N,K) instead of a model");
  sh->add_option("--tp", shapes.tp, "tensor-parallel degree")->capture_default_str();
  sh->add_option("--nsets", shapes.nsets, "token counts (M), comma list")->capture_default_str();
  sh->add_option("--batch_size", shapes.batch_size, "multiplies every token count")->capture_default_str();
  sh->add_flag("--lm_head", shapes.lm_head, "include the LM head (vocab_size x hidden)");
  sh->add_flag("--bias", shapes.bias, "problems with bias");
  sh->add_option("--dtype", shapes.dtype, "input dtype (default: the model's torch_dtype, else bf16)");
  sh->add_option("--outdtype", shapes.out_dtype, "output dtype (default: dtype)");
  sh->add_option("-o,--output", shapes.output, "untuned CSV to write")->capture_default_str();

  tgemm::cli::MergeOptions merge;
  CLI::App* mg = app.add_subcommand("merge", "merge tuned tables (duplicates keep the lowest us)");
  mg->add_option("inputs", merge.inputs, "tuned CSVs")->required();
  mg->add_option("-o,--output", merge.output, "merged table")->required();
  mg->add_flag("--later-wins", merge.later_wins,
               "a later file's row replaces an earlier file's whatever its us (as TGEMM_CONFIG_GEMM_BF16=a:b layers them)");

  tgemm::cli::CompareOptions compare;
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

  tgemm::cli::RunOptions run;
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

  CLI11_PARSE(app, argc, argv);
  try {
    if (b->parsed()) return tgemm::cli::run_bench(bench);
    if (s->parsed()) return tgemm::cli::run_show(show);
    if (l->parsed()) return tgemm::cli::run_lt_space(lts);
    if (rc->parsed()) return tgemm::cli::run_reconfirm(reconfirm);
    if (t->parsed()) return tgemm::cli::run_tune(tune);
    if (sh->parsed()) return tgemm::cli::run_shapes(shapes);
    if (mg->parsed()) return tgemm::cli::run_merge(merge);
    if (cmp->parsed()) return tgemm::cli::run_compare(compare);
    if (rn->parsed()) return tgemm::cli::run_run(run);
  } catch (const tgemm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
