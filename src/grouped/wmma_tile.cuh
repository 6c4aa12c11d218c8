// Building blocks of the grouped kernels (gmm, tgmm, gathered grouped_gemm, masked): one 64x64
// output tile on WMMA tensor cores, bf16/fp16 operands staged through shared memory, fp32
// accumulation; 4 warps, each a 32 x 32 quarter of the tile (2 x 2 WMMA 16x16x16 fragments).
// A kernel composes them: stage the A and B slices of one BLOCK_K step (stage_a_rows or
// stage_a_cols, stage_b), mma_step, and after the K loop store_acc into smem for its epilogue.
// Every staging function zero-fills what lies outside the rows, columns and reduction range it is
// given, so a partial tile multiplies zeros and never reads out of bounds.
// Device code only; included by src/grouped/*.cu.
#pragma once

#include <mma.h>

#include <cstdint>

#include "kernels/common/numeric.cuh"

namespace tgemm::grouped {

constexpr int BLOCK_M = 64;
constexpr int BLOCK_N = 64;
constexpr int BLOCK_K = 32;
constexpr int kThreads = 128;  // 4 warps
// WMMA reads fragments from 32-byte-aligned addresses with a leading dimension of a multiple of
// 16 bytes: the +8 (16-bit) and +4 (fp32) pads keep both and break the power-of-two row stride.
constexpr int kPadIn = 8;
constexpr int kPadAcc = 4;

template <typename In>
struct TileSmem {
  alignas(128) In a[BLOCK_M][BLOCK_K + kPadIn];      // (BLOCK_M, BLOCK_K)
  alignas(128) In b[BLOCK_K][BLOCK_N + kPadIn];      // (BLOCK_K, BLOCK_N)
  alignas(128) float c[BLOCK_M][BLOCK_N + kPadAcc];  // (BLOCK_M, BLOCK_N)
};

using AccFrag = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;

__device__ __forceinline__ void zero_acc(AccFrag (&acc)[2][2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) nvcuda::wmma::fill_fragment(acc[i][j], 0.0f);
}

// The warp's 32 x 32 quarter: rows (warp / 2) * 32, columns (warp % 2) * 32.
__device__ __forceinline__ int warp_row() { return (threadIdx.x / 32 / 2) * 32; }
__device__ __forceinline__ int warp_col() { return (threadIdx.x / 32 % 2) * 32; }

// acc += a (BLOCK_M, BLOCK_K) @ b (BLOCK_K, BLOCK_N) from shared memory, in 16-wide K steps.
template <typename In>
__device__ __forceinline__ void mma_step(const TileSmem<In>& s, AccFrag (&acc)[2][2]) {
  using namespace nvcuda;
  const int wr = warp_row(), wc = warp_col();
#pragma unroll
  for (int kk = 0; kk < BLOCK_K; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, In, wmma::row_major> a_frag[2];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, In, wmma::row_major> b_frag[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a_frag[i], &s.a[wr + 16 * i][kk], BLOCK_K + kPadIn);
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b_frag[j], &s.b[kk][wc + 16 * j], BLOCK_N + kPadIn);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
  }
}

// The accumulators into s.c (then __syncthreads before reading s.c).
template <typename In>
__device__ __forceinline__ void store_acc(TileSmem<In>& s, const AccFrag (&acc)[2][2]) {
  const int wr = warp_row(), wc = warp_col();
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      nvcuda::wmma::store_matrix_sync(&s.c[wr + 16 * i][wc + 16 * j], acc[i][j], BLOCK_N + kPadAcc,
                                      nvcuda::wmma::mem_row_major);
}

// Keeps the elements k0 + t (t < 8) of a loaded chunk that lie in [k_lo, k_hi), zeroing the rest.
template <typename In>
__device__ __forceinline__ uint4 mask_chunk(uint4 v, std::int64_t k0, std::int64_t k_lo, std::int64_t k_hi) {
  alignas(16) In e[8];
  *reinterpret_cast<uint4*>(e) = v;
  const In zero = from_float<In>(0.0f);
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    if (k0 + t < k_lo || k0 + t >= k_hi) e[t] = zero;
  }
  return *reinterpret_cast<const uint4*>(e);
}

// A (BLOCK_M, BLOCK_K) at reduction index k0 from rows that are contiguous along the reduction:
// element (r, k) at row(r)[k] for r < rows and k in [k_lo, k_hi), zero elsewhere. kVec16: 8
// elements per 16-byte load (the host checked that the rows' addresses are 16-byte aligned at
// every multiple of 8 and, for kRangeMask = false, that a chunk starting below k_hi ends at or
// below it; kRangeMask: the chunk is read whole (it lies inside the row) and its elements outside
// [k_lo, k_hi) are zeroed, for k0 a multiple of 8).
template <typename In, bool kVec16, bool kRangeMask, typename RowPtr>
__device__ __forceinline__ void stage_a_rows(TileSmem<In>& s, RowPtr row, int rows, std::int64_t k0, std::int64_t k_lo,
                                             std::int64_t k_hi) {
  if constexpr (kVec16) {
    constexpr int kChunksK = BLOCK_K / 8;
    for (int i = threadIdx.x; i < BLOCK_M * kChunksK; i += kThreads) {
      const int r = i / kChunksK, kk = (i % kChunksK) * 8;
      const std::int64_t kg = k0 + kk;
      uint4 v = make_uint4(0, 0, 0, 0);  // all-zero bits: +0 in bf16 and fp16
      if (r < rows && kg < k_hi && kg + 8 > k_lo) {
        v = *reinterpret_cast<const uint4*>(row(r) + kg);
        if constexpr (kRangeMask) v = mask_chunk<In>(v, kg, k_lo, k_hi);
      }
      *reinterpret_cast<uint4*>(&s.a[r][kk]) = v;
    }
  } else {
    const In zero = from_float<In>(0.0f);
    for (int i = threadIdx.x; i < BLOCK_M * BLOCK_K; i += kThreads) {
      const int r = i / BLOCK_K, kk = i % BLOCK_K;  // consecutive threads along K: the rows are contiguous
      const std::int64_t kg = k0 + kk;
      s.a[r][kk] = (r < rows && kg >= k_lo && kg < k_hi) ? row(r)[kg] : zero;
    }
  }
}

// A (BLOCK_M, BLOCK_K) at reduction index k0 from a matrix stored reduction-major, element (r, k)
// at a[k * lda + r] (r < rows, k in [k_lo, k_hi), zero elsewhere): consecutive r are contiguous.
// kVec16: 8 rows per 16-byte load (the host checked lda, the row count and the address).
template <typename In, bool kVec16>
__device__ __forceinline__ void stage_a_cols(TileSmem<In>& s, const In* a, std::int64_t lda, int rows, std::int64_t k0,
                                             std::int64_t k_lo, std::int64_t k_hi) {
  if constexpr (kVec16) {
    constexpr int kChunksM = BLOCK_M / 8;
    for (int i = threadIdx.x; i < BLOCK_K * kChunksM; i += kThreads) {
      const int kk = i / kChunksM, r = (i % kChunksM) * 8;
      const std::int64_t kg = k0 + kk;
      alignas(16) In e[8];
      *reinterpret_cast<uint4*>(e) = make_uint4(0, 0, 0, 0);
      if (r < rows && kg >= k_lo && kg < k_hi)
        *reinterpret_cast<uint4*>(e) = *reinterpret_cast<const uint4*>(a + kg * lda + r);
#pragma unroll
      for (int t = 0; t < 8; ++t) s.a[r + t][kk] = e[t];
    }
  } else {
    const In zero = from_float<In>(0.0f);
    for (int i = threadIdx.x; i < BLOCK_M * BLOCK_K; i += kThreads) {
      const int r = i % BLOCK_M, kk = i / BLOCK_M;  // consecutive threads along the contiguous rows
      const std::int64_t kg = k0 + kk;
      s.a[r][kk] = (r < rows && kg >= k_lo && kg < k_hi) ? a[kg * lda + r] : zero;
    }
  }
}

// B (BLOCK_K, BLOCK_N) at reduction index k0, columns col0.., of one group's matrix b: [K, N]
// (element (k, c) at b[k * ldb + c]) or, kTransposeB, [N, K] (at b[c * ldb + k]); zero outside
// c < cols (relative to col0) and k in [k_lo, k_hi). kVec16: 8 elements per 16-byte load along the
// contiguous dimension (the host checked alignment, and that a chunk starting inside the bounds
// ends inside them; with kTransposeB, k_lo must be a multiple of 8).
template <typename In, bool kTransposeB, bool kVec16>
__device__ __forceinline__ void stage_b(TileSmem<In>& s, const In* b, std::int64_t ldb, std::int64_t col0, int cols,
                                        std::int64_t k0, std::int64_t k_lo, std::int64_t k_hi) {
  if constexpr (kVec16) {
    constexpr int kChunksK = BLOCK_K / 8, kChunksN = BLOCK_N / 8;
    if constexpr (kTransposeB) {
      for (int i = threadIdx.x; i < BLOCK_N * kChunksK; i += kThreads) {
        const int c = i / kChunksK, kk = (i % kChunksK) * 8;
        const std::int64_t kg = k0 + kk;
        alignas(16) In e[8];
        *reinterpret_cast<uint4*>(e) = make_uint4(0, 0, 0, 0);
        if (c < cols && kg >= k_lo && kg < k_hi)
          *reinterpret_cast<uint4*>(e) = *reinterpret_cast<const uint4*>(b + (col0 + c) * ldb + kg);
#pragma unroll
        for (int t = 0; t < 8; ++t) s.b[kk + t][c] = e[t];
      }
    } else {
      for (int i = threadIdx.x; i < BLOCK_K * kChunksN; i += kThreads) {
        const int kk = i / kChunksN, c = (i % kChunksN) * 8;
        const std::int64_t kg = k0 + kk;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (c < cols && kg >= k_lo && kg < k_hi) v = *reinterpret_cast<const uint4*>(b + kg * ldb + col0 + c);
        *reinterpret_cast<uint4*>(&s.b[kk][c]) = v;
      }
    }
  } else {
    const In zero = from_float<In>(0.0f);
    for (int i = threadIdx.x; i < BLOCK_N * BLOCK_K; i += kThreads) {
      // Consecutive threads along b's contiguous dimension: N for [K, N], K for [N, K].
      const int c = kTransposeB ? i / BLOCK_K : i % BLOCK_N;
      const int kk = kTransposeB ? i % BLOCK_K : i / BLOCK_N;
      const std::int64_t kg = k0 + kk;
      In v = zero;
      if (c < cols && kg >= k_lo && kg < k_hi) v = kTransposeB ? b[(col0 + c) * ldb + kg] : b[kg * ldb + col0 + c];
      s.b[kk][c] = v;
    }
  }
}

// The segment of row tile `tile` in the offsets of launch_group_offsets (src/grouped/gmm_launch.h):
// the last segment s with tile_off[s] <= tile (empty groups repeat an offset and are skipped), the
// tile's first row and its row count in that segment.
__device__ __forceinline__ void find_segment_tile(const std::int64_t* row_off, const std::int64_t* tile_off,
                                                  std::int64_t groups, std::int64_t tile, std::int64_t& seg,
                                                  std::int64_t& row0, int& rows) {
  std::int64_t lo = 0, hi = groups + 1;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (tile_off[mid] <= tile)
      lo = mid;
    else
      hi = mid - 1;
  }
  seg = lo;
  row0 = row_off[seg] + (tile - tile_off[seg]) * BLOCK_M;
  rows = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_M), row_off[seg + 1] - row0));
}

// acc += A (rows row(r), r < rows, contiguous along K) @ B (b, [K, N] or with kTransposeB [N, K],
// columns col0 .. col0 + cols) over the whole reduction [0, k): the K loop of gmm, the gathered
// grouped_gemm and the masked GEMM.
template <typename In, bool kTransposeB, bool kVec16, typename RowPtr>
__device__ __forceinline__ void mma_full_k(TileSmem<In>& s, AccFrag (&acc)[2][2], RowPtr row, int rows, const In* b,
                                           std::int64_t ldb, std::int64_t col0, int cols, std::int64_t k) {
  for (std::int64_t k0 = 0; k0 < k; k0 += BLOCK_K) {
    stage_a_rows<In, kVec16, false>(s, row, rows, k0, 0, k);
    stage_b<In, kTransposeB, kVec16>(s, b, ldb, col0, cols, k0, 0, k);
    __syncthreads();
    mma_step(s, acc);
    __syncthreads();
  }
}

// f(r, c, v) for every element (r < rows, c < cols) of the tile stored in s.c, after store_acc
// and a __syncthreads; consecutive threads take consecutive columns (coalesced row stores).
template <typename In, typename F>
__device__ __forceinline__ void for_each_output(const TileSmem<In>& s, int rows, int cols, F&& f) {
  for (int i = threadIdx.x; i < BLOCK_M * BLOCK_N; i += kThreads) {
    const int r = i / BLOCK_N, c = i % BLOCK_N;
    if (r < rows && c < cols) f(r, c, s.c[r][c]);
  }
}

// Output element v stored as float or as the operands' type (out_fp32 chosen per call).
template <typename In>
__device__ __forceinline__ void store_out(void* out, std::int64_t i, bool out_fp32, float v) {
  if (out_fp32) {
    static_cast<float*>(out)[i] = v;
  } else {
    static_cast<In*>(out)[i] = from_float<In>(v);
  }
}

template <typename In>
__device__ __forceinline__ float load_out(const void* out, std::int64_t i, bool out_fp32) {
  return out_fp32 ? static_cast<const float*>(out)[i] : to_float(static_cast<const In*>(out)[i]);
}

}  // namespace tgemm::grouped
