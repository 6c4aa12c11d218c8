// `tgemm tune` and `tgemm reconfirm` as the tuner runs them (the CLI parses their options into
// these structs and calls run_tune / run_reconfirm). Host-only header.
//
// run_tune: AITER's gradlib flow, made sound. The parent process reads the untuned CSV, skips
// problems already tuned (resume), hands problems to one worker process per GPU, watches them (a
// hung or crashed candidate is excluded and its problem retried in a fresh worker), writes the
// tuned CSV atomically after each batch, shows progress, and exits non-zero if a problem failed.
// Workers (`tgemm tune --worker`) race candidates with tuner/race.h. Afterwards the tuned rows are
// reconfirmed in a fresh process (`tgemm reconfirm`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/m_grid.h"
#include "tgemm/error.h"
#include "tuner/options.h"

namespace tgemm {

// The race's options as `tgemm tune` runs them by default, so the command line cannot drift from
// them (tuner/options.h, tune_race_defaults).
inline const RaceOptions kRaceDefaults = tune_race_defaults();

struct TuneOptions {
  std::string input_file;
  std::string tuned_file;
  std::string libtype = "all";
  double err_ratio = kRaceDefaults.select.max_err_ratio;
  int mp = 1;
  int batch = 16;
  bool all = false;
  std::string profile_file;
  double timeout = 600;           // seconds per problem
  double candidate_timeout = 60;  // seconds without progress = hang
  // The race (RaceOptions, race_options_of); each is one option of `tgemm tune`.
  int warmup = kRaceDefaults.accurate.warmup;
  int iters = kRaceDefaults.accurate.iters;
  int confirm_placements = kRaceDefaults.confirm.placements;
  bool confirm_best = kRaceDefaults.confirm.best;
  bool confirm_near_default = kRaceDefaults.confirm.near_default;
  int final_placements = kRaceDefaults.finals.placements;
  int finalists = static_cast<int>(kRaceDefaults.finals.max_finalists);
  int finalists_mem = static_cast<int>(kRaceDefaults.finals.memory_bound_finalists);
  double final_margin = kRaceDefaults.finals.margin;
  int final_contenders = static_cast<int>(kRaceDefaults.finals.contenders);
  int refine_bases = static_cast<int>(kRaceDefaults.screen.refine_bases);
  int final_rounds = kRaceDefaults.finals.rounds;
  int accurate_block = kRaceDefaults.accurate.block;
  int confirm_tries = kRaceDefaults.confirm.tries;
  int confirm_rounds = kRaceDefaults.confirm.rounds;  // per placement; 0: no confirmation
  double confirm_margin = kRaceDefaults.confirm.margin;
  double placement_tolerance = kRaceDefaults.confirm.placement_tolerance;
  int min_rotation_sets = kRaceDefaults.data.min_rotation_sets;
  double sustained_round_ms = kRaceDefaults.finals.sustained_round_ms;
  double sustained_margin = kRaceDefaults.sustained_default_margin;
  bool sustained_confirm_all = kRaceDefaults.confirm.sustained_all;
  bool short_slots = kRaceDefaults.short_slots;
  double graph_screen_us = kRaceDefaults.screen.graph_us;
  int min_accurate = static_cast<int>(kRaceDefaults.select.min_accurate);
  double accurate_margin = kRaceDefaults.select.accurate_margin;
  double order_band = kRaceDefaults.select.order_band;  // < 0: the tie band
  bool dedupe_launches = kRaceDefaults.screen.dedupe_launches;
  bool check_all = kRaceDefaults.accurate.check_all;
  bool verbose = false;
  bool loose = false;   // accept candidates that fail the strict check
  bool worker = false;  // run as a worker (the parent starts these)
  // After the tune, run `tgemm reconfirm` on the tuned file in a fresh process (on the first
  // worker's GPU): rows that do not beat the default again there revert to it.
  bool reconfirm = true;
  // The reconfirmation's own rule: its margin for every problem, the compute-bound ones too; its
  // rounds a placement (0: --confirm_rounds); its placements; its placement tolerance. With the
  // alternatives the reconfirmation decides at its margin, and the tune's own confirmation only
  // orders the candidates.
  double reconfirm_margin = kReconfirmMargin;
  int reconfirm_rounds = 0;
  int reconfirm_placements = kReconfirmPlacements;
  double reconfirm_tolerance = kReconfirmTolerance;
  // `tgemm reconfirm --alternatives` (ReconfirmOptions): < 0, the default, is kReconfirmAlternatives
  // with the reconfirmation on and 0 with --no-reconfirm (reconfirm_alternatives()). Without
  // --profile_file the tune writes its profile to a temporary file for the reconfirmation and
  // removes it afterwards (a resumed tune's earlier rows are then reconfirmed alone).
  int reconfirm_alternatives = -1;
  std::string devices;  // comma-separated device ordinals (default 0..mp-1)
  // --m-grid: every (N, K, types) key of the input is also raced at each M of the tuning grid
  // (core/m_grid.h, tune_grid(m_grid_max, m_grid_factor)), and the grid's winners become rows with
  // M ranges, each end and gap midpoint timed against the default (tuner/m_ranges.h; an end that
  // fails bisects toward its grid point at most m_grid_shrink_steps times). The grid points' race
  // results go to <tuned_file>.mgrid-points and what the pass finished to
  // <tuned_file>.mgrid-state.json, so the same command resumes.
  bool m_grid = false;
  // Instead of -i (with --m-grid): the keys of a model's config.json at tensor-parallel degree tp,
  // written by the CLI to <tuned_file>.model-keys (tools/cli/shapes.h, write_model_keys).
  std::string model_dir;
  int tp = 1;
  std::int64_t m_grid_max = kMGridMax;
  double m_grid_factor = kTuneGridFactor;
  int m_grid_shrink_steps = 3;
  // How a grid point that no input problem asked for is raced: "preset", the grid preset
  // (tuner/options.h, GridRacePreset), or "tune", with the tune's own race options.
  std::string m_grid_race = "preset";
  // The grid points above a key's last memory-bound M (tuner/m_ranges.h: a range there is not
  // vouched for by a few timed M): "skip", not raced; "exact", raced and written as exact-M rows.
  // Either way no range reaches them; the input's own M values race as points whatever this says.
  std::string m_grid_compute_bound = "skip";
  // Instead of racing: the candidates each grid point still to race would screen (first stage and
  // refinement, counted by the workers without timing), per key and in all; no race, no row added.
  bool m_grid_plan = false;
};

// What a worker races with: the defaults of tune_race_defaults with the options of `o` on top.
RaceOptions race_options_of(const TuneOptions& o);

// The alternatives the reconfirmation of these options times (TuneOptions::reconfirm_alternatives).
int reconfirm_alternatives(const TuneOptions& options);

// The arguments (after the program name) of the processes `tgemm tune` spawns (tuner/spawn_args.cpp;
// host test test_host_cli_args): a worker (`tgemm tune --worker`, the race's options), and the
// `tgemm reconfirm` of the reconfirmation on the tuned file (the --reconfirm_* rule).
std::vector<std::string> worker_arguments(const TuneOptions& options);
std::vector<std::string> reconfirm_arguments(const TuneOptions& options);

// `tgemm reconfirm TABLE`: every row of this GPU's arch and SM count whose solution is not the
// race's default is timed against the default once more in this process, by the race's
// confirmation rule (tuner/reconfirm.h); a row that does not pass reverts to the default (checked
// against the fp32 reference first). The table is rewritten atomically.
struct ReconfirmOptions {
  std::string tuned_file;
  std::string output;           // default: tuned_file (in place)
  std::string libtype = "all";  // as the tune's --libtype: decides the race's default
  double err_ratio = kRaceDefaults.select.max_err_ratio;  // the default must pass this to replace a row
  // The defaults are the rule of `tgemm tune`'s own reconfirmation, so a table re-validated alone
  // is judged as the tune judged it.
  int rounds = kRaceDefaults.confirm.rounds;
  int placements = kReconfirmPlacements;
  double margin = kReconfirmMargin;
  // Compute-bound problems: a row must beat the default by the larger of margin and this
  // (RaceOptions::sustained_default_margin). `tgemm tune` passes its own.
  double sustained_margin = kReconfirmMargin;
  bool short_slots = kRaceDefaults.short_slots;
  double placement_tolerance = kReconfirmTolerance;
  int min_rotation_sets = kRaceDefaults.data.min_rotation_sets;
  // > 0: each row's own pick and up to this many candidates in all from the tune's profile
  // (tuner/alternatives.h), timed against the default here; the fastest that passes is kept
  // (select_winner: within choice_band of the fastest time, the first in tie order), else the
  // default. 0: the row alone.
  int alternatives = 0;
  std::string profile_file;  // the tune's --profile_file; required with alternatives
  double choice_band = 0.005;
};

// The exit status of the command: 0 when every problem (row) was tuned (reconfirmed), 1 when one
// failed, 128 + the signal when stopped by one. Throws NoGpu where no CUDA GPU is usable, after
// the options and the input files were checked.
int run_tune(const TuneOptions& options);
int run_reconfirm(const ReconfirmOptions& options);

// No CUDA GPU is usable: the message says which command needed one and why (the CLI exits 2).
class NoGpu : public Error {
 public:
  using Error::Error;
};

// Throws NoGpu naming `command` ("tune", "reconfirm") when no CUDA device is usable.
void require_gpu_for(const std::string& command);

}  // namespace tgemm
