// The grouped family as torch ops (rows of python/csrc/op_table.h):
//   tgemm::gmm(Tensor lhs, Tensor rhs, Tensor group_sizes, Tensor? bias=None,
//              bool transpose_rhs=False, ScalarType? out_dtype=None) -> Tensor
// out[rows of g] = lhs[rows of g] @ rhs[g] (+ bias[g]) by tgemm::gmm (include/tgemm/gmm.h) on the
// current CUDA stream; out_dtype None is lhs's dtype. group_sizes stay on the device (no host
// synchronisation). Inference only: no derivative.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "python/csrc/torch_view.h"
#include "tgemm/gemm.h"

namespace tgemm::torch_binding {

struct Gmm {
  using Sig = at::Tensor(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes,
                         const std::optional<at::Tensor>& bias, bool transpose_rhs,
                         std::optional<at::ScalarType> out_dtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

// Where gmm with these arguments is routed (tgemm::describe_gmm), without running it.
DispatchInfo describe_gmm_call(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes,
                               const std::optional<at::Tensor>& bias, bool transpose_rhs,
                               std::optional<at::ScalarType> out_dtype);

}  // namespace tgemm::torch_binding
