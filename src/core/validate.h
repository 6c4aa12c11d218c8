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

}  // namespace tgemm
