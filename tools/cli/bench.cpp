#include "tools/cli/bench.h"

#include <cuda_runtime.h>
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/reference/reference_backend.h"
#include "backends/split/split_backend.h"
#include "core/m_grid.h"
#include "core/settings.h"
#include "core/validate.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"
#include "tgemm/tgemm.h"
#include "tools/cli/common.h"
#include "tuner/data.h"
#include "tuner/race.h"
#include "tuner/select.h"

namespace tgemm::cli {
namespace {

using json = nlohmann::json;

constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t v, std::size_t q) { return (v + q - 1) / q * q; }

// One rotation of a problem's operands: w and x share one allocation ([w | x]) so the floor
// kernel reads exactly the GEMM's input bytes in one pass.
struct RotationSet {
  DeviceBuffer wx, out;
  TensorView xv, wv, ov;
};

struct ProblemData {
  std::vector<RotationSet> sets;
  DeviceBuffer bias;
  TensorView bv;
  std::size_t input_bytes = 0;  // w + x
  Activation activation = Activation::kNone;
  GemmOptions options(bool with_bias) const {
    GemmOptions o;
    if (with_bias) o.bias = &bv;
    o.activation = activation;
    return o;
  }
};

// The weight's range: U(-1, 1) ("unit", the default: a GEMM's outputs then have a standard
// deviation of ~sqrt(K / 9), 21-53 over the suite, so an activation epilogue sees mostly saturated
// inputs), or U(-3 / sqrt(K), 3 / sqrt(K)) ("fan_in": outputs ~ unit variance, as
// bench/torch_bench.py's N(0, 1 / K) weights give and a model's pre-activations are). The data
// are one reason the Python bench times the same fused GELU kernels 4-7% slower than this bench.
float weight_range(const std::string& data, std::int64_t k) {
  return data == "fan_in" ? 3.0f / std::sqrt(static_cast<float>(std::max<std::int64_t>(k, 1))) : 1.0f;
}

ProblemData make_problem(std::int64_t m, std::int64_t n, std::int64_t k, DType in, DType out,
                         bool bias, std::size_t l2, std::size_t budget, std::uint64_t seed, float w_range = 1.0f) {
  ProblemData d;
  std::size_t es = dtype_size(in);
  std::size_t w_bytes = round_up(static_cast<std::size_t>(n * k) * es, kAlign);
  std::size_t x_bytes = static_cast<std::size_t>(m * k) * es;
  std::size_t out_bytes = static_cast<std::size_t>(m * n) * dtype_size(out);
  d.input_bytes = static_cast<std::size_t>(n * k) * es + x_bytes;
  int sets = rotation_count(w_bytes + x_bytes + out_bytes, l2, 3.0, 64, budget);
  for (int i = 0; i < sets; ++i) {
    RotationSet s;
    s.wx = DeviceBuffer(w_bytes + round_up(x_bytes, kAlign));
    s.out = DeviceBuffer(std::max<std::size_t>(out_bytes, 16));
    void* x = static_cast<char*>(s.wx.data()) + w_bytes;
    fill_uniform(s.wx.data(), in, n * k, seed * 1000 + static_cast<std::uint64_t>(i) * 2, -w_range, w_range, nullptr);
    fill_uniform(x, in, m * k, seed * 1000 + static_cast<std::uint64_t>(i) * 2 + 1, -1.0f, 1.0f, nullptr);
    s.wv = TensorView::contiguous(s.wx.data(), in, {n, k});
    s.xv = TensorView::contiguous(x, in, {m, k});
    s.ov = TensorView::contiguous(s.out.data(), out, {m, n});
    d.sets.push_back(std::move(s));
  }
  if (bias) {
    d.bias = DeviceBuffer(static_cast<std::size_t>(n) * es);
    fill_uniform(d.bias.data(), in, n, seed * 1000 + 999, -1.0f, 1.0f, nullptr);
    d.bv = TensorView::contiguous(d.bias.data(), in, {n});
  }
  return d;
}

TimingOptions timing_options(int replays) {
  TimingOptions o;
  o.replays = replays;
  o.launches_per_graph = 20;
  o.warmup_replays = 3;
  return o;
}

// Streaming-read floor: the fastest of a few launch shapes reading the problem's input bytes.
double floor_us(const ProblemData& d, int sm_count, int replays, void* sink) {
  double best = 1e30;
  for (int waves : {2, 4, 8, 16, 32}) {
    for (int threads : {256, 512}) {
      TimingStats st = time_graph([&](int i, Stream s) {
        const RotationSet& r = d.sets[static_cast<std::size_t>(i) % d.sets.size()];
        stream_read(r.wx.data(), round_up(d.input_bytes, 16) , sm_count * waves, threads, sink, s);
      }, timing_options(replays));
      best = std::min(best, st.median_us);
    }
  }
  return best;
}

double spread(const TimingStats& st) { return st.median_us > 0 ? (st.p90_us - st.p10_us) / st.median_us : 0; }

int run_overhead(const BenchOptions& o) {
  // Host cost per call of tgemm dispatch vs cublasLtMatmul with the same algorithm, on a tiny
  // problem. Enqueue loops are timed on the host; the stream is drained between rounds so the
  // launch queue never fills (a full queue would time the GPU instead).
  const std::int64_t m = 64, n = 64, k = 64;
  ProblemData d = make_problem(m, n, k, DType::kBFloat16, DType::kBFloat16, false, 0, 1ull << 30, 7);
  const RotationSet& r = d.sets[0];
  GemmCall call = validate_a16w16(r.xv, r.wv, r.ov, {});
  GemmProblem p = call.problem;
  p.device = Runtime::get().platform().current_device();
  const Resolution& res = Runtime::get().dispatcher().resolve(p);
  auto lt = std::dynamic_pointer_cast<const LtSolution>(res.solution);
  TGEMM_CHECK(lt != nullptr, "tgemm bench --overhead", "the tiny problem resolved to ",
              res.solution->name(), ", not a cuBLASLt solution; run without tables that route it elsewhere");
  cudaStream_t stream = nullptr;
  TGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "bench");
  auto s = reinterpret_cast<Stream>(stream);
  Workspace ws = Runtime::get().workspaces().get(p.device, s, lt->workspace_size(p));
  const float alpha = 1.0f, beta = 0.0f;
  auto direct = [&] {
    TGEMM_CUBLAS_CHECK(cublasLtMatmul(lt->handle(), lt->desc(), &alpha, call.args.b, lt->layout_a(),
                                      call.args.a, lt->layout_b(), &beta, call.args.out, lt->layout_c(),
                                      call.args.out, lt->layout_d(), &lt->algo(), ws.data, ws.bytes, stream),
                       "bench");
  };
  auto via_tgemm = [&] { gemm_a16w16(r.xv, r.wv, r.ov, {}, s); };
  constexpr int kBatch = 128;
  const int rounds = std::max(1, o.overhead_calls / kBatch);
  std::vector<double> t_direct, t_tgemm;
  auto time_batch = [&](auto&& f) {
    TGEMM_CUDA_CHECK(cudaStreamSynchronize(stream), "bench");
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / kBatch;
  };
  for (int i = 0; i < 20; ++i) {  // warm-up
    time_batch(direct);
    time_batch(via_tgemm);
  }
  for (int i = 0; i < rounds; ++i) {
    t_direct.push_back(time_batch(direct));
    t_tgemm.push_back(time_batch(via_tgemm));
  }
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(stream), "bench");
  cudaStreamDestroy(stream);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double md = median(t_direct), mt = median(t_tgemm);
  fmt::print("dispatch overhead ({} calls each, batches of {}, M=N=K=64 bf16, algorithm {}):\n",
             rounds * kBatch, kBatch, lt->name());
  fmt::print("  cublasLtMatmul direct : {:.3f} us/call (median of batches)\n", md);
  fmt::print("  tgemm::gemm_a16w16    : {:.3f} us/call\n", mt);
  fmt::print("  overhead              : {:.3f} us/call\n", mt - md);
  if (o.json != "-") {
    const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
    const std::string path = o.json.empty() ? "bench/results/overhead-" + card_slug(dev.name) + ".json" : o.json;
    json j = {{"command", o.command},
              {"device", dev.name},
              {"sm_count", dev.sm_count},
              {"commit", current_commit()},
              {"date", iso_date()},
              {"calls", rounds * kBatch},
              {"direct_us", md},
              {"tgemm_us", mt},
              {"dispatch_overhead_us", mt - md}};
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << j.dump(2) << "\n";
    fmt::print("wrote {}\n", path);
  }
  return 0;
}


// What every problem of a suite run shares.
struct BenchRun {
  const BenchOptions& o;
  const DeviceInfo& dev;
  int device = 0;
  DType in = DType::kBFloat16, out = DType::kBFloat16;
  Activation activation = Activation::kNone;
  std::size_t budget = 0;
  void* sink = nullptr;
};

// The suite's summary figures.
struct BenchTotals {
  double log_sum = 0, min_speedup = 1e30;
  int count = 0, below = 0, wrong = 0, remeasured = 0;
};

// The baseline is what F.linear runs: cuBLASLt's heuristic with PyTorch's default settings; with
// --epilogue, that GEMM followed by the activation as a separate pass over out (what
// F.gelu(F.linear(...)) does), both from tgemm.
struct Baseline {
  GemmProblem plain;
  SolutionPtr solution;
  std::shared_ptr<const LtSolution> lt;
  DeviceBuffer ws_buf;
  Workspace ws;
};

GemmArgs args_of(const ProblemData& d, const RotationSet& r, bool bias) {
  GemmArgs a;
  a.a = r.xv.data;
  a.b = r.wv.data;
  a.out = r.ov.data;
  a.bias = bias ? d.bv.data : nullptr;
  return a;
}

void run_baseline(const BenchRun& run, Baseline& base, const ProblemData& d, const RotationSet& r, Stream s) {
  base.solution->run(base.plain, args_of(d, r, run.o.bias), base.ws, s);
  if (run.activation == Activation::kNone) return;
  // The activation over the baseline's output, its bias already added by cuBLASLt.
  GemmProblem act_pass = base.plain;
  act_pass.activation = run.activation;
  act_pass.epilogue = Epilogue::kNone;
  epilogue_rows(gemm_epilogue(act_pass, args_of(d, r, run.o.bias), ProductAt::kOut), s);
}

// tgemm's output against the fp32 reference at the library's tolerance: "ok" or "<n> bad".
std::string check_output(const BenchRun& run, const ProblemData& d, const GemmProblem& p, BenchTotals& totals) {
  const RotationSet& r0 = d.sets[0];
  DeviceBuffer ref(static_cast<std::size_t>(p.m * p.n) * sizeof(float));
  fill_nan(r0.ov.data, run.out, p.m * p.n, nullptr);
  gemm_a16w16(r0.xv, r0.wv, r0.ov, d.options(run.o.bias), nullptr);
  GemmArgs ra = args_of(d, r0, run.o.bias);
  ra.out = ref.data();
  run_reference_gemm(p, ra, DType::kFloat32, p.n, nullptr);
  Tolerance tol = gemm_tolerance(run.out, p.k, run.o.bias);
  CompareResult cr =
      compare_with_reference(r0.ov.data, run.out, p.n, ref.as<float>(), p.n, p.m, p.n, tol.rtol, tol.atol, nullptr);
  if (cr.bad != 0) ++totals.wrong;
  return cr.bad == 0 ? "ok" : fmt::format("{} bad", cr.bad);
}

// Baseline and tgemm interleaved over rounds, so clock/power drift under sustained load does not
// favour whichever runs first. Speedup: the paired estimate (median over rounds of the two
// back-to-back medians' ratio), so clock drift between rounds cancels; the pooled medians are
// reported as times. Fills the row's timing fields.
void time_both(const BenchRun& run, Baseline& base, const ProblemData& d, double est_us, json& row,
               std::vector<TimingStats>& both) {
  const BenchOptions& o = run.o;
  TimingOptions topt = timing_options(o.replays);
  topt.replays = std::max(3, o.replays / 5);
  topt.warmup_replays = 2;
  topt.shared_stream = o.timing == "shared";
  topt.recapture = o.timing == "recapture";
  topt.settle_rounds = o.settle_rounds;
  topt.shuffle_order = o.shuffle;
  const SlotPlan plan = plan_slots(est_us, o.rounds > 0 ? o.rounds : 10);
  // At least one call per rotation set, so a graph's calls still cycle through all of them.
  topt.launches_per_graph =
      o.launches > 0 ? o.launches : std::max(plan.launches_per_graph, static_cast<int>(d.sets.size()));
  const int rounds = o.rounds > 0 ? o.rounds : plan.rounds;
  auto dispatch = [&](const RotationSet& r, Stream s) { gemm_a16w16(r.xv, r.wv, r.ov, d.options(o.bias), s); };
  std::vector<std::vector<double>> per_round;
  both = time_graphs_interleaved(
      {[&](int i, Stream s) {
         const RotationSet& r = d.sets[static_cast<std::size_t>(i) % d.sets.size()];
         if (o.aa == "dispatch") dispatch(r, s);
         else run_baseline(run, base, d, r, s);
       },
       [&](int i, Stream s) {
         const RotationSet& r = d.sets[static_cast<std::size_t>(i) % d.sets.size()];
         if (o.aa == "baseline") run_baseline(run, base, d, r, s);
         else dispatch(r, s);
       }},
      topt, rounds, &per_round);
  const TimingStats& tb = both[0];
  const TimingStats& tt = both[1];
  row["baseline_us"] = tb.median_us;
  row["baseline_spread"] = spread(tb);
  row["tgemm_us"] = tt.median_us;
  row["tgemm_spread"] = spread(tt);
  row["speedup"] = paired_ratio(per_round[0], per_round[1]);
  row["speedup_of_medians"] = tb.median_us / tt.median_us;
  row["rounds"] = rounds;
  row["launches"] = topt.launches_per_graph;
  // Each round's two medians, in round order (odd rounds ran tgemm first), so an order or drift
  // effect shows.
  row["round_baseline_us"] = per_round[0];
  row["round_tgemm_us"] = per_round[1];
}

// The cuBLASLt configurations behind the baseline and (when cuBLASLt runs it) tgemm's row, so a
// "cublaslt:heuristic" row shows whether it is the baseline's algorithm: tgemm's own heuristic
// query excludes split-K reductions in the 16-bit output, PyTorch's does not.
void algo_fields(const GemmProblem& p, const Baseline& base, json& row) {
  row["baseline_algo"] = format_lt_name(base.lt->chosen_config());
  row["baseline_workspace"] = base.ws_buf.bytes();
  const SolutionPtr chosen = Runtime::get().dispatcher().resolve(p).solution;
  if (auto lt = std::dynamic_pointer_cast<const LtSolution>(chosen)) {
    row["tgemm_algo"] = format_lt_name(lt->chosen_config());
    // The same printed configuration may still differ in the algorithm's other opaque fields:
    // whether the two cublasLtMatmulAlgo_t are bytewise equal.
    row["tgemm_algo_identical"] = std::memcmp(&lt->algo(), &base.lt->algo(), sizeof(cublasLtMatmulAlgo_t)) == 0;
  } else if (chosen->name().rfind("split:cublaslt:", 0) == 0) {
    // A staged row (cuBLASLt's plain product, then the pass): its inner configuration, the
    // heuristic's choice for the plain problem where the row names the heuristic.
    const std::string inner = chosen->name().substr(6);
    const std::optional<GemmProblem> ip = split_inner_problem(p);
    std::string why;
    SolutionPtr h = inner == "cublaslt:heuristic" && ip ? LtSolution::heuristic(*ip, why) : nullptr;
    if (auto hl = std::dynamic_pointer_cast<const LtSolution>(h)) {
      row["tgemm_algo"] = format_lt_name(hl->chosen_config());
    } else if (inner != "cublaslt:heuristic") {
      row["tgemm_algo"] = inner;
    }
  }
}

// The reading that counts: a problem whose speedup reads below --remeasure-below is timed again
// (same data, same plan) and the second reading counts; the first stays in the row as
// "first_reading", with the same timing fields.
void time_counted(const BenchRun& run, Baseline& base, const ProblemData& d, double est_us, json& row,
                  std::vector<TimingStats>& both) {
  json reading = json::object();
  time_both(run, base, d, est_us, reading, both);
  const bool again = reading["speedup"].get<double>() < run.o.remeasure_below;
  row["remeasured"] = again;
  if (again) {
    json first = std::move(reading);
    reading = json::object();
    time_both(run, base, d, est_us, reading, both);
    row["first_reading"] = std::move(first);
  }
  row.update(reading);
}

// --candidates: the tuner's race (screen all, time the leaders, check them) on this problem.
void candidate_fields(const GemmProblem& p, json& row) {
  RaceResult race = race_problem(p, RaceOptions{});
  row["candidates_raced"] = race.enumerated;
  if (race.winner < 0) return;
  const CandidateResult& w = race.candidates[static_cast<std::size_t>(race.winner)];
  row["best_candidate"] = w.name;
  row["best_candidate_us"] = w.us;
  row["race_default_us"] = race.default_us;
}

json bench_problem(const BenchRun& run, const SuiteShape& shape, std::int64_t m, std::uint64_t seed,
                   BenchTotals& totals) {
  const BenchOptions& o = run.o;
  const std::int64_t n = shape.n, k = shape.k;
  ProblemData d = make_problem(m, n, k, run.in, run.out, o.bias, run.dev.l2_bytes, run.budget, seed,
                               weight_range(o.data, k));
  d.activation = run.activation;
  const RotationSet& r0 = d.sets[0];
  GemmCall call = validate_a16w16(r0.xv, r0.wv, r0.ov, d.options(o.bias));
  GemmProblem p = call.problem;
  p.device = run.device;
  Baseline base;
  base.plain = p;
  base.plain.activation = Activation::kNone;
  std::string why;
  base.lt = LtSolution::heuristic(base.plain, why, /*torch_default=*/true);
  TGEMM_CHECK(base.lt != nullptr, "tgemm bench", why);
  base.solution = base.lt;
  base.ws_buf = DeviceBuffer(std::max(base.lt->workspace_size(base.plain), o.baseline_workspace));
  base.ws = Workspace{base.ws_buf.data(), base.ws_buf.bytes()};
  // Warm both paths (resolution, workspaces) before capture.
  run_baseline(run, base, d, r0, nullptr);
  gemm_a16w16(r0.xv, r0.wv, r0.ov, d.options(o.bias), nullptr);
  const DispatchInfo info = describe_gemm_a16w16(r0.xv, r0.wv, r0.ov, d.options(o.bias));
  TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "bench");
  const std::string check = o.check ? check_output(run, d, p, totals) : "-";
  // Calls a graph and rounds from the problem's expected time (the larger of its FLOPs at ~650
  // TFLOP/s and its bytes at ~3 TB/s): slots of a few ms, see plan_slots.
  const double bytes = static_cast<double>(d.input_bytes) + static_cast<double>(m * n) * dtype_size(run.out);
  const double est_us = std::max(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / 6.5e8,
                                 std::max(bytes / 3.0e6, 1.0));
  json row = {{"family", "a16w16"}, {"model", shape.model}, {"layer", shape.layer}, {"M", m}, {"N", n}, {"K", k},
              {"dtype", std::string(dtype_name(run.in))}, {"outdtype", std::string(dtype_name(run.out))},
              {"bias", o.bias}, {"epilogue", std::string(activation_name(run.activation))},
              {"baseline", run.activation == Activation::kNone ? "cublaslt_default" : "cublaslt_default+separate_activation"}};
  std::vector<TimingStats> both;
  time_counted(run, base, d, est_us, row, both);
  const double fl = floor_us(d, run.dev.sm_count, o.replays, run.sink);
  const TimingStats& tt = both[1];
  row.update({{"est_us", est_us}, {"aa", o.aa}, {"timing", o.timing}, {"settle_rounds", o.settle_rounds},
              {"shuffle", o.shuffle}, {"solution", info.kernel_name}, {"level", info.level},
              {"rotations", d.sets.size()}, {"check", check}});
  algo_fields(p, base, row);
  row["tbps"] = bytes / (tt.median_us * 1e-6) / 1e12;
  row["tflops"] = 2.0 * m * n * k / (tt.median_us * 1e-6) / 1e12;
  row["floor_us"] = fl;
  row["floor_ratio"] = tt.median_us / fl;
  if (o.candidates) candidate_fields(p, row);
  const double sp = row["speedup"].get<double>();
  totals.log_sum += std::log(sp);
  totals.min_speedup = std::min(totals.min_speedup, sp);
  totals.below += sp < 0.98 ? 1 : 0;
  ++totals.count;
  const bool again = row["remeasured"].get<bool>();
  totals.remeasured += again ? 1 : 0;
  const std::string first =
      again ? fmt::format(" (re-measured, first {:.3f}x)", row["first_reading"]["speedup"].get<double>()) : "";
  fmt::print(
      "{:<16} {:<8} {:>5} {:>6} {:>6} | {:>9.2f} {:>9.2f} {:>6.3f}x | {:>8.2f} {:>6.2f} {:>6.2f} {:>7.1f} | {} ({}) "
      "{}{}\n",
      shape.model, shape.layer, m, n, k, both[0].median_us, tt.median_us, sp, fl, tt.median_us / fl,
      row["tbps"].get<double>(), row["tflops"].get<double>(), info.kernel_name, info.level, check, first);
  std::fflush(stdout);
  return row;
}

void print_header(const BenchRun& run, double copy_tbps, const std::vector<std::string>& tables) {
  fmt::print("device {} ({} SMs, L2 {} MB), copy {:.2f} TB/s, tables: {}\n", run.dev.name, run.dev.sm_count,
             run.dev.l2_bytes >> 20, copy_tbps, fmt::join(tables, ":"));
  fmt::print("{:<16} {:<8} {:>5} {:>6} {:>6} | {:>9} {:>9} {:>7} | {:>8} {:>6} {:>6} {:>7} | {}\n", "model",
             "layer", "M", "N", "K", "default", "tgemm", "speedup", "floor", "x", "TB/s", "TFLOP/s",
             "tgemm solution (level)");
  if (run.o.aa != "off") {
    fmt::print("A/A mode '{}': both sides run {}; the speedup column measures the harness\n", run.o.aa,
               run.o.aa == "baseline" ? "the baseline" : "tgemm's dispatch");
  }
}

// bench/results/<suite>-<card>.json unless --json names another file: one file per suite and card,
// overwritten by the next measurement (git keeps the history), recording the command that made it.
void write_results(const BenchRun& run, double copy_tbps, const std::vector<std::string>& tables, const json& rows,
                   const BenchTotals& t) {
  const BenchOptions& o = run.o;
  const double geomean = t.count ? std::exp(t.log_sum / t.count) : 0;
  // A grid run gets its own file: it must not overwrite the suite's figures at its usual M values.
  const std::string stem = std::filesystem::path(o.suite).stem().string() + (o.m_grid ? "-m-grid" : "");
  const std::string path = o.json.empty() ? "bench/results/" + stem + "-" + card_slug(run.dev.name) + ".json" : o.json;
  json doc = {{"command", o.command},
              {"device", run.dev.name},
              {"sm_count", run.dev.sm_count},
              {"commit", current_commit()},
              {"date", iso_date()},
              {"copy_tbps", copy_tbps},
              {"suite", o.suite},
              {"data", o.data},
              {"tables", tables},
              {"rows", rows},
              {"m_grid_max", o.m_grid ? json(o.m_grid_max) : json(nullptr)},
              {"remeasure_below", o.remeasure_below},
              {"summary",
               {{"problems", t.count},
                {"geomean_speedup", geomean},
                {"min_speedup", t.count ? t.min_speedup : 0.0},
                {"below_0_98", t.below},
                {"check_failures", t.wrong},
                {"remeasured", t.remeasured}}}};
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream(path) << doc.dump(2) << "\n";
  fmt::print("wrote {}\n", path);
}

// --epilogue: none (empty), gelu, gelu_tanh or relu.
Activation parse_activation(const std::string& epilogue) {
  if (epilogue.empty()) return Activation::kNone;
  auto e = parse_epilogue_key(epilogue);
  TGEMM_CHECK(e && !e->scaled && !e->use_c, "tgemm bench", "--epilogue must be none, gelu, gelu_tanh or relu, got '",
              epilogue, "'");
  return e->activation;
}

}  // namespace

int run_bench(const BenchOptions& o) {
  if (o.family == "a8w8" || o.family == "a8w8_blockscale") return run_bench_a8w8(o);
  if (o.family == "batched") return run_bench_batched(o);
  if (o.family == "batched_a8w8") return run_bench_batched_a8w8(o);
  require_gpu("bench");
  if (o.overhead) return run_overhead(o);
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  BenchRun run{o, rt.platform().device_info(device)};
  run.device = device;
  run.in = parse_dtype(o.dtype, "--dtype");
  run.out = o.out_dtype.empty() ? run.in : parse_dtype(o.out_dtype, "--out-dtype");
  run.activation = parse_activation(o.epilogue);
  const std::vector<std::int64_t> ms = o.m_grid ? m_grid(o.m_grid_max) : parse_int_list(o.ms, "--m");
  const std::vector<SuiteShape> suite = read_suite(o.suite);
  std::size_t free_b = 0, total_b = 0;
  TGEMM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), "bench");
  run.budget = std::min<std::size_t>(free_b / 3, 24ull << 30);
  DeviceBuffer sink(64);
  run.sink = sink.data();
  // The tables this device's lookups use: the TGEMM_CONFIG_GEMM_BF16 files, or the shipped table
  // of this card where one exists, else the shared one (Dispatcher::table_files_for).
  const std::vector<std::string> tables = a16w16_table_files();
  const double copy_tbps = measure_copy_tbps(1ull << 30);
  warm_up_gpu(2.0);
  print_header(run, copy_tbps, tables);
  json rows = json::array();
  BenchTotals totals;
  std::uint64_t seed = 1;
  for (std::int64_t m : ms) {
    for (const SuiteShape& shape : suite) {
      if (!o.filter.empty() && (shape.model + "/" + shape.layer).find(o.filter) == std::string::npos) continue;
      if (o.max_problems > 0 && totals.count >= o.max_problems) break;
      rows.push_back(bench_problem(run, shape, m, seed++, totals));
    }
  }
  const double geomean = totals.count ? std::exp(totals.log_sum / totals.count) : 0;
  fmt::print(
      "\n{} problems: geomean speedup {:.3f}x over cuBLASLt default, min {:.3f}x, {} below 0.98x, "
      "{} failed the correctness check; {} re-measured after a first reading below {:.2f}x\n",
      totals.count, geomean, totals.count ? totals.min_speedup : 0.0, totals.below, totals.wrong, totals.remeasured,
      o.remeasure_below);
  if (o.json != "-") write_results(run, copy_tbps, tables, rows, totals);
  return totals.wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
