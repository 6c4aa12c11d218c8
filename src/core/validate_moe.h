// Argument checks of the MoE ops (include/tgemm/moe.h), in the order of the other entry points:
// ranks, null pointers, dtypes, shape agreement, strides, alignment, overlap; the first failing
// check names the error. Logits, expert ids and the expert map are device data: never read here.
// fused_moe's checks also derive the two grouped_gemm problems it runs (core/validate_grouped.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/validate_grouped.h"
#include "tgemm/moe.h"
#include "tgemm/tensor.h"

namespace tgemm {

// One routing call: T rows of E logits, k experts chosen per row.
struct RoutingProblem {
  std::int64_t tokens = 0, experts = 0, topk = 0;
  std::int64_t ld_gating = 0;  // elements between logit rows
  DType gating_type = DType::kFloat32;
  bool renormalize = false;
  // grouped_topk only (n_group = 1, topk_group = 1: plain top-k over every expert).
  std::int64_t n_group = 1, topk_group = 1;
  MoeScoring scoring = MoeScoring::kSoftmax;
  double routed_scaling = 1.0;
  bool has_bias = false;
};

struct RoutingArgs {
  const void* gating = nullptr;
  const float* correction_bias = nullptr;  // [E] or null
  float* topk_weights = nullptr;           // [T, k] contiguous
  std::int32_t* topk_ids = nullptr;        // [T, k] contiguous
};

struct RoutingCall {
  RoutingProblem problem;
  RoutingArgs args;
};

RoutingCall validate_topk_softmax(const TensorView& gating, const TensorView& topk_weights, const TensorView& topk_ids,
                                  bool renormalize, std::string_view op);
RoutingCall validate_grouped_topk(const TensorView& gating, const TensorView* correction_bias, std::int64_t n_group,
                                  std::int64_t topk_group, MoeScoring scoring, bool renormalize, double routed_scaling,
                                  const TensorView& topk_weights, const TensorView& topk_ids, std::string_view op);

// fused_moe: T tokens, k slots each, E local experts (E_global with expert_map), hidden H,
// intermediate I. gate_up and down are the grouped_gemm problems of its two GEMMs: gate_up reads
// hidden [T, H] and writes [T, k, 2I] (x's dtype) into the workspace; down reads the activated
// [T, k, I] from the workspace and writes the weighted sum over the slots into out [T, H]. Their
// workspace strides are those of contiguous buffers.
struct MoeProblem {
  std::int64_t tokens = 0, topk = 0, experts = 0, global_experts = 0, hidden = 0, inter = 0;
  DType in_type = DType::kBFloat16;
  MoeActivation activation = MoeActivation::kSilu;
  bool has_expert_map = false;
  GatherProblem gate_up, down;
};

struct MoeArgs {
  const void* hidden = nullptr;
  const void* w1 = nullptr;
  const void* w2 = nullptr;
  const void* topk_weights = nullptr;
  const std::int32_t* topk_ids = nullptr;
  const std::int32_t* expert_map = nullptr;  // [E_global] or null
  void* out = nullptr;
};

struct MoeCall {
  MoeProblem problem;
  MoeArgs args;
};

MoeCall validate_fused_moe(const TensorView& hidden, const TensorView& w1, const TensorView& w2,
                           const TensorView& topk_weights, const TensorView& topk_ids, const TensorView& out,
                           MoeActivation activation, const TensorView* expert_map, std::string_view op);

}  // namespace tgemm
