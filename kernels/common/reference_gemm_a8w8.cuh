// Reference a8w8 GEMMs: out[m, n] = sum over K blocks b of acc_b[m, n] * x_scale(m, b) * w_scale(n, b)
// + bias[n], with acc_b = sum_{k in block b} x[m, k] * w[n, k] accumulated in a fixed order
// (k ascending): exactly in int32 for int8 operands, in fp32 for FP8 (each FP8 product is exact in
// fp32). The block sums are scaled and summed in fp32, in the order scale_rows
// (src/cuda/scale_epilogue.cu) uses for one block, then the bias, then one rounding. gemm_a8w8's
// scales have one block spanning K (RefA8W8Scales); gemm_a8w8_blockscale's have 128-element blocks
// (RefBlockScales: 1x128 for x, 128x128 for w). Slow on purpose: the yardstick for the tests and
// the tuner, and the blockscale fallback for shapes no fast path takes.
// batched_gemm_a8w8 runs `batch` such products (RefA8W8Batch), operand and scale i at i batch
// strides past product 0's.
// Preconditions: row-major x [M, K] (ld lda), w [N, K] (ld ldb), out [M, N] (ld ldo); for int8,
// K * 127 * 128 < 2^31 (K < 131072) so the int32 sum cannot overflow.
// Test: tests/gpu/test_gemm_a8w8.cpp and tests/gpu/test_gemm_a8w8_blockscale.cpp check it against
// float64 CPU products.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/numeric.cuh"

namespace tgemm::kernels {

inline constexpr int kRefA8W8Tile = 16;

__device__ __forceinline__ float a8w8_to_float(__nv_fp8_e4m3 v) { return static_cast<float>(v); }
__device__ __forceinline__ std::int32_t a8w8_to_int(std::int8_t v) { return v; }

// Per-tensor or per-row/column scales: one block spanning K.
struct RefA8W8Scales {
  const float* x_scale = nullptr;
  bool x_per_row = false;
  const float* w_scale = nullptr;
  bool w_per_col = false;

  // Floats between the scales of consecutive products (batched_gemm_a8w8; 0 otherwise).
  std::int64_t batch_x_scale = 0, batch_w_scale = 0;

  __device__ std::int64_t block_k(std::int64_t k) const { return k; }
  __device__ float x_at(std::int64_t row, std::int64_t) const { return x_scale[x_per_row ? row : 0]; }
  __device__ float w_at(std::int64_t col, std::int64_t) const { return w_scale[w_per_col ? col : 0]; }
  __device__ RefA8W8Scales for_product(std::int64_t b) const {
    RefA8W8Scales s = *this;
    s.x_scale += b * batch_x_scale;
    s.w_scale += b * batch_w_scale;
    return s;
  }
};

// Block scales: x_scale(m, b) at x_scale[m * x_stride_m + b * x_stride_k] (row-major or MN-major),
// w_scale(n, b) at w_scale[(n / 128) * w_ld + b].
struct RefBlockScales {
  static constexpr std::int64_t kBlock = 128;
  const float* x_scale = nullptr;
  std::int64_t x_stride_m = 0, x_stride_k = 0;
  const float* w_scale = nullptr;
  std::int64_t w_ld = 0;

  __device__ std::int64_t block_k(std::int64_t) const { return kBlock; }
  __device__ float x_at(std::int64_t row, std::int64_t b) const { return x_scale[row * x_stride_m + b * x_stride_k]; }
  __device__ float w_at(std::int64_t col, std::int64_t b) const { return w_scale[(col / kBlock) * w_ld + b]; }
  __device__ RefBlockScales for_product(std::int64_t) const { return *this; }  // one product only
};

// The batch of products: count, and the elements between consecutive products' x, w and out.
struct RefA8W8Batch {
  std::int64_t count = 1;
  std::int64_t x = 0, w = 0, out = 0;
};

// In: __nv_fp8_e4m3 (Acc float) or std::int8_t (Acc std::int32_t). Scales: RefA8W8Scales or
// RefBlockScales, whose block_k is a multiple of kRefA8W8Tile or K itself.
template <typename In, typename Acc, typename Out, typename Bias, typename Scales>
__device__ void reference_gemm_a8w8_product(const In* __restrict__ x, const In* __restrict__ w, Out* __restrict__ out,
                                            const Bias* __restrict__ bias, std::int64_t m, std::int64_t n,
                                            std::int64_t k, std::int64_t lda, std::int64_t ldb, std::int64_t ldo,
                                            const Scales& scales) {
  __shared__ Acc xs[kRefA8W8Tile][kRefA8W8Tile + 1];  // (BLK_M, BLK_K), padded against bank conflicts
  __shared__ Acc ws[kRefA8W8Tile][kRefA8W8Tile + 1];  // (BLK_N, BLK_K)
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kRefA8W8Tile + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kRefA8W8Tile + threadIdx.x;
  const std::int64_t w_row = static_cast<std::int64_t>(blockIdx.x) * kRefA8W8Tile + threadIdx.y;
  const bool inside = row < m && col < n;
  const std::int64_t block_k = scales.block_k(k);
  Acc acc = 0;
  float total = 0.0f;
  std::int64_t block = 0;
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
    const std::int64_t next = k0 + kRefA8W8Tile;
    if (next % block_k == 0 || next >= k) {
      if (inside) total += static_cast<float>(acc) * scales.x_at(row, block) * scales.w_at(col, block);
      acc = 0;
      ++block;
    }
  }
  if (inside) {
    float v = total;
    if (bias != nullptr) v += to_float(bias[col]);
    out[row * ldo + col] = from_float<Out>(v);
  }
}

// Grid (N tiles, M tiles, up to 65535 products); blocks step over the products by gridDim.z.
template <typename In, typename Acc, typename Out, typename Bias, typename Scales>
__global__ void reference_gemm_a8w8(const In* __restrict__ x, const In* __restrict__ w, Out* __restrict__ out,
                                    const Bias* __restrict__ bias, std::int64_t m, std::int64_t n, std::int64_t k,
                                    std::int64_t lda, std::int64_t ldb, std::int64_t ldo, Scales scales,
                                    RefA8W8Batch batch) {
  for (std::int64_t b = blockIdx.z; b < batch.count; b += gridDim.z) {
    reference_gemm_a8w8_product<In, Acc>(x + b * batch.x, w + b * batch.w, out + b * batch.out, bias, m, n, k, lda, ldb,
                                         ldo, scales.for_product(b));
  }
}

}  // namespace tgemm::kernels
