// Public entry points of include/tgemm/grouped_fp8.h: validate, return early on empty problems,
// run the tiled FP8 grouped kernel (no workspace).
#include "core/validate_grouped_fp8.h"
#include "grouped/fp8_grouped_launch.h"
#include "tgemm/grouped_fp8.h"

namespace tgemm {

void m_grouped_gemm_fp8_contiguous(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                                   const TensorView& w_scale, const TensorView& out, const TensorView& m_indices,
                                   Stream stream) {
  const Fp8GroupedCall call =
      validate_fp8_contiguous(x, x_scale, w, w_scale, out, m_indices, "m_grouped_gemm_fp8_contiguous");
  const Fp8GroupedProblem& p = call.problem;
  if (p.rows == 0 || p.n == 0) return;
  launch_fp8_grouped_tiled(p, call.args, stream);
}

void m_grouped_gemm_fp8_masked(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                               const TensorView& w_scale, const TensorView& out, const TensorView& masked_m,
                               std::int64_t expected_m, Stream stream) {
  const Fp8GroupedCall call =
      validate_fp8_masked(x, x_scale, w, w_scale, out, masked_m, expected_m, "m_grouped_gemm_fp8_masked");
  const Fp8GroupedProblem& p = call.problem;
  if (p.groups == 0 || p.rows == 0 || p.n == 0) return;
  launch_fp8_grouped_tiled(p, call.args, stream);
}

}  // namespace tgemm
