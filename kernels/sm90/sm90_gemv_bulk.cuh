// Skinny version 5, "bulk GEMV": out[M, N] = x[M, K] · w[N, K]^T (+ bias[N]) for M <= M_MAX
// (1, 2, 4) on CUDA cores, with the weight streamed into shared memory by bulk asynchronous
// copies (the one-dimensional form of the tensor memory accelerator) through a ring of slots.
//
// Why (docs/perf-notes.md, skinny, "Session 9 measured"): the register-batch kernels stream at
// 3.0-4.1 TB/s where the floor kernel reads at 4.5 TB/s. Version 4 (GEMV) loads one batch per
// lane and exits, so a CTA's slot has no load in flight while it reduces, stores and is
// replaced. Here one producer warp keeps the ring full: up to `stages` slots of
// CONSUMERS weight-row slices are in flight per CTA (64-96 KB), whatever the consumers do, and
// the bytes in flight take no registers.
//
// Layout: CONSUMERS + 1 warps. A row tile is CONSUMERS consecutive rows; CTA b takes row tiles
// b, b + G, b + 2G, ... (G = gridDim.x, a persistent grid). A unit is one k-range of kc
// elements of one row tile; the CTA's units run in order (tile-major). The producer (the last
// warp) waits until a slot is free, announces its bytes on the slot's "full" barrier, and its
// lane r copies row r's slice of the unit (one bulk copy each, whole 16-byte chunks). Consumer
// warp c owns row c of every tile: it waits for the slot, reads its slice from shared memory
// (lane l takes 16-byte chunks l, l + 32, ..., four at a time) with the same 8 k of x (through
// L1; tokens past M read the last token's row, never stored), accumulates
// in fp32, and releases the slot ("empty" barrier, one arrival per consumer warp). After a row's
// last unit the warp sums its lanes (a fixed shuffle tree) and lane 0 adds the bias and stores;
// the row's chunk that straddles K (K % 8 != 0) is read from global memory by lane 0, last.
// Results are bit-identical run to run: the plan and every summation order depend only on the
// shape and the device.
//
// Preconditions (the host's can_implement checks them): an sm_90 image; 1 <= M <= M_MAX;
// N >= 1; 1 <= K <= 2^30; x and w 16-byte aligned with lda, ldb multiples of 8 elements (lda
// ignored when M = 1, ldb when N = 1); out, bias element-aligned; the plan from
// gemv_bulk_plan (kc a multiple of 8 unless it is K, 2 <= stages <= kGemvBulkMaxStages);
// block 32 * (CONSUMERS + 1); dynamic shared memory gemv_bulk_smem_bytes(plan, CONSUMERS).
//
// Test: tests/gpu/test_skinny.cu (every variant against the fp32 reference with tails, bias,
// every output dtype; the sanitizer subset).
#pragma once

#include <cstdint>

#include "kernels/sm90/sm90_gemm_skinny.cuh"
#include "kernels/sm90/sm90_gemv_skinny.cuh"

namespace tgemm::kernels {

constexpr int kGemvBulkMaxStages = 16;

struct GemvBulkPlan {
  int kc = 0;       // k elements of one unit (the last unit of a row may be shorter)
  int pitch = 0;    // elements between two rows' slices in a slot: kc rounded up to 8
  int kunits = 0;   // units per row tile: ceil(K / kc)
  int stages = 0;   // ring slots
  int tiles = 0;    // row tiles: ceil(N / CONSUMERS)
};

// Bytes of dynamic shared memory a launch with this plan needs.
constexpr std::int64_t gemv_bulk_smem_bytes(const GemvBulkPlan& plan, int consumers) {
  return 2LL * plan.pitch * consumers * plan.stages;
}

// The plan for an M x N x K problem: units of at most ring_bytes / (4 * consumers * 2) elements
// (whole multiples of 256), so that the ring holds at least 4 of them; the whole row when it
// fits; as many slots as the ring holds, at most kGemvBulkMaxStages.
constexpr GemvBulkPlan gemv_bulk_plan(std::int64_t n, std::int64_t k, int consumers, std::int64_t ring_bytes) {
  GemvBulkPlan plan;
  const std::int64_t kc_max = (ring_bytes / (4LL * consumers * 2)) / 256 * 256;
  const std::int64_t kc = k <= kc_max ? k : kc_max;
  plan.kc = static_cast<int>(kc);
  plan.pitch = static_cast<int>((kc + 7) / 8 * 8);
  plan.kunits = static_cast<int>((k + kc - 1) / kc);
  const std::int64_t slot = 2LL * plan.pitch * consumers;
  const std::int64_t stages = ring_bytes / slot;
  plan.stages = static_cast<int>(stages < kGemvBulkMaxStages ? stages : kGemvBulkMaxStages);
  plan.tiles = static_cast<int>((n + consumers - 1) / consumers);
  return plan;
}

namespace gemv_bulk_detail {

using skinny_detail::mbar_arrive;
using skinny_detail::mbar_arrive_expect;
using skinny_detail::mbar_init;
using skinny_detail::mbar_wait;

// Global -> shared copy of `bytes` (a multiple of 16, both addresses 16-byte aligned), completing
// as transaction bytes on the barrier.
__device__ __forceinline__ void bulk_copy(std::uint32_t dst, const void* src, std::uint32_t bytes, std::uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// The ring's geometry: `stages` slots of `rows` row slices,
// `row_bytes` apart; units of kc elements, `kunits` a row tile.
struct Ring {
  std::uint32_t base = 0;   // shared-memory address of slot 0
  std::uint32_t row_bytes = 0;
  int rows = 0;             // rows of a row tile (and of a slot)
  int kc = 0, kunits = 0, stages = 0;
  __device__ std::uint32_t slot(int s) const { return base + static_cast<std::uint32_t>(s) * row_bytes * rows; }
};

// Thread 0 initialises each slot's barriers ("full": the producer's one arrival and its bytes;
// "empty": one arrival per consumer thread - an arrival releases only its own thread's reads, so
// every lane that read the slot arrives, as in CUTLASS's pipelines); then the whole CTA waits.
__device__ __forceinline__ void init_ring_barriers(std::uint64_t* full, std::uint64_t* empty, int stages,
                                                   int consumer_threads) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(skinny_detail::smem_addr(&full[s]), 1);
      mbar_init(skinny_detail::smem_addr(&empty[s]), static_cast<std::uint32_t>(consumer_threads));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
}

// The producer warp: for each of this CTA's `units` (row tiles blockIdx.x, + gridDim.x, ...; kunits
// units each, in order), wait until the slot is free, announce its bytes, and copy every row's
// whole 16-byte chunks of the unit (lanes take rows r, r + 32, ...).
template <typename In>
__device__ __forceinline__ void produce(const SkinnyParams& p, const Ring ring, std::int64_t units,
                                        std::uint64_t* full, std::uint64_t* empty) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int grid = static_cast<int>(gridDim.x);
  const int k8 = p.k / 8 * 8;
  for (std::int64_t u = 0; u < units; ++u) {
    const int s = static_cast<int>(u % ring.stages);
    const std::uint32_t phase = static_cast<std::uint32_t>(u / ring.stages) & 1u;
    const int tile = static_cast<int>(blockIdx.x) + static_cast<int>(u / ring.kunits) * grid;
    const int k0 = static_cast<int>(u % ring.kunits) * ring.kc;
    const int kn = min(ring.kc, k8 - k0);  // whole chunks of this unit (<= 0: none)
    const std::int64_t row0 = static_cast<std::int64_t>(tile) * ring.rows;
    const int rows = static_cast<int>(min(static_cast<std::int64_t>(ring.rows), p.n - row0));
    const std::uint32_t bytes = kn > 0 ? 2u * static_cast<std::uint32_t>(kn) : 0u;
    mbar_wait(skinny_detail::smem_addr(&empty[s]), phase ^ 1u);  // the consumers released the slot
    if (lane == 0) mbar_arrive_expect(skinny_detail::smem_addr(&full[s]), bytes * static_cast<std::uint32_t>(rows));
    __syncwarp();
    if (bytes > 0) {
      for (int r = lane; r < rows; r += 32) {
        const In* src = static_cast<const In*>(p.w) + (row0 + r) * p.ldb + k0;
        bulk_copy(ring.slot(s) + static_cast<std::uint32_t>(r) * ring.row_bytes, src, bytes,
                  skinny_detail::smem_addr(&full[s]));
      }
    }
  }
}

}  // namespace gemv_bulk_detail

template <typename In, int M_MAX, int CONSUMERS>
__global__ void __launch_bounds__(32 * (CONSUMERS + 1), 1) sm90_gemv_bulk(const SkinnyParams p, const GemvBulkPlan plan) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched there: the host checks the loaded image's PTX arch first
#else
  static_assert(M_MAX >= 1 && M_MAX <= 8, "M_MAX: 1..8 tokens");
  static_assert(CONSUMERS >= 1 && CONSUMERS <= 31, "CONSUMERS: 1..31 warps, lane r of the producer copies row r");
  namespace sd = skinny_detail;
  namespace gd = skinny_gemv_detail;
  namespace bd = gemv_bulk_detail;
  extern __shared__ __align__(128) unsigned char gemv_bulk_ring[];
  __shared__ __align__(8) std::uint64_t full[kGemvBulkMaxStages];
  __shared__ __align__(8) std::uint64_t empty[kGemvBulkMaxStages];

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const bd::Ring rg{sd::smem_addr(gemv_bulk_ring), 2u * static_cast<std::uint32_t>(plan.pitch), CONSUMERS, plan.kc,
                    plan.kunits, plan.stages};
  bd::init_ring_barriers(full, empty, plan.stages, 32 * CONSUMERS);
  const int grid = static_cast<int>(gridDim.x);
  const int my_tiles = (plan.tiles - static_cast<int>(blockIdx.x) + grid - 1) / grid;
  const std::int64_t units = static_cast<std::int64_t>(my_tiles) * plan.kunits;
  const int k8 = p.k / 8 * 8;  // elements in whole 16-byte chunks
  if (warp == CONSUMERS) {
    bd::produce<In>(p, rg, units, full, empty);
    return;
  }

  // Consumer warp `warp`: row `warp` of each of this CTA's tiles.
  float acc[M_MAX];
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) acc[m] = 0.0f;
  const In* x0 = static_cast<const In*>(p.x);
  const In* x_rows[M_MAX];  // token m's row of x; tokens past M clamped to the last
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) x_rows[m] = x0 + static_cast<std::int64_t>(min(m, p.m - 1)) * p.lda;
  for (std::int64_t u = 0; u < units; ++u) {
    const int s = static_cast<int>(u % plan.stages);
    const std::uint32_t phase = static_cast<std::uint32_t>(u / plan.stages) & 1u;
    const int tile = static_cast<int>(blockIdx.x) + static_cast<int>(u / plan.kunits) * grid;
    const int ku = static_cast<int>(u % plan.kunits);
    const int k0 = ku * plan.kc;
    const int chunks = max(0, min(plan.kc, k8 - k0)) / 8;
    const std::int64_t row = static_cast<std::int64_t>(tile) * CONSUMERS + warp;
    bd::mbar_wait(sd::smem_addr(&full[s]), phase);
    if (row < p.n) {
      const std::uint32_t slice = rg.slot(s) + static_cast<std::uint32_t>(warp) * rg.row_bytes;
      // Batches of kBatch chunks a lane: every load of the batch (shared-memory weight, x through
      // L1) is issued before its arithmetic. Tokens past M read the last token's x (their sums
      // are never stored), so the loads need no per-token branch.
      constexpr int kBatch = 4;
      int c = lane;
      for (; c + 32 * (kBatch - 1) < chunks; c += 32 * kBatch) {
        uint4 wv[kBatch], xv[kBatch][M_MAX];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          wv[j] = sd::lds128(slice + 16u * static_cast<std::uint32_t>(c + 32 * j));
#pragma unroll
          for (int m = 0; m < M_MAX; ++m)
            xv[j][m] = sd::load_activation(x_rows[m] + k0 + 8 * (c + 32 * j));
        }
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
#pragma unroll
          for (int m = 0; m < M_MAX; ++m) acc[m] = gd::dot8<In>(wv[j], xv[j][m], acc[m]);
        }
      }
      for (; c < chunks; c += 32) {
        const uint4 wv = sd::lds128(slice + 16u * static_cast<std::uint32_t>(c));
#pragma unroll
        for (int m = 0; m < M_MAX; ++m) acc[m] = gd::dot8<In>(wv, sd::load_activation(x_rows[m] + k0 + 8 * c), acc[m]);
      }
    }
    bd::mbar_arrive(sd::smem_addr(&empty[s]));  // this lane is done with the slot
    if (ku == plan.kunits - 1) {
      if (row < p.n) {
        // The chunk that straddles K, from global memory, after every whole chunk.
        if (lane == 0 && k8 < p.k) {
          const uint4 wv = sd::load_partial_chunk(static_cast<const In*>(p.w) + row * p.ldb + k8, p.k - k8);
#pragma unroll
          for (int m = 0; m < M_MAX; ++m) acc[m] = gd::dot8<In>(wv, sd::load_partial_chunk(x_rows[m] + k8, p.k - k8), acc[m]);
        }
#pragma unroll
        for (int m = 0; m < M_MAX; ++m) {
#pragma unroll
          for (int off = 16; off > 0; off /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], off);
        }
        if (lane == 0) {
#pragma unroll
          for (int m = 0; m < M_MAX; ++m) sd::store_element(p, m, static_cast<int>(row), acc[m]);
        }
      }
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) acc[m] = 0.0f;
    }
  }
#endif
}

}  // namespace tgemm::kernels
