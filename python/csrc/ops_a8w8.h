// The a8w8 families as torch ops (rows of python/csrc/op_table.h):
//   tgemm::gemm_a8w8(Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, Tensor? bias=None,
//                    ScalarType? out_dtype=None) -> Tensor
//   tgemm::gemm_a8w8_blockscale(the same arguments) -> Tensor
//   tgemm::batched_gemm_a8w8(Tensor a, Tensor b, Tensor a_scale, Tensor b_scale, Tensor? bias=None,
//                            ScalarType? out_dtype=None) -> Tensor
// y = (x @ w^T) * x_scale * w_scale (+ bias) by tgemm::gemm_a8w8, and its 1x128 / 128x128 block
// scaled form by tgemm::gemm_a8w8_blockscale (include/tgemm/a8w8.h), and out[i] = (a[i] @ b[i]^T) *
// a_scale[i] * b_scale[i] (+ bias) by tgemm::batched_gemm_a8w8 (include/tgemm/batched.h), on the
// current CUDA stream; out_dtype None is torch.bfloat16. Inference only: no derivative.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "python/csrc/torch_view.h"
#include "tgemm/a8w8.h"
#include "tgemm/batched.h"

namespace tgemm::torch_binding {

struct GemmA8W8 {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                         const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmA8W8Blockscale {
  using Sig = GemmA8W8::Sig;
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct BatchedGemmA8W8 {
  using Sig = GemmA8W8::Sig;  // (a, b, a_scale, b_scale, bias, out_dtype)
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

// Where gemm_a8w8(x, w, x_scale, w_scale, bias, out_dtype) is routed, without running it.
DispatchInfo describe_a8w8(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                           const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                           std::optional<at::ScalarType> out_dtype);
// The same for gemm_a8w8_blockscale.
DispatchInfo describe_a8w8_blockscale(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                                      const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                                      std::optional<at::ScalarType> out_dtype);
// The same for batched_gemm_a8w8(a, b, a_scale, b_scale, bias, out_dtype).
DispatchInfo describe_batched_a8w8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& a_scale,
                                   const at::Tensor& b_scale, const std::optional<at::Tensor>& bias,
                                   std::optional<at::ScalarType> out_dtype);

}  // namespace tgemm::torch_binding
