// The a16w16 family as torch ops (schemas in python/csrc/library.cpp):
//   tgemm::gemm_a16w16(Tensor x, Tensor w, Tensor? bias=None, ScalarType? otype=None) -> Tensor
//   tgemm::gemm_a16w16_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None) -> ()
// y = x @ w^T (+ bias) as F.linear computes it, by tgemm::gemm_a16w16 on the current CUDA stream.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "tgemm/gemm.h"

namespace tgemm::torch_binding {

// The ops through the dispatcher (autograd, profiler, modes included), for the Python fast path.
// Errors leave as c10::Error (or, from a Python kernel below, as the Python exception it raised).
at::Tensor call_gemm_a16w16(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                            std::optional<at::ScalarType> otype);
void call_gemm_a16w16_out(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                          const std::optional<at::Tensor>& bias);

// Where gemm_a16w16(x, w, bias, otype) is routed, without running it (resolves and caches the
// shape exactly as the first real call would; captured under TGEMM_TUNE_GEMM=1 like one). Errors
// leave as c10::Error.
DispatchInfo describe_a16w16(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                             std::optional<at::ScalarType> otype);

}  // namespace tgemm::torch_binding
