// `tgemm bench --family batched_a8w8`: batched_gemm_a8w8's dispatch against cuBLASLt's default for
// the same problem (the cublaslt backend's default for the family, what runs without a table row:
// its strided-batched FP8/IMMA heuristic into the fp32/int32 staging buffer, then the scaling
// pass), on the batched shape suite (bench/shapes/batched_shapes.csv), timed as the other families
// (CUDA graphs over operands rotated past L2, interleaved rounds, the paired median ratio, a
// re-measure below --remeasure-below), each output checked against the a8w8 reference kernel.
// 8-bit operands have one layout (a [B, M, K], b [B, N, K]): a suite row's transpose flags are
// ignored, and rows with K not a multiple of 16 are skipped.
#include <cuda_runtime.h>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "backends/reference/reference_backend.h"
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
namespace {

using json = nlohmann::json;

// One rotation: operands, scales and output of one call, dense.
struct A8W8BatchedSet {
  DeviceBuffer a, b, as, bs, out;
  TensorView av, bv, asv, bsv, ov;
};

struct A8W8BatchedProblem {
  std::vector<A8W8BatchedSet> sets;
  DeviceBuffer bias;
  TensorView biasv;
  bool has_bias = false;
  std::size_t bytes = 0;  // one call's operands and output
};

// Random 8-bit operand codes: any int8; FP8 e4m3 with the exponent's top bit cleared (|v| < 2,
// never NaN).
void fill_codes(DeviceBuffer& buf, std::int64_t count, DType dtype, std::mt19937_64& rng) {
  std::vector<std::uint64_t> host(static_cast<std::size_t>((count + 7) / 8));
  const std::uint64_t mask = dtype == DType::kInt8 ? ~0ull : 0xbfbfbfbfbfbfbfbfull;
  for (auto& v : host) v = rng() & mask;
  copy_to_device(buf.data(), host.data(), static_cast<std::size_t>(count));
}

// A scale of each product: [B] (per-tensor) or [B, rows, 1] (per-row), uniform in [lo, hi).
TensorView make_batched_scale(DeviceBuffer& buf, ScaleGranularity g, std::int64_t batch, std::int64_t rows,
                              std::uint64_t seed, float lo, float hi) {
  const bool per_row = g == ScaleGranularity::kRow;
  const std::int64_t count = per_row ? batch * rows : batch;
  buf = DeviceBuffer(static_cast<std::size_t>(count) * sizeof(float));
  fill_uniform(buf.data(), DType::kFloat32, count, seed, lo, hi, nullptr);
  return per_row ? TensorView::contiguous(buf.data(), DType::kFloat32, {batch, rows, 1})
                 : TensorView::contiguous(buf.data(), DType::kFloat32, {batch});
}

A8W8BatchedProblem make_problem(const BatchedShape& s, DType in, DType out, ScaleGranularity xs, ScaleGranularity ws,
                                bool bias, std::size_t l2_bytes, std::size_t budget, std::uint64_t seed) {
  A8W8BatchedProblem d;
  const std::int64_t a_elems = s.batch * s.m * s.k, b_elems = s.batch * s.n * s.k, o_elems = s.batch * s.m * s.n;
  d.bytes = static_cast<std::size_t>(a_elems + b_elems) + static_cast<std::size_t>(o_elems) * dtype_size(out);
  const int count = rotation_count(d.bytes, l2_bytes, 3.0, 64, budget, 2);
  std::mt19937_64 rng(seed);
  // Scales about 1 / (typical |code|): products of order 1 whatever the dtype.
  const float unit = in == DType::kInt8 ? 1.0f / 127 : 0.5f;
  for (int i = 0; i < count; ++i) {
    A8W8BatchedSet set;
    set.a = DeviceBuffer(static_cast<std::size_t>(a_elems));
    set.b = DeviceBuffer(static_cast<std::size_t>(b_elems));
    set.out = DeviceBuffer(static_cast<std::size_t>(o_elems) * dtype_size(out));
    fill_codes(set.a, a_elems, in, rng);
    fill_codes(set.b, b_elems, in, rng);
    set.av = TensorView::contiguous(set.a.data(), in, {s.batch, s.m, s.k});
    set.bv = TensorView::contiguous(set.b.data(), in, {s.batch, s.n, s.k});
    set.asv = make_batched_scale(set.as, xs, s.batch, s.m, seed * 13 + 4 * i, 0.5f * unit, 1.5f * unit);
    set.bsv = make_batched_scale(set.bs, ws, s.batch, s.n, seed * 13 + 4 * i + 1, 0.5f * unit, 1.5f * unit);
    set.ov = TensorView::contiguous(set.out.data(), out, {s.batch, s.m, s.n});
    d.sets.push_back(std::move(set));
  }
  d.has_bias = bias;
  if (bias) {
    d.bias = DeviceBuffer(static_cast<std::size_t>(s.n) * dtype_size(out));
    fill_uniform(d.bias.data(), out, s.n, seed * 13 + 1000, -1.0f, 1.0f, nullptr);
    d.biasv = TensorView::contiguous(d.bias.data(), out, {s.n});
  }
  return d;
}

GemmCall call_of(const A8W8BatchedProblem& d, std::size_t i) {
  const A8W8BatchedSet& s = d.sets[i % d.sets.size()];
  return validate_batched_a8w8(s.av, s.bv, s.asv, s.bsv, s.ov, d.has_bias ? &d.biasv : nullptr);
}

// The first set's output against the reference kernel's fp32 [B * M, N]: "ok" or "<n> bad", at
// test_gemm_a8w8.cpp's tolerance (operands bounded by 1.5 after scaling).
std::string check_batched_a8w8(const A8W8BatchedProblem& d, const GemmProblem& p) {
  const A8W8BatchedSet& s = d.sets[0];
  const std::int64_t rows = p.batch * p.m;
  DeviceBuffer ref(static_cast<std::size_t>(rows * p.n) * sizeof(float));
  fill_nan(s.out.data(), p.out_type, rows * p.n, nullptr);
  batched_gemm_a8w8(s.av, s.bv, s.asv, s.bsv, s.ov, d.has_bias ? &d.biasv : nullptr, nullptr);
  GemmArgs ra = call_of(d, 0).args;
  ra.out = ref.data();
  run_reference_gemm_a8w8(p, ra, DType::kFloat32, p.n, nullptr);
  Tolerance tol = gemm_tolerance(p.out_type, p.k, d.has_bias);
  tol.atol = tol.atol * 2.25 + fp8_accumulation_atol(p, ra, nullptr);
  const CompareResult cr = compare_with_reference(s.out.data(), p.out_type, p.n, ref.as<float>(), p.n, rows, p.n,
                                                  tol.rtol, tol.atol, nullptr);
  return cr.bad == 0 ? "ok" : fmt::format("{} bad", cr.bad);
}

json bench_one(const BenchOptions& o, const BatchedShape& s, const A8W8BatchedProblem& d, const Backend& lt,
               double copy_tbps, int device, int& wrong) {
  GemmProblem p = call_of(d, 0).problem;
  p.device = device;
  const SolutionPtr base = lt.default_solution(p);
  TGEMM_CHECK(base != nullptr, "tgemm bench", "cuBLASLt has no default for ", p.describe());
  DeviceBuffer ws_buf(std::max<std::size_t>(base->workspace_size(p), 256));
  const Workspace ws{ws_buf.data(), ws_buf.bytes()};
  const A8W8BatchedSet& s0 = d.sets[0];
  const DispatchInfo info =
      describe_batched_gemm_a8w8(s0.av, s0.bv, s0.asv, s0.bsv, s0.ov, d.has_bias ? &d.biasv : nullptr);
  TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "bench");
  const std::string check = o.check ? check_batched_a8w8(d, p) : "-";
  wrong += check == "ok" || check == "-" ? 0 : 1;
  const double flops = 2.0 * static_cast<double>(s.batch * s.m) * static_cast<double>(s.n * s.k);
  const double est_us = std::max(flops / 1.4e9, std::max(static_cast<double>(d.bytes) / 3.0e6, 1.0));
  std::vector<TimingStats> both;
  const json reading = time_baseline_and_tgemm(
      o, est_us, d.sets.size(),
      [&](int i, Stream st) { base->run(p, call_of(d, static_cast<std::size_t>(i)).args, ws, st); },
      [&](int i, Stream st) {
        const A8W8BatchedSet& r = d.sets[static_cast<std::size_t>(i) % d.sets.size()];
        batched_gemm_a8w8(r.av, r.bv, r.asv, r.bsv, r.ov, d.has_bias ? &d.biasv : nullptr, st);
      },
      both);
  const double t_us = reading["tgemm_us"].get<double>();
  const double floor_us = static_cast<double>(d.bytes) / (copy_tbps * 1e12) * 1e6;
  json row = {{"family", "batched_a8w8"},
              {"name", s.name},
              {"B", s.batch},
              {"M", s.m},
              {"N", s.n},
              {"K", s.k},
              {"dtype", std::string(dtype_name(p.a_type))},
              {"outdtype", std::string(dtype_name(p.out_type))},
              {"scales", std::string(format_scale_recipe(p.a_scale, p.b_scale))},
              {"bias", d.has_bias}};
  row.update(
      dispatch_fields(base->name(), info, check, d.sets.size(), floor_us, static_cast<double>(d.bytes), flops, t_us));
  row.update(reading);
  fmt::print("{:<24} {:>4} {:>5} {:>5} {:>5} | {:>9.2f} {:>9.2f} {:>6.3f}x | {:>8.2f} {:>7.1f} | {} ({}) {}\n", s.name,
             s.batch, s.m, s.n, s.k, both[0].median_us, t_us, reading["speedup"].get<double>(), floor_us,
             row["tflops"].get<double>(), info.kernel_name, info.level, check);
  std::fflush(stdout);
  return row;
}

}  // namespace

int run_bench_batched_a8w8(const BenchOptions& o) {
  TGEMM_CHECK(o.dtype == "fp8" || o.dtype == "int8", "tgemm bench",
              "--family batched_a8w8 takes --dtype fp8 or int8, got '", o.dtype, "'");
  const DType in = o.dtype == "fp8" ? DType::kFloat8E4M3 : DType::kInt8;
  const DType out = o.out_dtype.empty() ? DType::kBFloat16 : parse_dtype(o.out_dtype, "--out-dtype");
  const auto recipe = parse_scale_recipe(o.scales);
  TGEMM_CHECK(recipe && recipe->first != ScaleGranularity::kNone && recipe->first != ScaleGranularity::kBlock,
              "tgemm bench", "--family batched_a8w8 takes --scales tensor, token, channel or token_channel, got '",
              o.scales, "'");
  const std::vector<BatchedShape> suite = read_batched_suite(o.suite);
  const FamilyBench env = start_family_bench();
  const DeviceInfo& dev = *env.dev;
  fmt::print("device {} ({} SMs), copy {:.2f} TB/s, batched_a8w8 {} -> {} scales={} bias={}\n", dev.name, dev.sm_count,
             env.copy_tbps, o.dtype, dtype_name(out), o.scales, o.bias);
  json rows = json::array();
  int wrong = 0;
  std::uint64_t seed = 1;
  for (const BatchedShape& s : suite) {
    if (!o.filter.empty() && s.name.find(o.filter) == std::string::npos) continue;
    if (o.max_problems > 0 && static_cast<int>(rows.size()) >= o.max_problems) break;
    if (s.k % 16 != 0) {
      fmt::print("{:<24} {:>4} {:>5} {:>5} {:>5} | skipped: K not a multiple of 16 (16-byte rows)\n", s.name, s.batch,
                 s.m, s.n, s.k);
      continue;
    }
    const A8W8BatchedProblem d =
        make_problem(s, in, out, recipe->first, recipe->second, o.bias, dev.l2_bytes, env.budget, seed++);
    rows.push_back(bench_one(o, s, d, *env.lt, env.copy_tbps, env.device, wrong));
  }
  finish_family_bench(o, dev, env.copy_tbps,
                      std::filesystem::path(o.suite).stem().string() + "_a8w8_" + o.dtype + "_" + o.scales + "_" +
                          std::string(dtype_short_name(out)),
                      rows, wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
