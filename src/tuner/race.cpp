#include "tuner/race.h"

#include <algorithm>
#include <chrono>

#include "backends/cublaslt/cublaslt_config.h"
#include "core/check.h"
#include "core/platform.h"
#include "cuda/cuda_check.h"
#include "runtime/runtime.h"
#include "tuner/stages.h"

namespace tgemm {

std::string screen_load_key(const Solution& s, const GemmProblem& p) {
  return s.solidx() < 0 ? s.name() + " " + p.describe() : s.name();
}

RaceState::RaceState(const GemmProblem& problem, const DataOptions& data_options, int extra_placements,
                     std::function<void(const std::string&, const std::string&)> on_candidate)
    : p(problem),
      dev(Runtime::get().platform().device_info(problem.device)),
      data(make_data(problem, data_options, dev)),
      data_options_(data_options),
      extra_wanted_(extra_placements),
      on_candidate_(std::move(on_candidate)) {
  TGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "tune");
}

RaceState::~RaceState() { cudaStreamDestroy(stream); }

void RaceState::add_candidates(std::vector<SolutionPtr> list, int rank, const std::set<std::string>& exclude) {
  for (SolutionPtr& sol : list) {
    if (!sol->can_implement(p) || !names_.insert(sol->name()).second) continue;
    CandidateResult r;
    r.name = sol->name();
    r.libtype = std::string(sol->libtype());
    r.solidx = sol->solidx();
    r.split_k = sol->split_k();
    r.backend_rank = rank;
    r.is_default = r.name == default_name;
    if (exclude.count(r.name)) r.error = "excluded (hung or crashed in an earlier attempt)";
    result.candidates.push_back(r);
    solutions.push_back(std::move(sol));
  }
}

void RaceState::ensure_workspace() {
  for (const auto& sol : solutions) ws_bytes_ = std::max(ws_bytes_, sol->workspace_size(p));
  if (ws_bytes_ > ws_buf_.bytes()) {
    ws_buf_ = DeviceBuffer(ws_bytes_);
    ws = Workspace{ws_buf_.data(), ws_buf_.bytes()};
  }
}

void RaceState::notify(const char* phase, const std::string& name) const {
  if (on_candidate_) on_candidate_(phase, name);
}

void RaceState::make_extra() {
  if (extra_made_) return;
  extra_ = more_placements(p, data_options_, dev, extra_wanted_);
  extra_made_ = true;
}

int RaceState::timed_default() const {
  int def = -1;
  for (std::size_t i = 0; i < result.candidates.size(); ++i) {
    const CandidateResult& r = result.candidates[i];
    if (r.is_default && r.error.empty() && r.us > 0) def = static_cast<int>(i);
  }
  return def;
}

std::string race_default_name(const GemmProblem& p, const std::vector<std::string>& libtypes) {
  std::string name(kCublasLtHeuristicName);
  SolutionPtr disp = Runtime::get().registry().default_solution(p);
  const bool split_raced = libtypes.empty() || std::find(libtypes.begin(), libtypes.end(), "split") != libtypes.end();
  if (disp != nullptr && disp->libtype() == "split" && split_raced) name = disp->name();
  // a8w8: the dispatcher's default is cuBLASLt's fused heuristic or, where it has none (INT8,
  // per-token/channel FP8 on sm_90; blockscale with M not a multiple of 4), the staged one.
  if (disp != nullptr && quantized_family(p.family)) name = disp->name();
  return name;
}

SolutionPtr race_default_solution(const GemmProblem& p, const RaceOptions& o) {
  const std::string name = race_default_name(p, o.libtypes);
  for (const auto& backend : Runtime::get().registry().backends()) {
    for (SolutionPtr& s : backend->candidates(p)) {
      if (s->name() == name && s->can_implement(p)) return std::move(s);
    }
  }
  TGEMM_CHECK(false, "reconfirm", "the race's default ", name, " cannot run ", p.describe());
  return nullptr;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The accurate stage's checks reach every candidate that can still enter the finals or the
// confirmation: select_finalists takes passing candidates within the finals' margin of the
// winner, and the winner is within the tie band of the fastest passing candidate or is the default.
ContenderChecks contender_checks(const RaceOptions& o, std::size_t max_finalists) {
  ContenderChecks c;
  const std::size_t tries = static_cast<std::size_t>(std::max(1, o.confirm.tries));
  c.floor = std::max(o.finals.contenders, tries);
  c.want = std::max(max_finalists, c.floor);
  c.window_margin = o.finals.margin;
  c.select = o.select;
  return c;
}

// The winner of the finals (or of the accurate stage where there were none), then its
// confirmation against the default.
void select_and_confirm(RaceState& s, const RaceOptions& o, const SelectOptions& select, bool confirm_all,
                        std::vector<std::size_t> pool) {
  RaceResult& result = s.result;
  result.winner = select_winner(result.candidates, select);
  const int def = s.timed_default();
  if (o.confirm.rounds > 0 && result.winner >= 0 && def >= 0 &&
      (result.winner != def || !pool.empty() || o.confirm.near_default)) {
    ConfirmContext c;
    c.select = o.select;
    c.margin = std::max(o.confirm.margin, select.default_margin);
    c.confirm_all = confirm_all;
    c.pool = std::move(pool);
    c.short_slots = o.short_slots;
    confirm_stage(s, o.confirm, c);
  }
}

}  // namespace

RaceResult race_problem(const GemmProblem& p, const RaceOptions& o) {
  validate_race_options(o);
  const auto t0 = Clock::now();
  Runtime& rt = Runtime::get();
  RaceState s(p, o.data, std::max(o.finals.placements, o.confirm.placements), o.on_candidate);
  s.default_name = race_default_name(p, o.libtypes);

  // Candidates, in backend registration order.
  std::vector<const Backend*> backends;
  std::vector<int> ranks;
  int rank = 0;
  for (const auto& backend : rt.registry().backends()) {
    ++rank;
    const bool enabled = o.libtypes.empty() || std::find(o.libtypes.begin(), o.libtypes.end(),
                                                         std::string(backend->libtype())) != o.libtypes.end();
    if (!enabled) continue;
    backends.push_back(backend.get());
    ranks.push_back(rank);
    s.add_candidates(backend->candidates(p), rank, o.exclude);
  }
  auto stage_t0 = Clock::now();
  screen_stage(s, o.screen, backends, ranks, o.exclude);
  s.result.screen_seconds = since(stage_t0);

  stage_t0 = Clock::now();
  const bool sustained = is_compute_bound(p);
  const std::size_t max_finalists = finalists_for(p, o.finals);
  accurate_stage(s, o.accurate, contender_checks(o, max_finalists));
  s.result.accurate_seconds = since(stage_t0);

  stage_t0 = Clock::now();
  SelectOptions select = o.select;
  if (sustained) select.default_margin = std::max(select.default_margin, o.sustained_default_margin);
  FinalsContext fc;
  fc.select = o.select;
  fc.max_finalists = max_finalists;
  fc.sustained = sustained;
  fc.confirm_all = sustained && o.confirm.sustained_all && o.confirm.rounds > 0;
  fc.short_slots = o.short_slots;
  fc.launches_cap = o.accurate.launches_per_graph;
  std::vector<std::size_t> pool = finals_stage(s, o.finals, fc);
  s.result.finals_seconds = since(stage_t0);

  stage_t0 = Clock::now();
  select_and_confirm(s, o, select, fc.confirm_all, std::move(pool));
  s.result.confirm_seconds = since(stage_t0);
  for (const auto& r : s.result.candidates) {
    if (r.is_default && r.us > 0) s.result.default_us = r.us;
  }
  s.result.seconds = since(t0);
  return std::move(s.result);
}

}  // namespace tgemm
