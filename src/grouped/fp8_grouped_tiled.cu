// FP8 block-scaled grouped GEMMs (DeepGEMM's contiguous and masked layouts), tiled on WMMA tensor
// cores: include/tgemm/grouped_fp8.h. The reference-quality path: correct for every validated
// input, simple rather than fast.
//   out[row, n] = sum_b (sum_{k in block b} x[row, k] w[g, n, k]) * x_scale[row, b] * w_scale[g, n / 128, b]
// A CTA owns a 64x64 output tile. Each 128-wide K block is multiplied on bf16 WMMA fragments with
// fp32 accumulation (an e4m3 value is exact in bf16: 3 mantissa bits, exponents 2^-9 .. 2^8, so
// the block sum is the fp32 sum of exact products), stored to shared memory, scaled by the row's
// x scale and the tile's one w scale (BLOCK_N = 64 divides the 128-wide weight block) and added to
// per-thread fp32 sums; one rounding to bf16 at the end.
// Contiguous: grid.x covers ceil(M / 64) row tiles; a tile runs one pass per distinct group among
// its rows' m_indices (found in increasing order by a shared-memory atomicMin), each pass masking
// the other rows to zero and writing only its own; rows with an index outside [0, G) are written
// with zeros; with a run_if flag (the CUTLASS path's "unsorted", src/grouped/fp8_cutlass.h) every CTA
// returns at once where the flag is 0. Masked: grid.x covers G x ceil(max_m / 64) tiles; a tile past masked_m returns.
// Preconditions: a validated Fp8GroupedCall with rows > 0 and n > 0.
// Tested by tests/gpu/test_grouped_fp8.cpp and tests/python/test_grouped_fp8.py; benched by
// bench/torch_bench.py --fp8-contiguous and --fp8-masked.
#include <cuda_fp8.h>

#include <climits>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "grouped/fp8_grouped_launch.h"
#include "grouped/wmma_tile.cuh"

namespace tgemm {
namespace {

using namespace grouped;

constexpr int kScaleBlock = 128;  // DeepSeek-V3's 1x128 / 128x128 scale blocks along K
constexpr int kOutPerThread = BLOCK_M * BLOCK_N / kThreads;
static_assert(kScaleBlock % BLOCK_K == 0 && kScaleBlock % BLOCK_N == 0,
              "a K step and a column tile each lie in one scale block");
static_assert(BLOCK_M * BLOCK_K / 16 == kThreads && BLOCK_N * BLOCK_K / 16 == kThreads,
              "vectorised staging: one 16-byte chunk per thread for A and for B");

struct Fp8Params {
  const std::uint8_t* x;
  const float* xs;
  const std::uint8_t* w;
  const float* ws;
  const std::int32_t* group_data;
  const std::int32_t* run_if;  // contiguous: null, or a device flag; the kernel runs where it is non-zero
  bf16* out;
  std::int64_t groups, rows, m_tiles, n, k;
  std::int64_t x_group_stride, lda, xs_group_stride, xs_row_stride, xs_col_stride;
  std::int64_t w_group_stride, ldw, ws_group_stride, ws_row_stride, out_group_stride, ldo;
};

struct Fp8Smem {
  TileSmem<bf16> t;
  float xs[BLOCK_M];  // x scales of the current K block, 0 for rows outside the pass
  int gid[BLOCK_M];   // contiguous: each row's group index (-1 past the last row)
  int next;           // contiguous: the smallest group above the previous pass's
};

__device__ __forceinline__ bf16 fp8_to_bf16(std::uint8_t b) {
  __nv_fp8_e4m3 f;
  f.__x = b;
  return __float2bfloat16_rn(static_cast<float>(f));  // exact: e4m3 values are bf16 values
}

// 16 FP8 values -> 16 bf16 in e.
__device__ __forceinline__ void convert16(const uint4& v, bf16 (&e)[16]) {
  const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
#pragma unroll
  for (int t = 0; t < 16; ++t) e[t] = fp8_to_bf16(b[t]);
}

// A (BLOCK_M, BLOCK_K) at k0 from the tile's x rows (row r at x + r * lda), zero for rows outside
// the pass and for k >= k_hi (k0 and k_hi multiples of 16: a 16-byte chunk is inside or outside).
template <bool kVec16, typename InPass>
__device__ __forceinline__ void stage_a_fp8(TileSmem<bf16>& s, const std::uint8_t* x, std::int64_t lda, int rows,
                                            InPass in_pass, std::int64_t k0, std::int64_t k_hi) {
  if constexpr (kVec16) {
    const int r = threadIdx.x / 2, kk = (threadIdx.x % 2) * 16;
    alignas(16) bf16 e[16];
    uint4 v = make_uint4(0, 0, 0, 0);  // +0 in e4m3
    if (r < rows && k0 + kk < k_hi && in_pass(r)) v = *reinterpret_cast<const uint4*>(x + r * lda + k0 + kk);
    convert16(v, e);
    *reinterpret_cast<uint4*>(&s.a[r][kk]) = *reinterpret_cast<const uint4*>(&e[0]);
    *reinterpret_cast<uint4*>(&s.a[r][kk + 8]) = *reinterpret_cast<const uint4*>(&e[8]);
  } else {
    for (int i = threadIdx.x; i < BLOCK_M * BLOCK_K; i += kThreads) {
      const int r = i / BLOCK_K, kk = i % BLOCK_K;
      const bool live = r < rows && k0 + kk < k_hi && in_pass(r);
      s.a[r][kk] = fp8_to_bf16(live ? x[r * lda + k0 + kk] : std::uint8_t{0});
    }
  }
}

// B (BLOCK_K, BLOCK_N) at k0 from one group's w [N, K] (row c at w + c * ldw), columns col0..;
// zero for c >= cols and k >= k_hi.
template <bool kVec16>
__device__ __forceinline__ void stage_b_fp8(TileSmem<bf16>& s, const std::uint8_t* w, std::int64_t ldw,
                                            std::int64_t col0, int cols, std::int64_t k0, std::int64_t k_hi) {
  if constexpr (kVec16) {
    const int c = threadIdx.x / 2, kk = (threadIdx.x % 2) * 16;
    bf16 e[16];
    uint4 v = make_uint4(0, 0, 0, 0);
    if (c < cols && k0 + kk < k_hi) v = *reinterpret_cast<const uint4*>(w + (col0 + c) * ldw + k0 + kk);
    convert16(v, e);
#pragma unroll
    for (int t = 0; t < 16; ++t) s.b[kk + t][c] = e[t];
  } else {
    for (int i = threadIdx.x; i < BLOCK_N * BLOCK_K; i += kThreads) {
      const int c = i / BLOCK_K, kk = i % BLOCK_K;  // consecutive threads along w's contiguous K
      const bool live = c < cols && k0 + kk < k_hi;
      s.b[kk][c] = fp8_to_bf16(live ? w[(col0 + c) * ldw + k0 + kk] : std::uint8_t{0});
    }
  }
}

// One pass of group g over the tile: x, xs and out point at the tile's row 0 (out at column col0);
// rows r < rows with in_pass(r) are computed and written, no other row of out is touched.
template <bool kVec16, typename InPass>
__device__ void tile_pass(Fp8Smem& s, const Fp8Params& p, std::int64_t g, const std::uint8_t* x, const float* xs,
                          bf16* out, int rows, std::int64_t col0, int cols, InPass in_pass) {
  const std::uint8_t* w = p.w + g * p.w_group_stride;
  const float* ws = p.ws + g * p.ws_group_stride + (col0 / kScaleBlock) * p.ws_row_stride;
  float sum[kOutPerThread];
#pragma unroll
  for (int j = 0; j < kOutPerThread; ++j) sum[j] = 0.0f;
  for (std::int64_t k_lo = 0, b = 0; k_lo < p.k; k_lo += kScaleBlock, ++b) {
    const std::int64_t k_hi = min(p.k, k_lo + kScaleBlock);
    if (threadIdx.x < BLOCK_M) {
      const int r = threadIdx.x;
      s.xs[r] = r < rows && in_pass(r) ? xs[r * p.xs_row_stride + b * p.xs_col_stride] : 0.0f;
    }
    const float w_scale = ws[b];
    AccFrag acc[2][2];
    zero_acc(acc);
    for (std::int64_t k0 = k_lo; k0 < k_hi; k0 += BLOCK_K) {
      stage_a_fp8<kVec16>(s.t, x, p.lda, rows, in_pass, k0, k_hi);
      stage_b_fp8<kVec16>(s.t, w, p.ldw, col0, cols, k0, k_hi);
      __syncthreads();
      mma_step(s.t, acc);
      __syncthreads();
    }
    store_acc(s.t, acc);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kOutPerThread; ++j) {
      const int i = threadIdx.x + j * kThreads, r = i / BLOCK_N, c = i % BLOCK_N;
      sum[j] += s.t.c[r][c] * s.xs[r] * w_scale;
    }
    __syncthreads();  // s.t.c and s.xs are rewritten by the next block
  }
#pragma unroll
  for (int j = 0; j < kOutPerThread; ++j) {
    const int i = threadIdx.x + j * kThreads, r = i / BLOCK_N, c = i % BLOCK_N;
    if (r < rows && c < cols && in_pass(r)) out[r * p.ldo + c] = from_float<bf16>(sum[j]);
  }
}

template <bool kVec16>
__global__ void __launch_bounds__(kThreads) fp8_contiguous_kernel(Fp8Params p) {
  __shared__ Fp8Smem s;
  if (p.run_if != nullptr && *p.run_if == 0) return;  // the CUTLASS kernel computed the call
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * BLOCK_M;
  const int rows = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_M), p.rows - row0));
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.y) * BLOCK_N;
  const int cols = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_N), p.n - col0));
  if (threadIdx.x < BLOCK_M) s.gid[threadIdx.x] = threadIdx.x < rows ? p.group_data[row0 + threadIdx.x] : -1;
  const std::uint8_t* x = p.x + row0 * p.lda;
  const float* xs = p.xs + row0 * p.xs_row_stride;
  bf16* out = p.out + row0 * p.ldo + col0;
  // Passes over the tile's groups in increasing order; prev starts below every valid index.
  for (int prev = -1;;) {
    if (threadIdx.x == 0) s.next = INT_MAX;
    __syncthreads();
    if (threadIdx.x < rows) {
      const int gg = s.gid[threadIdx.x];
      if (gg > prev && gg < p.groups) atomicMin(&s.next, gg);
    }
    __syncthreads();
    const int g = s.next;
    __syncthreads();  // every thread has read s.next before thread 0 resets it
    if (g == INT_MAX) break;
    tile_pass<kVec16>(s, p, g, x, xs, out, rows, col0, cols, [&](int r) { return s.gid[r] == g; });
    prev = g;
  }
  // Padding rows (index outside [0, G)) get zeros, so every row of out is written.
  for (int i = threadIdx.x; i < BLOCK_M * BLOCK_N; i += kThreads) {
    const int r = i / BLOCK_N, c = i % BLOCK_N;
    if (r < rows && c < cols && (s.gid[r] < 0 || s.gid[r] >= p.groups)) out[r * p.ldo + c] = from_float<bf16>(0.0f);
  }
}

template <bool kVec16>
__global__ void __launch_bounds__(kThreads) fp8_masked_kernel(Fp8Params p) {
  __shared__ Fp8Smem s;
  const std::int64_t g = blockIdx.x / p.m_tiles;
  const std::int64_t row0 = (blockIdx.x % p.m_tiles) * BLOCK_M;
  const std::int64_t m_g = min(max(static_cast<std::int64_t>(p.group_data[g]), std::int64_t{0}), p.rows);
  if (row0 >= m_g) return;
  const int rows = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_M), m_g - row0));
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.y) * BLOCK_N;
  const int cols = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_N), p.n - col0));
  const std::uint8_t* x = p.x + g * p.x_group_stride + row0 * p.lda;
  const float* xs = p.xs + g * p.xs_group_stride + row0 * p.xs_row_stride;
  bf16* out = p.out + g * p.out_group_stride + row0 * p.ldo + col0;
  tile_pass<kVec16>(s, p, g, x, xs, out, rows, col0, cols, [](int) { return true; });
}

}  // namespace

void launch_fp8_grouped_tiled(const Fp8GroupedProblem& p, const Fp8GroupedArgs& args, Stream stream,
                              const std::int32_t* run_if) {
  Fp8Params fp{};
  fp.run_if = run_if;
  fp.x = static_cast<const std::uint8_t*>(args.x);
  fp.xs = args.x_scale;
  fp.w = static_cast<const std::uint8_t*>(args.w);
  fp.ws = args.w_scale;
  fp.group_data = args.group_data;
  fp.out = static_cast<bf16*>(args.out);
  fp.groups = p.groups;
  fp.rows = p.rows;
  fp.m_tiles = (p.rows + BLOCK_M - 1) / BLOCK_M;
  fp.n = p.n;
  fp.k = p.k;
  fp.x_group_stride = p.x_group_stride;
  fp.lda = p.lda;
  fp.xs_group_stride = p.xs_group_stride;
  fp.xs_row_stride = p.xs_row_stride;
  fp.xs_col_stride = p.xs_col_stride;
  fp.w_group_stride = p.w_group_stride;
  fp.ldw = p.ldw;
  fp.ws_group_stride = p.ws_group_stride;
  fp.ws_row_stride = p.ws_row_stride;
  fp.out_group_stride = p.out_group_stride;
  fp.ldo = p.ldo;
  // 16-byte loads of 16 FP8 values: every x and w row start must be 16-byte aligned (K and the row
  // strides are multiples of 16 by validation; the bases and group strides are checked here).
  auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  const bool vec16 = aligned(args.x) && aligned(args.w) && p.lda % 16 == 0 && p.ldw % 16 == 0 &&
                     (!p.masked || p.x_group_stride % 16 == 0) && p.w_group_stride % 16 == 0;
  const unsigned col_tiles = static_cast<unsigned>((p.n + BLOCK_N - 1) / BLOCK_N);
  if (p.masked) {
    const dim3 grid(static_cast<unsigned>(p.groups * fp.m_tiles), col_tiles);
    if (vec16) {
      fp8_masked_kernel<true><<<grid, kThreads, 0, stream>>>(fp);
    } else {
      fp8_masked_kernel<false><<<grid, kThreads, 0, stream>>>(fp);
    }
    TGEMM_CUDA_CHECK_LAUNCH("m_grouped_gemm_fp8_masked: fp8_masked_kernel");
    return;
  }
  const dim3 grid(static_cast<unsigned>(fp.m_tiles), col_tiles);
  if (vec16) {
    fp8_contiguous_kernel<true><<<grid, kThreads, 0, stream>>>(fp);
  } else {
    fp8_contiguous_kernel<false><<<grid, kThreads, 0, stream>>>(fp);
  }
  TGEMM_CUDA_CHECK_LAUNCH("m_grouped_gemm_fp8_contiguous: fp8_contiguous_kernel");
}

}  // namespace tgemm
