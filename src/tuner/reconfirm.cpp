#include "tuner/reconfirm.h"

#include <algorithm>

#include "core/check.h"
#include "core/platform.h"
#include "runtime/runtime.h"
#include "tuner/data.h"
#include "tuner/race.h"

namespace tgemm {

Reconfirmation reconfirm_row(const GemmProblem& p, const Solution& row, const RaceOptions& o) {
  if (row.name() == race_default_name(p, o.libtypes)) {
    Reconfirmation r;
    r.default_name = row.name();
    return r;
  }
  return reconfirm_rows(p, {&row}, o, race_default_solution(p, o)).front();
}

namespace {

// The default checked against the fp32 reference (as the race checks), recorded on every row that
// was not kept, for a revert.
void check_default_for_reverts(const GemmProblem& p, const RaceOptions& o, const Solution& def,
                               std::vector<Reconfirmation>& out) {
  const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
  const RaceData data = make_data(p, o.data, dev);
  DeviceBuffer ws_buf(std::max<std::size_t>(def.workspace_size(p), 256));
  CandidateResult c;
  c.name = def.name();
  check_solution(p, data, def, Workspace{ws_buf.data(), ws_buf.bytes()}, c);
  for (Reconfirmation& r : out) {
    if (r.default_solution != nullptr && !r.kept) {
      r.default_err_ratio = c.err_ratio;
      r.default_strict_ok = c.strict_ok;
    }
  }
}

}  // namespace

std::vector<Reconfirmation> reconfirm_rows(const GemmProblem& p, const std::vector<const Solution*>& rows,
                                           const RaceOptions& o, SolutionPtr default_solution) {
  TGEMM_CHECK(default_solution != nullptr, "reconfirm", "default_solution must not be null");
  std::vector<Reconfirmation> out(rows.size());
  std::vector<const Solution*> timed;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    TGEMM_CHECK(rows[i] != nullptr, "reconfirm", "a row's solution must not be null");
    out[i].default_name = default_solution->name();
    if (rows[i]->name() != out[i].default_name) timed.push_back(rows[i]);
  }
  if (timed.empty()) return out;  // every row the default: kept without timing
  // The race's confirmation rule (ConfirmOptions): not slower on any placement (beyond the
  // placement tolerance), faster than the default by the margin in the median.
  const double margin =
      std::max({o.confirm.margin, o.select.default_margin, is_compute_bound(p) ? o.sustained_default_margin : 0.0});
  const std::vector<PairTiming> timings = time_solutions_against(
      p, *default_solution, timed, o, std::max(1, o.confirm.rounds), std::max(1, o.confirm.placements));
  bool any_lost = false;
  for (std::size_t i = 0, t = 0; i < rows.size(); ++i) {
    Reconfirmation& r = out[i];
    if (rows[i]->name() == r.default_name) continue;
    r.default_solution = default_solution;
    r.margin = margin;
    r.timing = timings[t++];
    r.kept = passes_confirmation(r.timing.ratio, r.timing.min_ratio, r.margin, o.confirm.placement_tolerance);
    any_lost = any_lost || !r.kept;
  }
  if (any_lost) check_default_for_reverts(p, o, *default_solution, out);
  return out;
}

}  // namespace tgemm
