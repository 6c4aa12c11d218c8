// The grouped ops beyond gmm as torch ops (rows of python/csrc/op_table.h), each on the current
// CUDA stream through include/tgemm/grouped.h; device data (group sizes, expert ids, masks) stay on
// the device. Inference and weight-gradient kernels: no derivative.
//   tgemm::tgmm(Tensor lhs, Tensor rhs, Tensor group_sizes, bool persistent=True,
//               ScalarType? out_dtype=None) -> Tensor                 (ptgmm / nptgmm, new out)
//   tgemm::tgmm_out(Tensor lhs, Tensor rhs, Tensor group_sizes, Tensor(a!) out,
//                   Tensor(b!)? bias_grad=None, bool accumulate=False, bool persistent=True) -> ()
//   tgemm::grouped_gemm(Tensor x, Tensor weights, Tensor expert_ids, Tensor? topk_weights=None,
//                       bool transpose_weights=False, ScalarType? out_dtype=None) -> Tensor
//   tgemm::m_grouped_gemm_masked(Tensor x, Tensor w, Tensor(a!) out, Tensor masked_m,
//                                int expected_m) -> ()
// and the MoE layer ops of include/tgemm/moe.h (routing and fused_moe):
//   tgemm::topk_softmax(Tensor gating, int k, bool renormalize=False)
//                      -> (Tensor topk_weights, Tensor topk_ids)
//   tgemm::grouped_topk(Tensor gating, Tensor? correction_bias, int n_group, int topk_group, int k,
//                      str scoring="sigmoid", bool renormalize=True, float routed_scaling=1.0)
//                      -> (Tensor topk_weights, Tensor topk_ids)
//   tgemm::fused_moe(Tensor hidden, Tensor w1, Tensor w2, Tensor topk_weights, Tensor topk_ids,
//                   str activation="silu", Tensor? expert_map=None, ScalarType? out_dtype=None)
//                   -> Tensor
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>

#include "python/csrc/torch_view.h"
#include "tgemm/gemm.h"

namespace tgemm::torch_binding {

struct Tgmm {
  using Sig = at::Tensor(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes, bool persistent,
                         std::optional<at::ScalarType> out_dtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct TgmmOut {
  using Sig = void(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes, const at::Tensor& out,
                   const std::optional<at::Tensor>& bias_grad, bool accumulate, bool persistent);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GroupedGemm {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& expert_ids,
                         const std::optional<at::Tensor>& topk_weights, bool transpose_weights,
                         std::optional<at::ScalarType> out_dtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct MGroupedGemmMasked {
  using Sig = void(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out, const at::Tensor& masked_m,
                   std::int64_t expected_m);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct TopkSoftmax {
  using Sig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor& gating, std::int64_t k, bool renormalize);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GroupedTopk {
  using Sig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor& gating,
                                                 const std::optional<at::Tensor>& correction_bias, std::int64_t n_group,
                                                 std::int64_t topk_group, std::int64_t k, std::string_view scoring,
                                                 bool renormalize, double routed_scaling);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct FusedMoe {
  using Sig = at::Tensor(const at::Tensor& hidden, const at::Tensor& w1, const at::Tensor& w2,
                         const at::Tensor& topk_weights, const at::Tensor& topk_ids, std::string_view activation,
                         const std::optional<at::Tensor>& expert_map, std::optional<at::ScalarType> out_dtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

// Where fused_moe(hidden, w1, w2, topk_weights, topk_ids, activation, expert_map, out_dtype) is
// routed (tgemm::describe_fused_moe), validating as fused_moe does; nothing runs.
DispatchInfo describe_fused_moe_call(const at::Tensor& hidden, const at::Tensor& w1, const at::Tensor& w2,
                                     const at::Tensor& topk_weights, const at::Tensor& topk_ids,
                                     std::string_view activation, const std::optional<at::Tensor>& expert_map,
                                     std::optional<at::ScalarType> out_dtype);

}  // namespace tgemm::torch_binding
