// The MXFP4 ops as torch ops (rows of python/csrc/op_table.h), each allocating its outputs and
// calling include/tgemm/fp4.h on the current CUDA stream:
//   tgemm::quant_mxfp4(x) -> (q uint8 [..., K / 2], scale uint8 [..., K / 32])
//   tgemm::gemm_a16w4(x, w, w_scale, bias=None, out_dtype=None) -> y [..., N]
//       y = x @ dequant(w, w_scale)^T (+ bias); out_dtype None is x's dtype.
// Not differentiable: the autograd kernels redispatch, and gemm_a16w4 refuses an argument that
// requires grad while grad mode is on.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <tuple>

#include "python/csrc/torch_view.h"

namespace tgemm::torch_binding {

struct QuantMxfp4 {
  using Sig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor& x);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmA16W4 {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& w, const at::Tensor& w_scale,
                         const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

}  // namespace tgemm::torch_binding
