// CUDA, CPU and autograd kernels of the fused-epilogue ops (rows of python/csrc/op_table.h):
// gemm_bias, gemm_gelu, gemm_relu, gemm_alpha_beta and their out= forms.
//
// Forward: tensors -> TensorViews (torch_view.h) -> tgemm::gemm_bias / gemm_gelu / gemm_relu /
// gemm_alpha_beta (include/tgemm/gemm.h) on at::cuda::getCurrentCUDAStream() of x's device. The
// core's messages then name the op the user called ("gemm_gelu: w.size(1) must equal ...").
//
// Backward (autograd kernels in C++, as gemm_a16w16's, so calls without grad stay cheap), with g
// the output gradient and z = x @ w^T (+ bias) the GEMM result before the activation:
//   gemm_bias:       dz = g
//   gemm_gelu:       dz = gelu'(z) * g, in fp32; z is recomputed as the fused epilogue saw it
//                    (tgemm's gemm_a16w16 with an fp32 output): the fused op never materialises it
//   gemm_relu:       dz = g where y > 0, else 0 (y > 0 exactly where z > 0, as ATen's relu backward)
//   gemm_alpha_beta: dz = alpha * g, dc = beta * g
// then dx = dz @ w, dw = dz^T @ x, dbias = sum of dz over rows (fp32, cast to bias's dtype), all
// by ATen ops so torch.compile traces them too. out= forms have no derivative (as in ATen).
//
// Errors: as ops_a16w16.cpp: c10::Error only (CUDA and CPU kernels under with_c10_errors, autograd
// kernels under with_c10_tgemm_errors). A tgemm::Error never crosses torch's dispatcher. Messages
// are built by throw_error (no iostreams).
//
// Tests: tests/python/test_epilogue_ops.py. Bench: bench/torch_bench.py --gelu.
#include "python/csrc/ops_epilogue.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/variable.h>

#include <cmath>
#include <limits>
#include <string>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/gemm.h"

namespace tgemm::torch_binding {
namespace {

constexpr std::string_view kBias = "gemm_bias";
constexpr std::string_view kGelu = "gemm_gelu";
constexpr std::string_view kRelu = "gemm_relu";
constexpr std::string_view kAlphaBeta = "gemm_alpha_beta";

Stream current_stream(c10::Device device) { return at::cuda::getCurrentCUDAStream(device.index()).stream(); }

// The output dtype of a functional op: otype, or x's dtype.
at::ScalarType output_type(const at::Tensor& x, std::optional<at::ScalarType> otype, std::string_view op) {
  if (!otype) return x.scalar_type();  // x's view names x.dtype if it is not a tgemm type
  to_dtype(*otype, op, "otype");       // a type tgemm has at all; the core checks which ones this op takes
  return *otype;
}

// approximate as F.gelu takes it: "none" (erf) or "tanh". Returns whether it is "tanh".
bool gelu_tanh(std::string_view approximate) {
  if (approximate == "none") return false;
  if (approximate == "tanh") return true;
  throw_error(kGelu, "approximate must be 'none' or 'tanh', got '", approximate, "'");
}

// alpha / beta arrive as the schema's `float` (a double); the core takes fp32. A value fp32
// cannot hold is refused here (the conversion of an out-of-range double to float is undefined).
float to_fp32_scalar(double v, std::string_view op, const char* name) {
  if (!(std::isfinite(v) && std::fabs(v) <= static_cast<double>(std::numeric_limits<float>::max()))) {
    throw_error(op, name, " must be finite and within float32 range, got ", v);
  }
  return static_cast<float>(v);
}

// An optional bias's view: `ptr` is null when no bias is given.
struct OptionalView {
  TensorView view;
  const TensorView* ptr = nullptr;

  OptionalView(const std::optional<at::Tensor>& t, c10::Device device, std::string_view op, std::string_view name) {
    if (has_tensor(t)) {
      view = to_view(*t, device, op, name);
      ptr = &view;
    }
  }
  OptionalView(const OptionalView&) = delete;
  OptionalView& operator=(const OptionalView&) = delete;
};

// The runs below convert in one order, x, w, out, then the epilogue's tensors (as gemm_a16w16's
// binding), which the fake kernels (tgemm/_fake.py) follow; each is called with `device` current.

void run_bias(c10::Device device, const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
              const at::Tensor& out) {
  const TensorView xv = to_view(x, device, kBias, "x");
  const TensorView wv = to_view(w, device, kBias, "w");
  const TensorView ov = to_view(out, device, kBias, "out");
  const TensorView bv = to_view(bias, device, kBias, "bias");
  gemm_bias(xv, wv, bv, ov, current_stream(device));
}

void run_gelu(c10::Device device, const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
              const std::optional<at::Tensor>& bias, bool tanh_approximation) {
  const TensorView xv = to_view(x, device, kGelu, "x");
  const TensorView wv = to_view(w, device, kGelu, "w");
  const TensorView ov = to_view(out, device, kGelu, "out");
  const OptionalView bv(bias, device, kGelu, "bias");
  gemm_gelu(xv, wv, bv.ptr, ov, tanh_approximation, current_stream(device));
}

void run_relu(c10::Device device, const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
              const std::optional<at::Tensor>& bias) {
  const TensorView xv = to_view(x, device, kRelu, "x");
  const TensorView wv = to_view(w, device, kRelu, "w");
  const TensorView ov = to_view(out, device, kRelu, "out");
  const OptionalView bv(bias, device, kRelu, "bias");
  gemm_relu(xv, wv, bv.ptr, ov, current_stream(device));
}

// `cv` is c's view, converted by the caller (the functional form needs it before allocating out).
void run_alpha_beta(c10::Device device, const TensorView& xv, const TensorView& wv, const TensorView& cv,
                    const at::Tensor& out, float alpha, float beta) {
  const TensorView ov = to_view(out, device, kAlphaBeta, "out");
  gemm_alpha_beta(xv, wv, cv, alpha, beta, ov, current_stream(device));
}

// ---------------------------------------------------------------------------------------------
// Autograd helpers and Function nodes.

bool has_forward_grad(const at::Tensor& t) { return t.defined() && t._fw_grad(/*level=*/0).defined(); }
bool has_forward_grad(const std::optional<at::Tensor>& t) { return has_tensor(t) && has_forward_grad(*t); }
bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }
bool requires_grad(const std::optional<at::Tensor>& t) { return has_tensor(t) && t->requires_grad(); }

// Forward-mode AD has no formula here: refuse rather than drop the tangent.
template <typename... Ts>
void refuse_forward_ad(std::string_view op, const Ts&... tensors) {
  if ((has_forward_grad(tensors) || ...)) {
    throw_error(op, "forward-mode AD (dual tensors) is not supported; use the torch.nn.functional ops");
  }
}

template <typename... Ts>
bool needs_grad(const Ts&... tensors) {
  return at::GradMode::is_enabled() && (requires_grad(tensors) || ...);
}

// dx and dw of z = x @ w^T from dz = dL/dz (x's dtype), each only where asked for.
void linear_input_grads(torch::autograd::AutogradContext* ctx, const at::Tensor& dz, const at::Tensor& x,
                        const at::Tensor& w, at::Tensor& dx, at::Tensor& dw) {
  const std::int64_t n = w.size(0);
  const std::int64_t k = w.size(1);
  if (ctx->needs_input_grad(0)) dx = at::matmul(dz, w);                                   // [..., K]
  if (ctx->needs_input_grad(1)) dw = dz.reshape({-1, n}).t().matmul(x.reshape({-1, k}));  // [N, K]
}

// dbias: dz summed over rows in fp32, in the bias's dtype (saved as "bias_dtype").
at::Tensor bias_grad(torch::autograd::AutogradContext* ctx, const at::Tensor& dz, std::int64_t n) {
  return dz.reshape({-1, n}).sum(0, false, at::kFloat).to(ctx->saved_data["bias_dtype"].toScalarType());
}

void save_bias(torch::autograd::AutogradContext* ctx, const std::optional<at::Tensor>& bias) {
  const bool with_bias = has_tensor(bias);
  ctx->saved_data["with_bias"] = with_bias;
  if (with_bias) ctx->saved_data["bias_dtype"] = bias->scalar_type();
}

// Edges exist for tensor inputs only: x 0, w 1, the bias (or c) 2 when given.
bool wants_edge2(torch::autograd::AutogradContext* ctx) {
  return ctx->saved_data["with_bias"].toBool() && ctx->needs_input_grad(2);
}

class GemmBiasFunction : public torch::autograd::Function<GemmBiasFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& bias, std::optional<at::ScalarType> otype, c10::DispatchKeySet below) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({x, w});
    save_bias(ctx, bias);
    return op_handle<GemmBias>().redispatch(below, x, w, bias, otype);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];  // [..., K]
    const at::Tensor& w = saved[1];  // [N, K]
    at::Tensor dx, dw, dbias;
    linear_input_grads(ctx, grads[0].to(x.scalar_type()), x, w, dx, dw);
    if (wants_edge2(ctx)) dbias = bias_grad(ctx, grads[0], w.size(0));
    // One entry per forward argument: x, w, bias, otype, the key set.
    return {dx, dw, dbias, at::Tensor(), at::Tensor()};
  }
};

class GemmGeluFunction : public torch::autograd::Function<GemmGeluFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const std::optional<at::Tensor>& bias, std::string_view approximate,
                            std::optional<at::ScalarType> otype, c10::DispatchKeySet below) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    // The bias is needed to recompute z; saved as a variable only when given.
    if (has_tensor(bias)) {
      ctx->save_for_backward({x, w, *bias});
    } else {
      ctx->save_for_backward({x, w});
    }
    save_bias(ctx, bias);
    ctx->saved_data["approximate"] = std::string(approximate);
    return op_handle<GemmGelu>().redispatch(below, x, w, bias, approximate, otype);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];  // [..., K]
    const at::Tensor& w = saved[1];  // [N, K]
    // z = x @ w^T + bias recomputed as the fused epilogue saw it: fp32 accumulation and fp32
    // output (tgemm's own GEMM, otype float32), not rounded to x's dtype first.
    std::optional<at::Tensor> bias;
    if (saved.size() > 2) bias = saved[2];
    const at::Tensor z = op_handle<GemmA16W16>().call(x, w, bias, at::kFloat);  // fp32 [..., N]
    const std::string approximate = ctx->saved_data["approximate"].toStringRef();
    const at::Tensor dz = at::gelu_backward(grads[0].to(at::kFloat), z, approximate);  // fp32 [..., N]
    at::Tensor dx, dw, dbias;
    linear_input_grads(ctx, dz.to(x.scalar_type()), x, w, dx, dw);
    if (wants_edge2(ctx)) dbias = bias_grad(ctx, dz, w.size(0));
    // One entry per forward argument: x, w, bias, approximate, otype, the key set.
    return {dx, dw, dbias, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class GemmReluFunction : public torch::autograd::Function<GemmReluFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> otype,
                            c10::DispatchKeySet below) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    save_bias(ctx, bias);
    at::Tensor y = op_handle<GemmRelu>().redispatch(below, x, w, bias, otype);
    // The output decides the mask (y > 0 where z > 0), as ATen's relu saves its result.
    ctx->save_for_backward({x, w, y});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];  // [..., K]
    const at::Tensor& w = saved[1];  // [N, K]
    const at::Tensor& y = saved[2];  // [..., N], the output
    const at::Tensor dz = at::threshold_backward(grads[0].to(y.scalar_type()), y, 0);  // y's dtype
    at::Tensor dx, dw, dbias;
    linear_input_grads(ctx, dz.to(x.scalar_type()), x, w, dx, dw);
    if (wants_edge2(ctx)) dbias = bias_grad(ctx, dz, w.size(0));
    // One entry per forward argument: x, w, bias, otype, the key set.
    return {dx, dw, dbias, at::Tensor(), at::Tensor()};
  }
};

class GemmAlphaBetaFunction : public torch::autograd::Function<GemmAlphaBetaFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& c, double alpha, double beta, c10::DispatchKeySet below) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({x, w});
    ctx->saved_data["c_dtype"] = c.scalar_type();
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["beta"] = beta;
    return op_handle<GemmAlphaBeta>().redispatch(below, x, w, c, alpha, beta);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];  // [..., K]
    const at::Tensor& w = saved[1];  // [N, K]
    const double alpha = ctx->saved_data["alpha"].toDouble();
    const double beta = ctx->saved_data["beta"].toDouble();
    const at::Tensor& g = grads[0];  // [..., N]
    at::Tensor dx, dw, dc;
    if (ctx->needs_input_grad(0) || ctx->needs_input_grad(1)) {
      // alpha applied in fp32 before the rounding to x's dtype.
      const at::Tensor dz = alpha == 1.0 ? g.to(x.scalar_type()) : g.to(at::kFloat).mul(alpha).to(x.scalar_type());
      linear_input_grads(ctx, dz, x, w, dx, dw);
    }
    if (ctx->needs_input_grad(2)) {
      const at::ScalarType ct = ctx->saved_data["c_dtype"].toScalarType();
      dc = beta == 1.0 ? g.to(ct) : g.to(at::kFloat).mul(beta).to(ct);
    }
    // One entry per forward argument: x, w, c, alpha, beta, the key set.
    return {dx, dw, dc, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// out= has no derivative (as in ATen): an error when autograd would have to track it, otherwise
// the kernel below autograd and the version bump ATen's out= kernels do for a mutated tensor.
template <typename Redispatch, typename... Ts>
void out_autograd(std::string_view out_op, std::string_view functional_op, const at::Tensor& out,
                  Redispatch&& redispatch, const Ts&... inputs) {
  with_c10_tgemm_errors([&] {
    if (at::GradMode::is_enabled() && (requires_grad(out) || ... || requires_grad(inputs))) {
      throw_error(out_op, "functions with an out tensor do not support automatic differentiation, "
                  "but an argument requires grad; use ", functional_op);
    }
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      redispatch();
    }
    torch::autograd::impl::bump_version(out);
  });
}

const at::Tensor* opt(const std::optional<at::Tensor>& t) { return has_tensor(t) ? &*t : nullptr; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// CUDA kernels

at::Tensor GemmBias::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                          std::optional<at::ScalarType> otype) {
  return with_c10_errors(kBias, [&] {
    const c10::Device device = op_device(x, kBias);
    const c10::cuda::CUDAGuard guard(device);
    at::Tensor out = at::empty(linear_output_sizes(x, w), x.options().dtype(output_type(x, otype, kBias)));
    run_bias(device, x, w, bias, out);
    return out;
  });
}

void GemmBiasOut::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, const at::Tensor& out) {
  with_c10_errors(kBias, [&] {
    const c10::Device device = op_device(x, kBias);
    const c10::cuda::CUDAGuard guard(device);
    run_bias(device, x, w, bias, out);
  });
}

at::Tensor GemmGelu::cuda(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                          std::string_view approximate, std::optional<at::ScalarType> otype) {
  return with_c10_errors(kGelu, [&] {
    const c10::Device device = op_device(x, kGelu);
    const bool tanh_approximation = gelu_tanh(approximate);
    const c10::cuda::CUDAGuard guard(device);
    at::Tensor out = at::empty(linear_output_sizes(x, w), x.options().dtype(output_type(x, otype, kGelu)));
    run_gelu(device, x, w, out, bias, tanh_approximation);
    return out;
  });
}

void GemmGeluOut::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                        const std::optional<at::Tensor>& bias, std::string_view approximate) {
  with_c10_errors(kGelu, [&] {
    const c10::Device device = op_device(x, kGelu);
    const bool tanh_approximation = gelu_tanh(approximate);
    const c10::cuda::CUDAGuard guard(device);
    run_gelu(device, x, w, out, bias, tanh_approximation);
  });
}

at::Tensor GemmRelu::cuda(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                          std::optional<at::ScalarType> otype) {
  return with_c10_errors(kRelu, [&] {
    const c10::Device device = op_device(x, kRelu);
    const c10::cuda::CUDAGuard guard(device);
    at::Tensor out = at::empty(linear_output_sizes(x, w), x.options().dtype(output_type(x, otype, kRelu)));
    run_relu(device, x, w, out, bias);
    return out;
  });
}

void GemmReluOut::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                        const std::optional<at::Tensor>& bias) {
  with_c10_errors(kRelu, [&] {
    const c10::Device device = op_device(x, kRelu);
    const c10::cuda::CUDAGuard guard(device);
    run_relu(device, x, w, out, bias);
  });
}

// The functional form's output has c's dtype (the core requires c.dtype == out.dtype), so c is
// converted and its dtype checked before out exists: a c the op cannot take is named as c.
at::Tensor GemmAlphaBeta::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, double alpha,
                                double beta) {
  return with_c10_errors(kAlphaBeta, [&] {
    const c10::Device device = op_device(x, kAlphaBeta);
    const float alpha_f = to_fp32_scalar(alpha, kAlphaBeta, "alpha");
    const float beta_f = to_fp32_scalar(beta, kAlphaBeta, "beta");
    const c10::cuda::CUDAGuard guard(device);
    const TensorView xv = to_view(x, device, kAlphaBeta, "x");
    const TensorView wv = to_view(w, device, kAlphaBeta, "w");
    const TensorView cv = to_view(c, device, kAlphaBeta, "c");
    const at::ScalarType ct = c.scalar_type();
    if (ct != at::kBFloat16 && ct != at::kHalf && ct != at::kFloat) {
      throw_error(kAlphaBeta, "c.dtype must be torch.bfloat16, torch.float16 or torch.float32 (the output has c's "
                  "dtype), got ", torch_dtype_name(ct));
    }
    at::Tensor out = at::empty(linear_output_sizes(x, w), x.options().dtype(ct));
    run_alpha_beta(device, xv, wv, cv, out, alpha_f, beta_f);
    return out;
  });
}

// out may be c itself (same tensor: accumulate in place), as ATen's out= ops allow out to alias an
// input; otherwise it must not overlap c (the core checks).
void GemmAlphaBetaOut::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, const at::Tensor& out,
                              double alpha, double beta) {
  with_c10_errors(kAlphaBeta, [&] {
    const c10::Device device = op_device(x, kAlphaBeta);
    const float alpha_f = to_fp32_scalar(alpha, kAlphaBeta, "alpha");
    const float beta_f = to_fp32_scalar(beta, kAlphaBeta, "beta");
    const c10::cuda::CUDAGuard guard(device);
    const TensorView xv = to_view(x, device, kAlphaBeta, "x");
    const TensorView wv = to_view(w, device, kAlphaBeta, "w");
    const TensorView cv = to_view(c, device, kAlphaBeta, "c");
    run_alpha_beta(device, xv, wv, cv, out, alpha_f, beta_f);
  });
}

// ---------------------------------------------------------------------------------------------
// Autograd kernels. Each hands over to the next kernel with redispatch (keys below autograd), as
// gemm_a16w16's does; a Function node is made only when a gradient is needed.

at::Tensor GemmBias::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                              const at::Tensor& bias, std::optional<at::ScalarType> otype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    refuse_forward_ad(kBias, x, w, bias);
    const c10::DispatchKeySet below = keys & c10::after_autograd_keyset;
    if (!needs_grad(x, w, bias)) {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return op_handle<GemmBias>().redispatch(below, x, w, bias, otype);
    }
    return GemmBiasFunction::apply(x, w, bias, otype, below);
  });
}

at::Tensor GemmGelu::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                              const std::optional<at::Tensor>& bias, std::string_view approximate,
                              std::optional<at::ScalarType> otype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    refuse_forward_ad(kGelu, x, w, bias);
    const c10::DispatchKeySet below = keys & c10::after_autograd_keyset;
    if (!needs_grad(x, w, bias)) {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return op_handle<GemmGelu>().redispatch(below, x, w, bias, approximate, otype);
    }
    return GemmGeluFunction::apply(x, w, bias, approximate, otype, below);
  });
}

at::Tensor GemmRelu::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                              const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> otype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    refuse_forward_ad(kRelu, x, w, bias);
    const c10::DispatchKeySet below = keys & c10::after_autograd_keyset;
    if (!needs_grad(x, w, bias)) {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return op_handle<GemmRelu>().redispatch(below, x, w, bias, otype);
    }
    return GemmReluFunction::apply(x, w, bias, otype, below);
  });
}

at::Tensor GemmAlphaBeta::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                                    const at::Tensor& c, double alpha, double beta) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    refuse_forward_ad(kAlphaBeta, x, w, c);
    const c10::DispatchKeySet below = keys & c10::after_autograd_keyset;
    if (!needs_grad(x, w, c)) {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return op_handle<GemmAlphaBeta>().redispatch(below, x, w, c, alpha, beta);
    }
    return GemmAlphaBetaFunction::apply(x, w, c, alpha, beta, below);
  });
}

void GemmBiasOut::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& bias, const at::Tensor& out) {
  out_autograd("gemm_bias_out", kBias, out,
               [&] { op_handle<GemmBiasOut>().redispatch(keys & c10::after_autograd_keyset, x, w, bias, out); },
               x, w, bias);
}

void GemmGeluOut::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& out, const std::optional<at::Tensor>& bias,
                            std::string_view approximate) {
  out_autograd(
      "gemm_gelu_out", kGelu, out,
      [&] { op_handle<GemmGeluOut>().redispatch(keys & c10::after_autograd_keyset, x, w, out, bias, approximate); },
      x, w, bias);
}

void GemmReluOut::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& out, const std::optional<at::Tensor>& bias) {
  out_autograd("gemm_relu_out", kRelu, out,
               [&] { op_handle<GemmReluOut>().redispatch(keys & c10::after_autograd_keyset, x, w, out, bias); },
               x, w, bias);
}

void GemmAlphaBetaOut::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                                  const at::Tensor& c, const at::Tensor& out, double alpha, double beta) {
  out_autograd(
      "gemm_alpha_beta_out", kAlphaBeta, out,
      [&] {
        op_handle<GemmAlphaBetaOut>().redispatch(keys & c10::after_autograd_keyset, x, w, c, out, alpha, beta);
      },
      x, w, c);
}

// ---------------------------------------------------------------------------------------------
// CPU kernels: only to say which argument is not on the GPU.

at::Tensor GemmBias::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                         std::optional<at::ScalarType>) {
  return with_c10_errors(kBias, [&]() -> at::Tensor {
    throw_not_cuda(kBias, {{"x", &x}, {"w", &w}, {"bias", &bias}});
  });
}

void GemmBiasOut::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, const at::Tensor& out) {
  with_c10_errors(kBias, [&] { throw_not_cuda(kBias, {{"x", &x}, {"w", &w}, {"out", &out}, {"bias", &bias}}); });
}

at::Tensor GemmGelu::cpu(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                         std::string_view, std::optional<at::ScalarType>) {
  return with_c10_errors(kGelu, [&]() -> at::Tensor {
    throw_not_cuda(kGelu, {{"x", &x}, {"w", &w}, {"bias", opt(bias)}});
  });
}

void GemmGeluOut::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                       const std::optional<at::Tensor>& bias, std::string_view) {
  with_c10_errors(kGelu, [&] { throw_not_cuda(kGelu, {{"x", &x}, {"w", &w}, {"out", &out}, {"bias", opt(bias)}}); });
}

at::Tensor GemmRelu::cpu(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                         std::optional<at::ScalarType>) {
  return with_c10_errors(kRelu, [&]() -> at::Tensor {
    throw_not_cuda(kRelu, {{"x", &x}, {"w", &w}, {"bias", opt(bias)}});
  });
}

void GemmReluOut::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                       const std::optional<at::Tensor>& bias) {
  with_c10_errors(kRelu, [&] { throw_not_cuda(kRelu, {{"x", &x}, {"w", &w}, {"out", &out}, {"bias", opt(bias)}}); });
}

at::Tensor GemmAlphaBeta::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, double, double) {
  return with_c10_errors(kAlphaBeta, [&]() -> at::Tensor {
    throw_not_cuda(kAlphaBeta, {{"x", &x}, {"w", &w}, {"c", &c}});
  });
}

void GemmAlphaBetaOut::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, const at::Tensor& out,
                             double, double) {
  with_c10_errors(kAlphaBeta,
                  [&] { throw_not_cuda(kAlphaBeta, {{"x", &x}, {"w", &w}, {"c", &c}, {"out", &out}}); });
}

}  // namespace tgemm::torch_binding
