// MXFP4 device code (include/tgemm/fp4.h): e2m1 and E8M0 encoding and decoding, the quantizer
// (bf16/fp16 [M, K] -> packed codes [M, K / 2] and scales [M, K / 32]) and the dequantizer that
// writes a weight (or gemm_a4w4's activations) back as bf16/fp16 [rows, K] for the a16w16 GEMM
// (the path of the W4 GEMMs for M > 4); for gemm_a8w4's path the widening of FP8 x to bf16 and
// the pass that applies x_scale and bias to the fp32 sums.
//
// Both are memory-bound passes with one thread per 32-value block: the quantizer reads the
// block's 64 bytes, writes 16 bytes of codes and one scale byte; the dequantizer reads 16 + 1
// bytes and writes 64. Preconditions: the checks of src/fp4/fp4_validate.cpp (K % 32 == 0); the
// dequantizer's output is dense [N, K] and 16-byte aligned. Built without fast-math: fp32
// subnormals are kept (a bf16 subnormal input or a scale of 2^-127 is exact, not flushed).
// Tested by tests/gpu/test_fp4.cpp against tests/common/mxfp4_ref.h byte for byte.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/common/numeric.cuh"

namespace tgemm::mxfp4 {

constexpr int kBlock = 32;
constexpr int kThreads = 256;

// The magnitude bits (e1 e0 m) of an e2m1 code placed at fp32 bits 24..22 give an fp32 whose
// exponent field is e and top mantissa bit m: 2^(e - 127) (1 + m / 2) for e >= 1 and the
// subnormal m * 2^-127 for e = 0, i.e. exactly the e2m1 value times 2^-126. One shift and one
// multiply by 2^126, no table.
__device__ __forceinline__ float e2m1_value(std::uint32_t code) {
  const float v = __uint_as_float(((code & 8u) << 28) | ((code & 7u) << 22));
  return v * 0x1p126f;
}

// 2^(s - 127) as fp32: a normal number for s >= 1, the subnormal 2^-127 for s = 0, NaN for 255.
__device__ __forceinline__ float e8m0_value(std::uint32_t s) {
  if (s == 0u) return __uint_as_float(0x00400000u);
  return s == 255u ? __uint_as_float(0x7fc00000u) : __uint_as_float(s << 23);
}

// The E8M0 scale of a block whose largest magnitude has fp32 exponent field `e` (0..254): with
// floor(log2(amax)) = e - 127 for normal amax, clamp(e - 127 - 2, -127, 127) + 127 = max(e - 2, 0);
// subnormal amax and 0 (e = 0) clamp to 0.
__device__ __forceinline__ std::uint32_t e8m0_from_exponent(std::uint32_t e) { return e > 2u ? e - 2u : 0u; }

// u rounded to the nearest e2m1 code, ties to the even code (mantissa bit 0), |u| > 6 saturated to
// 6, the sign kept. The thresholds are the midpoints of the grid {0, .5, 1, 1.5, 2, 3, 4, 6}; a
// midpoint goes down where the lower code is even (0.25, 1.25, 2.5, 5) and up where the upper one
// is (0.75, 1.75, 3.5).
__device__ __forceinline__ std::uint32_t e2m1_encode(float u) {
  const float a = fabsf(u);
  std::uint32_t c;
  if (a <= 0.25f) {
    c = 0;
  } else if (a < 0.75f) {
    c = 1;
  } else if (a <= 1.25f) {
    c = 2;
  } else if (a < 1.75f) {
    c = 3;
  } else if (a <= 2.5f) {
    c = 4;
  } else if (a < 3.5f) {
    c = 5;
  } else if (a <= 5.0f) {
    c = 6;
  } else {
    c = 7;
  }
  return c | ((__float_as_uint(u) >> 28) & 8u);
}

// One thread per block of 32 values of a row: blocks b of row r at index r * (K / 32) + b.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    quant_kernel(const T* __restrict__ x, std::int64_t ldx, std::uint8_t* __restrict__ q, std::int64_t ldq,
                 std::uint8_t* __restrict__ scale, std::int64_t ld_scale, std::int64_t m, std::int64_t k) {
  const std::int64_t blocks_per_row = k / kBlock;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= m * blocks_per_row) return;
  const std::int64_t r = i / blocks_per_row, b = i % blocks_per_row;
  const T* src = x + r * ldx + b * kBlock;
  float v[kBlock];
  std::uint32_t emax = 0;  // largest fp32 exponent field: 255 where any value is NaN or infinite
#pragma unroll
  for (int j = 0; j < kBlock; ++j) {
    v[j] = to_float(src[j]);
    emax = max(emax, (__float_as_uint(v[j]) >> 23) & 0xffu);
  }
  std::uint8_t* dst = q + r * ldq + b * (kBlock / 2);
  if (emax == 255u) {
    scale[r * ld_scale + b] = 255;
#pragma unroll
    for (int j = 0; j < kBlock / 2; ++j) dst[j] = 0;
    return;
  }
  const std::uint32_t s = e8m0_from_exponent(emax);
  scale[r * ld_scale + b] = static_cast<std::uint8_t>(s);
  // x / 2^(s - 127) = x * 2^(127 - s); 127 - s is in [-125, 127] (s <= 252): a normal fp32, and the
  // product exact wherever it is not below 2^-126, where it rounds to a zero code either way.
  const float inv = __uint_as_float((254u - s) << 23);
#pragma unroll
  for (int j = 0; j < kBlock / 2; ++j) {
    dst[j] = static_cast<std::uint8_t>(e2m1_encode(v[2 * j] * inv) | (e2m1_encode(v[2 * j + 1] * inv) << 4));
  }
}

// One thread per block of 32 values of the weight: 16 code bytes and a scale in, 32 values of T
// out (dense rows of K, four 16-byte stores).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    dequant_kernel(const std::uint8_t* __restrict__ w, std::int64_t ldw, const std::uint8_t* __restrict__ scale,
                   std::int64_t ld_scale, T* __restrict__ out, std::int64_t n, std::int64_t k) {
  const std::int64_t blocks_per_row = k / kBlock;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n * blocks_per_row) return;
  const std::int64_t r = i / blocks_per_row, b = i % blocks_per_row;
  const std::uint8_t* src = w + r * ldw + b * (kBlock / 2);
  const float s = e8m0_value(scale[r * ld_scale + b]);
  T* dst = out + r * k + b * kBlock;
#pragma unroll
  for (int part = 0; part < 4; ++part) {
    alignas(16) T vals[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t byte = src[part * 4 + j];
      vals[2 * j] = from_float<T>(e2m1_value(byte & 15u) * s);
      vals[2 * j + 1] = from_float<T>(e2m1_value(byte >> 4) * s);
    }
    *reinterpret_cast<uint4*>(dst + part * 8) = *reinterpret_cast<const uint4*>(vals);
  }
}

// One thread per 32 values of a row of FP8 x [M, K] (row stride ldx bytes): 32 bytes in, 32 bf16
// out (dense rows of K). e4m3 has 3 mantissa bits and exponents 2^-9..2^8: every value, NaN
// included, is a bf16 value, so the widening is exact.
__global__ void __launch_bounds__(kThreads) widen_e4m3_kernel(const std::uint8_t* __restrict__ x, std::int64_t ldx,
                                                              bf16* __restrict__ out, std::int64_t m, std::int64_t k) {
  const std::int64_t blocks_per_row = k / kBlock;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= m * blocks_per_row) return;
  const std::int64_t r = i / blocks_per_row, b = i % blocks_per_row;
  const std::uint8_t* src = x + r * ldx + b * kBlock;
  bf16* dst = out + r * k + b * kBlock;
#pragma unroll
  for (int part = 0; part < 4; ++part) {
    alignas(16) bf16 vals[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const __half_raw h = __nv_cvt_fp8_to_halfraw(src[part * 8 + j], __NV_E4M3);
      vals[j] = __float2bfloat16_rn(__half2float(__half(h)));
    }
    *reinterpret_cast<uint4*>(dst + part * 8) = *reinterpret_cast<const uint4*>(vals);
  }
}

// 0 bf16, 1 fp16, 2 fp32: the element types of out and bias in the epilogue below.
__device__ __forceinline__ float load_typed(const void* p, int type, std::int64_t i) {
  if (type == 0) return __bfloat162float(static_cast<const bf16*>(p)[i]);
  if (type == 1) return __half2float(static_cast<const fp16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

// out[m, n] = acc[m, n] * x_scale[m * ld_x_scale] (x_scale null: 1) + bias[n] (null: 0), in fp32,
// rounded once to out's type; acc fp32 [M, N] with row stride lda. acc may be out itself (fp32 out,
// lda == ldo): each element is read before it is written, by the same thread.
__global__ void __launch_bounds__(kThreads)
    scale_bias_kernel(const float* acc, std::int64_t lda, const float* __restrict__ x_scale, std::int64_t ld_x_scale,
                      const void* __restrict__ bias, int bias_type, void* out, int out_type, std::int64_t ldo,
                      std::int64_t m, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= m * n) return;
  const std::int64_t r = i / n, c = i % n;
  float v = acc[r * lda + c];
  if (x_scale != nullptr) v *= x_scale[r * ld_x_scale];
  if (bias != nullptr) v += load_typed(bias, bias_type, c);
  const std::int64_t o = r * ldo + c;
  if (out_type == 0) {
    static_cast<bf16*>(out)[o] = __float2bfloat16_rn(v);
  } else if (out_type == 1) {
    static_cast<fp16*>(out)[o] = __float2half_rn(v);
  } else {
    static_cast<float*>(out)[o] = v;
  }
}

}  // namespace tgemm::mxfp4
