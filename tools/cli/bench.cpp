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
#include "core/tune_select.h"
#include "core/validate.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"
#include "tgemm/tgemm.h"
#include "tools/cli/common.h"
#include "tune/racer.h"

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

// The weight's range: U(-1, 1) ("unit", the default since session 1: a GEMM's outputs then have a
// standard deviation of ~sqrt(K / 9), 21-53 over the suite, so an activation epilogue sees mostly
// saturated inputs), or U(-3 / sqrt(K), 3 / sqrt(K)) ("fan_in": outputs ~ unit variance, as
// bench/torch_bench.py's N(0, 1 / K) weights give and a model's pre-activations are). Session 28:
// the Python bench timed the same fused GELU kernels 4-7% slower than this bench; the data are
// one of the differences.
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
    std::string path = o.json.empty() ? "bench/results/overhead-" +
                                            device_slug(Runtime::get().platform().device_info(p.device).name) +
                                            "-" + today_yyyymmdd() + ".json"
                                      : o.json;
    json j = {{"device", Runtime::get().platform().device_info(p.device).name},
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

}  // namespace

// The layout study of issue 5 (`shuffle_weight`): for each weight [N, K] of the suite, the linear
// streaming read of its bytes against the best row-tiled read in the skinny kernels' pattern
// (rows_read: 8 rows x 64 bytes a warp load, K split over warps and, by viewing [N, K] as
// [N x S, K / S], over CTAs). A preshuffled layout turns the row-tiled read into a linear one at
// best, so rows / linear bounds what any weight layout can gain for those kernels; the TMA
// kernels of M >= 512 are compute-bound (docs/perf-notes.md).
int run_layout_study(const BenchOptions& o) {
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  const DType in = parse_dtype(o.dtype, "--dtype");
  std::vector<SuiteShape> suite = read_suite(o.suite);
  std::size_t free_b = 0, total_b = 0;
  TGEMM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), "bench");
  const std::size_t budget = std::min<std::size_t>(free_b / 3, 24ull << 30);
  DeviceBuffer sink(64);
  warm_up_gpu(1.0);
  fmt::print("layout study on {} ({} SMs): linear read vs row-tiled read of each weight\n", dev.name, dev.sm_count);
  fmt::print("{:<16} {:<8} {:>6} {:>6} {:>8} | {:>9} {:>9} {:>6} | {}\n", "model", "layer", "N", "K", "MiB",
             "linear", "rows", "ratio", "rows pattern (threads, warps_k, k split)");
  json rows = json::array();
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  double worst = 0, log_sum = 0;
  int count = 0;
  for (const SuiteShape& shape : suite) {
    if (!o.filter.empty() && (shape.model + "/" + shape.layer).find(o.filter) == std::string::npos) continue;
    if (!seen.insert({shape.n, shape.k}).second) continue;
    const std::int64_t n = shape.n, k = shape.k;
    ProblemData d = make_problem(1, n, k, in, in, false, dev.l2_bytes, budget, 7);
    const std::int64_t row_bytes = k * static_cast<std::int64_t>(dtype_size(in));
    const auto w_bytes = static_cast<std::size_t>(n * row_bytes);
    auto set_of = [&](int i) { return d.sets[static_cast<std::size_t>(i) % d.sets.size()].wx.data(); };
    double linear = 1e30;
    for (int waves : {2, 4, 8, 16, 32})
      for (int threads : {256, 512}) {
        TimingStats st = time_graph([&](int i, Stream s) {
          stream_read(set_of(i), w_bytes, dev.sm_count * waves, threads, sink.data(), s);
        }, timing_options(o.replays));
        linear = std::min(linear, st.median_us);
      }
    double best = 1e30;
    std::string best_cfg;
    for (int split : {1, 2, 4, 8, 16}) {
      if (row_bytes % (16 * split) != 0) continue;
      const std::int64_t seg = row_bytes / split;
      for (int threads : {256, 512})
        for (int warps_k : {1, 2, 4, 8}) {
          if (threads % (32 * warps_k) != 0) continue;
          TimingStats st = time_graph([&](int i, Stream s) {
            rows_read(set_of(i), n * split, seg, seg, threads, warps_k, sink.data(), s);
          }, timing_options(o.replays));
          if (st.median_us < best) {
            best = st.median_us;
            best_cfg = fmt::format("{}, {}, {}", threads, warps_k, split);
          }
        }
    }
    const double ratio = best / linear;
    worst = std::max(worst, ratio);
    log_sum += std::log(ratio);
    ++count;
    fmt::print("{:<16} {:<8} {:>6} {:>6} {:>8.1f} | {:>9.2f} {:>9.2f} {:>6.3f} | {}\n", shape.model, shape.layer, n, k,
               static_cast<double>(w_bytes) / (1 << 20), linear, best, ratio, best_cfg);
    std::fflush(stdout);
    rows.push_back({{"model", shape.model}, {"layer", shape.layer}, {"N", n}, {"K", k}, {"weight_bytes", w_bytes},
                    {"linear_us", linear}, {"rows_us", best}, {"ratio", ratio}, {"rows_config", best_cfg},
                    {"rotations", d.sets.size()}});
  }
  const double geomean = count ? std::exp(log_sum / count) : 0;
  fmt::print("\n{} weights: row-tiled / linear read geomean {:.3f}, max {:.3f}\n", count, geomean, worst);
  if (o.json != "-") {
    const std::string path = o.json.empty() ? "bench/results/layout_study-" + device_slug(dev.name) + "-" +
                                                  today_yyyymmdd() + ".json"
                                            : o.json;
    json doc = {{"device", dev.name}, {"sm_count", dev.sm_count}, {"commit", current_commit()}, {"date", iso_date()},
                {"suite", o.suite}, {"rows", rows},
                {"summary", {{"weights", count}, {"geomean_ratio", geomean}, {"max_ratio", worst}}}};
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    std::ofstream(path) << doc.dump(2) << "\n";
    fmt::print("wrote {}\n", path);
  }
  return 0;
}

int run_bench(const BenchOptions& o) {
  require_gpu("bench");
  if (o.overhead) return run_overhead(o);
  if (o.layout_study) return run_layout_study(o);
  Runtime& rt = Runtime::get();
  int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  DType in = parse_dtype(o.dtype, "--dtype");
  DType out = o.out_dtype.empty() ? in : parse_dtype(o.out_dtype, "--out-dtype");
  Activation activation = Activation::kNone;
  if (!o.epilogue.empty()) {
    auto e = parse_epilogue_key(o.epilogue);
    TGEMM_CHECK(e && !e->scaled && !e->use_c, "tgemm bench", "--epilogue must be none, gelu, gelu_tanh or relu, got '",
                o.epilogue, "'");
    activation = e->activation;
  }
  std::vector<std::int64_t> ms = parse_int_list(o.ms, "--m");
  std::vector<SuiteShape> suite = read_suite(o.suite);
  std::size_t free_b = 0, total_b = 0;
  TGEMM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), "bench");
  std::size_t budget = std::min<std::size_t>(free_b / 3, 24ull << 30);
  DeviceBuffer sink(64);

  // The tables this device's lookups use: the shipped or TGEMM_CONFIG_GEMM_BF16 files, and the
  // card's overlay where one exists (Dispatcher::table_files_for).
  const std::vector<std::string> tables = a16w16_table_files();
  double copy_tbps = measure_copy_tbps(1ull << 30);
  warm_up_gpu(2.0);
  fmt::print("device {} ({} SMs, L2 {} MB), copy {:.2f} TB/s, tables: {}\n", dev.name, dev.sm_count,
             dev.l2_bytes >> 20, copy_tbps, fmt::join(tables, ":"));
  fmt::print("{:<16} {:<8} {:>5} {:>6} {:>6} | {:>9} {:>9} {:>7} | {:>8} {:>6} {:>6} {:>7} | {}\n", "model",
             "layer", "M", "N", "K", "default", "tgemm", "speedup", "floor", "x", "TB/s", "TFLOP/s",
             "tgemm solution (level)");
  if (o.aa != "off")
    fmt::print("A/A mode '{}': both sides run {}; the speedup column measures the harness\n", o.aa,
               o.aa == "baseline" ? "the baseline" : "tgemm's dispatch");
  json rows = json::array();
  double log_sum = 0, min_speedup = 1e30;
  int count = 0, below = 0, wrong = 0;
  std::uint64_t seed = 1;
  for (std::int64_t m : ms) {
    for (const SuiteShape& shape : suite) {
      if (!o.filter.empty() && (shape.model + "/" + shape.layer).find(o.filter) == std::string::npos) continue;
      if (o.max_problems > 0 && count >= o.max_problems) break;
      const std::int64_t n = shape.n, k = shape.k;
      ProblemData d = make_problem(m, n, k, in, out, o.bias, dev.l2_bytes, budget, seed++, weight_range(o.data, k));
      d.activation = activation;
      const RotationSet& r0 = d.sets[0];
      GemmCall call = validate_a16w16(r0.xv, r0.wv, r0.ov, d.options(o.bias));
      GemmProblem p = call.problem;
      p.device = device;
      std::string why;
      // The baseline is what F.linear runs: cuBLASLt's heuristic with PyTorch's default settings;
      // with --epilogue, that GEMM followed by the activation as a separate pass over out (what
      // F.gelu(F.linear(...)) does), both from tgemm.
      GemmProblem plain = p;
      plain.activation = Activation::kNone;
      auto baseline = LtSolution::heuristic(plain, why, /*torch_default=*/true);
      TGEMM_CHECK(baseline != nullptr, "tgemm bench", why);
      DeviceBuffer base_ws(std::max(baseline->workspace_size(plain), o.baseline_workspace));
      Workspace bws{base_ws.data(), base_ws.bytes()};
      auto args_of = [&](const RotationSet& r) {
        GemmArgs a;
        a.a = r.xv.data;
        a.b = r.wv.data;
        a.out = r.ov.data;
        a.bias = o.bias ? d.bv.data : nullptr;
        return a;
      };
      // The activation over the baseline's output, its bias already added by cuBLASLt.
      GemmProblem act_pass = plain;
      act_pass.activation = activation;
      act_pass.epilogue = Epilogue::kNone;
      auto run_baseline = [&](const RotationSet& r, Stream s) {
        baseline->run(plain, args_of(r), bws, s);
        if (activation != Activation::kNone) epilogue_rows(gemm_epilogue(act_pass, args_of(r), ProductAt::kOut), s);
      };
      // Warm both paths (resolution, workspaces) before capture.
      run_baseline(r0, nullptr);
      gemm_a16w16(r0.xv, r0.wv, r0.ov, d.options(o.bias), nullptr);
      DispatchInfo info = describe_gemm_a16w16(r0.xv, r0.wv, r0.ov, d.options(o.bias));
      TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "bench");
      std::string check = "-";
      if (o.check) {
        DeviceBuffer ref(static_cast<std::size_t>(m * n) * sizeof(float));
        fill_nan(r0.ov.data, out, m * n, nullptr);
        gemm_a16w16(r0.xv, r0.wv, r0.ov, d.options(o.bias), nullptr);
        GemmArgs ra = args_of(r0);
        ra.out = ref.data();
        run_reference_gemm(p, ra, DType::kFloat32, n, nullptr);
        Tolerance tol = gemm_tolerance(out, k, o.bias);
        CompareResult cr = compare_with_reference(r0.ov.data, out, n, ref.as<float>(), n, m, n, tol.rtol,
                                                  tol.atol, nullptr);
        check = cr.bad == 0 ? "ok" : fmt::format("{} bad", cr.bad);
        if (cr.bad != 0) ++wrong;
      }
      // Baseline and tgemm interleaved over rounds, so clock/power drift under sustained load
      // does not favour whichever runs first.
      // Speedup: the paired estimate (median over rounds of the two back-to-back medians' ratio),
      // so clock drift between rounds cancels; the pooled medians are reported as times.
      TimingOptions topt = timing_options(o.replays);
      topt.replays = std::max(3, o.replays / 5);
      topt.warmup_replays = 2;
      topt.shared_stream = o.timing == "shared";
      topt.recapture = o.timing == "recapture";
      topt.settle_rounds = o.settle_rounds;
      topt.shuffle_order = o.shuffle;
      // Calls a graph and rounds from the problem's expected time (the larger of its FLOPs at
      // ~650 TFLOP/s and its bytes at ~3 TB/s): slots of a few ms, see plan_slots.
      const double bytes = static_cast<double>(d.input_bytes) + static_cast<double>(m * n) * dtype_size(out);
      const double est_us = std::max(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / 6.5e8,
                                     std::max(bytes / 3.0e6, 1.0));
      const SlotPlan plan = plan_slots(est_us, o.rounds > 0 ? o.rounds : 10);
      // At least one call per rotation set, so a graph's calls still cycle through all of them.
      topt.launches_per_graph =
          o.launches > 0 ? o.launches : std::max(plan.launches_per_graph, static_cast<int>(d.sets.size()));
      const int rounds = o.rounds > 0 ? o.rounds : plan.rounds;
      std::vector<std::vector<double>> per_round;
      std::vector<TimingStats> both = time_graphs_interleaved(
          {[&](int i, Stream s) {
             const RotationSet& r = d.sets[static_cast<std::size_t>(i) % d.sets.size()];
             if (o.aa == "dispatch")
               gemm_a16w16(r.xv, r.wv, r.ov, d.options(o.bias), s);
             else
               run_baseline(r, s);
           },
           [&](int i, Stream s) {
             const RotationSet& r = d.sets[static_cast<std::size_t>(i) % d.sets.size()];
             if (o.aa == "baseline")
               run_baseline(r, s);
             else
               gemm_a16w16(r.xv, r.wv, r.ov, d.options(o.bias), s);
           }},
          topt, rounds, &per_round);
      const TimingStats& tb = both[0];
      const TimingStats& tt = both[1];
      double fl = floor_us(d, dev.sm_count, o.replays, sink.data());
      json row = {{"family", "a16w16"}, {"model", shape.model}, {"layer", shape.layer}, {"M", m}, {"N", n},
                  {"K", k}, {"dtype", std::string(dtype_name(in))}, {"outdtype", std::string(dtype_name(out))},
                  {"bias", o.bias}, {"epilogue", std::string(activation_name(activation))},
                  {"baseline", activation == Activation::kNone ? "cublaslt_default" : "cublaslt_default+separate_activation"},
                  {"baseline_us", tb.median_us},
                  {"baseline_spread", spread(tb)}, {"tgemm_us", tt.median_us}, {"tgemm_spread", spread(tt)},
                  {"speedup", paired_ratio(per_round[0], per_round[1])},
                  {"speedup_of_medians", tb.median_us / tt.median_us}, {"rounds", rounds}, {"launches", topt.launches_per_graph}, {"est_us", est_us}, {"aa", o.aa},
                  {"timing", o.timing}, {"settle_rounds", o.settle_rounds}, {"shuffle", o.shuffle},
                  // Each round's two medians, in round order (odd rounds ran tgemm first), so an
                  // order or drift effect shows (session 12: rows running the baseline's own
                  // configuration measured 0.98-0.99x at M = 8192).
                  {"round_baseline_us", per_round[0]}, {"round_tgemm_us", per_round[1]},
                  {"solution", info.kernel_name},
                  {"level", info.level}, {"rotations", d.sets.size()}, {"check", check}};
      // The cuBLASLt configurations behind the baseline and (when cuBLASLt runs it) tgemm's row, so
      // a "cublaslt:heuristic" row shows whether it is the baseline's algorithm: tgemm's own
      // heuristic query excludes split-K reductions in the 16-bit output, PyTorch's does not.
      row["baseline_algo"] = format_lt_name(baseline->chosen_config());
      row["baseline_workspace"] = base_ws.bytes();
      const SolutionPtr chosen = Runtime::get().dispatcher().resolve(p).solution;
      if (auto lt = std::dynamic_pointer_cast<const LtSolution>(chosen)) {
        row["tgemm_algo"] = format_lt_name(lt->chosen_config());
        // The same printed configuration may still differ in the algorithm's other opaque
        // fields (session 22: rows running the baseline's named configuration at 0.96x at
        // M = 8192 with equal workspaces): whether the two cublasLtMatmulAlgo_t are bytewise equal.
        row["tgemm_algo_identical"] =
            std::memcmp(&lt->algo(), &baseline->algo(), sizeof(cublasLtMatmulAlgo_t)) == 0;
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
      row["tbps"] = bytes / (tt.median_us * 1e-6) / 1e12;
      row["tflops"] = 2.0 * m * n * k / (tt.median_us * 1e-6) / 1e12;
      row["floor_us"] = fl;
      row["floor_ratio"] = tt.median_us / fl;
      if (o.candidates) {
        // The tuner's race (screen all, time the leaders, check them) on this problem.
        RaceOptions ro;
        RaceResult race = race_problem(p, ro);
        row["candidates_raced"] = race.enumerated;
        if (race.winner >= 0) {
          const CandidateResult& w = race.candidates[static_cast<std::size_t>(race.winner)];
          row["best_candidate"] = w.name;
          row["best_candidate_us"] = w.us;
          row["race_default_us"] = race.default_us;
        }
      }
      double sp = row["speedup"].get<double>();
      log_sum += std::log(sp);
      min_speedup = std::min(min_speedup, sp);
      below += sp < 0.98 ? 1 : 0;
      ++count;
      fmt::print("{:<16} {:<8} {:>5} {:>6} {:>6} | {:>9.2f} {:>9.2f} {:>6.3f}x | {:>8.2f} {:>6.2f} {:>6.2f} {:>7.1f} | {} ({}) {}\n",
                 shape.model, shape.layer, m, n, k, tb.median_us, tt.median_us, sp, fl, tt.median_us / fl,
                 row["tbps"].get<double>(), row["tflops"].get<double>(), info.kernel_name, info.level, check);
      std::fflush(stdout);
      rows.push_back(row);
    }
  }
  double geomean = count ? std::exp(log_sum / count) : 0;
  fmt::print("\n{} problems: geomean speedup {:.3f}x over cuBLASLt default, min {:.3f}x, {} below 0.98x, "
             "{} failed the correctness check\n",
             count, geomean, count ? min_speedup : 0.0, below, wrong);
  if (o.json != "-") {
    std::string stem = std::filesystem::path(o.suite).stem().string();
    std::string path = o.json.empty()
                           ? "bench/results/" + stem + "-" + device_slug(dev.name) + "-" + today_yyyymmdd() + ".json"
                           : o.json;
    json doc = {{"device", dev.name}, {"sm_count", dev.sm_count}, {"commit", current_commit()},
                {"date", iso_date()}, {"copy_tbps", copy_tbps}, {"suite", o.suite}, {"data", o.data},
                {"tables", tables}, {"rows", rows},
                {"summary", {{"problems", count}, {"geomean_speedup", geomean},
                             {"min_speedup", count ? min_speedup : 0.0}, {"below_0_98", below},
                             {"check_failures", wrong}}}};
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    std::ofstream(path) << doc.dump(2) << "\n";
    fmt::print("wrote {}\n", path);
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
