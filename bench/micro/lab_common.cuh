// Shared harness of the standalone decode labs (bench/micro/decode_lab.cu for M = 1,
// bench/micro/decode16_lab.cu for M = 16): error check, random fill, NaN poison, the check
// against an fp32 reference, and graph-replay timing as `tgemm bench` times. The floor is the
// library's own streaming read (runtime/timing.h, tgemm::stream_read): the labs link
// src/runtime/timing.cu and src/runtime/cuda_check.cpp (build lines in each lab's header).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "runtime/timing.h"  // tgemm::stream_read, the bench's floor kernel

#include "kernels/sm90/sm90_gemm_skinny.cuh"  // SkinnyParams

#define CK(call)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

namespace lab {

using bf16 = __nv_bfloat16;

// The (N, K) weights to study: the command line's "N K N K ...", else the lab's defaults.
inline std::vector<std::pair<int, int>> shapes_from_args(int argc, char** argv,
                                                         std::vector<std::pair<int, int>> defaults) {
  std::vector<std::pair<int, int>> shapes;
  for (int i = 1; i + 1 < argc; i += 2) shapes.push_back({std::atoi(argv[i]), std::atoi(argv[i + 1])});
  return shapes.empty() ? defaults : shapes;
}

// Device 0's properties, printed as a lab's first line.
inline cudaDeviceProp device_header() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  return prop;
}

// Operand sets rotated through so that a weight of `bytes` is read past three L2 sizes (as
// `tgemm bench` rotates), at least 2.
inline int rotation_sets(const cudaDeviceProp& prop, std::size_t bytes) {
  return static_cast<int>(std::max<std::size_t>(2, (3 * static_cast<std::size_t>(prop.l2CacheSize)) / bytes + 1));
}

// Uniform values in [-1, 1) from a hash of the index and the seed.
__global__ void fill_kernel(bf16* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = __float2bfloat16(static_cast<float>(z >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f);
  }
}

__global__ void poison_kernel(bf16* p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = __float2bfloat16(NAN);
}


inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-launch time (us): a graph of 20 launches over `sets` rotation sets, replayed; median of rounds.
inline double time_launches(int sets, const std::function<void(int, cudaStream_t)>& launch) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 20; ++i) launch(i % sets, s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ge, s));
  std::vector<double> t;
  for (int r = 0; r < 15; ++r) {
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < 4; ++i) CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.0 / 80.0);
  }
  CK(cudaGetLastError());
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
  return median(t);
}

// Relative Frobenius error of `count` bf16 outputs at `out` against the fp32 reference `ref`,
// after poisoning `out` with NaN and running launch(0, default stream): INFINITY when any output
// is not finite.
inline double poisoned_error(bf16* out, const float* ref, int count, const std::function<void(int, cudaStream_t)>& launch) {
  poison_kernel<<<64, 256>>>(out, count);
  CK(cudaGetLastError());
  launch(0, 0);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<bf16> o(count);
  std::vector<float> r(count);
  CK(cudaMemcpy(o.data(), out, count * sizeof(bf16), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(r.data(), ref, count * sizeof(float), cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (int i = 0; i < count; ++i) {
    const double v = __bfloat162float(o[i]);
    if (!std::isfinite(v)) return INFINITY;
    num += (v - r[i]) * (v - r[i]);
    den += static_cast<double>(r[i]) * r[i];
  }
  return std::sqrt(num / den);
}

// Launches `kernel` on a (tiles, cl) grid of `threads`-thread CTAs with `smem` bytes of dynamic
// shared memory, as a (1, cl, 1) cluster when `cluster` is set and cl > 1 (launch_cluster: always
// set, how the skinny backend launches its split-K kernels).
template <typename... Params, typename... Args>
void launch_grid(void (*kernel)(Params...), int tiles, int cl, bool cluster, int threads, int smem, cudaStream_t s,
                 Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(tiles, cl);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = cl;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = cluster && cl > 1 ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}
template <typename... Params, typename... Args>
void launch_cluster(void (*kernel)(Params...), int tiles, int cl, int threads, int smem, cudaStream_t s, Args... args) {
  launch_grid(kernel, tiles, cl, true, threads, smem, s, args...);
}

// The streaming-read floor of `bytes` at each of `bufs` (rotated): the best of tgemm::stream_read
// over grids of `waves` x SMs CTAs and 256 or 512 threads; `shape`, if given, gets the best's
// "<waves>x<threads>".
template <typename T>
double stream_floor_us(int sms, const std::vector<T*>& bufs, std::size_t bytes, unsigned* sink,
                       std::initializer_list<int> waves_list = {2, 4, 8, 16}, std::string* shape = nullptr) {
  double best = 1e30;
  for (int waves : waves_list)
    for (int threads : {256, 512}) {
      const double t = time_launches(static_cast<int>(bufs.size()), [&](int i, cudaStream_t s) {
        tgemm::stream_read(bufs[i], bytes, sms * waves, threads, sink, reinterpret_cast<tgemm::Stream>(s));
      });
      if (t < best) {
        best = t;
        if (shape != nullptr) *shape = std::to_string(waves) + "x" + std::to_string(threads);
      }
    }
  return best;
}

// out[r, c] = sum_q x[r, q] w[c, q] in fp32 for r < m, c < n (dense rows): one thread an output.
__global__ void ref_kernel(const bf16* x, const bf16* w, float* out, int m, int n, int k) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m * n) return;
  const int r = i / n, c = i % n;
  float s = 0.0f;
  for (int q = 0; q < k; ++q)
    s += __bfloat162float(x[static_cast<long long>(r) * k + q]) * __bfloat162float(w[static_cast<long long>(c) * k + q]);
  out[i] = s;
}

// One problem's operands: `sets` rotation sets of a random weight [n, k] with x [m, k] right after
// it in the same allocation (as the bench lays them out), a bf16 output [m, n] each, and the fp32
// reference of set 0.
struct Operands {
  int m = 0, n = 0, k = 0, sets = 0;
  std::vector<bf16*> w, x, out;
  float* ref = nullptr;
};

inline Operands make_operands(const cudaDeviceProp& prop, int m, int n, int k) {
  Operands p;
  p.m = m;
  p.n = n;
  p.k = k;
  const std::size_t wb = static_cast<std::size_t>(n) * k * 2, xb = static_cast<std::size_t>(m) * k * 2;
  p.sets = rotation_sets(prop, wb);
  for (int i = 0; i < p.sets; ++i) {
    bf16 *w, *o;
    CK(cudaMalloc(&w, wb + xb + 256));
    CK(cudaMalloc(&o, static_cast<std::size_t>(m) * n * sizeof(bf16)));
    fill_kernel<<<1024, 256>>>(w, (wb + xb) / 2, 4321 + i);
    CK(cudaGetLastError());
    p.w.push_back(w);
    p.x.push_back(w + static_cast<std::size_t>(n) * k);
    p.out.push_back(o);
  }
  CK(cudaMalloc(&p.ref, static_cast<std::size_t>(m) * n * sizeof(float)));
  ref_kernel<<<(m * n + 255) / 256, 256>>>(p.x[0], p.w[0], p.ref, m, n, k);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  return p;
}

inline void free_operands(Operands& p) {
  for (int i = 0; i < p.sets; ++i) {
    CK(cudaFree(p.w[i]));
    CK(cudaFree(p.out[i]));
  }
  CK(cudaFree(p.ref));
  p = Operands{};
}

// A problem ready to time: its operands, a sink for kernels that must keep their loads, its name
// ("MxNxK"), its weight's bytes and the floor of those bytes (stream_floor_us over 2-32 waves) with
// the floor's best launch shape ("<waves>x<threads>").
struct Timed : Operands {
  std::size_t weight_bytes = 0;
  unsigned* sink = nullptr;
  std::string name, floor_shape;
  double floor_us = 0.0;
};

inline Timed make_timed(const cudaDeviceProp& prop, int m, int n, int k) {
  Timed p;
  static_cast<Operands&>(p) = make_operands(prop, m, n, k);
  p.weight_bytes = static_cast<std::size_t>(n) * k * 2;
  CK(cudaMalloc(&p.sink, 64));
  p.name = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  p.floor_us = stream_floor_us(prop.multiProcessorCount, p.w, p.weight_bytes, p.sink, {2, 4, 8, 16, 32}, &p.floor_shape);
  return p;
}

inline void free_timed(Timed& p) {
  CK(cudaFree(p.sink));
  free_operands(p);
  p = Timed{};
}

// Times `launch` (graph replay), checks it against the reference unless `checked` is false (an
// ablation, whose results are wrong by design), and prints one line: problem, label, us, x the
// floor, error (or "ablation"). A failed check (error >= 1e-2 or not finite) counts in `failures`.
inline void report(const Operands& p, const std::function<void(int, cudaStream_t)>& launch, const char* name,
                   const char* label, double floor_us, bool checked, int& failures) {
  const double t = time_launches(p.sets, launch);
  char err[32] = "ablation";
  if (checked) {
    const double e = poisoned_error(p.out[0], p.ref, p.m * p.n, launch);
    const bool bad = !(e < 1e-2);
    failures += bad;
    std::snprintf(err, sizeof err, "%.1e%s", e, bad ? "!" : "");
  }
  std::printf("%-14s %-40s %8.2f %7.3f %9s\n", name, label, t, t / floor_us, err);
  std::fflush(stdout);
}

// w[N, K] row-major -> the pre-tiled ("sh", session 19) layout that version 7 reads under its
// lab bit kBopPreTiled: 16-byte chunk q = (rb K / 32 + kb) 32 + lane holds row 8 rb + lane / 4,
// k = 32 kb + 8 (lane % 4) .. + 7. N % 8 == 0 and K % 32 == 0.
__global__ void pretile_kernel(const bf16* __restrict__ w, bf16* __restrict__ wsh, int n, int k) {
  const std::size_t chunks = static_cast<std::size_t>(n) * k / 8;
  const int kb_count = k / 32;
  for (std::size_t q = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; q < chunks;
       q += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int lane = static_cast<int>(q % 32);
    const std::size_t blk = q / 32;
    const int kb = static_cast<int>(blk % kb_count);
    const std::size_t row = (blk / kb_count) * 8 + lane / 4;
    const int col = kb * 32 + (lane % 4) * 8;
    reinterpret_cast<uint4*>(wsh)[q] = *reinterpret_cast<const uint4*>(w + row * k + col);
  }
}

// The library skinny kernels' parameters for a lab problem: m tokens, dense rows (ld = K, out
// ld = N), bf16 out, no bias.
inline tgemm::kernels::SkinnyParams skinny_params(const void* x, const void* w, void* out, int m, int n, int k) {
  tgemm::kernels::SkinnyParams kp;
  kp.x = x;
  kp.w = w;
  kp.out = out;
  kp.m = m;
  kp.n = n;
  kp.k = k;
  kp.lda = k;
  kp.ldb = k;
  kp.ldo = n;
  kp.out_type = tgemm::kernels::kSkinnyBf16;
  kp.bias_type = tgemm::kernels::kSkinnyNone;
  return kp;
}

}  // namespace lab
