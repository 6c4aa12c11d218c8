// Split-K sum lab (session 34): which part of version 7's cross-CTA sum costs the time?
//
// Why: version 7 ("bt", kernels/sm90/sm90_gemm_skinny_bop.cuh) runs the K-heavy small-N decode
// weights at M = 16 at 1.4-1.7x of the read floor on an H200, where a plain one-batch stream of
// the same bytes on the same grid runs within 5% of it (bench/micro/cluster_lab.cu). Session 21
// measured bt's stream without its cross-CTA sum ~1.2 us faster on 576x7168, and cluster_lab
// shows the cluster launch and a bare cluster barrier cost ~0.1 us at these grids. What is left
// is the sum's data movement: every warp's fragments written into rank 0's shared memory through
// DSMEM, a release barrier that waits for those stores, and rank 0's serial sum over S x W parts.
//
// Every kernel streams its CTA's share of a weight-sized buffer (one 16-byte non-allocating load a
// chunk, 8 in flight a thread) and turns it into one float4 "fragment" a lane (512 bytes a warp,
// as an 8-row bt block at RB = 1), then ends one of these ways:
//   warp     each warp stores its fragment to global memory (no sum at all; plain CTAs);
//   local    the CTA's warps summed in shared memory in warp order, one store (plain CTAs: what
//            split-K 1 costs);
//   bt       version 7's epilogue: every warp's fragment into rank 0's shared memory (DSMEM,
//            generic stores), arrive.release, the others leave, rank 0 sums S x W parts in order;
//   local+d  the CTA's warps summed locally first, then one fragment a CTA into rank 0 (S parts);
//   push     local sum, then st.async of the CTA's fragment into rank 0's slot, completing on
//            rank 0's mbarrier (no release barrier; the pushing CTAs leave at once); rank 0 waits
//            on its mbarrier and sums S parts.
// Grids as the shipped M = 16 rows on an H200: 576x7168 (72 tiles x S 4, 4 warps), 1280x8192
// (160 x 4, 4 warps), 1536x7168 (192 x 2, 8 warps). Timed by CUDA-graph replay of 20 launches,
// buffers rotated past L2 three times. The sums' results are not checked (data movement alone).
//
// Build (from the repository root): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a
//        -I. -Isrc -Iinclude -o scratch/lab/splitk_sum_lab bench/micro/splitk_sum_lab.cu
//        src/runtime/timing.cu src/runtime/cuda_check.cpp
// Run:   ./splitk_sum_lab           (the first run: the five endings, no x)
//        LAB_X=1 ./splitk_sum_lab   (the second: local and push without and with x's loads)
//        LAB_X2=1 ./splitk_sum_lab  (the third: the same on 8192x1024 and 4096x4096 at split 1-2)
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/micro/lab_common.cuh"

namespace {

namespace sd = tgemm::kernels::skinny_detail;
constexpr int kInFlight = 8;
enum Mode { kWarp = 0, kLocal = 1, kBt = 2, kLocalDsmem = 3, kPush = 4 };
const char* const kModeNames[] = {"warp", "local", "bt", "local+d", "push"};


// grid (tiles, S); block 32 W; dynamic shared memory: S x W x 512 bytes (+ 16 for the mbarrier).
// XPER > 0 (session 34, second run): with each weight chunk a thread also reads XPER 16-byte
// chunks of x (tokens g and g + 8 of the chunk's k, through L1 as version 7 reads x; 2 for 8-row
// tiles, 1 for 16-row ones), x being 16 x K elements of which the CTA reads its rank's k-slice.
template <int W, int MODE, int XPER = 0>
__global__ void __launch_bounds__(32 * W) sum_kernel(const uint4* __restrict__ buf, long long chunks_per_cta, float4* out,
                                                     const uint4* __restrict__ x, int kc_slice, int kc_total) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto* parts = reinterpret_cast<float4*>(smem_raw + 16);
  auto* bar = reinterpret_cast<std::uint64_t*>(smem_raw);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int split = gridDim.y, rank = blockIdx.y;
  const long long cta = blockIdx.x + static_cast<long long>(blockIdx.y) * gridDim.x;
  const bool clustered = MODE >= kBt && split > 1;
  const std::uint32_t bar_addr = sd::smem_addr(bar);
  if (MODE == kPush && clustered && rank == 0 && threadIdx.x == 0) {
    sd::mbar_init(bar_addr, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    sd::mbar_arrive_expect(bar_addr, static_cast<std::uint32_t>((split - 1) * 32 * 16));
  }
  if (clustered) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");

  std::uint32_t acc = 0;
  const uint4* p = buf + cta * chunks_per_cta;
  for (long long i = threadIdx.x; i < chunks_per_cta; i += 32LL * W * kInFlight) {
    uint4 v[kInFlight], xv[kInFlight][XPER > 0 ? XPER : 1];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      const long long q = i + 32LL * W * j;
      v[j] = q < chunks_per_cta ? tgemm::kernels::skinny_detail::load_weight(p + q) : make_uint4(0, 0, 0, 0);
      if constexpr (XPER > 0) {
        const int kc = static_cast<int>(q % kc_slice), g = (threadIdx.x / 4) % 8;
#pragma unroll
        for (int h = 0; h < XPER; ++h)
          xv[j][h] = q < chunks_per_cta ? __ldg(x + static_cast<long long>(g + 8 * h) * kc_total + rank * kc_slice + kc)
                                        : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
      if constexpr (XPER > 0)
#pragma unroll
        for (int h = 0; h < XPER; ++h) acc += xv[j][h].x ^ xv[j][h].w;
    }
  }
  const float4 frag = make_float4(__uint_as_float(acc & 0x3fffffffu), 1.0f, 2.0f, 3.0f);
  const long long tile = blockIdx.x;

  if constexpr (MODE == kWarp) {
    out[(cta * W + warp) * 32 + lane] = frag;
    return;
  }
  if constexpr (MODE == kBt) {
    float4* dst = parts;
    const int pidx = rank * W + warp;
    if (clustered) {
      asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
      dst = cooperative_groups::this_cluster().map_shared_rank(parts, 0);
    }
    dst[pidx * 32 + lane] = frag;
    if (clustered) {
      asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
      if (rank != 0) return;
      asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    } else {
      __syncthreads();
    }
    if (threadIdx.x < 32) {
      float4 s = parts[threadIdx.x];
      for (int q = 1; q < split * W; ++q) {
        const float4 a = parts[q * 32 + threadIdx.x];
        s.x += a.x; s.y += a.y; s.z += a.z; s.w += a.w;
      }
      out[tile * 32 + threadIdx.x] = s;
    }
    return;
  }
  // kLocal, kLocalDsmem, kPush: the CTA's warps first, in warp order, by warp 0.
  parts[(split + warp) * 32 + lane] = frag;  // local parts after the S cross-CTA slots
  __syncthreads();
  float4 mine = make_float4(0, 0, 0, 0);
  if (warp == 0) {
    mine = parts[split * 32 + lane];
    for (int q = 1; q < W; ++q) {
      const float4 a = parts[(split + q) * 32 + lane];
      mine.x += a.x; mine.y += a.y; mine.z += a.z; mine.w += a.w;
    }
  }
  if constexpr (MODE == kLocal) {
    if (warp == 0) out[cta * 32 + lane] = mine;
    return;
  }
  if (!clustered) {
    if (warp == 0) out[tile * 32 + lane] = mine;
    return;
  }
  if constexpr (MODE == kLocalDsmem) {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (warp == 0) cooperative_groups::this_cluster().map_shared_rank(parts, 0)[rank * 32 + lane] = mine;
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    if (rank != 0) return;
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  } else {  // kPush
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");  // rank 0's mbarrier exists
    if (rank != 0) {
      if (warp == 0) {
        const std::uint32_t slot = sd::smem_addr(parts + rank * 32 + lane);
        sd::st_async_16(sd::map_cluster_rank(slot, 0), mine, sd::map_cluster_rank(bar_addr, 0));
      }
      return;
    }
    if (warp == 0) parts[lane] = mine;
    sd::mbar_wait(bar_addr, 0);
  }
  if (warp == 0) {
    float4 s = parts[lane];
    for (int q = 1; q < split; ++q) {
      const float4 a = parts[q * 32 + lane];
      s.x += a.x; s.y += a.y; s.z += a.z; s.w += a.w;
    }
    out[tile * 32 + lane] = s;
  }
}

template <int W, int MODE, int XPER = 0>
void launch(int tiles, int split, bool cluster, const uint4* buf, long long per, float4* out, cudaStream_t s,
            const uint4* x = nullptr, int kc_slice = 1, int kc_total = 1) {
  const int smem = 16 + (split + W) * 32 * 16 + split * W * 32 * 16;
  lab::launch_grid(sum_kernel<W, MODE, XPER>, tiles, split, cluster, 32 * W, smem, s, buf, per, out, x, kc_slice, kc_total);
}

struct Case {
  int n, k, split, warps;
  int rows = 8;  // weight rows a tile: 8 (RB = 1) or 16 (RB = 2)
  bool with_x = false;  // the second run: local and push, each without and with x's loads
};

template <int W>
void run_case(const cudaDeviceProp& prop, const Case& c, float4* out) {
  const std::size_t bytes = static_cast<std::size_t>(c.n) * c.k * 2;
  const int tiles = c.n / c.rows;
  const int sets = lab::rotation_sets(prop, bytes);
  std::vector<uint4*> bufs(sets);
  for (auto& b : bufs) {
    CK(cudaMalloc(&b, bytes));
    lab::fill_kernel<<<1024, 256>>>(reinterpret_cast<lab::bf16*>(b), bytes / 2, 11);
    CK(cudaGetLastError());
  }
  CK(cudaDeviceSynchronize());
  const double floor_best =
      lab::stream_floor_us(prop.multiProcessorCount, bufs, bytes, reinterpret_cast<unsigned*>(out));
  char name[48];
  std::snprintf(name, sizeof name, "16x%dx%d r%d s%d w%d", c.n, c.k, c.rows, c.split, W);
  std::printf("%-24s %-10s %8.2f %7.3f\n", name, "floor", floor_best, 1.0);
  const long long per = static_cast<long long>(bytes / 16) / (static_cast<long long>(tiles) * c.split);
  auto time_mode = [&](auto mode_tag) {
    constexpr int MODE = decltype(mode_tag)::value;
    const double t = lab::time_launches(sets, [&](int i, cudaStream_t s) {
      launch<W, MODE>(tiles, c.split, MODE >= kBt, bufs[i], per, out, s);
    });
    std::printf("%-24s %-10s %8.2f %7.3f\n", name, kModeNames[MODE], t, t / floor_best);
  };
  uint4* xb = nullptr;
  const int kc_total = c.k / 8, kc_slice = kc_total / c.split;
  CK(cudaMalloc(&xb, static_cast<std::size_t>(16) * c.k * 2));
  lab::fill_kernel<<<64, 256>>>(reinterpret_cast<lab::bf16*>(xb), static_cast<std::size_t>(16) * c.k, 13);
  CK(cudaGetLastError());
  auto time_x = [&](auto mode_tag, auto xper_tag) {
    constexpr int MODE = decltype(mode_tag)::value, XPER = decltype(xper_tag)::value;
    const double t = lab::time_launches(sets, [&](int i, cudaStream_t s) {
      launch<W, MODE, XPER>(tiles, c.split, MODE >= kBt, bufs[i], per, out, s, xb, kc_slice, kc_total);
    });
    std::printf("%-24s %-10s %8.2f %7.3f\n", name, (std::string(kModeNames[MODE]) + (XPER ? "+x" + std::to_string(XPER) : "")).c_str(),
                t, t / floor_best);
  };
  for (int rep = 0; c.with_x && rep < 2; ++rep) {
    time_x(std::integral_constant<int, kLocal>{}, std::integral_constant<int, 0>{});
    time_x(std::integral_constant<int, kPush>{}, std::integral_constant<int, 0>{});
    if (c.rows == 8) {
      time_x(std::integral_constant<int, kLocal>{}, std::integral_constant<int, 2>{});
      time_x(std::integral_constant<int, kPush>{}, std::integral_constant<int, 2>{});
    } else {
      time_x(std::integral_constant<int, kLocal>{}, std::integral_constant<int, 1>{});
      time_x(std::integral_constant<int, kPush>{}, std::integral_constant<int, 1>{});
    }
  }
  CK(cudaFree(xb));
  for (int rep = 0; !c.with_x && rep < 2; ++rep) {
    time_mode(std::integral_constant<int, kWarp>{});
    time_mode(std::integral_constant<int, kLocal>{});
    time_mode(std::integral_constant<int, kBt>{});
    time_mode(std::integral_constant<int, kLocalDsmem>{});
    time_mode(std::integral_constant<int, kPush>{});
  }
  for (auto* b : bufs) CK(cudaFree(b));
}

}  // namespace

int main() {
  const cudaDeviceProp prop = lab::device_header();
  float4* out;
  CK(cudaMalloc(&out, 64ull << 20));
  std::printf("%-24s %-10s %8s %7s\n", "grid", "end", "us", "/floor");
  // LAB_X=1: the second run (x's loads beside the stream, on the grids that ship after the push).
  const bool with_x = std::getenv("LAB_X") != nullptr;
  std::vector<Case> cases = {{576, 7168, 4, 4}, {576, 7168, 8, 4}, {1280, 8192, 4, 4}, {1536, 7168, 2, 8}, {1536, 7168, 4, 4}};
  if (with_x)
    cases = {{576, 7168, 8, 4, 16, true}, {576, 7168, 4, 4, 8, true}, {1280, 8192, 4, 4, 8, true},
             {1536, 7168, 2, 8, 8, true}, {4096, 4096, 2, 4, 16, true}};
  // LAB_X2=1: the same on the no-split grids of 8192x1024 and 4096x4096 (16-row tiles, 4 warps).
  if (std::getenv("LAB_X2") != nullptr)
    cases = {{8192, 1024, 1, 4, 16, true}, {4096, 4096, 1, 4, 16, true}, {8192, 1024, 2, 4, 16, true}};
  for (const Case& c : cases) {
    if (c.warps == 4) run_case<4>(prop, c, out);
    else run_case<8>(prop, c, out);
  }
  CK(cudaDeviceSynchronize());
  CK(cudaFree(out));
  return 0;
}
