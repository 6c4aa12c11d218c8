// Racing every candidate of every enabled backend for one problem, in four stages (tuner/stages.h):
// a screen of all of them, accurate CUDA-graph timing of the leaders with a correctness check
// against the fp32 reference (NaN-poisoned outputs), finals of those near the fastest with the
// default, and a confirmation of the winner against the default; the selection is
// tuner/select.h's. `tgemm tune`'s workers run one race per problem.
#pragma once

#include <string>
#include <vector>

#include "core/problem.h"
#include "core/solution.h"
#include "tuner/options.h"
#include "tuner/select.h"

namespace tgemm {

// What the screen's lazy-loading guard remembers a candidate by: a solution's name stands for the
// kernels it launches, except the library's heuristic choice (solidx -1: cublaslt:heuristic, its
// PyTorch-default form, and the split rows over them), whose kernel cuBLASLt picks per problem:
// those are remembered per problem, else a split row over the heuristic screens at its first
// launch's 1.5-4.8 ms (loading that problem's kernel) instead of its 8-135 us.
std::string screen_load_key(const Solution& s, const GemmProblem& p);

struct RaceResult {
  std::vector<CandidateResult> candidates;
  int winner = -1;
  int enumerated = 0;  // candidates offered by the backends
  int screened = 0;
  int accurate = 0;
  // Accurate time of the race's default (race_default_name).
  double default_us = -1;
  // The confirmation of a winner against the default (ConfirmOptions): -1 when not run, else the
  // two medians and the paired ratio default / winner (tuner/select.h), which decides; confirmed
  // false when the default was kept. Over the placements: the medians and the median ratio of the
  // last candidate confirmed (the kept one when confirmed), its smallest ratio, how many
  // candidates were tried.
  double confirm_default_us = -1, confirm_winner_us = -1, confirm_ratio = -1, confirm_min_ratio = -1;
  int confirm_placements = 0, confirm_tried = 0;
  int final_placements = 0;  // placements the finals ran on (0: no finals, one finalist)
  int same_launches = 0;     // candidates not raced: they launch what another candidate launches
  // Candidates whose slow first screen launch was their first use in this process, launched once
  // more (the faster counts): kernels load on first use.
  int rescreened = 0;
  bool confirmed = false;
  double seconds = 0;
  // Wall seconds of each stage: the screen (both enumeration stages, with their launch captures),
  // the accurate timing with the correctness checks, the finals (with the sustained warm-up and
  // the extra placements' allocation when the finals make them), the confirmation.
  double screen_seconds = 0, accurate_seconds = 0, finals_seconds = 0, confirm_seconds = 0;
  // Parts of those stages, to show where a tune's time goes: the screen's CUDA-graph screening of
  // fast candidates (capture, instantiation and replays) and the accurate stage's checks.
  double screen_graph_seconds = 0, check_seconds = 0;
};

// p: the problem (device, dtypes, shapes; contiguous operands are allocated by the race).
RaceResult race_problem(const GemmProblem& p, const RaceOptions& options);

// The race's default for p, which a winner must beat: cuBLASLt's heuristic (what F.linear runs),
// or where the dispatcher's own default is the staged split path (erf-GELU) and split is among
// `libtypes` (empty: all), that path's name.
std::string race_default_name(const GemmProblem& p, const std::vector<std::string>& libtypes);

// The race's default (race_default_name) as a runnable solution; a tgemm::Error if no registered
// backend can run it for p.
SolutionPtr race_default_solution(const GemmProblem& p, const RaceOptions& options);

}  // namespace tgemm
