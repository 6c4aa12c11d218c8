// The batched family as torch ops (rows of python/csrc/op_table.h):
//   tgemm::batched_gemm(Tensor a, Tensor b, bool transpose_a=False, bool transpose_b=False,
//                       Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor
//   tgemm::batched_gemm_out(Tensor a, Tensor b, Tensor(a!) out, bool transpose_a=False,
//                           bool transpose_b=False, Tensor? bias=None) -> ()
// out[i] = op(a[i]) @ op(b[i]) (+ bias) by tgemm::batched_gemm (include/tgemm/batched.h) on the
// current CUDA stream; out_dtype None is a's dtype. Inference only: no derivative.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "python/csrc/torch_view.h"
#include "tgemm/batched.h"

namespace tgemm::torch_binding {

struct BatchedGemm {
  using Sig = at::Tensor(const at::Tensor& a, const at::Tensor& b, bool transpose_a, bool transpose_b,
                         const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct BatchedGemmOut {
  using Sig = void(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out, bool transpose_a, bool transpose_b,
                   const std::optional<at::Tensor>& bias);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

// Where batched_gemm(a, b, transpose_a, transpose_b, bias, out_dtype) is routed, without running it.
DispatchInfo describe_batched(const at::Tensor& a, const at::Tensor& b, bool transpose_a, bool transpose_b,
                              const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype);

}  // namespace tgemm::torch_binding
