// A tune's worker process (`tgemm tune --worker`, tuner/tune_job.h): one race per problem it is
// sent, or one range verification of `tgemm tune --m-grid` (a solution against the default at a
// few M values), its progress and its result written back as JSON lines.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "core/platform.h"
#include "core/registry.h"
#include "runtime/runtime.h"
#include "tuner/data.h"
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

json candidates_json(const RaceResult& r) {
  json cands = json::array();
  for (const auto& c : r.candidates) {
    cands.push_back({{"name", c.name},
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

json result_json(std::int64_t id, const RaceResult& r, const DeviceInfo& dev) {
  return {{"type", "result"}, {"id", id}, {"winner", r.winner}, {"candidates", candidates_json(r)},
          {"enumerated", r.enumerated}, {"screened", r.screened}, {"accurate", r.accurate},
          {"default_us", r.default_us}, {"confirm_default_us", r.confirm_default_us},
          {"confirm_winner_us", r.confirm_winner_us}, {"confirm_ratio", r.confirm_ratio},
          {"confirm_min_ratio", r.confirm_min_ratio}, {"confirm_placements", r.confirm_placements},
          {"confirm_tried", r.confirm_tried}, {"confirmed", r.confirmed}, {"final_placements", r.final_placements},
          {"same_launches", r.same_launches}, {"rescreened", r.rescreened}, {"seconds", r.seconds},
          {"stage_seconds", {r.screen_seconds, r.accurate_seconds, r.finals_seconds, r.confirm_seconds}},
          {"screen_graph_seconds", r.screen_graph_seconds}, {"check_seconds", r.check_seconds},
          {"arch", dev.arch}, {"sm_count", dev.sm_count}};
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
  TableRow row;
  row.key = table_key(p, dev.arch, dev.sm_count);
  row.m = m;
  row.libtype = v["libtype"];
  row.kernel_name = v["kernelName"];
  row.solidx = v["solidx"];
  row.split_k = v["splitK"];
  const Backend* backend = Runtime::get().registry().find(row.libtype);
  std::string why = "no backend " + row.libtype;
  SolutionPtr sol = backend != nullptr ? backend->from_row(row, p, why) : nullptr;
  if (sol == nullptr || !sol->can_implement(p)) {
    out["error"] = sol == nullptr ? why : "cannot implement " + p.describe();
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
    if (req.contains("verify")) {
      const std::int64_t vid = req["id"];
      try {
        emit(verify_job(vid, req["verify"], device, ro));
      } catch (const std::exception& e) {
        emit({{"type", "fatal"}, {"id", vid}, {"error", e.what()}});
        return 3;
      }
      continue;
    }
    const GemmProblem p = problem_from_json(req["problem"], device);
    ro.exclude.clear();
    for (const auto& e : req["exclude"]) ro.exclude.insert(e.get<std::string>());
    const std::int64_t id = req["id"];
    ro.on_candidate = [&](const std::string& phase, const std::string& cand) {
      emit({{"type", "progress"}, {"id", id}, {"phase", phase}, {"candidate", cand}});
    };
    try {
      emit(result_json(id, race_problem(p, ro), dev));
    } catch (const std::exception& e) {
      emit({{"type", "fatal"}, {"id", id}, {"error", e.what()}});
      return 3;
    }
  }
  return 0;
}

}  // namespace tgemm
