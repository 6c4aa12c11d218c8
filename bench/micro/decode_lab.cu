// Decode (M = 1) GEMV lab: where does a GEMV's time over the streaming-read floor go?
//
// A standalone ablation study (not part of the library; built by hand with nvcc, run on the
// device, results in docs/perf-notes.md, skinny section, "Session 13"). For each weight it times,
// with CUDA-graph replays of 20 launches over rotation sets that exceed L2 three times (as `tgemm
// bench` does):
//   floor        the bench's streaming-read kernel (grid-stride, 4 x 16-byte loads in flight),
//                best of the bench's launch shapes;
//   floor+st     the same with one unconditional store per warp at the end (the cost of a kernel
//                that writes something);
//   rows         a version-4-like GEMV: a CTA of 8 warps covers 8 / segs rows, warp w reads one
//                contiguous segment of its row, CHUNKS 16-byte loads in flight per lane, x through
//                L1, a warp-shuffle sum and the segments summed in shared memory (deterministic);
//   rows-nox     the same with x a register constant (no x loads): the cost of x;
//   rows-nored   the same with each warp storing its own partial (no CTA barrier): the cost of
//                the shared-memory reduction;
//   flat         a balanced one-wave GEMV: every warp of grid x 8 warps reads one contiguous
//                range of L 16-byte chunks of the weight (L <= a row, so a range spans at most two
//                rows), keeps one accumulator per row, and rows split between warps are summed
//                through a global workspace in warp order by the last warp to arrive (an atomic
//                counter per row, reset by that warp): deterministic, no clusters;
//   flat-nofix   the same without the fix-up (split rows' partials are only stored).
// Every variant that computes the product is checked against an fp32 reference (relative
// Frobenius error < 1e-2 with bf16 output) on fresh random data, the output poisoned with NaN first.
//
//   lib w<W> c<C> the library's GEMV kernel (kernels/sm90/sm90_gemv_skinny.cuh) launched as the
//                backend launches it, in this harness.
// The lab's kernels use the library's weight load and dot product (skinny_detail::load_weight,
// skinny_gemv_detail::dot8), so only the kernels' structure differs.
//
// Build (from the repository root): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a
//        --expt-relaxed-constexpr -I. -Isrc -Iinclude -o scratch/lab/decode_lab bench/micro/decode_lab.cu
//        src/runtime/timing.cu src/runtime/cuda_check.cpp
// Run:   ./decode_lab [N K ...]   (default: the suite's weights of 8-32 MiB)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/micro/lab_common.cuh"  // CK, fill, poison, the reference check, graph-replay timing
#include "kernels/sm90/sm90_gemv_skinny.cuh"  // the library's GEMV (version 4) and its load/dot helpers

using bf16 = __nv_bfloat16;

// floor+st: the library's streaming read (src/runtime/timing.cu, stream_read_kernel) with one
// unconditional store per warp at the end, the ablation of a kernel that writes something. The
// plain floor runs the library's own kernel (tgemm::stream_read).
__global__ void floor_store_kernel(const uint4* __restrict__ data, std::size_t n, unsigned* sink) {
  constexpr int kInFlight = 4;
  unsigned acc = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < n; i += kInFlight * stride) {
    uint4 v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) v[j] = __ldcs(data + i + j * stride);
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < n; i += stride) {
    uint4 v = __ldcs(data + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (threadIdx.x % 32 == 0) sink[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = acc;
}

// fp32 reference: one warp per row.
__global__ void ref_kernel(const bf16* x, const bf16* w, float* out, int n, int k) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= n) return;
  float s = 0.0f;
  for (int i = lane; i < k; i += 32)
    s += __bfloat162float(w[static_cast<std::size_t>(row) * k + i]) * __bfloat162float(x[i]);
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) out[row] = s;
}

// ---------------------------------------------------------------------------------------------

using tgemm::kernels::skinny_detail::load_weight;

__device__ __forceinline__ float dot8(const uint4& w, const uint4& x, float acc) {
  return tgemm::kernels::skinny_gemv_detail::dot8<bf16>(w, x, acc);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Version-4-like GEMV. MODE 0: full; 1: x a constant; 2: no CTA reduction (partials stored);
// 3 (session 18): full, the warp's row segment first asked of L2 by one bulk prefetch;
// 5 (session 27): x (all K of it) staged once a CTA in dynamic shared memory, read from there;
// 6 (session 27): x read with an L1 evict-last hint (ld.global.nc.L1::evict_last).
__device__ __forceinline__ uint4 ldg_evict_last(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
template <int MODE>
__device__ __forceinline__ uint4 load_x(const uint4* p) {
  if constexpr (MODE == 5) return *p;  // shared memory (generic address)
  else if constexpr (MODE == 6) return ldg_evict_last(p);
  else return __ldg(p);
}
// MIN_BLOCKS > 0 overrides the launch bounds' CTAs an SM (session 15: the library's GEMV asks for 5
// at CHUNKS 4, this kernel for 4; both take 48 registers).
template <int WARPS, int CHUNKS, int MODE, int MIN_BLOCKS = 0>
__global__ void __launch_bounds__(32 * WARPS, MIN_BLOCKS > 0 ? MIN_BLOCKS : (CHUNKS >= 8 ? 2 : 4)) rows_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                          bf16* out, float* part, int n, int k, int segs) {
  __shared__ float partial[WARPS];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int rows_per_cta = WARPS / segs, seg = warp % segs;
  const int row = blockIdx.x * rows_per_cta + warp / segs;
  const int c_total = k / 8;
  const int c_begin = c_total * seg / segs, c_end = c_total * (seg + 1) / segs;
  float acc = 0.0f;
  extern __shared__ uint4 x_smem[];
  if constexpr (MODE == 5) {
    const uint4* xg = reinterpret_cast<const uint4*>(x);
    for (int i = threadIdx.x; i < c_total; i += blockDim.x) x_smem[i] = __ldg(xg + i);
    __syncthreads();
  }
  if (row < n) {
    const uint4* wr = reinterpret_cast<const uint4*>(w + static_cast<std::size_t>(row) * k);
    const uint4* xr = MODE == 5 ? x_smem : reinterpret_cast<const uint4*>(x);
    const uint4 xc = make_uint4(0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u);
    if (MODE == 3 && lane == 0 && c_end > c_begin)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(wr + c_begin),
                   "r"(static_cast<unsigned>((c_end - c_begin) * 16)) : "memory");
#pragma unroll 1
    for (int c0 = c_begin + lane; c0 < c_end; c0 += 32 * CHUNKS) {
      uint4 wv[CHUNKS], xv[CHUNKS];
      if (c0 + 32 * (CHUNKS - 1) < c_end) {  // all in range: the loads go out back to back
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) wv[j] = load_weight(wr + c0 + 32 * j);
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) xv[j] = MODE == 1 ? xc : load_x<MODE>(xr + c0 + 32 * j);
      } else {
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
          const int c = c0 + 32 * j;
          wv[j] = c < c_end ? load_weight(wr + c) : make_uint4(0, 0, 0, 0);
          xv[j] = MODE == 1 ? xc : (c < c_end ? load_x<MODE>(xr + c) : make_uint4(0, 0, 0, 0));
        }
      }
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) acc = dot8(wv[j], xv[j], acc);
    }
  }
  acc = warp_sum(acc);
  if (MODE == 2) {
    if (lane == 0 && row < n) part[static_cast<std::size_t>(row) * segs + seg] = acc;
    return;
  }
  if (lane == 0) partial[warp] = acc;
  __syncthreads();
  if (threadIdx.x < rows_per_cta) {
    const int r = blockIdx.x * rows_per_cta + threadIdx.x;
    if (r < n) {
      float s = 0.0f;
      for (int q = 0; q < segs; ++q) s += partial[threadIdx.x * segs + q];
      out[r] = __float2bfloat16(s);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Balanced flat GEMV: warp gw owns chunks [gw * L, min((gw + 1) * L, T)) of the weight seen as
// one array of T = N * C 16-byte chunks (C = K / 8, ldb = K); L <= C so a range spans at most
// two rows. FIX: 1 = split rows summed by the last warp to arrive, in warp order.
template <int CHUNKS, int FIX>
__global__ void __launch_bounds__(256, CHUNKS >= 8 ? 2 : 4) flat_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                   bf16* out, float* ws, unsigned* counters, int n,
                                                   int k, long long L) {
  const int lane = threadIdx.x % 32;
  const long long gw = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const long long C = k / 8, T = static_cast<long long>(n) * C;
  const long long a = gw * L;
  if (a >= T) return;
  const long long b = min(a + L, T);
  const long long r0 = a / C, boundary = (r0 + 1) * C;
  const uint4* wf = reinterpret_cast<const uint4*>(w) + a;  // this warp's range, 32-bit offsets
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  const int len = static_cast<int>(b - a), split = static_cast<int>(min(boundary, b) - a);
  const int col0 = static_cast<int>(a - r0 * C), c = static_cast<int>(C);
  float acc0 = 0.0f, acc1 = 0.0f;
#pragma unroll 1
  for (int o0 = lane; o0 < len; o0 += 32 * CHUNKS) {
    uint4 wv[CHUNKS], xv[CHUNKS];
    if (o0 + 32 * (CHUNKS - 1) < len) {  // all in range: the loads go out back to back
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) wv[j] = load_weight(wf + o0 + 32 * j);
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) {
        const int col = col0 + o0 + 32 * j;
        xv[j] = __ldg(xr + (col >= c ? col - c : col));
      }
    } else {
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) {
        const int o = o0 + 32 * j, col = col0 + o;
        wv[j] = o < len ? load_weight(wf + o) : make_uint4(0, 0, 0, 0);
        xv[j] = o < len ? __ldg(xr + (col >= c ? col - c : col)) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
      const float d = dot8(wv[j], xv[j], 0.0f);
      if (o0 + 32 * j < split) acc0 += d; else acc1 += d;
    }
  }
  acc0 = warp_sum(acc0);
  acc1 = warp_sum(acc1);
  if (lane != 0) return;
  // Row r0: whole iff the range covers it; row r0 + 1 (if touched) is never whole (L <= C).
  auto finish = [&](long long r, int slot, float v) {
    const bool whole = a <= r * C && b >= (r + 1) * C;
    if (whole) {
      out[r] = __float2bfloat16(v);
      return;
    }
    ws[gw * 2 + slot] = v;
    if (!FIX) return;
    const long long w_first = (r * C) / L, w_last = ((r + 1) * C - 1) / L;
    __threadfence();
    const unsigned old = atomicAdd(&counters[r], 1u);
    if (old != static_cast<unsigned>(w_last - w_first)) return;
    __threadfence();
    float s = 0.0f;
    for (long long q = w_first; q <= w_last; ++q) s += __ldcg(&ws[q * 2 + ((q * L) / C == r ? 0 : 1)]);
    out[r] = __float2bfloat16(s);
    counters[r] = 0;
  };
  finish(r0, 0, acc0);
  if (b > boundary) finish(r0 + 1, 1, acc1);
}


// ---------------------------------------------------------------------------------------------
// Session 27: "pipe", the rows GEMV with CTAs that each take R rows a warp and a software
// pipeline across passes and rows: the loads of pass p + 1 (the next CHUNKS chunks of the warp's
// segment, or the first of its next row) are issued before the arithmetic of pass p, so a warp
// keeps a pass of loads in flight from its first load to its last, where the one-shot CTAs of
// version 4 (K <= 4096: one pass a warp) leave the SM's slots idle between a CTA's loads and the
// next CTA's (launch, reduction, exit). Rows of a CTA: g + j * gpr for j < R (gpr = WARPS / segs
// row groups); the segments of a row are summed in shared memory in segment order after the loop
// (deterministic). R is a run-time argument (<= kPipeMaxR): R = ceil(N / (grid * gpr)) with
// grid = SMs x CTAs an SM makes it persistent. K % 8 == 0 here (the lab's shapes).
constexpr int kPipeMaxR = 32;
template <int WARPS, int CHUNKS, int MIN_BLOCKS>
__global__ void __launch_bounds__(32 * WARPS, MIN_BLOCKS) pipe_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                                     bf16* out, int n, int k, int segs, int R) {
  __shared__ float partial[WARPS][kPipeMaxR];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int gpr = WARPS / segs, seg = warp % segs, g = warp / segs;
  const int base = blockIdx.x * gpr * R + g;
  const int c_total = k / 8;
  const int c_begin = c_total * seg / segs, c_end = c_total * (seg + 1) / segs;
  const int pp = (c_end - c_begin + 32 * CHUNKS - 1) / (32 * CHUNKS);  // passes a row
  const int total = pp * R;
  const uint4* w4 = reinterpret_cast<const uint4*>(w);
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
  int lj = 0, lq = 0;  // the next pass to load: row j, pass q
  auto load = [&](uint4 (&wv)[CHUNKS], uint4 (&xv)[CHUNKS]) {
    const int row = base + lj * gpr;
    const int c0 = c_begin + lq * 32 * CHUNKS + lane;
    const uint4* wr = w4 + static_cast<std::size_t>(row) * c_total;
    if (row < n && c0 + 32 * (CHUNKS - 1) < c_end) {
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) wv[j] = load_weight(wr + c0 + 32 * j);
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) xv[j] = __ldg(x4 + c0 + 32 * j);
    } else {
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) {
        const int c = c0 + 32 * j;
        const bool in = row < n && c < c_end;
        wv[j] = in ? load_weight(wr + c) : make_uint4(0, 0, 0, 0);
        xv[j] = in ? __ldg(x4 + c) : make_uint4(0, 0, 0, 0);
      }
    }
    if (++lq == pp) { lq = 0; ++lj; }
  };
  float acc = 0.0f;
  int cj = 0, cq = 0;  // the pass being computed
  auto compute = [&](const uint4 (&wv)[CHUNKS], const uint4 (&xv)[CHUNKS]) {
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) acc = dot8(wv[j], xv[j], acc);
    if (++cq == pp) {
      const float s = warp_sum(acc);
      if (lane == 0) partial[warp][cj] = s;
      acc = 0.0f;
      cq = 0;
      ++cj;
    }
  };
  uint4 wa[CHUNKS], xa[CHUNKS], wb[CHUNKS], xb[CHUNKS];
  load(wa, xa);
#pragma unroll 1
  for (int p = 0; p < total; p += 2) {
    if (p + 1 < total) load(wb, xb);
    compute(wa, xa);
    if (p + 1 >= total) break;
    if (p + 2 < total) load(wa, xa);
    compute(wb, xb);
  }
  __syncthreads();
  for (int t = threadIdx.x; t < gpr * R; t += blockDim.x) {
    const int gg = t % gpr, j = t / gpr;
    const int r = blockIdx.x * gpr * R + gg + j * gpr;
    if (r < n) {
      float s = 0.0f;
      for (int q = 0; q < segs; ++q) s += partial[gg * segs + q][j];
      out[r] = __float2bfloat16(s);
    }
  }
}

// ---------------------------------------------------------------------------------------------
struct Problem {
  int n, k, sets;
  std::vector<bf16*> w, x, out;
  float* ref = nullptr;
  float* part = nullptr;
  float* ws = nullptr;
  unsigned* counters = nullptr;
  unsigned* sink = nullptr;
};

// Relative Frobenius error of set 0's output against the reference (NaN poison first).
double check(const Problem& p, const std::function<void(int, cudaStream_t)>& launch) {
  return lab::poisoned_error(p.out[0], p.ref, p.n, launch);
}

int main(int argc, char** argv) {
  const std::vector<std::pair<int, int>> shapes = lab::shapes_from_args(argc, argv, {{576, 7168}, {8192, 1024}, {1280, 8192}, {1536, 7168}, {4096, 4096}});
  const cudaDeviceProp prop = lab::device_header();
  const int sms = prop.multiProcessorCount;
  std::printf("%-12s %-34s %9s %7s %9s\n", "problem", "variant", "us", "/floor", "err");
  int failures = 0;
  for (const auto& nk : shapes) {
    const int n = nk.first, k = nk.second;
    Problem p;
    p.n = n;
    p.k = k;
    const std::size_t wb = static_cast<std::size_t>(n) * k * 2;
    p.sets = lab::rotation_sets(prop, wb);
    for (int i = 0; i < p.sets; ++i) {
      bf16 *w, *x, *o;
      CK(cudaMalloc(&w, wb + 16 * k + 256));  // x right after w, as the bench lays them out
      x = w + static_cast<std::size_t>(n) * k;
      CK(cudaMalloc(&o, n * sizeof(bf16)));
      lab::fill_kernel<<<1024, 256>>>(w, static_cast<std::size_t>(n) * k + k, 1234 + i);
      CK(cudaGetLastError());
      p.w.push_back(w);
      p.x.push_back(x);
      p.out.push_back(o);
    }
    CK(cudaMalloc(&p.ref, n * sizeof(float)));
    CK(cudaMalloc(&p.part, static_cast<std::size_t>(n) * 64 * sizeof(float)));
    CK(cudaMalloc(&p.ws, 2 * 132 * 64 * 16 * sizeof(float)));
    CK(cudaMalloc(&p.counters, n * sizeof(unsigned)));
    CK(cudaMemset(p.counters, 0, n * sizeof(unsigned)));
    CK(cudaMalloc(&p.sink, 1 << 22));
    ref_kernel<<<(n + 7) / 8, 256>>>(p.x[0], p.w[0], p.ref, n, k);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    char name[32];
    std::snprintf(name, sizeof name, "1x%dx%d", n, k);
    const std::size_t chunks16 = (wb + static_cast<std::size_t>(k) * 2 + 15) / 16;

    double floor_best = 1e30;
    std::string floor_shape;
    for (int store = 0; store < 2; ++store) {
      double best = 1e30;
      std::string shape;
      for (int waves : {2, 4, 8, 16, 32})
        for (int threads : {256, 512}) {
          const double t = lab::time_launches(p.sets, [&](int i, cudaStream_t s) {
            if (store) {
              floor_store_kernel<<<sms * waves, threads, 0, s>>>(reinterpret_cast<const uint4*>(p.w[i]), chunks16, p.sink);
            } else {
              tgemm::stream_read(p.w[i], chunks16 * 16, sms * waves, threads, p.sink, reinterpret_cast<tgemm::Stream>(s));
            }
          });
          if (t < best) {
            best = t;
            shape = std::to_string(waves) + "x" + std::to_string(threads);
          }
        }
      if (store == 0) {
        floor_best = best;
        floor_shape = shape;
      }
      std::printf("%-12s %-34s %9.2f %7.3f %9s\n", name, (std::string(store ? "floor+st " : "floor ") + shape).c_str(), best,
                  best / floor_best, "-");
    }

    auto report = [&](const std::string& v, double t, double err) {
      const bool bad = err >= 0 && !(err < 1e-2);
      failures += bad;
      char e[32];
      if (err < 0) std::snprintf(e, sizeof e, "-"); else std::snprintf(e, sizeof e, "%.1e%s", err, bad ? "!" : "");
      std::printf("%-12s %-34s %9.2f %7.3f %9s\n", name, v.c_str(), t, t / floor_best, e);
    };

    // Version-4-like rows: segs so that each lane has about CHUNKS chunks.
    auto rows = [&](auto kernel, int chunks, const char* tag, bool computes) {
      const int c_total = k / 8;
      int segs = 1;
      while (segs < 8 && segs * 32 * chunks < c_total) segs *= 2;
      const int rpc = 8 / segs;
      auto launch = [&](int i, cudaStream_t s) {
        kernel<<<(n + rpc - 1) / rpc, 256, 0, s>>>(p.x[i], p.w[i], p.out[i], p.part, n, k, segs);
      };
      const double t = lab::time_launches(p.sets, launch);
      const double err = computes ? check(p, launch) : -1.0;
      report(std::string(tag) + " c" + std::to_string(chunks) + " segs" + std::to_string(segs), t, err);
    };
    rows(rows_kernel<8, 2, 0>, 2, "rows", true);
    rows(rows_kernel<8, 4, 0>, 4, "rows", true);
    rows(rows_kernel<8, 8, 0>, 8, "rows", true);
    rows(rows_kernel<8, 4, 1>, 4, "rows-nox", false);
    rows(rows_kernel<8, 4, 2>, 4, "rows-nored", false);

    // The library's kernel, with the backend's geometry (SkinnyGemvTile::segs: the smallest power
    // of two giving a lane at most CHUNKS chunks, capped at WARPS).
    // segs_override > 0: that many segments a row instead of the backend's choice (session 18:
    // which split would the tuner want where the backend's leaves partial load passes?).
    auto lib = [&](auto kernel, int warps, int chunks, const std::string& tag = "", int segs_override = 0) {
      const long long want = ((k + 7) / 8 + 32LL * chunks - 1) / (32LL * chunks);
      int segs = 1;
      while (segs < warps && segs < want) segs *= 2;
      if (segs_override > 0) segs = segs_override;
      const int rpc = warps / segs;
      auto launch = [&](int i, cudaStream_t s) {
        const tgemm::kernels::SkinnyParams kp = lab::skinny_params(p.x[i], p.w[i], p.out[i], 1, n, k);
        kernel<<<(n + rpc - 1) / rpc, 32 * warps, 0, s>>>(kp, segs);
      };
      const double t = lab::time_launches(p.sets, launch);
      report("lib w" + std::to_string(warps) + " c" + std::to_string(chunks) + " segs" + std::to_string(segs) + tag, t,
             check(p, launch));
    };

    // Session 27, for session 28 (LAB1_X=1): what x's loads cost on the H200 at K = 5120 (rows c4
    // at 1.278x of the floor with x, 1.062x without): x in its own allocation (not right after
    // w), x staged in shared memory once a CTA, x with an L1 evict-last hint; rows c4 and rows-nox
    // beside them, twice, interleaved.
    if (std::getenv("LAB1_X") != nullptr) {
      std::vector<bf16*> x_own(p.sets);
      for (int i = 0; i < p.sets; ++i) {
        CK(cudaMalloc(&x_own[i], static_cast<std::size_t>(k) * 2 + 256));
        CK(cudaMemcpy(x_own[i], p.x[i], static_cast<std::size_t>(k) * 2, cudaMemcpyDeviceToDevice));
      }
      const int c_total = k / 8;
      int segs = 1;
      while (segs < 8 && segs * 32 * 4 < c_total) segs *= 2;
      const int rpc = 8 / segs, grid = (n + rpc - 1) / rpc;
      const int smem = c_total * 16;
      CK(cudaFuncSetAttribute(rows_kernel<8, 4, 5>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      auto variant = [&](auto kernel, const char* tag, bool own_x, int dyn, bool computes) {
        auto launch = [&](int i, cudaStream_t s) {
          kernel<<<grid, 256, dyn, s>>>(own_x ? x_own[i] : p.x[i], p.w[i], p.out[i], p.part, n, k, segs);
        };
        const double t = lab::time_launches(p.sets, launch);
        report(std::string(tag) + " c4 segs" + std::to_string(segs), t, computes ? check(p, launch) : -1.0);
      };
      for (int round = 0; round < 2; ++round) {
        variant(rows_kernel<8, 4, 0>, "rows", false, 0, true);
        variant(rows_kernel<8, 4, 1>, "rows-nox", false, 0, false);
        variant(rows_kernel<8, 4, 0>, "rows x-own", true, 0, true);
        variant(rows_kernel<8, 4, 5>, "rows x-smem", false, smem, true);
        variant(rows_kernel<8, 4, 6>, "rows x-evict-last", false, 0, true);
        lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 8>, 8, 8);
      }
      for (bf16* q : x_own) CK(cudaFree(q));
    }
    // Session 28's LAB1_TAIL (the GEMV's last pass as a select, predicated loads or clamped
    // re-reads, the library kernel's TAIL argument) ran at commit 45d381a; the library kept the
    // predicated loads and dropped the other two forms and the argument (docs/perf-notes.md,
    // skinny, "Session 28").
    // Session 27: pipe (LAB1_PIPE=1), beside the library's shipped GEMV tiles, twice, interleaved.
    if (std::getenv("LAB1_PIPE") != nullptr) {
      auto pipe = [&](auto kernel, int warps, int chunks, int minb, int R, bool persistent) {
        const long long want = ((k + 7) / 8 + 32LL * chunks - 1) / (32LL * chunks);
        int segs = 1;
        while (segs < warps && segs < want) segs *= 2;
        const int gpr = warps / segs;
        int fit = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, 32 * warps, 0));
        if (persistent) R = static_cast<int>((n + static_cast<long long>(sms) * fit * gpr - 1) / (static_cast<long long>(sms) * fit * gpr));
        if (R > kPipeMaxR) return;
        const int grid = (n + gpr * R - 1) / (gpr * R);
        auto launch = [&](int i, cudaStream_t s) {
          kernel<<<grid, 32 * warps, 0, s>>>(p.x[i], p.w[i], p.out[i], n, k, segs, R);
        };
        const double t = lab::time_launches(p.sets, launch);
        char tag[96];
        std::snprintf(tag, sizeof tag, "pipe w%d c%d lb%d(%d) segs%d R%d%s", warps, chunks, minb, fit, segs, R,
                      persistent ? " pers" : "");
        report(tag, t, check(p, launch));
      };
      for (int round = 0; round < 2; ++round) {
        lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 4, 4>, 4, 4);
        lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 4>, 8, 4);
        lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 8>, 8, 8);
        for (int R : {2, 4, 8}) {
          pipe(pipe_kernel<8, 4, 3>, 8, 4, 3, R, false);
          pipe(pipe_kernel<4, 4, 6>, 4, 4, 6, R, false);
          pipe(pipe_kernel<8, 2, 4>, 8, 2, 4, R, false);
        }
        pipe(pipe_kernel<8, 4, 3>, 8, 4, 3, 0, true);
        pipe(pipe_kernel<4, 4, 6>, 4, 4, 6, 0, true);
        pipe(pipe_kernel<8, 2, 4>, 8, 2, 4, 0, true);
      }
    } else {
    // Alternating with the lab's own rows c4 three times, so that an order (clock-state) effect
    // shows as a drift of both rather than a gap between them (session 13: lib w8 c4 measured
    // 4.85 us against rows c4's 4.08 us on 576 x 7168, rows timed first).
    for (int round = 0; round < 3; ++round) {
      rows(rows_kernel<8, 4, 0>, 4, ("rows(r" + std::to_string(round) + ")").c_str(), true);
      rows(rows_kernel<8, 4, 3>, 4, ("rows pf(r" + std::to_string(round) + ")").c_str(), true);
      lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 4>, 8, 4);
    }
    lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 2>, 8, 2);
    lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 8>, 8, 8);
    lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 4, 4>, 4, 4);
    if (std::getenv("LAB1_SEGS") != nullptr) {
      // Session 18: every power-of-two split a row for three tiles (the backend's pick is the one
      // without " s=").
      for (int sg = 1; sg <= 8; sg *= 2) {
        lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 4>, 8, 4, " s=" + std::to_string(sg), sg);
        lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 8>, 8, 8, " s=" + std::to_string(sg), sg);
        if (sg <= 4) lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 4, 4>, 4, 4, " s=" + std::to_string(sg), sg);
        lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 2>, 8, 2, " s=" + std::to_string(sg), sg);
      }
    }
    // Launch bounds swapped (session 15): is the 0.4-1.2 us between lib w8 c4 and rows c4 the
    // CTAs an SM that each asks of ptxas (5 against 4; their main loops match in SASS)?
    lib(tgemm::kernels::sm90_gemv_skinny<bf16, 1, 8, 4, 4>, 8, 4, " lb4");
    rows(rows_kernel<8, 4, 0, 5>, 4, "rows lb5", true);

    // Balanced flat: grid = SMs x ctas, L = ceil(T / warps), only where L <= C.
    const long long C = k / 8, T = static_cast<long long>(n) * C;
    for (int ctas : {2, 3, 4, 6, 8}) {
      const long long warps = static_cast<long long>(sms) * ctas * 8;
      const long long L = (T + warps - 1) / warps;
      if (L > C) continue;
      const int grid = static_cast<int>(((T + L - 1) / L + 7) / 8);
      auto flat = [&](auto kernel, int chunks, const char* tag, bool computes) {
        int fit = 0;  // one wave only: skip a shape whose CTAs do not all fit at once
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, 256, 0));
        if (fit < ctas) return;
        auto launch = [&](int i, cudaStream_t s) {
          kernel<<<grid, 256, 0, s>>>(p.x[i], p.w[i], p.out[i], p.ws, p.counters, n, k, L);
        };
        const double t = lab::time_launches(p.sets, launch);
        const double err = computes ? check(p, launch) : -1.0;
        report(std::string(tag) + " c" + std::to_string(chunks) + " " + std::to_string(ctas) + "/SM L" +
                   std::to_string(L),
               t, err);
      };
      flat(flat_kernel<2, 1>, 2, "flat", true);
      flat(flat_kernel<4, 1>, 4, "flat", true);
      flat(flat_kernel<8, 1>, 8, "flat", true);
      flat(flat_kernel<8, 0>, 8, "flat-nofix", false);
      flat(flat_kernel<4, 0>, 4, "flat-nofix", false);
    }
    }  // LAB1_PIPE
    // The counters must be back at zero after every launch.
    std::vector<unsigned> cnt(n);
    CK(cudaMemcpy(cnt.data(), p.counters, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (unsigned c : cnt) failures += c != 0;

    for (int i = 0; i < p.sets; ++i) {
      CK(cudaFree(p.w[i]));
      CK(cudaFree(p.out[i]));
    }
    CK(cudaFree(p.ref));
    CK(cudaFree(p.part));
    CK(cudaFree(p.ws));
    CK(cudaFree(p.counters));
    CK(cudaFree(p.sink));
  }
  std::printf("check failures: %d\n", failures);
  return failures ? 1 : 0;
}
