// Full-share staging lab (session 36): version 7's structure with each CTA's whole weight share
// in flight at once, in shared memory instead of registers.
//
// Why: the M = 16 K-heavy small-N weights stay at 1.32-1.56x of the read floor on an H200
// (docs/perf-notes.md, skinny, "Session 35"). Version 7 holds its loads in registers, so a warp
// streams its k-range in serial round trips (16x576x7168 on the shipped n16 wk4 u4 split-8 tile:
// 7 k-steps a warp, two trips), and cluster_lab measured what a trip costs at this size: one
// synthetic batch a thread on 288 CTAs reads 8.26 MB in 3.58 us, two serial batches on 144 CTAs
// 4.05, four on 72 5.55. More warps or a deeper unroll to make it one trip spill over one wave
// (n16 wk8 u4 sk8 holds 2 CTAs an SM by registers: 7.07 us in session 34's tune). The rings of
// sessions 19 and 26 bounded the bytes in flight by their slots; here nothing is bounded: every
// CTA asks for its whole share (8 RB rows x K / split) at its start, into shared memory, then
// computes from shared memory with x through L1 as version 7 does (x's L1 reuse across an SM's
// CTAs kept; session 35 lost it by staging x). The epilogue is version 7's (the CTA's warps
// summed in shared memory, the ranks' sums pushed into rank 0 with st.async).
//
// Modes, how the share reaches shared memory (warp w computes the w-th of W equal k-parts of the
// CTA's range, its "piece"):
//   0 bulk/warp  lane r of warp w copies row r of piece w: one 1-D bulk copy (cp.async.bulk),
//                completing on warp w's mbarrier; the warp waits on its own barrier;
//   1 cp.async   warp w copies its piece with 16-byte cp.async (L1 bypassed), waits for its own
//                copies (cp.async.wait_group) and computes;
//   2 bulk/row   warp 0's lane r copies row r's whole k-range with one bulk copy onto one CTA
//                barrier; every warp waits on it.
// Rows sit `pitch` bytes apart in shared memory, pitch = 64 (mod 128), so a quarter warp's 16-byte
// reads (rows g, g + 1 at one k) fall in the two halves of the banks. Lane (g, t) reads 16 bytes of
// row g at k = step + 8 t and the same chunk of tokens g, g + 8 of x: version 7's layout (the
// k-permutation inside a chunk as in chunk_mmas), so the MMAs are version 7's.
// Lab-only preconditions (checked on the host, the variant skipped otherwise): N % (8 RB) == 0,
// K % (split x W x 32) == 0, one wave (the grid fits the resident CTAs), split <= 8.
//
// Every variant is checked against the fp32 reference (output NaN-poisoned first) and timed by
// CUDA-graph replay of 20 launches over rotation sets past L2 three times (lab_common.cuh, as
// `tgemm bench` times), beside the bench's floor kernel and the shipped version-7 tile, in one
// process, every variant twice, interleaved.
//
// Build (from the repository root): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a
//        -I. -Isrc -Iinclude -o scratch/lab/fullshare_lab bench/micro/fullshare_lab.cu
//        src/runtime/timing.cu src/runtime/cuda_check.cpp
// Run:   ./fullshare_lab [N K ...]             (run 1: the three modes, x one batch ahead)
//        FS_RUN2=1 ./fullshare_lab [N K ...]   (run 2: all of a warp's x loaded before the wait)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/micro/lab_common.cuh"
#include "kernels/sm90/sm90_gemm_skinny_bop.cuh"
#include "kernels/sm90/sm90_gemv_bulk.cuh"

namespace {

using lab::bf16;
namespace sd = tgemm::kernels::skinny_detail;
namespace kd = tgemm::kernels::skinny_bop_detail;
constexpr int kM = 16;

enum Mode : int { kBulkWarp = 0, kCpAsync = 1, kBulkRow = 2 };
const char* const kModeNames[] = {"bulk/warp", "cp.async", "bulk/row"};

// Bytes between two rows of the staged share: at least the row's, 64 (mod 128).
__host__ __device__ constexpr int share_pitch(int kr) { return kr * 2 <= 64 ? 64 : ((kr * 2 - 64 + 127) / 128) * 128 + 64; }

// Dynamic shared memory: the share, the W warp parts, split rank slots (split > 1), then
// mbarriers (W + 1 + 1: the pieces', the whole share's, the push's).
template <int RB, int W>
__host__ __device__ constexpr int fs_smem_bytes(int kr, int split) {
  return 8 * RB * share_pitch(kr) + W * RB * 512 + (split > 1 ? split * RB * 512 : 0) + (W + 2) * 8;
}

// XA (run 2): all of the warp's x (at most kXaSteps k-steps) is loaded before the wait, so no x
// round trip follows the share's arrival; else x is loaded one batch of U steps ahead.
constexpr int kXaSteps = 8;
template <int RB, int W, int U, int MODE, bool XA = false>
__global__ void __launch_bounds__(32 * W) fs_kernel(const tgemm::kernels::SkinnyParams p) {
  constexpr int kRows = 8 * RB, kItems = RB * 32;
  extern __shared__ __align__(128) unsigned char fs_smem[];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  const int split = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const int row0 = static_cast<int>(blockIdx.x) * kRows;
  const int kr = p.k / split, kw = kr / W;  // the CTA's k-range, a warp's piece of it
  const int pitch = share_pitch(kr);
  const std::uint32_t share = sd::smem_addr(fs_smem);
  float4* const parts = reinterpret_cast<float4*>(fs_smem + kRows * pitch);
  float4* const slots = parts + W * kItems;
  const std::uint32_t bars = sd::smem_addr(slots + (split > 1 ? split * kItems : 0));
  const std::uint32_t piece_bar = bars + 8 * warp, row_bar = bars + 8 * W, push_bar = bars + 8 * (W + 1);
  const bf16* const w = static_cast<const bf16*>(p.w) + static_cast<std::int64_t>(row0) * p.ldb + rank * kr;

  // The share's copies, first of all. bulk_rows: lane 0 arms `bar` for every row's `len` elements
  // from column `col` of the CTA's range, then lane r copies row r's (one bulk copy a row).
  auto bulk_rows = [&](std::uint32_t bar, int col, int len) {
    if (lane == 0) {
      sd::mbar_init(bar, 1);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      sd::mbar_arrive_expect(bar, static_cast<std::uint32_t>(kRows * len * 2));
    }
    __syncwarp();
    for (int r = lane; r < kRows; r += 32)
      tgemm::kernels::gemv_bulk_detail::bulk_copy(share + r * pitch + col * 2, w + static_cast<std::int64_t>(r) * p.ldb + col,
                                                   static_cast<std::uint32_t>(len * 2), bar);
  };
  if constexpr (MODE == kBulkWarp) {
    bulk_rows(piece_bar, warp * kw, kw);
  } else if constexpr (MODE == kCpAsync) {
    const int per_row = kw / 8;  // 16-byte chunks of a row's piece
    for (int i = lane; i < kRows * per_row; i += 32) {
      const int r = i / per_row, c = i % per_row;
      sd::cp_async_16(share + r * pitch + (warp * kw + 8 * c) * 2, w + static_cast<std::int64_t>(r) * p.ldb + warp * kw + 8 * c, 16);
    }
    sd::cp_async_commit();
  } else {
    if (warp == 0) bulk_rows(row_bar, 0, kr);
    __syncthreads();  // row_bar initialised before any warp waits on it
  }
  // Rank 0's push barrier (version 7's): initialised before the cluster barrier's first phase.
  if (split > 1) {
    if (rank == 0 && threadIdx.x == 0) {
      sd::mbar_init(push_bar, 1);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      sd::mbar_arrive_expect(push_bar, static_cast<std::uint32_t>((split - 1) * kItems * 16));
    }
    sd::cluster_arrive_relaxed();
  }

  // x of tokens g and g + 8 (tokens past M read the last one's; their sums are never stored).
  const bf16* xp[2] = {static_cast<const bf16*>(p.x) + static_cast<std::int64_t>(min(g, p.m - 1)) * p.lda + rank * kr + warp * kw + 8 * t,
                       static_cast<const bf16*>(p.x) + static_cast<std::int64_t>(min(g + 8, p.m - 1)) * p.lda + rank * kr + warp * kw + 8 * t};
  const std::uint32_t wrow = share + g * pitch + (warp * kw + 8 * t) * 2;
  const int steps = kw / 32;
  float acc[2][RB][4];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int b = 0; b < RB; ++b) acc[h][b][0] = acc[h][b][1] = acc[h][b][2] = acc[h][b][3] = 0.0f;
  // x's first batch (XA: all of it) before the wait (it does not depend on the share).
  constexpr int XN = XA ? kXaSteps : U;
  uint4 xv[XN][2];
#pragma unroll
  for (int u = 0; u < XN; ++u)
#pragma unroll
    for (int j = 0; j < 2; ++j) xv[u][j] = u < steps ? sd::load_activation(xp[j] + u * 32) : make_uint4(0, 0, 0, 0);
  if constexpr (MODE == kBulkWarp) sd::mbar_wait(piece_bar, 0);
  else if constexpr (MODE == kCpAsync) {
    sd::cp_async_wait<0>();
    __syncwarp();
  } else sd::mbar_wait(row_bar, 0);

  if constexpr (XA) {
#pragma unroll
    for (int s = 0; s < kXaSteps; ++s) {
      if (s >= steps) break;
      uint4 wv[RB];
#pragma unroll
      for (int b = 0; b < RB; ++b) wv[b] = sd::lds128(wrow + 8 * b * pitch + s * 64);
#pragma unroll
      for (int b = 0; b < RB; ++b) kd::chunk_mmas<bf16>(wv[b], xv[s][0], xv[s][1], acc[0][b], acc[1][b]);
    }
  } else {
#pragma unroll 1
    for (int s = 0; s < steps; s += U) {
      uint4 wv[U][RB];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int b = 0; b < RB; ++b)
          wv[u][b] = s + u < steps ? sd::lds128(wrow + 8 * b * pitch + (s + u) * 64) : make_uint4(0, 0, 0, 0);
      uint4 xn[U][2];  // the next batch's x, in flight during this batch's MMAs
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < 2; ++j)
          xn[u][j] = s + U + u < steps ? sd::load_activation(xp[j] + (s + U + u) * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int b = 0; b < RB; ++b)
          if (s + u < steps) kd::chunk_mmas<bf16>(wv[u][b], xv[u][0], xv[u][1], acc[0][b], acc[1][b]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        xv[u][0] = xn[u][0];
        xv[u][1] = xn[u][1];
      }
    }
  }

  // Version 7's epilogue: the warps' fragments summed in warp order, the ranks' sums pushed into
  // rank 0 and added there in rank order; bf16 stores (the lab's problems: no bias, dense rows).
#pragma unroll
  for (int b = 0; b < RB; ++b)
    parts[(warp * RB + b) * 32 + lane] = make_float4(acc[0][b][0] + acc[1][b][0], acc[0][b][1] + acc[1][b][1],
                                                     acc[0][b][2] + acc[1][b][2], acc[0][b][3] + acc[1][b][3]);
  __syncthreads();
  const int i = sd::thread_index();
  if (i >= kItems) return;
  float4 v = parts[i];
  for (int q = 1; q < W; ++q) kd::add4(v, parts[q * kItems + i]);
  if (split > 1) {
    sd::cluster_wait_acquire();
    if (rank != 0) {
      sd::st_async_16(sd::map_cluster_rank(sd::smem_addr(slots + rank * kItems + i), 0), v, sd::map_cluster_rank(push_bar, 0));
      return;
    }
    sd::mbar_wait(push_bar, 0);
    for (int r = 1; r < split; ++r) kd::add4(v, slots[r * kItems + i]);
  }
  const int l = i % 32, n0 = row0 + 8 * (i / 32) + 2 * (l % 4), m0 = l / 4;
  kd::store_plain_pair<bf16>(p, m0, n0, v.x, v.y);
  kd::store_plain_pair<bf16>(p, m0 + 8, n0, v.z, v.w);
}

using Problem = lab::Timed;

// One full-share variant at one split; skipped (a line says why) where the lab's preconditions fail.
template <int RB, int W, int U, int MODE, bool XA = false>
void run_fs(const Problem& p, int split, double floor_us, const char* name, int& failures) {
  auto* kernel = fs_kernel<RB, W, U, MODE, XA>;
  const int ctas = p.n / (8 * RB);
  char label[96];
  std::snprintf(label, sizeof label, "fs %s n%d w%d %s s%d %dx%d", kModeNames[MODE], 8 * RB, W, XA ? "xa" : (U == 4 ? "u4" : "u2"), split, ctas,
                split);
  if (p.n % (8 * RB) != 0 || p.k % (split * W * 32) != 0 || split > 8 || (XA && p.k / (split * W * 32) > kXaSteps)) {
    std::printf("%-14s %-40s skipped: shape\n", name, label);
    return;
  }
  const int smem = fs_smem_bytes<RB, W>(p.k / split, split);
  if (smem > 227 * 1024) {
    std::printf("%-14s %-40s skipped: %d B of shared memory\n", name, label, smem);
    return;
  }
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * W, smem));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::snprintf(label + std::strlen(label), sizeof label - std::strlen(label), "/%d", per_sm);
  if (static_cast<long long>(per_sm) * sms < static_cast<long long>(ctas) * split) {
    std::printf("%-14s %-40s skipped: more than one wave\n", name, label);
    return;
  }
  auto launch = [&](int i, cudaStream_t s) {
    lab::launch_cluster(kernel, ctas, split, 32 * W, smem, s, lab::skinny_params(p.x[i], p.w[i], p.out[i], kM, p.n, p.k));
  };
  lab::report(p, launch, name, label, floor_us, true, failures);
}

// The library's version 7 on one tile (as the backend launches it), for the side-by-side.
template <int RB, int C, int W, int U>
void run_v7(const Problem& p, int split, double floor_us, const char* name, int& failures) {
  using Shape = tgemm::kernels::SkinnyBopShape<RB, C, W, U>;
  auto* kernel = tgemm::kernels::sm90_gemm_skinny_bop<bf16, RB, C, W, U>;
  const int ctas = (p.n + Shape::kRows - 1) / Shape::kRows, smem = Shape::smem_bytes(split);
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kMaxSmemBytes));
  auto launch = [&](int i, cudaStream_t s) {
    lab::launch_cluster(kernel, ctas, split, Shape::kThreads, smem, s, lab::skinny_params(p.x[i], p.w[i], p.out[i], kM, p.n, p.k));
  };
  char label[96];
  std::snprintf(label, sizeof label, "v7 n%d c%d w%d u%d s%d %dx%d", 8 * RB, C, W, U, split, ctas, split);
  lab::report(p, launch, name, label, floor_us, true, failures);
}

// Every full-share variant of one mode at one split.
template <int MODE>
void run_mode(const Problem& p, int split, double floor_us, const char* name, int& failures) {
  run_fs<1, 4, 4, MODE>(p, split, floor_us, name, failures);
  run_fs<2, 4, 4, MODE>(p, split, floor_us, name, failures);
  run_fs<2, 8, 2, MODE>(p, split, floor_us, name, failures);
  run_fs<4, 4, 4, MODE>(p, split, floor_us, name, failures);
  run_fs<4, 8, 2, MODE>(p, split, floor_us, name, failures);
}

}  // namespace

int main(int argc, char** argv) {
  const cudaDeviceProp prop = lab::device_header();
  std::printf("%-14s %-40s %8s %7s %9s\n", "problem", "variant", "us", "/floor", "err");
  int failures = 0;
  for (auto nk : lab::shapes_from_args(argc, argv, {{576, 7168}, {1280, 8192}, {1536, 7168}, {8192, 1024}, {4096, 4096}})) {
    Problem p = lab::make_timed(prop, kM, nk.first, nk.second);
    const char* name = p.name.c_str();
    const double floor_us = p.floor_us;
    std::printf("%-14s %-40s %8.2f %7.3f %9s\n", name, ("floor " + p.floor_shape).c_str(), floor_us, 1.0, "-");
    for (int rep = 0; rep < 2; ++rep) {
      // The shipped H200 tiles (configs/h200/bf16_tuned_gemm.csv; 8192x1024 ships cuBLASLt, whose
      // time version 7's n16 wk4 u4 split 1 ties).
      if (p.n == 576) run_v7<2, 1, 4, 4>(p, 8, floor_us, name, failures);
      else if (p.n == 1280) run_v7<1, 1, 4, 4>(p, 4, floor_us, name, failures);
      else if (p.n == 1536) run_v7<1, 2, 8, 2>(p, 2, floor_us, name, failures);
      else if (p.n == 4096) run_v7<2, 1, 4, 4>(p, 2, floor_us, name, failures);
      else run_v7<2, 1, 4, 4>(p, 1, floor_us, name, failures);
      if (std::getenv("FS_RUN2") != nullptr) {  // run 2: all of x before the wait
        for (int split : {1, 2, 4, 8}) {
          run_fs<1, 4, 4, kBulkWarp, true>(p, split, floor_us, name, failures);
          run_fs<2, 4, 4, kBulkWarp, true>(p, split, floor_us, name, failures);
          run_fs<2, 8, 2, kBulkWarp, true>(p, split, floor_us, name, failures);
          run_fs<2, 4, 4, kBulkRow, true>(p, split, floor_us, name, failures);
          run_fs<2, 8, 2, kBulkRow, true>(p, split, floor_us, name, failures);
          run_fs<4, 4, 4, kBulkRow, true>(p, split, floor_us, name, failures);
          run_fs<2, 4, 4, kCpAsync, true>(p, split, floor_us, name, failures);
        }
        continue;
      }
      for (int split : {1, 2, 4, 8}) {
        run_mode<kBulkWarp>(p, split, floor_us, name, failures);
        run_mode<kCpAsync>(p, split, floor_us, name, failures);
        run_mode<kBulkRow>(p, split, floor_us, name, failures);
      }
    }
    lab::free_timed(p);
  }
  std::printf("%s\n", failures ? "FAILURES (see ! above)" : "every variant matches the fp32 reference");
  return failures ? 1 : 0;
}
