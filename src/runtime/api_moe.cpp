// Public entry points of include/tgemm/moe.h: validate, return early on empty problems, run the MoE
// kernels (fused_moe with the stream's workspace: the CUTLASS grouped path where its rule picks it,
// src/moe/fused_moe_cutlass.cu, the tile path otherwise).
#include "core/validate_moe.h"
#include "moe/moe_launch.h"
#include "runtime/runtime.h"
#include "tgemm/moe.h"

namespace tgemm {

void topk_softmax(const TensorView& gating, const TensorView& topk_weights, const TensorView& topk_ids,
                  bool renormalize, Stream stream) {
  const RoutingCall call = validate_topk_softmax(gating, topk_weights, topk_ids, renormalize, "topk_softmax");
  if (call.problem.tokens == 0 || call.problem.topk == 0) return;
  launch_routing(call.problem, call.args, stream, "topk_softmax: routing_kernel");
}

void grouped_topk(const TensorView& gating, const TensorView* correction_bias, std::int64_t n_group,
                  std::int64_t topk_group, MoeScoring scoring, bool renormalize, double routed_scaling,
                  const TensorView& topk_weights, const TensorView& topk_ids, Stream stream) {
  const RoutingCall call = validate_grouped_topk(gating, correction_bias, n_group, topk_group, scoring, renormalize,
                                                 routed_scaling, topk_weights, topk_ids, "grouped_topk");
  if (call.problem.tokens == 0 || call.problem.topk == 0) return;
  launch_routing(call.problem, call.args, stream, "grouped_topk: routing_kernel");
}

void fused_moe(const TensorView& hidden, const TensorView& w1, const TensorView& w2, const TensorView& topk_weights,
               const TensorView& topk_ids, const TensorView& out, MoeActivation activation,
               const TensorView* expert_map, Stream stream) {
  const MoeCall call =
      validate_fused_moe(hidden, w1, w2, topk_weights, topk_ids, out, activation, expert_map, "fused_moe");
  const MoeProblem& p = call.problem;
  if (p.tokens == 0 || p.hidden == 0) return;
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  const MoeCutlassPlan plan = select_fused_moe_cutlass(p, call.args, device);
  if (plan.up != nullptr) {
    Workspace ws = rt.workspaces().get(device, stream, fused_moe_cutlass_workspace_bytes(p, plan, device));
    launch_fused_moe_cutlass(p, call.args, plan, ws.data, device, stream);
    return;
  }
  Workspace ws = rt.workspaces().get(device, stream, fused_moe_workspace_bytes(p));
  launch_fused_moe(p, call.args, ws.data, stream);
}

}  // namespace tgemm
