// Mixture-of-experts layer ops: routing (topk_softmax, DeepSeek-V3's grouped_topk) and the fused
// expert layer (fused_moe) on the grouped GEMM kernels of tgemm/grouped.h. bf16/fp16 activations
// and weights, fp32 routing weights; FP8 quantized experts are not supported by these entry points.
//
// No host synchronisation: routing logits, expert ids and the expert map are read on the device
// only, so every call can be captured in a CUDA graph whose routing changes between replays. Device
// values the host cannot check have a documented meaning below and never make a kernel read or
// write out of bounds. Everything the host can check throws tgemm::Error (op, argument,
// expectation, value) before anything is launched.
#pragma once

#include <cstdint>

#include "tgemm/gemm.h"
#include "tgemm/tensor.h"

namespace tgemm {

// Softmax routing, one CTA per token row:
//   p[t, :] = softmax(gating[t, :]) (fp32), topk_ids[t, :] = the experts of the k largest logits
//   (the order of p, without its rounding ties), descending, ties to the lower expert;
//   topk_weights[t, j] = p[t, topk_ids[t, j]], divided by their sum over j when renormalize.
// gating: [T, E] bf16, fp16 or fp32, rows contiguous; topk_weights: [T, k] fp32 and topk_ids:
// [T, k] int32, both contiguous; 1 <= k <= E <= kMaxRoutingExperts (k = 0 or T = 0 writes nothing).
// The ids of a row are always k distinct experts in [0, E): a NaN logit ranks below every number
// (and makes every weight of its row NaN, through the softmax sum).
void topk_softmax(const TensorView& gating, const TensorView& topk_weights, const TensorView& topk_ids,
                  bool renormalize = false, Stream stream = nullptr);

// Experts a routing row may have: the row's scores and flags live in shared memory (at most 14
// bytes per expert, with n_group = E: 28 KiB, under the 48 KiB a kernel gets without opting in).
inline constexpr std::int64_t kMaxRoutingExperts = 2048;

enum class MoeScoring : std::uint8_t { kSoftmax, kSigmoid };

// DeepSeek-V3 routing (as vLLM's grouped_topk and DeepSeek-V3's MoEGate), one CTA per token row:
//   s = sigmoid(gating) or softmax(gating) (fp32), c = s + correction_bias (without the bias, c
//   is the logit itself: the same order as s);
//   the E experts form n_group consecutive groups of E / n_group; a group's score is the sum of
//   its two largest c with correction_bias (its largest c alone without, as vLLM does); the
//   topk_group best groups stay, the others are excluded; topk_ids = the k largest c among the
//   experts left (descending, ties: the lower index first); topk_weights = s at those ids (the
//   bias only chooses), divided by their sum when renormalize, then times routed_scaling.
// gating [T, E] as in topk_softmax; correction_bias: optional [E] fp32 contiguous; n_group >= 1
// divides E; 1 <= topk_group <= n_group; 1 <= k <= topk_group * E / n_group; routed_scaling finite.
// The ids of a row are always k distinct experts of the chosen groups (NaN ranks lowest, as above).
void grouped_topk(const TensorView& gating, const TensorView* correction_bias, std::int64_t n_group,
                  std::int64_t topk_group, MoeScoring scoring, bool renormalize, double routed_scaling,
                  const TensorView& topk_weights, const TensorView& topk_ids, Stream stream = nullptr);

enum class MoeActivation : std::uint8_t { kSilu, kGelu };

// The expert layer of a mixture-of-experts block (vLLM's fused_experts, bf16/fp16):
//   out[t] = sum over j < k of topk_weights[t, j] * expert(e_tj, hidden[t])
//   expert(e, x) = (act(x @ w1[e, :I]^T) * (x @ w1[e, I:]^T)) @ w2[e]^T
// with w1[e] = [gate; up] stacked along its rows (2I rows: gate rows 0..I-1, up rows I..2I-1),
// act = silu (x * sigmoid(x)) or gelu (the exact erf form, F.gelu's default), and
// e_tj = topk_ids[t, j] (without expert_map) or expert_map[topk_ids[t, j]] (with it).
// hidden: [T, H] bf16 or fp16, rows contiguous; w1: [E, 2I, H] and w2: [E, H, I] of hidden's dtype
// (stacked nn.Linear weights), rows contiguous; topk_weights: [T, k] fp32 or hidden's dtype,
// contiguous; topk_ids: [T, k] int32, contiguous; out: [T, H], hidden's dtype or fp32, rows
// contiguous, overlapping no input.
// expert_map (expert parallelism): optional [E_global] int32, contiguous; topk_ids are then global
// expert ids and expert_map[g] is the local expert (an index into w1/w2) of global expert g on this
// rank, or -1 where g lives on another rank.
// Device-side rules: a slot whose id is outside [0, E) (without expert_map), outside [0, E_global)
// (with it), or whose mapped expert is outside [0, E) contributes 0; each slot is computed on its
// own, so an expert repeated within a token counts once per slot. No expert is indexed with an
// out-of-range id.
// Precision: both GEMMs accumulate in fp32; the gate/up products are rounded once to hidden's dtype
// (the intermediate that the down GEMM reads, as vLLM's cache), the activation and product run in
// fp32 and round once; the down products stay fp32 and the k slots are summed in fp32 in slot order,
// rounded once to out's dtype.
// Runs: the slots are sorted by expert on the device and each GEMM is grouped_gemm's tiled kernel
// or the CUTLASS grouped kernel; an elementwise kernel applies act(gate) * up between them. The
// path: TGEMM_GROUPED_BACKEND where set, else the row of the tuned table (tuned_fmoe.csv,
// TGEMM_CONFIG_FMOE) for the call's token bucket, E, k, H, I, dtype and activation, else the
// default rule. Workspace (the stream's): T * k * (3I * elem + 4H + 4) bytes plus the sort's
// counters (tile path).
void fused_moe(const TensorView& hidden, const TensorView& w1, const TensorView& w2, const TensorView& topk_weights,
               const TensorView& topk_ids, const TensorView& out, MoeActivation activation = MoeActivation::kSilu,
               const TensorView* expert_map = nullptr, Stream stream = nullptr);

// What fused_moe runs for these arguments: level forced | table | default (empty where T or H is
// 0), the table row's file, line and tokens, libtype fused_moe_tile | fused_moe_cutlass, and
// kernel_name "tile" or "cutlass up <instance> down <instance>". Validates as fused_moe does.
DispatchInfo describe_fused_moe(const TensorView& hidden, const TensorView& w1, const TensorView& w2,
                                const TensorView& topk_weights, const TensorView& topk_ids, const TensorView& out,
                                MoeActivation activation = MoeActivation::kSilu,
                                const TensorView* expert_map = nullptr);

}  // namespace tgemm
