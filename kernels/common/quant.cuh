// Quantization kernels: bf16/fp16 [M, K] (row stride ldx) to float8_e4m3fn or int8 (row stride
// ldq) with fp32 scales, per tensor, per row, per 1x128 block of a row and per 128x128 block.
// The arithmetic of include/tgemm/quant.h: scale = max(amax / qmax, FLT_MIN), 1 for amax 0;
// q = saturate(rne(x * (1 / scale))).
//
// Memory-bound: each kernel reads x once from DRAM (the per-tensor path twice: amax, then
// quantize) with 16-byte loads when kVec (x's rows 16-byte aligned: data and ldx a multiple of 8
// elements), else element loads; q is stored 8 bytes a thread where its rows are 8-byte aligned.
// Preconditions: the checks of src/quant/quant_validate.cpp.
// Tested by tests/gpu/test_quant.cpp against a host reference, code for code; benched by
// bench/torch_bench.py --quant (bytes moved per second against a device copy).
#pragma once

#include <cuda_fp8.h>

#include <cfloat>
#include <cstdint>

#include "kernels/common/numeric.cuh"

namespace tgemm::quant {

// Elements per 16-byte vector of a 16-bit input, and per thread in the block kernels.
constexpr int kVecElems = 8;
constexpr int kBlock = 128;

template <typename Q>
struct QuantFormat;
template <>
struct QuantFormat<__nv_fp8_storage_t> {
  static constexpr float kMax = 448.0f;
  __device__ __forceinline__ static __nv_fp8_storage_t convert(float v) {
    return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
  }
};
template <>
struct QuantFormat<std::int8_t> {
  static constexpr float kMax = 127.0f;
  __device__ __forceinline__ static std::int8_t convert(float v) {
    // cvt.rni: round to nearest even; NaN converts to 0.
    const int r = __float2int_rn(v);
    return static_cast<std::int8_t>(r > 127 ? 127 : (r < -127 ? -127 : r));
  }
};

__device__ __forceinline__ float scale_from_amax(float amax, float qmax) {
  if (amax == 0.0f) return 1.0f;
  return fmaxf(amax / qmax, FLT_MIN);
}

// |v| without NaN: NaN elements are left out of every amax.
__device__ __forceinline__ float abs_or_zero(float v) { return v == v ? fabsf(v) : 0.0f; }

// 8 consecutive elements of a row at `col`: one 16-byte load when kVec and the 8 are inside the
// row, else element loads of those below k (the rest read as 0).
template <typename T, bool kVec>
__device__ __forceinline__ void load8(const T* row, std::int64_t col, std::int64_t k, float (&v)[kVecElems]) {
  if (kVec && col + kVecElems <= k) {
    const uint4 raw = *reinterpret_cast<const uint4*>(row + col);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) v[i] = to_float(e[i]);
  } else {
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) v[i] = col + i < k ? to_float(row[col + i]) : 0.0f;
  }
}

// Quantizes 8 values and stores those below k: one 8-byte store where allowed.
template <typename Q>
__device__ __forceinline__ void store8(Q* row, std::int64_t col, std::int64_t k, const float (&v)[kVecElems], float inv,
                                       bool vec_store) {
  Q out[kVecElems];
#pragma unroll
  for (int i = 0; i < kVecElems; ++i) out[i] = QuantFormat<Q>::convert(v[i] * inv);
  if (vec_store && col + kVecElems <= k) {
    *reinterpret_cast<uint2*>(row + col) = *reinterpret_cast<const uint2*>(out);
  } else {
#pragma unroll
    for (int i = 0; i < kVecElems; ++i)
      if (col + i < k) row[col + i] = out[i];
  }
}

__device__ __forceinline__ float amax8(const float (&v)[kVecElems]) {
  float a = 0.0f;
#pragma unroll
  for (int i = 0; i < kVecElems; ++i) a = fmaxf(a, abs_or_zero(v[i]));
  return a;
}

__device__ __forceinline__ float warp_max(float a) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  return a;
}

// The maximum of `a` over the CTA (every thread gets it). red: one float per warp.
__device__ __forceinline__ float block_max(float a, float* red) {
  a = warp_max(a);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // red may still be read from a previous call
  if (lane == 0) red[warp] = a;
  __syncthreads();
  a = lane < warps ? red[lane] : 0.0f;
  return warp_max(a);
}

// ---- per row (per token) ----------------------------------------------------------------------
// One CTA per row; each thread keeps its first kCache vectors in registers between the amax and
// the quantization, so rows of up to blockDim * kCache * 8 elements are read once; longer rows
// re-read the rest (from L2, just read).
constexpr int kRowThreads = 256;
constexpr int kRowCache = 4;

template <typename T, typename Q, bool kVec>
__global__ void __launch_bounds__(kRowThreads)
    quant_rows_kernel(const T* __restrict__ x, std::int64_t ldx, Q* __restrict__ q, std::int64_t ldq, std::int64_t k,
                      float* __restrict__ scale, bool vec_store) {
  __shared__ float red[kRowThreads / 32];
  const T* row = x + static_cast<std::int64_t>(blockIdx.x) * ldx;
  Q* qrow = q + static_cast<std::int64_t>(blockIdx.x) * ldq;
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * kVecElems;
  const std::int64_t first = static_cast<std::int64_t>(threadIdx.x) * kVecElems;
  // Unrolled, so the cache is indexed by constants and stays in registers.
  float cache[kRowCache][kVecElems];
  float a = 0.0f;
#pragma unroll
  for (int c = 0; c < kRowCache; ++c) {
    load8<T, kVec>(row, first + c * step, k, cache[c]);
    a = fmaxf(a, amax8(cache[c]));
  }
  for (std::int64_t col = first + kRowCache * step; col < k; col += step) {
    float v[kVecElems];
    load8<T, kVec>(row, col, k, v);
    a = fmaxf(a, amax8(v));
  }
  const float s = scale_from_amax(block_max(a, red), QuantFormat<Q>::kMax);
  const float inv = 1.0f / s;
  if (threadIdx.x == 0) scale[blockIdx.x] = s;
#pragma unroll
  for (int c = 0; c < kRowCache; ++c) {
    if (first + c * step < k) store8(qrow, first + c * step, k, cache[c], inv, vec_store);
  }
  for (std::int64_t col = first + kRowCache * step; col < k; col += step) {
    float v[kVecElems];
    load8<T, kVec>(row, col, k, v);
    store8(qrow, col, k, v, inv, vec_store);
  }
}

// ---- 1x128 blocks of a row --------------------------------------------------------------------
// 16 lanes (half a warp) per block, 8 elements a lane; 16 blocks a CTA of 256 threads.
constexpr int kBlockRowThreads = 256;

template <typename T, bool kVec>
__global__ void __launch_bounds__(kBlockRowThreads)
    quant_1x128_kernel(const T* __restrict__ x, std::int64_t ldx, __nv_fp8_storage_t* __restrict__ q, std::int64_t ldq,
                       std::int64_t m, std::int64_t k, float* __restrict__ scale, std::int64_t scale_row_stride,
                       std::int64_t scale_col_stride, bool vec_store) {
  const std::int64_t kb = (k + kBlock - 1) / kBlock;
  const std::int64_t group = static_cast<std::int64_t>(blockIdx.x) * (kBlockRowThreads / 16) + threadIdx.x / 16;
  const int lane = threadIdx.x % 16;
  const bool active = group < m * kb;
  const std::int64_t r = active ? group / kb : 0, b = active ? group % kb : 0;
  const std::int64_t col = b * kBlock + lane * kVecElems;
  const T* row = x + r * ldx;
  float v[kVecElems];
  if (active) {
    load8<T, kVec>(row, col, k, v);
  } else {
#pragma unroll
    for (int i = 0; i < kVecElems; ++i) v[i] = 0.0f;
  }
  // Lanes 0-15 and 16-31 reduce separately: xor offsets below 16 stay within a half.
  float a = amax8(v);
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  if (!active) return;
  const float s = scale_from_amax(a, QuantFormat<__nv_fp8_storage_t>::kMax);
  if (lane == 0) scale[r * scale_row_stride + b * scale_col_stride] = s;
  if (col < k) store8(q + r * ldq, col, k, v, 1.0f / s, vec_store);
}

// ---- 128x128 blocks ---------------------------------------------------------------------------
// One CTA of 256 threads per block: 128 rows x 16 vectors, 8 vectors a thread held in registers.
constexpr int kTileThreads = 256;
constexpr int kTileVecs = kBlock * (kBlock / kVecElems) / kTileThreads;

template <typename T, bool kVec>
__global__ void __launch_bounds__(kTileThreads)
    quant_128x128_kernel(const T* __restrict__ x, std::int64_t ldx, __nv_fp8_storage_t* __restrict__ q,
                         std::int64_t ldq, std::int64_t m, std::int64_t k, float* __restrict__ scale,
                         std::int64_t scale_row_stride, bool vec_store) {
  __shared__ float red[kTileThreads / 32];
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kBlock;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kBlock;
  float v[kTileVecs][kVecElems];
  float a = 0.0f;
#pragma unroll
  for (int i = 0; i < kTileVecs; ++i) {
    const int id = i * kTileThreads + threadIdx.x;
    const std::int64_t r = row0 + id / (kBlock / kVecElems);
    const std::int64_t col = col0 + (id % (kBlock / kVecElems)) * kVecElems;
    if (r < m && col < k) {
      load8<T, kVec>(x + r * ldx, col, k, v[i]);
    } else {
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) v[i][e] = 0.0f;
    }
    a = fmaxf(a, amax8(v[i]));
  }
  const float s = scale_from_amax(block_max(a, red), QuantFormat<__nv_fp8_storage_t>::kMax);
  if (threadIdx.x == 0) scale[blockIdx.y * scale_row_stride + blockIdx.x] = s;
  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < kTileVecs; ++i) {
    const int id = i * kTileThreads + threadIdx.x;
    const std::int64_t r = row0 + id / (kBlock / kVecElems);
    const std::int64_t col = col0 + (id % (kBlock / kVecElems)) * kVecElems;
    if (r < m && col < k) store8(q + r * ldq, col, k, v[i], inv, vec_store);
  }
}

// ---- per tensor -------------------------------------------------------------------------------
// Two kernels on one fp32 slot (the output scale), zeroed before the first:
//  1. amax: each CTA's amax, as (0x80000000 | bits(amax)), combined by atomicMax on the slot's
//     bits: with the sign bit set, larger magnitudes are larger unsigned values;
//  2. quantize: every thread decodes the slot. A set sign bit (or 0: no element) is the encoded
//     amax, turned into the scale; CTA 0 writes that scale back. A clear sign bit with a nonzero
//     value is the written scale itself. Either way every thread gets the same scale, so the
//     write can race with the other CTAs' reads.
// With a given scale the quantize kernel reads it as is (kGiven).
constexpr int kTensorThreads = 256;

__device__ __forceinline__ float decode_tensor_scale(std::uint32_t bits) {
  if (bits == 0u || (bits & 0x80000000u) != 0u) {
    return scale_from_amax(__uint_as_float(bits & 0x7fffffffu), QuantFormat<__nv_fp8_storage_t>::kMax);
  }
  return __uint_as_float(bits);
}

template <typename T, bool kVec>
__global__ void __launch_bounds__(kTensorThreads)
    tensor_amax_kernel(const T* __restrict__ x, std::int64_t ldx, std::int64_t m, std::int64_t k, float* slot) {
  __shared__ float red[kTensorThreads / 32];
  const std::int64_t vecs_per_row = (k + kVecElems - 1) / kVecElems;
  const std::int64_t total = m * vecs_per_row;
  float a = 0.0f;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / vecs_per_row, col = (i % vecs_per_row) * kVecElems;
    float v[kVecElems];
    load8<T, kVec>(x + r * ldx, col, k, v);
    a = fmaxf(a, amax8(v));
  }
  a = block_max(a, red);
  if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned int*>(slot), 0x80000000u | __float_as_uint(a));
}

template <typename T, bool kVec, bool kGiven>
__global__ void __launch_bounds__(kTensorThreads)
    tensor_quant_kernel(const T* __restrict__ x, std::int64_t ldx, __nv_fp8_storage_t* __restrict__ q, std::int64_t ldq,
                        std::int64_t m, std::int64_t k, float* slot, bool vec_store) {
  const std::uint32_t bits = *reinterpret_cast<volatile const std::uint32_t*>(slot);
  const float s = kGiven ? __uint_as_float(bits) : decode_tensor_scale(bits);
  if (!kGiven && blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<volatile float*>(slot) = s;
  const float inv = 1.0f / s;
  const std::int64_t vecs_per_row = (k + kVecElems - 1) / kVecElems;
  const std::int64_t total = m * vecs_per_row;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / vecs_per_row, col = (i % vecs_per_row) * kVecElems;
    float v[kVecElems];
    load8<T, kVec>(x + r * ldx, col, k, v);
    store8(q + r * ldq, col, k, v, inv, vec_store);
  }
}

}  // namespace tgemm::quant
