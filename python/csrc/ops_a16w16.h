// The a16w16 family as torch ops (rows of python/csrc/op_table.h):
//   tgemm::gemm_a16w16(Tensor x, Tensor w, Tensor? bias=None, ScalarType? otype=None) -> Tensor
//   tgemm::gemm_a16w16_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None) -> ()
// y = x @ w^T (+ bias) as F.linear computes it, by tgemm::gemm_a16w16 on the current CUDA stream.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "python/csrc/torch_view.h"
#include "tgemm/gemm.h"

namespace tgemm::torch_binding {

// The kernels of one op: CUDA (runs it), CPU (names the argument that is not on the GPU) and
// Autograd (records the backward, then redispatches). Defined in ops_a16w16.cpp.
struct GemmA16W16 {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                         std::optional<at::ScalarType> otype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmA16W16Out {
  using Sig = void(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                   const std::optional<at::Tensor>& bias);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

// Where gemm_a16w16(x, w, bias, otype) is routed, without running it (resolves and caches the
// shape exactly as the first real call would; captured under TGEMM_TUNE_GEMM=1 like one). Errors
// leave as c10::Error.
DispatchInfo describe_a16w16(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                             std::optional<at::ScalarType> otype);

}  // namespace tgemm::torch_binding
