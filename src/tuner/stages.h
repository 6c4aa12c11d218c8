// The four stages of a race (tuner/race.h), each a function with its own options struct, over the
// state they share. Internal to the tuner module: race_problem runs them in order.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/registry.h"
#include "tuner/data.h"
#include "tuner/race.h"

namespace tgemm {

// What the stages of one race share: the problem, its operands (placement 0, and the extra
// placements the finals and the confirmation make on first use), the candidates with their
// solutions, one workspace and one stream.
class RaceState {
 public:
  // Allocates the operands and the stream; `extra_placements`: how many placements the finals and
  // the confirmation may ask for (the larger of the two), made once on first use.
  RaceState(const GemmProblem& p, const DataOptions& data, int extra_placements,
            std::function<void(const std::string&, const std::string&)> on_candidate);
  ~RaceState();
  RaceState(const RaceState&) = delete;
  RaceState& operator=(const RaceState&) = delete;

  // Candidates of `list` that implement p and are not yet in the race, with the backend's rank;
  // those in `exclude` are recorded with an error and never run.
  void add_candidates(std::vector<SolutionPtr> list, int rank, const std::set<std::string>& exclude);
  // The workspace grown to the largest any candidate asks for.
  void ensure_workspace();
  void notify(const char* phase, const std::string& name) const;
  // Placement j: 0 is the race's operands, 1.. the extra ones (make_extra first).
  const RaceData& placement(int j) const { return j == 0 ? data : extra_[static_cast<std::size_t>(j - 1)]; }
  void make_extra();
  int extra_count() const { return static_cast<int>(extra_.size()); }
  // Index of the default when it has an accurate time and no error; -1 otherwise.
  int timed_default() const;

  const GemmProblem& p;
  const DeviceInfo& dev;
  RaceData data;
  std::string default_name;
  std::vector<SolutionPtr> solutions;  // solutions[i] is result.candidates[i]
  RaceResult result;
  Workspace ws;
  cudaStream_t stream = nullptr;

 private:
  DataOptions data_options_;
  int extra_wanted_;
  bool extra_made_ = false;
  std::vector<RaceData> extra_;
  std::unordered_set<std::string> names_;
  DeviceBuffer ws_buf_;
  std::size_t ws_bytes_ = 0;
  std::function<void(const std::string&, const std::string&)> on_candidate_;
};

// The screen: every candidate of the enabled backends (`backends`, with their registration
// ranks) launched briefly, then each backend's refinement of its leaders screened the same way.
void screen_stage(RaceState& s, const ScreenOptions& o, const std::vector<const Backend*>& backends,
                  const std::vector<int>& ranks, const std::set<std::string>& exclude);

// How many candidates the accurate stage checks against the reference when not every one is
// (AccurateOptions::check_all off): in order of accurate time until `want` have passed, or, once
// `floor` have passed, until the next is slower than any finalist can be (window_margin over the
// fastest passing candidate or the default).
struct ContenderChecks {
  std::size_t want = 0;
  std::size_t floor = 0;
  double window_margin = 0;
  SelectOptions select;
};

// The accurate stage: the screen's leaders (select_for_accurate) and the default timed by CUDA
// graphs, alone or in blocks paired with the default, and checked.
void accurate_stage(RaceState& s, const AccurateOptions& o, const ContenderChecks& checks);

// What the finals need from the rest of the race.
struct FinalsContext {
  SelectOptions select;
  std::size_t max_finalists = 0;  // finalists_for
  bool sustained = false;         // is_compute_bound
  bool confirm_all = false;       // ConfirmOptions::sustained_all applies: no finals
  bool short_slots = false;       // RaceOptions::short_slots
  int launches_cap = 1;           // AccurateOptions::launches_per_graph
};

// The finals: the finalists (select_finalists) re-timed in interleaved rounds with the default and
// ranked on their paired ratio to it. Returns the candidates the confirmation takes instead of
// finals (FinalsContext::confirm_all), else nothing.
std::vector<std::size_t> finals_stage(RaceState& s, const FinalsOptions& o, const FinalsContext& c);

// What the confirmation needs from the rest of the race.
struct ConfirmContext {
  SelectOptions select;            // the race's, for the checks and the tie band
  double margin = 0;               // the larger of ConfirmOptions::margin and the winner's default margin
  bool confirm_all = false;        // confirm `pool` instead of the finals' winner and rivals
  std::vector<std::size_t> pool;   // finals_stage's return
  bool short_slots = false;
};

// The confirmation: the winner (result.winner, the finals' pick) and the next fastest timed
// against the default on several placements; the first that passes (with ConfirmOptions::best or
// confirm_all: the best) becomes the winner, else the default.
void confirm_stage(RaceState& s, const ConfirmOptions& o, const ConfirmContext& c);

}  // namespace tgemm
