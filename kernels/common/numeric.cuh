// Element types and fp32 conversions shared by device code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tgemm {

using bf16 = __nv_bfloat16;
using fp16 = __half;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(fp16 v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ fp16 from_float<fp16>(float v) { return __float2half_rn(v); }

}  // namespace tgemm
