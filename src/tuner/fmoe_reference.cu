// fused_moe's fp32 reference and its check (src/tuner/fmoe_reference.h).
//
// On the GPU, not the host: a tune key is raced at its bucket's top T, up to thousands of tokens
// (Mixtral-8x7B at T = 4096 is 2.9 TFLOP), which a host loop would take minutes over per routing,
// while these kernels take about a second. Plain fp32 FMA on CUDA cores in shared-memory tiles,
// with the slots sorted by expert on the host (the routing is built there), so that each tile of
// slots reads one expert's weights: simple enough to trust, and tiled because an untiled dot
// product per output re-reads an expert's weights (hundreds of MB) once per slot.
// Tested through tests/gpu/test_fmoe_table.cpp (the tuner's GPU test).
#include "tuner/fmoe_reference.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "cuda/cuda_check.h"
#include "kernels/common/activation.cuh"
#include "kernels/common/numeric.cuh"
#include "runtime/device_utils.h"

namespace tgemm {
namespace {

constexpr const char* kOp = "fmoe_reference";
constexpr int kTile = 32;      // slots x outputs of a block, and the reduction step
constexpr int kThreads = 256;  // each thread: one slot row, 4 outputs 8 apart
constexpr int kPerThread = kTile * kTile / kThreads;

// A tile of one expert's sorted slots: rows [start, start + rows) of the sorted order.
struct SlotTile {
  std::int32_t expert, start, rows;
};

// act(g) and g * act'(g).
__device__ __forceinline__ void activation(float g, bool gelu, float* a, float* ga) {
  if (gelu) {
    *a = kernels::gelu_erf(g);
    *ga = g * (0.5f * (1.0f + erff(g * 0.70710678118654752f)) + g * 0.39894228040143268f * expf(-0.5f * g * g));
  } else {
    const float s = 1.0f / (1.0f + expf(-g));
    *a = g * s;
    *ga = g * s * (1.0f + g * (1.0f - s));
  }
}

// act[pos, c] = act(g) * u and bnd[pos, c] = 2 |act(g) u| + |g act'(g) u| for the sorted slot
// pos, g = x_t . w1[e, c], u = x_t . w1[e, I + c]. Grid: (tiles, ceil(I / kTile)).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    gate_up_kernel(const T* __restrict__ x, const T* __restrict__ w1, const std::int32_t* __restrict__ order,
                   const SlotTile* __restrict__ tiles, std::int64_t topk, std::int64_t h, std::int64_t inter, bool gelu,
                   float* __restrict__ act, float* __restrict__ bnd) {
  __shared__ float xs[kTile][kTile + 1], gs[kTile][kTile + 1], us[kTile][kTile + 1];
  const SlotTile tile = tiles[blockIdx.x];
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  const int r = threadIdx.x / 8, cq = threadIdx.x % 8;
  const T* gate = w1 + static_cast<std::int64_t>(tile.expert) * 2 * inter * h;
  const T* up = gate + inter * h;
  float g[kPerThread] = {}, u[kPerThread] = {};
  for (std::int64_t h0 = 0; h0 < h; h0 += kTile) {
    for (int i = threadIdx.x; i < kTile * kTile; i += kThreads) {
      const int rr = i / kTile, kk = i % kTile;
      const std::int64_t hh = h0 + kk, c = c0 + rr;
      const std::int64_t tok = rr < tile.rows ? order[tile.start + rr] / topk : 0;
      xs[rr][kk] = rr < tile.rows && hh < h ? to_float(x[tok * h + hh]) : 0.0f;
      gs[rr][kk] = c < inter && hh < h ? to_float(gate[c * h + hh]) : 0.0f;
      us[rr][kk] = c < inter && hh < h ? to_float(up[c * h + hh]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < kTile; ++kk) {
      const float xv = xs[r][kk];
      for (int q = 0; q < kPerThread; ++q) {
        g[q] = fmaf(xv, gs[cq + 8 * q][kk], g[q]);
        u[q] = fmaf(xv, us[cq + 8 * q][kk], u[q]);
      }
    }
    __syncthreads();
  }
  if (r >= tile.rows) return;
  const std::int64_t pos = tile.start + r;
  for (int q = 0; q < kPerThread; ++q) {
    const std::int64_t c = c0 + cq + 8 * q;
    if (c >= inter) continue;
    float a = 0, ga = 0;
    activation(g[q], gelu, &a, &ga);
    act[pos * inter + c] = a * u[q];
    bnd[pos * inter + c] = 2.0f * fabsf(a * u[q]) + fabsf(ga * u[q]);
  }
}

// y[pos, n] = act[pos] . w2[e, n] and yb[pos, n] = sum_i (bnd[pos, i] w2[e, n, i])^2. Grid: (tiles, ceil(H / kTile)).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    down_kernel(const float* __restrict__ act, const float* __restrict__ bnd, const T* __restrict__ w2,
                const SlotTile* __restrict__ tiles, std::int64_t h, std::int64_t inter, float* __restrict__ y,
                float* __restrict__ yb) {
  __shared__ float as[kTile][kTile + 1], bs[kTile][kTile + 1], ws[kTile][kTile + 1];
  const SlotTile tile = tiles[blockIdx.x];
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  const int r = threadIdx.x / 8, cq = threadIdx.x % 8;
  const T* w = w2 + static_cast<std::int64_t>(tile.expert) * h * inter;
  float acc[kPerThread] = {}, accb[kPerThread] = {};
  for (std::int64_t i0 = 0; i0 < inter; i0 += kTile) {
    for (int i = threadIdx.x; i < kTile * kTile; i += kThreads) {
      const int rr = i / kTile, kk = i % kTile;
      const std::int64_t ii = i0 + kk, n = n0 + rr;
      const std::int64_t pos = tile.start + rr;
      const bool in = rr < tile.rows && ii < inter;
      as[rr][kk] = in ? act[pos * inter + ii] : 0.0f;
      bs[rr][kk] = in ? bnd[pos * inter + ii] : 0.0f;
      ws[rr][kk] = n < h && ii < inter ? to_float(w[n * inter + ii]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < kTile; ++kk) {
      const float av = as[r][kk], bv = bs[r][kk];
      for (int q = 0; q < kPerThread; ++q) {
        const float wv = ws[cq + 8 * q][kk];
        acc[q] = fmaf(av, wv, acc[q]);
        accb[q] = fmaf(bv * wv, bv * wv, accb[q]);
      }
    }
    __syncthreads();
  }
  if (r >= tile.rows) return;
  const std::int64_t pos = tile.start + r;
  for (int q = 0; q < kPerThread; ++q) {
    const std::int64_t n = n0 + cq + 8 * q;
    if (n >= h) continue;
    y[pos * h + n] = acc[q];
    yb[pos * h + n] = accb[q];
  }
}

// ref[t, n] = sum_j w_tj y[pos(t, j), n] in slot order, mag[t, n] = sqrt(sum_j w_tj^2 yb[pos(t, j), n]);
// pos -1: the slot has no local expert.
__global__ void combine_kernel(const float* __restrict__ y, const float* __restrict__ yb,
                               const std::int32_t* __restrict__ pos, const float* __restrict__ weights,
                               std::int64_t tokens, std::int64_t topk, std::int64_t h, float* __restrict__ ref,
                               float* __restrict__ mag) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= tokens * h) return;
  const std::int64_t t = i / h, n = i % h;
  float acc = 0, accb = 0;
  for (std::int64_t j = 0; j < topk; ++j) {
    const std::int32_t p = pos[t * topk + j];
    if (p < 0) continue;
    const float w = weights[t * topk + j];
    acc = fmaf(w, y[p * h + n], acc);
    accb = fmaf(w * w, yb[p * h + n], accb);
  }
  ref[i] = acc;
  mag[i] = sqrtf(accb);
}

template <typename T>
__global__ void compare_kernel(const T* __restrict__ out, const float* __restrict__ ref, const float* __restrict__ mag,
                               std::int64_t count, float rtol, float mag_coef, float atol,
                               unsigned long long* __restrict__ bad, unsigned long long* __restrict__ first) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float o = to_float(out[i]);
  const float tol = rtol * fabsf(ref[i]) + mag_coef * mag[i] + atol;
  // Written so that NaN and Inf fail: !(err <= tol) holds for a NaN error.
  if (!(fabsf(o - ref[i]) <= tol)) {
    atomicAdd(bad, 1ull);
    atomicMin(first, static_cast<unsigned long long>(i));
  }
}

template <typename T>
__global__ void read_element_kernel(const T* __restrict__ out, std::int64_t i, float* __restrict__ value) {
  *value = to_float(out[i]);
}

int blocks_for(std::int64_t n) { return static_cast<int>((n + 255) / 256); }

template <typename F>
void by_dtype(DType d, F f) {
  if (d == DType::kBFloat16) {
    f(bf16{});
  } else if (d == DType::kFloat16) {
    f(fp16{});
  } else {
    TGEMM_CHECK(d == DType::kFloat32, kOp, "dtype must be bf16, fp16 or fp32, got ", dtype_name(d));
    f(float{});
  }
}

}  // namespace

void fmoe_reference(const FmoeReferenceProblem& p, const void* hidden, const void* w1, const void* w2,
                    const std::vector<std::int32_t>& local_ids, const std::vector<float>& weights, float* ref,
                    float* mag, Stream stream) {
  const std::int64_t slots = p.tokens * p.topk;
  TGEMM_CHECK(
      static_cast<std::int64_t>(local_ids.size()) == slots && static_cast<std::int64_t>(weights.size()) == slots, kOp,
      "needs T * k = ", slots, " ids and weights, got ", local_ids.size(), " and ", weights.size());
  TGEMM_CHECK(p.dtype == DType::kBFloat16 || p.dtype == DType::kFloat16, kOp, "dtype must be bf16 or fp16, got ",
              dtype_name(p.dtype));
  auto s = reinterpret_cast<cudaStream_t>(stream);
  // The slots sorted by expert (stably: in slot order within an expert), each slot's position in
  // that order, and the kTile-row tiles of each expert's run.
  std::vector<std::int32_t> order, pos(static_cast<std::size_t>(slots), -1);
  std::vector<SlotTile> tiles;
  for (std::int64_t e = 0; e < p.experts; ++e) {
    const auto start = static_cast<std::int32_t>(order.size());
    for (std::int64_t i = 0; i < slots; ++i) {
      if (local_ids[static_cast<std::size_t>(i)] != e) continue;
      pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(order.size());
      order.push_back(static_cast<std::int32_t>(i));
    }
    const auto rows = static_cast<std::int32_t>(order.size()) - start;
    for (std::int32_t r = 0; r < rows; r += kTile) {
      tiles.push_back({static_cast<std::int32_t>(e), start + r, std::min(kTile, rows - r)});
    }
  }
  const auto local = static_cast<std::int64_t>(order.size());
  DeviceBuffer d_pos(pos.size() * sizeof(std::int32_t)), d_weights(weights.size() * sizeof(float));
  copy_to_device(d_pos.data(), pos.data(), pos.size() * sizeof(std::int32_t));
  copy_to_device(d_weights.data(), weights.data(), weights.size() * sizeof(float));
  // y and yb [local, H]; act and bnd [local, I]. Sized for one slot at least: a routing with no
  // local slot still writes ref = 0.
  const auto rows = static_cast<std::size_t>(std::max<std::int64_t>(local, 1));
  DeviceBuffer y(rows * static_cast<std::size_t>(p.hidden) * sizeof(float));
  DeviceBuffer yb(rows * static_cast<std::size_t>(p.hidden) * sizeof(float));
  if (local > 0) {
    DeviceBuffer d_order(order.size() * sizeof(std::int32_t)), d_tiles(tiles.size() * sizeof(SlotTile));
    copy_to_device(d_order.data(), order.data(), order.size() * sizeof(std::int32_t));
    copy_to_device(d_tiles.data(), tiles.data(), tiles.size() * sizeof(SlotTile));
    DeviceBuffer act(rows * static_cast<std::size_t>(p.inter) * sizeof(float));
    DeviceBuffer bnd(rows * static_cast<std::size_t>(p.inter) * sizeof(float));
    const bool gelu = p.activation == MoeActivation::kGelu;
    const auto n_tiles = static_cast<unsigned>(tiles.size());
    const std::int64_t up_cols = (p.inter + kTile - 1) / kTile, down_cols = (p.hidden + kTile - 1) / kTile;
    TGEMM_CHECK(std::max(up_cols, down_cols) <= 65535, kOp, "H and I must be at most ", 65535 * kTile,
                ", got H=", p.hidden, " I=", p.inter);
    const dim3 grid_up(n_tiles, static_cast<unsigned>(up_cols));
    const dim3 grid_down(n_tiles, static_cast<unsigned>(down_cols));
    auto run = [&](auto tag) {
      using T = decltype(tag);
      gate_up_kernel<T><<<grid_up, kThreads, 0, s>>>(static_cast<const T*>(hidden), static_cast<const T*>(w1),
                                                     d_order.as<std::int32_t>(), d_tiles.as<SlotTile>(), p.topk,
                                                     p.hidden, p.inter, gelu, act.as<float>(), bnd.as<float>());
      TGEMM_CUDA_CHECK_LAUNCH(kOp);
      down_kernel<T><<<grid_down, kThreads, 0, s>>>(act.as<float>(), bnd.as<float>(), static_cast<const T*>(w2),
                                                    d_tiles.as<SlotTile>(), p.hidden, p.inter, y.as<float>(),
                                                    yb.as<float>());
      TGEMM_CUDA_CHECK_LAUNCH(kOp);
    };
    if (p.dtype == DType::kBFloat16) {
      run(bf16{});
    } else {
      run(fp16{});
    }
    TGEMM_CUDA_CHECK(cudaStreamSynchronize(s), kOp);
  }
  const std::int64_t count = p.tokens * p.hidden;
  combine_kernel<<<blocks_for(count), 256, 0, s>>>(y.as<float>(), yb.as<float>(), d_pos.as<std::int32_t>(),
                                                   d_weights.as<float>(), p.tokens, p.topk, p.hidden, ref, mag);
  TGEMM_CUDA_CHECK_LAUNCH(kOp);
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(s), kOp);
}

FmoeCompare fmoe_compare(const void* out, DType out_type, const float* ref, const float* mag, std::int64_t count,
                         double rtol, double mag_coef, double atol, Stream stream) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  FmoeCompare r;
  r.checked = count;
  if (count == 0) return r;
  DeviceBuffer counters(2 * sizeof(unsigned long long)), value(sizeof(float));
  const unsigned long long init[2] = {0ull, ~0ull};
  TGEMM_CUDA_CHECK(cudaMemcpyAsync(counters.data(), init, sizeof(init), cudaMemcpyHostToDevice, s), kOp);
  auto* bad = counters.as<unsigned long long>();
  by_dtype(out_type, [&](auto tag) {
    using T = decltype(tag);
    compare_kernel<T><<<blocks_for(count), 256, 0, s>>>(static_cast<const T*>(out), ref, mag, count,
                                                        static_cast<float>(rtol), static_cast<float>(mag_coef),
                                                        static_cast<float>(atol), bad, bad + 1);
  });
  TGEMM_CUDA_CHECK_LAUNCH(kOp);
  unsigned long long got[2] = {0, 0};
  TGEMM_CUDA_CHECK(cudaMemcpyAsync(got, counters.data(), sizeof(got), cudaMemcpyDeviceToHost, s), kOp);
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(s), kOp);
  r.bad = static_cast<std::int64_t>(got[0]);
  if (r.bad == 0) return r;
  r.first_bad = static_cast<std::int64_t>(got[1]);
  by_dtype(out_type, [&](auto tag) {
    using T = decltype(tag);
    read_element_kernel<T><<<1, 1, 0, s>>>(static_cast<const T*>(out), r.first_bad, value.as<float>());
  });
  TGEMM_CUDA_CHECK_LAUNCH(kOp);
  float o = 0, f = 0, m = 0;
  TGEMM_CUDA_CHECK(cudaMemcpyAsync(&o, value.data(), sizeof(float), cudaMemcpyDeviceToHost, s), kOp);
  TGEMM_CUDA_CHECK(cudaMemcpyAsync(&f, ref + r.first_bad, sizeof(float), cudaMemcpyDeviceToHost, s), kOp);
  TGEMM_CUDA_CHECK(cudaMemcpyAsync(&m, mag + r.first_bad, sizeof(float), cudaMemcpyDeviceToHost, s), kOp);
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(s), kOp);
  r.first_bad_out = o;
  r.first_bad_ref = f;
  r.first_bad_tol = rtol * std::fabs(f) + mag_coef * m + atol;
  return r;
}

}  // namespace tgemm
