#include "tuner/m_ranges.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/csv.h"

namespace tgemm {

namespace {

constexpr const char* kOp = "tgemm tune --m-grid";

// One end's search after a measurement at its target: a hold moves good out to it, a failure
// marks it bad; after a failure, bisect between good and bad while steps remain and an M lies
// strictly between them.
void step_end(EndSearch& e, bool held, int max_steps) {
  if (held) {
    e.good = e.target;
  } else {
    e.bad = e.target;
  }
  e.target = 0;
  if (e.bad == 0 || e.steps >= max_steps) return;
  const std::int64_t gap = e.bad - e.good;
  if (gap >= 2 || gap <= -2) {
    e.target = e.good + gap / 2;
    ++e.steps;
  }
}

// A run of points [first, last] served by `solution`: its claim from the gap splits with the
// points around it, cut to where the solution can run and to the last memory-bound M (0: none).
RangeCheck check_of_run(const std::vector<GridWinner>& pts, std::size_t first, std::size_t last,
                        const std::string& solution, int max_steps, const std::map<std::string, RunnableM>& runnable,
                        std::int64_t memory_bound_to) {
  RangeCheck c;
  c.solution = solution;
  c.max_steps = max_steps;
  for (std::size_t i = first; i <= last; ++i) {
    c.grid.push_back(pts[i].m);
    if (pts[i].solution != solution) c.absorbed[pts[i].m] = pts[i].solution;
  }
  c.lo = first == 0 ? pts[first].m : gap_split(pts[first - 1].m, pts[first].m) + 1;
  c.hi = last + 1 == pts.size() ? pts[last].m : gap_split(pts[last].m, pts[last + 1].m);
  const auto lim = runnable.find(solution);
  if (lim != runnable.end() && lim->second.known()) {
    c.lo = std::max(c.lo, std::min(lim->second.lo, c.grid.front()));
    c.hi = std::min(c.hi, std::max(lim->second.hi, c.grid.back()));
  }
  // The run's points are memory-bound (plan_ranges), so the cut never reaches inside them.
  if (memory_bound_to > 0) c.hi = std::min(c.hi, memory_bound_to);
  c.low.good = c.grid.front();
  c.low.target = c.lo != c.low.good ? c.lo : 0;
  c.high.good = c.grid.back();
  c.high.target = c.hi != c.high.good ? c.hi : 0;
  for (std::size_t j = 0; j + 1 < c.grid.size(); ++j) {
    const std::int64_t x = c.grid[j], y = c.grid[j + 1];
    c.mids.push_back(y - x >= 2 ? gap_split(x, y) : 0);
    c.mid_state.push_back(y - x >= 2 ? 0 : 1);
  }
  return c;
}

bool serves(const GridWinner& p, const std::string& s) {
  return p.solution == s || std::find(p.tied.begin(), p.tied.end(), s) != p.tied.end();
}

// The solution a run over points [i, j] takes: one that won at least one of them and won or tied
// every one, the most wins first, then by name; empty when there is none. wins: its points won.
std::string run_solution(const std::vector<GridWinner>& pts, std::size_t i, std::size_t j, int& wins) {
  std::map<std::string, int> won;
  for (std::size_t k = i; k <= j; ++k) ++won[pts[k].solution];
  std::string best;
  wins = 0;
  for (const auto& [s, w] : won) {
    bool all = w > wins;
    for (std::size_t k = i; all && k <= j; ++k) all = serves(pts[k], s);
    if (all) {
      best = s;
      wins = w;
    }
  }
  return best;
}

// The runs of a stretch of points [a, b] none of which the default won: the fewest, then the most
// points served by their own winner (a point alone is always a run of its winner).
std::vector<std::pair<std::size_t, std::size_t>> cut_stretch(const std::vector<GridWinner>& pts, std::size_t a,
                                                             std::size_t b, std::vector<std::string>& solutions) {
  struct Cut {
    int runs = -1;
    int absorbed = 0;
    std::size_t from = 0;
    std::string solution;
  };
  const std::size_t n = b - a + 1;
  std::vector<Cut> best(n + 1);
  best[0].runs = 0;
  for (std::size_t j = 1; j <= n; ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      int wins = 0;
      std::string s = run_solution(pts, a + i, a + j - 1, wins);
      if (s.empty()) continue;
      const Cut c{best[i].runs + 1, best[i].absorbed + static_cast<int>(j - i) - wins, i, std::move(s)};
      if (best[j].runs < 0 || c.runs < best[j].runs || (c.runs == best[j].runs && c.absorbed < best[j].absorbed)) {
        best[j] = c;
      }
    }
  }
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  solutions.clear();
  for (std::size_t j = n; j > 0; j = best[j].from) {
    runs.emplace_back(a + best[j].from, a + j - 1);
    solutions.push_back(best[j].solution);
  }
  std::reverse(runs.begin(), runs.end());
  std::reverse(solutions.begin(), solutions.end());
  return runs;
}

// A time relative to the default's in one stage (0 the confirmation, 1 the finals, 2 the accurate
// stage); -1 where the candidate did not reach it.
double relative_time(const PointTiming& t, int stage) {
  if (stage == 0) return t.confirm_ratio > 0 ? 1.0 / t.confirm_ratio : -1.0;
  return stage == 1 ? t.final_ratio : t.accurate_ratio;
}

// A range of one absorbed point given back to the solution that won it.
VerifiedRange own_point(std::int64_t m, const std::string& winner) { return VerifiedRange{winner, m, m, {m}}; }

}  // namespace

std::int64_t gap_split(std::int64_t x, std::int64_t y) {
  TGEMM_CHECK(0 < x && x < y, kOp, "a gap needs 0 < x < y, got ", x, " and ", y);
  if (y - x < 2) return x;
  const auto s = static_cast<std::int64_t>(std::floor(std::sqrt(static_cast<double>(x) * static_cast<double>(y))));
  return std::clamp(s, x + 1, y - 1);
}

bool ties_with(const PointTiming& c, const PointTiming& winner, double tie_band) {
  for (int stage = 0; stage < 3; ++stage) {
    const double a = relative_time(c, stage), w = relative_time(winner, stage);
    if (a > 0 && w > 0) return a <= w * (1.0 + tie_band);
  }
  return false;
}

std::vector<std::string> tied_solutions(const std::vector<PointTiming>& timings, const std::string& winner,
                                        const std::string& default_name, double tie_band) {
  const auto w =
      std::find_if(timings.begin(), timings.end(), [&](const PointTiming& t) { return t.solution == winner; });
  std::vector<std::string> out;
  if (w == timings.end()) return out;
  for (const PointTiming& t : timings) {
    if (t.solution != winner && t.solution != default_name && ties_with(t, *w, tie_band)) out.push_back(t.solution);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::map<std::string, RunnableM> runnable_intervals(const std::map<std::int64_t, std::vector<PointTiming>>& timings) {
  std::map<std::string, RunnableM> out;
  for (const auto& [m, point] : timings) {
    for (const PointTiming& t : point) {
      if (!t.runs.known()) continue;
      RunnableM& r = out[t.solution];
      r.lo = r.known() ? std::min(r.lo, t.runs.lo) : t.runs.lo;
      r.hi = std::max(r.hi, t.runs.hi);
    }
  }
  return out;
}

std::vector<RangeCheck> plan_ranges(std::vector<GridWinner> points, int max_steps,
                                    const std::map<std::string, RunnableM>& runnable, std::int64_t memory_bound_to) {
  TGEMM_CHECK(max_steps >= 0, kOp, "the shrink steps must be >= 0, got ", max_steps);
  std::sort(points.begin(), points.end(), [](const GridWinner& a, const GridWinner& b) { return a.m < b.m; });
  for (std::size_t i = 0; i < points.size(); ++i) {
    TGEMM_CHECK(points[i].m >= 1, kOp, "a grid point's M must be >= 1, got ", points[i].m);
    TGEMM_CHECK(i == 0 || points[i - 1].m != points[i].m, kOp, "grid point M = ", points[i].m, " is given twice");
  }
  TGEMM_CHECK(memory_bound_to >= 0, kOp, "the last memory-bound M must be >= 0 (0: none), got ", memory_bound_to);
  // A point the default won or one above the last memory-bound M ends a stretch of runs.
  auto stops = [&](const GridWinner& p) { return p.is_default || (memory_bound_to > 0 && p.m > memory_bound_to); };
  std::vector<RangeCheck> checks;
  for (std::size_t i = 0; i < points.size();) {
    if (stops(points[i])) {
      ++i;
      continue;
    }
    std::size_t last = i;
    while (last + 1 < points.size() && !stops(points[last + 1])) ++last;
    std::vector<std::string> solutions;
    const auto runs = cut_stretch(points, i, last, solutions);
    for (std::size_t r = 0; r < runs.size(); ++r) {
      checks.push_back(
          check_of_run(points, runs[r].first, runs[r].second, solutions[r], max_steps, runnable, memory_bound_to));
    }
    i = last + 1;
  }
  return checks;
}

KeyGridPlan plan_key_grid(const std::vector<std::int64_t>& grid, std::int64_t memory_bound_to, bool race_compute_bound,
                          const std::function<bool(std::int64_t)>& raced) {
  KeyGridPlan plan;
  for (std::int64_t m : grid) {
    if (m > memory_bound_to && !race_compute_bound) {
      plan.left_out.push_back(m);
    } else {
      (raced(m) ? plan.raced_before : plan.to_race).push_back(m);
    }
  }
  return plan;
}

bool ranges_reach_above(const std::vector<TableRow>& rows, const TableKey& key, std::int64_t memory_bound_to) {
  return std::any_of(rows.begin(), rows.end(), [&](const TableRow& r) {
    return r.key == key && (r.m_lo > 0 || r.m_hi > 0) && r.range_hi() > memory_bound_to;
  });
}

bool ratio_holds(double ratio, double tie_band) { return std::isfinite(ratio) && ratio > 0 && ratio >= 1.0 - tie_band; }

std::vector<std::int64_t> pending(const RangeCheck& c) {
  std::vector<std::int64_t> ms;
  if (c.low.target != 0) ms.push_back(c.low.target);
  if (c.high.target != 0) ms.push_back(c.high.target);
  for (std::size_t j = 0; j < c.mids.size(); ++j) {
    if (c.mid_state[j] == 0) ms.push_back(c.mids[j]);
  }
  std::sort(ms.begin(), ms.end());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
  return ms;
}

bool settled(const RangeCheck& c) { return pending(c).empty(); }

void apply_ratios(RangeCheck& c, const std::map<std::int64_t, double>& ratios, double tie_band) {
  auto held = [&](std::int64_t m) {
    const auto it = ratios.find(m);
    return it != ratios.end() && ratio_holds(it->second, tie_band);
  };
  for (std::size_t j = 0; j < c.mids.size(); ++j) {
    if (c.mid_state[j] == 0) c.mid_state[j] = held(c.mids[j]) ? 1 : -1;
  }
  if (c.low.target != 0) step_end(c.low, held(c.low.target), c.max_steps);
  if (c.high.target != 0) step_end(c.high, held(c.high.target), c.max_steps);
}

std::vector<VerifiedRange> verified_ranges(const RangeCheck& c) {
  TGEMM_CHECK(settled(c), kOp, "the range of ", c.solution, " is not verified yet");
  TGEMM_CHECK(!c.grid.empty(), kOp, "a range of ", c.solution, " without grid points");
  std::vector<VerifiedRange> out;
  VerifiedRange piece{c.solution, c.low.good, 0, {}};
  auto add_point = [&](std::int64_t m) {
    const auto a = c.absorbed.find(m);
    if (a == c.absorbed.end()) {
      piece.grid.push_back(m);
    } else {
      piece.absorbed.insert(*a);
    }
  };
  auto close = [&](std::int64_t hi) {
    piece.hi = hi;
    if (!piece.grid.empty()) {
      out.push_back(std::move(piece));
      return;
    }
    for (const auto& [m, winner] : piece.absorbed) out.push_back(own_point(m, winner));
  };
  add_point(c.grid.front());
  for (std::size_t j = 0; j + 1 < c.grid.size(); ++j) {
    if (c.mid_state[j] < 0) {
      close(c.grid[j]);
      piece = VerifiedRange{c.solution, c.grid[j + 1], 0, {}};
    }
    add_point(c.grid[j + 1]);
  }
  close(c.high.good);
  return out;
}

std::vector<VerifiedRange> merge_ranges(std::vector<VerifiedRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const VerifiedRange& a, const VerifiedRange& b) { return a.lo < b.lo; });
  std::vector<VerifiedRange> out;
  for (VerifiedRange& r : ranges) {
    TGEMM_CHECK(r.lo <= r.hi, kOp, "range [", r.lo, ", ", r.hi, "] of ", r.solution, " is empty");
    if (!out.empty()) {
      VerifiedRange& prev = out.back();
      TGEMM_CHECK(prev.hi < r.lo, kOp, "ranges [", prev.lo, ", ", prev.hi, "] and [", r.lo, ", ", r.hi, "] overlap");
      if (prev.solution == r.solution && prev.hi + 1 == r.lo) {
        prev.hi = r.hi;
        prev.grid.insert(prev.grid.end(), r.grid.begin(), r.grid.end());
        prev.absorbed.insert(r.absorbed.begin(), r.absorbed.end());
        continue;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<VerifiedRange> cut_around(const VerifiedRange& r, const std::set<std::int64_t>& exact_ms) {
  std::vector<VerifiedRange> out;
  std::int64_t from = r.lo;
  auto close = [&](std::int64_t to) {
    if (from > to) return;
    VerifiedRange piece{r.solution, from, to, {}};
    for (std::int64_t g : r.grid) {
      if (from <= g && g <= to) piece.grid.push_back(g);
    }
    for (auto a = r.absorbed.lower_bound(from); a != r.absorbed.end() && a->first <= to; ++a) {
      piece.absorbed.insert(*a);
    }
    if (!piece.grid.empty()) {
      out.push_back(std::move(piece));
      return;
    }
    for (const auto& [m, winner] : piece.absorbed) out.push_back(own_point(m, winner));
  };
  for (auto it = exact_ms.lower_bound(r.lo); it != exact_ms.end() && *it <= r.hi; ++it) {
    close(*it - 1);
    from = *it + 1;
  }
  close(r.hi);
  return out;
}

std::int64_t row_m(const VerifiedRange& r) {
  TGEMM_CHECK(!r.grid.empty(), kOp, "range [", r.lo, ", ", r.hi, "] of ", r.solution, " has no grid point");
  return r.grid[(r.grid.size() - 1) / 2];
}

std::vector<TableRow> range_rows(const std::vector<VerifiedRange>& ranges,
                                 const std::map<std::int64_t, TableRow>& grid_rows,
                                 const std::set<std::int64_t>& exact_ms) {
  std::vector<TableRow> rows;
  for (const VerifiedRange& merged : merge_ranges(ranges)) {
    for (const VerifiedRange& piece : cut_around(merged, exact_ms)) {
      const std::int64_t m = row_m(piece);
      const auto it = grid_rows.find(m);
      TGEMM_CHECK(it != grid_rows.end() && it->second.kernel_name == piece.solution, kOp, "no race result of ",
                  piece.solution, " at grid point M = ", m);
      TableRow row = it->second;
      row.m = m;
      row.m_lo = piece.lo;
      row.m_hi = piece.hi;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

bool MGridState::ranges_pending(const std::string& key, const std::vector<std::int64_t>& grid) const {
  const auto it = ranges_written.find(key);
  return it == ranges_written.end() || it->second != grid;
}

void MGridState::record_race(const std::string& key, std::int64_t m, const std::string& default_name,
                             std::vector<PointTiming> point_timings, bool feeds_ranges) {
  defaults[key][m] = default_name;
  timings[key][m] = std::move(point_timings);
  reconfirmed[key].erase(m);
  exact_written[key].erase(m);
  if (feeds_ranges) ranges_written.erase(key);
}

bool MGridState::raced(const std::string& key, std::int64_t m) const {
  const auto it = defaults.find(key);
  return it != defaults.end() && it->second.count(m) == 1;
}

std::string MGridState::to_json() const {
  nlohmann::json j = {{"defaults", nlohmann::json::object()},
                      {"timings", nlohmann::json::object()},
                      {"reconfirmed", nlohmann::json::object()},
                      {"ranges_written", nlohmann::json::object()},
                      {"exact_written", nlohmann::json::object()}};
  for (const auto& [key, by_m] : defaults) {
    for (const auto& [m, name] : by_m) j["defaults"][key][std::to_string(m)] = name;
  }
  for (const auto& [key, by_m] : timings) {
    for (const auto& [m, point] : by_m) {
      nlohmann::json list = nlohmann::json::array();
      for (const PointTiming& t : point) {
        list.push_back({{"solution", t.solution},
                        {"final_ratio", t.final_ratio},
                        {"confirm_ratio", t.confirm_ratio},
                        {"accurate_ratio", t.accurate_ratio},
                        {"runs", {t.runs.lo, t.runs.hi}}});
      }
      j["timings"][key][std::to_string(m)] = std::move(list);
    }
  }
  for (const auto& [key, ms] : reconfirmed) j["reconfirmed"][key] = ms;
  for (const auto& [key, grid] : ranges_written) j["ranges_written"][key] = grid;
  for (const auto& [key, ms] : exact_written) j["exact_written"][key] = ms;
  return j.dump(1) + "\n";
}

MGridState MGridState::from_json(const std::string& text, const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  TGEMM_CHECK(!j.is_discarded() && j.is_object(), kOp, where, " is not a JSON object");
  MGridState s;
  try {
    const nlohmann::json defaults = j.value("defaults", nlohmann::json::object());
    const nlohmann::json reconfirmed = j.value("reconfirmed", nlohmann::json::object());
    const nlohmann::json written = j.value("ranges_written", nlohmann::json::object());
    // A state file without it wrote no exact row of a compute-bound grid point.
    const nlohmann::json exact = j.value("exact_written", nlohmann::json::object());
    TGEMM_CHECK(defaults.is_object() && reconfirmed.is_object() && written.is_object() && exact.is_object(), kOp, where,
                ": not a --m-grid state file");
    for (const auto& [key, by_m] : defaults.items()) {
      TGEMM_CHECK(by_m.is_object(), kOp, where, ": the defaults of ", key, " are not an object");
      for (const auto& [m, name] : by_m.items()) {
        const auto v = csv::parse_int(m);
        TGEMM_CHECK(v.has_value() && *v >= 1, kOp, where, ": '", m, "' is not an M");
        s.defaults[key][*v] = name.get<std::string>();
      }
    }
    // A state file without timings (its points raced before they were kept) plans without ties or
    // runnable intervals.
    const nlohmann::json timings = j.value("timings", nlohmann::json::object());
    TGEMM_CHECK(timings.is_object(), kOp, where, ": the timings are not an object");
    for (const auto& [key, by_m] : timings.items()) {
      for (const auto& [m, list] : by_m.items()) {
        const auto v = csv::parse_int(m);
        TGEMM_CHECK(v.has_value() && *v >= 1, kOp, where, ": '", m, "' is not an M");
        std::vector<PointTiming>& point = s.timings[key][*v];
        for (const auto& t : list) {
          const auto runs = t.at("runs").get<std::vector<std::int64_t>>();
          TGEMM_CHECK(runs.size() == 2, kOp, where, ": runs of ", key, " at M = ", m, " must be [lo, hi]");
          point.push_back({t.at("solution").get<std::string>(), t.at("final_ratio").get<double>(),
                           t.at("confirm_ratio").get<double>(), t.at("accurate_ratio").get<double>(),
                           RunnableM{runs[0], runs[1]}});
        }
      }
    }
    for (const auto& [key, ms] : reconfirmed.items()) s.reconfirmed[key] = ms.get<std::set<std::int64_t>>();
    for (const auto& [key, grid] : written.items()) {
      s.ranges_written[key] = grid.get<std::vector<std::int64_t>>();
    }
    for (const auto& [key, ms] : exact.items()) s.exact_written[key] = ms.get<std::set<std::int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    TGEMM_CHECK(false, kOp, where, ": not a --m-grid state file: ", e.what());
  }
  return s;
}

}  // namespace tgemm
