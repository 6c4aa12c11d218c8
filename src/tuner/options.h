// The tuner's options, one struct per stage of a race (tuner/race.h): the screen, the accurate
// timing, the finals and the confirmation, with the operand data and the selection (tuner/select.h)
// beside them. Host-only, so the host tests check their validation and defaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/problem.h"
#include "tuner/select.h"

namespace tgemm {

// Operand sets of a race: inputs rotated so that a timed launch does not find its operands in L2.
struct DataOptions {
  double rotation_l2_factor = 3.0;  // inputs rotated over > this many L2 sizes
  // At least this many operand sets (memory budget permitting), even where one set exceeds
  // rotation_l2_factor L2 sizes: with one set a launch re-reads the weight its predecessor left
  // partly in L2 (up to an L2's worth). 1: as many as the L2 factor needs.
  int min_rotation_sets = 1;
  std::size_t memory_budget = 8ull << 30;  // device bytes for operand sets and placements
};

// The screen: every candidate timed briefly, then each backend refines around its leaders.
struct ScreenOptions {
  int iters = 3;  // timed launches per candidate
  // > 0: a candidate whose first launch took less than this many microseconds is screened by
  // CUDA-graph replays (`iters` timed replays of a graph of ~100 us of its launches) instead of
  // back-to-back launches. Kernels of ~10 us are shorter than cuBLASLt's host cost per launch, so
  // launched one by one they are timed by the host (the same configuration read 11.3 and 14.8 us
  // in two screens, 8 us accurately), and the screen's leaders decide which configurations the
  // refinement adds and which are timed accurately. 0: off.
  double graph_us = 0;
  // Screened configurations each backend expands in its refinement (Backend::refine); 0: the
  // backend's own default (cuBLASLt: 24 bases). Rows two tunes disagree on were often variants of
  // a base the other tune screened 25th or later.
  std::size_t refine_bases = 0;
  // Candidates that launch exactly the same work (runtime/launch_fingerprint.h: kernels, shapes,
  // attributes and argument bytes) are raced once, by the first in tie order; the others are
  // reported with same_as. Fewer candidates to screen, and finalists that are distinct kernels.
  bool dedupe_launches = false;
};

// The accurate stage: CUDA-graph timing of the screen's leaders and their correctness checks.
struct AccurateOptions {
  int warmup = 3;              // graph replays before timing
  int iters = 10;              // timed graph replays at most
  int launches_per_graph = 10; // at most (also the finals' cap)
  // > 0: the default is timed alone, then the other candidates in blocks of this many, each block
  // interleaved with the default over 3 rounds, and a candidate is ranked on the default's time
  // times its median ratio to the default in the same round: a compute-bound GPU's sustained power
  // state moves 20-60% of lone accurate times >15% above the candidate's screen time, which the
  // paired ratio cancels. 0: each candidate alone, one after another.
  int block = 0;
  // Check every accurately timed candidate against the reference (the profile then has an
  // err_ratio for each). Off: the default is checked, and the others in order of their accurate
  // time until every candidate that can still reach the finals or the confirmation has been
  // checked; the rest keep err_ratio -1 ("not checked") and cannot win. The checks were about a
  // third of a whole tune's accurate stage, for candidates that mostly never reach the finals; the
  // picks are the same either way.
  bool check_all = false;
};

// The finals: the passing candidates near the fastest re-timed in interleaved rounds with the
// default.
struct FinalsOptions {
  double margin = 0.03;             // candidates this close to the fastest are re-timed
  std::size_t max_finalists = 6;    // fastest ones re-timed (plus the default)
  // Problems that are not compute-bound (FLOPs per byte <= 128: the decode and small-M weights):
  // at most this many finalists instead, when larger than max_finalists; 0: max_finalists. On the
  // big memory-bound weights 40-76 candidates lie within 3% of the fastest accurate time, so six
  // finalists are a draw; seven finalists cost ~0.15 s a problem.
  std::size_t memory_bound_finalists = 0;
  // At least this many candidates besides the default are re-timed, even beyond `margin`: a
  // default whose accurate time leads by more than the margin meets its nearest rivals in the
  // finals instead of being kept on one timing (tuner/select.h, select_finalists).
  std::size_t contenders = 2;
  int rounds = 4;  // interleaved rounds (with the default)
  // > 1: the finals are spread over this many placements of the operands (the race's, then the
  // confirmation's fresh allocations behind pads), ceil(rounds / placements) rounds on each, and a
  // finalist is ranked on its paired ratio to the default over all of them: bimodal
  // configurations look fast or slow by chance on any one placement. 1: the race's only.
  int placements = 1;
  // Compute-bound problems (FLOPs per byte above ~128): the finals run in the GPU's sustained
  // power state (a warm-up of sustained_warmup_ms with the default first, ~sustained_round_ms per
  // candidate and round).
  double sustained_warmup_ms = 500.0;
  double sustained_round_ms = 100.0;
};

// The confirmation: a winner other than the default is timed against the default once more, the
// way `tgemm bench` compares them (two graphs interleaved over `rounds` rounds), on `placements`
// placements of the operands (fresh allocations behind pads; as many as the memory budget holds),
// and is kept only if it beats the default by `margin` (compute-bound problems: by the larger
// RaceOptions::sustained_default_margin) and loses on no placement; if it fails, the next fastest
// finalists are tried, `tries` candidates in all. 0 rounds: off.
struct ConfirmOptions {
  int rounds = 6;
  double margin = 0.01;
  // A placement loses only if the candidate's paired ratio there is below 1 - placement_tolerance
  // (bimodal configurations read 3-15% slower on one placement in five). 0: below 1.0.
  double placement_tolerance = 0.0;
  int placements = 4;
  int tries = 3;
  // Confirm all `tries` candidates and keep the one with the best median ratio (near-ties by the
  // fixed tie order) instead of the first that passes: more confirmation time.
  bool best = false;
  // Also when the finals' winner is the default: the fastest passing finalists the finals put at
  // or under the default are confirmed against it (`tries` of them) and one that passes replaces
  // it. A finalist within 1% of the default in the finals can be several percent faster in a
  // confirmation.
  bool near_default = false;
  // Compute-bound problems: no finals; the finalists (select_finalists on the accurate times, the
  // default aside), the `tries` fastest of them by accurate time, are confirmed against the
  // default instead and the best median ratio wins, near-ties by the fixed tie order. The
  // confirmation's paired ratio repeats between tunes within about +-0.8%, the finals' within
  // about +-3%.
  bool sustained_all = false;
};

struct RaceOptions {
  SelectOptions select;
  DataOptions data;
  ScreenOptions screen;
  AccurateOptions accurate;
  FinalsOptions finals;
  ConfirmOptions confirm;
  std::vector<std::string> libtypes;  // backends to race; empty: all
  std::set<std::string> exclude;      // candidate names not to run (e.g. hung before)
  // Compute-bound problems: a winner must beat the default by this much in the finals and the
  // confirmation (their timings move with the GPU's power state more than the differences
  // between configurations).
  double sustained_default_margin = 0.02;
  // The confirmation's graphs hold ~6 ms of work (plan_slots, tuner/select.h) instead of ~20 ms,
  // with proportionally more rounds, and the finals' slots (replays of one candidate in a round)
  // are cut to ~25 ms with proportionally more rounds: the same timed work in shorter slots.
  // `tgemm bench`'s A/A on ~2.7 ms problems measured 0.95-0.98x with ~270 ms slots and 1.000x with
  // ~27 ms slots. Off in a bare RaceOptions (the tests' races); `tgemm tune`, `reconfirm` and
  // `compare` turn it on (tune_race_defaults).
  bool short_slots = false;
  // Called before each candidate runs (screen, accurate, check) so a watchdog knows what hung.
  std::function<void(const std::string& phase, const std::string& candidate)> on_candidate;
};

// Throws tgemm::Error naming the field, what it must be and its value when an option is out of
// range (counts below 1, negative or NaN margins and times, fractions outside [0, 1)); every
// race_problem call checks its options first.
void validate_race_options(const RaceOptions& options);

// Compute-bound problems (FLOPs per byte above 128) run their finals in the sustained power state
// and need the larger default margin.
bool is_compute_bound(const GemmProblem& p);

// The largest M in [1, up_to] at which p's (N, K, types) is not compute-bound (p.m is ignored):
// FLOPs per byte, 2 / (a/N + a/M + out/K) for element sizes a and out, grow with M, so every M up
// to it is memory-bound and every M above it compute-bound. up_to when none in range is
// compute-bound, 0 when M = 1 already is. `tgemm tune --m-grid` ends its ranges there
// (tuner/m_ranges.h).
std::int64_t last_memory_bound_m(GemmProblem p, std::int64_t up_to);

// The most finalists (besides the default) p's race takes: FinalsOptions::memory_bound_finalists
// for a problem that is not compute-bound when that is larger, else max_finalists.
std::size_t finalists_for(const GemmProblem& p, const FinalsOptions& options);

// What `tgemm tune` races with by default, on top of a bare RaceOptions: two whole-suite tunes
// with these agree on ~95% of rows on one card, a 112-problem tune takes ~8 minutes on an H100.
// The accurate stage runs in blocks paired with the default, compute-bound problems skip the
// finals and confirm their three fastest finalists, and the in-tune confirmation is short (one
// placement, two rounds): it orders the candidates, and the reconfirmation in a fresh process
// decides (kReconfirm*).
RaceOptions tune_race_defaults();

// The race of an `tgemm tune --m-grid` grid point that no input problem asked for (the tune's
// --m-grid-race preset, its default): a key's grid is 28 races where the input asks for a few, and
// the range pass times each winner against the default across its range again, so a grid point's
// race trades the repeatability the tune's defaults were chosen for (two suite tunes agreeing on
// 95.5% of rows) for time. Each knob is a field of RaceOptions the worker sets for that point:
//  - min_accurate 8 (the tune's 48): the accurate stage was about a third of a race; a tune of
//    2 decode keys x 13 points to M = 256 with 8 benched 1.083x over cuBLASLt's default on the grid
//    to 256 (64 problems, min 0.998x).
//  - memory_bound_finalists 0 (the tune's 16): memory-bound points take max_finalists (6)
//    finalists, as that tune did (its --finalists_mem 4 is below 6, so 6 counted).
//  - final_placements 1 (the tune's 4): that tune's setting; a bimodal configuration's lucky
//    placement is caught by the reconfirmation's 2 placements and the range pass's paired timing.
//  - compute_bound_refine_bases 8 (cuBLASLt's 24): on a compute-bound point (FLOPs per byte above
//    128) every screened candidate costs a launch, at M = 16384 0.17-11 ms on the suite's shapes
//    by the ~790 TFLOP/s floor, and the expansions of a base (custom options, the CTA swizzle,
//    split-K only where 128x128 tiles fill under two waves) matter on the memory-bound shapes,
//    which keep all 24. The heuristic's 8 bases are expanded whatever this says. Its effect on
//    the rows is to be measured.
//  - compute_bound_dedupe: candidates that launch identical work are raced once on compute-bound
//    points (13-17% of cuBLASLt's configurations are duplicates, mostly cluster ids a non-cluster
//    algorithm ignores); a capture costs no launch, a screened duplicate a launch of milliseconds.
struct GridRacePreset {
  std::size_t min_accurate = 8;
  std::size_t memory_bound_finalists = 0;
  int final_placements = 1;
  std::size_t compute_bound_refine_bases = 8;
  bool compute_bound_dedupe = true;
};

// `o` with `preset` applied for p (its compute-bound fields only where p is compute-bound).
RaceOptions grid_race_options(RaceOptions o, const GemmProblem& p, const GridRacePreset& preset = {});

// The reconfirmation's rule by default (`tgemm tune`'s reconfirmation and `tgemm reconfirm`): a row,
// or one of the tune's next-best candidates from its profile, is kept only where a fresh process
// measures it at least 6% faster than the default in the median (median x (1 - margin) > 1) and
// no slower than 0.98x on each of two placements; otherwise the row becomes the default. Rows two
// tunes disagree on are mostly within a few percent of the default, where in-process rankings do
// not repeat (power-bound clocks, placement): with margin 0 two tunes agreed on 83% of rows, with
// 0.06 on 95.5%, and the tables still read 1.037x over the cuBLASLt default.
inline constexpr double kReconfirmMargin = 0.06;
inline constexpr int kReconfirmPlacements = 2;
inline constexpr double kReconfirmTolerance = 0.02;
inline constexpr int kReconfirmAlternatives = 3;

}  // namespace tgemm
