#include "tuner/timing.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/platform.h"
#include "cuda/cuda_check.h"
#include "runtime/runtime.h"
#include "tuner/data.h"
#include "tuner/select.h"

namespace tgemm {

namespace {
// GPU time of one candidate's accurate timing.
constexpr double kAccurateBudgetUs = 40000.0;
}  // namespace

TimingOptions accurate_timing(double est_us, const AccurateOptions& o) {
  const double est = std::max(est_us, 1.0);
  TimingOptions t;
  t.launches_per_graph = std::clamp(static_cast<int>(std::ceil(2000.0 / est)), 2, o.launches_per_graph);
  t.replays = std::clamp(static_cast<int>(std::ceil(kAccurateBudgetUs / (est * t.launches_per_graph))), 5, o.iters);
  t.warmup_replays = std::min(o.warmup, std::max(1, t.replays / 3));
  return t;
}

PairTiming time_pair(const GemmProblem& p, const RaceData& data, const Solution& a, const Solution& b,
                     const Workspace& ws, double est_us, int rounds, bool short_slots) {
  std::vector<std::function<void(int, Stream)>> pair = {rotating_launch(p, data, a, ws), rotating_launch(p, data, b, ws)};
  TimingOptions ct;
  ct.launches_per_graph = std::clamp(static_cast<int>(std::ceil(20000.0 / std::max(est_us, 1.0))), 2, 20);
  ct.replays = 5;
  ct.warmup_replays = 2;
  if (short_slots) {
    // ~6 ms graphs, the rounds scaled so the timed work stays the same (plan_slots with the long
    // graph's launches as its ceiling; at most 60 rounds, never fewer than asked).
    const SlotPlan sp =
        plan_slots(std::max(est_us, 1.0), rounds, 6000.0, 2, ct.launches_per_graph, std::max(60, rounds));
    ct.launches_per_graph = sp.launches_per_graph;
    rounds = sp.rounds;
  }
  std::vector<std::vector<double>> per_round;
  std::vector<TimingStats> st = time_graphs_interleaved(pair, ct, rounds, &per_round);
  return {st[0].median_us, st[1].median_us, paired_ratio(per_round[0], per_round[1])};
}

std::vector<PairTiming> time_solutions_against(const GemmProblem& p, const Solution& a,
                                               const std::vector<const Solution*>& bs, const RaceOptions& o, int rounds,
                                               int placements) {
  TGEMM_CHECK(rounds >= 1, "time_solution_pair", "rounds must be >= 1, got ", rounds);
  TGEMM_CHECK(placements >= 1, "time_solution_pair", "placements must be >= 1, got ", placements);
  TGEMM_CHECK(a.can_implement(p), "time_solution_pair", a.name(), " cannot implement ", p.describe());
  std::size_t ws_bytes = std::max<std::size_t>(a.workspace_size(p), 256);
  for (const Solution* b : bs) {
    TGEMM_CHECK(b != nullptr, "time_solution_pair", "a solution to time must not be null");
    TGEMM_CHECK(b->can_implement(p), "time_solution_pair", b->name(), " cannot implement ", p.describe());
    ws_bytes = std::max(ws_bytes, b->workspace_size(p));
  }
  const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
  // As the tuner's confirmation: the first placement, then fresh ones behind pads; made once for
  // every b (`tgemm reconfirm --alternatives` times several).
  std::vector<RaceData> data;
  data.push_back(make_data(p, o.data, dev));
  for (RaceData& d : more_placements(p, o.data, dev, placements)) data.push_back(std::move(d));
  DeviceBuffer ws_buf(ws_bytes);
  const Workspace ws{ws_buf.data(), ws_buf.bytes()};
  // Warm each (first-call resolution, lazy state) and estimate its time for the graph size; a
  // pair's graphs are sized by the slower of its two.
  auto warm_estimate = [&](const Solution& sol) {
    sol.run(p, data[0].sets[0].args, ws, nullptr);
    return time_graph(rotating_launch(p, data[0], sol, ws), TimingOptions{2, 1, 3}).median_us;
  };
  const double est_a = warm_estimate(a);
  std::vector<PairTiming> out;
  for (const Solution* b : bs) {
    const double est = std::max({1.0, est_a, warm_estimate(*b)});
    TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "time_solution_pair");
    std::vector<double> a_us, b_us, ratio;
    for (const RaceData& d : data) {
      const PairTiming t = time_pair(p, d, a, *b, ws, est, rounds, o.short_slots);
      a_us.push_back(t.a_us);
      b_us.push_back(t.b_us);
      ratio.push_back(t.ratio);
    }
    PairTiming r{median(a_us), median(b_us), median(ratio)};
    r.min_ratio = *std::min_element(ratio.begin(), ratio.end());
    r.max_ratio = *std::max_element(ratio.begin(), ratio.end());
    r.placements = static_cast<int>(ratio.size());
    out.push_back(r);
  }
  return out;
}

PairTiming time_solution_pair(const GemmProblem& p, const Solution& a, const Solution& b, const RaceOptions& o,
                              int rounds, int placements) {
  return time_solutions_against(p, a, {&b}, o, rounds, placements).front();
}

}  // namespace tgemm
