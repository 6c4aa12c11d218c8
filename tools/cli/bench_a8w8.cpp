// `tgemm bench --family a8w8` and `--family a8w8_blockscale`: gemm_a8w8's (gemm_a8w8_blockscale's)
// dispatch against cuBLASLt's default for the same problem (the cublaslt backend's default for the
// family, what runs without a table row: for blockscale cuBLASLt's own block-scaled heuristic
// choice, algo 0 of its heuristic), on a shape suite,
// timed as `tgemm bench` times a16w16 (CUDA graphs over operands rotated past L2, interleaved
// rounds, the paired median ratio, a re-measure below --remeasure-below), each output checked
// against the a8w8 reference kernel (dequantized operands, fp32).
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "core/m_grid.h"
#include "core/settings.h"
#include "core/validate.h"
#include "cuda/cuda_check.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"
#include "tgemm/tgemm.h"
#include "tools/cli/bench.h"
#include "tools/cli/bench_family.h"
#include "tools/cli/common.h"
#include "tuner/data.h"
#include "tuner/select.h"

namespace tgemm::cli {
namespace {

using json = nlohmann::json;

// One rotation: operands, scales and output of one call. Blockscale scales: x_scale [M, L] in
// DeepGEMM's MN-major TMA-aligned layout (what cuBLASLt reads without a copy; a row-major x_scale
// adds a transpose pass to both sides alike), w_scale [ceil(N/128), L] row-major.
struct A8W8Set {
  DeviceBuffer x, w, xs, ws, out;
  TensorView xv, wv, xsv, wsv, ov;
};

struct A8W8Problem {
  std::vector<A8W8Set> sets;
  DeviceBuffer bias;
  TensorView bv;
  bool has_bias = false;
  std::size_t input_bytes = 0;
};

// Random 8-bit operands: any int8 value; FP8 e4m3 codes with the exponent's top bit cleared, so
// |v| < 2 and never NaN (0x7f, 0xff).
void fill_operand(DeviceBuffer& buf, std::int64_t count, DType dtype, std::mt19937_64& rng) {
  std::vector<std::uint64_t> host(static_cast<std::size_t>((count + 7) / 8));
  const std::uint64_t mask = dtype == DType::kInt8 ? ~0ull : 0xbfbfbfbfbfbfbfbfull;
  for (auto& v : host) v = rng() & mask;
  copy_to_device(buf.data(), host.data(), static_cast<std::size_t>(count));
}

// A scale tensor of `g` for `rows` rows (x: M, w: N) of a K-long operand, filled uniform in [lo, hi).
TensorView make_scale(DeviceBuffer& buf, ScaleGranularity g, bool is_x, std::int64_t rows, std::int64_t k,
                      std::uint64_t seed, float lo, float hi) {
  const std::int64_t kb = (k + 127) / 128;
  std::vector<std::int64_t> sizes, strides;
  std::int64_t count = 1;
  if (g == ScaleGranularity::kRow) {
    sizes = {rows, 1};
    strides = {1, 1};
    count = rows;
  } else if (g == ScaleGranularity::kBlock && is_x) {
    const std::int64_t ld = mn_major_tma_aligned_ld(rows);
    sizes = {rows, kb};
    strides = {1, ld};
    count = ld * kb;
  } else if (g == ScaleGranularity::kBlock) {
    sizes = {(rows + 127) / 128, kb};
    strides = {kb, 1};
    count = sizes[0] * kb;
  } else {
    sizes = {1};
    strides = {1};
  }
  buf = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) * 4);
  fill_uniform(buf.data(), DType::kFloat32, count, seed, lo, hi, nullptr);
  TensorView v = TensorView::contiguous(buf.data(), DType::kFloat32, {1});
  v.rank = static_cast<int>(sizes.size());
  for (int d = 0; d < v.rank; ++d) {
    v.sizes[d] = sizes[static_cast<std::size_t>(d)];
    v.strides[d] = strides[static_cast<std::size_t>(d)];
  }
  return v;
}

A8W8Problem make_a8w8(std::int64_t m, std::int64_t n, std::int64_t k, DType in, ScaleGranularity xg,
                      ScaleGranularity wg, bool bias, std::size_t l2_bytes, std::size_t budget, std::uint64_t seed) {
  A8W8Problem p;
  p.input_bytes = static_cast<std::size_t>(m * k + n * k + 4 * (m + n));
  const int count = rotation_count(p.input_bytes, l2_bytes, 3.0, 64, budget, 2);
  std::mt19937_64 rng(seed);
  const float unit = in == DType::kInt8 ? 1.0f / 127 : 0.5f;
  for (int i = 0; i < count; ++i) {
    A8W8Set s;
    s.x = DeviceBuffer(static_cast<std::size_t>(m * k) + 16);
    s.w = DeviceBuffer(static_cast<std::size_t>(n * k) + 16);
    fill_operand(s.x, m * k, in, rng);
    fill_operand(s.w, n * k, in, rng);
    s.xsv = make_scale(s.xs, xg, true, m, k, seed * 7 + 2 * i, 0.5f * unit, 1.5f * unit);
    s.wsv = make_scale(s.ws, wg, false, n, k, seed * 7 + 2 * i + 1, 0.5f * unit, 1.5f * unit);
    s.out = DeviceBuffer(static_cast<std::size_t>(m * n) * 2);
    s.xv = TensorView::contiguous(s.x.data(), in, {m, k});
    s.wv = TensorView::contiguous(s.w.data(), in, {n, k});
    s.ov = TensorView::contiguous(s.out.data(), DType::kBFloat16, {m, n});
    p.sets.push_back(std::move(s));
  }
  p.has_bias = bias;
  if (bias) {
    p.bias = DeviceBuffer(static_cast<std::size_t>(n) * 2);
    fill_uniform(p.bias.data(), DType::kBFloat16, n, seed * 7 + 1000, -1.0f, 1.0f, nullptr);
    p.bv = TensorView::contiguous(p.bias.data(), DType::kBFloat16, {n});
  }
  return p;
}

GemmArgs args_of(const A8W8Problem& d, const A8W8Set& s) {
  GemmArgs a;
  a.a = s.x.data();
  a.b = s.w.data();
  a.out = s.out.data();
  a.bias = d.has_bias ? d.bias.data() : nullptr;
  a.a_scale = s.xs.as<float>();
  a.b_scale = s.ws.as<float>();
  return a;
}

// The family's entry points on one set.
void run_entry(bool blockscale, const A8W8Problem& d, const A8W8Set& s, Stream stream) {
  const TensorView* bias = d.has_bias ? &d.bv : nullptr;
  if (blockscale) {
    gemm_a8w8_blockscale(s.xv, s.wv, s.xsv, s.wsv, s.ov, bias, stream);
  } else {
    gemm_a8w8(s.xv, s.wv, s.xsv, s.wsv, s.ov, bias, stream);
  }
}
GemmProblem problem_of(bool blockscale, const A8W8Problem& d, const A8W8Set& s) {
  const TensorView* bias = d.has_bias ? &d.bv : nullptr;
  return blockscale ? validate_a8w8_blockscale(s.xv, s.wv, s.xsv, s.wsv, s.ov, bias).problem
                    : validate_a8w8(s.xv, s.wv, s.xsv, s.wsv, s.ov, bias).problem;
}
DispatchInfo describe_of(bool blockscale, const A8W8Problem& d, const A8W8Set& s) {
  const TensorView* bias = d.has_bias ? &d.bv : nullptr;
  return blockscale ? describe_gemm_a8w8_blockscale(s.xv, s.wv, s.xsv, s.wsv, s.ov, bias)
                    : describe_gemm_a8w8(s.xv, s.wv, s.xsv, s.wsv, s.ov, bias);
}

// The output of the first set against the reference: "ok" or "<n> bad". Tolerance as
// tests/gpu/test_gemm_a8w8.cpp argues it (operands bounded by 1.5 after scaling).
std::string check_a8w8(const A8W8Problem& d, const GemmProblem& p) {
  const A8W8Set& s = d.sets[0];
  DeviceBuffer ref(static_cast<std::size_t>(p.m * p.n) * sizeof(float));
  fill_nan(s.out.data(), DType::kBFloat16, p.m * p.n, nullptr);
  run_entry(p.family == OpFamily::kA8W8Blockscale, d, s, nullptr);
  GemmArgs ra = args_of(d, s);
  ra.out = ref.data();
  run_reference_gemm_a8w8(p, ra, DType::kFloat32, p.n, nullptr);
  Tolerance tol = gemm_tolerance(DType::kBFloat16, p.k, d.has_bias);
  tol.atol *= 2.25;
  tol.atol += fp8_accumulation_atol(p, ra, nullptr);
  const CompareResult cr = compare_with_reference(s.out.data(), DType::kBFloat16, p.n, ref.as<float>(), p.n, p.m, p.n,
                                                  tol.rtol, tol.atol, nullptr);
  return cr.bad == 0 ? "ok" : fmt::format("{} bad", cr.bad);
}

}  // namespace

int run_bench_a8w8(const BenchOptions& o) {
  const bool blockscale = o.family == "a8w8_blockscale";
  TGEMM_CHECK(o.dtype == "fp8" || (o.dtype == "int8" && !blockscale), "tgemm bench", "--family ", o.family,
              " takes --dtype fp8", blockscale ? "" : " or int8", ", got '", o.dtype, "'");
  const auto recipe = parse_scale_recipe(blockscale ? "block" : o.scales);
  TGEMM_CHECK(
      recipe && recipe->first != ScaleGranularity::kNone && (blockscale || recipe->first != ScaleGranularity::kBlock),
      "tgemm bench", "--scales must be tensor, token, channel or token_channel, got '", o.scales, "'");
  const std::string scales(format_scale_recipe(recipe->first, recipe->second));
  const DType in = o.dtype == "fp8" ? DType::kFloat8E4M3 : DType::kInt8;
  const FamilyBench fb = start_family_bench();
  const DeviceInfo& dev = *fb.dev;
  const std::vector<std::int64_t> ms = o.m_grid ? m_grid(o.m_grid_max) : parse_int_list(o.ms, "--m");
  const std::vector<SuiteShape> suite = read_suite(o.suite);
  fmt::print("device {} ({} SMs), copy {:.2f} TB/s, {} {} scales={} bias={}\n", dev.name, dev.sm_count, fb.copy_tbps,
             o.family, o.dtype, scales, o.bias);
  json rows = json::array();
  int count = 0, wrong = 0;
  std::uint64_t seed = 1;
  for (std::int64_t m : ms) {
    for (const SuiteShape& shape : suite) {
      if (!o.filter.empty() && (shape.model + "/" + shape.layer).find(o.filter) == std::string::npos) continue;
      if (o.max_problems > 0 && count >= o.max_problems) break;
      const std::int64_t n = shape.n, k = shape.k;
      A8W8Problem d = make_a8w8(m, n, k, in, recipe->first, recipe->second, o.bias, dev.l2_bytes, fb.budget, seed++);
      const A8W8Set& s0 = d.sets[0];
      GemmProblem p = problem_of(blockscale, d, s0);
      p.device = fb.device;
      const SolutionPtr base = fb.lt->default_solution(p);
      if (base == nullptr && blockscale) {
        // cuBLASLt's block-scaled kernels refuse it (N not a multiple of 4): no baseline to time.
        fmt::print("{:<16} {:<8} {:>5} {:>6} {:>6} | skipped: cuBLASLt has no block-scaled algorithm\n", shape.model,
                   shape.layer, m, n, k);
        continue;
      }
      TGEMM_CHECK(base != nullptr, "tgemm bench", "cuBLASLt has no default for ", p.describe());
      DeviceBuffer ws_buf(std::max<std::size_t>(base->workspace_size(p), 256));
      const Workspace ws{ws_buf.data(), ws_buf.bytes()};
      base->run(p, args_of(d, s0), ws, nullptr);
      const DispatchInfo info = describe_of(blockscale, d, s0);
      TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "bench");
      const std::string check = o.check ? check_a8w8(d, p) : "-";
      wrong += check == "ok" || check == "-" ? 0 : 1;
      const double bytes = static_cast<double>(d.input_bytes + static_cast<std::size_t>(m * n * 2));
      const double est_us = std::max(2.0 * m * n * k / 1.3e9, std::max(bytes / 3.0e6, 1.0));
      std::vector<TimingStats> both;
      const auto set = [&](int i) -> const A8W8Set& { return d.sets[static_cast<std::size_t>(i) % d.sets.size()]; };
      const json reading = time_baseline_and_tgemm(
          o, est_us, d.sets.size(), [&](int i, Stream st) { base->run(p, args_of(d, set(i)), ws, st); },
          [&](int i, Stream st) { run_entry(blockscale, d, set(i), st); }, both);
      const double sp = reading["speedup"].get<double>(), t_us = reading["tgemm_us"].get<double>();
      const double floor_us = bytes / (fb.copy_tbps * 1e12) * 1e6;
      json row = {{"family", o.family},
                  {"model", shape.model},
                  {"layer", shape.layer},
                  {"M", m},
                  {"N", n},
                  {"K", k},
                  {"dtype", std::string(dtype_name(in))},
                  {"outdtype", "torch.bfloat16"},
                  {"scales", scales},
                  {"bias", o.bias}};
      row.update(dispatch_fields(base->name(), info, check, d.sets.size(), floor_us, bytes, 2.0 * m * n * k, t_us));
      row.update(reading);
      rows.push_back(row);
      ++count;
      fmt::print("{:<16} {:<8} {:>5} {:>6} {:>6} | {:>9.2f} {:>9.2f} {:>6.3f}x | {:>8.2f} {:>7.1f} | {} ({}) {}\n",
                 shape.model, shape.layer, m, n, k, both[0].median_us, t_us, sp, floor_us, row["tflops"].get<double>(),
                 info.kernel_name, info.level, check);
      std::fflush(stdout);
    }
  }
  const std::string stem = std::filesystem::path(o.suite).stem().string() +
                           (blockscale ? std::string("_a8w8_blockscale") : "_a8w8_" + o.dtype + "_" + scales);
  finish_family_bench(o, dev, fb.copy_tbps, stem, rows, wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
