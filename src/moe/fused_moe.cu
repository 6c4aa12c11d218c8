// fused_moe (include/tgemm/moe.h) on grouped_gemm's sorted, tiled kernel (src/grouped/gather_tiled.cu),
// with no host synchronisation: the tile path, for the calls the CUTLASS path
// (src/moe/fused_moe_cutlass.cu) does not take (decode-sized T by default):
//  1. with expert_map, map_experts_kernel turns the global ids into local ones (-1 where the id or
//     its mapping is out of range: grouped_gemm's out-of-range bucket, whose rows are zeros);
//  2. grouped_gemm's sort of the slots by expert (a memset and three small kernels), once for both
//     GEMMs;
//  3. gate/up GEMM: grouped_gemm's tiles, hidden [T, H] by w1 [E, 2I, H] into gate_up [T * k, 2I];
//  4. act_mul_kernel: act(gate) * up in fp32 into act [T * k, I] (x's dtype);
//  5. down GEMM: grouped_gemm's tiles, act [T, k, I] by w2 [E, H, I], weighted by topk_weights and
//     summed over the k slots in fp32 into out [T, H].
// Preconditions: a validated MoeCall with T > 0 and H > 0 (launch_fused_moe).
// Tested by tests/gpu/test_moe.cpp (FusedMoe.*) and tests/python/test_moe.py; benched by
// bench/moe_bench.py (bench/torch_bench.py --fmoe).
#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "grouped/gmm_launch.h"
#include "moe/moe_elementwise.cuh"
#include "moe/moe_launch.h"

namespace tgemm {
namespace {

using namespace moe_detail;

std::size_t align16(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

// Workspace sections, each 16-byte aligned: local ids (int32 [S], with expert_map), gate_up
// ([S, 2I]), act ([S, I]), then the grouped_gemm workspace (the larger of the two GEMMs').
struct MoeWorkspace {
  std::int32_t* local_ids;
  void* gate_up;
  void* act;
  void* gather;
  std::size_t bytes;
};

MoeWorkspace carve(const MoeProblem& p, void* base) {
  const auto slots = static_cast<std::size_t>(p.tokens * p.topk);
  const std::size_t elem = dtype_size(p.in_type), inter = static_cast<std::size_t>(p.inter);
  MoeWorkspace w{};
  auto* at = static_cast<char*>(base);
  std::size_t off = 0;
  auto take = [&](std::size_t bytes) -> void* {
    void* ptr = at == nullptr ? nullptr : at + off;
    off += align16(bytes);
    return ptr;
  };
  w.local_ids = static_cast<std::int32_t*>(take(p.has_expert_map ? slots * 4 : 0));
  w.gate_up = take(slots * 2 * inter * elem);
  w.act = take(slots * inter * elem);
  const std::size_t gather_bytes = std::max(gather_workspace_bytes(p.gate_up), gather_workspace_bytes(p.down));
  w.gather = take(gather_bytes);
  w.bytes = off;
  return w;
}

}  // namespace

std::size_t fused_moe_workspace_bytes(const MoeProblem& p) { return carve(p, nullptr).bytes; }

void launch_fused_moe(const MoeProblem& p, const MoeArgs& args, void* workspace, Stream stream) {
  const MoeWorkspace w = carve(p, workspace);
  const std::int64_t slots = p.tokens * p.topk;
  const std::int32_t* ids = args.topk_ids;
  if (p.has_expert_map && slots > 0) {
    map_experts_kernel<<<static_cast<unsigned>((slots + kElemThreads - 1) / kElemThreads), kElemThreads, 0, stream>>>(
        args.topk_ids, slots, args.expert_map, p.global_experts, w.local_ids);
    TGEMM_CUDA_CHECK_LAUNCH("fused_moe: map_experts_kernel");
    ids = w.local_ids;
  }
  GatherArgs sort{};
  sort.expert_ids = ids;
  // The down problem's workspace holds the gate/up one's: the same sort sections, then its products.
  launch_gather_sort(p.down, sort, w.gather, stream);
  // With no slot or I = 0 the down GEMM reads nothing and sums to zeros.
  if (slots > 0 && p.inter > 0) {
    GatherArgs up{};
    up.x = args.hidden;
    up.weights = args.w1;
    up.expert_ids = ids;
    up.out = w.gate_up;
    launch_gather_presorted(p.gate_up, up, w.gather, stream);
    if (p.in_type == DType::kFloat16) {
      launch_act<fp16>(p, w.gate_up, w.act, slots, nullptr, stream);
    } else {
      launch_act<bf16>(p, w.gate_up, w.act, slots, nullptr, stream);
    }
  }
  GatherArgs down{};
  down.x = w.act;
  down.weights = args.w2;
  down.expert_ids = ids;
  down.topk_weights = args.topk_weights;
  down.out = args.out;
  launch_gather_presorted(p.down, down, w.gather, stream);
}

}  // namespace tgemm
