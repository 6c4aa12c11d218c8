#include "tune/racer.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/reference/reference_backend.h"
#include "cuda/cuda_check.h"
#include "runtime/device_utils.h"
#include "runtime/launch_fingerprint.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"

namespace tgemm {

std::string screen_load_key(const Solution& s, const GemmProblem& p) {
  return s.solidx() < 0 ? s.name() + " " + p.describe() : s.name();
}

namespace {

constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t v, std::size_t q) { return (v + q - 1) / q * q; }

// True the first time this process asks about `key` (screen_load_key). Kernels load on first use
// (CUDA's lazy module loading): session 7's two tunes screened 367 configurations within 30% of
// the leader in one tune at 1.6-2.7 ms in the other, whose screen times were their first launch
// in that process (docs/perf-notes.md, "What happened (session 8)").
bool first_use_in_process(const std::string& key) {
  static std::mutex mutex;
  static std::unordered_set<std::string> seen;
  std::lock_guard<std::mutex> lock(mutex);
  return seen.insert(key).second;
}

struct Operands {
  DeviceBuffer buf;  // [x | w | bias] per rotation
  DeviceBuffer out;
  GemmArgs args;
};

struct RaceData {
  DeviceBuffer pad;  // allocated first: shifts this placement's operands (confirmation placements)
  std::vector<Operands> sets;
  DeviceBuffer ref;  // fp32 [M, N] reference of set 0 (not made for confirmation placements)
};

std::size_t data_bytes(const GemmProblem& p, const RaceOptions& o, const DeviceInfo& dev) {
  const std::size_t es = dtype_size(p.a_type);
  const std::size_t o_bytes = static_cast<std::size_t>(p.m * p.n) * dtype_size(p.out_type);
  const std::size_t per_set = round_up(static_cast<std::size_t>(p.m * p.k) * es, kAlign) +
                              round_up(static_cast<std::size_t>(p.n * p.k) * es, kAlign) + 2 * o_bytes;
  return per_set * static_cast<std::size_t>(rotation_count(per_set, dev.l2_bytes, o.rotation_l2_factor, 32,
                                                             o.memory_budget, o.min_rotation_sets));
}

// pad_bytes > 0: a buffer of that size is allocated before the operands and kept with them, so
// a second placement of the same problem lands elsewhere in memory (no reference is computed).
RaceData make_data(const GemmProblem& p, const RaceOptions& o, const DeviceInfo& dev, std::size_t pad_bytes = 0) {
  RaceData d;
  if (pad_bytes > 0) d.pad = DeviceBuffer(pad_bytes);
  const std::size_t es = dtype_size(p.a_type);
  const std::size_t x_bytes = round_up(static_cast<std::size_t>(p.m * p.k) * es, kAlign);
  const std::size_t w_bytes = round_up(static_cast<std::size_t>(p.n * p.k) * es, kAlign);
  const std::size_t b_bytes = p.has_bias() ? round_up(static_cast<std::size_t>(p.n) * dtype_size(p.bias_type), kAlign) : 0;
  const std::size_t o_bytes = static_cast<std::size_t>(p.m * p.n) * dtype_size(p.out_type);
  const std::size_t c_bytes = p.use_c ? round_up(o_bytes, kAlign) : 0;
  const int sets = rotation_count(x_bytes + w_bytes + o_bytes + c_bytes, dev.l2_bytes, o.rotation_l2_factor, 32,
                                  o.memory_budget, o.min_rotation_sets);
  for (int i = 0; i < sets; ++i) {
    Operands op;
    op.buf = DeviceBuffer(x_bytes + w_bytes + b_bytes + c_bytes);
    op.out = DeviceBuffer(std::max<std::size_t>(o_bytes, 16));
    char* base = static_cast<char*>(op.buf.data());
    auto seed = static_cast<std::uint64_t>(i) * 3 + 11;
    fill_uniform(base, p.a_type, p.m * p.k, seed, -1.0f, 1.0f, nullptr);
    fill_uniform(base + x_bytes, p.b_type, p.n * p.k, seed + 1, -1.0f, 1.0f, nullptr);
    if (p.has_bias()) fill_uniform(base + x_bytes + w_bytes, p.bias_type, p.n, seed + 2, -1.0f, 1.0f, nullptr);
    op.args.a = base;
    op.args.b = base + x_bytes;
    op.args.bias = p.has_bias() ? base + x_bytes + w_bytes : nullptr;
    op.args.out = op.out.data();
    if (p.use_c) {
      // c is a separate input here (ldc = N); in-place accumulation (c = out) is the same kernel.
      op.args.c = base + x_bytes + w_bytes + b_bytes;
      fill_uniform(base + x_bytes + w_bytes + b_bytes, p.out_type, p.m * p.n, seed + 3, -1.0f, 1.0f, nullptr);
    }
    // Representative scalars for the epilogue the problem is keyed by.
    op.args.alpha = p.unit_alpha ? 1.0f : 0.75f;
    op.args.beta = p.use_c ? 0.5f : 0.0f;
    d.sets.push_back(std::move(op));
  }
  if (pad_bytes > 0) return d;
  d.ref = DeviceBuffer(std::max<std::size_t>(static_cast<std::size_t>(p.m * p.n) * sizeof(float), 16));
  GemmArgs ra = d.sets[0].args;
  ra.out = d.ref.data();
  run_reference_gemm(p, ra, DType::kFloat32, p.n, nullptr);
  TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "tune: reference");
  return d;
}

// RaceOptions::short_slots: GPU time of one finalist's replays in a finals round.
constexpr double kShortSlotUs = 25000.0;

// A launcher for the timing helpers (time_graph, time_graphs_interleaved): solution `sol` on
// rotation i of placement `data`'s operand sets.
std::function<void(int, Stream)> rotating_launch(const GemmProblem& p, const RaceData& data, const Solution& sol,
                                                 const Workspace& ws) {
  return [&p, &data, &sol, &ws](int i, Stream gs) {
    sol.run(p, data.sets[static_cast<std::size_t>(i) % data.sets.size()].args, ws, gs);
  };
}

// The accurate stage's timing of one candidate whose screen read est_us: about kAccurateBudgetUs
// of GPU time (launch overhead matters only below ~50 us, so slow kernels get fewer launches),
// between 5 and o.iters replays of 2..o.launches_per_graph launches.
constexpr double kAccurateBudgetUs = 40000.0;
TimingOptions accurate_timing(const TimingOptions& base, double est_us, const RaceOptions& o) {
  const double est = std::max(est_us, 1.0);
  TimingOptions t = base;
  t.launches_per_graph = std::clamp(static_cast<int>(std::ceil(2000.0 / est)), 2, o.launches_per_graph);
  t.replays = std::clamp(static_cast<int>(std::ceil(kAccurateBudgetUs / (est * t.launches_per_graph))), 5, o.iters);
  t.warmup_replays = std::min(o.warmup, std::max(1, t.replays / 3));
  return t;
}

// Two solutions of p timed against each other the way `tgemm bench` compares two paths: two graphs
// of <= 20 launches (~20 ms of GPU time a replay, from est_us), 5 timed replays + 2 warm-up a
// round, `rounds` interleaved rounds; ratio = a's time / b's, the paired estimate.
PairTiming time_pair(const GemmProblem& p, const RaceData& data, const Solution& a, const Solution& b,
                     const Workspace& ws, double est_us, int rounds, bool short_slots) {
  std::vector<std::function<void(int, Stream)>> pair = {rotating_launch(p, data, a, ws), rotating_launch(p, data, b, ws)};
  TimingOptions ct;
  ct.launches_per_graph = std::clamp(static_cast<int>(std::ceil(20000.0 / std::max(est_us, 1.0))), 2, 20);
  ct.replays = 5;
  ct.warmup_replays = 2;
  if (short_slots) {
    // RaceOptions::short_slots: ~6 ms graphs, the rounds scaled so the timed work stays the same
    // (plan_slots with the long graph's launches as its ceiling; at most 60 rounds, never fewer
    // than asked).
    const SlotPlan sp =
        plan_slots(std::max(est_us, 1.0), rounds, 6000.0, 2, ct.launches_per_graph, std::max(60, rounds));
    ct.launches_per_graph = sp.launches_per_graph;
    rounds = sp.rounds;
  }
  std::vector<std::vector<double>> per_round;
  std::vector<TimingStats> st = time_graphs_interleaved(pair, ct, rounds, &per_round);
  return {st[0].median_us, st[1].median_us, paired_ratio(per_round[0], per_round[1])};
}

// Placements 1 .. wanted-1 of p's operands (placement 0 is the caller's), each behind a pad of
// 20, 43, 11, ... MB (distinct, not multiples of each other), all alive together so that each
// lands elsewhere in memory; as many as o.memory_budget holds next to the caller's.
std::vector<RaceData> more_placements(const GemmProblem& p, const RaceOptions& o, const DeviceInfo& dev, int wanted) {
  const std::size_t bytes = std::max<std::size_t>(data_bytes(p, o, dev), 1);
  const auto n = static_cast<int>(
      std::clamp<std::size_t>(o.memory_budget / bytes, 1, static_cast<std::size_t>(std::max(1, wanted))));
  std::vector<RaceData> out;
  for (int j = 1; j < n; ++j) {
    out.push_back(make_data(p, o, dev, static_cast<std::size_t>(3 + (j * 14 + j * j * 3) % 61) << 20));
  }
  return out;
}

// A sticky error (illegal address, ...) poisons the context: the worker must die and be replaced.
void check_context(const std::string& candidate) {
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    cudaGetLastError();
    cudaError_t again = cudaDeviceSynchronize();
    if (again != cudaSuccess) {
      detail::throw_error("tune", "CUDA context lost after ", candidate, ": ", cudaGetErrorString(err),
                          " (sticky; the worker must restart)");
    }
    detail::throw_error("tune", candidate, " failed: ", cudaGetErrorString(err));
  }
}

std::string fmt_count(std::size_t n) { return std::to_string(n) + " finalists"; }

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
};

}  // namespace

double tuner_tolerance(DType out_type) { return out_type == DType::kBFloat16 ? 5e-2 : 1e-2; }

void warm_up_gpu(double seconds) {
  GemmProblem p;
  p.m = p.n = p.k = 4096;
  p.lda = p.ldb = p.k;
  p.ldo = p.n;
  p.device = Runtime::get().platform().current_device();
  std::string why;
  auto s = LtSolution::heuristic(p, why);
  if (!s) return;
  DeviceBuffer a(static_cast<std::size_t>(p.m * p.k) * 2), b(static_cast<std::size_t>(p.n * p.k) * 2),
      c(static_cast<std::size_t>(p.m * p.n) * 2), ws(s->workspace_size(p));
  fill_uniform(a.data(), DType::kBFloat16, p.m * p.k, 1, -1.0f, 1.0f, nullptr);
  fill_uniform(b.data(), DType::kBFloat16, p.n * p.k, 2, -1.0f, 1.0f, nullptr);
  GemmArgs args;
  args.a = a.data();
  args.b = b.data();
  args.out = c.data();
  Workspace w{ws.data(), ws.bytes()};
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
    for (int i = 0; i < 20; ++i) s->run(p, args, w, nullptr);
    TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "warm_up_gpu");
  }
}

bool is_sticky_error(const Error& e) {
  return std::string_view(e.what()).find("sticky") != std::string_view::npos;
}

namespace {

// A candidate that threw: its error is recorded and the race goes on, unless the error is sticky
// (the context is poisoned): then the exception being handled is rethrown. Call only from a
// handler.
void record_failure(CandidateResult& r, const Error& e) {
  r.error = e.what();
  if (is_sticky_error(e)) throw;
}

// The check of one candidate on the race's first operand set: NaN-poisoned output, AITER's
// err_ratio at the tuner tolerance (non-finite or huge errors count as 1.0) and the library's
// strict tolerance.
void check_solution(const GemmProblem& p, const RaceData& data, const Solution& sol, const Workspace& ws,
                    CandidateResult& r) {
  const double tol = tuner_tolerance(p.out_type);
  const Operands& set0 = data.sets[0];
  fill_nan(set0.args.out, p.out_type, p.m * p.n, nullptr);
  sol.run(p, set0.args, ws, nullptr);
  check_context(r.name);
  CompareResult loose = compare_with_reference(set0.args.out, p.out_type, p.n, data.ref.as<float>(), p.n, p.m, p.n,
                                               tol, tol, nullptr);
  bool catastrophic = loose.nonfinite > 0 || loose.max_abs_err > 0.5 * std::max(loose.ref_max_abs, 1.0);
  r.err_ratio =
      catastrophic ? 1.0 : static_cast<double>(loose.bad) / static_cast<double>(std::max<std::int64_t>(loose.checked, 1));
  Tolerance strict = gemm_tolerance(p.out_type, p.k, p.has_bias());
  CompareResult exact = compare_with_reference(set0.args.out, p.out_type, p.n, data.ref.as<float>(), p.n, p.m, p.n,
                                               strict.rtol, strict.atol, nullptr);
  r.strict_ok = exact.bad == 0;
}

// Compute-bound problems (FLOPs per byte above ~128) run their finals in the sustained power
// state and need the larger default margin.
bool is_sustained(const GemmProblem& p) {
  const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  const double bytes = static_cast<double>(dtype_size(p.a_type)) * static_cast<double>(p.m * p.k + p.n * p.k) +
                       static_cast<double>(dtype_size(p.out_type)) * static_cast<double>(p.m * p.n);
  return flops / bytes > 128.0;
}

}  // namespace

std::size_t finalists_for(const GemmProblem& p, const RaceOptions& o) {
  return is_sustained(p) ? o.max_finalists : std::max(o.max_finalists, o.memory_bound_finalists);
}

std::string race_default_name(const GemmProblem& p, const std::vector<std::string>& libtypes) {
  std::string name(kCublasLtHeuristicName);
  SolutionPtr disp = Runtime::get().registry().default_solution(p);
  const bool split_raced = libtypes.empty() || std::find(libtypes.begin(), libtypes.end(), "split") != libtypes.end();
  if (disp != nullptr && disp->libtype() == "split" && split_raced) name = disp->name();
  return name;
}

RaceResult race_problem(const GemmProblem& p, const RaceOptions& o) {
  validate_race_options(o);
  auto t0 = std::chrono::steady_clock::now();
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(p.device);
  RaceResult result;
  RaceData data = make_data(p, o, dev);

  // The race's default, which a winner must beat: cuBLASLt's heuristic (what F.linear runs),
  // except where the dispatcher's own default without a row is the staged erf-GELU path of the
  // split backend (docs/design-choices.md, "Epilogues"); there that path, when it is raced.
  const std::string default_name = race_default_name(p, o.libtypes);

  // Candidates, in backend registration order.
  std::vector<SolutionPtr> solutions;
  std::vector<const Backend*> backends;  // enabled, with their rank
  std::vector<int> ranks;
  std::unordered_set<std::string> names;
  auto add_candidates = [&](std::vector<SolutionPtr> list, int rank) {
    for (SolutionPtr& s : list) {
      if (!s->can_implement(p) || !names.insert(s->name()).second) continue;
      CandidateResult r;
      r.name = s->name();
      r.libtype = std::string(s->libtype());
      r.solidx = s->solidx();
      r.split_k = s->split_k();
      r.backend_rank = rank;
      r.is_default = r.name == default_name;
      if (o.exclude.count(r.name)) r.error = "excluded (hung or crashed in an earlier attempt)";
      result.candidates.push_back(r);
      solutions.push_back(std::move(s));
    }
  };
  int rank = 0;
  for (const auto& backend : rt.registry().backends()) {
    ++rank;
    bool enabled = o.libtypes.empty() ||
                   std::find(o.libtypes.begin(), o.libtypes.end(), std::string(backend->libtype())) != o.libtypes.end();
    if (!enabled) continue;
    backends.push_back(backend.get());
    ranks.push_back(rank);
    add_candidates(backend->candidates(p), rank);
  }
  std::size_t ws_bytes = 0;
  DeviceBuffer ws_buf;
  Workspace ws;
  auto ensure_workspace = [&] {
    for (const auto& sol : solutions) ws_bytes = std::max(ws_bytes, sol->workspace_size(p));
    if (ws_bytes > ws_buf.bytes()) {
      ws_buf = DeviceBuffer(ws_bytes);
      ws = Workspace{ws_buf.data(), ws_buf.bytes()};
    }
  };
  cudaStream_t stream = nullptr;
  TGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "tune");
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } stream_guard{stream};
  auto s = reinterpret_cast<Stream>(stream);
  auto notify = [&](const char* phase, const std::string& name) {
    if (o.on_candidate) o.on_candidate(phase, name);
  };
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };

  // Screen: a first timed launch (errors surface here); kernels faster than kSlowScreenUs get
  // screen_iters more timed launches over the rotations, slower ones are timed by that one run
  // (their launch overhead is negligible and each run costs real tuning time).
  constexpr double kSlowScreenUs = 200.0;
  Timer timer;
  auto screen = [&](std::size_t begin, std::size_t end) {
    ensure_workspace();
    for (std::size_t i = begin; i < end; ++i) {
      CandidateResult& r = result.candidates[i];
      if (!r.error.empty() || !r.same_as.empty()) continue;
      notify("screen", r.name);
      try {
        TGEMM_CUDA_CHECK(cudaEventRecord(timer.a, stream), "tune");
        solutions[i]->run(p, data.sets[0].args, ws, s);
        TGEMM_CUDA_CHECK(cudaEventRecord(timer.b, stream), "tune");
        check_context(r.name);
        float ms = 0;
        TGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, timer.a, timer.b), "tune");
        r.screen_us = ms * 1000.0;
        // A slow first launch of a solution new to this process may be its kernels loading: one
        // more launch, and the faster of the two counts.
        const std::string load_key = screen_load_key(*solutions[i], p);
        if (r.screen_us >= kSlowScreenUs && first_use_in_process(load_key)) {
          TGEMM_CUDA_CHECK(cudaEventRecord(timer.a, stream), "tune");
          solutions[i]->run(p, data.sets[1 % data.sets.size()].args, ws, s);
          TGEMM_CUDA_CHECK(cudaEventRecord(timer.b, stream), "tune");
          check_context(r.name);
          TGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, timer.a, timer.b), "tune");
          r.screen_us = std::min(r.screen_us, ms * 1000.0);
          ++result.rescreened;
        } else {
          first_use_in_process(load_key);
        }
        if (r.screen_us < o.graph_screen_us) {
          const auto graph_t0 = Clock::now();
          TimingOptions g;
          g.launches_per_graph = std::clamp(static_cast<int>(std::ceil(100.0 / std::max(r.screen_us, 1.0))), 2, 8);
          g.warmup_replays = 1;
          g.replays = std::max(1, o.screen_iters);
          const Solution* sol = solutions[i].get();
          r.screen_us = time_graph([&](int it, Stream gs) {
            sol->run(p, data.sets[static_cast<std::size_t>(it + 1) % data.sets.size()].args, ws, gs);
          }, g).median_us;
          check_context(r.name);
          result.screen_graph_seconds += since(graph_t0);
        } else if (r.screen_us < kSlowScreenUs) {
          TGEMM_CUDA_CHECK(cudaEventRecord(timer.a, stream), "tune");
          for (int it = 0; it < o.screen_iters; ++it) {
            solutions[i]->run(p, data.sets[static_cast<std::size_t>(it + 1) % data.sets.size()].args, ws, s);
          }
          TGEMM_CUDA_CHECK(cudaEventRecord(timer.b, stream), "tune");
          check_context(r.name);
          TGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, timer.a, timer.b), "tune");
          r.screen_us = ms * 1000.0 / o.screen_iters;
        }
        ++result.screened;
        r.stage = "screen";
      } catch (const Error& e) {
        record_failure(r, e);
      }
    }
  };
  // Identical launches (dedupe_launches): fingerprints of the candidates from `begin` on, each
  // captured (not run) on the race's first operands and workspace, as the screen runs it.
  std::vector<std::optional<std::string>> fingerprints;
  auto mark_duplicates = [&](std::size_t begin) {
    if (!o.dedupe_launches) return;
    ensure_workspace();
    for (std::size_t i = begin; i < solutions.size(); ++i) {
      const Solution* sol = solutions[i].get();
      fingerprints.push_back(result.candidates[i].error.empty()
                                 ? launch_fingerprint([&](Stream st) { sol->run(p, data.sets[0].args, ws, st); })
                                 : std::nullopt);
    }
    result.same_launches += static_cast<int>(mark_same_launches(result.candidates, fingerprints, begin));
  };
  // Clocks up before the first screen launch: building the candidate list keeps the GPU idle for
  // 0.1-1 s, long enough for its clocks to drop (an idle H200 reads 345 MHz), and a problem's
  // first screened candidates then read 4-7x slow (session 27, one tune's 1x1536x7168: candidates
  // 0-3, the heuristic and three of its top choices, at 48-75 us against 11-15 us in the other
  // tune).
  constexpr double kWarmupSeconds = 0.005;
  auto stage_t0 = Clock::now();
  mark_duplicates(0);
  warm_up_gpu(kWarmupSeconds);
  screen(0, solutions.size());
  // Second stage: each backend refines around its fastest screened candidates.
  for (std::size_t b = 0; b < backends.size(); ++b) {
    std::vector<ScreenedCandidate> mine;
    for (const auto& r : result.candidates) {
      if (r.backend_rank == ranks[b] && r.error.empty() && r.screen_us > 0) mine.push_back({r.name, r.screen_us});
    }
    std::stable_sort(mine.begin(), mine.end(),
                     [](const ScreenedCandidate& a, const ScreenedCandidate& c) { return a.screen_us < c.screen_us; });
    std::size_t before = solutions.size();
    add_candidates(backends[b]->refine(p, mine, RefineOptions{o.refine_bases}), ranks[b]);
    mark_duplicates(before);
    screen(before, solutions.size());
  }
  result.enumerated = static_cast<int>(solutions.size());
  result.screen_seconds = since(stage_t0);
  stage_t0 = Clock::now();

  // Accurate timing of the leaders, then the correctness check of each timed candidate.
  TimingOptions base_topt;
  base_topt.launches_per_graph = o.launches_per_graph;
  base_topt.warmup_replays = o.warmup;
  base_topt.replays = o.iters;
  auto time_accurate = [&](std::size_t idx) {
    return time_graph(rotating_launch(p, data, *solutions[idx], ws),
                      accurate_timing(base_topt, result.candidates[idx].screen_us, o));
  };
  // The correctness check of one accurately timed candidate (RaceOptions::check_all).
  auto check_one = [&](std::size_t idx) {
    CandidateResult& r = result.candidates[idx];
    notify("check", r.name);
    const auto check_t0 = Clock::now();
    check_solution(p, data, *solutions[idx], ws, r);
    result.check_seconds += since(check_t0);
  };
  // Without check_all: the non-default candidates in order of accurate time (ties by the fixed
  // order), each checked until `want` have passed, or, once at least the finals' contenders and
  // the confirmation's tries have passed, until the next is slower than any finalist can be:
  // select_finalists takes passing candidates within final_margin of the winner, and the winner
  // is within the tie band of the fastest passing candidate or is the default.
  const bool sustained = is_sustained(p);
  const std::size_t max_finalists = finalists_for(p, o);
  auto check_contenders = [&](const std::vector<std::size_t>& timed) {
    double default_us = -1;
    std::vector<std::size_t> order;
    for (std::size_t idx : timed) {
      const CandidateResult& r = result.candidates[idx];
      if (!r.error.empty() || r.us <= 0) continue;
      if (r.is_default) default_us = r.us;
      else order.push_back(idx);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const CandidateResult &ra = result.candidates[a], &rb = result.candidates[b];
      if (ra.us != rb.us) return ra.us < rb.us;
      return tie_order_less(ra, rb);
    });
    const std::size_t tries = static_cast<std::size_t>(std::max(1, o.confirm_tries));
    const std::size_t floor_count = std::max(o.final_contenders, tries);
    const std::size_t want = std::max(max_finalists, floor_count);
    std::size_t passed = 0;
    double window = -1;
    for (std::size_t idx : order) {
      CandidateResult& r = result.candidates[idx];
      if (passed >= want) break;
      if (window > 0 && r.us > window && passed >= floor_count) break;
      try {
        check_one(idx);
      } catch (const Error& e) {
        record_failure(r, e);
        continue;
      }
      if (!passes_checks(r, o.select)) continue;
      if (window < 0) window = std::max(r.us * (1.0 + o.select.tie_band), default_us) * (1.0 + o.final_margin);
      ++passed;
    }
  };
  std::vector<std::size_t> accurate = select_for_accurate(result.candidates, o.select);
  // The library default is always timed: it is what the winner is compared with.
  for (std::size_t i = 0; i < result.candidates.size(); ++i) {
    const CandidateResult& r = result.candidates[i];
    if (r.is_default && r.error.empty() && r.screen_us > 0 &&
        std::find(accurate.begin(), accurate.end(), i) == accurate.end()) {
      accurate.push_back(i);
    }
  }
  auto accurate_alone = [&](std::size_t idx) {
    CandidateResult& r = result.candidates[idx];
    notify("accurate", r.name);
    try {
      TimingStats st = time_accurate(idx);
      r.us = st.median_us;
      r.accurate_us = st.median_us;
      r.spread = st.median_us > 0 ? (st.p90_us - st.p10_us) / st.median_us : 0;
      ++result.accurate;
      r.stage = "accurate";
      if (o.check_all || r.is_default) check_one(idx);
    } catch (const Error& e) {
      record_failure(r, e);
    }
  };
  // RaceOptions::accurate_block: the default timed alone first, then the others in blocks of
  // accurate_block, each block interleaved with the default over kAccurateRounds rounds; a
  // candidate's accurate time is the default's times the median over rounds of its ratio to the
  // default in the same round. A block that fails (one candidate's capture or launch) is timed
  // candidate by candidate instead, so the failure is recorded against the candidate.
  auto accurate_blocks = [&](std::size_t def_idx, const std::vector<std::size_t>& rest) {
    constexpr int kAccurateRounds = 3;
    const double def_us = result.candidates[def_idx].us;
    const auto block = static_cast<std::size_t>(o.accurate_block);
    for (std::size_t b = 0; b < rest.size(); b += block) {
      const std::vector<std::size_t> members(rest.begin() + static_cast<std::ptrdiff_t>(b),
                                             rest.begin() + static_cast<std::ptrdiff_t>(std::min(rest.size(), b + block)));
      double slowest = std::max(result.candidates[def_idx].screen_us, 1.0);
      std::vector<std::function<void(int, Stream)>> launchers = {rotating_launch(p, data, *solutions[def_idx], ws)};
      for (std::size_t idx : members) {
        slowest = std::max(slowest, result.candidates[idx].screen_us);
        launchers.push_back(rotating_launch(p, data, *solutions[idx], ws));
      }
      notify("accurate", result.candidates[members.front()].name);
      // The replays a candidate gets alone (time_accurate), spread over the rounds: the iters cap
      // applies to the total, not to each round (session 29's first run capped each round and
      // doubled the stage's GPU time).
      TimingOptions topt = accurate_timing(base_topt, slowest, o);
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
        for (std::size_t idx : members) accurate_alone(idx);
        continue;
      }
      for (std::size_t q = 0; q < members.size(); ++q) {
        CandidateResult& r = result.candidates[members[q]];
        const double ratio = paired_ratio(per_round[q + 1], per_round[0]);
        const TimingStats& s = st[q + 1];
        r.us = ratio > 0 ? def_us * ratio : s.median_us;
        r.accurate_us = r.us;
        r.spread = s.median_us > 0 ? (s.p90_us - s.p10_us) / s.median_us : 0;
        ++result.accurate;
        r.stage = "accurate";
        if (o.check_all) {
          try {
            check_one(members[q]);
          } catch (const Error& e) {
            record_failure(r, e);
          }
        }
      }
    }
  };
  const auto def_in_accurate = std::find_if(accurate.begin(), accurate.end(),
                                            [&](std::size_t i) { return result.candidates[i].is_default; });
  if (o.accurate_block > 0 && def_in_accurate != accurate.end()) {
    const std::size_t def_idx = *def_in_accurate;
    accurate_alone(def_idx);
    std::vector<std::size_t> rest;
    for (std::size_t idx : accurate)
      if (idx != def_idx) rest.push_back(idx);
    if (result.candidates[def_idx].error.empty() && result.candidates[def_idx].us > 0) {
      accurate_blocks(def_idx, rest);
    } else {
      for (std::size_t idx : rest) accurate_alone(idx);
    }
  } else {
    for (std::size_t idx : accurate) accurate_alone(idx);
  }
  if (!o.check_all) check_contenders(accurate);
  // Final: the passing candidates near the fastest are re-timed in interleaved rounds (A B C, A B
  // C, ...) so slow drifts of clock or temperature hit all of them alike; each keeps the median of
  // its accurate time and the rounds. This is what makes two tunes pick the same row.
  result.accurate_seconds = since(stage_t0);
  stage_t0 = Clock::now();
  // Placements beyond the race's (finals with final_placements > 1, the confirmation): made once,
  // on first use, as many as the larger of the two asks and the memory budget allows.
  std::vector<RaceData> extra;
  bool extra_made = false;
  auto make_extra = [&] {
    if (extra_made) return;
    extra = more_placements(p, o, dev, std::max(o.final_placements, o.confirm_placements));
    extra_made = true;
  };
  auto placement = [&](int j) -> const RaceData& { return j == 0 ? data : extra[static_cast<std::size_t>(j - 1)]; };
  SelectOptions select = o.select;
  if (sustained) select.default_margin = std::max(select.default_margin, o.sustained_default_margin);
  // RaceOptions::sustained_confirm_all: a compute-bound problem's finalists go to the
  // confirmation (confirm_tries of them) instead of the finals.
  const bool confirm_all = sustained && o.sustained_confirm_all && o.confirm_rounds > 0;
  std::vector<std::size_t> confirm_pool;
  {
    int first = select_winner(result.candidates, o.select);
    if (first >= 0) {
      const double best = result.candidates[static_cast<std::size_t>(first)].us;
      const std::vector<std::size_t> finalists =
          select_finalists(result.candidates, best, o.final_margin, max_finalists, o.final_contenders, o.select);
      if (confirm_all) {
        for (std::size_t idx : finalists) {
          if (!result.candidates[idx].is_default) confirm_pool.push_back(idx);
        }
      } else if (finalists.size() > 1) {
        double slowest = 0;
        for (std::size_t idx : finalists) slowest = std::max(slowest, result.candidates[idx].us);
        // The finalists' launchers on placement pd's operands, in the order `order` (positions
        // into finalists).
        auto launchers_on = [&](const RaceData& pd, const std::vector<std::size_t>& order) {
          std::vector<std::function<void(int, Stream)>> launchers;
          for (std::size_t f : order) launchers.push_back(rotating_launch(p, pd, *solutions[finalists[f]], ws));
          return launchers;
        };
        notify("final", fmt_count(finalists.size()));
        TimingOptions topt = base_topt;
        topt.launches_per_graph = std::clamp(static_cast<int>(std::ceil(2000.0 / slowest)), 2, o.launches_per_graph);
        // ~30 ms of GPU time per candidate and round (rounds follow each other without pauses);
        // compute-bound problems get longer rounds after a warm-up, in the sustained power state
        // a deployment sees.
        const double round_us = sustained ? o.sustained_round_ms * 1000.0 : 30000.0;
        topt.replays = std::clamp(static_cast<int>(std::ceil(round_us / (slowest * topt.launches_per_graph))), 3,
                                  sustained ? 40 : 10);
        topt.warmup_replays = 1;
        int final_rounds = o.final_rounds;
        if (o.short_slots && topt.replays > 3) {
          // RaceOptions::short_slots: a candidate's slot in a round cut to ~kShortSlotUs, the
          // rounds scaled so each finalist's timed work stays the same.
          const int long_replays = topt.replays;
          topt.replays = std::clamp(static_cast<int>(std::ceil(kShortSlotUs / (slowest * topt.launches_per_graph))), 3,
                                    long_replays);
          final_rounds = std::min(60, (o.final_rounds * long_replays + topt.replays - 1) / topt.replays);
        }
        if (sustained) {
          for (std::size_t idx : finalists) {
            if (!result.candidates[idx].is_default) continue;
            const Solution* def = solutions[idx].get();
            auto t0 = std::chrono::steady_clock::now();
            while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
                   o.sustained_warmup_ms) {
              for (int i = 0; i < 8; ++i) def->run(p, data.sets[static_cast<std::size_t>(i) % data.sets.size()].args, ws, s);
              check_context(result.candidates[idx].name);
            }
          }
        }
        try {
          int nplace = 1;
          if (o.final_placements > 1) {
            make_extra();
            nplace = std::min(o.final_placements, 1 + static_cast<int>(extra.size()));
          }
          const int rounds_each = nplace > 1 ? std::max(1, (final_rounds + nplace - 1) / nplace) : final_rounds;
          // per_round[f]: finalist f's median in each round, the placements' rounds one after another.
          std::vector<std::vector<double>> per_round(finalists.size());
          std::vector<double> median_us(finalists.size());
          for (int j = 0; j < nplace; ++j) {
            // Within a call the order reverses on odd rounds; with an odd number of rounds per
            // placement it also reverses on odd placements, so no finalist always runs first.
            std::vector<std::size_t> order(finalists.size());
            for (std::size_t f = 0; f < order.size(); ++f) order[f] = f;
            if (j % 2 == 1 && rounds_each % 2 == 1) std::reverse(order.begin(), order.end());
            std::vector<std::vector<double>> pr;
            std::vector<TimingStats> st =
                time_graphs_interleaved(launchers_on(placement(j), order), topt, rounds_each, &pr);
            for (std::size_t q = 0; q < order.size(); ++q) {
              const std::size_t f = order[q];
              per_round[f].insert(per_round[f].end(), pr[q].begin(), pr[q].end());
              median_us[f] = st[q].median_us;
            }
          }
          if (nplace > 1) {
            for (std::size_t f = 0; f < finalists.size(); ++f) median_us[f] = median(per_round[f]);
          }
          result.final_placements = nplace;
          // Ranked on the paired estimate against the default (the bench's and the confirmation's):
          // a finalist's time is the default's median times the median over rounds (of every
          // placement) of its ratio to the default in the same round, so drift between rounds does
          // not reorder near-ties.
          std::size_t def_f = finalists.size();
          for (std::size_t f = 0; f < finalists.size(); ++f)
            if (result.candidates[finalists[f]].is_default) def_f = f;
          for (std::size_t f = 0; f < finalists.size(); ++f) {
            CandidateResult& fr = result.candidates[finalists[f]];
            double us = median_us[f];
            if (def_f < finalists.size() && f != def_f) {
              const double ratio = paired_ratio(per_round[f], per_round[def_f]);
              if (ratio > 0) us = median_us[def_f] * ratio;
              fr.final_ratio = ratio;
            } else if (f == def_f) {
              fr.final_ratio = 1.0;
            }
            fr.us = us;
            fr.stage = "final";
          }
          // The winner and the candidates confirmed come from the finals: the others' accurate
          // times are on another scale (CandidateResult::beyond_finals).
          std::vector<bool> in_finals(result.candidates.size(), false);
          for (std::size_t idx : finalists) in_finals[idx] = true;
          for (std::size_t i = 0; i < result.candidates.size(); ++i) {
            if (!in_finals[i] && result.candidates[i].us > 0) result.candidates[i].beyond_finals = true;
          }
        } catch (const Error& e) {
          if (is_sticky_error(e)) throw;
          // Keep the accurate-phase times: they were measured and checked.
        }
      }
    }
  }
  result.finals_seconds = since(stage_t0);
  stage_t0 = Clock::now();
  result.winner = select_winner(result.candidates, select);
  // Confirmation against the default under the bench's conditions: finals of many candidates in
  // long rounds measured compute-bound winners up to ~15% faster than `tgemm bench` then saw them
  // (docs/perf-notes.md, "tuner"), so a winner must also win this paired comparison. It runs on
  // several placements of the operands (the race's and fresh allocations behind pads of other
  // sizes): some cuBLASLt configurations are bimodal, 3-15% slower on one placement in five while
  // the default is not (docs/perf-notes.md, "placement study"). A candidate is kept only if it
  // beats the default by the margin at the median and loses on no placement; else the next
  // finalist is tried (confirm_tries in all), else the default is kept.
  int def = -1;
  for (std::size_t i = 0; i < result.candidates.size(); ++i) {
    const CandidateResult& r = result.candidates[i];
    if (r.is_default && r.error.empty() && r.us > 0) def = static_cast<int>(i);
  }
  if (o.confirm_rounds > 0 && result.winner >= 0 && def >= 0 &&
      (result.winner != def || !confirm_pool.empty() || o.confirm_near_default)) {
    const auto d = static_cast<std::size_t>(def);
    const double margin = std::max(o.confirm_margin, select.default_margin);
    const bool keep_best = o.confirm_best || confirm_all;
    // Who may be confirmed: the winner, then the other passing finalists, fastest first; with
    // sustained_confirm_all, the finalists of the accurate stage that passed their checks, fastest
    // first by accurate time, confirm_tries of them (each costs a confirmation: ~0.8 s at
    // M >= 512 in session 15, so all 6 finalists of 48 problems would add ~3 minutes a tune).
    std::vector<std::size_t> tries, order;
    if (confirm_all) {
      for (std::size_t i : confirm_pool) {
        if (passes_checks(result.candidates[i], o.select)) order.push_back(i);
      }
    } else {
      // The winner first, unless it is the default (confirm_near_default: only its rivals).
      if (result.winner != def) tries.push_back(static_cast<std::size_t>(result.winner));
      for (std::size_t i = 0; i < result.candidates.size(); ++i) {
        const CandidateResult& r = result.candidates[i];
        if (i != d && static_cast<int>(i) != result.winner && passes_checks(r, o.select) &&
            r.us <= result.candidates[d].us) {
          order.push_back(i);
        }
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return result.candidates[a].us < result.candidates[b].us;
    });
    for (std::size_t i : order) {
      if (tries.size() >= static_cast<std::size_t>(std::max(1, o.confirm_tries))) break;
      tries.push_back(i);
    }
    // Placements: the race's data, then fresh ones as far as the memory budget allows.
    result.winner = def;
    try {
      make_extra();
      const int placements = std::min(std::max(1, o.confirm_placements), 1 + static_cast<int>(extra.size()));
      struct Confirmed {
        std::size_t idx;
        double ratio, min_ratio, def_us, win_us;
      };
      std::vector<Confirmed> passed;
      for (std::size_t w : tries) {
        notify("confirm", result.candidates[w].name);
        const double est = std::max(result.candidates[w].us, result.candidates[d].us);
        std::vector<double> ratios, def_us, win_us;
        bool lost = false;
        for (int j = 0; j < placements && !lost; ++j) {
          const PairTiming t =
              time_pair(p, placement(j), *solutions[d], *solutions[w], ws, est, o.confirm_rounds, o.short_slots);
          ratios.push_back(t.ratio);
          def_us.push_back(t.a_us);
          win_us.push_back(t.b_us);
          lost = loses_placement(t.ratio, o.placement_tolerance);
        }
        ++result.confirm_tried;
        result.confirm_ratio = median(ratios);
        result.candidates[w].stage = "confirm";
        result.candidates[w].confirm_ratio = result.confirm_ratio;
        result.confirm_min_ratio = *std::min_element(ratios.begin(), ratios.end());
        result.confirm_placements = static_cast<int>(ratios.size());
        result.confirm_default_us = median(def_us);
        result.confirm_winner_us = median(win_us);
        result.confirmed =
            passes_confirmation(result.confirm_ratio, result.confirm_min_ratio, margin, o.placement_tolerance);
        if (result.confirmed) {
          passed.push_back({w, result.confirm_ratio, result.confirm_min_ratio, result.confirm_default_us,
                            result.confirm_winner_us});
          if (!keep_best) break;
        }
      }
      if (!passed.empty()) {
        // The first that passed; with confirm_best, the best median ratio among those that
        // passed, near-ties (within the tie band) resolved by the fixed tie order.
        std::size_t k = 0;
        if (keep_best) {
          double best = 0;
          for (const Confirmed& c : passed) best = std::max(best, c.ratio);
          bool have = false;
          for (std::size_t i = 0; i < passed.size(); ++i) {
            if (passed[i].ratio * (1.0 + o.select.tie_band) < best) continue;
            if (!have || tie_order_less(result.candidates[passed[i].idx], result.candidates[passed[k].idx])) k = i;
            have = true;
          }
        }
        const Confirmed& c = passed[k];
        result.winner = static_cast<int>(c.idx);
        result.confirmed = true;
        result.confirm_ratio = c.ratio;
        result.confirm_min_ratio = c.min_ratio;
        result.confirm_default_us = c.def_us;
        result.confirm_winner_us = c.win_us;
        result.candidates[d].us = c.def_us;
        result.candidates[c.idx].us = c.win_us;
      }
    } catch (const Error& e) {
      if (is_sticky_error(e)) throw;
      result.winner = def;  // unconfirmed: keep the default
      result.confirmed = false;
    }
  }
  result.confirm_seconds = since(stage_t0);
  // The default for comparison: cuBLASLt's heuristic if it was timed.
  for (const auto& r : result.candidates) {
    if (r.is_default && r.us > 0) result.default_us = r.us;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
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
  data.push_back(make_data(p, o, dev));
  for (RaceData& d : more_placements(p, o, dev, placements)) data.push_back(std::move(d));
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

Reconfirmation reconfirm_row(const GemmProblem& p, const Solution& row, const RaceOptions& o) {
  if (row.name() == race_default_name(p, o.libtypes)) {
    Reconfirmation r;
    r.default_name = row.name();
    return r;
  }
  return reconfirm_rows(p, {&row}, o, race_default_solution(p, o)).front();
}

std::vector<Reconfirmation> reconfirm_rows(const GemmProblem& p, const std::vector<const Solution*>& rows,
                                           const RaceOptions& o, SolutionPtr default_solution) {
  TGEMM_CHECK(default_solution != nullptr, "reconfirm", "default_solution must not be null");
  std::vector<Reconfirmation> out(rows.size());
  std::vector<const Solution*> timed;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    TGEMM_CHECK(rows[i] != nullptr, "reconfirm", "a row's solution must not be null");
    out[i].default_name = default_solution->name();
    if (rows[i]->name() != out[i].default_name) timed.push_back(rows[i]);
  }
  if (timed.empty()) return out;  // every row the default: kept without timing
  // The race's confirmation rule (RaceOptions::confirm_*): not slower on any placement (beyond
  // RaceOptions::placement_tolerance), faster than the default by the margin in the median.
  const double margin =
      std::max({o.confirm_margin, o.select.default_margin, is_sustained(p) ? o.sustained_default_margin : 0.0});
  const std::vector<PairTiming> timings = time_solutions_against(
      p, *default_solution, timed, o, std::max(1, o.confirm_rounds), std::max(1, o.confirm_placements));
  bool any_lost = false;
  for (std::size_t i = 0, t = 0; i < rows.size(); ++i) {
    Reconfirmation& r = out[i];
    if (rows[i]->name() == r.default_name) continue;
    r.default_solution = default_solution;
    r.margin = margin;
    r.timing = timings[t++];
    r.kept = passes_confirmation(r.timing.ratio, r.timing.min_ratio, r.margin, o.placement_tolerance);
    any_lost = any_lost || !r.kept;
  }
  if (any_lost) {
    // The default checked against the fp32 reference (as the race checks), for a revert.
    Runtime& rt = Runtime::get();
    const DeviceInfo& dev = rt.platform().device_info(p.device);
    const RaceData data = make_data(p, o, dev);
    DeviceBuffer ws_buf(std::max<std::size_t>(default_solution->workspace_size(p), 256));
    CandidateResult c;
    c.name = default_solution->name();
    check_solution(p, data, *default_solution, Workspace{ws_buf.data(), ws_buf.bytes()}, c);
    for (Reconfirmation& r : out) {
      if (r.default_solution != nullptr && !r.kept) {
        r.default_err_ratio = c.err_ratio;
        r.default_strict_ok = c.strict_ok;
      }
    }
  }
  return out;
}

}  // namespace tgemm
