// Skinny version 6, "bulk MMA": out[M, N] = x[M, K] · w[N, K]^T (+ bias[N]) for M <= M_TILE
// (8, 16) on tensor cores, with the weight streamed into shared memory by bulk asynchronous
// copies through a ring of slots: version 5's data movement (sm90_gemv_bulk.cuh) with version 1's
// MMA fragments (sm90_gemm_skinny.cuh, mma_k32).
//
// Why (docs/perf-notes.md, skinny, "Version 6"): at M = 16 the shipped rows run at 1.22x of the
// streaming floor in geomean, and cuBLASLt's default is kept on the 48-112 MiB weights at
// 1.11-1.21x. At M = 16 a weight element costs 32 FLOPs, too many for CUDA cores at HBM rate,
// so the MMA stays; the ring takes the bytes in flight out of registers.
//
// Layout: CONSUMERS + 1 warps. A row tile is 16 * CONSUMERS consecutive rows; CTA b takes row
// tiles b, b + G, ... (persistent grid). A unit is one k-range of kc elements of one row tile.
// The producer (the last warp) waits until a slot is free, announces its bytes on the slot's
// "full" barrier and copies each row's slice with one bulk copy (lanes take rows r, r + 32).
// A slot's rows are `pitch` bytes apart, pitch = 64 (mod 128), so that the 8 rows a warp's
// 16-byte shared-memory loads touch fall into alternating halves of the banks (no conflicts).
// Consumer warp c owns rows 16c .. 16c + 15 of each tile: per 32-wide k-block, lane (g, t)
// loads 16 bytes of rows g and g + 8 at k 8t from the slot and the same 8 k of token g of each
// 8-token tile from x (through L1; tokens past M read the last token), four k-blocks' loads
// before their MMAs (mma_k32: two m16n8k16 per block and token tile; fp32 accumulators, one set
// for even and one for odd k-blocks, to halve the MMA chains). After a row tile's last unit the
// lane stores the sum of the two sets' fragments (store_fragment: bias, output dtype, guards
// for rows >= N and tokens >= M). The chunk that straddles K (K % 8 != 0) is read from global
// memory in the last unit, at its place in the k order. Results are bit-identical run to run.
//
// Preconditions (the host's can_implement checks them): an sm_90 image; 1 <= M <= M_TILE;
// N >= 1; 1 <= K <= 2^30; x and w 16-byte aligned with lda, ldb multiples of 8 elements (lda
// ignored when M = 1, ldb when N = 1); out, bias element-aligned; the plan from bulk_mma_plan;
// block 32 * (CONSUMERS + 1); dynamic shared memory bulk_mma_smem_bytes(plan, CONSUMERS).
//
// Test: tests/gpu/test_skinny.cu (every variant against the fp32 reference with tails, bias,
// every output dtype; the ring and persistent grid; the sanitizer subset).
#pragma once

#include <cstdint>

#include "kernels/sm90/sm90_gemm_skinny.cuh"
#include "kernels/sm90/sm90_gemv_bulk.cuh"

namespace tgemm::kernels {

struct BulkMmaPlan {
  int kc = 0;           // k elements of one unit (the last unit of a row may be shorter)
  int pitch_bytes = 0;  // between two rows' slices in a slot: 2 * kc rounded up to 128, plus 64
  int kunits = 0;       // units per row tile: ceil(K / kc)
  int stages = 0;       // ring slots
  int tiles = 0;        // row tiles: ceil(N / (16 * consumers))
};

constexpr std::int64_t bulk_mma_smem_bytes(const BulkMmaPlan& plan, int consumers) {
  return static_cast<std::int64_t>(plan.pitch_bytes) * 16 * consumers * plan.stages;
}

// Units of at most kc_max elements (whole multiples of 64), the most whose padded rows let the
// ring hold 4 slots; the whole row when it fits; as many slots as the ring holds, at most
// kGemvBulkMaxStages.
constexpr BulkMmaPlan bulk_mma_plan(std::int64_t n, std::int64_t k, int consumers, std::int64_t ring_bytes) {
  BulkMmaPlan plan;
  const std::int64_t rows = 16LL * consumers;
  const std::int64_t kc_max = ((ring_bytes / (4 * rows) - 64) / 2) / 64 * 64;
  const std::int64_t kc = k <= kc_max ? k : kc_max;
  plan.kc = static_cast<int>(kc);
  plan.pitch_bytes = static_cast<int>((2 * kc + 127) / 128 * 128 + 64);
  plan.kunits = static_cast<int>((k + kc - 1) / kc);
  const std::int64_t stages = ring_bytes / (rows * plan.pitch_bytes);
  plan.stages = static_cast<int>(stages < kGemvBulkMaxStages ? stages : kGemvBulkMaxStages);
  plan.tiles = static_cast<int>((n + rows - 1) / rows);
  return plan;
}

template <typename In, int M_TILE, int CONSUMERS>
__global__ void __launch_bounds__(32 * (CONSUMERS + 1), 2) sm90_gemm_bulk_mma(const SkinnyParams p, const BulkMmaPlan plan) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched there: the host checks the loaded image's PTX arch first
#else
  static_assert(M_TILE == 8 || M_TILE == 16, "M_TILE: one or two 8-token MMA tiles");
  static_assert(CONSUMERS >= 1 && CONSUMERS <= 8, "CONSUMERS: 1..8 warps of 16 rows");
  constexpr int NT = M_TILE / 8;
  constexpr int kRows = 16 * CONSUMERS;
  constexpr int kBatch = 4;  // k-blocks whose loads are issued before their MMAs
  namespace sd = skinny_detail;
  namespace bd = gemv_bulk_detail;
  extern __shared__ __align__(128) unsigned char bulk_mma_ring[];
  __shared__ __align__(8) std::uint64_t full[kGemvBulkMaxStages];
  __shared__ __align__(8) std::uint64_t empty[kGemvBulkMaxStages];

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const bd::Ring rg{sd::smem_addr(bulk_mma_ring), static_cast<std::uint32_t>(plan.pitch_bytes), kRows, plan.kc,
                    plan.kunits, plan.stages};
  const std::uint32_t pitch = rg.row_bytes;
  bd::init_ring_barriers(full, empty, plan.stages, CONSUMERS);
  const int grid = static_cast<int>(gridDim.x);
  const int my_tiles = (plan.tiles - static_cast<int>(blockIdx.x) + grid - 1) / grid;
  const std::int64_t units = static_cast<std::int64_t>(my_tiles) * plan.kunits;
  const int k8 = p.k / 8 * 8;  // elements in whole 16-byte chunks
  if (warp == CONSUMERS) {
    bd::produce<In>(p, rg, units, full, empty);
    return;
  }

  // Consumer warp `warp`: rows 16 * warp .. 16 * warp + 15 of each of this CTA's tiles.
  const int g = lane / 4, t = lane % 4;
  // Two accumulator sets, even and odd k-blocks of a batch, so that the MMA chains are half as
  // long; summed (even + odd, a fixed order) at the store.
  float acc[2][NT][4];
#pragma unroll
  for (int a = 0; a < 2; ++a)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[a][j][i] = 0.0f;
  const In* x_rows[NT];  // token j * 8 + g (clamped to the last), at this lane's chunk 8t
#pragma unroll
  for (int j = 0; j < NT; ++j)
    x_rows[j] = static_cast<const In*>(p.x) + static_cast<std::int64_t>(min(j * 8 + g, p.m - 1)) * p.lda + 8 * t;
  for (std::int64_t u = 0; u < units; ++u) {
    const int s = static_cast<int>(u % plan.stages);
    const std::uint32_t phase = static_cast<std::uint32_t>(u / plan.stages) & 1u;
    const int tile = static_cast<int>(blockIdx.x) + static_cast<int>(u / plan.kunits) * grid;
    const int ku = static_cast<int>(u % plan.kunits);
    const int k0 = ku * plan.kc;
    const int chunks = max(0, min(plan.kc, k8 - k0)) / 8;  // whole chunks in the slot
    const bool last = ku == plan.kunits - 1;
    const bool tail = last && k8 < p.k;                    // plus the straddling chunk
    const int blocks = (chunks + (tail ? 1 : 0) + 3) / 4;  // 32-wide k-blocks of this unit
    const std::int64_t row_lo = static_cast<std::int64_t>(tile) * kRows + 16 * warp + g;
    const std::uint32_t slice_lo =
        rg.slot(s) + static_cast<std::uint32_t>(16 * warp + g) * pitch + 16u * static_cast<std::uint32_t>(t);
    const std::uint32_t slice_hi = slice_lo + 8u * pitch;
    bd::mbar_wait(sd::smem_addr(&full[s]), phase);
    for (int b = 0; b < blocks; b += kBatch) {
      uint4 wl[kBatch], wh[kBatch], xv[kBatch][NT];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const int blk = b + i;
        const int c = 4 * blk + t;  // this lane's chunk of the unit
        if (c < chunks) {
          wl[i] = sd::lds128(slice_lo + 64u * static_cast<std::uint32_t>(blk));
          wh[i] = sd::lds128(slice_hi + 64u * static_cast<std::uint32_t>(blk));
#pragma unroll
          for (int j = 0; j < NT; ++j) xv[i][j] = sd::load_activation(x_rows[j] + k0 + 32 * blk);
        } else if (tail && c == chunks) {
          const int rest = p.k - k8;
          const In* w0 = static_cast<const In*>(p.w) + k8;
          const std::int64_t last_row = p.n - 1;
          wl[i] = sd::load_partial_chunk(w0 + min(row_lo, last_row) * p.ldb, rest);
          wh[i] = sd::load_partial_chunk(w0 + min(row_lo + 8, last_row) * p.ldb, rest);
#pragma unroll
          for (int j = 0; j < NT; ++j) xv[i][j] = sd::load_partial_chunk(x_rows[j] + k0 + 32 * blk, rest);
        } else {
          wl[i] = wh[i] = make_uint4(0, 0, 0, 0);
#pragma unroll
          for (int j = 0; j < NT; ++j) xv[i][j] = make_uint4(0, 0, 0, 0);
        }
      }
      __syncwarp();  // the loads above branch per lane at the tail; mma.sync.aligned needs the whole warp
#pragma unroll
      for (int i = 0; i < kBatch; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) sd::mma_k32<In>(acc[i & 1][j], wl[i], wh[i], xv[i][j]);
    }
    __syncwarp();
    if (lane == 0) bd::mbar_arrive(sd::smem_addr(&empty[s]));  // this warp is done with the slot
    if (last) {
      if (row_lo < p.n) {
#pragma unroll
        for (int j = 0; j < NT; ++j)
          sd::store_fragment(p, static_cast<int>(row_lo), j * 8 + 2 * t, acc[0][j][0] + acc[1][j][0],
                             acc[0][j][1] + acc[1][j][1], acc[0][j][2] + acc[1][j][2], acc[0][j][3] + acc[1][j][3]);
      }
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[a][j][i] = 0.0f;
    }
  }
#endif
}

}  // namespace tgemm::kernels
