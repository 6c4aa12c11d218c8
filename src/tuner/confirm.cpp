// The confirmation (tuner/stages.h): a winner is timed against the default under the bench's
// conditions. Finals of many candidates in long rounds measured compute-bound winners up to ~15%
// faster than `tgemm bench` then saw them, so a winner must also win this paired comparison. It
// runs on several placements of the operands (the race's and fresh allocations behind pads of
// other sizes): some cuBLASLt configurations are bimodal, 3-15% slower on one placement in five
// while the default is not. A candidate is kept only if it beats the default by the margin at the
// median and loses on no placement; else the next finalist is tried, else the default is kept.
#include <algorithm>

#include "tuner/stages.h"
#include "tuner/timing.h"

namespace tgemm {

namespace {

struct Confirmed {
  std::size_t idx;
  double ratio, min_ratio, def_us, win_us;
};

// Who may be confirmed, in order: the winner (unless it is the default: ConfirmOptions::near_default
// confirms only its rivals), then the other passing finalists at or under the default, fastest
// first; with confirm_all, the pool's passing candidates fastest first by accurate time. At most
// o.tries of them.
std::vector<std::size_t> confirm_tries(const RaceState& s, const ConfirmOptions& o, const ConfirmContext& c,
                                       std::size_t d) {
  const RaceResult& result = s.result;
  std::vector<std::size_t> tries, order;
  if (c.confirm_all) {
    for (std::size_t i : c.pool) {
      if (passes_checks(result.candidates[i], c.select)) order.push_back(i);
    }
  } else {
    if (result.winner != static_cast<int>(d)) tries.push_back(static_cast<std::size_t>(result.winner));
    for (std::size_t i = 0; i < result.candidates.size(); ++i) {
      const CandidateResult& r = result.candidates[i];
      if (i != d && static_cast<int>(i) != result.winner && passes_checks(r, c.select) &&
          r.us <= result.candidates[d].us) {
        order.push_back(i);
      }
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return result.candidates[a].us < result.candidates[b].us; });
  for (std::size_t i : order) {
    if (tries.size() >= static_cast<std::size_t>(std::max(1, o.tries))) break;
    tries.push_back(i);
  }
  return tries;
}

// Candidate w against the default d on the placements, stopping at the first placement it loses;
// the result's confirmation fields describe it afterwards.
bool confirm_one(RaceState& s, const ConfirmOptions& o, const ConfirmContext& c, std::size_t d, std::size_t w,
                 int placements) {
  RaceResult& result = s.result;
  s.notify("confirm", result.candidates[w].name);
  const double est = std::max(result.candidates[w].us, result.candidates[d].us);
  std::vector<double> ratios, def_us, win_us;
  bool lost = false;
  for (int j = 0; j < placements && !lost; ++j) {
    const PairTiming t =
        time_pair(s.p, s.placement(j), *s.solutions[d], *s.solutions[w], s.ws, est, o.rounds, c.short_slots);
    ratios.push_back(t.ratio);
    def_us.push_back(t.a_us);
    win_us.push_back(t.b_us);
    lost = loses_placement(t.ratio, o.placement_tolerance);
  }
  ++result.confirm_tried;
  result.confirm_ratio = median(ratios);
  result.candidates[w].stage = "confirm";
  result.candidates[w].confirm_ratio = result.confirm_ratio;
  result.confirm_min_ratio = *std::min_element(ratios.begin(), ratios.end());
  result.confirm_placements = static_cast<int>(ratios.size());
  result.confirm_default_us = median(def_us);
  result.confirm_winner_us = median(win_us);
  result.confirmed = passes_confirmation(result.confirm_ratio, result.confirm_min_ratio, c.margin, o.placement_tolerance);
  return result.confirmed;
}

// The first that passed; keeping the best, the best median ratio among those that passed, near-ties
// (within the tie band) resolved by the fixed tie order.
const Confirmed& pick_confirmed(const RaceState& s, const std::vector<Confirmed>& passed, bool keep_best,
                                double tie_band) {
  std::size_t k = 0;
  if (keep_best) {
    double best = 0;
    for (const Confirmed& c : passed) best = std::max(best, c.ratio);
    bool have = false;
    for (std::size_t i = 0; i < passed.size(); ++i) {
      if (passed[i].ratio * (1.0 + tie_band) < best) continue;
      if (!have || tie_order_less(s.result.candidates[passed[i].idx], s.result.candidates[passed[k].idx])) k = i;
      have = true;
    }
  }
  return passed[k];
}

}  // namespace

void confirm_stage(RaceState& s, const ConfirmOptions& o, const ConfirmContext& c) {
  RaceResult& result = s.result;
  const auto d = static_cast<std::size_t>(s.timed_default());
  const bool keep_best = o.best || c.confirm_all;
  const std::vector<std::size_t> tries = confirm_tries(s, o, c, d);
  result.winner = static_cast<int>(d);
  try {
    s.make_extra();
    const int placements = std::min(std::max(1, o.placements), 1 + s.extra_count());
    std::vector<Confirmed> passed;
    for (std::size_t w : tries) {
      if (!confirm_one(s, o, c, d, w, placements)) continue;
      passed.push_back({w, result.confirm_ratio, result.confirm_min_ratio, result.confirm_default_us,
                        result.confirm_winner_us});
      if (!keep_best) break;
    }
    if (passed.empty()) return;
    const Confirmed& k = pick_confirmed(s, passed, keep_best, c.select.tie_band);
    result.winner = static_cast<int>(k.idx);
    result.confirmed = true;
    result.confirm_ratio = k.ratio;
    result.confirm_min_ratio = k.min_ratio;
    result.confirm_default_us = k.def_us;
    result.confirm_winner_us = k.win_us;
    result.candidates[d].us = k.def_us;
    result.candidates[k.idx].us = k.win_us;
  } catch (const Error& e) {
    if (is_sticky_error(e)) throw;
    result.winner = static_cast<int>(d);  // unconfirmed: keep the default
    result.confirmed = false;
  }
}

}  // namespace tgemm
