// Grouped GEMM, tiled kernels on WMMA tensor cores (bf16/fp16 operands, fp32 accumulation):
//   out[rows of g] = lhs[rows of g] @ rhs[g] (+ bias[g]), rows past the groups zeroed.
// Two launches, with no host synchronisation, so a captured graph follows group_sizes that change
// between replays:
//  1. gmm_offsets_kernel (one block): scans group_sizes (negative -> 0) into row offsets clamped
//     to M, and the tiles of BLOCK_M rows each group needs. The rows past the last group form
//     segment G, whose tiles write zeros. row_off[G + 1] = M.
//  2. gmm_tiled_kernel: grid.x walks the tiles of every segment (ceil(M / BLOCK_M) + G + 1 bounds
//     their count, since each segment adds at most one partial tile), grid.y the column tiles. A
//     CTA finds its segment by binary search of the tile offsets, so a tile never mixes groups.
// Preconditions: a validated GmmProblem (include/tgemm/gmm.h), M > 0, N > 0.
// Tested by tests/gpu/test_gmm.cpp; benched by bench/torch_bench.py --gmm.
#include <mma.h>
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "grouped/gmm_launch.h"
#include "kernels/common/numeric.cuh"

namespace tgemm {
namespace {

constexpr int BLOCK_M = 64;
constexpr int BLOCK_N = 64;
constexpr int BLOCK_K = 32;
constexpr int kThreads = 128;      // 4 warps, each a 32 x 32 quarter of the tile (2 x 2 WMMA 16x16x16 fragments)
constexpr int kScanThreads = 256;  // one pass for the usual G <= 256; larger G loop in chunks

// row_off[0..G+1], tile_off[0..G+1] (int64): segment s holds rows [row_off[s], row_off[s+1]) and
// tiles [tile_off[s], tile_off[s+1]).
__global__ void __launch_bounds__(kScanThreads)
    gmm_offsets_kernel(const std::int32_t* __restrict__ sizes, std::int64_t groups, std::int64_t m,
                       std::int64_t* __restrict__ row_off, std::int64_t* __restrict__ tile_off) {
  using Scan = cub::BlockScan<long long, kScanThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ long long carry_rows, carry_tiles;
  if (threadIdx.x == 0) {
    carry_rows = 0;
    carry_tiles = 0;
  }
  __syncthreads();
  for (std::int64_t base = 0; base < groups; base += kScanThreads) {
    const std::int64_t g = base + threadIdx.x;
    const long long size = g < groups ? max(sizes[g], 0) : 0;
    long long rows_before = 0, chunk_rows = 0;
    Scan(scan_storage).ExclusiveSum(size, rows_before, chunk_rows);
    __syncthreads();
    // Offsets are clamped to M one by one: a group crossing row M ends there, later ones are empty.
    const long long begin = min(carry_rows + rows_before, static_cast<long long>(m));
    const long long end = min(carry_rows + rows_before + size, static_cast<long long>(m));
    const long long tiles = (end - begin + BLOCK_M - 1) / BLOCK_M;
    long long tiles_before = 0, chunk_tiles = 0;
    Scan(scan_storage).ExclusiveSum(tiles, tiles_before, chunk_tiles);
    if (g < groups) {
      row_off[g] = begin;
      tile_off[g] = carry_tiles + tiles_before;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      carry_rows += chunk_rows;
      carry_tiles += chunk_tiles;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const long long used = min(carry_rows, static_cast<long long>(m));
    row_off[groups] = used;
    row_off[groups + 1] = m;
    tile_off[groups] = carry_tiles;
    tile_off[groups + 1] = carry_tiles + (m - used + BLOCK_M - 1) / BLOCK_M;
  }
}

struct TiledParams {
  const void* lhs;
  const void* rhs;
  const void* bias;
  void* out;
  const std::int64_t* row_off;
  const std::int64_t* tile_off;
  std::int64_t n, k, groups;
  std::int64_t lda, ldo, rhs_group_stride, rhs_row_stride, bias_stride;
};

// The CTA's segment and its rows: the last segment s with tile_off[s] <= tile (empty groups
// repeat an offset and are skipped), and the tile's first row and row count in it.
__device__ __forceinline__ void find_tile(const TiledParams& p, std::int64_t tile, std::int64_t& seg,
                                          std::int64_t& row0, int& rows) {
  std::int64_t lo = 0, hi = p.groups + 1;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (p.tile_off[mid] <= tile)
      lo = mid;
    else
      hi = mid - 1;
  }
  seg = lo;
  row0 = p.row_off[seg] + (tile - p.tile_off[seg]) * BLOCK_M;
  rows = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_M), p.row_off[seg + 1] - row0));
}

// Copies the (BLOCK_M, BLOCK_K) slice of lhs at (row0, k0) and the (BLOCK_K, BLOCK_N) slice of
// rhs[g] at (k0, col0) to shared memory, zeros outside the group's rows, N and K. kVec16: 8
// elements per 16-byte load along the contiguous dimension (the host checked that K, the row
// strides and the base addresses allow it, and N too for [G, K, N]; then a chunk of 8 starting
// inside the bounds ends inside them).
template <typename In, bool kTransposeRhs, bool kVec16>
__device__ __forceinline__ void stage_tiles(const TiledParams& p, const In* lhs, const In* rhs, std::int64_t row0,
                                            int rows, std::int64_t col0, int cols, std::int64_t k0,
                                            In (*a_s)[BLOCK_K + 8], In (*b_s)[BLOCK_N + 8]) {
  if constexpr (kVec16) {
    constexpr int kChunksK = BLOCK_K / 8, kChunksN = BLOCK_N / 8;
    for (int i = threadIdx.x; i < BLOCK_M * kChunksK; i += kThreads) {
      const int r = i / kChunksK, kk = (i % kChunksK) * 8;
      const std::int64_t kg = k0 + kk;
      uint4 v = make_uint4(0, 0, 0, 0);  // all-zero bits: +0 in bf16 and fp16
      if (r < rows && kg < p.k) v = *reinterpret_cast<const uint4*>(lhs + (row0 + r) * p.lda + kg);
      *reinterpret_cast<uint4*>(&a_s[r][kk]) = v;
    }
    if constexpr (kTransposeRhs) {
      for (int i = threadIdx.x; i < BLOCK_N * kChunksK; i += kThreads) {
        const int c = i / kChunksK, kk = (i % kChunksK) * 8;
        const std::int64_t kg = k0 + kk;
        alignas(16) In e[8];
        *reinterpret_cast<uint4*>(e) = make_uint4(0, 0, 0, 0);
        if (c < cols && kg < p.k)
          *reinterpret_cast<uint4*>(e) = *reinterpret_cast<const uint4*>(rhs + (col0 + c) * p.rhs_row_stride + kg);
#pragma unroll
        for (int t = 0; t < 8; ++t) b_s[kk + t][c] = e[t];
      }
    } else {
      for (int i = threadIdx.x; i < BLOCK_K * kChunksN; i += kThreads) {
        const int kk = i / kChunksN, c = (i % kChunksN) * 8;
        const std::int64_t kg = k0 + kk;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (c < cols && kg < p.k) v = *reinterpret_cast<const uint4*>(rhs + kg * p.rhs_row_stride + col0 + c);
        *reinterpret_cast<uint4*>(&b_s[kk][c]) = v;
      }
    }
  } else {
    const In zero = from_float<In>(0.0f);
    for (int i = threadIdx.x; i < BLOCK_M * BLOCK_K; i += kThreads) {
      const int r = i / BLOCK_K, kk = i % BLOCK_K;  // consecutive threads along K: lhs rows are contiguous
      const std::int64_t kg = k0 + kk;
      a_s[r][kk] = (r < rows && kg < p.k) ? lhs[(row0 + r) * p.lda + kg] : zero;
    }
    for (int i = threadIdx.x; i < BLOCK_N * BLOCK_K; i += kThreads) {
      // Consecutive threads along rhs's contiguous dimension: N for [G, K, N], K for [G, N, K].
      const int c = kTransposeRhs ? i / BLOCK_K : i % BLOCK_N;
      const int kk = kTransposeRhs ? i % BLOCK_K : i / BLOCK_N;
      const std::int64_t kg = k0 + kk;
      In v = zero;
      if (c < cols && kg < p.k) {
        v = kTransposeRhs ? rhs[(col0 + c) * p.rhs_row_stride + kg] : rhs[kg * p.rhs_row_stride + col0 + c];
      }
      b_s[kk][c] = v;
    }
  }
}

template <typename In, typename Out, typename Bias, bool kTransposeRhs, bool kVec16>
__global__ void __launch_bounds__(kThreads) gmm_tiled_kernel(TiledParams p) {
  using namespace nvcuda;
  const std::int64_t tile = blockIdx.x;
  if (tile >= p.tile_off[p.groups + 1]) return;
  std::int64_t seg = 0, row0 = 0;
  int rows = 0;
  find_tile(p, tile, seg, row0, rows);
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.y) * BLOCK_N;
  const int cols = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_N), p.n - col0));
  const int warp = threadIdx.x / 32;
  const int warp_row = (warp / 2) * 32, warp_col = (warp % 2) * 32;  // a 32 x 32 quarter per warp

  // WMMA reads fragments from 32-byte-aligned addresses with a leading dimension of a multiple of
  // 16 bytes: the +8 (16-bit) and +4 (fp32) pads keep both and break the power-of-two row stride.
  __shared__ __align__(128) In a_s[BLOCK_M][BLOCK_K + 8];     // (BLOCK_M, BLOCK_K)
  __shared__ __align__(128) In b_s[BLOCK_K][BLOCK_N + 8];     // (BLOCK_K, BLOCK_N)
  __shared__ __align__(128) float c_s[BLOCK_M][BLOCK_N + 4];  // (BLOCK_M, BLOCK_N)
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  if (seg < p.groups) {  // segment G (rows past the groups) keeps its zeros
    const auto* lhs = static_cast<const In*>(p.lhs);
    const auto* rhs = static_cast<const In*>(p.rhs) + seg * p.rhs_group_stride;
    for (std::int64_t k0 = 0; k0 < p.k; k0 += BLOCK_K) {
      stage_tiles<In, kTransposeRhs, kVec16>(p, lhs, rhs, row0, rows, col0, cols, k0, a_s, b_s);
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < BLOCK_K; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, In, wmma::row_major> a_frag[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, In, wmma::row_major> b_frag[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a_frag[i], &a_s[warp_row + 16 * i][kk], BLOCK_K + 8);
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b_frag[j], &b_s[kk][warp_col + 16 * j], BLOCK_N + 8);
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
      }
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&c_s[warp_row + 16 * i][warp_col + 16 * j], acc[i][j], BLOCK_N + 4, wmma::mem_row_major);
  __syncthreads();

  auto* out = static_cast<Out*>(p.out);
  const auto* bias = static_cast<const Bias*>(p.bias);
  for (int i = threadIdx.x; i < BLOCK_M * BLOCK_N; i += kThreads) {
    const int r = i / BLOCK_N, c = i % BLOCK_N;
    if (r >= rows || c >= cols) continue;
    float v = c_s[r][c];
    // Rows past the groups (segment G) are zeros, without bias.
    if (bias != nullptr && seg < p.groups) v += to_float(bias[seg * p.bias_stride + col0 + c]);
    out[(row0 + r) * p.ldo + col0 + c] = from_float<Out>(v);
  }
}

template <typename In, typename Out, typename Bias, bool kTransposeRhs>
void launch_layout(const TiledParams& tp, bool vec16, dim3 grid, Stream stream) {
  if (vec16) {
    gmm_tiled_kernel<In, Out, Bias, kTransposeRhs, true><<<grid, kThreads, 0, stream>>>(tp);
  } else {
    gmm_tiled_kernel<In, Out, Bias, kTransposeRhs, false><<<grid, kThreads, 0, stream>>>(tp);
  }
}

template <typename In, typename Out, typename Bias>
void launch_typed(const TiledParams& tp, bool transpose_rhs, bool vec16, dim3 grid, Stream stream) {
  if (transpose_rhs) {
    launch_layout<In, Out, Bias, true>(tp, vec16, grid, stream);
  } else {
    launch_layout<In, Out, Bias, false>(tp, vec16, grid, stream);
  }
}

// Whether every lhs and rhs chunk of 8 elements along K (and along N for [G, K, N]) starting at a
// multiple of 8 is one aligned 16-byte load.
bool vectorizable(const GmmProblem& p, const GmmArgs& args) {
  auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  return p.k % 8 == 0 && p.lda % 8 == 0 && p.rhs_row_stride % 8 == 0 && p.rhs_group_stride % 8 == 0 &&
         (p.transpose_rhs || p.n % 8 == 0) && aligned(args.lhs) && aligned(args.rhs);
}

template <typename In, typename Out>
void launch_out(const GmmProblem& p, const GmmArgs& args, const TiledParams& tp, dim3 grid, Stream stream) {
  if (p.has_bias && p.bias_type == DType::kFloat32) {
    launch_typed<In, Out, float>(tp, p.transpose_rhs, vectorizable(p, args), grid, stream);
  } else {
    launch_typed<In, Out, In>(tp, p.transpose_rhs, vectorizable(p, args), grid, stream);
  }
}

template <typename In>
void launch_in(const GmmProblem& p, const GmmArgs& args, const TiledParams& tp, dim3 grid, Stream stream) {
  if (p.out_type == DType::kFloat32) {
    launch_out<In, float>(p, args, tp, grid, stream);
  } else {
    launch_out<In, In>(p, args, tp, grid, stream);
  }
}

}  // namespace

std::size_t gmm_workspace_bytes(const GmmProblem& p) {
  return 2 * static_cast<std::size_t>(p.groups + 2) * sizeof(std::int64_t);
}

void launch_gmm_tiled(const GmmProblem& p, const GmmArgs& args, void* workspace, Stream stream) {
  auto* row_off = static_cast<std::int64_t*>(workspace);
  std::int64_t* tile_off = row_off + p.groups + 2;
  gmm_offsets_kernel<<<1, kScanThreads, 0, stream>>>(args.group_sizes, p.groups, p.m, row_off, tile_off);
  TGEMM_CUDA_CHECK_LAUNCH("gmm: gmm_offsets_kernel");

  TiledParams tp{args.lhs, args.rhs, args.bias, args.out,           row_off,          tile_off,     p.n, p.k,
                 p.groups, p.lda,    p.ldo,     p.rhs_group_stride, p.rhs_row_stride, p.bias_stride};
  const std::int64_t tiles = (p.m + BLOCK_M - 1) / BLOCK_M + p.groups + 1;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>((p.n + BLOCK_N - 1) / BLOCK_N));
  if (p.in_type == DType::kFloat16) {
    launch_in<fp16>(p, args, tp, grid, stream);
  } else {
    launch_in<bf16>(p, args, tp, grid, stream);
  }
  TGEMM_CUDA_CHECK_LAUNCH("gmm: gmm_tiled_kernel");
}

}  // namespace tgemm
