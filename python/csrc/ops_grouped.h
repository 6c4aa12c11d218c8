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
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>

#include "python/csrc/torch_view.h"

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

}  // namespace tgemm::torch_binding
