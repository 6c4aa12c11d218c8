// Reference GEMM: out[m, n] = act(alpha * sum_k x[m, k] * w[n, k] + beta * c[m, n] + bias[n]),
// fp32 accumulation in a fixed order (k ascending), plain loads, any alignment and leading
// dimension. Slow on purpose: it is the yardstick the tests and the tuner compare every other
// solution with.
// Preconditions: x element (m, k) at m * x_row + k * x_col, w element (n, k) at n * w_row + k * w_col
// (gemm_a16w16: row-major x [M, K] and w [N, K]; batched_gemm's transposed layouts swap the two
// strides), out [M, N] row-major (ld ldo); `batch` such products, operand i at i * batch_* elements
// (0 for x or w: broadcast).
// Test: tests/gpu/test_reference.cu checks it against a float64 CPU product.
#pragma once

#include <cstdint>

#include "kernels/common/activation.cuh"
#include "kernels/common/numeric.cuh"

namespace tgemm::kernels {

inline constexpr int kRefTile = 16;

// The epilogue of the reference, run-time typed: c (when beta != 0) has dtype c_type
// (0 bf16, 1 fp16, 2 fp32).
struct RefEpilogue {
  float alpha = 1.0f;
  float beta = 0.0f;
  const void* c = nullptr;
  std::int64_t ldc = 0;
  int c_type = 0;
  int activation = 0;
};

__device__ __forceinline__ float load_as_float(const void* base, int type, std::int64_t i) {
  if (type == 0) return to_float(static_cast<const bf16*>(base)[i]);
  if (type == 1) return to_float(static_cast<const fp16*>(base)[i]);
  return static_cast<const float*>(base)[i];
}

// Where the reference finds its operands (see the preconditions above).
struct RefLayout {
  std::int64_t x_row = 0, x_col = 1;
  std::int64_t w_row = 0, w_col = 1;
  std::int64_t ldo = 0;
  std::int64_t batch = 1;
  std::int64_t batch_x = 0, batch_w = 0, batch_out = 0;
};

// Grid (N tiles, M tiles, up to 65535 products); blocks step over the products by gridDim.z.
template <typename In, typename Out, typename Bias>
__global__ void reference_gemm(const In* __restrict__ x, const In* __restrict__ w, Out* __restrict__ out,
                               const Bias* __restrict__ bias, std::int64_t m, std::int64_t n, std::int64_t k,
                               RefLayout l, RefEpilogue epi) {
  __shared__ float xs[kRefTile][kRefTile + 1];  // (BLK_M, BLK_K), padded against bank conflicts
  __shared__ float ws[kRefTile][kRefTile + 1];  // (BLK_N, BLK_K)
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kRefTile + threadIdx.y;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kRefTile + threadIdx.x;
  const std::int64_t w_row = static_cast<std::int64_t>(blockIdx.x) * kRefTile + threadIdx.y;
  // The product index depends on the block only, so every thread of a block takes the same trips
  // through the __syncthreads below.
  for (std::int64_t b = blockIdx.z; b < l.batch; b += gridDim.z) {
    const In* xb = x + b * l.batch_x;
    const In* wb = w + b * l.batch_w;
    float acc = 0.0f;
    for (std::int64_t k0 = 0; k0 < k; k0 += kRefTile) {
      const std::int64_t kk = k0 + threadIdx.x;
      xs[threadIdx.y][threadIdx.x] = (row < m && kk < k) ? to_float(xb[row * l.x_row + kk * l.x_col]) : 0.0f;
      ws[threadIdx.y][threadIdx.x] = (w_row < n && kk < k) ? to_float(wb[w_row * l.w_row + kk * l.w_col]) : 0.0f;
      __syncthreads();
#pragma unroll
      for (int i = 0; i < kRefTile; ++i) acc = fmaf(xs[threadIdx.y][i], ws[threadIdx.x][i], acc);
      __syncthreads();
    }
    if (row < m && col < n) {
      float v = epi.alpha * acc;
      if (epi.beta != 0.0f) v += epi.beta * load_as_float(epi.c, epi.c_type, row * epi.ldc + col);
      if (bias != nullptr) v += to_float(bias[col]);
      out[b * l.batch_out + row * l.ldo + col] = from_float<Out>(activate(epi.activation, v));
    }
  }
}

}  // namespace tgemm::kernels
