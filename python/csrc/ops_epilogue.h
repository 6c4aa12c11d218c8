// The fused-epilogue ops of the a16w16 family as torch ops (rows of python/csrc/op_table.h):
//   tgemm::gemm_bias(x, w, bias, otype=None)                 y = x @ w^T + bias
//   tgemm::gemm_gelu(x, w, bias=None, approximate="none", otype=None)
//                                                            y = gelu(x @ w^T (+ bias))
//   tgemm::gemm_relu(x, w, bias=None, otype=None)            y = relu(x @ w^T (+ bias))
//   tgemm::gemm_alpha_beta(x, w, c, alpha=1, beta=1)         y = alpha * (x @ w^T) + beta * c
// and their out= forms, by tgemm::gemm_bias / gemm_gelu / gemm_relu / gemm_alpha_beta
// (include/tgemm/gemm.h) on the current CUDA stream. Each struct holds one op's CUDA, CPU and
// Autograd kernels (as GemmA16W16 in ops_a16w16.h), defined in ops_epilogue.cpp.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string_view>

#include "python/csrc/torch_view.h"

namespace tgemm::torch_binding {

struct GemmBias {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                         std::optional<at::ScalarType> otype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmBiasOut {
  using Sig = void(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, const at::Tensor& out);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmGelu {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                         std::string_view approximate, std::optional<at::ScalarType> otype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmGeluOut {
  using Sig = void(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                   const std::optional<at::Tensor>& bias, std::string_view approximate);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmRelu {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                         std::optional<at::ScalarType> otype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmReluOut {
  using Sig = void(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                   const std::optional<at::Tensor>& bias);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmAlphaBeta {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, double alpha, double beta);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct GemmAlphaBetaOut {
  using Sig = void(const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, const at::Tensor& out,
                   double alpha, double beta);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

}  // namespace tgemm::torch_binding
