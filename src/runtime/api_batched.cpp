// Public batched_gemm and batched_gemm_a8w8 entry points: validate, return early on empty
// problems, resolve, run.
#include "backends/reference/reference_backend.h"
#include "core/validate.h"
#include "runtime/runtime.h"
#include "tgemm/batched.h"

namespace tgemm {

void batched_gemm(const TensorView& a, const TensorView& b, const TensorView& out, bool transpose_a, bool transpose_b,
                  const TensorView* bias, Stream stream) {
  GemmCall call = validate_batched(a, b, out, transpose_a, transpose_b, bias);
  GemmProblem& p = call.problem;
  if (p.batch == 0 || p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    // An empty sum: every product is the bias (or zeros). The reference kernel writes it in one
    // launch over the batch (its K loop takes no trip); no GEMM backend is asked to handle K = 0.
    run_reference_gemm(p, call.args, p.out_type, p.ldo, stream, p.batch_stride_out);
    return;
  }
  dispatch_gemm(p, call.args, stream);
}

DispatchInfo describe_batched_gemm(const TensorView& a, const TensorView& b, const TensorView& out, bool transpose_a,
                                   bool transpose_b, const TensorView* bias) {
  GemmCall call = validate_batched(a, b, out, transpose_a, transpose_b, bias);
  if (call.problem.batch == 0) call.problem.m = 0;  // nothing runs: describe_dispatch's "empty"
  return describe_dispatch(call.problem);
}

void batched_gemm_a8w8(const TensorView& a, const TensorView& b, const TensorView& a_scale, const TensorView& b_scale,
                       const TensorView& out, const TensorView* bias, Stream stream) {
  GemmCall call = validate_batched_a8w8(a, b, a_scale, b_scale, out, bias);
  GemmProblem& p = call.problem;
  if (p.batch == 0 || p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    // An empty sum scales to zero: every product is the bias (or zeros), written by the reference
    // kernel in one launch over the batch (its K loop takes no trip).
    run_reference_gemm_a8w8(p, call.args, p.out_type, p.ldo, stream, p.batch_stride_out);
    return;
  }
  dispatch_gemm(p, call.args, stream);
}

DispatchInfo describe_batched_gemm_a8w8(const TensorView& a, const TensorView& b, const TensorView& a_scale,
                                        const TensorView& b_scale, const TensorView& out, const TensorView* bias) {
  GemmCall call = validate_batched_a8w8(a, b, a_scale, b_scale, out, bias);
  if (call.problem.batch == 0) call.problem.m = 0;  // nothing runs: describe_dispatch's "empty"
  return describe_dispatch(call.problem);
}

}  // namespace tgemm
