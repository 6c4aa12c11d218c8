// Reference a8w8 GEMM: out[m, n] = acc[m, n] * x_scale[m or 0] * w_scale[n or 0] + bias[n], with
// acc = sum_k x[m, k] * w[n, k] accumulated in a fixed order (k ascending): exactly in int32 for
// int8 operands, in fp32 for FP8 (each FP8 product is exact in fp32). The scaling and bias in
// fp32, in the order scale_rows (src/cuda/scale_epilogue.cu) uses, then one rounding. Slow on
// purpose: the yardstick for the tests and the tuner.
// Preconditions: row-major x [M, K] (ld lda), w [N, K] (ld ldb), out [M, N] (ld ldo); for int8,
// K * 127 * 128 < 2^31 (K < 131072) so the int32 sum cannot overflow.
// Test: tests/gpu/test_gemm_a8w8.cpp checks it against a float64 CPU product.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/numeric.cuh"

namespace tgemm::kernels {

inline constexpr int kRefA8W8Tile = 16;

__device__ __forceinline__ float a8w8_to_float(__nv_fp8_e4m3 v) { return static_cast<float>(v); }
__device__ __forceinline__ std::int32_t a8w8_to_int(std::int8_t v) { return v; }

struct RefA8W8Scales {
  const float* x_scale = nullptr;
  bool x_per_row = false;
  const float* w_scale = nullptr;
  bool w_per_col = false;
};

// In: __nv_fp8_e4m3 (Acc float) or std::int8_t (Acc std::int32_t).
template <typename In, typename Acc, typename Out, typename Bias>
__global__ void reference_gemm_a8w8(const In* __restrict__ x, const In* __restrict__ w, Out* __restrict__ out,
                                    const Bias* __restrict__ bias, std::int64_t m, std::int64_t n, std::int64_t k,
                                    std::int64_t lda, std::int64_t ldb, std::int64_t ldo, RefA8W8Scales scales) {
  __shared__ Acc xs[kRefA8W8Tile][kRefA8W8Tile + 1];  // (BLK_M, BLK_K), padded against bank conflicts
  __shared__ Acc ws[kRefA8W8Tile][kRefA8W8Tile + 1];  // (BLK_N, BLK_K)
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kRefA8W8Tile + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kRefA8W8Tile + threadIdx.x;
  const std::int64_t w_row = static_cast<std::int64_t>(blockIdx.x) * kRefA8W8Tile + threadIdx.y;
  Acc acc = 0;
  for (std::int64_t k0 = 0; k0 < k; k0 += kRefA8W8Tile) {
    const std::int64_t kk = k0 + threadIdx.x;
    if constexpr (std::is_integral_v<Acc>) {
      xs[threadIdx.y][threadIdx.x] = (row < m && kk < k) ? a8w8_to_int(x[row * lda + kk]) : 0;
      ws[threadIdx.y][threadIdx.x] = (w_row < n && kk < k) ? a8w8_to_int(w[w_row * ldb + kk]) : 0;
    } else {
      xs[threadIdx.y][threadIdx.x] = (row < m && kk < k) ? a8w8_to_float(x[row * lda + kk]) : 0.0f;
      ws[threadIdx.y][threadIdx.x] = (w_row < n && kk < k) ? a8w8_to_float(w[w_row * ldb + kk]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRefA8W8Tile; ++i) acc += xs[threadIdx.y][i] * ws[threadIdx.x][i];
    __syncthreads();
  }
  if (row < m && col < n) {
    const float xsc = scales.x_scale[scales.x_per_row ? row : 0];
    const float wsc = scales.w_scale[scales.w_per_col ? col : 0];
    float v = static_cast<float>(acc) * xsc * wsc;
    if (bias != nullptr) v += to_float(bias[col]);
    out[row * ldo + col] = from_float<Out>(v);
  }
}

}  // namespace tgemm::kernels
