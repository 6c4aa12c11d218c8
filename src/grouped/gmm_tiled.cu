// Grouped GEMM, tiled kernels on WMMA tensor cores (bf16/fp16 operands, fp32 accumulation):
//   out[rows of g] = lhs[rows of g] @ rhs[g] (+ bias[g]), rows past the groups zeroed.
// Two launches, with no host synchronisation, so a captured graph follows group_sizes that change
// between replays:
//  1. gmm_offsets_kernel (one block): scans group_sizes (negative -> 0) into row offsets clamped
//     to M, and the tiles of BLOCK_M rows each group needs. The rows past the last group form
//     segment G, whose tiles write zeros. row_off[G + 1] = M. (launch_group_offsets: tgmm and
//     the gathered grouped_gemm start with the same scan.)
//  2. gmm_tiled_kernel: grid.x walks the tiles of every segment (ceil(M / BLOCK_M) + G + 1 bounds
//     their count, since each segment adds at most one partial tile), grid.y the column tiles. A
//     CTA finds its segment by binary search of the tile offsets, so a tile never mixes groups.
// Preconditions: a validated GmmProblem (include/tgemm/gmm.h), M > 0, N > 0.
// Tested by tests/gpu/test_gmm.cpp; benched by bench/torch_bench.py --gmm.
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "grouped/gmm_launch.h"
#include "grouped/wmma_tile.cuh"

namespace tgemm {
namespace {

using namespace grouped;

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

template <typename In, typename Out, typename Bias, bool kTransposeRhs, bool kVec16>
__global__ void __launch_bounds__(kThreads) gmm_tiled_kernel(TiledParams p) {
  const std::int64_t tile = blockIdx.x;
  if (tile >= p.tile_off[p.groups + 1]) return;
  std::int64_t seg = 0, row0 = 0;
  int rows = 0;
  find_segment_tile(p.row_off, p.tile_off, p.groups, tile, seg, row0, rows);
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.y) * BLOCK_N;
  const int cols = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_N), p.n - col0));

  __shared__ TileSmem<In> s;
  AccFrag acc[2][2];
  zero_acc(acc);
  if (seg < p.groups) {  // segment G (rows past the groups) keeps its zeros
    const auto* lhs = static_cast<const In*>(p.lhs) + row0 * p.lda;
    const auto* rhs = static_cast<const In*>(p.rhs) + seg * p.rhs_group_stride;
    const auto row = [&](int r) { return lhs + r * p.lda; };
    mma_full_k<In, kTransposeRhs, kVec16>(s, acc, row, rows, rhs, p.rhs_row_stride, col0, cols, p.k);
  }
  store_acc(s, acc);
  __syncthreads();

  auto* out = static_cast<Out*>(p.out);
  const auto* bias = static_cast<const Bias*>(p.bias);
  for_each_output(s, rows, cols, [&](int r, int c, float v) {
    // Rows past the groups (segment G) are zeros, without bias.
    if (bias != nullptr && seg < p.groups) v += to_float(bias[seg * p.bias_stride + col0 + c]);
    out[(row0 + r) * p.ldo + col0 + c] = from_float<Out>(v);
  });
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

void launch_group_offsets(const std::int32_t* sizes, std::int64_t groups, std::int64_t m, std::int64_t* row_off,
                          std::int64_t* tile_off, Stream stream, const char* where) {
  gmm_offsets_kernel<<<1, kScanThreads, 0, stream>>>(sizes, groups, m, row_off, tile_off);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

std::size_t gmm_workspace_bytes(const GmmProblem& p) {
  return 2 * static_cast<std::size_t>(p.groups + 2) * sizeof(std::int64_t);
}

void launch_gmm_tiled(const GmmProblem& p, const GmmArgs& args, void* workspace, Stream stream) {
  auto* row_off = static_cast<std::int64_t*>(workspace);
  std::int64_t* tile_off = row_off + p.groups + 2;
  launch_group_offsets(args.group_sizes, p.groups, p.m, row_off, tile_off, stream, "gmm: gmm_offsets_kernel");

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
