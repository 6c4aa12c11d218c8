// The screen (tuner/stages.h): a first timed launch of every candidate (errors surface here), more
// launches for the fast ones, then each backend's refinement around its leaders.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "cuda/cuda_check.h"
#include "runtime/launch_fingerprint.h"
#include "runtime/timing.h"
#include "tuner/stages.h"

namespace tgemm {

namespace {

using Clock = std::chrono::steady_clock;

// Kernels slower than this are timed by their first launch alone: their launch overhead is
// negligible and each run costs real tuning time.
constexpr double kSlowScreenUs = 200.0;

// Clocks up before the first screen launch: building the candidate list keeps the GPU idle for
// 0.1-1 s, long enough for its clocks to drop (an idle H200 reads 345 MHz), and a problem's first
// screened candidates then read 4-7x slow.
constexpr double kWarmupSeconds = 0.005;

// True the first time this process asks about `key` (screen_load_key). Kernels load on first use
// (CUDA's lazy module loading): a configuration's first launch in a process reads 1.6-2.7 ms where
// it otherwise takes microseconds.
bool first_use_in_process(const std::string& key) {
  static std::mutex mutex;
  static std::unordered_set<std::string> seen;
  std::lock_guard<std::mutex> lock(mutex);
  return seen.insert(key).second;
}

struct Timer {
  cudaEvent_t a = nullptr, b = nullptr;
  Timer() {
    TGEMM_CUDA_CHECK(cudaEventCreate(&a), "tune");
    TGEMM_CUDA_CHECK(cudaEventCreate(&b), "tune");
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
};

class Screener {
 public:
  Screener(RaceState& s, const ScreenOptions& o) : s_(s), o_(o) {}

  // Candidates [begin, end) screened.
  void screen(std::size_t begin, std::size_t end) {
    s_.ensure_workspace();
    for (std::size_t i = begin; i < end; ++i) {
      CandidateResult& r = s_.result.candidates[i];
      if (!r.error.empty() || !r.same_as.empty()) continue;
      s_.notify("screen", r.name);
      try {
        screen_one(i);
        ++s_.result.screened;
        r.stage = "screen";
      } catch (const Error& e) {
        record_failure(r, e);
      }
    }
  }

  // Identical launches (ScreenOptions::dedupe_launches): fingerprints of the candidates from
  // `begin` on, each captured (not run) on the race's first operands and workspace, as the screen
  // runs it.
  void mark_duplicates(std::size_t begin) {
    if (!o_.dedupe_launches) return;
    s_.ensure_workspace();
    for (std::size_t i = begin; i < s_.solutions.size(); ++i) {
      const Solution* sol = s_.solutions[i].get();
      fingerprints_.push_back(s_.result.candidates[i].error.empty()
                                  ? launch_fingerprint([&](Stream st) { sol->run(s_.p, s_.data.sets[0].args, s_.ws, st); })
                                  : std::nullopt);
    }
    s_.result.same_launches += static_cast<int>(mark_same_launches(s_.result.candidates, fingerprints_, begin));
  }

 private:
  const GemmArgs& args(std::size_t set) const { return s_.data.sets[set % s_.data.sets.size()].args; }

  // Microseconds per launch of `count` launches of candidate i on sets first, first + 1, ...
  double timed_launches(std::size_t i, std::size_t first, int count) {
    TGEMM_CUDA_CHECK(cudaEventRecord(timer_.a, s_.stream), "tune");
    for (int it = 0; it < count; ++it) {
      s_.solutions[i]->run(s_.p, args(first + static_cast<std::size_t>(it)), s_.ws, reinterpret_cast<Stream>(s_.stream));
    }
    TGEMM_CUDA_CHECK(cudaEventRecord(timer_.b, s_.stream), "tune");
    check_context(s_.result.candidates[i].name);
    float ms = 0;
    TGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, timer_.a, timer_.b), "tune");
    return ms * 1000.0 / count;
  }

  void screen_one(std::size_t i) {
    CandidateResult& r = s_.result.candidates[i];
    r.screen_us = timed_launches(i, 0, 1);
    // A slow first launch of a solution new to this process may be its kernels loading: one more
    // launch, and the faster of the two counts.
    const std::string load_key = screen_load_key(*s_.solutions[i], s_.p);
    if (r.screen_us >= kSlowScreenUs && first_use_in_process(load_key)) {
      r.screen_us = std::min(r.screen_us, timed_launches(i, 1, 1));
      ++s_.result.rescreened;
    } else {
      first_use_in_process(load_key);
    }
    if (r.screen_us < o_.graph_us) {
      const auto graph_t0 = Clock::now();
      TimingOptions g;
      g.launches_per_graph = std::clamp(static_cast<int>(std::ceil(100.0 / std::max(r.screen_us, 1.0))), 2, 8);
      g.warmup_replays = 1;
      g.replays = std::max(1, o_.iters);
      const Solution* sol = s_.solutions[i].get();
      r.screen_us = time_graph([&](int it, Stream gs) { sol->run(s_.p, args(static_cast<std::size_t>(it) + 1), s_.ws, gs); },
                               g)
                        .median_us;
      check_context(r.name);
      s_.result.screen_graph_seconds += std::chrono::duration<double>(Clock::now() - graph_t0).count();
    } else if (r.screen_us < kSlowScreenUs) {
      r.screen_us = timed_launches(i, 1, o_.iters);
    }
  }

  RaceState& s_;
  const ScreenOptions& o_;
  Timer timer_;
  std::vector<std::optional<std::string>> fingerprints_;
};

}  // namespace

void screen_stage(RaceState& s, const ScreenOptions& o, const std::vector<const Backend*>& backends,
                  const std::vector<int>& ranks, const std::set<std::string>& exclude) {
  Screener screener(s, o);
  screener.mark_duplicates(0);
  warm_up_gpu(kWarmupSeconds);
  screener.screen(0, s.solutions.size());
  // Each backend refines around its fastest screened candidates.
  for (std::size_t b = 0; b < backends.size(); ++b) {
    std::vector<ScreenedCandidate> mine;
    for (const auto& r : s.result.candidates) {
      if (r.backend_rank == ranks[b] && r.error.empty() && r.screen_us > 0) mine.push_back({r.name, r.screen_us});
    }
    std::stable_sort(mine.begin(), mine.end(),
                     [](const ScreenedCandidate& a, const ScreenedCandidate& c) { return a.screen_us < c.screen_us; });
    const std::size_t before = s.solutions.size();
    s.add_candidates(backends[b]->refine(s.p, mine, RefineOptions{o.refine_bases}), ranks[b], exclude);
    screener.mark_duplicates(before);
    screener.screen(before, s.solutions.size());
  }
  s.result.enumerated = static_cast<int>(s.solutions.size());
}

}  // namespace tgemm
