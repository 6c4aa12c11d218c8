// `tgemm reconfirm`: a tuned row's solution timed once more against the race's default, in this
// process (a fresh one, not the tune's), by the race's confirmation rule: ConfirmOptions::rounds
// interleaved rounds on ConfirmOptions::placements placements; kept when it loses on no placement
// and its median ratio beats the default by the confirmation margin (the larger sustained margin
// for compute-bound problems). Between-process shifts of a few percent decide most rows two tunes
// disagree on; a row kept by both processes has passed two. A row that is the default is kept
// without timing.
#pragma once

#include <string>
#include <vector>

#include "core/problem.h"
#include "core/solution.h"
#include "tuner/options.h"
#include "tuner/timing.h"

namespace tgemm {

struct Reconfirmation {
  std::string default_name;
  SolutionPtr default_solution;  // null when the row is the default
  PairTiming timing;             // a = the default, b = the row: ratio > 1 when the row is faster
  double margin = 0;
  bool kept = true;
  // When not kept: the default checked against the fp32 reference (as the race checks).
  double default_err_ratio = -1;
  bool default_strict_ok = false;
};

Reconfirmation reconfirm_row(const GemmProblem& p, const Solution& row, const RaceOptions& options);

// Several solutions of one problem (`tgemm reconfirm --alternatives`), each judged as reconfirm_row
// judges one, against a default the caller found once (race_default_solution), on one set of
// placements made once; the default is checked once, if any row lost.
std::vector<Reconfirmation> reconfirm_rows(const GemmProblem& p, const std::vector<const Solution*>& rows,
                                           const RaceOptions& options, SolutionPtr default_solution);

}  // namespace tgemm
