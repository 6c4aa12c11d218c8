// gemm_a16w4, gemm_a8w4 and gemm_a4w4 (include/tgemm/fp4.h) with the path forced by an argument
// instead of TGEMM_FP4_PATH, which is read once per process: the public ops take that setting's
// path, these the argument's, so the GPU tests (tests/gpu/test_fp4.cpp) run one set of problems
// on every path, the two GEMVs included, in one process. As with the setting, a forced path that
// cannot take a call (fp4_route::choose_w4_path) leaves it to the default rule.
#pragma once

#include "fp4/fp4_route.h"
#include "tgemm/tensor.h"

namespace tgemm::fp4_route {

void gemm_a16w4_forced(W4Force force, const TensorView& x, const TensorView& w, const TensorView& w_scale,
                       const TensorView& out, const TensorView* bias, Stream stream);
void gemm_a8w4_forced(W4Force force, const TensorView& x, const TensorView& w, const TensorView& x_scale,
                      const TensorView& w_scale, const TensorView& out, const TensorView* bias, Stream stream);
void gemm_a4w4_forced(W4Force force, const TensorView& x, const TensorView& w, const TensorView& x_scale,
                      const TensorView& w_scale, const TensorView& out, const TensorView* bias, Stream stream);

}  // namespace tgemm::fp4_route
