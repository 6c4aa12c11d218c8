// Cluster-launch lab (session 34): what does launching a grid as thread-block clusters cost, apart
// from any cross-CTA sum?
//
// Why: the M = 16 skinny kernels (version 7, "bt") split K over the CTAs of a (1, S, 1) cluster and
// sum through distributed shared memory. Session 21's ablation (bt's stream with no x and no
// cross-CTA sum, launched without a cluster) ran ~1 us faster than the same stream as a cluster
// on 1280x8192 (8.98 against 9.96 us, H100), and on 8192x1024 the same 16-row tile ran 8.06 us
// as plain CTAs, 10.17 us as clusters of 2 and 14.80 us as clusters of 4, where the cluster's sum
// is a few hundred bytes (docs/perf-notes.md, skinny, "Session 21", "Session 22"). The hypothesis
// here: the cost is the launch itself - clusters are dispatched to GPCs more slowly than plain
// CTAs - not the DSMEM sum. If so the cost grows with the number of clusters, not with the bytes
// a CTA reads; if it is the cross-CTA wait, it appears only with the barrier.
//
// For each total CTA count and cluster size it times, by CUDA-graph replay of 20 launches (as
// `tgemm bench` times):
//   touch      every CTA does nothing but one predicated store (dispatch alone);
//   stream     every CTA reads its own contiguous share of a weight-sized buffer (16-byte
//              non-allocating loads, all of a thread's loads in flight before any use), buffers
//              rotated past L2 three times;
//   stream+bar the same with a cluster barrier (arrive.release, wait.acquire) after the loads;
// each launched as plain CTAs (cl 1), as clusters of 1, 2, 4 and 8 along y.
//
// Build (from the repository root): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a
//        -I. -Isrc -Iinclude -o scratch/lab/cluster_lab bench/micro/cluster_lab.cu
//        src/runtime/timing.cu src/runtime/cuda_check.cpp
// Run:   ./cluster_lab
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/micro/lab_common.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kInFlight = 8;  // 16-byte loads a thread issues before using any


// MODE 0: touch; 1: stream; 2: stream, then a cluster barrier.
template <int MODE>
__global__ void __launch_bounds__(kThreads) cluster_kernel(const uint4* __restrict__ buf, long long chunks_per_cta,
                                                           unsigned* sink) {
  const long long cta = blockIdx.x + static_cast<long long>(blockIdx.y) * gridDim.x;
  unsigned acc = 0;
  if constexpr (MODE >= 1) {
    const uint4* p = buf + cta * chunks_per_cta;
    for (long long i = threadIdx.x; i < chunks_per_cta; i += static_cast<long long>(kThreads) * kInFlight) {
      uint4 v[kInFlight];
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
        const long long q = i + static_cast<long long>(j) * kThreads;
        v[j] = q < chunks_per_cta ? tgemm::kernels::skinny_detail::load_weight(p + q) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
  }
  if constexpr (MODE == 2) {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  }
  if (acc == 0x9E3779B9u && cta >= 0) sink[threadIdx.x % 16] = acc;  // keeps the loads; practically never taken
}

// cl = 0: plain CTAs on a (ctas / y, y) grid with y = 8 (the same grid shape as the clusters);
// cl >= 1: a (1, cl, 1) cluster attribute, also at cl = 1 (lab::launch_grid sets none there, and
// the size-1 attribute is one of the things measured here).
template <int MODE>
void launch(int ctas, int cl, const uint4* buf, long long chunks_per_cta, unsigned* sink, cudaStream_t s) {
  const int y = cl == 0 ? 8 : cl;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(ctas / y, y);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = cl;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = cl >= 1 ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, cluster_kernel<MODE>, buf, chunks_per_cta, sink));
}

}  // namespace

int main() {
  const cudaDeviceProp prop = lab::device_header();
  unsigned* sink;
  CK(cudaMalloc(&sink, 64));
  // Buffers of the three small-N decode weights' sizes (576x7168, 8192x1024, 1280x8192 bf16).
  const std::vector<std::size_t> sizes = {576ull * 7168 * 2, 8192ull * 1024 * 2, 1280ull * 8192 * 2};
  const std::vector<int> cta_counts = {72, 144, 288, 576, 1152, 2048};
  const std::vector<int> clusters = {0, 1, 2, 4, 8};
  std::printf("%-10s %9s %6s %4s %9s\n", "mode", "MB", "CTAs", "cl", "us");
  for (int ctas : cta_counts)
    for (int cl : clusters) {
      if (ctas % (cl == 0 ? 8 : cl) != 0) continue;
      const double t = lab::time_launches(1, [&](int, cudaStream_t s) { launch<0>(ctas, cl, nullptr, 0, sink, s); });
      std::printf("%-10s %9s %6d %4d %9.2f\n", "touch", "-", ctas, cl, t);
    }
  for (std::size_t bytes : sizes) {
    const int sets = lab::rotation_sets(prop, bytes);
    std::vector<uint4*> bufs(sets);
    for (auto& b : bufs) {
      CK(cudaMalloc(&b, bytes));
      lab::fill_kernel<<<1024, 256>>>(reinterpret_cast<lab::bf16*>(b), bytes / 2, 7);
      CK(cudaGetLastError());
    }
    CK(cudaDeviceSynchronize());
    const double floor_best = lab::stream_floor_us(prop.multiProcessorCount, bufs, bytes, sink);
    std::printf("%-10s %9.2f %6s %4s %9.2f\n", "floor", bytes / 1e6, "-", "-", floor_best);
    for (int ctas : cta_counts)
      for (int cl : clusters) {
        if (ctas % (cl == 0 ? 8 : cl) != 0) continue;
        const long long per = static_cast<long long>(bytes / 16) / ctas;  // the remainder is not read
        const double t = lab::time_launches(sets, [&](int i, cudaStream_t s) { launch<1>(ctas, cl, bufs[i], per, sink, s); });
        std::printf("%-10s %9.2f %6d %4d %9.2f\n", "stream", bytes / 1e6, ctas, cl, t);
        if (cl >= 2) {
          const double tb = lab::time_launches(sets, [&](int i, cudaStream_t s) { launch<2>(ctas, cl, bufs[i], per, sink, s); });
          std::printf("%-10s %9.2f %6d %4d %9.2f\n", "stream+bar", bytes / 1e6, ctas, cl, tb);
        }
      }
    for (auto* b : bufs) CK(cudaFree(b));
  }
  CK(cudaFree(sink));
  return 0;
}
