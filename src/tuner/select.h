// The tuner's decisions, kept free of CUDA so they are unit-tested with injected timings:
// which screened candidates get accurate timing, who enters the finals, and which measured
// candidate wins. Part of the tuner module (src/tuner/); host-only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tgemm {

struct CandidateResult {
  std::string name;        // full solution name (kernelName)
  std::string libtype;
  int solidx = 0;          // table columns of the solution
  int split_k = 0;
  int backend_rank = 0;    // registration order of its backend (fixed tie-break order)
  // The race's default (tuner/race.h, race_default_name: cuBLASLt's heuristic, or the staged
  // erf-GELU path where that is the dispatcher's default): first among ties.
  bool is_default = false;
  double screen_us = -1;   // fast screen; < 0: not measured (error)
  double us = -1;          // accurate timing; < 0: not measured
  double spread = 0;       // (p90 - p10) / median of the accurate timing
  double err_ratio = -1;   // fraction of elements outside the tuner tolerance; < 0: not checked
  bool strict_ok = false;  // every element within the library's test tolerance, none NaN/Inf
  std::string error;       // non-empty: the candidate failed (exception, launch error, hang)
  // Non-empty: this candidate enqueues exactly what the named one does (same kernels, launch
  // shapes and arguments: mark_same_launches), so it is not raced; that one stands for both.
  std::string same_as;
  // How far the race took this candidate, for the profile: "screen", "accurate" (timed and
  // checked), "final" (re-timed with the default in the finals) or "confirm" (timed against the
  // default on the confirmation's placements); empty when it never ran.
  std::string stage;
  double final_ratio = -1;    // finals: its paired ratio to the default (< 1: faster); -1 if none
  double confirm_ratio = -1;  // confirmation: the default's time / its time, median over placements
  // The accurate stage's median, kept when the finals or the confirmation overwrite `us` (the
  // profile's accurate_us), so the profile shows how far the two stages disagree on a finalist
  // (the reconfirmation's alternatives are ranked on it). -1: not timed.
  double accurate_us = -1;
  // The finals ran without it: its time is the accurate stage's, on another scale than the
  // finalists' (each the default's finals median x its paired ratio; the finals read ~5-10% above
  // the accurate stage at 128x5120x25600), so it may not win or be confirmed.
  bool beyond_finals = false;
};

struct SelectOptions {
  std::size_t min_accurate = 20;   // at least this many screened candidates get accurate timing
  double accurate_margin = 0.10;   // and all within this fraction of the screen leader
  double tie_band = 0.01;          // candidates within this fraction of the fastest tie
  // select_winner: the band of the fixed order among candidates other than the default (< 0: the
  // tie band). The default still wins within tie_band of the fastest; among the others, the first
  // in tie order within order_band of the fastest. A narrower band than the tie band keeps a
  // candidate 0.8-0.9% behind the fastest from winning on its name alone.
  double order_band = -1;
  // A winner other than the library default must beat it by more than this fraction, else the
  // default is kept (the racer raises it for compute-bound problems, whose timings move with the
  // GPU's power state more than the differences between configurations).
  double default_margin = 0.0;
  double max_err_ratio = 0.05;     // --errRatio
  bool require_strict = true;      // also require strict_ok
};

// Median of v (the mean of the two middle values for an even count); 0 for an empty v.
double median(std::vector<double> v);

// Paired estimate of how many times longer a takes than b, from interleaved rounds (a[r] and b[r]
// are the two medians of round r, timed back to back): the median over rounds of a[r] / b[r].
// Drift of the GPU's clocks between rounds (power state under sustained load) cancels in each
// round's ratio, where a ratio of medians pooled over all rounds keeps it as noise. Rounds with a
// non-positive time are skipped; 0 if none is left. Throws tgemm::Error on unequal lengths.
double paired_ratio(const std::vector<double>& a, const std::vector<double>& b);

// How to interleave two timed graphs of a call that takes about est_us: calls captured per graph
// and rounds. On an H100 (dense M = 8192 problems of ~2.7 ms), with 20 calls a graph (one graph's
// slot in a round ~270 ms) two graphs of the same kernel measured 0.95-0.98x of each other, the
// bias following the graph, not the round order (a power or clock controller period of about two
// rounds); with 2 calls a graph and 60 rounds (~27 ms slots) 1.000x in 8 of 8 runs. So a graph
// holds about replay_target_us of work: launches = round(replay_target_us /
// est_us) within [min_launches, max_launches], and rounds grow as launches shrink, keeping the
// timed work: rounds = ceil(base_rounds * max_launches / launches) within [base_rounds,
// max_rounds]. Throws tgemm::Error on a non-positive est_us or bounds out of order.
struct SlotPlan {
  int launches_per_graph = 20;
  int rounds = 10;
};
SlotPlan plan_slots(double est_us, int base_rounds = 10, double replay_target_us = 6000.0, int min_launches = 2,
                    int max_launches = 20, int max_rounds = 60);

// Indices (into `results`) of the candidates to time accurately: screen leaders, best first.
std::vector<std::size_t> select_for_accurate(const std::vector<CandidateResult>& results, const SelectOptions& o);

// Fixed order used inside the tie band: the library default first (a row is only worth writing
// when it beats the default by more than the band), then backend rank, then name. Two tunes
// that measure the same candidates within the band therefore pick the same one.
bool tie_order_less(const CandidateResult& a, const CandidateResult& b);

// Candidates whose launches are identical are one candidate. fingerprints[i] is candidate i's
// (runtime/launch_fingerprint.h; nullopt: unknown, never equal to another). Candidates from
// `begin` on are new: a new candidate whose fingerprint equals an earlier candidate's that
// stands for itself (no same_as, no error) gets same_as = that one's name; among new candidates
// of equal fingerprints, the first in tie order stands for the others. Candidates with an error
// are left alone. Returns how many were marked.
std::size_t mark_same_launches(std::vector<CandidateResult>& results,
                               const std::vector<std::optional<std::string>>& fingerprints, std::size_t begin = 0);

// A candidate that may win: no error, an accurate time, it passed the error checks (err_ratio
// within o.max_err_ratio, and strict_ok where o.require_strict), and it is not beyond_finals.
bool passes_checks(const CandidateResult& r, const SelectOptions& o);

// The confirmation's rule (the race's confirmation and `tgemm reconfirm`): a candidate timed
// against the default on several placements (paired ratios, default time / candidate time) is
// kept if the median ratio beats the default by `margin` and no placement's ratio is below
// 1 - placement_tolerance.
bool passes_confirmation(double median_ratio, double min_ratio, double margin, double placement_tolerance);

// A placement's paired ratio (default time / candidate time) that loses it the confirmation:
// below 1 - placement_tolerance. The confirmation stops at the first such placement.
bool loses_placement(double ratio, double placement_tolerance);

// The winner among candidates with an accurate time that pass the error checks; -1 if none.
// The default wins if it is within (1 + tie_band) of the fastest; otherwise the others within
// (1 + order_band) of the fastest tie (order_band < 0: tie_band) and are resolved by
// tie_order_less; then a winner that is not the default must be faster than (1 - default_margin)
// x the default.
int select_winner(const std::vector<CandidateResult>& results, const SelectOptions& o);

// Who is re-timed in the finals, fastest first by accurate time (`us`): the default when it
// passes the checks, every passing candidate within (1 + margin) of `best_us` up to
// max_finalists of them, and at least min_contenders passing candidates besides the default
// whatever their margin. The last rule means a default that leads the accurate stage by more than
// the margin still meets its nearest rivals in the finals: one fluke-fast accurate time of the
// default (8.4 us where another tune's finals gave it 10.6) must not decide a row without being
// re-timed. Fewer than two entries: there are no finals.
std::vector<std::size_t> select_finalists(const std::vector<CandidateResult>& results, double best_us,
                                          double margin, std::size_t max_finalists, std::size_t min_contenders,
                                          const SelectOptions& o);

}  // namespace tgemm
