// Element-wise kernels of fused_moe shared by its tile path (fused_moe.cu) and its CUTLASS path
// (fused_moe_cutlass.cu): the expert-map lookup and the activation-and-multiply of the gate/up
// products. Device code; included by src/moe/*.cu only.
#pragma once

#include <cstdint>

#include "core/validate_moe.h"
#include "cuda/cuda_check.h"
#include "kernels/common/activation.cuh"
#include "kernels/common/numeric.cuh"

namespace tgemm::moe_detail {
// Internal linkage: each including translation unit keeps its own instantiations.
namespace {

constexpr int kElemThreads = 256;

// F.silu: x * sigmoid(x); expf, not __expf, for torch's accuracy at large |x|. (GELU is the
// epilogues' gelu_erf, kernels/common/activation.cuh.)
__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

__global__ void __launch_bounds__(kElemThreads)
    map_experts_kernel(const std::int32_t* __restrict__ ids, std::int64_t slots, const std::int32_t* __restrict__ map,
                       std::int64_t global_experts, std::int32_t* __restrict__ local) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kElemThreads + threadIdx.x;
  if (i >= slots) return;
  const std::int32_t id = ids[i];
  local[i] = id >= 0 && id < global_experts ? map[id] : -1;
}

// act[s, c] = act(gate_up[s, c]) * gate_up[s, I + c] for rows s < slots (and s < *rows_used where
// rows_used is given: device data, the rows a grouped GEMM wrote) and c < I, kVec elements a
// thread (8 with 16-byte loads: I % 8 == 0, the buffers 16-byte aligned).
template <typename In, bool kGelu, int kVec>
__global__ void __launch_bounds__(kElemThreads)
    act_mul_kernel(const In* __restrict__ gate_up, In* __restrict__ act, std::int64_t slots, std::int64_t inter,
                   const std::int64_t* __restrict__ rows_used) {
  const std::int64_t chunk = static_cast<std::int64_t>(blockIdx.x) * kElemThreads + threadIdx.x;
  const std::int64_t chunks_per_row = inter / kVec;
  if (chunk >= slots * chunks_per_row) return;
  const std::int64_t s = chunk / chunks_per_row, c = (chunk % chunks_per_row) * kVec;
  if (rows_used != nullptr && s >= *rows_used) return;
  const In* gate = gate_up + s * 2 * inter + c;
  const In* up = gate + inter;
  alignas(16) In g[kVec], u[kVec], r[kVec];
  if constexpr (kVec == 8) {
    *reinterpret_cast<uint4*>(g) = *reinterpret_cast<const uint4*>(gate);
    *reinterpret_cast<uint4*>(u) = *reinterpret_cast<const uint4*>(up);
  } else {
#pragma unroll
    for (int t = 0; t < kVec; ++t) {
      g[t] = gate[t];
      u[t] = up[t];
    }
  }
#pragma unroll
  for (int t = 0; t < kVec; ++t) {
    const float x = to_float(g[t]);
    const float a = kGelu ? kernels::gelu_erf(x) : silu(x);
    r[t] = from_float<In>(a * to_float(u[t]));
  }
  In* dst = act + s * inter + c;
  if constexpr (kVec == 8) {
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(r);
  } else {
#pragma unroll
    for (int t = 0; t < kVec; ++t) dst[t] = r[t];
  }
}

template <typename In, bool kGelu>
void launch_act_vec(const void* gate_up, void* act, std::int64_t slots, std::int64_t inter,
                    const std::int64_t* rows_used, Stream stream) {
  const bool vec = inter % 8 == 0;  // the workspace sections are 16-byte aligned
  const std::int64_t chunks = slots * (vec ? inter / 8 : inter);
  const auto blocks = static_cast<unsigned>((chunks + kElemThreads - 1) / kElemThreads);
  if (vec) {
    act_mul_kernel<In, kGelu, 8><<<blocks, kElemThreads, 0, stream>>>(static_cast<const In*>(gate_up),
                                                                      static_cast<In*>(act), slots, inter, rows_used);
  } else {
    act_mul_kernel<In, kGelu, 1><<<blocks, kElemThreads, 0, stream>>>(static_cast<const In*>(gate_up),
                                                                      static_cast<In*>(act), slots, inter, rows_used);
  }
  TGEMM_CUDA_CHECK_LAUNCH("fused_moe: act_mul_kernel");
}

template <typename In>
void launch_act(const MoeProblem& p, const void* gate_up, void* act, std::int64_t slots, const std::int64_t* rows_used,
                Stream stream) {
  if (p.activation == MoeActivation::kGelu) {
    launch_act_vec<In, true>(gate_up, act, slots, p.inter, rows_used, stream);
  } else {
    launch_act_vec<In, false>(gate_up, act, slots, p.inter, rows_used, stream);
  }
}

}  // namespace
}  // namespace tgemm::moe_detail
