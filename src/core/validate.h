// Argument checks of the public entry points, in this order: rank bounds and epilogue options,
// null pointers, dtypes, ranks and shape agreement, strides/layout, c, alignment, overlap (the first
// failing check names the error). On success they return the problem (device left 0; the runtime
// fills it) and the device arguments.
#pragma once

#include <string_view>

#include "core/problem.h"
#include "tgemm/gemm.h"

namespace tgemm {

struct GemmCall {
  GemmProblem problem;
  GemmArgs args;
};

// Checks for out = x @ w^T (+ bias) as in gemm_a16w16; `op` names the entry point in messages.
GemmCall validate_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                         const GemmOptions& options, std::string_view op = "gemm_a16w16");

// Checks for out = (x @ w^T) * x_scale * w_scale (+ bias) as in gemm_a8w8: x, w both
// float8_e4m3fn or both int8, rows of 16 bytes' multiple (K % 16 == 0); fp32 scales with 1
// element (per-tensor) or M (x, per-token) / N (w, per-channel) contiguous elements; out bf16,
// fp16 or fp32; bias [N] of out's dtype or fp32. Devices are the caller's to check (a TensorView
// carries none).
GemmCall validate_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
                       const TensorView& out, const TensorView* bias, std::string_view op = "gemm_a8w8");

}  // namespace tgemm
