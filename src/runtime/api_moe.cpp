// Public entry points of include/tgemm/moe.h: validate, return early on empty problems, run the MoE
// kernels. fused_moe runs the path route_fused_moe picks (src/moe/fmoe_dispatch.h): the forced
// backend, the tuned table's row, or the default rule between the CUTLASS grouped path
// (src/moe/fused_moe_cutlass.cu) and the tile path (src/moe/fused_moe.cu).
#include <cstdint>

#include "core/log.h"
#include "core/validate_moe.h"
#include "grouped/gmm_cutlass.h"
#include "moe/fmoe_dispatch.h"
#include "moe/moe_launch.h"
#include "runtime/runtime.h"
#include "tgemm/moe.h"

namespace tgemm {

namespace {

using grouped_cutlass::GroupedKernel;
using grouped_cutlass::GroupedShape;

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

// The grouped shapes of the two GEMMs over the slots (T * k rows in E groups): gate/up [S, H] x
// w1 [E, 2I, H]^T, down [S, I] x w2 [E, H, I]^T.
GroupedShape gate_up_shape(const MoeCall& call) {
  const MoeProblem& p = call.problem;
  GroupedShape s;
  s.rows = p.tokens * p.topk;
  s.groups = p.experts;
  s.in = p.in_type;
  s.b_k_major = true;
  s.tma_compatible = fused_moe_cutlass_can_take(p, call.args);
  s.n = 2 * p.inter;
  s.k = p.hidden;
  return s;
}

GroupedShape down_shape(const MoeCall& call) {
  GroupedShape s = gate_up_shape(call);
  s.n = call.problem.hidden;
  s.k = call.problem.inter;
  return s;
}

bool plannable(const MoeProblem& p) {
  return p.tokens > 0 && p.hidden > 0 && p.inter > 0 && p.topk > 0 && p.experts > 0;
}

// The rule of src/grouped/gmm_cutlass.h under `backend` for both GEMMs; the tile path (both null)
// where either stays on the tile kernels.
MoeCutlassPlan plan_under(const MoeCall& call, int device, GroupedBackend backend) {
  MoeCutlassPlan plan;
  if (!plannable(call.problem)) return plan;
  const GroupedKernel* up = grouped_cutlass::pick_grouped_kernel(gate_up_shape(call), device, backend);
  const GroupedKernel* down =
      up != nullptr ? grouped_cutlass::pick_grouped_kernel(down_shape(call), device, backend) : nullptr;
  if (up != nullptr && down != nullptr) {
    plan.up = up;
    plan.down = down;
  }
  return plan;
}

// The loadable instance called `name` where it can take `s`; else null and *why says what is
// missing.
const GroupedKernel* named_kernel(const std::string& name, const GroupedShape& s, int device, std::string* why) {
  for (const GroupedKernel* k : grouped_cutlass::loadable_grouped_kernels(device)) {
    if (name != k->generated_name) continue;
    if (k->config.in != s.in || k->config.b_k_major != s.b_k_major || !grouped_cutlass::cutlass_can_take(s)) {
      *why = name + " cannot take this call (its dtype, H or I not a multiple of 8, or operand alignment)";
      return nullptr;
    }
    return k;
  }
  *why = "instance '" + name + "' is not a CUTLASS grouped instance loadable on this device";
  return nullptr;
}

// A row's plan; *why is set where the row cannot serve the call.
MoeCutlassPlan row_plan(const FmoeRow& row, const MoeCall& call, int device, std::string* why) {
  MoeCutlassPlan plan;
  if (row.solution == kFmoeTileSolution) return plan;
  if (!plannable(call.problem)) {
    *why = "the call has no rows for the CUTLASS path";
    return plan;
  }
  const GroupedKernel* up = named_kernel(row.up, gate_up_shape(call), device, why);
  const GroupedKernel* down = up != nullptr ? named_kernel(row.down, down_shape(call), device, why) : nullptr;
  if (up != nullptr && down != nullptr) {
    plan.up = up;
    plan.down = down;
  }
  return plan;
}

std::string plan_text(const MoeCutlassPlan& plan) {
  if (plan.up == nullptr) return kFmoeTileSolution;
  return std::string(kFmoeCutlassSolution) + " up " + plan.up->generated_name + " down " + plan.down->generated_name;
}

void log_route(FmoeTables& tables, const FmoeKey& key, const FmoeRoute& r) {
  std::string line = "fused_moe " + key.describe() + ": ";
  if (r.row != nullptr) {
    line += "level table in " + r.row->file + ":" + std::to_string(r.row->line);
  } else {
    line += std::string("level ") + r.level;
  }
  line += ", solution " + plan_text(r.plan);
  if (tables.first_time(line)) log_info(line);
}

}  // namespace

bool fused_moe_cutlass_can_take(const MoeProblem& p, const MoeArgs& args) {
  return aligned16(args.hidden) && aligned16(args.w1) && aligned16(args.w2) && aligned16(args.out) &&
         p.gate_up.x_token_stride % 8 == 0 && p.gate_up.w_expert_stride % 8 == 0 && p.gate_up.w_row_stride % 8 == 0 &&
         p.down.w_expert_stride % 8 == 0 && p.down.w_row_stride % 8 == 0 && p.down.out_token_stride % 8 == 0 &&
         p.hidden % 8 == 0 && p.inter % 8 == 0;
}

FmoeKey fused_moe_key(const MoeProblem& p, const std::string& arch, int sm_count) {
  return fmoe_key(p.tokens, p.experts, p.topk, p.hidden, p.inter, p.in_type, FmoeQuant::kNone, p.activation, arch,
                  sm_count);
}

MoeCutlassPlan fused_moe_default_plan(const MoeCall& call, int device) {
  return plan_under(call, device, GroupedBackend::kAuto);
}

std::string fmoe_solution_name(const MoeCutlassPlan& plan) {
  return plan.up == nullptr ? kFmoeTileSolution : kFmoeCutlassSolution;
}

std::vector<MoeCutlassPlan> fused_moe_candidates(const MoeCall& call, int device) {
  std::vector<MoeCutlassPlan> out = {MoeCutlassPlan{}};
  if (!plannable(call.problem)) return out;
  const GroupedShape up_s = gate_up_shape(call), down_s = down_shape(call);
  if (!grouped_cutlass::cutlass_can_take(up_s) || !grouped_cutlass::cutlass_can_take(down_s)) return out;
  std::vector<const GroupedKernel*> fit;
  for (const GroupedKernel* k : grouped_cutlass::loadable_grouped_kernels(device)) {
    if (k->config.in == up_s.in && k->config.b_k_major == up_s.b_k_major) fit.push_back(k);
  }
  for (const GroupedKernel* up : fit) {
    for (const GroupedKernel* down : fit) out.push_back(MoeCutlassPlan{up, down});
  }
  return out;
}

FmoeRoute route_fused_moe(const MoeCall& call, int device) {
  Runtime& rt = Runtime::get();
  const GroupedBackend backend = rt.dispatcher().settings().grouped_backend;
  FmoeTables& tables = rt.fmoe_tables();
  const DeviceInfo& dev = rt.platform().device_info(device);
  const FmoeKey key = fused_moe_key(call.problem, dev.arch, dev.sm_count);
  FmoeRoute r;
  if (backend != GroupedBackend::kAuto) {
    r.plan = plan_under(call, device, backend);
    r.level = "forced";
  } else if (const FmoeRow* row = tables.table_for(dev).find(key)) {
    std::string why;
    const MoeCutlassPlan plan = row_plan(*row, call, device, &why);
    if (why.empty()) {
      r.plan = plan;
      r.level = "table";
      r.row = row;
    } else {
      const std::string where = row->file + ":" + std::to_string(row->line);
      log_warning_once("fmoe-row:" + where, where + ": " + why + ", row skipped (fused_moe's default rule serves)");
    }
  }
  if (r.level == std::string_view("default")) {
    r.plan = plan_under(call, device, GroupedBackend::kAuto);
    // Only keys no row serves: a tune of the capture adds their rows.
    if (key.tokens > 0) tables.record_untuned(key);
  }
  if (tables.log_choices()) log_route(tables, key, r);
  return r;
}

void run_fused_moe_on(const MoeCall& call, const MoeCutlassPlan& plan, int device, Stream stream) {
  const MoeProblem& p = call.problem;
  Runtime& rt = Runtime::get();
  if (plan.up != nullptr) {
    Workspace ws = rt.workspaces().get(device, stream, fused_moe_cutlass_workspace_bytes(p, plan, device));
    launch_fused_moe_cutlass(p, call.args, plan, ws.data, device, stream);
    return;
  }
  Workspace ws = rt.workspaces().get(device, stream, fused_moe_workspace_bytes(p));
  launch_fused_moe(p, call.args, ws.data, stream);
}

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
  const int device = Runtime::get().platform().current_device();
  run_fused_moe_on(call, route_fused_moe(call, device).plan, device, stream);
}

DispatchInfo describe_fused_moe(const TensorView& hidden, const TensorView& w1, const TensorView& w2,
                                const TensorView& topk_weights, const TensorView& topk_ids, const TensorView& out,
                                MoeActivation activation, const TensorView* expert_map) {
  const MoeCall call =
      validate_fused_moe(hidden, w1, w2, topk_weights, topk_ids, out, activation, expert_map, "describe_fused_moe");
  DispatchInfo info;
  if (call.problem.tokens == 0 || call.problem.hidden == 0) {
    info.level = "empty";
    info.libtype = "none";
    info.kernel_name = "none";
    return info;
  }
  const FmoeRoute r = route_fused_moe(call, Runtime::get().platform().current_device());
  info.level = r.level;
  if (r.row != nullptr) {
    info.matched_m = r.row->t > 0 ? r.row->t : r.row->key.tokens;
    info.file = r.row->file;
    info.line = r.row->line;
  }
  info.libtype = r.plan.up == nullptr ? "fused_moe_tile" : "fused_moe_cutlass";
  info.kernel_name = plan_text(r.plan);
  return info;
}

}  // namespace tgemm
