// A tune's worker process (`tgemm tune --worker`, tuner/tune_job.h): one race per problem it is
// sent, its progress and its result written back as JSON lines.
#include <cstdio>
#include <iostream>

#include "core/platform.h"
#include "runtime/runtime.h"
#include "tuner/data.h"
#include "tuner/race.h"
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
    cands.push_back({{"name", c.name}, {"libtype", c.libtype}, {"solidx", c.solidx}, {"splitK", c.split_k},
                     {"screen_us", c.screen_us}, {"us", c.us}, {"spread", c.spread}, {"err_ratio", c.err_ratio},
                     {"strict_ok", c.strict_ok}, {"error", c.error}, {"same_as", c.same_as}, {"stage", c.stage},
                     {"final_ratio", c.final_ratio}, {"confirm_ratio", c.confirm_ratio},
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
