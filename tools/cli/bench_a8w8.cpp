// `tgemm bench --family a8w8`: gemm_a8w8's dispatch against cuBLASLt's default for the same
// problem (the cublaslt backend's a8w8 default, what runs without a table row), on a shape suite,
// timed as `tgemm bench` times a16w16 (CUDA graphs over operands rotated past L2, interleaved
// rounds, the paired median ratio, a re-measure below --remeasure-below), each output checked
// against the a8w8 reference kernel (dequantized operands, fp32).
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
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

// One rotation: operands, scales and output of one call.
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

A8W8Problem make_a8w8(std::int64_t m, std::int64_t n, std::int64_t k, DType in, bool per_row_x, bool per_row_w,
                      bool bias, std::size_t l2_bytes, std::size_t budget, std::uint64_t seed) {
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
    const std::int64_t xs_n = per_row_x ? m : 1, ws_n = per_row_w ? n : 1;
    s.xs = DeviceBuffer(static_cast<std::size_t>(xs_n) * 4);
    s.ws = DeviceBuffer(static_cast<std::size_t>(ws_n) * 4);
    fill_uniform(s.xs.data(), DType::kFloat32, xs_n, seed * 7 + 2 * i, 0.5f * unit, 1.5f * unit, nullptr);
    fill_uniform(s.ws.data(), DType::kFloat32, ws_n, seed * 7 + 2 * i + 1, 0.5f * unit, 1.5f * unit, nullptr);
    s.out = DeviceBuffer(static_cast<std::size_t>(m * n) * 2);
    s.xv = TensorView::contiguous(s.x.data(), in, {m, k});
    s.wv = TensorView::contiguous(s.w.data(), in, {n, k});
    s.xsv = per_row_x ? TensorView::contiguous(s.xs.data(), DType::kFloat32, {m, 1})
                      : TensorView::contiguous(s.xs.data(), DType::kFloat32, {1});
    s.wsv = per_row_w ? TensorView::contiguous(s.ws.data(), DType::kFloat32, {n, 1})
                      : TensorView::contiguous(s.ws.data(), DType::kFloat32, {1});
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

// The output of the first set against the reference: "ok" or "<n> bad". Tolerance as
// tests/gpu/test_gemm_a8w8.cpp argues it (operands bounded by 1.5 after scaling).
std::string check_a8w8(const A8W8Problem& d, const GemmProblem& p) {
  const A8W8Set& s = d.sets[0];
  DeviceBuffer ref(static_cast<std::size_t>(p.m * p.n) * sizeof(float));
  fill_nan(s.out.data(), DType::kBFloat16, p.m * p.n, nullptr);
  gemm_a8w8(s.xv, s.wv, s.xsv, s.wsv, s.ov, d.has_bias ? &d.bv : nullptr, nullptr);
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
  TGEMM_CHECK(o.dtype == "fp8" || o.dtype == "int8", "tgemm bench", "--family a8w8 takes --dtype fp8 or int8, got '",
              o.dtype, "'");
  const auto recipe = parse_scale_recipe(o.scales);
  TGEMM_CHECK(recipe && recipe->first != ScaleGranularity::kNone, "tgemm bench",
              "--scales must be tensor, token, channel or token_channel, got '", o.scales, "'");
  const DType in = o.dtype == "fp8" ? DType::kFloat8E4M3 : DType::kInt8;
  const FamilyBench env = start_family_bench();
  const int device = env.device;
  const DeviceInfo& dev = *env.dev;
  const Backend* lt = env.lt;
  const std::size_t budget = env.budget;
  const double copy_tbps = env.copy_tbps;
  const std::vector<std::int64_t> ms = o.m_grid ? m_grid(o.m_grid_max) : parse_int_list(o.ms, "--m");
  const std::vector<SuiteShape> suite = read_suite(o.suite);
  fmt::print("device {} ({} SMs), copy {:.2f} TB/s, a8w8 {} scales={} bias={}\n", dev.name, dev.sm_count, copy_tbps,
             o.dtype, o.scales, o.bias);
  json rows = json::array();
  int count = 0, wrong = 0;
  std::uint64_t seed = 1;
  for (std::int64_t m : ms) {
    for (const SuiteShape& shape : suite) {
      if (!o.filter.empty() && (shape.model + "/" + shape.layer).find(o.filter) == std::string::npos) continue;
      if (o.max_problems > 0 && count >= o.max_problems) break;
      const std::int64_t n = shape.n, k = shape.k;
      A8W8Problem d = make_a8w8(m, n, k, in, recipe->first == ScaleGranularity::kRow,
                                recipe->second == ScaleGranularity::kRow, o.bias, dev.l2_bytes, budget, seed++);
      const A8W8Set& s0 = d.sets[0];
      GemmProblem p = validate_a8w8(s0.xv, s0.wv, s0.xsv, s0.wsv, s0.ov, d.has_bias ? &d.bv : nullptr).problem;
      p.device = device;
      const SolutionPtr base = lt->default_solution(p);
      TGEMM_CHECK(base != nullptr, "tgemm bench", "cuBLASLt has no default for ", p.describe());
      DeviceBuffer ws_buf(std::max<std::size_t>(base->workspace_size(p), 256));
      const Workspace ws{ws_buf.data(), ws_buf.bytes()};
      base->run(p, args_of(d, s0), ws, nullptr);
      const DispatchInfo info = describe_gemm_a8w8(s0.xv, s0.wv, s0.xsv, s0.wsv, s0.ov, d.has_bias ? &d.bv : nullptr);
      TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "bench");
      const std::string check = o.check ? check_a8w8(d, p) : "-";
      wrong += check == "ok" || check == "-" ? 0 : 1;
      const double bytes = static_cast<double>(d.input_bytes + static_cast<std::size_t>(m * n * 2));
      const double est_us = std::max(2.0 * m * n * k / 1.3e9, std::max(bytes / 3.0e6, 1.0));
      std::vector<TimingStats> both;
      const json reading = time_baseline_and_tgemm(
          o, est_us, d.sets.size(),
          [&](int i, Stream st) {
            base->run(p, args_of(d, d.sets[static_cast<std::size_t>(i) % d.sets.size()]), ws, st);
          },
          [&](int i, Stream st) {
            const A8W8Set& r = d.sets[static_cast<std::size_t>(i) % d.sets.size()];
            gemm_a8w8(r.xv, r.wv, r.xsv, r.wsv, r.ov, d.has_bias ? &d.bv : nullptr, st);
          },
          both);
      const double sp = reading["speedup"].get<double>(), t_us = reading["tgemm_us"].get<double>();
      const double floor_us = bytes / (copy_tbps * 1e12) * 1e6;
      json row = {{"family", "a8w8"},
                  {"model", shape.model},
                  {"layer", shape.layer},
                  {"M", m},
                  {"N", n},
                  {"K", k},
                  {"dtype", std::string(dtype_name(in))},
                  {"outdtype", "torch.bfloat16"},
                  {"scales", o.scales},
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
  finish_family_bench(o, dev, copy_tbps,
                      std::filesystem::path(o.suite).stem().string() + "_a8w8_" + o.dtype + "_" + o.scales, rows,
                      wrong);
  return wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
