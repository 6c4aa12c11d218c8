#include "core/validate_moe.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/check.h"
#include "core/validate.h"

namespace tgemm {
namespace {

constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();

// gating [T, E] and the outputs topk_weights fp32 / topk_ids int32 [T, k] of both routing ops.
RoutingCall validate_routing(const TensorView& gating, const TensorView* correction_bias,
                             const TensorView& topk_weights, const TensorView& topk_ids, std::string_view op) {
  check_view(&gating, "gating", {2}, op);
  check_view(correction_bias, "correction_bias", {1}, op);
  check_view(&topk_weights, "topk_weights", {2}, op);
  check_view(&topk_ids, "topk_ids", {2}, op);
  TGEMM_CHECK(gating.dtype == DType::kBFloat16 || gating.dtype == DType::kFloat16 || gating.dtype == DType::kFloat32,
              op, "gating.dtype must be torch.bfloat16, torch.float16 or torch.float32, got ",
              dtype_name(gating.dtype));
  if (correction_bias) {
    TGEMM_CHECK(correction_bias->dtype == DType::kFloat32, op, "correction_bias.dtype must be torch.float32, got ",
                dtype_name(correction_bias->dtype));
  }
  TGEMM_CHECK(topk_weights.dtype == DType::kFloat32, op, "topk_weights.dtype must be torch.float32, got ",
              dtype_name(topk_weights.dtype));
  TGEMM_CHECK(topk_ids.dtype == DType::kInt32, op, "topk_ids.dtype must be torch.int32, got ",
              dtype_name(topk_ids.dtype));

  const std::int64_t t = gating.size(0), e = gating.size(1), k = topk_ids.size(1);
  TGEMM_CHECK(topk_ids.size(0) == t, op, "topk_ids.size(0) must equal gating.size(0) (T), got ", topk_ids.size(0),
              " vs ", t);
  TGEMM_CHECK(topk_weights.size(0) == t && topk_weights.size(1) == k, op,
              "topk_weights must have topk_ids's shape [T, k] = [", t, ", ", k, "], got ", shape_str(topk_weights));
  if (correction_bias) {
    TGEMM_CHECK(correction_bias->size(0) == e, op, "correction_bias.size(0) must equal gating.size(1) (E), got ",
                correction_bias->size(0), " vs ", e);
  }
  TGEMM_CHECK(e <= kMaxRoutingExperts, op, "gating.size(1) (E) must be <= ", kMaxRoutingExperts,
              " (a row's scores live in shared memory), got ", e);
  TGEMM_CHECK(k <= e, op, "k (topk_ids.size(1)) must be <= E (gating.size(1)), got k=", k, " E=", e);
  TGEMM_CHECK(t <= kMaxInt32, op, "gating.size(0) (T) must be <= ", kMaxInt32, " (one CTA per row), got ", t);

  RoutingCall call;
  RoutingProblem& p = call.problem;
  p.ld_gating = check_rows(gating, 0, "gating", op);
  check_contiguous(topk_weights, "topk_weights", op);
  check_contiguous(topk_ids, "topk_ids", op);
  if (correction_bias) check_contiguous(*correction_bias, "correction_bias", op);
  check_alignment_and_overlap(topk_weights, "topk_weights", {{&gating, "gating"}, {correction_bias, "correction_bias"}},
                              op);
  check_alignment_and_overlap(
      topk_ids, "topk_ids",
      {{&gating, "gating"}, {correction_bias, "correction_bias"}, {&topk_weights, "topk_weights"}}, op);

  p.tokens = t;
  p.experts = e;
  p.topk = k;
  p.gating_type = gating.dtype;
  p.has_bias = correction_bias != nullptr;
  call.args.gating = gating.data;
  call.args.correction_bias = correction_bias ? static_cast<const float*>(correction_bias->data) : nullptr;
  call.args.topk_weights = static_cast<float*>(topk_weights.data);
  call.args.topk_ids = static_cast<std::int32_t*>(topk_ids.data);
  return call;
}

}  // namespace

RoutingCall validate_topk_softmax(const TensorView& gating, const TensorView& topk_weights, const TensorView& topk_ids,
                                  bool renormalize, std::string_view op) {
  RoutingCall call = validate_routing(gating, nullptr, topk_weights, topk_ids, op);
  call.problem.renormalize = renormalize;
  return call;
}

RoutingCall validate_grouped_topk(const TensorView& gating, const TensorView* correction_bias, std::int64_t n_group,
                                  std::int64_t topk_group, MoeScoring scoring, bool renormalize, double routed_scaling,
                                  const TensorView& topk_weights, const TensorView& topk_ids, std::string_view op) {
  RoutingCall call = validate_routing(gating, correction_bias, topk_weights, topk_ids, op);
  RoutingProblem& p = call.problem;
  TGEMM_CHECK(n_group >= 1 && n_group <= std::max<std::int64_t>(p.experts, 1) && p.experts % n_group == 0, op,
              "n_group must be >= 1 and divide E (gating.size(1)), got n_group=", n_group, " E=", p.experts);
  TGEMM_CHECK(topk_group >= 1 && topk_group <= n_group, op, "topk_group must be in [1, n_group] = [1, ", n_group,
              "], got ", topk_group);
  const std::int64_t reachable = topk_group * (p.experts / n_group);
  TGEMM_CHECK(p.topk <= reachable, op, "k (topk_ids.size(1)) must be <= topk_group * E / n_group (", reachable,
              ": the experts of the chosen groups), got ", p.topk);
  TGEMM_CHECK(std::isfinite(routed_scaling), op, "routed_scaling must be finite, got ", routed_scaling);
  TGEMM_CHECK(scoring == MoeScoring::kSoftmax || scoring == MoeScoring::kSigmoid, op,
              "scoring must be softmax or sigmoid, got enum value ", static_cast<int>(scoring));
  p.n_group = n_group;
  p.topk_group = topk_group;
  p.scoring = scoring;
  p.renormalize = renormalize;
  p.routed_scaling = routed_scaling;
  return call;
}

namespace {

void check_moe_dtypes(const TensorView& hidden, const TensorView& w1, const TensorView& w2,
                      const TensorView& topk_weights, const TensorView& topk_ids, const TensorView& out,
                      const TensorView* expert_map, std::string_view op) {
  check_16bit_operands(hidden, "hidden", w1, "w1", op);
  TGEMM_CHECK(w2.dtype == hidden.dtype, op, "w2.dtype must equal hidden.dtype (", dtype_name(hidden.dtype), "), got ",
              dtype_name(w2.dtype));
  TGEMM_CHECK(topk_weights.dtype == DType::kFloat32 || topk_weights.dtype == hidden.dtype, op,
              "topk_weights.dtype must be torch.float32 or hidden.dtype (", dtype_name(hidden.dtype), "), got ",
              dtype_name(topk_weights.dtype));
  TGEMM_CHECK(topk_ids.dtype == DType::kInt32, op, "topk_ids.dtype must be torch.int32, got ",
              dtype_name(topk_ids.dtype));
  TGEMM_CHECK(out.dtype == hidden.dtype || out.dtype == DType::kFloat32, op, "out.dtype must be hidden.dtype (",
              dtype_name(hidden.dtype), ") or torch.float32, got ", dtype_name(out.dtype));
  if (expert_map) {
    TGEMM_CHECK(expert_map->dtype == DType::kInt32, op, "expert_map.dtype must be torch.int32, got ",
                dtype_name(expert_map->dtype));
  }
}

void check_moe_shapes(const TensorView& hidden, const TensorView& w1, const TensorView& w2,
                      const TensorView& topk_weights, const TensorView& topk_ids, const TensorView& out,
                      std::string_view op) {
  const std::int64_t t = hidden.size(0), h = hidden.size(1), e = w1.size(0), two_i = w1.size(1);
  TGEMM_CHECK(w2.size(0) == e, op, "w2.size(0) must equal w1.size(0) (E, the experts), got ", w2.size(0), " vs ", e);
  TGEMM_CHECK(two_i % 2 == 0, op, "w1.size(1) must be even (2 * I: the gate rows, then the up rows), got ", two_i);
  TGEMM_CHECK(w1.size(2) == h, op, "w1.size(2) must equal hidden.size(1) (H), got ", w1.size(2), " vs ", h);
  TGEMM_CHECK(w2.size(1) == h && w2.size(2) == two_i / 2, op, "w2 must have shape [E, H, I] = [", e, ", ", h, ", ",
              two_i / 2, "] (I = w1.size(1) / 2), got ", shape_str(w2));
  TGEMM_CHECK(topk_ids.size(0) == t, op, "topk_ids.size(0) must equal hidden.size(0) (T), got ", topk_ids.size(0),
              " vs ", t);
  TGEMM_CHECK(topk_weights.size(0) == t && topk_weights.size(1) == topk_ids.size(1), op,
              "topk_weights must have topk_ids's shape [T, k] = [", t, ", ", topk_ids.size(1), "], got ",
              shape_str(topk_weights));
  TGEMM_CHECK(out.size(0) == t && out.size(1) == h, op, "out must have shape [T, H] = [", t, ", ", h, "], got ",
              shape_str(out));
  const std::int64_t k = topk_ids.size(1), slots = t * k;
  TGEMM_CHECK(h <= kMaxInt32 && two_i <= kGroupedMaxN && h <= kGroupedMaxN, op, "H and 2I must be <= ", kGroupedMaxN,
              " (column tiles of 64 on the grid's y axis), got H=", h, " 2I=", two_i);
  TGEMM_CHECK(slots <= kMaxInt32 && (slots + 63) / 64 + e + 1 <= kMaxInt32, op,
              "T * k must fit in int32 and ceil(T * k / 64) + E + 1 too, got T=", t, " k=", k, " E=", e);
}

// The expert stride of a stacked weight [E, rows, cols] with row stride ld: experts must not
// overlap.
std::int64_t expert_stride(const TensorView& w, std::int64_t ld, const char* name, std::string_view op) {
  const std::int64_t expert_elems = w.size(1) * ld;
  TGEMM_CHECK(w.size(0) <= 1 || w.size(1) == 0 || w.stride(0) >= expert_elems, op, name, ".stride(0) must be >= ", name,
              ".size(1) * ", name, ".stride(1) (", expert_elems, ") so experts do not overlap, got strides ",
              strides_str(w));
  return w.size(0) <= 1 ? expert_elems : w.stride(0);
}

}  // namespace

MoeCall validate_fused_moe(const TensorView& hidden, const TensorView& w1, const TensorView& w2,
                           const TensorView& topk_weights, const TensorView& topk_ids, const TensorView& out,
                           MoeActivation activation, const TensorView* expert_map, std::string_view op) {
  check_view(&hidden, "hidden", {2}, op);
  check_view(&w1, "w1", {3}, op);
  check_view(&w2, "w2", {3}, op);
  check_view(&topk_weights, "topk_weights", {2}, op);
  check_view(&topk_ids, "topk_ids", {2}, op);
  check_view(&out, "out", {2}, op);
  check_view(expert_map, "expert_map", {1}, op);
  check_moe_dtypes(hidden, w1, w2, topk_weights, topk_ids, out, expert_map, op);
  check_moe_shapes(hidden, w1, w2, topk_weights, topk_ids, out, op);
  TGEMM_CHECK(activation == MoeActivation::kSilu || activation == MoeActivation::kGelu, op,
              "activation must be silu or gelu, got enum value ", static_cast<int>(activation));

  MoeCall call;
  MoeProblem& p = call.problem;
  const std::int64_t ld_hidden = check_rows(hidden, 0, "hidden", op);
  const std::int64_t ld_w1 = check_rows(w1, 1, "w1", op);
  const std::int64_t ld_w2 = check_rows(w2, 1, "w2", op);
  const std::int64_t w1_expert = expert_stride(w1, ld_w1, "w1", op);
  const std::int64_t w2_expert = expert_stride(w2, ld_w2, "w2", op);
  const std::int64_t ld_out = check_rows(out, 0, "out", op);
  check_contiguous(topk_weights, "topk_weights", op);
  check_contiguous(topk_ids, "topk_ids", op);
  if (expert_map) check_contiguous(*expert_map, "expert_map", op);
  check_alignment_and_overlap(out, "out",
                              {{&hidden, "hidden"},
                               {&w1, "w1"},
                               {&w2, "w2"},
                               {&topk_weights, "topk_weights"},
                               {&topk_ids, "topk_ids"},
                               {expert_map, "expert_map"}},
                              op);

  p.tokens = hidden.size(0);
  p.hidden = hidden.size(1);
  p.topk = topk_ids.size(1);
  p.experts = w1.size(0);
  p.global_experts = expert_map ? expert_map->size(0) : p.experts;
  p.inter = w1.size(1) / 2;
  p.in_type = hidden.dtype;
  p.activation = activation;
  p.has_expert_map = expert_map != nullptr;

  // gate_up: [T, H] x w1[e]^T -> [T, k, 2I] in the workspace (contiguous), one row per slot.
  GatherProblem& g = p.gate_up;
  g.tokens = p.tokens;
  g.topk = p.topk;
  g.n = 2 * p.inter;
  g.k = p.hidden;
  g.experts = p.experts;
  g.in_type = g.out_type = hidden.dtype;
  g.transpose_weights = true;
  g.x_token_stride = ld_hidden;
  g.w_expert_stride = w1_expert;
  g.w_row_stride = ld_w1;
  g.out_slot_stride = g.n;
  g.out_token_stride = p.topk * g.n;

  // down: [T, k, I] (the workspace, contiguous) x w2[e]^T, weighted over the slots -> out [T, H].
  GatherProblem& d = p.down;
  d.tokens = p.tokens;
  d.topk = p.topk;
  d.n = p.hidden;
  d.k = p.inter;
  d.experts = p.experts;
  d.in_type = hidden.dtype;
  d.out_type = out.dtype;
  d.topk_weights_type = topk_weights.dtype;
  d.x_per_slot = true;
  d.transpose_weights = true;
  d.weighted = true;
  d.x_slot_stride = p.inter;
  d.x_token_stride = p.topk * p.inter;
  d.w_expert_stride = w2_expert;
  d.w_row_stride = ld_w2;
  d.out_token_stride = ld_out;

  call.args.hidden = hidden.data;
  call.args.w1 = w1.data;
  call.args.w2 = w2.data;
  call.args.topk_weights = topk_weights.data;
  call.args.topk_ids = static_cast<const std::int32_t*>(topk_ids.data);
  call.args.expert_map = expert_map ? static_cast<const std::int32_t*>(expert_map->data) : nullptr;
  call.args.out = out.data;
  return call;
}

}  // namespace tgemm
