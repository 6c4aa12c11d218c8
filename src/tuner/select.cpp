#include "tuner/select.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "core/check.h"

namespace tgemm {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

double paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  TGEMM_CHECK(a.size() == b.size(), "paired_ratio", "a and b must hold one time per round each (equal lengths), got ", a.size(), " and ",
              b.size());
  std::vector<double> r;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] > 0 && b[i] > 0) r.push_back(a[i] / b[i]);
  }
  return median(std::move(r));
}

SlotPlan plan_slots(double est_us, int base_rounds, double replay_target_us, int min_launches, int max_launches,
                    int max_rounds) {
  TGEMM_CHECK(est_us > 0 && replay_target_us > 0, "plan_slots",
              "est_us and replay_target_us must be > 0, got ", est_us, " and ", replay_target_us);
  TGEMM_CHECK(1 <= min_launches && min_launches <= max_launches && 1 <= base_rounds && base_rounds <= max_rounds,
              "plan_slots", "need 1 <= min_launches <= max_launches and 1 <= base_rounds <= max_rounds, got ",
              min_launches, ", ", max_launches, ", ", base_rounds, ", ", max_rounds);
  SlotPlan plan;
  const double want = std::round(replay_target_us / est_us);
  plan.launches_per_graph =
      static_cast<int>(std::clamp(want, static_cast<double>(min_launches), static_cast<double>(max_launches)));
  const int rounds = (base_rounds * max_launches + plan.launches_per_graph - 1) / plan.launches_per_graph;
  plan.rounds = std::clamp(rounds, base_rounds, max_rounds);
  return plan;
}

std::vector<std::size_t> select_for_accurate(const std::vector<CandidateResult>& results, const SelectOptions& o) {
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].error.empty() && results[i].screen_us > 0) ok.push_back(i);
  }
  std::stable_sort(ok.begin(), ok.end(), [&](std::size_t a, std::size_t b) {
    if (results[a].screen_us != results[b].screen_us) return results[a].screen_us < results[b].screen_us;
    return tie_order_less(results[a], results[b]);
  });
  if (ok.empty()) return ok;
  const double limit = results[ok.front()].screen_us * (1.0 + o.accurate_margin);
  std::size_t keep = 0;
  while (keep < ok.size() && (keep < o.min_accurate || results[ok[keep]].screen_us <= limit)) ++keep;
  ok.resize(keep);
  return ok;
}

bool tie_order_less(const CandidateResult& a, const CandidateResult& b) {
  return std::make_tuple(!a.is_default, a.backend_rank, std::cref(a.name)) <
         std::make_tuple(!b.is_default, b.backend_rank, std::cref(b.name));
}

std::size_t mark_same_launches(std::vector<CandidateResult>& results,
                               const std::vector<std::optional<std::string>>& fingerprints, std::size_t begin) {
  TGEMM_CHECK(fingerprints.size() == results.size(), "mark_same_launches",
              "one fingerprint per candidate expected, got ", fingerprints.size(), " for ", results.size());
  TGEMM_CHECK(begin <= results.size(), "mark_same_launches", "begin must be <= ", results.size(), ", got ", begin);
  auto eligible = [&](std::size_t i) { return fingerprints[i].has_value() && results[i].error.empty(); };
  // Fingerprint -> the candidate that stands for it: earlier ones first (the first in tie order
  // if, unexpectedly, two earlier ones stand for the same launch).
  std::map<std::string, std::size_t> stands;
  for (std::size_t i = 0; i < begin; ++i) {
    if (!eligible(i) || !results[i].same_as.empty()) continue;
    auto [it, fresh] = stands.emplace(*fingerprints[i], i);
    if (!fresh && tie_order_less(results[i], results[it->second])) it->second = i;
  }
  std::vector<std::size_t> fresh;
  for (std::size_t i = begin; i < results.size(); ++i) {
    if (eligible(i)) fresh.push_back(i);
  }
  std::stable_sort(fresh.begin(), fresh.end(),
                   [&](std::size_t a, std::size_t b) { return tie_order_less(results[a], results[b]); });
  std::size_t marked = 0;
  for (std::size_t i : fresh) {
    auto [it, first] = stands.emplace(*fingerprints[i], i);
    if (first) continue;
    results[i].same_as = results[it->second].name;
    ++marked;
  }
  return marked;
}

bool passes_checks(const CandidateResult& r, const SelectOptions& o) {
  return r.error.empty() && r.us > 0 && !r.beyond_finals && r.err_ratio >= 0 && r.err_ratio <= o.max_err_ratio &&
         (!o.require_strict || r.strict_ok);
}

bool passes_confirmation(double median_ratio, double min_ratio, double margin, double placement_tolerance) {
  return !loses_placement(min_ratio, placement_tolerance) && median_ratio * (1.0 - margin) > 1.0;
}

bool loses_placement(double ratio, double placement_tolerance) { return ratio < 1.0 - placement_tolerance; }

namespace {

// The fastest time among candidates that pass the checks; -1 if none passes.
double fastest_passing(const std::vector<CandidateResult>& results, const SelectOptions& o) {
  double best = -1;
  for (const auto& r : results) {
    if (passes_checks(r, o) && (best < 0 || r.us < best)) best = r.us;
  }
  return best;
}

// Within its band the default comes first (tie_order_less); the others tie within order_band.
int first_in_band(const std::vector<CandidateResult>& results, const SelectOptions& o, double best) {
  const double order_band = o.order_band >= 0 ? o.order_band : o.tie_band;
  int winner = -1;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!passes_checks(r, o) || r.us > best * (1.0 + (r.is_default ? o.tie_band : order_band))) continue;
    if (winner < 0 || tie_order_less(r, results[static_cast<std::size_t>(winner)])) winner = static_cast<int>(i);
  }
  return winner;
}

// The passing default, where `winner` does not beat it by more than default_margin; -1 otherwise.
int default_within_margin(const std::vector<CandidateResult>& results, const SelectOptions& o, const CandidateResult& w) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& d = results[i];
    if (d.is_default && passes_checks(d, o) && w.us > d.us * (1.0 - o.default_margin)) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

int select_winner(const std::vector<CandidateResult>& results, const SelectOptions& o) {
  const double best = fastest_passing(results, o);
  if (best < 0) return -1;
  const int winner = first_in_band(results, o, best);
  if (winner < 0 || results[static_cast<std::size_t>(winner)].is_default || o.default_margin <= 0) return winner;
  const int def = default_within_margin(results, o, results[static_cast<std::size_t>(winner)]);
  return def >= 0 ? def : winner;
}

std::vector<std::size_t> select_finalists(const std::vector<CandidateResult>& results, double best_us,
                                          double margin, std::size_t max_finalists, std::size_t min_contenders,
                                          const SelectOptions& o) {
  std::vector<std::size_t> order(results.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    double ua = results[a].us > 0 ? results[a].us : 1e300;
    double ub = results[b].us > 0 ? results[b].us : 1e300;
    return ua < ub;
  });
  std::vector<std::size_t> out;
  std::size_t others = 0;
  for (std::size_t i : order) {
    const CandidateResult& r = results[i];
    if (!passes_checks(r, o)) continue;
    if (r.is_default) {
      out.push_back(i);
    } else if ((r.us <= best_us * (1.0 + margin) && others < max_finalists) || others < min_contenders) {
      out.push_back(i);
      ++others;
    }
  }
  return out;
}

}  // namespace tgemm
