// The finals (tuner/stages.h): the passing candidates near the fastest re-timed in interleaved
// rounds (A B C, A B C, ...) so slow drifts of clock or temperature hit all of them alike, each
// ranked on its paired ratio to the default. This is what makes two tunes pick the same row.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "runtime/timing.h"
#include "tuner/stages.h"

namespace tgemm {

namespace {

// FinalsContext::short_slots: GPU time of one finalist's replays in a round.
constexpr double kShortSlotUs = 25000.0;
// GPU time per finalist and round of a problem that is not compute-bound.
constexpr double kRoundUs = 30000.0;
// Rounds at most when short slots scale them up.
constexpr int kMaxShortSlotRounds = 60;

// Graph size and replays of the finals' rounds for finalists of at most slowest_us, and the rounds.
TimingOptions finals_timing(double slowest_us, const FinalsOptions& o, const FinalsContext& c, int& rounds) {
  TimingOptions topt;
  topt.launches_per_graph = std::clamp(static_cast<int>(std::ceil(2000.0 / slowest_us)), 2, c.launches_cap);
  // Compute-bound problems get longer rounds after a warm-up, in the sustained power state a
  // deployment sees; rounds follow each other without pauses.
  const double round_us = c.sustained ? o.sustained_round_ms * 1000.0 : kRoundUs;
  topt.replays = std::clamp(static_cast<int>(std::ceil(round_us / (slowest_us * topt.launches_per_graph))), 3,
                            c.sustained ? 40 : 10);
  topt.warmup_replays = 1;
  rounds = o.rounds;
  if (c.short_slots && topt.replays > 3) {
    // A candidate's slot in a round cut to ~kShortSlotUs, the rounds scaled so each finalist's
    // timed work stays the same.
    const int long_replays = topt.replays;
    topt.replays =
        std::clamp(static_cast<int>(std::ceil(kShortSlotUs / (slowest_us * topt.launches_per_graph))), 3, long_replays);
    rounds = std::min(kMaxShortSlotRounds, (o.rounds * long_replays + topt.replays - 1) / topt.replays);
  }
  return topt;
}

// Compute-bound problems: the default runs for sustained_warmup_ms first.
void sustained_warmup(RaceState& s, const std::vector<std::size_t>& finalists, const FinalsOptions& o) {
  for (std::size_t idx : finalists) {
    if (!s.result.candidates[idx].is_default) continue;
    const Solution* def = s.solutions[idx].get();
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
           o.sustained_warmup_ms) {
      for (int i = 0; i < 8; ++i) {
        def->run(s.p, s.data.sets[static_cast<std::size_t>(i) % s.data.sets.size()].args, s.ws,
                 reinterpret_cast<Stream>(s.stream));
      }
      check_context(s.result.candidates[idx].name);
    }
  }
}

// The finalists timed over the placements: per_round[f] is finalist f's median in each round (the
// placements' rounds one after another), median_us[f] its median. Returns the placements used.
int time_finalists(RaceState& s, const std::vector<std::size_t>& finalists, const FinalsOptions& o,
                   const TimingOptions& topt, int final_rounds, std::vector<std::vector<double>>& per_round,
                   std::vector<double>& median_us) {
  int nplace = 1;
  if (o.placements > 1) {
    s.make_extra();
    nplace = std::min(o.placements, 1 + s.extra_count());
  }
  const int rounds_each = nplace > 1 ? std::max(1, (final_rounds + nplace - 1) / nplace) : final_rounds;
  per_round.assign(finalists.size(), {});
  median_us.assign(finalists.size(), 0.0);
  for (int j = 0; j < nplace; ++j) {
    // Within a call the order reverses on odd rounds; with an odd number of rounds per placement
    // it also reverses on odd placements, so no finalist always runs first.
    std::vector<std::size_t> order(finalists.size());
    for (std::size_t f = 0; f < order.size(); ++f) order[f] = f;
    if (j % 2 == 1 && rounds_each % 2 == 1) std::reverse(order.begin(), order.end());
    std::vector<std::function<void(int, Stream)>> launchers;
    for (std::size_t f : order) launchers.push_back(rotating_launch(s.p, s.placement(j), *s.solutions[finalists[f]], s.ws));
    std::vector<std::vector<double>> pr;
    std::vector<TimingStats> st = time_graphs_interleaved(launchers, topt, rounds_each, &pr);
    for (std::size_t q = 0; q < order.size(); ++q) {
      const std::size_t f = order[q];
      per_round[f].insert(per_round[f].end(), pr[q].begin(), pr[q].end());
      median_us[f] = st[q].median_us;
    }
  }
  if (nplace > 1) {
    for (std::size_t f = 0; f < finalists.size(); ++f) median_us[f] = median(per_round[f]);
  }
  return nplace;
}

// Ranked on the paired estimate against the default (the bench's and the confirmation's): a
// finalist's time is the default's median times the median over rounds (of every placement) of
// its ratio to the default in the same round, so drift between rounds does not reorder near-ties.
// The others' accurate times are on another scale: they may no longer win (beyond_finals).
void rank_finalists(RaceState& s, const std::vector<std::size_t>& finalists,
                    const std::vector<std::vector<double>>& per_round, const std::vector<double>& median_us) {
  std::size_t def_f = finalists.size();
  for (std::size_t f = 0; f < finalists.size(); ++f) {
    if (s.result.candidates[finalists[f]].is_default) def_f = f;
  }
  for (std::size_t f = 0; f < finalists.size(); ++f) {
    CandidateResult& fr = s.result.candidates[finalists[f]];
    double us = median_us[f];
    if (def_f < finalists.size() && f != def_f) {
      const double ratio = paired_ratio(per_round[f], per_round[def_f]);
      if (ratio > 0) us = median_us[def_f] * ratio;
      fr.final_ratio = ratio;
    } else if (f == def_f) {
      fr.final_ratio = 1.0;
    }
    fr.us = us;
    fr.stage = "final";
  }
  std::vector<bool> in_finals(s.result.candidates.size(), false);
  for (std::size_t idx : finalists) in_finals[idx] = true;
  for (std::size_t i = 0; i < s.result.candidates.size(); ++i) {
    if (!in_finals[i] && s.result.candidates[i].us > 0) s.result.candidates[i].beyond_finals = true;
  }
}

}  // namespace

std::vector<std::size_t> finals_stage(RaceState& s, const FinalsOptions& o, const FinalsContext& c) {
  std::vector<std::size_t> pool;
  const int first = select_winner(s.result.candidates, c.select);
  if (first < 0) return pool;
  const double best = s.result.candidates[static_cast<std::size_t>(first)].us;
  const std::vector<std::size_t> finalists =
      select_finalists(s.result.candidates, best, o.margin, c.max_finalists, o.contenders, c.select);
  if (c.confirm_all) {
    for (std::size_t idx : finalists) {
      if (!s.result.candidates[idx].is_default) pool.push_back(idx);
    }
    return pool;
  }
  if (finalists.size() <= 1) return pool;
  double slowest = 0;
  for (std::size_t idx : finalists) slowest = std::max(slowest, s.result.candidates[idx].us);
  s.notify("final", std::to_string(finalists.size()) + " finalists");
  int final_rounds = 0;
  const TimingOptions topt = finals_timing(slowest, o, c, final_rounds);
  if (c.sustained) sustained_warmup(s, finalists, o);
  try {
    std::vector<std::vector<double>> per_round;
    std::vector<double> median_us;
    s.result.final_placements = time_finalists(s, finalists, o, topt, final_rounds, per_round, median_us);
    rank_finalists(s, finalists, per_round, median_us);
  } catch (const Error& e) {
    if (is_sticky_error(e)) throw;
    // Keep the accurate stage's times: they were measured and checked.
  }
  return pool;
}

}  // namespace tgemm
