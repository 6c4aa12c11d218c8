// How the tuner times candidates: the accurate stage's graph sizes, and two solutions timed against
// each other in interleaved rounds (the confirmation, `tgemm reconfirm`, `tgemm compare --measure`).
#pragma once

#include <vector>

#include "core/problem.h"
#include "core/solution.h"
#include "runtime/timing.h"
#include "tuner/options.h"

namespace tgemm {

struct RaceData;

struct PairTiming {
  double a_us = -1, b_us = -1;  // medians per call over all rounds (over placements: their median)
  double ratio = -1;            // a's time / b's, paired (tuner/select.h paired_ratio); median over placements
  double min_ratio = -1, max_ratio = -1;  // over placements (time_solutions_against)
  int placements = 1;
};

// The accurate stage's timing of one candidate whose screen read est_us: about 40 ms of GPU time
// (launch overhead matters only below ~50 us, so slow kernels get fewer launches), between 5 and
// o.iters replays of 2..o.launches_per_graph launches.
TimingOptions accurate_timing(double est_us, const AccurateOptions& o);

// Two solutions of p on placement `data` timed against each other the way `tgemm bench` compares
// two paths: two graphs of <= 20 launches (~20 ms of GPU time a replay, from est_us), 5 timed
// replays + 2 warm-up a round, `rounds` interleaved rounds; ratio = a's time / b's, the paired
// estimate. short_slots: RaceOptions::short_slots.
PairTiming time_pair(const GemmProblem& p, const RaceData& data, const Solution& a, const Solution& b,
                     const Workspace& ws, double est_us, int rounds, bool short_slots);

// Solutions a and b of p timed against each other on fresh rotated inputs, as the tuner's
// confirmation does; `tgemm compare --measure` uses it to judge two tunes' different rows in one
// run on one GPU. placements > 1: measured on that many placements of the operands (as many as
// options.data.memory_budget holds), medians reported, with the ratio's range.
PairTiming time_solution_pair(const GemmProblem& p, const Solution& a, const Solution& b, const RaceOptions& options,
                              int rounds, int placements = 1);
// The same for each of bs against a, on one set of placements made once (each pair's graphs sized
// by the slower of its two); in bs' order.
std::vector<PairTiming> time_solutions_against(const GemmProblem& p, const Solution& a,
                                               const std::vector<const Solution*>& bs, const RaceOptions& options,
                                               int rounds, int placements = 1);

}  // namespace tgemm
