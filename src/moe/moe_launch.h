// Launchers of the MoE kernels (src/moe/*.cu); host-only declarations. Each takes a validated call
// (core/validate_moe.h) with a non-empty output and never synchronises with the host: logits, expert
// ids and the expert map are read on the device only.
#pragma once

#include <cstddef>

#include "core/validate_moe.h"

namespace tgemm {

namespace grouped_cutlass {
struct GroupedKernel;
}

// topk_softmax and grouped_topk (p.n_group, p.topk_group, p.scoring, p.has_bias select the rule):
// one CTA per token row. Needs p.tokens > 0 and p.topk > 0.
void launch_routing(const RoutingProblem& p, const RoutingArgs& args, Stream stream, const char* op);

// Workspace of one fused_moe call: the mapped expert ids (with expert_map), the gate/up products
// [T * k, 2I], the activated [T * k, I] (x's dtype) and the grouped_gemm sort shared by both GEMMs.
std::size_t fused_moe_workspace_bytes(const MoeProblem& p);
// out = fused_moe(...) for a validated call with T > 0 and H > 0.
void launch_fused_moe(const MoeProblem& p, const MoeArgs& args, void* workspace, Stream stream);

// fused_moe's two GEMMs on the CUTLASS grouped kernel (src/moe/fused_moe_cutlass.cu): the
// instances of the gate/up and the down GEMM, both null for the tile path.
struct MoeCutlassPlan {
  const grouped_cutlass::GroupedKernel* up = nullptr;
  const grouped_cutlass::GroupedKernel* down = nullptr;
};
// The plan (route_fused_moe, src/moe/fmoe_dispatch.h) must name instances that can take the call:
// H and I multiples of 8, operands 16-byte aligned (fused_moe_cutlass_can_take).
std::size_t fused_moe_cutlass_workspace_bytes(const MoeProblem& p, const MoeCutlassPlan& plan, int device);
// out = fused_moe(...) on the plan's instances, for a validated call with T, H and I > 0.
void launch_fused_moe_cutlass(const MoeProblem& p, const MoeArgs& args, const MoeCutlassPlan& plan, void* workspace,
                              int device, Stream stream);

}  // namespace tgemm
