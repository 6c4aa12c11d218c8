// Public GEMM entry points: validate, return early on empty problems, resolve, run.
#include "core/validate.h"
#include "cuda/elementwise.h"
#include "runtime/runtime.h"
#include "tgemm/gemm.h"

namespace tgemm {

namespace {

// Every public a16w16 entry point: `op` names it in error messages.
void run_a16w16(const TensorView& x, const TensorView& w, const TensorView& out, const GemmOptions& options,
                Stream stream, std::string_view op) {
  GemmCall call = validate_a16w16(x, w, out, options, op);
  GemmProblem& p = call.problem;
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    // An empty sum: out = act(beta * c + bias). No GEMM backend is asked to handle K = 0.
    epilogue_rows(gemm_epilogue(p, call.args, ProductAt::kNowhere), stream);
    return;
  }
  dispatch_gemm(p, call.args, stream);
}

}  // namespace

void gemm_a16w16(const TensorView& x, const TensorView& w, const TensorView& out, const GemmOptions& options,
                 Stream stream) {
  run_a16w16(x, w, out, options, stream, "gemm_a16w16");
}

void gemm_bias(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& out,
               Stream stream) {
  GemmOptions o;
  o.bias = &bias;
  run_a16w16(x, w, out, o, stream, "gemm_bias");
}

void gemm_gelu(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& out,
               bool tanh_approximation, Stream stream) {
  GemmOptions o;
  o.bias = bias;
  o.activation = tanh_approximation ? Activation::kGeluTanh : Activation::kGelu;
  run_a16w16(x, w, out, o, stream, "gemm_gelu");
}

void gemm_relu(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& out,
               Stream stream) {
  GemmOptions o;
  o.bias = bias;
  o.activation = Activation::kRelu;
  run_a16w16(x, w, out, o, stream, "gemm_relu");
}

void gemm_alpha_beta(const TensorView& x, const TensorView& w, const TensorView& c, float alpha, float beta,
                     const TensorView& out, Stream stream) {
  GemmOptions o;
  o.alpha = alpha;
  o.beta = beta;
  o.c = &c;
  run_a16w16(x, w, out, o, stream, "gemm_alpha_beta");
}

DispatchInfo describe_gemm_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                                  const GemmOptions& options) {
  GemmCall call = validate_a16w16(x, w, out, options);
  return describe_dispatch(call.problem);
}

}  // namespace tgemm
