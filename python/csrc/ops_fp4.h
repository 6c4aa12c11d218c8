// The MXFP4 ops as torch ops (rows of python/csrc/op_table.h), each allocating its outputs and
// calling include/tgemm/fp4.h on the current CUDA stream:
//   tgemm::quant_mxfp4(x) -> (q uint8 [..., K / 2], scale uint8 [..., K / 32])
//   tgemm::gemm_a16w4(x, w, w_scale, bias=None, out_dtype=None) -> y [..., N]
//       y = x @ dequant(w, w_scale)^T (+ bias); out_dtype None is x's dtype.
//   tgemm::gemm_a8w4(x, w, x_scale, w_scale, bias=None, out_dtype=None) -> y [..., N]
//       y = (x * x_scale) @ dequant(w, w_scale)^T (+ bias), x float8_e4m3fn, x_scale fp32 (one
//       element or [..., 1]); out_dtype None is bf16.
//   tgemm::gemm_a4w4(x, w, x_scale, w_scale, bias=None, out_dtype=None) -> y [..., N]
//       y = dequant(x, x_scale) @ dequant(w, w_scale)^T (+ bias), x uint8 [..., K / 2], x_scale
//       uint8 [..., K / 32]; out_dtype None is bf16.
// Not differentiable: the autograd kernels redispatch, and the GEMMs refuse an argument that
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

// gemm_a8w4 and gemm_a4w4: one signature, (x, w, x_scale, w_scale) as gemm_a8w8's.
struct GemmA8W4 {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                         const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmA4W4 {
  using Sig = GemmA8W4::Sig;
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

}  // namespace tgemm::torch_binding
