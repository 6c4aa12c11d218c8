#include "tuner/data.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/reference/reference_backend.h"
#include "core/platform.h"
#include "cuda/cuda_check.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"

namespace tgemm {

namespace {

constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t v, std::size_t q) { return (v + q - 1) / q * q; }

// Rotation sets at most: beyond 32 the sets only cost memory (3 L2 sizes are reached first).
constexpr int kMaxRotationSets = 32;

// Floats of x's and w's scales: 1 or a row's count (a8w8); the block-scale matrices in the
// problem's layout (blockscale: x_scale [M, L] row-major or MN-major, w_scale [ceil(N/128), L]).
std::int64_t x_scale_count(const GemmProblem& p) {
  if (p.a_scale == ScaleGranularity::kBlock) {
    const std::int64_t kb = (p.k + 127) / 128;
    return p.a_scale_mn_major ? kb * p.ld_a_scale : p.m * p.ld_a_scale;
  }
  // a8w8_batched: every product's scale or vector, batch_stride_a_scale floats apart.
  return (p.batch - 1) * p.batch_stride_a_scale + (p.a_scale == ScaleGranularity::kRow ? p.m : 1);
}
std::int64_t w_scale_count(const GemmProblem& p) {
  if (p.b_scale == ScaleGranularity::kBlock) return (p.n + 127) / 128 * p.ld_b_scale;
  return (p.batch - 1) * p.batch_stride_b_scale + (p.b_scale == ScaleGranularity::kRow ? p.n : 1);
}

// Elements of the dense operands the tuner races (problem_of_key's layouts): x, w and out of every
// product of the batch, one after another (batch 1 outside batched_gemm and batched_gemm_a8w8). The B products' outputs
// are checked as one [B * M, N] matrix.
std::int64_t x_elems(const GemmProblem& p) { return p.batch * p.m * p.k; }
std::int64_t w_elems(const GemmProblem& p) { return p.batch * p.n * p.k; }
std::int64_t out_rows(const GemmProblem& p) { return p.batch * p.m; }

// Bytes of an a8w8 problem's two scale tensors in one set (0 for a16w16).
std::size_t scale_bytes(const GemmProblem& p) {
  if (!quantized_family(p.family)) return 0;
  return round_up(static_cast<std::size_t>(x_scale_count(p)) * 4, kAlign) +
         round_up(static_cast<std::size_t>(w_scale_count(p)) * 4, kAlign);
}

// Random 8-bit operand codes (splitmix64 of (seed, index)): any int8; FP8 e4m3 codes with the
// exponent's top bit cleared, so |v| < 2 and never NaN (0x7f, 0xff).
void fill_8bit(void* data, DType dtype, std::int64_t count, std::uint64_t seed) {
  std::vector<std::uint64_t> host(static_cast<std::size_t>((count + 7) / 8));
  const std::uint64_t mask = dtype == DType::kInt8 ? ~0ull : 0xbfbfbfbfbfbfbfbfull;
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ull;
  for (auto& v : host) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    v = (z ^ (z >> 31)) & mask;
  }
  copy_to_device(data, host.data(), static_cast<std::size_t>(count));
}

void fill_operand(void* data, DType dtype, std::int64_t count, std::uint64_t seed) {
  if (dtype == DType::kFloat8E4M3 || dtype == DType::kInt8) {
    fill_8bit(data, dtype, count, seed);
  } else {
    fill_uniform(data, dtype, count, seed, -1.0f, 1.0f, nullptr);
  }
}

}  // namespace

std::size_t data_bytes(const GemmProblem& p, const DataOptions& o, const DeviceInfo& dev) {
  const std::size_t es = dtype_size(p.a_type);
  const std::size_t o_bytes = static_cast<std::size_t>(out_rows(p) * p.n) * dtype_size(p.out_type);
  const std::size_t per_set = round_up(static_cast<std::size_t>(x_elems(p)) * es, kAlign) +
                              round_up(static_cast<std::size_t>(w_elems(p)) * es, kAlign) + 2 * o_bytes +
                              scale_bytes(p);
  return per_set * static_cast<std::size_t>(rotation_count(per_set, dev.l2_bytes, o.rotation_l2_factor,
                                                             kMaxRotationSets, o.memory_budget, o.min_rotation_sets));
}

RaceData make_data(const GemmProblem& p, const DataOptions& o, const DeviceInfo& dev, std::size_t pad_bytes) {
  RaceData d;
  if (pad_bytes > 0) d.pad = DeviceBuffer(pad_bytes);
  const std::size_t es = dtype_size(p.a_type);
  const std::size_t x_bytes = round_up(static_cast<std::size_t>(x_elems(p)) * es, kAlign);
  const std::size_t w_bytes = round_up(static_cast<std::size_t>(w_elems(p)) * es, kAlign);
  const std::size_t b_bytes = p.has_bias() ? round_up(static_cast<std::size_t>(p.n) * dtype_size(p.bias_type), kAlign) : 0;
  const std::size_t o_bytes = static_cast<std::size_t>(out_rows(p) * p.n) * dtype_size(p.out_type);
  const std::size_t c_bytes = p.use_c ? round_up(o_bytes, kAlign) : 0;
  const std::size_t s_bytes = scale_bytes(p);
  const int sets = rotation_count(x_bytes + w_bytes + o_bytes + c_bytes + s_bytes, dev.l2_bytes, o.rotation_l2_factor,
                                  kMaxRotationSets, o.memory_budget, o.min_rotation_sets);
  for (int i = 0; i < sets; ++i) {
    Operands op;
    op.buf = DeviceBuffer(x_bytes + w_bytes + b_bytes + c_bytes + s_bytes);
    op.out = DeviceBuffer(std::max<std::size_t>(o_bytes, 16));
    char* base = static_cast<char*>(op.buf.data());
    auto seed = static_cast<std::uint64_t>(i) * 3 + 11;
    fill_operand(base, p.a_type, x_elems(p), seed);
    fill_operand(base + x_bytes, p.b_type, w_elems(p), seed + 1);
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
    if (s_bytes > 0) {
      char* scales = base + x_bytes + w_bytes + b_bytes + c_bytes;
      const std::int64_t xs_n = x_scale_count(p), ws_n = w_scale_count(p);
      auto* xs = reinterpret_cast<float*>(scales);
      auto* ws = reinterpret_cast<float*>(scales + round_up(static_cast<std::size_t>(xs_n) * 4, kAlign));
      const float unit = p.a_type == DType::kInt8 ? 1.0f / 127 : 0.5f;
      fill_uniform(xs, DType::kFloat32, xs_n, seed + 4, 0.5f * unit, 1.5f * unit, nullptr);
      fill_uniform(ws, DType::kFloat32, ws_n, seed + 5, 0.5f * unit, 1.5f * unit, nullptr);
      op.args.a_scale = xs;
      op.args.b_scale = ws;
    }
    // Representative scalars for the epilogue the problem is keyed by.
    op.args.alpha = p.unit_alpha ? 1.0f : 0.75f;
    op.args.beta = p.use_c ? 0.5f : 0.0f;
    d.sets.push_back(std::move(op));
  }
  if (pad_bytes > 0) return d;
  d.ref = DeviceBuffer(std::max<std::size_t>(static_cast<std::size_t>(out_rows(p) * p.n) * sizeof(float), 16));
  GemmArgs ra = d.sets[0].args;
  ra.out = d.ref.data();
  if (quantized_family(p.family)) {
    run_reference_gemm_a8w8(p, ra, DType::kFloat32, p.n, nullptr);
    d.fp8_atol = fp8_accumulation_atol(p, d.sets[0].args, nullptr);
  } else {
    run_reference_gemm(p, ra, DType::kFloat32, p.n, nullptr);
  }
  TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "tune: reference");
  return d;
}

std::vector<RaceData> more_placements(const GemmProblem& p, const DataOptions& o, const DeviceInfo& dev, int wanted) {
  const std::size_t bytes = std::max<std::size_t>(data_bytes(p, o, dev), 1);
  const auto n = static_cast<int>(
      std::clamp<std::size_t>(o.memory_budget / bytes, 1, static_cast<std::size_t>(std::max(1, wanted))));
  std::vector<RaceData> out;
  // Pads of 20, 43, 11, ... MB: distinct and not multiples of each other.
  for (int j = 1; j < n; ++j) {
    out.push_back(make_data(p, o, dev, static_cast<std::size_t>(3 + (j * 14 + j * j * 3) % 61) << 20));
  }
  return out;
}

std::function<void(int, Stream)> rotating_launch(const GemmProblem& p, const RaceData& data, const Solution& sol,
                                                 const Workspace& ws) {
  return [&p, &data, &sol, &ws](int i, Stream gs) {
    sol.run(p, data.sets[static_cast<std::size_t>(i) % data.sets.size()].args, ws, gs);
  };
}

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

bool is_sticky_error(const Error& e) {
  return std::string_view(e.what()).find("sticky") != std::string_view::npos;
}

void record_failure(CandidateResult& r, const Error& e) {
  r.error = e.what();
  if (is_sticky_error(e)) throw;
}

double tuner_tolerance(DType out_type) { return out_type == DType::kBFloat16 ? 5e-2 : 1e-2; }

Tolerance strict_tolerance(const GemmProblem& p, double fp8_atol) {
  Tolerance t = gemm_tolerance(p.out_type, p.k, p.has_bias());
  if (quantized_family(p.family)) t.atol = t.atol * 2.25 + fp8_atol;
  return t;
}

void check_solution(const GemmProblem& p, const RaceData& data, const Solution& sol, const Workspace& ws,
                    CandidateResult& r) {
  const double tol = tuner_tolerance(p.out_type);
  const Operands& set0 = data.sets[0];
  fill_nan(set0.args.out, p.out_type, out_rows(p) * p.n, nullptr);
  sol.run(p, set0.args, ws, nullptr);
  check_context(r.name);
  CompareResult loose = compare_with_reference(set0.args.out, p.out_type, p.n, data.ref.as<float>(), p.n, out_rows(p),
                                               p.n, tol, tol + data.fp8_atol, nullptr);
  bool catastrophic = loose.nonfinite > 0 || loose.max_abs_err > 0.5 * std::max(loose.ref_max_abs, 1.0);
  r.err_ratio =
      catastrophic ? 1.0 : static_cast<double>(loose.bad) / static_cast<double>(std::max<std::int64_t>(loose.checked, 1));
  Tolerance strict = strict_tolerance(p, data.fp8_atol);
  CompareResult exact = compare_with_reference(set0.args.out, p.out_type, p.n, data.ref.as<float>(), p.n, out_rows(p),
                                               p.n, strict.rtol, strict.atol, nullptr);
  r.strict_ok = exact.bad == 0;
}

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

}  // namespace tgemm
