// Timeline lab (session 36): where, inside one launch, does version 7 spend the time that the
// floor kernel does not?
//
// Why: on the H200 the shipped version 7 tiles run the K-heavy small-N weights at M = 16 at
// 1.32-1.56x of the read floor, and every structure measured in sessions 15-36 is at or above
// them (docs/perf-notes.md, skinny, "Session 35" and "Session 36"). Session 34's Nsight Compute
// read showed the SMs active 59-74% of the elapsed cycles. This lab stamps %globaltimer inside the
// kernels to split a launch into: the gap after the previous launch, the CTAs' entry spread (the
// ramp), the first batch's round trip, the main loop, the epilogue and cross-CTA sum, the tail.
//
// Kernels, each as a CUDA graph of 20 back-to-back launches over rotation sets past L2 (as
// `tgemm bench` times), every launch writing its own timeline; launches 8-15 are summarised:
//   v7      the library's version 7 on the shipped H200 tile with the lab-only kBopTimeline bit
//           (kernels/sm90/sm90_gemm_skinny_bop.cuh: lane 0 of each warp stamps entry, the first
//           batch's MMAs done, the main loop done; thread 0 the CTA's end; results stay right and
//           are checked against the fp32 reference);
//   stream  the bench's floor kernel (runtime/timing.cu, stream_read_kernel: grid-stride 16-byte
//           __ldcs loads, 4 in flight a thread) copied with the same stamps, on the floor's best
//           launch shape for the same bytes.
// Per kernel: the graph-replay time of the unstamped kernel, then (us from the launch's first
// entry, percentiles over warps or CTAs) entry, first batch, loop end, CTA end, and the gap from
// the previous launch's last end to this launch's first entry; and the warps alive over time.
// %globaltimer's step is printed (the smallest nonzero difference between stamps).
//
// Build (from the repository root): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a
//        -I. -Isrc -Iinclude -o scratch/lab/timeline_lab bench/micro/timeline_lab.cu
//        src/runtime/timing.cu src/runtime/cuda_check.cpp
// Run:   ./timeline_lab          (run 1)
//        TL_RUN2=1 ./timeline_lab  (run 2 adds: the stream with its loads scattered over the buffer,
//                                   and version 7 after a kernel that touches every page)
//        TL_RUN3=1 ./timeline_lab  (run 3: version 7's weight loads alone in three address orders)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "bench/micro/lab_common.cuh"
#include "kernels/sm90/sm90_gemm_skinny_bop.cuh"

namespace {

using lab::bf16;
namespace kd = tgemm::kernels::skinny_bop_detail;
constexpr int kM = 16, kLaunches = 20, kStamps = kd::kStamps;

// %globaltimer, read after `after` is computed (an input of the read).
__device__ __forceinline__ std::uint64_t now_ns(unsigned after = 0) {
  std::uint64_t v;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v) : "r"(after));
  return v;
}

// The floor kernel (tgemm::stream_read's body) with version 7's stamps: lane 0 of each warp
// writes [SM id, entry, first batch consumed, loop done, end] at out[(CTA * warps + warp) * 5].
// perm != 0 (run 2): chunk i is read at the place of 512-byte block (i / 32 x perm) mod blocks, so
// that the loads in flight at any time are scattered over the whole buffer instead of a window.
__global__ void stamped_stream_kernel(const uint4* __restrict__ data, std::size_t n, unsigned* sink, std::uint64_t* out,
                                      std::size_t perm = 0) {
  constexpr int kInFlight = 4;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  std::uint64_t* o = out + (static_cast<std::size_t>(blockIdx.x) * warps + warp) * kStamps;
  if (lane == 0) {
    o[1] = now_ns();
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    o[0] = sm;
  }
  unsigned acc = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  bool first = true;
  for (; i + (kInFlight - 1) * stride < n; i += kInFlight * stride) {
    uint4 v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      const std::size_t q = i + j * stride;
      v[j] = __ldcs(data + (perm == 0 ? q : ((q / 32) * perm) % (n / 32) * 32 + q % 32));
    }
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    if (first) {
      const unsigned all = __reduce_xor_sync(0xffffffffu, acc);  // every lane's loads have returned
      if (lane == 0) o[2] = now_ns(all);
      first = false;
    }
  }
  for (; i < n; i += stride) {
    uint4 v = __ldcs(data + (perm == 0 ? i : ((i / 32) * perm) % (n / 32) * 32 + i % 32));
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  const unsigned all = __reduce_xor_sync(0xffffffffu, acc);
  if (lane == 0) {
    const std::uint64_t t = now_ns(all);
    if (first) o[2] = t;
    o[3] = t;
    o[4] = t;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// Run 2: every CTA (one an SM) reads one 16-byte word every `step` bytes of [p, p + bytes), so
// that every SM has translated every page of the buffer before the kernel that follows.
__global__ void touch_kernel(const char* p, std::size_t bytes, std::size_t step, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t o = threadIdx.x * step; o < bytes; o += blockDim.x * step) acc ^= __ldcg(reinterpret_cast<const unsigned*>(p + o));
  if (acc == 0x9e3779b9u) *sink = acc;
}

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * (v.size() - 1) + 0.5))];
}

// Summarises the stamps of launches 8..15: percentiles (us from the launch's first entry) of each
// event, the gap after the previous launch, and the warps alive in 0.25 us buckets (launch 10).
void summarise(const char* name, const std::vector<std::vector<std::uint64_t>>& t, int ctas, int warps) {
  std::vector<double> entry, first, loop, end, gap, span;
  std::uint64_t step = ~0ull;
  std::vector<std::uint64_t> all;
  for (int l = 8; l < 16; ++l) {
    const auto& a = t[l];
    const auto& prev = t[l - 1];
    std::uint64_t t0 = ~0ull, t_end = 0, prev_end = 0;
    for (int c = 0; c < ctas; ++c)
      for (int w = 0; w < warps; ++w) {
        t0 = std::min(t0, a[(c * warps + w) * kStamps + 1]);
        all.push_back(a[(c * warps + w) * kStamps + 1]);
      }
    for (int c = 0; c < ctas; ++c) {
      t_end = std::max(t_end, a[c * warps * kStamps + 4]);
      prev_end = std::max(prev_end, prev[c * warps * kStamps + 4]);
    }
    gap.push_back((static_cast<double>(t0) - static_cast<double>(prev_end)) * 1e-3);
    span.push_back(static_cast<double>(t_end - t0) * 1e-3);
    for (int c = 0; c < ctas; ++c) {
      end.push_back(static_cast<double>(a[c * warps * kStamps + 4] - t0) * 1e-3);
      for (int w = 0; w < warps; ++w) {
        const std::uint64_t* s = &a[(c * warps + w) * kStamps];
        entry.push_back(static_cast<double>(s[1] - t0) * 1e-3);
        first.push_back(static_cast<double>(s[2] - t0) * 1e-3);
        loop.push_back(static_cast<double>(s[3] - t0) * 1e-3);
      }
    }
  }
  std::sort(all.begin(), all.end());
  for (std::size_t i = 1; i < all.size(); ++i)
    if (all[i] != all[i - 1]) step = std::min(step, all[i] - all[i - 1]);
  std::printf("%-30s globaltimer step %llu ns; span (first entry to last end) p50 %.2f us; gap after the previous launch p50 %.2f us\n",
              name, static_cast<unsigned long long>(step), pct(span, 0.5), pct(gap, 0.5));
  auto row = [&](const char* what, const std::vector<double>& v) {
    std::printf("  %-22s p0 %5.2f  p10 %5.2f  p50 %5.2f  p90 %5.2f  p99 %5.2f  max %5.2f\n", what, pct(v, 0), pct(v, 0.1),
                pct(v, 0.5), pct(v, 0.9), pct(v, 0.99), pct(v, 1.0));
  };
  row("warp entry", entry);
  row("first batch done", first);
  row("loop done", loop);
  row("CTA end", end);
  // Warps alive (entered, CTA not ended) over launch 10, 0.25 us buckets.
  const auto& a = t[10];
  std::uint64_t t0 = ~0ull;
  for (int c = 0; c < ctas; ++c)
    for (int w = 0; w < warps; ++w) t0 = std::min(t0, a[(c * warps + w) * kStamps + 1]);
  std::printf("  warps alive (launch 10, per 0.25 us):");
  for (int b = 0; b < 40; ++b) {
    const std::uint64_t lo = t0 + 250ull * b;
    int alive = 0;
    bool any_later = false;
    for (int c = 0; c < ctas; ++c)
      for (int w = 0; w < warps; ++w) {
        const std::uint64_t* s = &a[(c * warps + w) * kStamps];
        if (s[1] <= lo + 125 && a[c * warps * kStamps + 4] >= lo + 125) ++alive;
        if (a[c * warps * kStamps + 4] >= lo) any_later = true;
      }
    if (!any_later) break;
    std::printf(" %d", alive);
  }
  std::printf("\n");
  std::fflush(stdout);
}

// Runs `launch(i, stamps, stream)` as a graph of kLaunches back-to-back launches (rotation set
// i % sets, stamps into buffer i), replays it 3 times, and returns the last replay's stamps.
std::vector<std::vector<std::uint64_t>> stamp_launches(int sets, std::size_t words,
                                                       const std::function<void(int, std::uint64_t*, cudaStream_t)>& launch) {
  std::vector<std::uint64_t*> bufs(kLaunches);
  for (auto& b : bufs) CK(cudaMalloc(&b, words * sizeof(std::uint64_t)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kLaunches; ++i) launch(i % sets, bufs[i], s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 3; ++r) CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaGetLastError());
  std::vector<std::vector<std::uint64_t>> out(kLaunches, std::vector<std::uint64_t>(words));
  for (int i = 0; i < kLaunches; ++i) CK(cudaMemcpy(out[i].data(), bufs[i], words * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(s));
  for (auto& b : bufs) CK(cudaFree(b));
  return out;
}

struct Case {
  int n, k, split;  // with the template's tile: the shipped H200 tile (8192x1024: version 7's best, cuBLASLt ships)
};

template <int RB, int C, int W, int U>
void run_case(const cudaDeviceProp& prop, const Case& cs, int& failures) {
  using Shape = tgemm::kernels::SkinnyBopShape<RB, C, W, U>;
  lab::Timed p = lab::make_timed(prop, kM, cs.n, cs.k);
  const std::size_t wb = p.weight_bytes;
  unsigned* const sink = p.sink;
  const char* name = p.name.c_str();
  const std::string& shape = p.floor_shape;
  const double floor_us = p.floor_us;
  const int waves = std::atoi(shape.c_str()), threads = std::atoi(shape.c_str() + shape.find('x') + 1);
  const int ctas = (cs.n + Shape::kRows - 1) / Shape::kRows, smem = Shape::smem_bytes(cs.split);
  auto* plain = tgemm::kernels::sm90_gemm_skinny_bop<bf16, RB, C, W, U>;
  auto* stamped = tgemm::kernels::sm90_gemm_skinny_bop<bf16, RB, C, W, U, kd::kBopTimeline>;
  CK(cudaFuncSetAttribute(plain, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kMaxSmemBytes));
  CK(cudaFuncSetAttribute(stamped, cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kMaxSmemBytes));
  auto v7_launch = [&](auto* kernel, int i, std::uint64_t* stamps, cudaStream_t s) {
    auto kp = lab::skinny_params(p.x[i], p.w[i], p.out[i], kM, p.n, p.k);
    kp.bias = stamps;  // bias_type stays none: the kernel reads no bias
    lab::launch_cluster(kernel, ctas, cs.split, Shape::kThreads, smem, s, kp);
  };
  const double t_plain = lab::time_launches(p.sets, [&](int i, cudaStream_t s) { v7_launch(plain, i, nullptr, s); });
  std::uint64_t* scratch;  // the timed stamped launches' stamps (overwritten, never read)
  CK(cudaMalloc(&scratch, static_cast<std::size_t>(ctas) * cs.split * W * kStamps * 8));
  const double t_stamped = lab::time_launches(p.sets, [&](int i, cudaStream_t s) { v7_launch(stamped, i, scratch, s); });
  const double err = lab::poisoned_error(p.out[0], p.ref, kM * p.n, [&](int i, cudaStream_t s) { v7_launch(stamped, i, scratch, s); });
  CK(cudaFree(scratch));
  const bool bad = !(err < 1e-2);
  failures += bad;
  std::printf("\n%s: floor %.2f us (%s); version 7 n%d c%d w%d u%d s%d (%dx%d CTAs): %.2f us (%.3fx), stamped %.2f us, err %.1e%s\n", name,
              floor_us, shape.c_str(), 8 * RB, C, W, U, cs.split, ctas, cs.split, t_plain, t_plain / floor_us, t_stamped, err,
              bad ? "!" : "");
  const auto v7 = stamp_launches(p.sets, static_cast<std::size_t>(ctas) * cs.split * W * kStamps,
                                 [&](int i, std::uint64_t* b, cudaStream_t s) { v7_launch(stamped, i, b, s); });
  summarise("version 7", v7, ctas * cs.split, W);
  // Rank 0's CTAs against the others: the cross-CTA sum's wait.
  if (cs.split > 1) {
    std::vector<double> r0, rk;
    for (int l = 8; l < 16; ++l)
      for (int c = 0; c < ctas * cs.split; ++c) {
        const std::uint64_t* s = &v7[l][c * W * kStamps];
        std::uint64_t loop = 0;
        for (int w = 0; w < W; ++w) loop = std::max(loop, v7[l][(c * W + w) * kStamps + 3]);
        (c / ctas == 0 ? r0 : rk).push_back(static_cast<double>(s[4] - loop) * 1e-3);
      }
    std::printf("  CTA end - its last warp's loop end: rank 0 p50 %.2f p90 %.2f max %.2f us; other ranks p50 %.2f p90 %.2f max %.2f us\n",
                pct(r0, 0.5), pct(r0, 0.9), pct(r0, 1.0), pct(rk, 0.5), pct(rk, 0.9), pct(rk, 1.0));
  }
  const int sctas = prop.multiProcessorCount * waves;
  std::uint64_t* scratch_stream;  // the timed stamped launches' stamps (overwritten, never read)
  CK(cudaMalloc(&scratch_stream, static_cast<std::size_t>(sctas) * (threads / 32) * kStamps * 8));
  const double t_stream = lab::time_launches(p.sets, [&](int i, cudaStream_t s) {
    stamped_stream_kernel<<<sctas, threads, 0, s>>>(reinterpret_cast<const uint4*>(p.w[i]), wb / 16, sink, scratch_stream);
  });
  std::printf("stamped stream (%dx%d threads): %.2f us\n", sctas, threads, t_stream);
  const auto st = stamp_launches(p.sets, static_cast<std::size_t>(sctas) * (threads / 32) * kStamps,
                                 [&](int i, std::uint64_t* b, cudaStream_t s) {
                                   stamped_stream_kernel<<<sctas, threads, 0, s>>>(reinterpret_cast<const uint4*>(p.w[i]), wb / 16, sink, b);
                                 });
  summarise("stream (floor kernel)", st, sctas, threads / 32);
  if (std::getenv("TL_RUN2") != nullptr) {
    // The same stream with its loads scattered over the buffer: 512-byte block b read at the place
    // of b x mult mod blocks, mult ~0.618 blocks and coprime to it (a permutation).
    const std::size_t blocks = wb / 512;
    std::size_t mult = static_cast<std::size_t>(0.618 * blocks) | 1;
    while (std::gcd(mult, blocks) != 1) mult += 2;
    const double t_perm = lab::time_launches(p.sets, [&](int i, cudaStream_t s) {
      stamped_stream_kernel<<<sctas, threads, 0, s>>>(reinterpret_cast<const uint4*>(p.w[i]), wb / 16, sink, scratch_stream, mult);
    });
    std::printf("stamped stream, scattered blocks: %.2f us\n", t_perm);
    const auto sp = stamp_launches(p.sets, static_cast<std::size_t>(sctas) * (threads / 32) * kStamps,
                                   [&](int i, std::uint64_t* b, cudaStream_t s) {
                                     stamped_stream_kernel<<<sctas, threads, 0, s>>>(reinterpret_cast<const uint4*>(p.w[i]), wb / 16, sink, b, mult);
                                   });
    summarise("stream, scattered blocks", sp, sctas, threads / 32);
    // Version 7 after a kernel that has every SM translate every page of the launch's operands.
    for (std::size_t step : {std::size_t{2} << 20, std::size_t{64} << 10}) {
      const std::size_t xb = static_cast<std::size_t>(kM) * p.k * 2;
      auto touched = [&](int i, std::uint64_t* b, cudaStream_t s) {
        touch_kernel<<<prop.multiProcessorCount, 32, 0, s>>>(reinterpret_cast<const char*>(p.w[i]), wb + xb, step, sink);
        v7_launch(stamped, i, b, s);
      };
      const auto tv = stamp_launches(p.sets, static_cast<std::size_t>(ctas) * cs.split * W * kStamps, touched);
      char what[64];
      std::snprintf(what, sizeof what, "version 7, pages touched (%zu KB)", step >> 10);
      summarise(what, tv, ctas * cs.split, W);
    }
  }
  CK(cudaFree(scratch_stream));
  lab::free_timed(p);
}

// Run 3: version 7's weight loads alone (no x, no MMAs, no sum) on version 7's grid, cluster
// launch and batches, with three address orders over a weight-sized buffer:
//   0 plain        version 7's: lane (g, t) reads 16 bytes of row 8 b + g at k = step + 8 C t + 8 c;
//   1 warp-major   each warp's (step, block, chunk) units contiguous (512 bytes a unit, lane order),
//                  warps in launch order (session 19's pre-tiled "sh" layout);
//   2 batch-major  unit (batch q, warp w, u, block, chunk) at ((q x warps + w) x units a batch + ..)
//                  x 512: the loads of every warp's q-th batch form one contiguous range (a weight
//                  pre-shuffled in the order the grid reads it);
//   3 row pieces   row-major, the same bytes a batch as 0, but each load instruction reads whole
//                  row pieces (32 / P rows of P contiguous 16-byte chunks, P = 4 U C): what a
//                  row-major kernel that transposed in registers or shared memory would read;
//   4 CTA steps    row-major, the CTA's k-steps dealt to its warps round robin (session 35's run 8:
//                  a CTA batch covers W x U consecutive k-steps of each row).
// Needs K / (32 C) a multiple of split x W (every warp the same number of k-steps).
template <int RB, int C, int W, int U, int ORDER>
__global__ void __launch_bounds__(32 * W) order_kernel(const bf16* __restrict__ w, int k, int steps_per_warp, unsigned* sink) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int split = gridDim.y, rank = blockIdx.y, tile = blockIdx.x;
  const long long gw = (static_cast<long long>(tile) * split + rank) * W + warp;  // launch order: tile-major
  const long long warps = static_cast<long long>(gridDim.x) * split * W;
  const int s_begin = (rank * W + warp) * steps_per_warp;
  const char* base = reinterpret_cast<const char*>(w);
  unsigned acc = 0;
  const int batches = (steps_per_warp + U - 1) / U;
  for (int q = 0; q < batches; ++q) {
    uint4 v[U][RB][C];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int b = 0; b < RB; ++b)
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int step = q * U + u;
          long long off;
          if constexpr (ORDER == 0)
            off = ((static_cast<long long>(tile) * 8 * RB + 8 * b + g) * k + static_cast<long long>(s_begin + step) * 32 * C + 8 * C * t + 8 * c) * 2;
          else if constexpr (ORDER == 1)
            off = ((gw * steps_per_warp + step) * RB * C + b * C + c) * 512LL + lane * 16;
          else if constexpr (ORDER == 2)
            off = ((static_cast<long long>(q) * U * warps + gw * min(U, steps_per_warp - q * U) + u) * RB * C + b * C + c) * 512LL +
                  lane * 16;  // batch q's units of every warp, dense (the last batch may be short)
          else if constexpr (ORDER == 3) {
            constexpr int P = 4 * U * C;  // 16-byte chunks of a row in a batch
            const int i = (u * RB + b) * C + c, row = i * (32 / P) + lane / P;
            off = ((static_cast<long long>(tile) * 8 * RB + row) * k + static_cast<long long>(s_begin + q * U) * 32 * C) * 2 + (lane % P) * 16;
          } else {
            const int cstep = rank * W * steps_per_warp + (q * U + u) * W + warp;  // round robin over the CTA's warps
            off = ((static_cast<long long>(tile) * 8 * RB + 8 * b + g) * k + static_cast<long long>(cstep) * 32 * C + 8 * C * t + 8 * c) * 2;
          }
          v[u][b][c] = step < steps_per_warp ? tgemm::kernels::skinny_detail::load_weight(base + off) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int b = 0; b < RB; ++b)
#pragma unroll
        for (int c = 0; c < C; ++c) acc ^= v[u][b][c].x ^ v[u][b][c].w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

template <int RB, int C, int W, int U>
void run_order(const cudaDeviceProp& prop, const Case& cs) {
  const int tiles = cs.n / (8 * RB), steps = cs.k / (32 * C) / (cs.split * W);
  if (cs.k % (32 * C * cs.split * W) != 0 || cs.n % (8 * RB) != 0) {
    std::printf("\n%dx%dx%d: skipped, uneven k-steps\n", kM, cs.n, cs.k);
    return;
  }
  lab::Timed p = lab::make_timed(prop, kM, cs.n, cs.k);
  unsigned* const sink = p.sink;
  const double floor_us = p.floor_us;
  std::printf("\n%s: floor %.2f us (%s); version 7's grid n%d c%d w%d u%d s%d (%dx%d CTAs), %d k-steps a warp\n", p.name.c_str(), floor_us,
              p.floor_shape.c_str(), 8 * RB, C, W, U, cs.split, tiles, cs.split, steps);
  auto time_order = [&](auto* kernel, const char* what) {
    const double t = lab::time_launches(p.sets, [&](int i, cudaStream_t s) {
      lab::launch_cluster(kernel, tiles, cs.split, 32 * W, 0, s, static_cast<const bf16*>(p.w[i]), cs.k, steps, sink);
    });
    std::printf("  %-34s %6.2f us %6.3fx\n", what, t, t / floor_us);
    std::fflush(stdout);
  };
  for (int rep = 0; rep < 2; ++rep) {
    time_order(order_kernel<RB, C, W, U, 0>, "plain (version 7's addresses)");
    time_order(order_kernel<RB, C, W, U, 1>, "warp-major (pre-tiled, sh)");
    time_order(order_kernel<RB, C, W, U, 2>, "batch-major (read order)");
    time_order(order_kernel<RB, C, W, U, 3>, "row pieces (row-major)");
    time_order(order_kernel<RB, C, W, U, 4>, "CTA steps round robin (row-major)");
  }
  lab::free_timed(p);
}

}  // namespace

int main() {
  const cudaDeviceProp prop = lab::device_header();
  if (std::getenv("TL_RUN3") != nullptr) {
    run_order<2, 1, 4, 4>(prop, {576, 7168, 8});
    run_order<1, 1, 4, 4>(prop, {1280, 8192, 4});
    run_order<1, 2, 8, 2>(prop, {1536, 7168, 2});
    run_order<2, 1, 4, 4>(prop, {8192, 1024, 1});
    run_order<2, 1, 4, 4>(prop, {4096, 4096, 2});
    return 0;
  }
  int failures = 0;
  run_case<2, 1, 4, 4>(prop, {576, 7168, 8}, failures);
  run_case<1, 1, 4, 4>(prop, {1280, 8192, 4}, failures);
  run_case<1, 2, 8, 2>(prop, {1536, 7168, 2}, failures);
  run_case<2, 1, 4, 4>(prop, {8192, 1024, 1}, failures);
  std::printf("%s\n", failures ? "FAILURES (see ! above)" : "the stamped kernel matches the fp32 reference on every problem");
  return failures ? 1 : 0;
}
