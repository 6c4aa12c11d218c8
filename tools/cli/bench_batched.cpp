// `tgemm bench --family batched`: batched_gemm's dispatch against cuBLASLt's default for the same
// problem (its strided-batched heuristic, what runs without a table row), on a batched shape suite
// (name,B,M,N,K,transpose_a,transpose_b: bench/shapes/batched_shapes.csv), timed as the other
// families (CUDA graphs over operands rotated past L2, interleaved rounds, the paired median ratio,
// a re-measure below --remeasure-below), each output checked against the reference kernel (fp32).
#include <cuda_runtime.h>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "core/csv.h"
#include "core/validate.h"
#include "cuda/cuda_check.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"
#include "tgemm/tgemm.h"
#include "tools/cli/bench.h"
#include "tools/cli/bench_batched.h"
#include "tools/cli/bench_family.h"
#include "tools/cli/common.h"
#include "tuner/data.h"

namespace tgemm::cli {

std::vector<BatchedShape> read_batched_suite(const std::string& path) {
  std::ifstream in(path);
  TGEMM_CHECK(static_cast<bool>(in), "tgemm bench", "cannot open batched shape suite '", path, "'");
  std::vector<BatchedShape> out;
  std::vector<std::string> header;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto f = csv::split_line(line);
    TGEMM_CHECK(f.has_value(), "tgemm bench", path, ":", line_no, ": malformed line");
    if (header.empty()) {
      header = *f;
      continue;
    }
    auto get = [&](const char* name) {
      const auto it = std::find(header.begin(), header.end(), name);
      TGEMM_CHECK(it != header.end(), "tgemm bench", path, ": header needs name,B,M,N,K,transpose_a,transpose_b");
      const auto i = static_cast<std::size_t>(it - header.begin());
      return i < f->size() ? (*f)[i] : std::string();
    };
    BatchedShape s;
    s.name = get("name");
    const auto b = csv::parse_int(get("B")), m = csv::parse_int(get("M")), n = csv::parse_int(get("N")),
               k = csv::parse_int(get("K"));
    const auto ta = csv::parse_bool(get("transpose_a")), tb = csv::parse_bool(get("transpose_b"));
    TGEMM_CHECK(b && m && n && k && *b > 0 && *m > 0 && *n > 0 && *k > 0 && ta && tb, "tgemm bench", path, ":", line_no,
                ": bad B, M, N, K or transpose flag");
    s.batch = *b;
    s.m = *m;
    s.n = *n;
    s.k = *k;
    s.transpose_a = *ta;
    s.transpose_b = *tb;
    out.push_back(s);
  }
  return out;
}

namespace {

using json = nlohmann::json;

// One rotation: a, b and out of one call, dense in their stored layouts.
struct BatchedSet {
  DeviceBuffer a, b, out;
  TensorView av, bv, ov;
};

struct BatchedProblem {
  std::vector<BatchedSet> sets;
  DeviceBuffer bias;
  TensorView biasv;
  bool has_bias = false;
  std::size_t bytes = 0;  // one call's operands and output
};

BatchedProblem make_batched(const BatchedShape& s, DType in, DType out, bool bias, std::size_t l2_bytes,
                            std::size_t budget, std::uint64_t seed) {
  BatchedProblem d;
  const std::int64_t a_elems = s.batch * s.m * s.k, b_elems = s.batch * s.n * s.k, o_elems = s.batch * s.m * s.n;
  d.bytes = static_cast<std::size_t>(a_elems + b_elems) * dtype_size(in) +
            static_cast<std::size_t>(o_elems) * dtype_size(out);
  const int count = rotation_count(d.bytes, l2_bytes, 3.0, 64, budget, 2);
  for (int i = 0; i < count; ++i) {
    BatchedSet set;
    set.a = DeviceBuffer(static_cast<std::size_t>(a_elems) * dtype_size(in));
    set.b = DeviceBuffer(static_cast<std::size_t>(b_elems) * dtype_size(in));
    set.out = DeviceBuffer(static_cast<std::size_t>(o_elems) * dtype_size(out));
    fill_uniform(set.a.data(), in, a_elems, seed * 11 + 2 * i, -1.0f, 1.0f, nullptr);
    fill_uniform(set.b.data(), in, b_elems, seed * 11 + 2 * i + 1, -1.0f, 1.0f, nullptr);
    set.av = s.transpose_a ? TensorView::contiguous(set.a.data(), in, {s.batch, s.k, s.m})
                           : TensorView::contiguous(set.a.data(), in, {s.batch, s.m, s.k});
    set.bv = s.transpose_b ? TensorView::contiguous(set.b.data(), in, {s.batch, s.n, s.k})
                           : TensorView::contiguous(set.b.data(), in, {s.batch, s.k, s.n});
    set.ov = TensorView::contiguous(set.out.data(), out, {s.batch, s.m, s.n});
    d.sets.push_back(std::move(set));
  }
  d.has_bias = bias;
  if (bias) {
    d.bias = DeviceBuffer(static_cast<std::size_t>(s.n) * dtype_size(in));
    fill_uniform(d.bias.data(), in, s.n, seed * 11 + 1000, -1.0f, 1.0f, nullptr);
    d.biasv = TensorView::contiguous(d.bias.data(), in, {s.n});
  }
  return d;
}

GemmCall call_of(const BatchedShape& s, const BatchedProblem& d, std::size_t i) {
  const BatchedSet& set = d.sets[i % d.sets.size()];
  return validate_batched(set.av, set.bv, set.ov, s.transpose_a, s.transpose_b, d.has_bias ? &d.biasv : nullptr);
}

// The first set's output against the reference kernel's fp32 [B * M, N]: "ok" or "<n> bad".
std::string check_batched(const BatchedShape& s, const BatchedProblem& d, const GemmProblem& p) {
  const BatchedSet& set = d.sets[0];
  const std::int64_t rows = p.batch * p.m;
  DeviceBuffer ref(static_cast<std::size_t>(rows * p.n) * sizeof(float));
  fill_nan(set.out.data(), p.out_type, rows * p.n, nullptr);
  batched_gemm(set.av, set.bv, set.ov, s.transpose_a, s.transpose_b, d.has_bias ? &d.biasv : nullptr, nullptr);
  GemmArgs ra = call_of(s, d, 0).args;
  ra.out = ref.data();
  run_reference_gemm(p, ra, DType::kFloat32, p.n, nullptr);
  const Tolerance tol = gemm_tolerance(p.out_type, p.k, d.has_bias);
  const CompareResult cr = compare_with_reference(set.out.data(), p.out_type, p.n, ref.as<float>(), p.n, rows, p.n,
                                                  tol.rtol, tol.atol, nullptr);
  return cr.bad == 0 ? "ok" : fmt::format("{} bad", cr.bad);
}

// One suite problem's row: baseline and dispatch timed, the dispatch checked.
json bench_one(const BenchOptions& o, const BatchedShape& s, const BatchedProblem& d, const Backend& lt,
               double copy_tbps, int device, int& wrong) {
  GemmProblem p = call_of(s, d, 0).problem;
  p.device = device;
  const SolutionPtr base = lt.default_solution(p);
  TGEMM_CHECK(base != nullptr, "tgemm bench", "cuBLASLt has no default for ", p.describe());
  DeviceBuffer ws_buf(std::max<std::size_t>(base->workspace_size(p), 256));
  const Workspace ws{ws_buf.data(), ws_buf.bytes()};
  const BatchedSet& s0 = d.sets[0];
  const DispatchInfo info =
      describe_batched_gemm(s0.av, s0.bv, s0.ov, s.transpose_a, s.transpose_b, d.has_bias ? &d.biasv : nullptr);
  TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "bench");
  const std::string check = o.check ? check_batched(s, d, p) : "-";
  wrong += check == "ok" || check == "-" ? 0 : 1;
  const double flops = 2.0 * static_cast<double>(s.batch * s.m) * static_cast<double>(s.n * s.k);
  const double est_us = std::max(flops / 0.7e9, std::max(static_cast<double>(d.bytes) / 3.0e6, 1.0));
  std::vector<TimingStats> both;
  const json reading = time_baseline_and_tgemm(
      o, est_us, d.sets.size(),
      [&](int i, Stream st) { base->run(p, call_of(s, d, static_cast<std::size_t>(i)).args, ws, st); },
      [&](int i, Stream st) {
        const BatchedSet& r = d.sets[static_cast<std::size_t>(i) % d.sets.size()];
        batched_gemm(r.av, r.bv, r.ov, s.transpose_a, s.transpose_b, d.has_bias ? &d.biasv : nullptr, st);
      },
      both);
  const double t_us = reading["tgemm_us"].get<double>();
  const double floor_us = static_cast<double>(d.bytes) / (copy_tbps * 1e12) * 1e6;
  json row = {{"family", "batched"},
              {"name", s.name},
              {"B", s.batch},
              {"M", s.m},
              {"N", s.n},
              {"K", s.k},
              {"transpose_a", s.transpose_a},
              {"transpose_b", s.transpose_b},
              {"dtype", std::string(dtype_name(p.a_type))},
              {"outdtype", std::string(dtype_name(p.out_type))},
              {"bias", d.has_bias}};
  row.update(
      dispatch_fields(base->name(), info, check, d.sets.size(), floor_us, static_cast<double>(d.bytes), flops, t_us));
  row.update(reading);
  fmt::print("{:<24} {:>4} {:>5} {:>5} {:>5} {}{} | {:>9.2f} {:>9.2f} {:>6.3f}x | {:>8.2f} {:>7.1f} | {} ({}) {}\n",
             s.name, s.batch, s.m, s.n, s.k, s.transpose_a ? 'T' : 'N', s.transpose_b ? 'T' : 'N', both[0].median_us,
             t_us, reading["speedup"].get<double>(), floor_us, row["tflops"].get<double>(), info.kernel_name,
             info.level, check);
  std::fflush(stdout);
  return row;
}

}  // namespace

int run_bench_batched(const BenchOptions& o) {
  const DType in = parse_dtype(o.dtype, "--dtype");
  TGEMM_CHECK(in == DType::kBFloat16 || in == DType::kFloat16, "tgemm bench",
              "--family batched takes --dtype bf16 or fp16, got '", o.dtype, "'");
  const DType out = o.out_dtype.empty() ? in : parse_dtype(o.out_dtype, "--out-dtype");
  const std::vector<BatchedShape> suite = read_batched_suite(o.suite);
  const FamilyBench env = start_family_bench();
  const DeviceInfo& dev = *env.dev;
  fmt::print("device {} ({} SMs), copy {:.2f} TB/s, batched {} -> {} bias={}\n", dev.name, dev.sm_count, env.copy_tbps,
             o.dtype, dtype_name(out), o.bias);
  json rows = json::array();
  int wrong = 0;
  std::uint64_t seed = 1;
  for (const BatchedShape& s : suite) {
    if (!o.filter.empty() && s.name.find(o.filter) == std::string::npos) continue;
    if (o.max_problems > 0 && static_cast<int>(rows.size()) >= o.max_problems) break;
    const BatchedProblem d = make_batched(s, in, out, o.bias, dev.l2_bytes, env.budget, seed++);
    rows.push_back(bench_one(o, s, d, *env.lt, env.copy_tbps, env.device, wrong));
  }
  finish_family_bench(
      o, dev, env.copy_tbps,
      std::filesystem::path(o.suite).stem().string() + "_" + o.dtype + "_" + std::string(dtype_short_name(out)), rows,
      wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
