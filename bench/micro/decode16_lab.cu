// Decode (M = 16) MMA lab: which tile shape streams a weight closest to the read floor at M = 16?
//
// A standalone study like bench/micro/decode_lab.cu (M = 1), not part of the library; written in
// session 14, first run in session 15 (docs/perf-notes.md, skinny, "Session 15"); the xs and nox
// kernels were added in session 15 and have not run yet.
// For each weight it times, with CUDA-graph replays of 20 launches over rotation sets that exceed
// L2 three times (as `tgemm bench` does):
//   floor          the bench's streaming-read kernel over the weight, best of its launch shapes;
//   tile r<R> c<C> w<W> u<U> s<S>
//                  a plain MMA kernel: a CTA owns R weight rows (R/16 m16 tiles) and all 16
//                  tokens (two n8 tiles); its W warps split the CTA's k-range; each lane loads C
//                  contiguous 16-byte chunks of a row per k-step (a quad reads 64*C bytes of each
//                  row), U k-steps loaded before their MMAs, x through L1. The k order inside a
//                  chunk is permuted alike in w and x (the library's mma_k32), so no shared memory
//                  before the MMAs. The warps are summed in shared memory in warp order; with
//                  S > 1 split-K CTAs, each CTA stores its partial tile and the last to arrive (a
//                  counter per row tile, reset by it) sums the S partials in split order:
//                  deterministic, no clusters, graph-safe;
//   xs r<R> c<C> w<W> u<U> [pipe] s<S>
//                  the same tiles with the CTA's k-slice of x staged in shared memory (cp.async,
//                  overlapping the first weight batch) and read by LDS.128; with "pipe" the next
//                  batch's weight loads are issued before the current batch's MMAs (session 15);
//   xr r<R> ...    x staged as in xs, but the W warps split the CTA's R = 16 W rows (each warp the
//                  CTA's whole k-range): every warp reads the same stage, x's global reads fall by W;
//   nox ...        an ablation: no x at all (constant fragments, result not checked): the cost of
//                  the weight stream alone in this structure;
//   tnox, tnox-noepi, tnox-bar, tnox-out, tnox-smem, wsum (session 16)
//                  the best plain tile (r16 c1 w8/w4 u4) taken apart: without x loads; also without
//                  its epilogue (each lane stores one float), with parts of it added back (see
//                  tile_kernel's MODE; ablations, not checked); and "wsum",
//                  a checked kernel with no CTA barrier (each warp stores its fragments, the last
//                  warp of the row tile sums every part in order);
//   bt, br, ... nox (session 17)
//                  the weight as the MMA's B operand (bop_kernel: 8-row blocks, x as A, cluster
//                  split-K through DSMEM; "bt" warps split k, "br" warps split rows), with C = 1, 2
//                  (run in s17a) and 4 (added after, not yet run) chunks a lane;
//   lib v7 ...     the library's version 7 (kernels/sm90/sm90_gemm_skinny_bop.cuh), bt with the
//                  library's guards, launched as the backend launches it (added after s17a, not yet run);
//   lib v1 ...     the library's version-1 kernel (kernels/sm90/sm90_gemm_skinny.cuh) with the
//                  tuned table's M = 16 variant m16_n16_wn1_wk4_u4_sk4, launched as the backend
//                  launches it (a (1, split_k, 1) cluster), in this harness.
//   session 21 (LAB16_S21 with LAB16_S18): bt with 2- and 16-warp CTAs, U = 8, C = 4 and the grid
//                  cap lifted; LAB16_S21B: bt2 (accumulator sets, batch pipelining); LAB16_S21C: bt2's
//                  stream with and without the cluster (nocl: no cross-CTA sum, an ablation);
//                  LAB16_S21D: bt2 with split-K through a global workspace (docs/perf-notes.md,
//                  skinny, "Session 21").
// Every variant is checked against an fp32 reference (relative Frobenius error < 1e-2, bf16
// output) on fresh random data, the output poisoned with NaN first.
//
// Build (from the repository root): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a
//        --expt-relaxed-constexpr -I. -Isrc -Iinclude -o scratch/lab/decode16_lab bench/micro/decode16_lab.cu
//        src/runtime/timing.cu src/runtime/cuda_check.cpp
// Run:   ./decode16_lab [N K ...]   (default: the M = 16 rows of the suite over 1.18x of the floor)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bench/micro/lab_common.cuh"  // CK, fill, poison, the reference check, graph-replay timing
#include "kernels/sm90/sm90_gemm_skinny.cuh"  // version 1, its load and MMA helpers
#include "kernels/sm90/sm90_gemm_skinny_bop.cuh"  // version 7 (the library's bt)
#include "kernels/sm90/sm90_gemv_bulk.cuh"  // mbarrier and bulk-copy helpers (tb, session 25)

using bf16 = __nv_bfloat16;
namespace sd = tgemm::kernels::skinny_detail;
constexpr int kM = 16;

// fp32 reference, out[m][n] = sum_k x[m][k] w[n][k]: one warp per (m, n).
__global__ void ref_kernel(const bf16* x, const bf16* w, float* out, int n, int k) {
  const long long id = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (id >= static_cast<long long>(kM) * n) return;
  const int m = static_cast<int>(id / n), row = static_cast<int>(id % n);
  float s = 0.0f;
  for (int i = lane; i < k; i += 32)
    s += __bfloat162float(w[static_cast<std::size_t>(row) * k + i]) * __bfloat162float(x[static_cast<std::size_t>(m) * k + i]);
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) out[id] = s;
}

// ---------------------------------------------------------------------------------------------
// The CTA's epilogue, shared by the lab's kernels: the W warps' accumulators summed in shared
// memory in warp order; S = 1 stores the tile; S > 1 stores the CTA's partial in ws and the last
// CTA of the row tile to arrive (a counter per tile, reset by it) sums the S partials in split order.
// Fragment (r, j) of a warp: rows r*16 + g (+8), tokens j*8 + 2t (+1). ROWSPLIT: the warps own
// different rows instead (warp w: the tile's rows w*RT*16...), so there is nothing to sum across
// warps: the CTA's tile is W*RT*16 rows, one part.
template <int RT, int W, bool ROWSPLIT = false>
__device__ __forceinline__ void finish_tile(float (&acc)[RT][2][4], float (*part)[kM][(ROWSPLIT ? W : 1) * RT * 16],
                                            unsigned& last, bf16* out, float* ws, unsigned* counters, int n, int tile,
                                            int split, int splits, int row0) {
  constexpr int R = (ROWSPLIT ? W : 1) * RT * 16;
  constexpr int kParts = ROWSPLIT ? 1 : W;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int pw = ROWSPLIT ? 0 : warp, rw = ROWSPLIT ? warp * RT * 16 : 0;
#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      part[pw][j * 8 + 2 * t][rw + r * 16 + g] = acc[r][j][0];
      part[pw][j * 8 + 2 * t + 1][rw + r * 16 + g] = acc[r][j][1];
      part[pw][j * 8 + 2 * t][rw + r * 16 + g + 8] = acc[r][j][2];
      part[pw][j * 8 + 2 * t + 1][rw + r * 16 + g + 8] = acc[r][j][3];
    }
  __syncthreads();
  // The CTA's sum over its parts (warp order), element e = (token, row) of the kM x R tile.
  constexpr int kElems = kM * R;
  float sum[(kElems + 32 * W - 1) / (32 * W)];
#pragma unroll
  for (int q = 0; q < (kElems + 32 * W - 1) / (32 * W); ++q) {
    const int e = threadIdx.x + q * 32 * W;
    float v = 0.0f;
    if (e < kElems)
      for (int u = 0; u < kParts; ++u) v += part[u][e / R][e % R];
    sum[q] = v;
  }
  auto store = [&](int e, float v) {
    const int m = e / R, row = row0 + e % R;
    if (row < n) out[static_cast<std::size_t>(m) * n + row] = __float2bfloat16(v);
  };
  if (splits == 1) {
#pragma unroll
    for (int q = 0; q < (kElems + 32 * W - 1) / (32 * W); ++q)
      if (threadIdx.x + q * 32 * W < kElems) store(threadIdx.x + q * 32 * W, sum[q]);
    return;
  }
  float* mine = ws + (static_cast<std::size_t>(tile) * splits + split) * kElems;
#pragma unroll
  for (int q = 0; q < (kElems + 32 * W - 1) / (32 * W); ++q)
    if (threadIdx.x + q * 32 * W < kElems) mine[threadIdx.x + q * 32 * W] = sum[q];
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&counters[tile], 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  const float* all = ws + static_cast<std::size_t>(tile) * splits * kElems;
  for (int e = threadIdx.x; e < kElems; e += 32 * W) {
    float v = 0.0f;
    for (int s = 0; s < splits; ++s) v += __ldcg(all + static_cast<std::size_t>(s) * kElems + e);
    store(e, v);
  }
  if (threadIdx.x == 0) counters[tile] = 0;
}

// The lane's weight pointers of a warp whose m16 tiles start at row row0: rows row0 + r*16 + g
// (h = 0) and + 8 (h = 1), clamped to the last row (their results are discarded), at element k0 of
// the row.
template <int RT>
__device__ __forceinline__ void weight_rows(const bf16* (&wp)[RT][2], const bf16* w, int row0, int n, int k, int k0) {
  const int g = (threadIdx.x % 32) / 4;
#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) wp[r][h] = w + static_cast<std::size_t>(min(row0 + r * 16 + h * 8 + g, n - 1)) * k + k0;
}

// ---------------------------------------------------------------------------------------------
// Plain MMA tile kernel. grid (ceil(N / R), S), block 32 * W; U k-steps loaded before their MMAs
// (U * RT * 2 * C 16-byte weight loads in flight per lane). K must be a multiple of 32 * C
// (the lab's shapes are); rows past N are clamped to the last row (results discarded).
// ws: S partial tiles per row tile (kM x R floats each); counters: one per row tile, zero between
// launches.
// MODE (session 16, ablations, results not checked): 0 the kernel; 1 "nox": x a constant (no x
// loads); 2 "nox-noepi": also no epilogue (no shared-memory warp sum, no split-K partials or last-CTA
// sum): each lane stores one float of its accumulators to ws. 0 -> 1 is the cost of x, 1 -> 2 that
// of the epilogue, 2 against the floor that of the weight stream in this structure.
// MODE 4 "tnox-bar": as 2, with one CTA barrier before the stores (is the epilogue's cost the
// barrier, i.e. waiting for the CTA's slowest warp, or the shared-memory sum and the stores?).
// MODE 5 "tnox-out": as 2, but each lane stores its float as bf16 into out (token 2t, row g of
// the tile) instead of ws: the output buffer rather than the workspace.
// MODE 6 "tnox-smem": as 1 (the shared-memory sum), but the CTA's sums stored to ws as fp32.
// MODE 3 "wsum" (a real kernel, checked): no CTA barrier at all. Each warp stores its fragments
// (RT x 8 floats a lane, 1 KB a warp at R = 16) to ws, and the last warp of the row tile to arrive
// (one counter per tile, over all S x W warps; reset by that warp) sums the S x W parts in part
// order (split, then warp: deterministic) and stores the tile straight from the fragment layout.
template <int R, int C, int W, int U, int MODE = 0>
__global__ void __launch_bounds__(32 * W) tile_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                      bf16* out, float* ws, unsigned* counters, int n, int k) {
  constexpr int RT = R / 16;     // m16 tiles over weight rows
  constexpr int KSTEP = 32 * C;  // k per step (a quad: 4 lanes x C chunks x 8)
  __shared__ float part[W][kM][R];
  __shared__ unsigned last;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int tile = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  const int row0 = tile * R;
  // This warp's k-steps: S * W balanced contiguous parts, the CTA's W parts adjacent.
  const int steps = k / KSTEP, parts = splits * W, pidx = split * W + warp;
  const int s_begin = static_cast<int>(static_cast<long long>(steps) * pidx / parts);
  const int s_end = static_cast<int>(static_cast<long long>(steps) * (pidx + 1) / parts);

  float acc[RT][2][4] = {};
  const bf16* wp[RT][2];
  weight_rows<RT>(wp, w, row0, n, k, s_begin * KSTEP + t * 8 * C);
  const bf16* xp[2] = {x + static_cast<std::size_t>(g) * k + s_begin * KSTEP + t * 8 * C,
                       x + static_cast<std::size_t>(8 + g) * k + s_begin * KSTEP + t * 8 * C};
  // NU k-steps: all their loads first, then the MMAs.
  auto batch = [&](auto nu_tag) {
    constexpr int NU = decltype(nu_tag)::value;
    uint4 wv[NU][RT][2][C], xv[NU][2][C];
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int r = 0; r < RT; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int c = 0; c < C; ++c) wv[u][r][h][c] = sd::load_weight(wp[r][h] + u * KSTEP + c * 8);
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int c = 0; c < C; ++c)
          xv[u][j][c] = (MODE == 1 || MODE == 2 || MODE >= 4) ? make_uint4(0x3f803f80u ^ lane, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u ^ u)
                                  : sd::load_activation(xp[j] + u * KSTEP + c * 8);
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) wp[r][h] += NU * KSTEP;
#pragma unroll
    for (int j = 0; j < 2; ++j) xp[j] += NU * KSTEP;
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int c = 0; c < C; ++c)
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int j = 0; j < 2; ++j) sd::mma_k32<bf16>(acc[r][j], wv[u][r][0][c], wv[u][r][1][c], xv[u][j][c]);
  };
  int s = s_begin;
#pragma unroll 1
  for (; s + U <= s_end; s += U) batch(std::integral_constant<int, U>{});
#pragma unroll 1
  for (; s < s_end; ++s) batch(std::integral_constant<int, 1>{});
  if (MODE == 3) {
    constexpr int kF = RT * 8;  // floats a lane
    const int parts = splits * W, pidx = split * W + warp;
    float* slot = ws + ((static_cast<std::size_t>(tile) * parts + pidx) * 32 + lane) * kF;
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        reinterpret_cast<float4*>(slot)[r * 2 + j] = make_float4(acc[r][j][0], acc[r][j][1], acc[r][j][2], acc[r][j][3]);
    __threadfence();
    __syncwarp();
    unsigned prev = 0;
    if (lane == 0) prev = atomicAdd(&counters[tile], 1u);
    prev = __shfl_sync(0xffffffffu, prev, 0);
    if (prev != static_cast<unsigned>(parts - 1)) return;
    __threadfence();
    float sum[RT][2][4] = {};
    const float* base = ws + (static_cast<std::size_t>(tile) * parts * 32 + lane) * kF;
    constexpr int kBatch = 8;  // parts loaded before they are added (in order)
    for (int q0 = 0; q0 < parts; q0 += kBatch) {
      float4 v[kBatch][RT * 2];
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
#pragma unroll
        for (int f = 0; f < RT * 2; ++f)
          v[b][f] = q0 + b < parts ? __ldcg(reinterpret_cast<const float4*>(base + static_cast<std::size_t>(q0 + b) * 32 * kF) + f)
                                   : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            sum[r][j][0] += v[b][r * 2 + j].x;
            sum[r][j][1] += v[b][r * 2 + j].y;
            sum[r][j][2] += v[b][r * 2 + j].z;
            sum[r][j][3] += v[b][r * 2 + j].w;
          }
    }
    // Fragment (r, j): rows row0 + r*16 + g (+8), tokens j*8 + 2t (+1).
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = row0 + r * 16 + g + (e >= 2 ? 8 : 0), m = j * 8 + 2 * t + (e & 1);
          if (row < n) out[static_cast<std::size_t>(m) * n + row] = __float2bfloat16(sum[r][j][e]);
        }
    if (lane == 0) counters[tile] = 0;
    return;
  }
  if (MODE == 2 || MODE == 4 || MODE == 5) {
    if (MODE == 4) __syncthreads();
    float v = 0.0f;
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int j = 0; j < 2; ++j) v += acc[r][j][0] + acc[r][j][1] + acc[r][j][2] + acc[r][j][3];
    if (MODE == 5) {
      if (row0 + g < n && warp == 0) out[static_cast<std::size_t>(2 * t) * n + row0 + g] = __float2bfloat16(v);
      return;
    }
    ws[((static_cast<std::size_t>(split) * gridDim.x + tile) * W + warp) * 32 + lane] = v;
    return;
  }
  if (MODE == 6) {  // finish_tile's shared-memory sum, the sums stored to ws
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        part[warp][j * 8 + 2 * t][r * 16 + g] = acc[r][j][0];
        part[warp][j * 8 + 2 * t + 1][r * 16 + g] = acc[r][j][1];
        part[warp][j * 8 + 2 * t][r * 16 + g + 8] = acc[r][j][2];
        part[warp][j * 8 + 2 * t + 1][r * 16 + g + 8] = acc[r][j][3];
      }
    __syncthreads();
    for (int e = threadIdx.x; e < kM * R; e += 32 * W) {
      float v = 0.0f;
      for (int u = 0; u < W; ++u) v += part[u][e / R][e % R];
      ws[(static_cast<std::size_t>(split) * gridDim.x + tile) * kM * R + e] = v;
    }
    return;
  }
  finish_tile<RT, W>(acc, part, last, out, ws, counters, n, tile, split, splits, row0);
}

// ---------------------------------------------------------------------------------------------
// x in shared memory (session 15's next axis). The same split of rows and k as tile_kernel (a CTA
// owns R rows; its W warps split the CTA's k-range), but the CTA first stages its k-slice of x
// (16 tokens) into shared memory with cp.async, while the first batch of weight loads is already in
// flight, and the MMAs read x by LDS.128 (token rows padded to 64 mod 128 bytes: the 8 token rows
// of a quarter-warp's loads fall on distinct banks). x then takes no registers between load and
// use, so U = 8 fits, and with PIPE the next batch's weight loads are issued before the current
// batch's MMAs (two register buffers), so a warp never waits with nothing in flight.
// NOX: an ablation with no x at all (constant fragments; the result is wrong and is not checked):
// what the weight stream alone costs in this structure.
// Dynamic shared memory: 16 x xs_row_bytes(max CTA k-steps).
__host__ __device__ constexpr int xs_row_bytes(int cta_steps, int kstep) {
  return (cta_steps * kstep * 2 + 127) / 128 * 128 + 64;
}

// ROWSPLIT ("xr"): the W warps split the CTA's rows instead (W * RT * 16 rows a CTA, each warp the
// CTA's whole k-range), so all of them read the same staged x: x's global reads fall by W.
template <int RT, int C, int W, int U, bool PIPE, bool NOX, bool ROWSPLIT = false>
__global__ void __launch_bounds__(32 * W) xs_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                    bf16* out, float* ws, unsigned* counters, int n, int k) {
  constexpr int R = (ROWSPLIT ? W : 1) * RT * 16;
  constexpr int KSTEP = 32 * C;
  extern __shared__ __align__(128) unsigned char xs_stage[];
  __shared__ float part[ROWSPLIT ? 1 : W][kM][R];
  __shared__ unsigned last;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int tile = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  const int row0 = tile * R;
  const int steps = k / KSTEP, wk = ROWSPLIT ? 1 : W, parts = splits * wk, pidx = split * wk + (ROWSPLIT ? 0 : warp);
  const int s_begin = static_cast<int>(static_cast<long long>(steps) * pidx / parts);
  const int s_end = static_cast<int>(static_cast<long long>(steps) * (pidx + 1) / parts);
  const int c_begin = static_cast<int>(static_cast<long long>(steps) * (split * wk) / parts);
  const int c_end = static_cast<int>(static_cast<long long>(steps) * (split * wk + wk) / parts);
  const int wrow0 = row0 + (ROWSPLIT ? warp * RT * 16 : 0);  // this warp's first row
  const int xrow = xs_row_bytes(c_end - c_begin, KSTEP);

  float acc[RT][2][4] = {};
  const bf16* wp[RT][2];
  weight_rows<RT>(wp, w, wrow0, n, k, s_begin * KSTEP + t * 8 * C);
  using Batch = uint4[U][RT][2][C];
  // Steps past the warp's end load nothing (their MMAs are skipped, warp-uniformly).
  auto load_w = [&](Batch& dst, int s0) {
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (s0 + u < s_end) {
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int c = 0; c < C; ++c) dst[u][r][h][c] = sd::load_weight(wp[r][h] + (s0 - s_begin + u) * KSTEP + c * 8);
      }
  };
  auto mma_batch = [&](const Batch& src, int s0) {
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (s0 + u < s_end) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          uint4 xv[2];
          if constexpr (NOX) {
            xv[0] = xv[1] = make_uint4(0x3f803f80u ^ lane, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u ^ u);
          } else {
            const int kk = (s0 + u - c_begin) * KSTEP + t * 8 * C + c * 8;
#pragma unroll
            for (int j = 0; j < 2; ++j)
              xv[j] = *reinterpret_cast<const uint4*>(xs_stage + (j * 8 + g) * xrow + kk * 2);
          }
#pragma unroll
          for (int r = 0; r < RT; ++r)
#pragma unroll
            for (int j = 0; j < 2; ++j) sd::mma_k32<bf16>(acc[r][j], src[u][r][0][c], src[u][r][1][c], xv[j]);
        }
      }
  };
  Batch wa, wb;
  load_w(wa, s_begin);
  if constexpr (!NOX) {
    // The CTA's x slice: 16 rows of (c_end - c_begin) * KSTEP elements, 16-byte cp.async copies.
    const int chunks = (c_end - c_begin) * KSTEP / 8;
    const bf16* xs0 = x + static_cast<std::size_t>(c_begin) * KSTEP;
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(xs_stage));
    for (int i = threadIdx.x; i < kM * chunks; i += 32 * W) {
      const int m = i / chunks, q = i - m * chunks;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(base + m * xrow + q * 16),
                   "l"(xs0 + static_cast<std::size_t>(m) * k + q * 8));
    }
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();
  }
#pragma unroll 1
  for (int s = s_begin; s < s_end; s += U) {
    if constexpr (PIPE) {
      if (s + U < s_end) load_w(wb, s + U);
      mma_batch(wa, s);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int c = 0; c < C; ++c) wa[u][r][h][c] = wb[u][r][h][c];
    } else {
      mma_batch(wa, s);
      if (s + U < s_end) load_w(wa, s + U);
    }
  }
  finish_tile<RT, W, ROWSPLIT>(acc, part, last, out, ws, counters, n, tile, split, splits, row0);
}

// ---------------------------------------------------------------------------------------------
// Session 17: the weight as the MMA's B operand. m16n8k16 with x as A (the 16 tokens) and 8 weight
// rows as B, so a fragment covers 8 rows, not 16, and the accumulator of lane (g, t) holds tokens
// g and g + 8 of rows 2t and 2t + 1 (two bf16x2 stores). The lane's 16-byte chunk (8 k of row g of
// its n8 block, k = 8t..8t+7 of a 32-wide step when C = 1) feeds two MMAs, half h taking elements
// 4h..4h+3; x's chunks of tokens g and g + 8 at the same k are split alike, so A and B agree on
// the k order (b0 = w word 2h, b1 = w word 2h+1; a0/a1 = word 2h of tokens g/g+8, a2/a3 = word 2h+1).
//   "bt": the CTA's W warps split its k-range (a CTA is RB * 8 rows), summed in shared memory;
//   "br": the W warps split the CTA's rows (W * RB * 8 rows a CTA), each the CTA's whole k-range,
//         so they all read the same x (through L1): x's L2 reads fall by W, and with no cluster
//         nothing is summed (each warp stores its fragments straight from registers).
// Split-K over CL CTAs is a (1, CL, 1) cluster (grid (tiles, CL)): every warp writes its
// fragments into rank 0's shared memory (DSMEM), one barrier phase, the other CTAs leave and rank 0
// sums the parts in part order (rank, then warp): deterministic, no workspace, no counters.
// NOX: x a constant (no x loads; an ablation, not checked).
// bt's epilogue, shared by bop_kernel, ring_kernel and lib7x (EPI_LAB). Fragment f of a CTA
// whose rows start at row_base, lane l: tokens l / 4 and l / 4 + 8 of rows row_base + 8 f + 2 (l % 4)
// and + 1, stored as bf16 pairs where the pair exists and N is even, else element by element.
__device__ __forceinline__ void store_fragment_bf16(bf16* out, int n, int row_base, int f, int l, float c0, float c1,
                                                    float c2, float c3) {
  const int row = row_base + f * 8 + 2 * (l % 4), m = l / 4;
  if (row + 1 < n && (n % 2) == 0) {
    *reinterpret_cast<__nv_bfloat162*>(out + static_cast<std::size_t>(m) * n + row) = __floats2bfloat162_rn(c0, c1);
    *reinterpret_cast<__nv_bfloat162*>(out + static_cast<std::size_t>(m + 8) * n + row) = __floats2bfloat162_rn(c2, c3);
  } else {
    if (row < n) {
      out[static_cast<std::size_t>(m) * n + row] = __float2bfloat16(c0);
      out[static_cast<std::size_t>(m + 8) * n + row] = __float2bfloat16(c2);
    }
    if (row + 1 < n) {
      out[static_cast<std::size_t>(m) * n + row + 1] = __float2bfloat16(c1);
      out[static_cast<std::size_t>(m + 8) * n + row + 1] = __float2bfloat16(c3);
    }
  }
}

// The warp's NB accumulator fragments into part slots first_slot .. of rank 0's shared memory
// (its own CTA's when cl = 1), then the CTA or cluster barrier. Returns false on the CTAs that are
// done (ranks past 0), true on the one that sums.
template <int NB>
__device__ __forceinline__ bool publish_parts(float4* slots, int first_slot, const float (&acc)[NB][4], int cl, int rank) {
  const int lane = threadIdx.x % 32;
  float4* dst = slots;
  if (cl > 1) {
    sd::cluster_wait_acquire();  // every CTA of the cluster has started: rank 0's shared memory exists
    dst = cooperative_groups::this_cluster().map_shared_rank(slots, 0);
  }
#pragma unroll
  for (int b = 0; b < NB; ++b) dst[(first_slot + b) * 32 + lane] = make_float4(acc[b][0], acc[b][1], acc[b][2], acc[b][3]);
  if (cl > 1) {
    sd::cluster_arrive_release();
    if (rank != 0) return false;
    sd::cluster_wait_acquire();
  } else {
    __syncthreads();
  }
  return true;
}

// The summing CTA: FR fragments (of 32 lanes each) summed over `parts` parts in part order, then stored.
template <int FR, int THREADS>
__device__ __forceinline__ void sum_parts_and_store(const float4* slots, int parts, int row_base, bf16* out, int n) {
  for (int i = threadIdx.x; i < FR * 32; i += THREADS) {
    float4 v = slots[i];
    for (int q = 1; q < parts; ++q) {
      const float4 a = slots[q * FR * 32 + i];
      v.x += a.x;
      v.y += a.y;
      v.z += a.z;
      v.w += a.w;
    }
    store_fragment_bf16(out, n, row_base, i / 32, i % 32, v.x, v.y, v.z, v.w);
  }
}

// Dynamic shared memory: bop_smem_bytes(CL).
template <int RB, int W, bool ROWSPLIT>
__host__ __device__ constexpr int bop_smem_bytes(int cl) {
  return cl * (ROWSPLIT ? 1 : W) * (ROWSPLIT ? W : 1) * RB * 32 * 16;
}

// SH (session 19, "sh"): the weight pre-tiled by lab::pretile_kernel, so that each 8-row x 32-k
// block is 512 contiguous bytes in the MMA's fragment order and a warp's k-range of one 8-row block
// is one contiguous run: every load instruction reads 512 contiguous bytes, as the floor's linear
// read does (the layout study put the row-tiled read at 1.12-1.20x of the linear one on the 8-21 MB
// weights). Lane (g, t)'s chunk c of k-step s is k-block s * C + c (k = 32 (s C + c) + 8 t + e);
// x is read in the same order, so the sums are unchanged. Needs N % 8 == 0 and K % 32 == 0.
// Run: LAB16_S18=1 LAB16_SHUF=1 ./decode16_lab 576 7168 1280 8192 1536 7168 4096 4096 8192 1024
// MINB (session 23): the launch bounds' minimum CTAs an SM (2 as shipped; 4 caps an 8-warp CTA
// at 64 registers: ncu put bt r8 c2 w8 u2 at 78 registers, 3 CTAs an SM, 2.26 waves on 7168x8192).
template <int RB, int C, int W, int U, bool ROWSPLIT, bool NOX, bool PF = false, bool SH = false, int MINB = 2>
__global__ void __launch_bounds__(32 * W, MINB) bop_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                         bf16* out, int n, int k) {
  constexpr int KSTEP = 32 * C;
  constexpr int WP = ROWSPLIT ? 1 : W;         // k-parts a CTA
  constexpr int FR = (ROWSPLIT ? W : 1) * RB;  // n8 fragments a part
  constexpr int R = FR * 8;                    // rows a CTA
  extern __shared__ float4 bop_slots[];        // [CL * WP][FR][32]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int tile = blockIdx.x, rank = blockIdx.y, cl = gridDim.y;
  const int fbase = ROWSPLIT ? warp * RB : 0;  // the warp's first fragment in the part
  const int row0 = tile * R + fbase * 8;
  const int steps = k / KSTEP, parts = cl * WP, pidx = rank * WP + (ROWSPLIT ? 0 : warp);
  const int s_begin = static_cast<int>(static_cast<long long>(steps) * pidx / parts);
  const int s_end = static_cast<int>(static_cast<long long>(steps) * (pidx + 1) / parts);
  if (cl > 1) sd::cluster_arrive_relaxed();

  float acc[RB][4] = {};
  constexpr int WSTEP = SH ? C * 256 : KSTEP;  // weight elements a k-step advances
  constexpr int WCH = SH ? 256 : 8;            // weight elements between a lane's chunks c
  constexpr int XLANE = SH ? 8 : 8 * C;        // x elements between lanes t
  constexpr int XCH = SH ? 32 : 8;             // x elements between a lane's chunks c
  const bf16* wp[RB];
#pragma unroll
  for (int b = 0; b < RB; ++b)
    wp[b] = SH ? w + (static_cast<std::size_t>(min(row0 / 8 + b, n / 8 - 1)) * (k / 32) + s_begin * C) * 256 + lane * 8
               : w + static_cast<std::size_t>(min(row0 + b * 8 + g, n - 1)) * k + s_begin * KSTEP + t * 8 * C;
  const bf16* xp[2] = {x + static_cast<std::size_t>(g) * k + s_begin * KSTEP + t * XLANE,
                       x + static_cast<std::size_t>(8 + g) * k + s_begin * KSTEP + t * XLANE};
  if (PF && t == 0 && s_end > s_begin) {
    // Session 18 ("pf"): the whole k-range of the warp's rows asked of L2 at once (one bulk
    // prefetch a row), so that DRAM has all of it in flight while the register batches, which
    // ncu showed stalled on their loads (long scoreboard, 4-6 warps a scheduler), hit L2.
    const unsigned bytes = static_cast<unsigned>((s_end - s_begin) * KSTEP * 2);
#pragma unroll
    for (int b = 0; b < RB; ++b)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(wp[b]), "r"(bytes) : "memory");
  }
  auto batch = [&](auto nu_tag) {
    constexpr int NU = decltype(nu_tag)::value;
    uint4 wv[NU][RB][C], xv[NU][2][C];
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int b = 0; b < RB; ++b)
#pragma unroll
        for (int c = 0; c < C; ++c) wv[u][b][c] = sd::load_weight(wp[b] + u * WSTEP + c * WCH);
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int c = 0; c < C; ++c)
          xv[u][j][c] = NOX ? make_uint4(0x3f803f80u ^ lane, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u ^ u)
                            : sd::load_activation(xp[j] + u * KSTEP + c * XCH);
#pragma unroll
    for (int b = 0; b < RB; ++b) wp[b] += NU * WSTEP;
#pragma unroll
    for (int j = 0; j < 2; ++j) xp[j] += NU * KSTEP;
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const std::uint32_t* x0 = reinterpret_cast<const std::uint32_t*>(&xv[u][0][c]);
        const std::uint32_t* x1 = reinterpret_cast<const std::uint32_t*>(&xv[u][1][c]);
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int b = 0; b < RB; ++b) {
            const std::uint32_t* wr = reinterpret_cast<const std::uint32_t*>(&wv[u][b][c]);
            sd::mma_m16n8k16<bf16>(acc[b], x0[2 * h], x1[2 * h], x0[2 * h + 1], x1[2 * h + 1], wr[2 * h], wr[2 * h + 1]);
          }
      }
  };
  int s = s_begin;
#pragma unroll 1
  for (; s + U <= s_end; s += U) batch(std::integral_constant<int, U>{});
#pragma unroll 1
  for (; s < s_end; ++s) batch(std::integral_constant<int, 1>{});

  if (parts == 1) {  // "br" with no cluster: nothing to sum
#pragma unroll
    for (int b = 0; b < RB; ++b) store_fragment_bf16(out, n, tile * R, fbase + b, lane, acc[b][0], acc[b][1], acc[b][2], acc[b][3]);
    return;
  }
  if (!publish_parts(bop_slots, pidx * FR + fbase, acc, cl, rank)) return;
  sum_parts_and_store<FR, 32 * W>(bop_slots, parts, tile * R, out, n);
}

// ---------------------------------------------------------------------------------------------
// Session 21 ("bt2"): bt (warps split k, cluster split-K) with the MMA chain taken apart. In bt all
// U * C * 2 MMAs of a batch (times RB independent blocks) accumulate into one fragment, so each
// waits for the one before (~30 cycles of HMMA latency each), and since a warp issues in order,
// the next batch's loads go out only after the last MMA of this batch has issued: every batch
// costs its load latency plus its MMA chain, in series. LAB16_S21 (small/large CTAs, U = 8, more
// CTAs an SM) changed neither the bytes in flight nor the balance enough to matter; the nox rows
// still sit at 1.20-1.25x of the floor on 1280x8192 / 1536x7168 where the M = 1 GEMV is at
// 1.07-1.09x on the same H100.
//   ACC: independent accumulator sets (MMA q of a batch into set q % ACC, summed before the
//        epilogue): the chain a batch shortens ACC-fold;
//   PIPE: the next batch's loads are issued before this batch's MMAs (two batches of registers),
//        so the MMA chain overlaps the next batch's latency.
template <int NU, int RB, int C>
struct Bt2Batch {
  uint4 w[NU][RB][C];
  uint4 x[NU][2][C];
};

// SPLIT, how the split-K CTAs (grid.y) are summed:
//   kBt2Cluster   a (1, CL, 1) cluster, the parts summed by rank 0 through DSMEM (as bt);
//   kBt2NoSum     an ablation (not checked): no cluster and no sum across CTAs, each CTA sums its
//                 own warps and stores them (every rank to the same outputs), pricing the cluster
//                 launch, its barrier and the DSMEM sum (LAB16_S21C);
//   kBt2Workspace no cluster: each CTA sums its warps in shared memory and stores its RB x 32
//                 float4 partial to slot (tile, rank) of a global workspace; the last CTA of the
//                 row tile to arrive (a counter per tile, reset by it: graph-safe) sums the
//                 split's partials in rank order (deterministic) and stores (LAB16_S21D).
constexpr int kBt2Cluster = 0, kBt2NoSum = 1, kBt2Workspace = 2;
template <int RB, int C, int W, int U, bool NOX, int ACC, bool PIPE, int SPLIT = kBt2Cluster>
__global__ void __launch_bounds__(32 * W, 2) bt2_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* out,
                                                        float4* ws, unsigned* counters,
                                                        int n, int k) {
  constexpr int KSTEP = 32 * C;
  extern __shared__ float4 bop_slots[];  // [CL * W][RB][32]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int tile = blockIdx.x, rank = blockIdx.y, cl = gridDim.y;
  const int row0 = tile * RB * 8;
  const int steps = k / KSTEP, parts = cl * W, pidx = rank * W + warp;
  const int s_begin = static_cast<int>(static_cast<long long>(steps) * pidx / parts);
  const int s_end = static_cast<int>(static_cast<long long>(steps) * (pidx + 1) / parts);
  if (SPLIT == kBt2Cluster && cl > 1) sd::cluster_arrive_relaxed();

  float acc[ACC][RB][4] = {};
  const bf16* wp[RB];
#pragma unroll
  for (int b = 0; b < RB; ++b) wp[b] = w + static_cast<std::size_t>(min(row0 + b * 8 + g, n - 1)) * k + s_begin * KSTEP + t * 8 * C;
  const bf16* xp[2] = {x + static_cast<std::size_t>(g) * k + s_begin * KSTEP + t * 8 * C,
                       x + static_cast<std::size_t>(8 + g) * k + s_begin * KSTEP + t * 8 * C};
  auto load = [&](auto& bb) {
    constexpr int NU = sizeof(bb.x) / sizeof(bb.x[0]);
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int b = 0; b < RB; ++b)
#pragma unroll
        for (int c = 0; c < C; ++c) bb.w[u][b][c] = sd::load_weight(wp[b] + u * KSTEP + c * 8);
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int c = 0; c < C; ++c)
          bb.x[u][j][c] = NOX ? make_uint4(0x3f803f80u ^ lane, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u ^ u)
                              : sd::load_activation(xp[j] + u * KSTEP + c * 8);
#pragma unroll
    for (int b = 0; b < RB; ++b) wp[b] += NU * KSTEP;
#pragma unroll
    for (int j = 0; j < 2; ++j) xp[j] += NU * KSTEP;
  };
  auto mma = [&](const auto& bb) {
    constexpr int NU = sizeof(bb.x) / sizeof(bb.x[0]);
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const std::uint32_t* x0 = reinterpret_cast<const std::uint32_t*>(&bb.x[u][0][c]);
        const std::uint32_t* x1 = reinterpret_cast<const std::uint32_t*>(&bb.x[u][1][c]);
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int b = 0; b < RB; ++b) {
            const std::uint32_t* wr = reinterpret_cast<const std::uint32_t*>(&bb.w[u][b][c]);
            sd::mma_m16n8k16<bf16>(acc[((u * C + c) * 2 + h) % ACC][b], x0[2 * h], x1[2 * h], x0[2 * h + 1], x1[2 * h + 1],
                                   wr[2 * h], wr[2 * h + 1]);
          }
      }
  };
  int s = s_begin;
  if (PIPE && s + U <= s_end) {
    Bt2Batch<U, RB, C> cur;
    load(cur);
    s += U;
#pragma unroll 1
    for (; s + U <= s_end; s += U) {
      Bt2Batch<U, RB, C> nxt;
      load(nxt);
      mma(cur);
      cur = nxt;
    }
    mma(cur);
  }
#pragma unroll 1
  for (; s + U <= s_end; s += U) {
    Bt2Batch<U, RB, C> bb;
    load(bb);
    mma(bb);
  }
#pragma unroll 1
  for (; s < s_end; ++s) {
    Bt2Batch<1, RB, C> bb;
    load(bb);
    mma(bb);
  }
#pragma unroll
  for (int a = 1; a < ACC; ++a)
#pragma unroll
    for (int b = 0; b < RB; ++b)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[0][b][e] += acc[a][b][e];
  if constexpr (SPLIT != kBt2Cluster) {
    publish_parts(bop_slots, warp * RB, acc[0], 1, 0);
    if (SPLIT == kBt2NoSum || cl == 1) {
      sum_parts_and_store<RB, 32 * W>(bop_slots, W, tile * RB * 8, out, n);
      return;
    }
    __shared__ unsigned is_last;
    float4* mine = ws + (static_cast<std::size_t>(tile) * cl + rank) * RB * 32;
    for (int i = threadIdx.x; i < RB * 32; i += 32 * W) {
      float4 v = bop_slots[i];
      for (int q = 1; q < W; ++q) {
        const float4 a = bop_slots[q * RB * 32 + i];
        v.x += a.x;
        v.y += a.y;
        v.z += a.z;
        v.w += a.w;
      }
      mine[i] = v;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(&counters[tile], 1u) == static_cast<unsigned>(cl - 1) ? 1u : 0u;
    __syncthreads();
    if (is_last == 0) return;
    __threadfence();
    const float4* base = ws + static_cast<std::size_t>(tile) * cl * RB * 32;
    for (int i = threadIdx.x; i < RB * 32; i += 32 * W) {
      float4 v = __ldcg(base + i);
      for (int q = 1; q < cl; ++q) {
        const float4 a = __ldcg(base + q * RB * 32 + i);
        v.x += a.x;
        v.y += a.y;
        v.z += a.z;
        v.w += a.w;
      }
      store_fragment_bf16(out, n, tile * RB * 8, i / 32, i % 32, v.x, v.y, v.z, v.w);
    }
    if (threadIdx.x == 0) counters[tile] = 0;
    return;
  }
  if (!publish_parts(bop_slots, pidx * RB, acc[0], cl, rank)) return;
  sum_parts_and_store<RB, 32 * W>(bop_slots, parts, tile * RB * 8, out, n);
}

// ---------------------------------------------------------------------------------------------
// Session 23 ("sk", written for session 24, not run): bt's 8-row tile as stream-K. ncu put bt on
// 7168x8192 at 2.26 waves of long CTAs (896 tiles over 3 x 132 slots), the last wave a quarter
// full, where the M = 1 GEMV runs 10.9 waves. Here exactly `gridDim.x` persistent CTAs (CTAs an SM
// x SMs) take equal, contiguous shares of all (tile, k-step) units, tile-major: CTA g owns units
// [g TS / G, (g + 1) TS / G) of TS = tiles x steps, so every CTA streams the same number of weight
// bytes and all end together. A CTA walks its share tile by tile; for each tile segment its W
// warps split the segment's k-steps, the CTA sums them in shared memory (warp order), and a
// segment that is a whole tile is stored at once. A tile cut by a share boundary (at most the
// first and last segment of a CTA) has its 2-3 parts summed by the last CTA to arrive, in CTA
// order, from a workspace slot per (CTA, head/tail): deterministic; the per-tile counter is reset
// by that CTA (graph-safe). Needs K % (32 C) == 0, N % 8 == 0 (the lab's weights) and gridDim.x <=
// tiles x steps (every share non-empty: the arrival count assumes it).
template <int C, int W, int U, bool NOX, int MINB>
__global__ void __launch_bounds__(32 * W, MINB) sk_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                         bf16* out, float4* ws, unsigned* counters, int n, int k) {
  constexpr int KSTEP = 32 * C;
  extern __shared__ float4 sk_slots[];  // [W][32]
  __shared__ unsigned is_last;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const long long steps = k / KSTEP, tiles = n / 8, total = tiles * steps, G = gridDim.x;
  auto start_of = [&](long long cta) { return cta * total / G; };
  auto owner_of = [&](long long unit) {  // the CTA whose share holds `unit`
    long long o = ((unit + 1) * G + total - 1) / total - 1;
    while (o > 0 && start_of(o) > unit) --o;
    while (o + 1 < G && start_of(o + 1) <= unit) ++o;
    return o;
  };
  const long long my_begin = start_of(blockIdx.x), my_end = start_of(blockIdx.x + 1);
  const long long my_first_tile = my_begin / steps;
  for (long long u = my_begin; u < my_end;) {
    const long long tile = u / steps;
    const int s0 = static_cast<int>(u % steps);
    const int s1 = static_cast<int>(min(static_cast<long long>(steps), s0 + (my_end - u)));
    u += s1 - s0;
    // This warp's k-steps of the segment.
    const int w_begin = s0 + (s1 - s0) * warp / W, w_end = s0 + (s1 - s0) * (warp + 1) / W;
    float acc[4] = {};
    const bf16* wp = w + static_cast<std::size_t>(tile * 8 + g) * k + static_cast<std::size_t>(w_begin) * KSTEP + t * 8 * C;
    const bf16* xp[2] = {x + static_cast<std::size_t>(g) * k + static_cast<std::size_t>(w_begin) * KSTEP + t * 8 * C,
                         x + static_cast<std::size_t>(8 + g) * k + static_cast<std::size_t>(w_begin) * KSTEP + t * 8 * C};
    auto batch = [&](auto nu_tag) {
      constexpr int NU = decltype(nu_tag)::value;
      uint4 wv[NU][C], xv[NU][2][C];
#pragma unroll
      for (int q = 0; q < NU; ++q)
#pragma unroll
        for (int c = 0; c < C; ++c) wv[q][c] = sd::load_weight(wp + q * KSTEP + c * 8);
#pragma unroll
      for (int q = 0; q < NU; ++q)
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int c = 0; c < C; ++c)
            xv[q][j][c] = NOX ? make_uint4(0x3f803f80u ^ lane, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u ^ q)
                              : sd::load_activation(xp[j] + q * KSTEP + c * 8);
      wp += NU * KSTEP;
      xp[0] += NU * KSTEP;
      xp[1] += NU * KSTEP;
#pragma unroll
      for (int q = 0; q < NU; ++q)
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const std::uint32_t* x0 = reinterpret_cast<const std::uint32_t*>(&xv[q][0][c]);
          const std::uint32_t* x1 = reinterpret_cast<const std::uint32_t*>(&xv[q][1][c]);
          const std::uint32_t* wr = reinterpret_cast<const std::uint32_t*>(&wv[q][c]);
#pragma unroll
          for (int h = 0; h < 2; ++h)
            sd::mma_m16n8k16<bf16>(acc, x0[2 * h], x1[2 * h], x0[2 * h + 1], x1[2 * h + 1], wr[2 * h], wr[2 * h + 1]);
        }
    };
    int s = w_begin;
#pragma unroll 1
    for (; s + U <= w_end; s += U) batch(std::integral_constant<int, U>{});
#pragma unroll 1
    for (; s < w_end; ++s) batch(std::integral_constant<int, 1>{});
    // The CTA's sum of its warps (warp order), by warp 0's lanes.
    sk_slots[warp * 32 + lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    __syncthreads();
    const bool whole = s0 == 0 && s1 == steps;
    if (warp == 0) {
      float4 v = sk_slots[lane];
      for (int q = 1; q < W; ++q) {
        const float4 a = sk_slots[q * 32 + lane];
        v.x += a.x;
        v.y += a.y;
        v.z += a.z;
        v.w += a.w;
      }
      if (whole) {
        store_fragment_bf16(out, n, static_cast<int>(tile * 8), 0, lane, v.x, v.y, v.z, v.w);
      } else {
        const int slot = tile == my_first_tile ? 0 : 1;
        ws[(static_cast<std::size_t>(blockIdx.x) * 2 + slot) * 32 + lane] = v;
        __threadfence();
      }
    }
    if (!whole) {
      __syncthreads();
      const long long first = owner_of(tile * steps), last = owner_of(tile * steps + steps - 1);
      if (threadIdx.x == 0)
        is_last = atomicAdd(&counters[tile], 1u) == static_cast<unsigned>(last - first) ? 1u : 0u;
      __syncthreads();
      if (is_last != 0 && warp == 0) {
        __threadfence();
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        for (long long o = first; o <= last; ++o) {
          const int slot = tile == start_of(o) / steps ? 0 : 1;
          const float4 a = __ldcg(ws + (static_cast<std::size_t>(o) * 2 + slot) * 32 + lane);
          v.x += a.x;
          v.y += a.y;
          v.z += a.z;
          v.w += a.w;
        }
        store_fragment_bf16(out, n, static_cast<int>(tile * 8), 0, lane, v.x, v.y, v.z, v.w);
        if (lane == 0) counters[tile] = 0;
      }
    }
    __syncthreads();  // sk_slots and is_last are reused by the next segment
  }
}

// ---------------------------------------------------------------------------------------------
// Session 18, written for session 19 (compiled, not run): bt with its loads through a per-warp
// shared-memory ring ("ring"). ncu put version 7 and bt on long-scoreboard stalls at 23-37%
// occupancy: the register batches cap the bytes in flight. Here each lane cp.asyncs its own
// chunks (U k-steps of its RB weight chunks and its two x chunks a stage) S - 1 stages ahead and
// reads them back with LDS, so the bytes in flight cost shared memory, not registers. A lane reads
// only what it wrote, so cp.async.wait_group alone orders it (no warp barrier); a slot is
// refilled one iteration after its LDS results fed MMAs, which wait for them. Weight copies .cg
// (L1 bypassed), x copies .ca (x is re-read by every CTA). Epilogue and split as bt.
// Bytes in flight an SM: about (S - 1) / S x RB / (RB + 2) of the shared memory the resident CTAs
// hold (x takes the rest), e.g. ~85 KB at RB = 2, S = 8 and ~110 KB at RB = 4 against bt's ~40 KB
// of register batches (r8 c1 w4 u4 on 1280x8192, ncu).
// Dynamic shared memory: ring_smem_bytes(CL).
// Run: LAB16_S18=1 LAB16_RING=1 ./decode16_lab 576 7168 1280 8192 1536 7168 4096 4096
// XR: x stays out of the ring, loaded into registers at the top of each iteration (before the
// wait for the weight), so the ring holds weight only.
template <int RB, int C, int W, int U, int S, bool XR = false>
__host__ __device__ constexpr int ring_smem_bytes(int cl) {
  return cl * W * RB * 32 * 16 + W * S * U * (RB + (XR ? 0 : 2)) * C * 32 * 16;
}

template <int RB, int C, int W, int U, int S, bool XR = false>
__global__ void __launch_bounds__(32 * W, 1) ring_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                         bf16* out, int n, int k) {
  static_assert(S >= 2, "S: >= 2 stages");
  constexpr int KSTEP = 32 * C;
  constexpr int XS = XR ? 0 : 2;          // x chunks a k-step in the ring
  constexpr int SLOT = U * (RB + XS) * C;  // 16-byte chunks a lane and stage: [u][RB weight + XS x][c]
  extern __shared__ float4 ring_smem[];   // [CL * W][RB][32] parts, then [W][S][SLOT][32] chunks
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int tile = blockIdx.x, rank = blockIdx.y, cl = gridDim.y;
  const int row0 = tile * RB * 8;
  const int steps = k / KSTEP, parts = cl * W, pidx = rank * W + warp;
  const int s_begin = static_cast<int>(static_cast<long long>(steps) * pidx / parts);
  const int s_end = static_cast<int>(static_cast<long long>(steps) * (pidx + 1) / parts);
  if (cl > 1) sd::cluster_arrive_relaxed();

  float acc[RB][4] = {};
  const bf16* wp[RB];
#pragma unroll
  for (int b = 0; b < RB; ++b)
    wp[b] = w + static_cast<std::size_t>(min(row0 + b * 8 + g, n - 1)) * k + s_begin * KSTEP + t * 8 * C;
  const bf16* xp[2] = {x + static_cast<std::size_t>(g) * k + s_begin * KSTEP + t * 8 * C,
                       x + static_cast<std::size_t>(8 + g) * k + s_begin * KSTEP + t * 8 * C};
  // This lane's chunk i of stage slot: ring + ((slot * SLOT + i) * 32 + lane) * 16 bytes.
  const std::uint32_t ring = sd::smem_addr(ring_smem + cl * W * RB * 32) + (warp * S * SLOT * 32 + lane) * 16;
  const int nsteps = s_end - s_begin, batches = (nsteps + U - 1) / U;
  auto issue = [&](int bi) {  // batch bi's chunks into slot bi % S, then one commit (empty past the end)
    if (bi < batches) {
      const std::uint32_t base = ring + (bi % S) * SLOT * 32 * 16;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int st = bi * U + u;
        if (st < nsteps) {
#pragma unroll
          for (int b = 0; b < RB; ++b)
#pragma unroll
            for (int c = 0; c < C; ++c)
              sd::cp_async_16(base + ((u * (RB + XS) + b) * C + c) * 32 * 16, wp[b] + st * KSTEP + c * 8, 16);
#pragma unroll
          for (int j = 0; j < XS; ++j)
#pragma unroll
            for (int c = 0; c < C; ++c)
              asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(base + ((u * (RB + XS) + RB + j) * C + c) * 32 * 16),
                           "l"(xp[j] + st * KSTEP + c * 8)
                           : "memory");
        }
      }
    }
    sd::cp_async_commit();
  };
#pragma unroll
  for (int bi = 0; bi < S - 1; ++bi) issue(bi);
#pragma unroll 1
  for (int bi = 0; bi < batches; ++bi) {
    issue(bi + S - 1);
    uint4 xr[XR ? U : 1][2][C];
    if constexpr (XR) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int c = 0; c < C; ++c)
            xr[u][j][c] = bi * U + u < nsteps ? sd::load_activation(xp[j] + (bi * U + u) * KSTEP + c * 8) : make_uint4(0, 0, 0, 0);
    }
    sd::cp_async_wait<S - 1>();  // batch bi's group (this lane's copies) has landed
    const std::uint32_t base = ring + (bi % S) * SLOT * 32 * 16;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (bi * U + u >= nsteps) break;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const uint4 xa = XR ? xr[XR ? u : 0][0][c] : sd::lds128(base + ((u * (RB + XS) + RB) * C + c) * 32 * 16);
        const uint4 xb = XR ? xr[XR ? u : 0][1][c] : sd::lds128(base + ((u * (RB + XS) + RB + 1) * C + c) * 32 * 16);
        const std::uint32_t* x0 = reinterpret_cast<const std::uint32_t*>(&xa);
        const std::uint32_t* x1 = reinterpret_cast<const std::uint32_t*>(&xb);
#pragma unroll
        for (int b = 0; b < RB; ++b) {
          const uint4 wv = sd::lds128(base + ((u * (RB + XS) + b) * C + c) * 32 * 16);
          const std::uint32_t* wr = reinterpret_cast<const std::uint32_t*>(&wv);
#pragma unroll
          for (int h = 0; h < 2; ++h)
            sd::mma_m16n8k16<bf16>(acc[b], x0[2 * h], x1[2 * h], x0[2 * h + 1], x1[2 * h + 1], wr[2 * h], wr[2 * h + 1]);
        }
      }
    }
  }
  sd::cp_async_wait<0>();

  // As bt: every warp's fragments into rank 0's part slots, one barrier, rank 0 sums in order.
  if (!publish_parts(ring_smem, pidx * RB, acc, cl, rank)) return;
  sum_parts_and_store<RB, 32 * W>(ring_smem, parts, tile * RB * 8, out, n);
}

// ---------------------------------------------------------------------------------------------
// Session 25 ("tb", written for session 26): a CTA of R = 8 RB weight rows whose W warps split
// the CTA's k-range; each warp streams its own range through a private ring of S slots, each
// slot one unit of KS k-elements of the CTA's R weight rows and of the 16 x rows, filled by
// per-row bulk copies (cp.async.bulk, 1-D, completing on the slot's mbarrier) that lane 0 issues
// S units ahead. Rows sit KS * 2 + 16 bytes apart in a slot, so the 8 row addresses of an
// ldmatrix fall in 8 different 16-byte bank groups (no conflicts). The MMAs read x (A, 16 tokens)
// and the weight (B, 8 rows a block) by ldmatrix.x4 in natural k order. Split-K over a (1, CL, 1)
// cluster and the warps' sum as bt (publish_parts / sum_parts_and_store: rank 0 sums in order).
// What it tests (docs/gpu-runbook.md, "Order for the open issues (session 26)"): bytes in flight
// bounded by shared memory rather than registers, with x read once per R rows (x / weight bytes
// = 16 / R) and no register batches; every earlier structure (sessions 15-23) either re-read x
// per 8-16 rows or held its loads in registers.
// Needs K % (CL * W * KS) == 0 (the lab's shapes) and 16-byte aligned rows (K % 8 == 0).
// Dynamic shared memory: tb_smem_bytes(CL) (parts first, then the rings).
// Run: LAB16_TB=1 ./decode16_lab 576 7168 1280 8192 1536 7168 8192 1024 4096 4096
template <int RB, int W, int KS, int S>
__host__ __device__ constexpr int tb_slot_bytes() {
  return (RB * 8 + kM) * (KS * 2 + 16);
}
template <int RB, int W, int KS, int S>
__host__ __device__ constexpr int tb_smem_bytes(int cl) {
  return (cl * W * RB * 32 * 16 + 127) / 128 * 128 + W * S * tb_slot_bytes<RB, W, KS, S>();
}

__device__ __forceinline__ void ldsm_x4(std::uint32_t addr, std::uint32_t& r0, std::uint32_t& r1, std::uint32_t& r2,
                                        std::uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

template <int RB, int W, int KS, int S>
__global__ void __launch_bounds__(32 * W, 1) tb_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* out,
                                                       int n, int k) {
  namespace gb = tgemm::kernels::gemv_bulk_detail;
  static_assert(KS % 32 == 0 && S >= 2 && W * S <= 64, "tb: KS a multiple of 32, S >= 2, W * S <= 64");
  constexpr int R = RB * 8;
  constexpr int ROWB = KS * 2 + 16;  // bytes between rows in a slot
  constexpr int SLOTB = tb_slot_bytes<RB, W, KS, S>();
  extern __shared__ __align__(128) float4 tb_smem[];  // [CL * W][RB][32] parts, then [W][S] slots
  __shared__ __align__(8) std::uint64_t tb_full[W * S];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int tile = blockIdx.x, rank = blockIdx.y, cl = gridDim.y;
  const int row0 = tile * R;
  const int valid = min(R, n - row0);  // rows this CTA copies (the rest of a slot is never stored)
  const int units = k / KS, parts = cl * W, pidx = rank * W + warp;
  const int u_begin = static_cast<int>(static_cast<long long>(units) * pidx / parts);
  const int u_end = static_cast<int>(static_cast<long long>(units) * (pidx + 1) / parts);
  const int nu = u_end - u_begin;
  if (cl > 1) sd::cluster_arrive_relaxed();

  const std::uint32_t parts_bytes = (cl * W * RB * 32 * 16 + 127) / 128 * 128;
  const std::uint32_t ring = sd::smem_addr(tb_smem) + parts_bytes + warp * S * SLOTB;
  const std::uint32_t bars = sd::smem_addr(tb_full) + warp * S * 8;
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < S; ++i) gb::mbar_init(bars + i * 8, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncwarp();
  const std::uint32_t bytes_unit = static_cast<std::uint32_t>((valid + kM) * KS * 2);
  // Unit j of this warp's range into slot j % S, by the whole warp: lane 0 arrives with the
  // unit's bytes, and lane l copies the slot's rows l, l + 32, ... (weight rows, then the 16 x
  // rows). A copy may land before the arrival (the transaction count goes negative meanwhile);
  // the phase completes only after the arrival and all the bytes.
  auto issue = [&](int j) {
    if (j >= nu) return;
    const std::uint32_t slot = ring + (j % S) * SLOTB, bar = bars + (j % S) * 8;
    const std::size_t kofs = static_cast<std::size_t>(u_begin + j) * KS;
    if (lane == 0) gb::mbar_arrive_expect(bar, bytes_unit);
    for (int c = lane; c < valid + kM; c += 32) {
      const bf16* src = c < valid ? w + static_cast<std::size_t>(row0 + c) * k + kofs
                                  : x + static_cast<std::size_t>(c - valid) * k + kofs;
      gb::bulk_copy(slot + (c < valid ? c : R + c - valid) * ROWB, src, KS * 2, bar);
    }
  };
#pragma unroll
  for (int j = 0; j < S; ++j) issue(j);

  float acc[RB][4] = {};
  // ldmatrix row addresses: A (x) lane l -> token l % 16, k + 8 (l / 16); B (block b) lane l ->
  // row 8 b + l % 8, k + 8 (l / 8) (four 8x8 matrices: k 0, 8, 16, 24).
  const std::uint32_t a_off = (R + lane % 16) * ROWB + (lane / 16) * 16;
  const std::uint32_t b_off = (lane % 8) * ROWB + (lane / 8) * 16;
#pragma unroll 1
  for (int j = 0; j < nu; ++j) {
    const std::uint32_t slot = ring + (j % S) * SLOTB;
    gb::mbar_wait(bars + (j % S) * 8, (j / S) & 1);
#pragma unroll
    for (int kk = 0; kk < KS / 32; ++kk) {
      std::uint32_t a[2][4];
      ldsm_x4(slot + a_off + kk * 64, a[0][0], a[0][1], a[0][2], a[0][3]);
      ldsm_x4(slot + a_off + kk * 64 + 32, a[1][0], a[1][1], a[1][2], a[1][3]);
#pragma unroll
      for (int b = 0; b < RB; ++b) {
        std::uint32_t b0, b1, b2, b3;
        ldsm_x4(slot + b_off + b * 8 * ROWB + kk * 64, b0, b1, b2, b3);
        sd::mma_m16n8k16<bf16>(acc[b], a[0][0], a[0][1], a[0][2], a[0][3], b0, b1);
        sd::mma_m16n8k16<bf16>(acc[b], a[1][0], a[1][1], a[1][2], a[1][3], b2, b3);
      }
    }
    // The slot's reads are done (their registers fed the MMAs above): refill it S units ahead.
    __syncwarp();
    if (j + S < nu) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      issue(j + S);
    }
  }
  if (!publish_parts(tb_smem, pidx * RB, acc, cl, rank)) return;
  sum_parts_and_store<RB, 32 * W>(tb_smem, parts, row0, out, n);
}

// ---------------------------------------------------------------------------------------------
// Session 18: the library's version-7 kernel copied here with two switches, to find where its
// 0.3-0.5 us over bt go (bt and lib v7 run the same SASS main loop). LOOP_LAB: bt's prologue and
// loop (no K tail, no token clamp); EPI_LAB: bt's epilogue (its part sum and bf16x2 stores, no
// bias or output-type switch). <.., false, false> is the library's kernel as written at 1c13522.
template <int RB, int C, int W, int U, bool LOOP_LAB, bool EPI_LAB>
__global__ void __launch_bounds__(32 * W, 2) lib7x_kernel(const tgemm::kernels::SkinnyParams p) {
  using Shape = tgemm::kernels::SkinnyBopShape<RB, C, W, U>;
  constexpr int KSTEP = Shape::kKStep;
  extern __shared__ float4 bop_parts_x[];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  const int split_k = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const int row0 = static_cast<int>(blockIdx.x) * Shape::kRows;
  const int steps = LOOP_LAB ? p.k / KSTEP : (p.k + KSTEP - 1) / KSTEP;
  const int full_steps = p.k / KSTEP;
  const int parts = split_k * W, pidx = rank * W + warp;
  const int s_begin = static_cast<int>(static_cast<std::int64_t>(steps) * pidx / parts);
  const int s_end = static_cast<int>(static_cast<std::int64_t>(steps) * (pidx + 1) / parts);
  if (split_k > 1) sd::cluster_arrive_relaxed();
  float acc[RB][4];
#pragma unroll
  for (int b = 0; b < RB; ++b) acc[b][0] = acc[b][1] = acc[b][2] = acc[b][3] = 0.0f;
  const bf16* wp[RB];
#pragma unroll
  for (int b = 0; b < RB; ++b)
    wp[b] = static_cast<const bf16*>(p.w) + static_cast<std::int64_t>(min(row0 + 8 * b + g, p.n - 1)) * p.ldb +
            s_begin * KSTEP + 8 * C * t;
  const int x0 = LOOP_LAB ? g : min(g, p.m - 1), x1 = LOOP_LAB ? g + 8 : min(g + 8, p.m - 1);
  const bf16* xp[2] = {static_cast<const bf16*>(p.x) + static_cast<std::int64_t>(x0) * p.lda + s_begin * KSTEP + 8 * C * t,
                       static_cast<const bf16*>(p.x) + static_cast<std::int64_t>(x1) * p.lda + s_begin * KSTEP + 8 * C * t};
  auto mmas = [&](const uint4& w, const uint4& xa, const uint4& xb, float (&c)[4]) {
    const std::uint32_t* wr = reinterpret_cast<const std::uint32_t*>(&w);
    const std::uint32_t* a = reinterpret_cast<const std::uint32_t*>(&xa);
    const std::uint32_t* b = reinterpret_cast<const std::uint32_t*>(&xb);
#pragma unroll
    for (int h = 0; h < 2; ++h) sd::mma_m16n8k16<bf16>(c, a[2 * h], b[2 * h], a[2 * h + 1], b[2 * h + 1], wr[2 * h], wr[2 * h + 1]);
  };
  auto batch = [&](auto nu_tag) {
    constexpr int NU = decltype(nu_tag)::value;
    uint4 wv[NU][RB][C], xv[NU][2][C];
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int b = 0; b < RB; ++b)
#pragma unroll
        for (int c = 0; c < C; ++c) wv[u][b][c] = sd::load_weight(wp[b] + u * KSTEP + 8 * c);
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int c = 0; c < C; ++c) xv[u][j][c] = sd::load_activation(xp[j] + u * KSTEP + 8 * c);
#pragma unroll
    for (int b = 0; b < RB; ++b) wp[b] += NU * KSTEP;
#pragma unroll
    for (int j = 0; j < 2; ++j) xp[j] += NU * KSTEP;
#pragma unroll
    for (int u = 0; u < NU; ++u)
#pragma unroll
      for (int c = 0; c < C; ++c)
#pragma unroll
        for (int b = 0; b < RB; ++b) mmas(wv[u][b][c], xv[u][0][c], xv[u][1][c], acc[b]);
  };
  const int s_full = LOOP_LAB ? s_end : min(s_end, full_steps);
  int s = s_begin;
#pragma unroll 1
  for (; s + U <= s_full; s += U) batch(std::integral_constant<int, U>{});
#pragma unroll 1
  for (; s < s_full; ++s) batch(std::integral_constant<int, 1>{});
  if (!LOOP_LAB && s < s_end) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int rest = p.k - (s * KSTEP + 8 * C * t + 8 * c);
      uint4 xv[2];
#pragma unroll
      for (int j = 0; j < 2; ++j)
        xv[j] = rest >= 8 ? sd::load_activation(xp[j] + 8 * c)
                          : (rest > 0 ? sd::load_partial_chunk(xp[j] + 8 * c, rest) : make_uint4(0, 0, 0, 0));
#pragma unroll
      for (int b = 0; b < RB; ++b) {
        const uint4 wv = rest >= 8 ? sd::load_weight(wp[b] + 8 * c)
                                   : (rest > 0 ? sd::load_partial_chunk(wp[b] + 8 * c, rest) : make_uint4(0, 0, 0, 0));
        mmas(wv, xv[0], xv[1], acc[b]);
      }
    }
  }
  float4* dst = bop_parts_x;
  if (split_k > 1) {
    sd::cluster_wait_acquire();
    dst = cooperative_groups::this_cluster().map_shared_rank(bop_parts_x, 0);
  }
#pragma unroll
  for (int b = 0; b < RB; ++b) dst[(pidx * RB + b) * 32 + lane] = make_float4(acc[b][0], acc[b][1], acc[b][2], acc[b][3]);
  if (split_k > 1) {
    sd::cluster_arrive_release();
    if (rank != 0) return;
    sd::cluster_wait_acquire();
  } else {
    __syncthreads();
  }
  if (EPI_LAB) {
    sum_parts_and_store<RB, 32 * W>(bop_parts_x, parts, static_cast<int>(blockIdx.x) * Shape::kRows, static_cast<bf16*>(p.out), p.n);
    return;
  }
  const int e_row0 = sd::cta_index() * Shape::kRows;
  for (int i = sd::thread_index(); i < RB * 32; i += Shape::kThreads) {
    float4 v = bop_parts_x[i];
#pragma unroll 8
    for (int q = 1; q < parts; ++q) {
      const float4 a = bop_parts_x[q * RB * 32 + i];
      v.x += a.x;
      v.y += a.y;
      v.z += a.z;
      v.w += a.w;
    }
    const int l = i % 32, n0 = e_row0 + 8 * (i / 32) + 2 * (l % 4), m0 = l / 4;
    tgemm::kernels::skinny_bop_detail::store_pair(p, m0, n0, v.x, v.y);
    tgemm::kernels::skinny_bop_detail::store_pair(p, m0 + 8, n0, v.z, v.w);
  }
}

using lab::launch_cluster;
using lab::launch_grid;

// ---------------------------------------------------------------------------------------------
// Session 19 (LAB16_SHUF): w[N, K] row-major -> the "sh" layout of bop_kernel<.., SH = true>
// (lab_common.cuh's pretile_kernel, shared with v7_parts_lab's run 10).
using lab::pretile_kernel;

struct Problem {
  int n, k, sets;
  std::vector<bf16*> w, x, out;
  std::vector<bf16*> wsh;  // LAB16_SHUF: each set's weight pre-tiled (lab::pretile_kernel)
  float* ref = nullptr;
  float* ws = nullptr;
  unsigned* counters = nullptr;
  unsigned* sink = nullptr;
};

// Relative Frobenius error of set 0's output against the reference (NaN poison first).
double check(const Problem& p, const std::function<void(int, cudaStream_t)>& launch) {
  return lab::poisoned_error(p.out[0], p.ref, kM * p.n, launch);
}

int main(int argc, char** argv) {
  const std::vector<std::pair<int, int>> shapes = lab::shapes_from_args(argc, argv, {{576, 7168}, {1280, 8192}, {1536, 7168}, {8192, 1024}, {4096, 4096}});
  const cudaDeviceProp prop = lab::device_header();
  const int sms = prop.multiProcessorCount;
  std::printf("%-14s %-30s %9s %7s %9s\n", "problem", "variant", "us", "/floor", "err");
  int failures = 0;
  constexpr int kMaxSplits = 16;   // the tile kernels' split-K sweep
  constexpr int kMaxSplitsXs = 64;  // the xs/xr kernels'
  for (const auto& nk : shapes) {
    const int n = nk.first, k = nk.second;
    if (k % 128 != 0) {
      std::printf("%dx%d: skipped (the lab's kernels need K a multiple of 128)\n", n, k);
      continue;
    }
    Problem p;
    p.n = n;
    p.k = k;
    const std::size_t wb = static_cast<std::size_t>(n) * k * 2, xb = static_cast<std::size_t>(kM) * k * 2;
    p.sets = lab::rotation_sets(prop, wb);
    for (int i = 0; i < p.sets; ++i) {
      bf16 *w, *o;
      CK(cudaMalloc(&w, wb + xb + 256));  // x right after w, as the bench lays them out
      CK(cudaMalloc(&o, static_cast<std::size_t>(kM) * n * sizeof(bf16)));
      lab::fill_kernel<<<1024, 256>>>(w, (wb + xb) / 2, 1234 + i);
      CK(cudaGetLastError());
      p.w.push_back(w);
      p.x.push_back(w + static_cast<std::size_t>(n) * k);
      p.out.push_back(o);
    }
    if (std::getenv("LAB16_SHUF") != nullptr && n % 8 == 0)
      for (int i = 0; i < p.sets; ++i) {
        bf16* wsh;
        CK(cudaMalloc(&wsh, wb));
        pretile_kernel<<<1024, 256>>>(p.w[i], wsh, n, k);
        CK(cudaGetLastError());
        p.wsh.push_back(wsh);
      }
    CK(cudaMalloc(&p.ref, static_cast<std::size_t>(kM) * n * sizeof(float)));
    // wsum (session 16) keeps a 1 KB part a warp: up to (8 x SMs or N / 16 row tiles) x 8 warps.
    const std::size_t ws_floats = std::max(static_cast<std::size_t>(kMaxSplitsXs) * kM * (n + 128),
                                           static_cast<std::size_t>(8 * sms + n / 16 + 1) * 8 * 32 * 8);
    CK(cudaMalloc(&p.ws, ws_floats * sizeof(float)));
    CK(cudaMalloc(&p.counters, (n / 8 + 1) * sizeof(unsigned)));  // a counter per 8-row tile (bt2 ws)
    CK(cudaMemset(p.counters, 0, (n / 8 + 1) * sizeof(unsigned)));
    CK(cudaMalloc(&p.sink, 64));
    ref_kernel<<<(kM * n + 7) / 8, 256>>>(p.x[0], p.w[0], p.ref, n, k);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    char name[40];
    std::snprintf(name, sizeof name, "%dx%dx%d", kM, n, k);

    std::string floor_shape;
    const double floor_best = lab::stream_floor_us(sms, p.w, wb, p.sink, {2, 4, 8, 16, 32}, &floor_shape);
    std::printf("%-14s %-30s %9.2f %7.3f %9s\n", name, ("floor " + floor_shape).c_str(), floor_best, 1.0, "-");

    // err < 0: an ablation whose result is wrong by design (not checked, printed as "ablation").
    auto report = [&](const std::string& v, double t, double err) {
      const bool ablation = err < 0;
      const bool bad = !ablation && !(err < 1e-2);
      failures += bad;
      char e[32];
      if (ablation) std::snprintf(e, sizeof e, "ablation");
      else std::snprintf(e, sizeof e, "%.1e%s", err, bad ? "!" : "");
      std::printf("%-14s %-30s %9.2f %7.3f %9s\n", name, v.c_str(), t, t / floor_best, e);
    };

    // Plain tiles: split-K S = 1, 2, 4, ... while every warp keeps a k-step and the grid stays
    // within 8 CTAs per SM.
    auto tile = [&](auto kernel, const char* unroll, int rows, int chunks, int warps, const char* mode = "tile") {
      const bool ablation = std::string(mode) != "tile" && std::string(mode) != "wsum";
      const int tiles = (n + rows - 1) / rows;
      for (int splits = 1; splits <= kMaxSplits; splits *= 2) {
        if (k / (32 * chunks) < splits * warps) break;
        if (splits > 1 && static_cast<long long>(tiles) * splits > 8LL * sms) break;
        auto launch = [&](int i, cudaStream_t s) {
          kernel<<<dim3(tiles, splits), 32 * warps, 0, s>>>(p.x[i], p.w[i], p.out[i], p.ws, p.counters, n, k);
        };
        const double t = lab::time_launches(p.sets, launch);
        report(std::string(mode) + " r" + std::to_string(rows) + " c" + std::to_string(chunks) + " w" + std::to_string(warps) + " " +
                   unroll + " s" + std::to_string(splits),
               t, ablation ? -1.0 : check(p, launch));
      }
    };
    // Session 17: the earlier sweeps (sessions 15-16, measured) run only with LAB16_OLD=1; the best
    // plain tile and version 1 stay as the references.
    const bool old = std::getenv("LAB16_OLD") != nullptr;
    const bool s18 = std::getenv("LAB16_S18") != nullptr;  // session 18: only the A/B below
    if (!s18) tile(tile_kernel<16, 1, 8, 4>, "u4", 16, 1, 8);
    if (old) {
    tile(tile_kernel<16, 1, 4, 4>, "u4", 16, 1, 4);
    tile(tile_kernel<16, 2, 4, 2>, "u2", 16, 2, 4);
    tile(tile_kernel<16, 1, 8, 4>, "u4", 16, 1, 8);
    tile(tile_kernel<32, 1, 4, 2>, "u2", 32, 1, 4);
    tile(tile_kernel<32, 2, 4, 1>, "u1", 32, 2, 4);
    tile(tile_kernel<32, 1, 8, 2>, "u2", 32, 1, 8);
    tile(tile_kernel<64, 1, 4, 1>, "u1", 64, 1, 4);
    tile(tile_kernel<64, 1, 4, 2>, "u2", 64, 1, 4);
    tile(tile_kernel<64, 1, 8, 1>, "u1", 64, 1, 8);
    // Session 16: the best plain tile taken apart (MODE above).
    tile(tile_kernel<16, 1, 8, 4, 1>, "u4", 16, 1, 8, "tnox");
    tile(tile_kernel<16, 1, 8, 4, 2>, "u4", 16, 1, 8, "tnox-noepi");
    tile(tile_kernel<16, 1, 4, 4, 1>, "u4", 16, 1, 4, "tnox");
    tile(tile_kernel<16, 1, 4, 4, 2>, "u4", 16, 1, 4, "tnox-noepi");
    tile(tile_kernel<16, 1, 8, 4, 4>, "u4", 16, 1, 8, "tnox-bar");
    tile(tile_kernel<16, 1, 8, 4, 5>, "u4", 16, 1, 8, "tnox-out");
    tile(tile_kernel<16, 1, 8, 4, 6>, "u4", 16, 1, 8, "tnox-smem");
    tile(tile_kernel<16, 1, 8, 4, 3>, "u4", 16, 1, 8, "wsum");
    tile(tile_kernel<16, 1, 4, 4, 3>, "u4", 16, 1, 4, "wsum");
    tile(tile_kernel<16, 1, 8, 8, 3>, "u8", 16, 1, 8, "wsum");
    tile(tile_kernel<16, 2, 8, 2, 3>, "u2", 16, 2, 8, "wsum");

    // x in shared memory: the same split-K sweep; the stage must fit (<= 160 KB a CTA).
    // rows: the CTA's rows (xr: warps x 16); k-parts: the warps that split the CTA's k-range (xr: 1).
    auto xs = [&](auto kernel, const std::string& label, int rows, int chunks, int warps, bool nox,
                  bool rowsplit = false) {
      const int tiles = (n + rows - 1) / rows;
      const int steps = k / (32 * chunks);
      for (int splits = 1; splits <= kMaxSplitsXs; splits *= 2) {
        if (steps < splits * (rowsplit ? 2 : warps)) break;
        if (splits > 1 && static_cast<long long>(tiles) * splits > 8LL * sms) break;
        const int smem = nox ? 0 : kM * xs_row_bytes(steps / splits + 1, 32 * chunks);
        if (smem > 160 * 1024) continue;
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(smem, 1)));
        auto launch = [&](int i, cudaStream_t s) {
          kernel<<<dim3(tiles, splits), 32 * warps, smem, s>>>(p.x[i], p.w[i], p.out[i], p.ws, p.counters, n, k);
        };
        const double t = lab::time_launches(p.sets, launch);
        report(label + " s" + std::to_string(splits), t, nox ? -1.0 : check(p, launch));
      }
    };
    xs(xs_kernel<1, 1, 8, 4, false, false>, "xs r16 c1 w8 u4", 16, 1, 8, false);
    xs(xs_kernel<1, 1, 8, 8, false, false>, "xs r16 c1 w8 u8", 16, 1, 8, false);
    xs(xs_kernel<1, 1, 8, 2, true, false>, "xs r16 c1 w8 u2 pipe", 16, 1, 8, false);
    xs(xs_kernel<1, 1, 8, 4, true, false>, "xs r16 c1 w8 u4 pipe", 16, 1, 8, false);
    xs(xs_kernel<1, 1, 4, 4, true, false>, "xs r16 c1 w4 u4 pipe", 16, 1, 4, false);
    xs(xs_kernel<1, 2, 4, 2, true, false>, "xs r16 c2 w4 u2 pipe", 16, 2, 4, false);
    xs(xs_kernel<2, 1, 8, 2, true, false>, "xs r32 c1 w8 u2 pipe", 32, 1, 8, false);
    xs(xs_kernel<1, 1, 8, 4, false, true>, "nox r16 c1 w8 u4", 16, 1, 8, true);
    xs(xs_kernel<1, 1, 8, 4, true, true>, "nox r16 c1 w8 u4 pipe", 16, 1, 8, true);
    xs(xs_kernel<1, 1, 4, 4, true, false, true>, "xr r64 c1 w4 u4 pipe", 64, 1, 4, false, true);
    xs(xs_kernel<1, 1, 8, 4, true, false, true>, "xr r128 c1 w8 u4 pipe", 128, 1, 8, false, true);
    xs(xs_kernel<1, 1, 8, 2, true, false, true>, "xr r128 c1 w8 u2 pipe", 128, 1, 8, false, true);
    xs(xs_kernel<1, 1, 4, 4, true, true, true>, "nox xr r64 c1 w4 u4 pipe", 64, 1, 4, true, true);
    }  // old

    // Session 17: the weight as the B operand, split-K over a (1, CL, 1) cluster, CL = 1, 2, 4, 8
    // while every k-part keeps a k-step and the grid stays within 4 CTAs an SM (session 21,
    // LAB16_S21: 16 CTAs an SM, so that small CTAs reach cl8 on the K-heavy weights).
    const bool s21 = std::getenv("LAB16_S21") != nullptr;
    const long long grid_cap = s21 ? 16 : 4;
    // attr_max: the dynamic shared memory attribute set to the kernel's largest launch (CL = 8),
    // as the library sets it, instead of this launch's bytes (session 18's A/B).
    auto bop_impl = [&](auto rb_c, auto c_c, auto w_c, auto u_c, auto rs_c, auto nox_c, bool attr_max, int only_cl,
                        auto pf_c, auto sh_c, auto minb_c) {
      constexpr int RB = decltype(rb_c)::value, C = decltype(c_c)::value, W = decltype(w_c)::value,
                    U = decltype(u_c)::value, MINB = decltype(minb_c)::value;
      constexpr bool RS = decltype(rs_c)::value, NOX = decltype(nox_c)::value;
      constexpr bool PF = decltype(pf_c)::value, SH = decltype(sh_c)::value;
      auto* kernel = bop_kernel<RB, C, W, U, RS, NOX, PF, SH, MINB>;
      const std::vector<bf16*>& weights = SH ? p.wsh : p.w;
      const int rows = (RS ? W : 1) * RB * 8, kparts = RS ? 1 : W;
      const std::string label = std::string(RS ? "br" : "bt") + " r" + std::to_string(rows) + " c" + std::to_string(C) + " w" +
                                std::to_string(W) + " u" + std::to_string(U) + (NOX ? " nox" : "") + (PF ? " pf" : "") +
                                (SH ? " sh" : "") + (MINB != 2 ? " lb" + std::to_string(MINB) : "");
      const int tiles = (n + rows - 1) / rows;
      const int steps = k / (32 * C);
      for (int cl = 1; cl <= 8; cl *= 2) {
        if (steps < cl * kparts) break;
        if (cl > 1 && static_cast<long long>(tiles) * cl > grid_cap * sms) break;
        if (only_cl != 0 && cl != only_cl) continue;
        const int smem = bop_smem_bytes<RB, W, RS>(cl);
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                attr_max ? bop_smem_bytes<RB, W, RS>(8) : std::max(smem, 1)));
        auto launch = [&](int i, cudaStream_t s) {
          launch_cluster(kernel, tiles, cl, 32 * W, smem, s, static_cast<const bf16*>(p.x[i]), static_cast<const bf16*>(weights[i]),
                         p.out[i], n, k);
        };
        report(label + " cl" + std::to_string(cl) + (attr_max ? " amax" : ""), lab::time_launches(p.sets, launch),
               NOX ? -1.0 : check(p, launch));
      }
    };
    auto bop = [&](auto rb_c, auto c_c, auto w_c, auto u_c, auto rs_c, auto nox_c, bool attr_max = false,
                   int only_cl = 0) {
      bop_impl(rb_c, c_c, w_c, u_c, rs_c, nox_c, attr_max, only_cl, std::false_type{}, std::false_type{},
               std::integral_constant<int, 2>{});
    };
    auto bop_pf = [&](auto rb_c, auto c_c, auto w_c, auto u_c) {
      bop_impl(rb_c, c_c, w_c, u_c, std::false_type{}, std::false_type{}, false, 0, std::true_type{}, std::false_type{},
               std::integral_constant<int, 2>{});
    };
    auto bop_sh = [&](auto rb_c, auto c_c, auto w_c, auto u_c) {
      bop_impl(rb_c, c_c, w_c, u_c, std::false_type{}, std::false_type{}, false, 0, std::false_type{}, std::true_type{},
               std::integral_constant<int, 2>{});
    };
    // Session 23: bt with other launch bounds (MINB CTAs an SM), full and nox, one cluster size.
    auto bop_lb = [&](auto rb_c, auto c_c, auto w_c, auto u_c, auto nox_c, auto minb_c) {
      bop_impl(rb_c, c_c, w_c, u_c, std::false_type{}, nox_c, false, 1, std::false_type{}, std::false_type{}, minb_c);
    };
    using std::integral_constant;
    using I1 = integral_constant<int, 1>;
    using I2 = integral_constant<int, 2>;
    using I4 = integral_constant<int, 4>;
    using I8 = integral_constant<int, 8>;
    using I16 = integral_constant<int, 16>;
    using I3 = integral_constant<int, 3>;
    using I6 = integral_constant<int, 6>;
    using T = std::true_type;
    using F = std::false_type;
    using std::tuple;
    // A/B against bt: each tile (a tuple of RB, C, W, U) as bt, then as `variant`, the whole list
    // twice, interleaved.
    auto beside_bt = [&](auto variant, auto... tiles) {
      for (int rep = 0; rep < 2; ++rep)
        (std::apply([&](auto... a) { bop(a..., F{}, F{}); variant(a...); }, tiles), ...);
    };
    // bt: warps split k (a CTA is RB * 8 rows)
    if (!s18) {
    bop(I1{}, I1{}, I8{}, I4{}, F{}, F{});
    bop(I1{}, I1{}, I8{}, I8{}, F{}, F{});
    bop(I1{}, I1{}, I4{}, I4{}, F{}, F{});
    bop(I1{}, I2{}, I8{}, I2{}, F{}, F{});
    bop(I2{}, I1{}, I8{}, I4{}, F{}, F{});
    bop(I2{}, I1{}, I4{}, I4{}, F{}, F{});
    // session 17, not yet run: 4 chunks a lane (256 contiguous bytes of a row per quad and k-step)
    bop(I1{}, I4{}, I8{}, I1{}, F{}, F{});
    bop(I1{}, I4{}, I8{}, I2{}, F{}, F{});
    bop(I1{}, I4{}, I4{}, I2{}, F{}, F{});
    // br: warps split rows (a CTA is W * RB * 8 rows, every warp the CTA's whole k-range)
    bop(I1{}, I1{}, I8{}, I4{}, T{}, F{});
    bop(I1{}, I1{}, I8{}, I8{}, T{}, F{});
    bop(I1{}, I1{}, I4{}, I4{}, T{}, F{});
    bop(I1{}, I2{}, I8{}, I2{}, T{}, F{});
    bop(I2{}, I1{}, I8{}, I4{}, T{}, F{});
    bop(I2{}, I1{}, I4{}, I4{}, T{}, F{});
    bop(I4{}, I1{}, I4{}, I2{}, T{}, F{});
    // ablations: no x
    bop(I1{}, I1{}, I8{}, I4{}, F{}, T{});
    bop(I1{}, I1{}, I8{}, I4{}, T{}, T{});
    }  // !s18

    // Session 17: the library's version 7 (kernels/sm90/sm90_gemm_skinny_bop.cuh, the bt layout with
    // M/N/K guards, bias and output-type switches), launched as the backend launches it, next to
    // the lab's bt of the same tile: does the library's kernel keep the lab's time?
    // attr_exact: the attribute set to this launch's bytes (as bt sets it) instead of the library's
    // Shape::kMaxSmemBytes (session 18's A/B).
    auto libv7 = [&](auto rb_c, auto c_c, auto w_c, auto u_c, bool attr_exact = false, int only_cl = 0) {
      constexpr int RB = decltype(rb_c)::value, C = decltype(c_c)::value, W = decltype(w_c)::value,
                    U = decltype(u_c)::value;
      using Shape = tgemm::kernels::SkinnyBopShape<RB, C, W, U>;
      auto* kernel = tgemm::kernels::sm90_gemm_skinny_bop<bf16, RB, C, W, U>;
      const int tiles = (n + Shape::kRows - 1) / Shape::kRows;
      const int steps = (k + Shape::kKStep - 1) / Shape::kKStep;
      for (int cl = 1; cl <= 8; cl *= 2) {
        if (steps < cl * W) break;
        if (cl > 1 && static_cast<long long>(tiles) * cl > 4LL * sms) break;
        if (only_cl != 0 && cl != only_cl) continue;
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                attr_exact ? std::max(Shape::smem_bytes(cl), 1) : Shape::kMaxSmemBytes));
        auto launch = [&](int i, cudaStream_t s) {
          launch_cluster(kernel, tiles, cl, Shape::kThreads, Shape::smem_bytes(cl), s, lab::skinny_params(p.x[i], p.w[i], p.out[i], kM, n, k));
        };
        report("lib v7 r" + std::to_string(Shape::kRows) + " c" + std::to_string(C) + " w" + std::to_string(W) + " u" +
                   std::to_string(U) + " cl" + std::to_string(cl) + (attr_exact ? " aexact" : ""),
               lab::time_launches(p.sets, launch), check(p, launch));
      }
    };
    // Session 21, second call (LAB16_S21B): bt2's accumulator sets and batch pipelining against bt,
    // on the best tiles of the first call, interleaved twice.
    // bt2 over CL = 1, 2, 4, 8 split-K CTAs, summed as SPLIT says (a cluster: labels "cl<CL>";
    // no sum: "nocl s<CL>"; a workspace: "ws s<CL>").
    // LAB16_S23 lifts the grid cap of the split so that the big weights' 900-3600 tiles also split.
    const long long bt2_grid_cap = std::getenv("LAB16_S23") != nullptr ? 64 : 8;
    auto bt2_impl = [&](auto rb_c, auto c_c, auto w_c, auto u_c, auto nox_c, auto acc_c, auto pipe_c, auto split_c) {
      constexpr int RB = decltype(rb_c)::value, C = decltype(c_c)::value, W = decltype(w_c)::value,
                    U = decltype(u_c)::value, ACC = decltype(acc_c)::value, SPLIT = decltype(split_c)::value;
      constexpr bool NOX = decltype(nox_c)::value, PIPE = decltype(pipe_c)::value;
      auto* kernel = bt2_kernel<RB, C, W, U, NOX, ACC, PIPE, SPLIT>;
      const int tiles = (n + RB * 8 - 1) / (RB * 8), steps = k / (32 * C);
      const std::string label = "bt2 r" + std::to_string(RB * 8) + " c" + std::to_string(C) + " w" + std::to_string(W) + " u" +
                                std::to_string(U) + " a" + std::to_string(ACC) + (PIPE ? " pipe" : "") + (NOX ? " nox" : "") +
                                (SPLIT == kBt2Cluster ? " cl" : SPLIT == kBt2NoSum ? " nocl s" : " ws s");
      for (int cl = 1; cl <= 8; cl *= 2) {
        if (steps < cl * W) break;
        if (cl > 1 && static_cast<long long>(tiles) * cl > bt2_grid_cap * sms) break;
        const int smem = bop_smem_bytes<RB, W, false>(SPLIT == kBt2Cluster ? cl : 1);
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(smem, 1)));
        auto launch = [&](int i, cudaStream_t s) {
          // A cluster only for kBt2Cluster: the others launch the same (tiles, CL) grid plainly.
          launch_grid(kernel, tiles, cl, SPLIT == kBt2Cluster, 32 * W, smem, s, static_cast<const bf16*>(p.x[i]),
                      static_cast<const bf16*>(p.w[i]), p.out[i], reinterpret_cast<float4*>(p.ws), p.counters, n, k);
        };
        report(label + std::to_string(cl), lab::time_launches(p.sets, launch), NOX ? -1.0 : check(p, launch));
      }
    };
    // Session 21, second call (LAB16_S21B): bt2's accumulator sets and batch pipelining against bt,
    // on the best tiles of the first call, interleaved twice.
    auto bt2 = [&](auto rb_c, auto c_c, auto w_c, auto u_c, auto nox_c, auto acc_c, auto pipe_c) {
      bt2_impl(rb_c, c_c, w_c, u_c, nox_c, acc_c, pipe_c, std::integral_constant<int, kBt2Cluster>{});
    };
    // LAB16_S21C: the cluster's price, bt2 nox on the same grid with no sum across CTAs; LAB16_S21D:
    // the split summed through a workspace (checked unless nox). ACC = 2, no pipelining.
    auto bt2nocl = [&](auto rb_c, auto c_c, auto w_c, auto u_c, auto wsk_c, auto nox_c) {
      constexpr int SPLIT = decltype(wsk_c)::value ? kBt2Workspace : kBt2NoSum;
      bt2_impl(rb_c, c_c, w_c, u_c, nox_c, std::integral_constant<int, 2>{}, std::false_type{},
               std::integral_constant<int, SPLIT>{});
    };
    // Session 23: stream-K bt (sk_kernel) on exactly cps x SMs persistent CTAs.
    auto sk = [&](auto c_c, auto w_c, auto u_c, auto nox_c, auto minb_c, int cps) {
      constexpr int C = decltype(c_c)::value, W = decltype(w_c)::value, U = decltype(u_c)::value,
                    MINB = decltype(minb_c)::value;
      constexpr bool NOX = decltype(nox_c)::value;
      if (n % 8 != 0 || k % (32 * C) != 0) return;
      auto* kernel = sk_kernel<C, W, U, NOX, MINB>;
      // No more CTAs than units: then every CTA's share is non-empty, which the per-tile arrival
      // count (owner of the tile's last unit - owner of its first + 1) relies on.
      const int smem = W * 32 * 16;
      const int grid = static_cast<int>(std::min<long long>(static_cast<long long>(cps) * sms,
                                                            static_cast<long long>(n / 8) * (k / (32 * C))));
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      int fit = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, 32 * W, smem));
      auto launch = [&](int i, cudaStream_t st) {
        launch_grid(kernel, grid, 1, false, 32 * W, smem, st, static_cast<const bf16*>(p.x[i]),
                    static_cast<const bf16*>(p.w[i]), p.out[i], reinterpret_cast<float4*>(p.ws), p.counters, n, k);
      };
      report("sk r8 c" + std::to_string(C) + " w" + std::to_string(W) + " u" + std::to_string(U) + (NOX ? " nox" : "") +
                 " cps" + std::to_string(cps) + " fit" + std::to_string(fit),
             lab::time_launches(p.sets, launch), NOX ? -1.0 : check(p, launch));
    };
    // Session 25 (LAB16_TB): tb (bulk-copied per-warp rings, x once per R rows) beside bt's two
    // shipped M = 16 tiles, interleaved twice; every cluster size whose grid and shared memory fit.
    auto tb = [&](auto rb_c, auto w_c, auto ks_c, auto s_c) {
      constexpr int RB = decltype(rb_c)::value, W = decltype(w_c)::value, KS = decltype(ks_c)::value,
                    S = decltype(s_c)::value;
      auto* kernel = tb_kernel<RB, W, KS, S>;
      const int tiles = (n + RB * 8 - 1) / (RB * 8);
      for (int cl = 1; cl <= 8; cl *= 2) {
        if (k % (cl * W * KS) != 0 || k % 8 != 0) continue;
        if (cl > 1 && static_cast<long long>(tiles) * cl > 4LL * sms) break;
        const int smem = tb_smem_bytes<RB, W, KS, S>(cl);
        if (smem > 227 * 1024) continue;
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        auto launch = [&](int i, cudaStream_t st) {
          launch_cluster(kernel, tiles, cl, 32 * W, smem, st, static_cast<const bf16*>(p.x[i]),
                         static_cast<const bf16*>(p.w[i]), p.out[i], n, k);
        };
        report("tb r" + std::to_string(RB * 8) + " w" + std::to_string(W) + " ks" + std::to_string(KS) + " s" +
                   std::to_string(S) + " cl" + std::to_string(cl) + " " + std::to_string(smem / 1024) + "K",
               lab::time_launches(p.sets, launch), check(p, launch));
      }
    };
    if (std::getenv("LAB16_TB") != nullptr) {
      using I64 = std::integral_constant<int, 64>;
      using I128 = std::integral_constant<int, 128>;
      using I256 = std::integral_constant<int, 256>;
      for (int rep = 0; rep < 2; ++rep) {
        bop(I1{}, I2{}, I8{}, I2{}, F{}, F{});
        bop(I2{}, I1{}, I4{}, I4{}, F{}, F{});
        tb(I4{}, I4{}, I128{}, I3{});
        tb(I2{}, I4{}, I256{}, I3{});
        tb(I4{}, I2{}, I256{}, I4{});
        tb(I8{}, I4{}, I64{}, I4{});
        tb(I2{}, I8{}, I128{}, I2{});
        tb(I1{}, I8{}, I128{}, I3{});
      }
    } else
    if (std::getenv("LAB16_S23") != nullptr) {
      // Session 23 (docs/perf-notes.md, skinny, "Session 23", predictions 1-2): bt r8 c2 w8 u2 and
      // r16 c1 w4 u4 (the big weights' best tiles) with the shipped launch bounds and with ones
      // that cap the registers at 64 (8 warps, 4 CTAs an SM) / 128 -> 64 (4 warps, 8 CTAs an SM),
      // full and nox, interleaved twice. Run it on 7168x8192 beside 6336x8192 (792 tiles of 8
      // rows: a whole number of waves at 3 CTAs an SM) to see the tail.
      using I2c = std::integral_constant<int, 2>;
      using I4c = std::integral_constant<int, 4>;
      using I8c = std::integral_constant<int, 8>;
      for (int rep = 0; rep < 2; ++rep) {
        bop_lb(I1{}, I2{}, I8{}, I2{}, F{}, I2c{});
        bop_lb(I1{}, I2{}, I8{}, I2{}, F{}, I4c{});
        bop_lb(I1{}, I2{}, I8{}, I2{}, T{}, I2c{});
        bop_lb(I1{}, I2{}, I8{}, I2{}, T{}, I4c{});
        bop_lb(I2{}, I1{}, I4{}, I4{}, F{}, I2c{});
        bop_lb(I2{}, I1{}, I4{}, I4{}, F{}, I8c{});
        // The tail another way: split-K over 1, 2, 4, 8 CTAs summed through a workspace (bt2,
        // LAB16_S21D's path, checked), i.e. 2.26 -> 4.5 -> 9 -> 18 waves on 7168x8192 at 3 CTAs
        // an SM, for the price of the sum.
        bt2nocl(I1{}, I2{}, I8{}, I2{}, T{}, F{});
        // Stream-K (prediction 3): CTAs an SM as the launch bounds allow, each an equal share.
        sk(I2{}, I8{}, I2{}, F{}, I3{}, 3);
        sk(I2{}, I8{}, I2{}, F{}, I4c{}, 4);
        sk(I2{}, I8{}, I2{}, T{}, I4c{}, 4);
        sk(I1{}, I4{}, I4{}, F{}, I6{}, 6);
      }
    } else if (std::getenv("LAB16_S21D") != nullptr) {
      // bt2 on its cluster, with the workspace split (checked), and the stream alone with and
      // without the workspace sum, the three tiles, interleaved twice.
      for (int rep = 0; rep < 2; ++rep) {
        bt2(I2{}, I1{}, I4{}, I4{}, F{}, I2{}, F{});
        bt2nocl(I2{}, I1{}, I4{}, I4{}, T{}, F{});
        bt2nocl(I2{}, I1{}, I4{}, I4{}, T{}, T{});
        bt2(I1{}, I2{}, I8{}, I2{}, F{}, I2{}, F{});
        bt2nocl(I1{}, I2{}, I8{}, I2{}, T{}, F{});
        bt2nocl(I1{}, I2{}, I8{}, I2{}, T{}, T{});
        bt2(I1{}, I2{}, I4{}, I2{}, F{}, I2{}, F{});
        bt2nocl(I1{}, I2{}, I4{}, I2{}, T{}, F{});
        bt2nocl(I1{}, I2{}, I4{}, I2{}, T{}, T{});
      }
    } else if (std::getenv("LAB16_S21C") != nullptr) {
      for (int rep = 0; rep < 2; ++rep) {
        bt2(I2{}, I1{}, I4{}, I4{}, T{}, I2{}, F{});
        bt2nocl(I2{}, I1{}, I4{}, I4{}, F{}, T{});
        bt2(I1{}, I2{}, I8{}, I2{}, T{}, I2{}, F{});
        bt2nocl(I1{}, I2{}, I8{}, I2{}, F{}, T{});
        bt2(I1{}, I2{}, I4{}, I2{}, T{}, I2{}, F{});
        bt2nocl(I1{}, I2{}, I4{}, I2{}, F{}, T{});
      }
    } else if (std::getenv("LAB16_S21B") != nullptr) {
      for (int rep = 0; rep < 2; ++rep) {
        bop(I1{}, I2{}, I4{}, I2{}, F{}, F{});
        bt2(I1{}, I2{}, I4{}, I2{}, F{}, I1{}, F{});
        bt2(I1{}, I2{}, I4{}, I2{}, F{}, I2{}, F{});
        bt2(I1{}, I2{}, I4{}, I2{}, F{}, I4{}, F{});
        bt2(I1{}, I2{}, I4{}, I2{}, F{}, I1{}, T{});
        bt2(I1{}, I2{}, I4{}, I2{}, F{}, I4{}, T{});
        bt2(I1{}, I2{}, I4{}, I2{}, T{}, I4{}, F{});
        bt2(I1{}, I2{}, I4{}, I2{}, T{}, I4{}, T{});
        bop(I2{}, I1{}, I4{}, I4{}, F{}, F{});
        bt2(I2{}, I1{}, I4{}, I4{}, F{}, I2{}, F{});
        bt2(I2{}, I1{}, I4{}, I4{}, F{}, I4{}, F{});
        bt2(I2{}, I1{}, I4{}, I2{}, F{}, I2{}, T{});
        bop(I1{}, I2{}, I8{}, I2{}, F{}, F{});
        bt2(I1{}, I2{}, I8{}, I2{}, F{}, I4{}, F{});
        bt2(I1{}, I2{}, I8{}, I2{}, F{}, I4{}, T{});
        bt2(I1{}, I1{}, I4{}, I4{}, F{}, I4{}, F{});
        bt2(I1{}, I1{}, I4{}, I4{}, F{}, I4{}, T{});
        bt2(I1{}, I2{}, I2{}, I2{}, F{}, I4{}, F{});
        bt2(I1{}, I2{}, I2{}, I2{}, F{}, I4{}, T{});
      }
    } else if (s21) {
      // Session 21: is bt's stream limited by the work a warp does in series (k-steps per warp /
      // U batches, each a DRAM round trip) and by how evenly the grid spreads over the SMs, rather
      // than by bandwidth? Session 20's nox rows (no x at all) were 1.17-1.22x of the floor on
      // 1280x8192 and 1536x7168 at 1280-2560 warps, where the M = 1 GEMV runs 5120 warps of two
      // batches each. Here: CTAs of 2 warps (up to 1280 CTAs at cl8, every warp one or two
      // batches), 16 warps, U = 8, C = 4, with the grid cap lifted (16 CTAs an SM); the shipped
      // tiles as references; the stream alone (nox) of three of them.
      bop(I1{}, I2{}, I8{}, I2{}, F{}, F{});
      bop(I2{}, I1{}, I4{}, I4{}, F{}, F{});
      bop(I1{}, I1{}, I8{}, I4{}, F{}, F{});
      bop(I1{}, I1{}, I2{}, I4{}, F{}, F{});
      bop(I1{}, I2{}, I2{}, I2{}, F{}, F{});
      bop(I1{}, I1{}, I2{}, I8{}, F{}, F{});
      bop(I2{}, I1{}, I2{}, I4{}, F{}, F{});
      bop(I1{}, I4{}, I2{}, I1{}, F{}, F{});
      bop(I1{}, I1{}, I4{}, I4{}, F{}, F{});
      bop(I1{}, I1{}, I4{}, I8{}, F{}, F{});
      bop(I1{}, I2{}, I4{}, I2{}, F{}, F{});
      bop(I1{}, I4{}, I4{}, I1{}, F{}, F{});
      bop(I1{}, I1{}, I16{}, I2{}, F{}, F{});
      bop(I1{}, I2{}, I16{}, I1{}, F{}, F{});
      bop(I1{}, I1{}, I2{}, I4{}, F{}, T{});
      bop(I1{}, I2{}, I4{}, I2{}, F{}, T{});
      bop(I1{}, I1{}, I4{}, I8{}, F{}, T{});
      bop(I1{}, I2{}, I8{}, I2{}, F{}, T{});
    } else if (!p.wsh.empty()) {
      // Session 19, written for session 20 (compiled, not run): bt on the pre-tiled weight ("sh")
      // beside bt on the row-major weight, the shipped and best lab tiles. Predicted 0-5%, at
      // most the layout study's rows / linear (docs/perf-notes.md, skinny, "Session 19").
      beside_bt(bop_sh, tuple<I1, I2, I8, I2>{}, tuple<I2, I1, I4, I4>{}, tuple<I1, I1, I8, I4>{},
                tuple<I4, I1, I4, I2>{});
      bop_sh(I1{}, I2{}, I4{}, I4{});
      bop_sh(I2{}, I2{}, I4{}, I2{});
      // The stream alone (x a register constant, not checked) in both layouts: what the layout
      // does to the weight read itself, apart from x and the sums.
      bop(I1{}, I2{}, I8{}, I2{}, F{}, T{});
      bop_impl(I1{}, I2{}, I8{}, I2{}, F{}, T{}, false, 0, F{}, T{}, integral_constant<int, 2>{});
      bop(I2{}, I1{}, I4{}, I4{}, F{}, T{});
      bop_impl(I2{}, I1{}, I4{}, I4{}, F{}, T{}, false, 0, F{}, T{}, integral_constant<int, 2>{});
    } else if (std::getenv("LAB16_RING") != nullptr) {
      // Session 19 (written in session 18, not yet run): the ring kernel beside bt's best tiles,
      // every split that fits (shared memory <= 227 KB a CTA, <= 4 CTAs an SM in the grid).
      auto ringk = [&](auto rb_c, auto c_c, auto w_c, auto u_c, auto s_c, auto xr_c) {
        constexpr int RB = decltype(rb_c)::value, C = decltype(c_c)::value, W = decltype(w_c)::value,
                      U = decltype(u_c)::value, S = decltype(s_c)::value;
        constexpr bool XR = decltype(xr_c)::value;
        auto* kernel = ring_kernel<RB, C, W, U, S, XR>;
        const int tiles = (n + RB * 8 - 1) / (RB * 8), steps = k / (32 * C);
        for (int cl = 1; cl <= 8; cl *= 2) {
          if (steps < cl * W) break;
          if (cl > 1 && static_cast<long long>(tiles) * cl > 4LL * sms) break;
          const int smem = ring_smem_bytes<RB, C, W, U, S, XR>(cl);
          if (smem > 227 * 1024) break;
          CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
          auto launch = [&](int i, cudaStream_t s) {
            launch_cluster(kernel, tiles, cl, 32 * W, smem, s, static_cast<const bf16*>(p.x[i]),
                           static_cast<const bf16*>(p.w[i]), p.out[i], n, k);
          };
          report(std::string(XR ? "ringxr" : "ring") + " r" + std::to_string(RB * 8) + " c" + std::to_string(C) + " w" +
                     std::to_string(W) + " u" + std::to_string(U) + " s" + std::to_string(S) + " cl" + std::to_string(cl),
                 lab::time_launches(p.sets, launch), check(p, launch));
        }
      };
      bop(I1{}, I2{}, I8{}, I2{}, F{}, F{});
      bop(I2{}, I1{}, I4{}, I4{}, F{}, F{});
      if (std::getenv("LAB16_RING2") != nullptr) {
        // Session 19, second round: session 19's first run had the 32-row ring (r32 u2 s4) best of
        // the ring tiles everywhere and ahead of bt on 576x7168 only (5.63 vs 5.85 us); around it:
        // stages, unroll, warps, 64-row warps, two chunks a k-step.
        ringk(I4{}, I1{}, I4{}, I2{}, I4{}, F{});
        ringk(I4{}, I1{}, I4{}, I2{}, I3{}, F{});
        ringk(I4{}, I1{}, I4{}, I1{}, I6{}, F{});
        ringk(I4{}, I1{}, I8{}, I1{}, I4{}, F{});
        ringk(I4{}, I1{}, I2{}, I2{}, I4{}, F{});
        ringk(I4{}, I2{}, I4{}, I1{}, I4{}, F{});
        ringk(I8{}, I1{}, I4{}, I1{}, I4{}, F{});
        ringk(I8{}, I1{}, I4{}, I2{}, I3{}, F{});
        ringk(I8{}, I1{}, I2{}, I2{}, I4{}, F{});
      } else
      for (auto xr : {false, true}) {
        auto run = [&](auto xr_c) {
          ringk(I1{}, I1{}, I4{}, I2{}, I4{}, xr_c);
          ringk(I1{}, I1{}, I8{}, I2{}, I4{}, xr_c);
          ringk(I2{}, I1{}, I4{}, I2{}, I4{}, xr_c);
          ringk(I2{}, I1{}, I4{}, I1{}, I8{}, xr_c);
          ringk(I1{}, I2{}, I4{}, I1{}, I8{}, xr_c);
          ringk(I2{}, I1{}, I8{}, I2{}, I3{}, xr_c);
          ringk(I4{}, I1{}, I4{}, I1{}, I8{}, xr_c);
          ringk(I4{}, I1{}, I4{}, I2{}, I4{}, xr_c);
        };
        if (xr) run(T{});
        else run(F{});
      }
    } else if (s18 && std::getenv("LAB16_PF") != nullptr) {
      // Session 18, third question: bt with the warp's whole weight range prefetched into L2 by
      // one bulk prefetch a row ("pf") beside plain bt, interleaved, every split.
      beside_bt(bop_pf, tuple<I1, I2, I8, I2>{}, tuple<I2, I1, I4, I4>{}, tuple<I1, I1, I4, I4>{},
                tuple<I1, I1, I8, I4>{});
    } else if (s18 && std::getenv("LAB16_RB") != nullptr) {
      // Session 18, second question: wider CTAs (RB = 3, 4: 24-32 rows) read x once per 24-32
      // weight rows instead of 8-16, halving x's L2 traffic (x / weight bytes = 2 / RB); does
      // that buy more than the fewer CTAs cost?
      bop(I2{}, I1{}, I4{}, I4{}, F{}, F{});
      bop(I2{}, I1{}, I8{}, I4{}, F{}, F{});
      bop(I3{}, I1{}, I4{}, I4{}, F{}, F{});
      bop(I3{}, I1{}, I4{}, I2{}, F{}, F{});
      bop(I4{}, I1{}, I4{}, I4{}, F{}, F{});
      bop(I4{}, I1{}, I4{}, I2{}, F{}, F{});
      bop(I4{}, I1{}, I8{}, I2{}, F{}, F{});
      bop(I4{}, I1{}, I2{}, I4{}, F{}, F{});
      bop(I4{}, I1{}, I4{}, I4{}, F{}, T{});
      bop(I2{}, I1{}, I4{}, I4{}, F{}, T{});
    } else if (s18) {
      // Session 18: where do the library's 0.3-0.5 us go? The two shipped tiles at their best
      // split, bt and lib v7 each under both attribute settings, the four interleaved, three times.
      const int cl_a = k >= 7168 && n <= 576 ? 4 : 2;  // r8 c2 w8 u2: 576x7168 ships cl4, 1536x7168 cl2
      const int cl_b = n == 4096 ? 2 : 4;               // r16 c1 w4 u4: 1280x8192 ships cl4, 4096x4096 cl2
      for (int rep = 0; rep < 3; ++rep) {
        bop(I1{}, I2{}, I8{}, I2{}, F{}, F{}, false, cl_a);
        bop(I1{}, I2{}, I8{}, I2{}, F{}, F{}, true, cl_a);
        libv7(I1{}, I2{}, I8{}, I2{}, true, cl_a);
        libv7(I1{}, I2{}, I8{}, I2{}, false, cl_a);
        bop(I2{}, I1{}, I4{}, I4{}, F{}, F{}, false, cl_b);
        bop(I2{}, I1{}, I4{}, I4{}, F{}, F{}, true, cl_b);
        libv7(I2{}, I1{}, I4{}, I4{}, true, cl_b);
        libv7(I2{}, I1{}, I4{}, I4{}, false, cl_b);
      }
      // The copy with bt's loop and/or bt's epilogue, interleaved, twice.
      auto lib7x = [&](auto rb_c, auto c_c, auto w_c, auto u_c, auto loop_c, auto epi_c, int cl) {
        constexpr int RB = decltype(rb_c)::value, C = decltype(c_c)::value, W = decltype(w_c)::value,
                      U = decltype(u_c)::value;
        constexpr bool LOOP = decltype(loop_c)::value, EPI = decltype(epi_c)::value;
        using Shape = tgemm::kernels::SkinnyBopShape<RB, C, W, U>;
        auto* kernel = lib7x_kernel<RB, C, W, U, LOOP, EPI>;
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kMaxSmemBytes));
        const int tiles = (n + Shape::kRows - 1) / Shape::kRows;
        auto launch = [&](int i, cudaStream_t s) {
          launch_cluster(kernel, tiles, cl, Shape::kThreads, Shape::smem_bytes(cl), s, lab::skinny_params(p.x[i], p.w[i], p.out[i], kM, n, k));
        };
        report("lib7x r" + std::to_string(Shape::kRows) + " c" + std::to_string(C) + " w" + std::to_string(W) + " u" +
                   std::to_string(U) + " cl" + std::to_string(cl) + (LOOP ? " loop=lab" : " loop=lib") + (EPI ? " epi=lab" : " epi=lib"),
               lab::time_launches(p.sets, launch), check(p, launch));
      };
      for (int rep = 0; rep < 2; ++rep) {
        lib7x(I1{}, I2{}, I8{}, I2{}, F{}, F{}, cl_a);
        lib7x(I1{}, I2{}, I8{}, I2{}, T{}, F{}, cl_a);
        lib7x(I1{}, I2{}, I8{}, I2{}, F{}, T{}, cl_a);
        lib7x(I1{}, I2{}, I8{}, I2{}, T{}, T{}, cl_a);
        lib7x(I2{}, I1{}, I4{}, I4{}, F{}, F{}, cl_b);
        lib7x(I2{}, I1{}, I4{}, I4{}, T{}, F{}, cl_b);
        lib7x(I2{}, I1{}, I4{}, I4{}, F{}, T{}, cl_b);
        lib7x(I2{}, I1{}, I4{}, I4{}, T{}, T{}, cl_b);
      }
    } else {
    libv7(I1{}, I1{}, I8{}, I4{});
    libv7(I1{}, I2{}, I8{}, I2{});
    libv7(I1{}, I1{}, I4{}, I4{});
    libv7(I2{}, I1{}, I4{}, I4{});
    libv7(I2{}, I1{}, I8{}, I4{});
    }  // s18

    // Version 1, m16_n16_wn1_wk4_u4_sk4: grid (ceil(N / 16), 4), cluster (1, 4, 1).
    {
      using Shape = tgemm::kernels::SkinnyShape<16, 16, 1, 4, 4, 0>;
      auto* kernel = tgemm::kernels::sm90_gemm_skinny<bf16, 16, 16, 1, 4, 4, 0>;
      constexpr int split_k = 4;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kMaxSmemBytes));
      auto launch = [&](int i, cudaStream_t s) {
        launch_cluster(kernel, (n + Shape::kBlockN - 1) / Shape::kBlockN, split_k, Shape::kThreads, Shape::smem_bytes(split_k), s,
                       lab::skinny_params(p.x[i], p.w[i], p.out[i], kM, n, k));
      };
      const double t = lab::time_launches(p.sets, launch);
      report("lib v1 m16_n16_wn1_wk4_u4_sk4", t, check(p, launch));
    }

    // The counters must be back at zero after every launch.
    std::vector<unsigned> cnt(n / 8 + 1);
    CK(cudaMemcpy(cnt.data(), p.counters, cnt.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (unsigned c : cnt) failures += c != 0;

    for (int i = 0; i < p.sets; ++i) {
      CK(cudaFree(p.w[i]));
      CK(cudaFree(p.out[i]));
    }
    CK(cudaFree(p.ref));
    CK(cudaFree(p.ws));
    CK(cudaFree(p.counters));
    CK(cudaFree(p.sink));
  }
  std::printf("%s\n", failures ? "FAILURES (see ! above)" : "all variants match the fp32 reference");
  return failures ? 1 : 0;
}
