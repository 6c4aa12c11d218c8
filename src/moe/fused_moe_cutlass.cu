// fused_moe (include/tgemm/moe.h) on the CUTLASS grouped kernel (src/grouped/gmm_cutlass.h), for
// every call it can take (decode and prefill), with no host synchronisation:
//  1. with expert_map, map_experts_kernel turns the global ids into local ones (-1 where the id or
//     its mapping is out of range: the sort's tail bucket, which contributes nothing);
//  2. grouped_gemm's sort of the slots by expert (launch_gather_sort): expert e's slots are
//     perm[row_off[e] .. row_off[e + 1]);
//  3. gather_rows_kernel copies each sorted slot's hidden row into xs [S, H] (S = T * topk) and
//     records the slot's sorted position in inv [S];
//  4. gate/up GEMM: CUTLASS grouped, E groups of xs rows by w1 [E, 2I, H] into gate_up [S, 2I];
//  5. act_mul_kernel: act(gate) * up into act [S, I] (x's dtype), rows < row_off[E];
//  6. down GEMM: CUTLASS grouped, act by w2 [E, H, I] into ys [S, H] (xs's memory: xs is dead);
//  7. combine_kernel: out[t] = sum_j topk_weights[t, j] * ys[inv[t * topk + j]] in fp32, j in
//     order (deterministic, no atomics); slots of the tail bucket add nothing.
// Each expert's rows are multiplied by the same kernel whatever their sorted order, so a token's
// result does not depend on the atomic order of the sort.
// Preconditions: a validated MoeCall with T > 0, H > 0, I > 0 whose plan route_fused_moe made
// (src/moe/fmoe_dispatch.h). Tested by tests/gpu/test_moe.cpp (FusedMoeBackends.*) and tests/python/test_moe.py;
// benched by bench/torch_bench.py --fmoe with TGEMM_GROUPED_BACKEND=cutlass.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "grouped/gmm_cutlass.h"
#include "grouped/gmm_launch.h"
#include "moe/moe_elementwise.cuh"
#include "moe/moe_launch.h"

namespace tgemm {
namespace {

using namespace moe_detail;

constexpr int kRowThreads = 128;
constexpr int kVec = 8;  // bf16/fp16 elements per 16-byte access

// For sorted position pos < S: inv[slot] = pos (slot = perm[pos], clamped into [0, S)); for
// pos < row_off[E] (a slot of a local expert): xs[pos] = hidden[slot / topk]. One CTA a row.
template <typename In>
__global__ void __launch_bounds__(kRowThreads)
    gather_rows_kernel(const In* __restrict__ hidden, std::int64_t ld_hidden, const std::int32_t* __restrict__ perm,
                       const std::int64_t* __restrict__ used, std::int64_t slots, std::int64_t topk, std::int64_t h,
                       In* __restrict__ xs, std::int32_t* __restrict__ inv) {
  const std::int64_t pos = blockIdx.x;
  const std::int64_t slot = min(max(static_cast<std::int64_t>(perm[pos]), std::int64_t{0}), slots - 1);
  if (threadIdx.x == 0) inv[slot] = static_cast<std::int32_t>(pos);
  if (pos >= *used) return;
  const uint4* src = reinterpret_cast<const uint4*>(hidden + (slot / topk) * ld_hidden);
  uint4* dst = reinterpret_cast<uint4*>(xs + pos * h);
  for (std::int64_t c = threadIdx.x; c < h / kVec; c += kRowThreads) dst[c] = src[c];
}

// out[t, c .. c + 8) = sum_j topk_weights[t, j] * ys[inv[t * topk + j], c .. c + 8), j in order,
// fp32; slots whose sorted position is at or past row_off[E] (ids out of range) add nothing.
template <typename In, typename Out, typename Weight>
__global__ void __launch_bounds__(kElemThreads)
    combine_kernel(const In* __restrict__ ys, const std::int32_t* __restrict__ inv,
                   const Weight* __restrict__ topk_weights, const std::int64_t* __restrict__ used, std::int64_t tokens,
                   std::int64_t topk, std::int64_t h, Out* __restrict__ out, std::int64_t ldo) {
  const std::int64_t chunk = static_cast<std::int64_t>(blockIdx.x) * kElemThreads + threadIdx.x;
  const std::int64_t chunks = h / kVec;
  if (chunk >= tokens * chunks) return;
  const std::int64_t t = chunk / chunks, c = (chunk % chunks) * kVec;
  const std::int64_t rows = *used;
  float sum[kVec] = {};
  for (std::int64_t j = 0; j < topk; ++j) {
    const std::int64_t pos = inv[t * topk + j];
    if (pos < 0 || pos >= rows) continue;
    const float w = to_float(topk_weights[t * topk + j]);
    alignas(16) In y[kVec];
    *reinterpret_cast<uint4*>(y) = *reinterpret_cast<const uint4*>(ys + pos * h + c);
#pragma unroll
    for (int e = 0; e < kVec; ++e) sum[e] += w * to_float(y[e]);
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e) out[t * ldo + c + e] = from_float<Out>(sum[e]);
}

constexpr std::size_t kAlign = 128;  // CUTLASS's tensor-map sections want 64; every section gets 128
std::size_t align_up(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Workspace sections, each 128-byte aligned: local ids (int32 [S], with expert_map), the sort
// (grouped_gemm's sort sections), xs / ys ([S, H]), gate_up ([S, 2I]), act ([S, I]), inv (int32
// [S]), the two instances' arguments.
struct MoeCutlassWorkspace {
  std::int32_t* local_ids;
  void* sort;
  void* xs;
  void* gate_up;
  void* act;
  std::int32_t* inv;
  void* up_args;
  void* down_args;
  std::size_t bytes;
};

MoeCutlassWorkspace carve(const MoeProblem& p, const MoeCutlassPlan& plan, int sm_count, void* base) {
  const auto slots = static_cast<std::size_t>(p.tokens * p.topk);
  const std::size_t elem = dtype_size(p.in_type);
  const auto h = static_cast<std::size_t>(p.hidden), inter = static_cast<std::size_t>(p.inter);
  MoeCutlassWorkspace w{};
  auto* at = static_cast<char*>(base);
  std::size_t off = 0;
  auto take = [&](std::size_t bytes) -> void* {
    void* ptr = at == nullptr ? nullptr : at + off;
    off += align_up(bytes);
    return ptr;
  };
  w.local_ids = static_cast<std::int32_t*>(take(p.has_expert_map ? slots * 4 : 0));
  w.sort = take(gather_workspace_bytes(p.gate_up));  // unweighted: the sort sections only
  w.xs = take(slots * h * elem);
  w.gate_up = take(slots * 2 * inter * elem);
  w.act = take(slots * inter * elem);
  w.inv = static_cast<std::int32_t*>(take(slots * 4));
  w.up_args = take(plan.up->workspace_size(p.experts, sm_count));
  w.down_args = take(plan.down->workspace_size(p.experts, sm_count));
  w.bytes = off;
  return w;
}

template <typename In, typename Out, typename Weight>
void launch_combine(const MoeProblem& p, const MoeArgs& args, const MoeCutlassWorkspace& w, const std::int64_t* used,
                    Stream stream) {
  const std::int64_t chunks = p.tokens * (p.hidden / kVec);
  combine_kernel<In, Out, Weight><<<static_cast<unsigned>((chunks + kElemThreads - 1) / kElemThreads), kElemThreads, 0,
                                    reinterpret_cast<cudaStream_t>(stream)>>>(
      static_cast<const In*>(w.xs), w.inv, static_cast<const Weight*>(args.topk_weights), used, p.tokens, p.topk,
      p.hidden, static_cast<Out*>(args.out), p.down.out_token_stride);
  TGEMM_CUDA_CHECK_LAUNCH("fused_moe: combine_kernel");
}

template <typename In>
void run_typed(const MoeProblem& p, const MoeArgs& args, const MoeCutlassPlan& plan, const MoeCutlassWorkspace& w,
               const GatherSortView& sort, int device, Stream stream) {
  const std::int64_t slots = p.tokens * p.topk;
  const std::int64_t* used = sort.row_off + p.experts;  // rows of the local experts
  gather_rows_kernel<In><<<static_cast<unsigned>(slots), kRowThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
      static_cast<const In*>(args.hidden), p.gate_up.x_token_stride, sort.perm, used, slots, p.topk, p.hidden,
      static_cast<In*>(w.xs), w.inv);
  TGEMM_CUDA_CHECK_LAUNCH("fused_moe: gather_rows_kernel");

  grouped_cutlass::GroupedLaunch up;
  up.groups = p.experts;
  up.n = 2 * p.inter;
  up.k = p.hidden;
  up.a = w.xs;
  up.lda = p.hidden;
  up.b = args.w1;
  up.b_group_stride = p.gate_up.w_expert_stride;
  up.ldb = p.gate_up.w_row_stride;
  up.d = w.gate_up;
  up.ldd = 2 * p.inter;
  up.row_off = sort.row_off;
  up.device = device;
  up.sm_count = cuda_device_info(device).sm_count;
  plan.up->run(up, w.up_args, stream, "fused_moe: CUTLASS gate/up grouped GEMM");

  launch_act<In>(p, w.gate_up, w.act, slots, used, stream);

  grouped_cutlass::GroupedLaunch down = up;
  down.n = p.hidden;
  down.k = p.inter;
  down.a = w.act;
  down.lda = p.inter;
  down.b = args.w2;
  down.b_group_stride = p.down.w_expert_stride;
  down.ldb = p.down.w_row_stride;
  down.d = w.xs;  // ys: xs is dead after the gate/up GEMM
  down.ldd = p.hidden;
  plan.down->run(down, w.down_args, stream, "fused_moe: CUTLASS down grouped GEMM");

  const bool w32 = p.down.topk_weights_type == DType::kFloat32;
  if (p.down.out_type == DType::kFloat32) {
    w32 ? launch_combine<In, float, float>(p, args, w, used, stream)
        : launch_combine<In, float, In>(p, args, w, used, stream);
  } else {
    w32 ? launch_combine<In, In, float>(p, args, w, used, stream)
        : launch_combine<In, In, In>(p, args, w, used, stream);
  }
}

}  // namespace

std::size_t fused_moe_cutlass_workspace_bytes(const MoeProblem& p, const MoeCutlassPlan& plan, int device) {
  return carve(p, plan, cuda_device_info(device).sm_count, nullptr).bytes;
}

void launch_fused_moe_cutlass(const MoeProblem& p, const MoeArgs& args, const MoeCutlassPlan& plan, void* workspace,
                              int device, Stream stream) {
  const MoeCutlassWorkspace w = carve(p, plan, cuda_device_info(device).sm_count, workspace);
  const std::int64_t slots = p.tokens * p.topk;
  const std::int32_t* ids = args.topk_ids;
  if (p.has_expert_map) {
    map_experts_kernel<<<static_cast<unsigned>((slots + kElemThreads - 1) / kElemThreads), kElemThreads, 0,
                         reinterpret_cast<cudaStream_t>(stream)>>>(args.topk_ids, slots, args.expert_map,
                                                                   p.global_experts, w.local_ids);
    TGEMM_CUDA_CHECK_LAUNCH("fused_moe: map_experts_kernel");
    ids = w.local_ids;
  }
  GatherArgs sort_args{};
  sort_args.expert_ids = ids;
  launch_gather_sort(p.gate_up, sort_args, w.sort, stream);
  const GatherSortView sort = gather_sort_view(p.gate_up, w.sort);
  // CUTLASS encodes its TMA descriptors with the driver API: the thread needs a current context.
  cuda_bind_context(device);
  if (p.in_type == DType::kFloat16) {
    run_typed<fp16>(p, args, plan, w, sort, device, stream);
  } else {
    run_typed<bf16>(p, args, plan, w, sort, device, stream);
  }
}

}  // namespace tgemm
