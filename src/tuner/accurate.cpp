// The accurate stage (tuner/stages.h): CUDA-graph timing of the screen's leaders and the default,
// alone or in blocks interleaved with the default, and their correctness checks.
#include <algorithm>
#include <chrono>

#include "runtime/timing.h"
#include "tuner/stages.h"
#include "tuner/timing.h"

namespace tgemm {

namespace {

using Clock = std::chrono::steady_clock;

// Rounds of a block interleaved with the default (AccurateOptions::block).
constexpr int kAccurateRounds = 3;

class AccurateTimer {
 public:
  AccurateTimer(RaceState& s, const AccurateOptions& o) : s_(s), o_(o) {}

  // The correctness check of one accurately timed candidate.
  void check_one(std::size_t idx) {
    CandidateResult& r = s_.result.candidates[idx];
    s_.notify("check", r.name);
    const auto t0 = Clock::now();
    check_solution(s_.p, s_.data, *s_.solutions[idx], s_.ws, r);
    s_.result.check_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }

  void alone(std::size_t idx) {
    CandidateResult& r = s_.result.candidates[idx];
    s_.notify("accurate", r.name);
    try {
      const TimingStats st =
          time_graph(rotating_launch(s_.p, s_.data, *s_.solutions[idx], s_.ws), accurate_timing(r.screen_us, o_));
      r.us = st.median_us;
      r.accurate_us = st.median_us;
      r.spread = st.median_us > 0 ? (st.p90_us - st.p10_us) / st.median_us : 0;
      ++s_.result.accurate;
      r.stage = "accurate";
      if (o_.check_all || r.is_default) check_one(idx);
    } catch (const Error& e) {
      record_failure(r, e);
    }
  }

  // The others in blocks of o.block, each block interleaved with the default over kAccurateRounds
  // rounds; a candidate's accurate time is the default's times the median over rounds of its ratio
  // to the default in the same round. A block that fails (one candidate's capture or launch) is
  // timed candidate by candidate instead, so the failure is recorded against the candidate.
  void blocks(std::size_t def_idx, const std::vector<std::size_t>& rest) {
    const auto block = static_cast<std::size_t>(o_.block);
    for (std::size_t b = 0; b < rest.size(); b += block) {
      const std::vector<std::size_t> members(rest.begin() + static_cast<std::ptrdiff_t>(b),
                                             rest.begin() + static_cast<std::ptrdiff_t>(std::min(rest.size(), b + block)));
      one_block(def_idx, members);
    }
  }

 private:
  void one_block(std::size_t def_idx, const std::vector<std::size_t>& members) {
    double slowest = std::max(s_.result.candidates[def_idx].screen_us, 1.0);
    std::vector<std::function<void(int, Stream)>> launchers = {
        rotating_launch(s_.p, s_.data, *s_.solutions[def_idx], s_.ws)};
    for (std::size_t idx : members) {
      slowest = std::max(slowest, s_.result.candidates[idx].screen_us);
      launchers.push_back(rotating_launch(s_.p, s_.data, *s_.solutions[idx], s_.ws));
    }
    s_.notify("accurate", s_.result.candidates[members.front()].name);
    // The replays a candidate gets alone, spread over the rounds: the iters cap applies to the
    // total, not to each round (else the stage's GPU time doubles).
    TimingOptions topt = accurate_timing(slowest, o_);
    topt.replays = std::max(2, (topt.replays + kAccurateRounds - 1) / kAccurateRounds);
    // A warm-up replay a round only where a replay is short (< 2 ms: launches of < 200 us): each
    // round ends in a synchronisation, and the next graph's first replay would time its launch
    // latency too. Longer replays skip it (a warm-up of every graph in every round cost the big
    // problems 50% more than their alone timing: 3 x (1 + 2) replays against 5 + 1).
    topt.warmup_replays = slowest * topt.launches_per_graph < 2000.0 ? 1 : 0;
    std::vector<std::vector<double>> per_round;
    std::vector<TimingStats> st;
    try {
      st = time_graphs_interleaved(launchers, topt, kAccurateRounds, &per_round);
    } catch (const Error& e) {
      if (is_sticky_error(e)) throw;
      for (std::size_t idx : members) alone(idx);
      return;
    }
    const double def_us = s_.result.candidates[def_idx].us;
    for (std::size_t q = 0; q < members.size(); ++q) {
      CandidateResult& r = s_.result.candidates[members[q]];
      const double ratio = paired_ratio(per_round[q + 1], per_round[0]);
      const TimingStats& t = st[q + 1];
      r.us = ratio > 0 ? def_us * ratio : t.median_us;
      r.accurate_us = r.us;
      r.spread = t.median_us > 0 ? (t.p90_us - t.p10_us) / t.median_us : 0;
      ++s_.result.accurate;
      r.stage = "accurate";
      if (o_.check_all) {
        try {
          check_one(members[q]);
        } catch (const Error& e) {
          record_failure(r, e);
        }
      }
    }
  }

  RaceState& s_;
  const AccurateOptions& o_;
};

// Without check_all: the non-default candidates in order of accurate time (ties by the fixed
// order), each checked until `want` have passed, or, once `floor` have passed, until the next is
// slower than any finalist can be.
void check_contenders(RaceState& s, AccurateTimer& timer, const std::vector<std::size_t>& timed,
                      const ContenderChecks& c) {
  double default_us = -1;
  std::vector<std::size_t> order;
  for (std::size_t idx : timed) {
    const CandidateResult& r = s.result.candidates[idx];
    if (!r.error.empty() || r.us <= 0) continue;
    if (r.is_default) default_us = r.us;
    else order.push_back(idx);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const CandidateResult &ra = s.result.candidates[a], &rb = s.result.candidates[b];
    if (ra.us != rb.us) return ra.us < rb.us;
    return tie_order_less(ra, rb);
  });
  std::size_t passed = 0;
  double window = -1;
  for (std::size_t idx : order) {
    CandidateResult& r = s.result.candidates[idx];
    if (passed >= c.want) break;
    if (window > 0 && r.us > window && passed >= c.floor) break;
    try {
      timer.check_one(idx);
    } catch (const Error& e) {
      record_failure(r, e);
      continue;
    }
    if (!passes_checks(r, c.select)) continue;
    if (window < 0) window = std::max(r.us * (1.0 + c.select.tie_band), default_us) * (1.0 + c.window_margin);
    ++passed;
  }
}

}  // namespace

void accurate_stage(RaceState& s, const AccurateOptions& o, const ContenderChecks& checks) {
  std::vector<std::size_t> accurate = select_for_accurate(s.result.candidates, checks.select);
  // The library default is always timed: it is what the winner is compared with.
  for (std::size_t i = 0; i < s.result.candidates.size(); ++i) {
    const CandidateResult& r = s.result.candidates[i];
    if (r.is_default && r.error.empty() && r.screen_us > 0 &&
        std::find(accurate.begin(), accurate.end(), i) == accurate.end()) {
      accurate.push_back(i);
    }
  }
  AccurateTimer timer(s, o);
  const auto def_it = std::find_if(accurate.begin(), accurate.end(),
                                   [&](std::size_t i) { return s.result.candidates[i].is_default; });
  if (o.block > 0 && def_it != accurate.end()) {
    const std::size_t def_idx = *def_it;
    timer.alone(def_idx);
    std::vector<std::size_t> rest;
    for (std::size_t idx : accurate) {
      if (idx != def_idx) rest.push_back(idx);
    }
    if (s.result.candidates[def_idx].error.empty() && s.result.candidates[def_idx].us > 0) {
      timer.blocks(def_idx, rest);
    } else {
      for (std::size_t idx : rest) timer.alone(idx);
    }
  } else {
    for (std::size_t idx : accurate) timer.alone(idx);
  }
  if (!o.check_all) check_contenders(s, timer, accurate, checks);
}

}  // namespace tgemm
