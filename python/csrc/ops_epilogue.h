// The fused-epilogue ops of the a16w16 family as torch ops (schemas in python/csrc/library.cpp):
//   tgemm::gemm_bias(x, w, bias, otype=None)                 y = x @ w^T + bias
//   tgemm::gemm_gelu(x, w, bias=None, approximate="none", otype=None)
//                                                            y = gelu(x @ w^T (+ bias))
//   tgemm::gemm_relu(x, w, bias=None, otype=None)            y = relu(x @ w^T (+ bias))
//   tgemm::gemm_alpha_beta(x, w, c, alpha=1, beta=1)         y = alpha * (x @ w^T) + beta * c
// and their out= forms, by tgemm::gemm_bias / gemm_gelu / gemm_relu / gemm_alpha_beta
// (include/tgemm/gemm.h) on the current CUDA stream.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string_view>

namespace tgemm::torch_binding {

// The ops through the dispatcher (autograd, profiler, modes included), for the Python fast path.
// Errors leave as c10::Error (or, from a Python kernel below, as the Python exception it raised).
at::Tensor call_gemm_bias(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                          std::optional<at::ScalarType> otype);
void call_gemm_bias_out(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, const at::Tensor& out);

at::Tensor call_gemm_gelu(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                          std::string_view approximate, std::optional<at::ScalarType> otype);
void call_gemm_gelu_out(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                        const std::optional<at::Tensor>& bias, std::string_view approximate);

at::Tensor call_gemm_relu(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                          std::optional<at::ScalarType> otype);
void call_gemm_relu_out(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                        const std::optional<at::Tensor>& bias);

at::Tensor call_gemm_alpha_beta(const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, double alpha,
                                double beta);
void call_gemm_alpha_beta_out(const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, const at::Tensor& out,
                              double alpha, double beta);

}  // namespace tgemm::torch_binding
