// A tune's worker process (`tgemm tune --worker`, tuner/tune_job.h): one race per problem it is
// sent (a grid point's with the grid preset and the M interval where each passing candidate can
// run), one range verification of `tgemm tune --m-grid` (a solution against the default at a few M
// values), or one count of the candidates races would screen (`--m-grid-plan`), its progress and
// its result written back as JSON lines.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "core/platform.h"
#include "core/registry.h"
#include "runtime/runtime.h"
#include "tuner/data.h"
#include "tuner/m_ranges.h"
#include "tuner/race.h"
#include "tuner/timing.h"
#include "tuner/tune_job.h"

namespace tgemm {

namespace {

using json = nlohmann::json;

void emit(const json& j) {
  std::string s = j.dump();
  s.push_back('\n');
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

// The solution a table row of (libtype, kernelName, solidx, splitK) names, bound to p; nullptr with
// `why` set when this build cannot make it for p or it cannot implement p.
SolutionPtr row_solution(const GemmProblem& p, const std::string& libtype, const std::string& name, int solidx,
                         int split_k, std::string& why) {
  const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
  TableRow row;
  row.key = table_key(p, dev.arch, dev.sm_count);
  row.m = p.m;
  row.libtype = libtype;
  row.kernel_name = name;
  row.solidx = solidx;
  row.split_k = split_k;
  const Backend* backend = Runtime::get().registry().find(libtype);
  why = "no backend " + libtype;
  SolutionPtr sol = backend != nullptr ? backend->from_row(row, p, why) : nullptr;
  if (sol != nullptr && !sol->can_implement(p)) {
    why = "cannot implement " + p.describe();
    sol = nullptr;
  }
  return sol;
}

// The M interval around `p.m` where candidate c's solution can run (`tgemm tune --m-grid`: the
// range pass claims no M outside it), within [1, cap]: each end probed first (a cuBLASLt
// configuration runs at both: two probes), else found by bisection, taking "can run" as holding
// from p.m out to a limit (a skinny tile's token count, a workspace that grows with M).
RunnableM probe_runnable(const GemmProblem& p, const CandidateResult& c, std::int64_t cap) {
  auto runs = [&](std::int64_t m) {
    GemmProblem q = p;
    q.m = m;
    std::string why;
    try {
      return row_solution(q, c.libtype, c.name, c.solidx, c.split_k, why) != nullptr;
    } catch (const Error& e) {
      if (is_sticky_error(e)) throw;
      return false;
    }
  };
  cap = std::max(cap, p.m);
  RunnableM r{1, cap};
  if (!runs(1)) {
    std::int64_t bad = 1, good = p.m;
    while (good - bad > 1) {
      const std::int64_t mid = bad + (good - bad) / 2;
      (runs(mid) ? good : bad) = mid;
    }
    r.lo = good;
  }
  if (!runs(cap)) {
    std::int64_t good = p.m, bad = cap;
    while (bad - good > 1) {
      const std::int64_t mid = good + (bad - good) / 2;
      (runs(mid) ? good : bad) = mid;
    }
    r.hi = good;
  }
  return r;
}

json candidates_json(const RaceResult& r, const GemmProblem& p, const RaceOptions& ro, std::int64_t runs_cap) {
  json cands = json::array();
  for (const auto& c : r.candidates) {
    json runs = nullptr;
    if (runs_cap > 0 && !c.is_default && passes_checks(c, ro.select)) {
      const RunnableM m = probe_runnable(p, c, runs_cap);
      runs = {m.lo, m.hi};
    }
    cands.push_back({{"runs", runs},
                     {"name", c.name},
                     {"libtype", c.libtype},
                     {"solidx", c.solidx},
                     {"splitK", c.split_k},
                     {"screen_us", c.screen_us},
                     {"us", c.us},
                     {"spread", c.spread},
                     {"err_ratio", c.err_ratio},
                     {"strict_ok", c.strict_ok},
                     {"error", c.error},
                     {"is_default", c.is_default},
                     {"same_as", c.same_as},
                     {"stage", c.stage},
                     {"final_ratio", c.final_ratio},
                     {"confirm_ratio", c.confirm_ratio},
                     {"accurate_us", c.accurate_us}});
  }
  return cands;
}

json result_json(std::int64_t id, const RaceResult& r, const DeviceInfo& dev, const GemmProblem& p,
                 const RaceOptions& ro, std::int64_t runs_cap) {
  return {{"type", "result"},
          {"id", id},
          {"winner", r.winner},
          {"candidates", candidates_json(r, p, ro, runs_cap)},
          {"enumerated", r.enumerated},
          {"screened", r.screened},
          {"accurate", r.accurate},
          {"default_us", r.default_us},
          {"confirm_default_us", r.confirm_default_us},
          {"confirm_winner_us", r.confirm_winner_us},
          {"confirm_ratio", r.confirm_ratio},
          {"confirm_min_ratio", r.confirm_min_ratio},
          {"confirm_placements", r.confirm_placements},
          {"confirm_tried", r.confirm_tried},
          {"confirmed", r.confirmed},
          {"final_placements", r.final_placements},
          {"same_launches", r.same_launches},
          {"rescreened", r.rescreened},
          {"seconds", r.seconds},
          {"stage_seconds", {r.screen_seconds, r.accurate_seconds, r.finals_seconds, r.confirm_seconds}},
          {"screen_graph_seconds", r.screen_graph_seconds},
          {"check_seconds", r.check_seconds},
          {"arch", dev.arch},
          {"sm_count", dev.sm_count}};
}

// One M of a verify job: the solution checked against the fp32 reference, then timed against the
// race's default as the confirmation times them. ratio = default / solution; -1 where it cannot
// run there, 0 where it fails the check.
json verify_one(const json& v, std::int64_t m, int device, const RaceOptions& ro) {
  json pj = v["problem"];
  pj["M"] = m;
  const GemmProblem p = problem_from_json(pj, device);
  const DeviceInfo& dev = Runtime::get().platform().device_info(device);
  json out = {{"M", m}, {"ratio", -1.0}, {"default_us", -1.0}, {"us", -1.0}, {"error", ""}};
  std::string why;
  const SolutionPtr sol = row_solution(p, v["libtype"], v["kernelName"], v["solidx"], v["splitK"], why);
  if (sol == nullptr) {
    out["error"] = why;
    return out;
  }
  const SolutionPtr def = race_default_solution(p, ro);
  if (def->name() == sol->name()) {
    out["ratio"] = 1.0;
    return out;
  }
  {
    const RaceData data = make_data(p, ro.data, dev);
    DeviceBuffer ws(std::max<std::size_t>(sol->workspace_size(p), 256));
    CandidateResult c;
    c.name = sol->name();
    check_solution(p, data, *sol, Workspace{ws.data(), ws.bytes()}, c);
    if (c.err_ratio < 0 || c.err_ratio > ro.select.max_err_ratio || (ro.select.require_strict && !c.strict_ok)) {
      out["ratio"] = 0.0;
      out["error"] = fmt::format("fails the check (err_ratio {:.4f})", c.err_ratio);
      return out;
    }
  }
  const PairTiming t = time_solution_pair(p, *def, *sol, ro, v["rounds"].get<int>(), v["placements"].get<int>());
  out["ratio"] = t.ratio;
  out["default_us"] = t.a_us;
  out["us"] = t.b_us;
  return out;
}

// `tgemm tune --m-grid`'s range pass (tuner/m_ranges.h): a solution against the default at each M
// of the job; an M that throws (other than a sticky error) reads -1 with the error.
json verify_job(std::int64_t id, const json& v, int device, const RaceOptions& ro) {
  const auto start = std::chrono::steady_clock::now();
  json ratios = json::array();
  for (const auto& mj : v["ms"]) {
    const std::int64_t m = mj.get<std::int64_t>();
    emit({{"type", "progress"},
          {"id", id},
          {"phase", "verify"},
          {"candidate", fmt::format("{} M={}", v["kernelName"].get<std::string>(), m)}});
    try {
      ratios.push_back(verify_one(v, m, device, ro));
    } catch (const Error& e) {
      if (is_sticky_error(e)) throw;
      ratios.push_back({{"M", m}, {"ratio", -1.0}, {"default_us", -1.0}, {"us", -1.0}, {"error", e.what()}});
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {{"type", "verified"}, {"id", id}, {"ratios", ratios}, {"seconds", seconds}};
}

// `tgemm tune --m-grid-plan`: the candidates a race of each M of the job would screen, without
// timing any: every enabled backend's first stage (those that can implement the problem), and what
// its refinement adds around as many bases as the race expands, taking the first stage's order
// for the screen's (the count, not which ones). With "preset", the grid points' race options.
json count_job(std::int64_t id, const json& v, int device, const RaceOptions& tune_ro) {
  const auto start = std::chrono::steady_clock::now();
  json counts = json::array();
  for (const auto& mj : v["ms"]) {
    json pj = v["problem"];
    pj["M"] = mj;
    const GemmProblem p = problem_from_json(pj, device);
    const RaceOptions ro = v.value("preset", false) ? grid_race_options(tune_ro, p) : tune_ro;
    emit({{"type", "progress"}, {"id", id}, {"phase", "count"}, {"candidate", p.describe()}});
    int first = 0, refined = 0;
    for (const auto& backend : Runtime::get().registry().backends()) {
      const std::string lib(backend->libtype());
      if (!ro.libtypes.empty() && std::find(ro.libtypes.begin(), ro.libtypes.end(), lib) == ro.libtypes.end()) {
        continue;
      }
      std::vector<ScreenedCandidate> screened;
      for (const SolutionPtr& s : backend->candidates(p)) {
        if (!s->can_implement(p)) continue;
        screened.push_back({s->name(), static_cast<double>(screened.size() + 1)});
      }
      first += static_cast<int>(screened.size());
      refined += static_cast<int>(backend->refine(p, screened, RefineOptions{ro.screen.refine_bases}).size());
    }
    counts.push_back({{"M", p.m}, {"first", first}, {"refined", refined}, {"compute_bound", is_compute_bound(p)}});
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {{"type", "counted"}, {"id", id}, {"counts", counts}, {"seconds", seconds}};
}

}  // namespace

int run_worker(const TuneOptions& o) {
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  warm_up_gpu(2.0);
  emit({{"type", "hello"}, {"arch", dev.arch}, {"sm_count", dev.sm_count}, {"device", dev.name}});
  RaceOptions ro = race_options_of(o);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const json req = json::parse(line);
    if (req.contains("verify") || req.contains("count")) {
      const std::int64_t vid = req["id"];
      try {
        emit(req.contains("verify") ? verify_job(vid, req["verify"], device, ro)
                                    : count_job(vid, req["count"], device, ro));
      } catch (const std::exception& e) {
        emit({{"type", "fatal"}, {"id", vid}, {"error", e.what()}});
        return 3;
      }
      continue;
    }
    const GemmProblem p = problem_from_json(req["problem"], device);
    // A grid point no input problem asked for races with the grid preset (GridRacePreset).
    RaceOptions point_ro = req.value("preset", false) ? grid_race_options(ro, p) : ro;
    point_ro.exclude.clear();
    for (const auto& e : req["exclude"]) point_ro.exclude.insert(e.get<std::string>());
    const std::int64_t id = req["id"];
    point_ro.on_candidate = [&](const std::string& phase, const std::string& cand) {
      emit({{"type", "progress"}, {"id", id}, {"phase", phase}, {"candidate", cand}});
    };
    try {
      const RaceResult result = race_problem(p, point_ro);
      emit(result_json(id, result, dev, p, point_ro, req.value("runs_cap", std::int64_t{0})));
    } catch (const std::exception& e) {
      emit({{"type", "fatal"}, {"id", id}, {"error", e.what()}});
      return 3;
    }
  }
  return 0;
}

}  // namespace tgemm
