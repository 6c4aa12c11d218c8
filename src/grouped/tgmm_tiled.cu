// Transposed grouped GEMM (the weight gradient of gmm), tiled on WMMA tensor cores:
//   out[g] (+)= lhs[:, cols of g] @ rhs[rows of g],  bias_grad[g] = row sums of lhs[:, cols of g]
// lhs [K, M] row-major or column-major, rhs [M, N] row-major, out [G, K, N]; the reduction runs
// over the group's M range, read from the device (include/tgemm/grouped.h has the rules).
// Two launches, no host synchronisation:
//  1. the offsets scan of gmm (launch_group_offsets) turns group_sizes into column offsets;
//  2. tgmm_tiled_kernel: output tile t of G x ceil(K/64) x ceil(N/64) (N fastest) reduces lhs
//     rows (K) x the group's M range against rhs; the CTAs of column tile 0 also sum the staged
//     lhs rows for bias_grad (no atomics: one CTA owns each bias_grad row). A CTA strides over
//     the tiles by gridDim.x: ptgmm launches one wave (SMs x resident CTAs), nptgmm one CTA a tile.
// The K loop starts at the group's first column rounded down to a multiple of 8 so 16-byte loads
// stay aligned; elements outside the group's range are zeroed in shared memory.
// Preconditions: a validated TgmmProblem, K > 0, G > 0, N > 0 or bias_grad given.
// Tested by tests/gpu/test_grouped.cpp (Tgmm.*); benched by bench/torch_bench.py --ptgmm.
#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "grouped/gmm_launch.h"
#include "grouped/wmma_tile.cuh"

namespace tgemm {
namespace {

using namespace grouped;

struct TgmmParams {
  const void* lhs;
  const void* rhs;
  void* out;
  float* bias_grad;
  const std::int64_t* col_off;  // [G + 2]: group g owns lhs columns [col_off[g], col_off[g + 1])
  std::int64_t k, n, k_tiles, n_tiles, tiles;
  std::int64_t lda, ldb, out_group_stride, ldo, bias_grad_stride;
  bool out_fp32, accumulate;
};

template <typename In, bool kLhsColMajor, bool kVec16>
__global__ void __launch_bounds__(kThreads) tgmm_tiled_kernel(TgmmParams p) {
  __shared__ TileSmem<In> s;
  const auto* lhs = static_cast<const In*>(p.lhs);
  const auto* rhs = static_cast<const In*>(p.rhs);
  const std::int64_t group_tiles = p.k_tiles * p.n_tiles;
  for (std::int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const std::int64_t g = tile / group_tiles, in_group = tile % group_tiles;
    const std::int64_t row0 = (in_group / p.n_tiles) * BLOCK_M, col0 = (in_group % p.n_tiles) * BLOCK_N;
    const int rows = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_M), p.k - row0));
    const int cols = static_cast<int>(max(min(static_cast<std::int64_t>(BLOCK_N), p.n - col0), std::int64_t{0}));
    const std::int64_t k_lo = p.col_off[g], k_hi = p.col_off[g + 1];
    const bool bias_tile = p.bias_grad != nullptr && col0 == 0;
    float bias_sum = 0.0f;  // thread r < BLOCK_M: row r's sum, in K order
    AccFrag acc[2][2];
    zero_acc(acc);
    for (std::int64_t k0 = k_lo & ~std::int64_t{7}; k0 < k_hi; k0 += BLOCK_K) {
      if constexpr (kLhsColMajor) {
        stage_a_cols<In, kVec16>(s, lhs + row0, p.lda, rows, k0, k_lo, k_hi);
      } else {
        const In* a = lhs + row0 * p.lda;
        stage_a_rows<In, kVec16, true>(
            s, [&](int r) { return a + r * p.lda; }, rows, k0, k_lo, k_hi);
      }
      stage_b<In, false, kVec16>(s, rhs, p.ldb, col0, cols, k0, k_lo, k_hi);
      __syncthreads();
      if (bias_tile && threadIdx.x < BLOCK_M) {
#pragma unroll
        for (int kk = 0; kk < BLOCK_K; ++kk) bias_sum += to_float(s.a[threadIdx.x][kk]);
      }
      mma_step(s, acc);
      __syncthreads();
    }
    store_acc(s, acc);
    __syncthreads();
    if (bias_tile && static_cast<int>(threadIdx.x) < rows) {
      p.bias_grad[g * p.bias_grad_stride + row0 + threadIdx.x] = bias_sum;
    }
    for_each_output(s, rows, cols, [&](int r, int c, float v) {
      const std::int64_t at = g * p.out_group_stride + (row0 + r) * p.ldo + col0 + c;
      if (p.accumulate) v += load_out<In>(p.out, at, p.out_fp32);
      store_out<In>(p.out, at, p.out_fp32, v);
    });
    __syncthreads();  // s.c is read above; the next tile's store_acc overwrites it
  }
}

// Whether every staged chunk of 8 elements along a contiguous dimension is one aligned 16-byte
// load lying inside its tensor: lhs along M (row-major) or K (column-major), rhs along N.
bool vectorizable(const TgmmProblem& p, const TgmmArgs& args) {
  auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  const bool lhs_ok = (p.lhs_col_major ? p.k : p.m) % 8 == 0 && p.lda % 8 == 0 && aligned(args.lhs);
  return lhs_ok && p.n % 8 == 0 && p.ldb % 8 == 0 && aligned(args.rhs);
}

template <typename In, bool kLhsColMajor, bool kVec16>
void launch_kernel(const TgmmParams& tp, bool persistent, Stream stream) {
  auto* kernel = tgmm_tiled_kernel<In, kLhsColMajor, kVec16>;
  std::int64_t grid = tp.tiles;
  if (persistent) {
    // One wave: every SM holds as many CTAs as fit (shared memory and registers decide; the same
    // on every sm_90 device, so asked once per kernel).
    static const int per_sm = [kernel] {
      int blocks = 0;
      TGEMM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, 0),
                       "ptgmm: tgmm_tiled_kernel occupancy");
      return blocks;
    }();
    const int sms = cuda_sm_count(cuda_current_device());
    grid = std::min<std::int64_t>(tp.tiles, static_cast<std::int64_t>(std::max(per_sm, 1)) * std::max(sms, 1));
  }
  kernel<<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(tp);
}

template <typename In>
void launch_typed(const TgmmProblem& p, const TgmmArgs& args, const TgmmParams& tp, Stream stream) {
  const bool vec16 = vectorizable(p, args);
  if (p.lhs_col_major) {
    vec16 ? launch_kernel<In, true, true>(tp, p.persistent, stream)
          : launch_kernel<In, true, false>(tp, p.persistent, stream);
  } else {
    vec16 ? launch_kernel<In, false, true>(tp, p.persistent, stream)
          : launch_kernel<In, false, false>(tp, p.persistent, stream);
  }
}

}  // namespace

std::size_t tgmm_workspace_bytes(const TgmmProblem& p) {
  return 2 * static_cast<std::size_t>(p.groups + 2) * sizeof(std::int64_t);
}

void launch_tgmm_tiled(const TgmmProblem& p, const TgmmArgs& args, void* workspace, Stream stream) {
  auto* col_off = static_cast<std::int64_t*>(workspace);
  launch_group_offsets(args.group_sizes, p.groups, p.m, col_off, col_off + p.groups + 2, stream,
                       p.persistent ? "ptgmm: gmm_offsets_kernel" : "nptgmm: gmm_offsets_kernel");
  TgmmParams tp{};
  tp.lhs = args.lhs;
  tp.rhs = args.rhs;
  tp.out = args.out;
  tp.bias_grad = args.bias_grad;
  tp.col_off = col_off;
  tp.k = p.k;
  tp.n = p.n;
  tp.k_tiles = (p.k + BLOCK_M - 1) / BLOCK_M;
  // N = 0 with bias_grad: one column tile of no columns still sums the lhs rows.
  tp.n_tiles = std::max<std::int64_t>((p.n + BLOCK_N - 1) / BLOCK_N, 1);
  tp.tiles = p.groups * tp.k_tiles * tp.n_tiles;
  tp.lda = p.lda;
  tp.ldb = p.ldb;
  tp.out_group_stride = p.out_group_stride;
  tp.ldo = p.ldo;
  tp.bias_grad_stride = p.bias_grad_stride;
  tp.out_fp32 = p.out_type == DType::kFloat32;
  tp.accumulate = p.accumulate;
  if (p.in_type == DType::kFloat16) {
    launch_typed<fp16>(p, args, tp, stream);
  } else {
    launch_typed<bf16>(p, args, tp, stream);
  }
  TGEMM_CUDA_CHECK_LAUNCH(p.persistent ? "ptgmm: tgmm_tiled_kernel" : "nptgmm: tgmm_tiled_kernel");
}

}  // namespace tgemm
