// `tgemm tune --m-grid`'s range pass, host-only so the host tests drive it with injected ratios:
// the tuning grid's per-point winners of one (N, K, types) key turned into table rows with M ranges
// (core/table.h, M_lo/M_hi) that claim only M where the winner was measured to hold against the
// race's default.
//
// 1. plan_ranges: runs of consecutive grid points served by one solution (not the default) are
//    candidate ranges. A run may absorb a point another solution won where the race timed the
//    run's solution there within the tie band of that point's winner (tied_solutions): ties that
//    alternate between two kernels from one M to the next do not chop the key into one-point
//    ranges. Each gap between two neighbouring grid points x < y is split at its geometric
//    midpoint (gap_split): x's run claims (x, s], y's run [s + 1, y). The grid is geometric, so
//    each point claims the same ratio of M on either side; a default-won point claims its halves
//    for the default (no row), so a range reaches at most half a step into a gap toward a point it
//    did not serve. A claim stays inside the M interval where its solution can run at all
//    (RunnableM, probed by the worker that raced it), so nothing is verified where it cannot run,
//    and at or below the key's last memory-bound M (tuner/options.h, last_memory_bound_m): a few
//    timed M cannot vouch for the M between them where the GEMM is compute-bound (below).
// 2. Verification, in rounds: pending() names the M values not yet measured that bound the claim
//    (its ends beyond its outer grid points, and the midpoint of each gap between its grid
//    points); a worker times the winner against the default at each (paired, as the confirmation
//    does) and apply() takes the ratios default / winner. A ratio holds at >= 1 - tie band (the
//    race's tie band, tuner/select.h: within it the winner ties, beyond it the default is faster).
//    A failing end bisects toward the outer grid point (at most max_steps more measurements) and
//    the end becomes the farthest M that held; a failing midpoint splits the run there, the gap
//    between the two grid points going to the default.
// 3. verified_ranges, merge_ranges, and range_rows: the pieces that held, neighbours with the same
//    solution merged, cut around the key's exact-M rows (a range must not overlap one), each piece
//    written as one row at one of its won grid points (its timing) with M_lo, M_hi. Every M_lo and
//    M_hi is a grid point the solution won or tied, or an M where it was measured to hold. A piece
//    left with absorbed points only (split off by a failing midpoint or an exact row) gives them
//    back to their own winners, each at its exact M.
//
// Why ranges stop at the last memory-bound M: a fixed cuBLASLt algorithm's time over M is a step
// function of its tile and wave count where the GEMM is compute-bound, and cuBLASLt's default
// heuristic changes algorithm from one M to the next, so the default can be fast at an M between
// two measured ones where the winner is not. On an H200, a grid tune of the suite's 16 keys wrote
// 90 range rows, and `tgemm bench --m-grid` with them (672 problems) read 8 below 0.98x, every one
// inside a range at a compute-bound M (dsv3 q_b 24576x1536 at M = 1024: 0.749x inside [753, 1128],
// whose ends the range pass timed at 1.001x and 1.038x; llama3-8b qkv at 256: 0.799x), and none
// at a memory-bound M. Compute-bound grid points are therefore not raced for ranges (plan_key_grid);
// where the tune is asked to race them, their winners serve their exact M only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/table.h"

namespace tgemm {

// A grid point's race result: the winning solution's kernelName; is_default when the race's
// default won (or the reconfirmation reverted the row to it); tied: other solutions (never the
// default) the race timed at this point within the tie band of the winner (tied_solutions). A
// point above the key's last memory-bound M may name no solution (not raced): plan_ranges uses
// only its M.
struct GridWinner {
  std::int64_t m = 0;
  std::string solution;
  bool is_default = false;
  std::vector<std::string> tied = {};
};

// A candidate the race timed at a grid point, each time relative to the default's in the same
// stage (< 1: faster): its finals' paired ratio, the inverse of its confirmation's ratio default /
// it, its accurate time over the default's; -1 where it did not reach that stage. runs: the M
// interval around the point where its solution can run (RunnableM; lo 0: not probed).
struct RunnableM {
  std::int64_t lo = 0, hi = 0;
  bool known() const { return lo >= 1 && hi >= lo; }
};
struct PointTiming {
  std::string solution;
  double final_ratio = -1;
  double confirm_ratio = -1;  // default / it, as the race reports it
  double accurate_ratio = -1;
  RunnableM runs;
};

// Whether `c` ties `winner` at a point: its time within (1 + tie_band) of the winner's, compared on
// the most repeatable stage both reached (the confirmation's paired ratios, repeating between tunes
// within about +-0.8%; else the finals', +-3%; else the accurate times): times of two stages are on
// different scales (the finals read ~5-10% above the accurate stage at 128x5120x25600).
bool ties_with(const PointTiming& c, const PointTiming& winner, double tie_band);

// The solutions of `timings` (one grid point's) other than the winner and the default that tie the
// winner (ties_with); empty when the winner has no timing there.
std::vector<std::string> tied_solutions(const std::vector<PointTiming>& timings, const std::string& winner,
                                        const std::string& default_name, double tie_band);

// The M interval where each solution can run, from the intervals its points recorded (their hull;
// a solution without a probed interval has none: its claims are not narrowed).
std::map<std::string, RunnableM> runnable_intervals(const std::map<std::int64_t, std::vector<PointTiming>>& timings);

// The split of the gap between neighbouring grid points x < y: the largest M the lower point's
// winner claims. The geometric mean floor(sqrt(x * y)) within [x + 1, y - 1]; x when y = x + 1.
std::int64_t gap_split(std::int64_t x, std::int64_t y);

// One end of a claimed range being verified. good: the farthest M known to hold (starts at the
// run's outer grid point); target: the M to measure next (0: the end is settled at good); bad: the
// nearest M beyond good that failed (0: none yet).
struct EndSearch {
  std::int64_t good = 0;
  std::int64_t target = 0;
  std::int64_t bad = 0;
  int steps = 0;  // bisection measurements after the first failure
};

struct RangeCheck {
  std::string solution;
  std::vector<std::int64_t> grid;  // the run's grid points, increasing
  // Those another solution won and this one tied (tied_solutions), by M: the winner there.
  std::map<std::int64_t, std::string> absorbed;
  std::int64_t lo = 0, hi = 0;     // as claimed before verification
  EndSearch low, high;
  // The midpoint of each gap between grid[j] and grid[j + 1] (0: no M between them) and whether it
  // held: 0 not measured yet, 1 held, -1 failed.
  std::vector<std::int64_t> mids;
  std::vector<int> mid_state;
  int max_steps = 3;
};

// Candidate ranges of one key from its grid points' winners (any order; a repeated M is an error).
// max_steps: the bisection measurements an end may take after it failed. Each stretch of points
// not won by the default is cut into the fewest runs whose solution won or tied every point of the
// run and won at least one (the row's timing comes from a point it won); among cuts of as many
// runs, the one that serves the most points by their own winner; a run's solution is the one that
// won the most of its points, then the first by name. runnable: the M interval of each solution
// (runnable_intervals); a claim is cut to it, never inside the run's own grid points.
// memory_bound_to > 0: the key's last memory-bound M (last_memory_bound_m). A point above it feeds
// no run, whatever it names, and only bounds the gap split of the point below it, as a point the
// default won does; every claim is cut to end at or below it (its end verified like any other).
// 0: no such bound.
std::vector<RangeCheck> plan_ranges(std::vector<GridWinner> points, int max_steps = 3,
                                    const std::map<std::string, RunnableM>& runnable = {},
                                    std::int64_t memory_bound_to = 0);

// Which grid points of one key `tgemm tune --m-grid` races. Points at or below memory_bound_to
// (the key's last memory-bound M) feed its ranges; those above are compute-bound: left out, or with
// race_compute_bound raced for exact-M rows (`--m-grid-compute-bound exact`). raced(m): the point's
// race result is kept from an earlier run. Each list increasing; every grid point is in one.
struct KeyGridPlan {
  std::vector<std::int64_t> to_race;
  std::vector<std::int64_t> raced_before;
  std::vector<std::int64_t> left_out;  // compute-bound and not raced for this key's rows
};
KeyGridPlan plan_key_grid(const std::vector<std::int64_t>& grid, std::int64_t memory_bound_to, bool race_compute_bound,
                          const std::function<bool(std::int64_t)>& raced);

// A range row of `key` among `rows` serves an M above memory_bound_to: it was written before
// claims stopped at the last memory-bound M (or by hand), and the key's range pass runs again.
bool ranges_reach_above(const std::vector<TableRow>& rows, const TableKey& key, std::int64_t memory_bound_to);

// A measured ratio default / winner holds: finite, positive and >= 1 - tie_band.
bool ratio_holds(double ratio, double tie_band);

// The M values to measure next (increasing, distinct); empty when the check is settled.
std::vector<std::int64_t> pending(const RangeCheck& c);
bool settled(const RangeCheck& c);

// The ratios (default / winner) measured at pending(c); an M of pending(c) missing from `ratios`
// counts as failed (the solution could not run there). Ratios of other M are ignored.
void apply_ratios(RangeCheck& c, const std::map<std::int64_t, double>& ratios, double tie_band);

struct VerifiedRange {
  std::string solution;
  std::int64_t lo = 0, hi = 0;
  std::vector<std::int64_t> grid;  // grid points inside [lo, hi] the solution won
  // Grid points inside [lo, hi] another solution won and this one tied: M -> that winner.
  std::map<std::int64_t, std::string> absorbed = {};
};

// The pieces of a settled check: the run split at failing midpoints, the outer ends where they
// settled. A piece without a point the solution won becomes one range [M, M] per absorbed point,
// of the winner there. Throws tgemm::Error if the check is not settled.
std::vector<VerifiedRange> verified_ranges(const RangeCheck& c);

// Ranges sorted by lo; neighbours with the same solution whose ranges touch (hi + 1 == lo) merged.
std::vector<VerifiedRange> merge_ranges(std::vector<VerifiedRange> ranges);

// A range cut around the M values of exact rows: the pieces between them that still hold a grid
// point of the range; a piece without one has no timing row of this solution: its absorbed points
// go back to their own winners at their exact M, and the rest of it to the default.
std::vector<VerifiedRange> cut_around(const VerifiedRange& r, const std::set<std::int64_t>& exact_ms);

// The grid point a range's row is written at: the middle one of its grid points.
std::int64_t row_m(const VerifiedRange& r);

// The rows of a key's ranges: merged, cut around exact_ms, each the grid row of its row_m (from
// grid_rows, the side table's rows by M) with M_lo, M_hi set. A range whose row_m has no grid row
// is an error (tgemm::Error): the race result it was planned from must exist.
std::vector<TableRow> range_rows(const std::vector<VerifiedRange>& ranges,
                                 const std::map<std::int64_t, TableRow>& grid_rows,
                                 const std::set<std::int64_t>& exact_ms);

// What a `tgemm tune --m-grid` has finished, kept beside the tuned file (<tuned>.mgrid.json) so a
// stopped tune resumes: per key (TableKey::describe()), the race's default at each raced grid point
// (a point whose row names it needs no range; the reconfirmation reverts rows to it), the
// candidates each point's race timed that passed its checks (PointTiming: who ties whom, where
// each can run), the grid points whose race winners went through the reconfirmation, the grid
// whose range pass wrote its rows, and the compute-bound grid points whose race result was written
// to the tuned file as an exact-M row (--m-grid-compute-bound exact: written once a race, so the
// tuned file's own reconfirmation of the row is not overwritten on the next run).
struct MGridState {
  std::map<std::string, std::map<std::int64_t, std::string>> defaults;
  std::map<std::string, std::map<std::int64_t, std::vector<PointTiming>>> timings;
  std::map<std::string, std::set<std::int64_t>> reconfirmed;
  std::map<std::string, std::vector<std::int64_t>> ranges_written;
  std::map<std::string, std::set<std::int64_t>> exact_written;

  // The range pass of `key` over `grid` is still to run.
  bool ranges_pending(const std::string& key, const std::vector<std::int64_t>& grid) const;
  // A race result at grid point m of key, whose default is default_name: the point is raced, still
  // to be reconfirmed and written as an exact row, and, where it feeds the key's ranges (a
  // memory-bound point), the key's range
  // pass runs again (the point failed earlier, or --all). A compute-bound point raced for its exact
  // row leaves the ranges as written.
  void record_race(const std::string& key, std::int64_t m, const std::string& default_name,
                   std::vector<PointTiming> point_timings = {}, bool feeds_ranges = true);
  // m of key was raced: its default is recorded (a point in the points' file without one is raced
  // again).
  bool raced(const std::string& key, std::int64_t m) const;
  std::string to_json() const;
  // Throws tgemm::Error naming `where` on text that is not a state file.
  static MGridState from_json(const std::string& text, const std::string& where);
};

}  // namespace tgemm
