// Public a8w8 entry points: validate, return early on empty problems, resolve, run.
#include "core/validate.h"
#include "cuda/elementwise.h"
#include "runtime/runtime.h"
#include "tgemm/a8w8.h"

namespace tgemm {

namespace {

void run_a8w8_call(GemmCall& call, Stream stream) {
  GemmProblem& p = call.problem;
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    // An empty sum scales to zero: out = bias (or zeros). No GEMM backend is asked to handle K = 0.
    epilogue_rows(gemm_epilogue(p, call.args, ProductAt::kNowhere), stream);
    return;
  }
  dispatch_gemm(p, call.args, stream);
}

}  // namespace

void gemm_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias, Stream stream) {
  GemmCall call = validate_a8w8(x, w, x_scale, w_scale, out, bias);
  run_a8w8_call(call, stream);
}

void gemm_a8w8_blockscale(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                          const TensorView& w_scale, const TensorView& out, const TensorView* bias, Stream stream) {
  GemmCall call = validate_a8w8_blockscale(x, w, x_scale, w_scale, out, bias);
  run_a8w8_call(call, stream);
}

DispatchInfo describe_gemm_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                const TensorView& w_scale, const TensorView& out, const TensorView* bias) {
  GemmCall call = validate_a8w8(x, w, x_scale, w_scale, out, bias);
  return describe_dispatch(call.problem);
}

DispatchInfo describe_gemm_a8w8_blockscale(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                           const TensorView& w_scale, const TensorView& out, const TensorView* bias) {
  GemmCall call = validate_a8w8_blockscale(x, w, x_scale, w_scale, out, bias);
  return describe_dispatch(call.problem);
}

}  // namespace tgemm
