// Argument checks of the grouped ops beyond gmm (include/tgemm/grouped.h): tgmm (ptgmm/nptgmm),
// grouped_gemm with expert ids, and the masked grouped GEMM. Same order as the other entry points:
// ranks, null pointers, dtypes, shape agreement, strides, alignment, overlap; the first failing
// check names the error. Group sizes, expert ids and masks are device data: never read here.
#pragma once

#include <cstdint>
#include <string_view>

#include "tgemm/tensor.h"

namespace tgemm {

// out[g] (+)= lhs[:, cols of g] @ rhs[rows of g]: lhs [K, M], rhs [M, N], out [G, K, N].
struct TgmmProblem {
  std::int64_t m = 0;  // the grouped dimension: lhs columns, rhs rows
  std::int64_t k = 0;  // lhs rows, out.size(1)
  std::int64_t n = 0;
  std::int64_t groups = 0;
  DType in_type = DType::kBFloat16;
  DType out_type = DType::kBFloat16;
  bool lhs_col_major = false;  // lhs.stride(0) == 1: an [M, K] row-major tensor seen as [K, M]
  bool has_bias_grad = false;
  bool accumulate = false;
  bool persistent = true;
  // Strides in elements: lhs's non-unit stride, rhs rows, out groups and rows, bias_grad rows.
  std::int64_t lda = 0, ldb = 0, out_group_stride = 0, ldo = 0, bias_grad_stride = 0;
};

struct TgmmArgs {
  const void* lhs = nullptr;
  const void* rhs = nullptr;
  const std::int32_t* group_sizes = nullptr;
  void* out = nullptr;
  float* bias_grad = nullptr;
};

struct TgmmCall {
  TgmmProblem problem;
  TgmmArgs args;
};

TgmmCall validate_tgmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes,
                       const TensorView& out, const TensorView* bias_grad, bool accumulate, bool persistent,
                       std::string_view op);

// grouped_gemm: slot (t, j) of T tokens x topk slots times weights[expert_ids[t, j]].
struct GatherProblem {
  std::int64_t tokens = 0, topk = 0, n = 0, k = 0, experts = 0;
  DType in_type = DType::kBFloat16;
  DType out_type = DType::kBFloat16;
  DType topk_weights_type = DType::kFloat32;
  bool x_per_slot = false;         // x [T, topk, H] (else [T, H], shared by the token's slots)
  bool transpose_weights = false;  // weights [E, N, H] (else [E, H, N])
  bool weighted = false;           // topk_weights given: out [T, N]
  // Strides in elements. x: token, slot (0 for [T, H]); weights: expert, row; out: token, slot
  // (0 when weighted).
  std::int64_t x_token_stride = 0, x_slot_stride = 0, w_expert_stride = 0, w_row_stride = 0;
  std::int64_t out_token_stride = 0, out_slot_stride = 0;
};

struct GatherArgs {
  const void* x = nullptr;
  const void* weights = nullptr;
  const std::int32_t* expert_ids = nullptr;  // [T, topk] contiguous
  const void* topk_weights = nullptr;        // [T, topk] contiguous
  void* out = nullptr;
};

struct GatherCall {
  GatherProblem problem;
  GatherArgs args;
};

GatherCall validate_grouped_gemm(const TensorView& x, const TensorView& weights, const TensorView& expert_ids,
                                 const TensorView& out, bool transpose_weights, const TensorView* topk_weights,
                                 std::string_view op);

// m_grouped_gemm_masked: out[g, :m_g] = x[g, :m_g] @ w[g]^T, m_g = clamp(masked_m[g], 0, max_m).
struct MaskedProblem {
  std::int64_t groups = 0, max_m = 0, n = 0, k = 0, expected_m = 0;
  // Strides in elements: x, w and out groups and rows.
  std::int64_t x_group_stride = 0, lda = 0, w_group_stride = 0, ldw = 0, out_group_stride = 0, ldo = 0;
};

struct MaskedArgs {
  const void* x = nullptr;
  const void* w = nullptr;
  const std::int32_t* masked_m = nullptr;
  void* out = nullptr;
};

struct MaskedCall {
  MaskedProblem problem;
  MaskedArgs args;
};

MaskedCall validate_masked(const TensorView& x, const TensorView& w, const TensorView& out, const TensorView& masked_m,
                           std::int64_t expected_m, std::string_view op);

}  // namespace tgemm
