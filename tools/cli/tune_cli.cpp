// The `tune` and `reconfirm` subcommands' options (tools/cli/tune_cli.h). `tgemm tune --help`
// lists the options a user sets first; the race's knobs follow in groups marked "Expert", one per
// stage of the race (tuner/options.h), each with its default and the reason for it.
#include "tools/cli/tune_cli.h"

namespace tgemm::cli {

namespace {

constexpr const char* kScreenGroup = "Expert: screen and accurate timing (the defaults suit Hopper tunes)";
constexpr const char* kFinalsGroup = "Expert: finals (the defaults suit Hopper tunes)";
constexpr const char* kConfirmGroup = "Expert: confirmation against the default (the defaults suit Hopper tunes)";
constexpr const char* kMGridGroup =
    "Expert: tuning over M (--m-grid; the defaults give 28 points to 16384, those where a key is compute-bound left "
    "out)";
constexpr const char* kReconfirmGroup = "Expert: reconfirmation in a fresh process (the defaults suit Hopper tunes)";

void add_user_options(CLI::App* t, TuneOptions& tune) {
  CLI::Option* input = t->add_option("-i,--input_file", tune.input_file,
                                     "untuned CSV (M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle[,epilogue][,scales]; "
                                     "float8_e4m3fn/int8 rows: a8w8, scales block: a8w8_blockscale)");
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
  t->add_option("--candidate_timeout", tune.candidate_timeout, "seconds without progress before a worker counts as hung")
      ->capture_default_str();
  t->add_flag("-v,--verbose", tune.verbose, "accepted and ignored: the tune always prints each problem's result");
  t->add_flag("--loose", tune.loose, "accept winners that pass --errRatio but not the strict check");
  t->add_flag("--reconfirm,!--no-reconfirm", tune.reconfirm,
              "after the tune, time every non-default row against the default again in a fresh process; "
              "rows that do not pass revert to the default (tgemm reconfirm; on by default)");
  CLI::Option* grid =
      t->add_flag("--m-grid", tune.m_grid,
                  "also race every (N, K, types) key of the input over the tuning grid up to --m-grid-max (1..8, 10, "
                  "12, 16, then steps of --m-grid-factor) and write rows that serve the M ranges where their winner "
                  "was measured to hold against the default; ranges end at the key's last memory-bound M (FLOPs/byte "
                  "<= 128), where a few timed M vouch for the M between them (see --m-grid-compute-bound); the "
                  "input's M values are still tuned as points");
  t->add_option("--model_dir", tune.model_dir,
                "with --m-grid, instead of -i: the (N, K) keys of this Hugging Face config.json (or its directory)")
      ->needs(grid)
      ->excludes(input)
      ->group(kMGridGroup);
  t->add_option("--tp", tune.tp, "tensor-parallel degree of --model_dir")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str()
      ->group(kMGridGroup);
  t->add_option("--m-grid-max", tune.m_grid_max, "the largest M of --m-grid")
      ->check(CLI::Range(std::int64_t{1}, kMGridLimit))
      ->capture_default_str()
      ->group(kMGridGroup);
  t->add_option("--m-grid-factor", tune.m_grid_factor,
                "the ratio between neighbouring --m-grid points above 16 (1.5: 28 points to 16384, 2: 21)")
      ->check(CLI::Range(kTuneGridFactorMin, kTuneGridFactorMax))
      ->capture_default_str()
      ->group(kMGridGroup);
  t->add_option("--m-grid-shrink-steps", tune.m_grid_shrink_steps,
                "measurements a failing range end may take to bisect toward its grid point")
      ->check(CLI::Range(0, 16))
      ->capture_default_str()
      ->group(kMGridGroup);
  t->add_option("--m-grid-race", tune.m_grid_race,
                "how grid points no input problem asked for are raced: preset (min_accurate 8, 6 finalists on one "
                "placement; compute-bound points expand 8 cuBLASLt bases and race identical launches once) or tune "
                "(the tune's own race options)")
      ->check(CLI::IsMember({"preset", "tune"}))
      ->capture_default_str()
      ->group(kMGridGroup);
  t->add_option("--m-grid-compute-bound", tune.m_grid_compute_bound,
                "grid points where the key is compute-bound (FLOPs/byte > 128; from M = 184 on the suite's keys): "
                "skip (not raced) or exact (raced, each winner an exact-M row). Never a range there: cuBLASLt's time "
                "steps with its tile and wave count and its heuristic changes algorithm from one M to the next, so "
                "an H200 grid tune's ranges read 0.75-0.95x of the default at M between their timed ones (dsv3 q_b "
                "24576x1536 at M = 1024: 0.749x inside a range timed at 1.001x and 1.038x at its ends); none lost at "
                "a memory-bound M")
      ->check(CLI::IsMember({"skip", "exact"}))
      ->needs(grid)
      ->capture_default_str()
      ->group(kMGridGroup);
  t->add_flag("--m-grid-plan", tune.m_grid_plan,
              "instead of racing: count the candidates each grid point still to race would screen (the workers "
              "enumerate them without timing) and print them per key and point; races nothing, adds no row")
      ->needs(grid)
      ->group(kMGridGroup);
  t->add_flag("--worker", tune.worker, "run as a worker (tgemm tune starts these itself)")->group("");
}

void add_screen_options(CLI::App* t, TuneOptions& tune) {
  t->add_option("--graph_screen", tune.graph_screen_us,
                "screen candidates whose first launch takes less than this many us by CUDA-graph replays: launched "
                "one by one, kernels of ~10 us are timed by the host's launch cost (0: off)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str()
      ->group(kScreenGroup);
  t->add_option("--refine_bases", tune.refine_bases,
                "screened configurations each backend expands in its refinement (0: the backend's default, cuBLASLt 24)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str()
      ->group(kScreenGroup);
  t->add_flag("--dedupe_launches", tune.dedupe_launches,
              "race candidates that launch identical kernels with identical arguments once (the first in tie order): "
              "fewer to screen, distinct finalists")
      ->group(kScreenGroup);
  t->add_option("--min_accurate", tune.min_accurate,
                "screened candidates timed accurately at least (the screen's fastest first): the screen's order of "
                "near-ties is noise")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str()
      ->group(kScreenGroup);
  t->add_option("--accurate_margin", tune.accurate_margin,
                "and every candidate within this fraction of the screen's fastest")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str()
      ->group(kScreenGroup);
  t->add_option("--accurate_block", tune.accurate_block,
                "time the accurate stage in blocks of this many candidates interleaved with the default, ranked on "
                "the paired ratio to it, which cancels the GPU's clock drift (0: each candidate alone)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str()
      ->group(kScreenGroup);
  t->add_option("--warmup", tune.warmup, "graph replays before accurate timing")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str()
      ->group(kScreenGroup);
  t->add_option("--iters", tune.iters, "timed graph replays of accurate timing at most (~40 ms of GPU time each)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str()
      ->group(kScreenGroup);
  t->add_flag("--check_all", tune.check_all,
              "check every accurately timed candidate against the reference (default: the default and the "
              "candidates that can still reach the finals or the confirmation; the rest are profiled unchecked, "
              "the picks are the same)")
      ->group(kScreenGroup);
  t->add_option("--min_rotation_sets", tune.min_rotation_sets,
                "operand sets the race rotates over at least, even where one set exceeds 3 L2 sizes, so a launch "
                "does not re-read what its predecessor left in L2 (1: as needed)")
      ->check(CLI::Range(1, 32))
      ->capture_default_str()
      ->group(kScreenGroup);
}

void add_finals_options(CLI::App* t, TuneOptions& tune) {
  t->add_option("--finalists", tune.finalists, "candidates (besides the default) re-timed with the default in the finals")
      ->check(CLI::Range(1, 64))
      ->capture_default_str()
      ->group(kFinalsGroup);
  t->add_option("--finalists_mem", tune.finalists_mem,
                "finalists of a problem that is not compute-bound (FLOPs/byte <= 128), when more than --finalists: "
                "on big memory-bound weights dozens of candidates lie within 3% of each other")
      ->check(CLI::Range(0, 64))
      ->capture_default_str()
      ->group(kFinalsGroup);
  t->add_option("--final_margin", tune.final_margin, "finalists must be within this fraction of the fastest accurate time")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str()
      ->group(kFinalsGroup);
  t->add_option("--final_contenders", tune.final_contenders,
                "candidates besides the default re-timed in the finals even beyond --final_margin, so one fast "
                "accurate time of the default does not decide a row (0: none)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str()
      ->group(kFinalsGroup);
  t->add_option("--final_rounds", tune.final_rounds, "interleaved rounds of the finals (over all placements)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str()
      ->group(kFinalsGroup);
  t->add_option("--final_placements", tune.final_placements,
                "operand placements the finalists are ranked over (paired with the default): some configurations "
                "are bimodal over placements (1: the race's only)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str()
      ->group(kFinalsGroup);
  t->add_option("--sustained_round_ms", tune.sustained_round_ms,
                "GPU milliseconds per finalist and round in the finals of compute-bound problems, timed in the "
                "sustained power state a deployment sees")
      ->check(CLI::Range(1.0, 10000.0))
      ->capture_default_str()
      ->group(kFinalsGroup);
  t->add_option("--order_band", tune.order_band,
                "candidates other than the default within this fraction of the fastest tie and the first by name "
                "wins (default: the 1% tie band, within which the default wins)")
      ->check(CLI::Range(0.0, 0.1))
      ->group(kFinalsGroup);
  t->add_flag("--short_slots,!--no-short_slots", tune.short_slots,
              "finals, confirmation and reconfirmation in ~6-30 ms slots with more rounds (on by default: the "
              "bench's A/A reads 1.000x with short slots, long slots bias big problems by 2-5%)")
      ->group(kFinalsGroup);
}

void add_confirm_options(CLI::App* t, TuneOptions& tune) {
  t->add_option("--confirm_rounds", tune.confirm_rounds,
                "interleaved rounds a placement of the confirmation against the default (0: no confirmation; the "
                "reconfirmation in a fresh process decides, this one orders the candidates)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str()
      ->group(kConfirmGroup);
  t->add_option("--confirm_placements", tune.confirm_placements,
                "operand placements a winner must beat the default on (1: the race's only)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str()
      ->group(kConfirmGroup);
  t->add_option("--confirm_tries", tune.confirm_tries,
                "finalists confirmed against the default at most (the winner, then the next fastest)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str()
      ->group(kConfirmGroup);
  t->add_option("--confirm_margin", tune.confirm_margin,
                "a row other than the default is kept only if the confirmation measures it faster by this fraction "
                "(compute-bound problems: by the larger of this and --sustained_margin)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str()
      ->group(kConfirmGroup);
  t->add_option("--sustained_margin", tune.sustained_margin,
                "compute-bound problems: a winner must beat the default by this fraction in the finals and the "
                "confirmation, their timings moving with the power state")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str()
      ->group(kConfirmGroup);
  t->add_option("--placement_tolerance", tune.placement_tolerance,
                "the confirmation: a row loses a placement only below 1 - this ratio to the default (0: below 1.0)")
      ->check(CLI::Range(0.0, 0.49))
      ->capture_default_str()
      ->group(kConfirmGroup);
  t->add_flag("--sustained_confirm_all,!--no-sustained_confirm_all", tune.sustained_confirm_all,
              "compute-bound problems: no finals; confirm the --confirm_tries fastest finalists against the default "
              "and keep the best: the confirmation's ratio repeats between tunes within ~1%, the finals' within ~3% "
              "(on by default)")
      ->group(kConfirmGroup);
  t->add_flag("--confirm_best,!--no-confirm_best", tune.confirm_best,
              "confirm each of the top finalists on every placement and keep the best (slower; off by default)")
      ->group(kConfirmGroup);
  t->add_flag("--confirm_near_default", tune.confirm_near_default,
              "when the finals keep the default, confirm the finalists they put at or under it (--confirm_tries of "
              "them) and keep one that passes (off by default)")
      ->group(kConfirmGroup);
}

void add_reconfirm_options(CLI::App* t, TuneOptions& tune) {
  t->add_option("--reconfirm_margin", tune.reconfirm_margin,
                "the reconfirmation's margin for every problem: a row or alternative is kept only where the fresh "
                "process measures it faster than the default by this fraction in the median; rows within a few "
                "percent of the default do not repeat between processes (0: revert only rows not faster than the "
                "default in the median or slower on a placement)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str()
      ->group(kReconfirmGroup);
  t->add_option("--reconfirm_rounds", tune.reconfirm_rounds,
                "the reconfirmation's interleaved rounds a placement (default: the tune's --confirm_rounds)")
      ->check(CLI::Range(1, 64))
      ->group(kReconfirmGroup);
  t->add_option("--reconfirm_placements", tune.reconfirm_placements, "the reconfirmation's operand placements")
      ->check(CLI::Range(1, 16))
      ->capture_default_str()
      ->group(kReconfirmGroup);
  t->add_option("--reconfirm_tolerance", tune.reconfirm_tolerance,
                "the reconfirmation: a row loses a placement only below 1 - this ratio to the default")
      ->check(CLI::Range(0.0, 0.49))
      ->capture_default_str()
      ->group(kReconfirmGroup);
  t->add_option("--reconfirm_alternatives", tune.reconfirm_alternatives,
                "the reconfirmation also times the profile's next best candidates of each problem against the "
                "default, up to this many with the row's own pick, and keeps the fastest that passes (default 3; "
                "without --profile_file the profile goes to a temporary file; 0: the row alone)")
      ->check(CLI::Range(0, 16))
      ->group(kReconfirmGroup);
}

}  // namespace

CLI::App* add_tune_command(CLI::App& app, TuneOptions& tune) {
  CLI::App* t = app.add_subcommand("tune", "race every candidate of every backend per problem; write the tuned CSV");
  add_user_options(t, tune);
  add_screen_options(t, tune);
  add_finals_options(t, tune);
  add_confirm_options(t, tune);
  add_reconfirm_options(t, tune);
  return t;
}

CLI::App* add_reconfirm_command(CLI::App& app, ReconfirmOptions& reconfirm) {
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
  return rc;
}

}  // namespace tgemm::cli
