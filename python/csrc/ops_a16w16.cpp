// CUDA, CPU and autograd kernels of the a16w16 ops (rows of python/csrc/op_table.h).
//
// Forward: tensors -> TensorViews -> tgemm::gemm_a16w16 on at::cuda::getCurrentCUDAStream() of
// x's device. Backward (autograd kernel, C++ so that calls without grad stay cheap):
//   dx = g @ w, dw = g^T @ x, dbias = sum of g over rows, with g the output gradient in x's dtype
// (as F.linear's backward computes them), by ATen ops so they are traced by torch.compile too.
// CPU kernels exist only to name the argument that is not on the GPU.
//
// Errors: every kernel here raises c10::Error only (torch_view.h): the CUDA and CPU kernels run
// their body under with_c10_errors, the autograd kernels under with_c10_tgemm_errors (what the
// kernels below them raise, Python exceptions of fake kernels included, passes unchanged). A
// tgemm::Error must never cross torch's dispatcher.
//
// Tests: tests/python/ (test_ops: results vs fp32; test_torch_integration: opcheck, compile, CUDA
// graphs; test_errors: messages). Bench: bench/torch_bench.py.
#include "python/csrc/ops_a16w16.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/variable.h>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/gemm.h"

namespace tgemm::torch_binding {
namespace {

constexpr std::string_view kOp = "gemm_a16w16";

// The C++ arguments of one a16w16 call. options.bias points into the object, so it is neither
// copied nor moved.
struct A16W16Args {
  TensorView x, w, out, bias;
  GemmOptions options;

  A16W16Args(c10::Device device, const at::Tensor& x_t, const at::Tensor& w_t, const at::Tensor& out_t,
             const std::optional<at::Tensor>& bias_t)
      : x(to_view(x_t, device, kOp, "x")), w(to_view(w_t, device, kOp, "w")), out(to_view(out_t, device, kOp, "out")) {
    if (has_tensor(bias_t)) {
      bias = to_view(*bias_t, device, kOp, "bias");
      options.bias = &bias;
    }
  }
  A16W16Args(const A16W16Args&) = delete;
  A16W16Args& operator=(const A16W16Args&) = delete;
};

// out = x @ w^T (+ bias) into an existing `out`, on the current stream of `device` (x's device,
// made current by the caller).
void run_a16w16(c10::Device device, const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                const std::optional<at::Tensor>& bias) {
  const A16W16Args args(device, x, w, out, bias);
  gemm_a16w16(args.x, args.w, args.out, args.options, at::cuda::getCurrentCUDAStream(device.index()).stream());
}

at::ScalarType output_type(const at::Tensor& x, std::optional<at::ScalarType> otype) {
  if (!otype) return x.scalar_type();  // x's view names x.dtype if it is not a tgemm type
  to_dtype(*otype, kOp, "otype");      // a type tgemm has at all; the core checks which ones this op takes
  return *otype;
}

// The autograd kernels hand over to the next kernel with redispatch (keys below autograd): one
// dispatcher entry and one profiler event per call, as ATen's own autograd kernels do.
class GemmA16W16Function : public torch::autograd::Function<GemmA16W16Function> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> otype,
                            c10::DispatchKeySet below) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({x, w});
    const bool with_bias = has_tensor(bias);
    ctx->saved_data["with_bias"] = with_bias;
    if (with_bias) ctx->saved_data["bias_dtype"] = bias->scalar_type();
    return op_handle<GemmA16W16>().redispatch(below, x, w, bias, otype);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];  // [..., K]
    const at::Tensor& w = saved[1];  // [N, K]
    const std::int64_t n = w.size(0);
    const std::int64_t k = w.size(1);
    const at::Tensor g = grads[0].to(x.scalar_type());  // [..., N]
    at::Tensor dx, dw, dbias;
    if (ctx->needs_input_grad(0)) dx = at::matmul(g, w);                                   // [..., K]
    if (ctx->needs_input_grad(1)) dw = g.reshape({-1, n}).t().matmul(x.reshape({-1, k}));  // [N, K]
    // Edges exist for tensor inputs only: the bias is edge 2 when it was given.
    if (ctx->saved_data["with_bias"].toBool() && ctx->needs_input_grad(2)) {
      // Summed in fp32 whatever the output dtype, then cast to the bias dtype.
      dbias = grads[0].reshape({-1, n}).sum(0, false, at::kFloat).to(ctx->saved_data["bias_dtype"].toScalarType());
    }
    // One entry per forward argument: x, w, bias, otype, the key set.
    return {dx, dw, dbias, at::Tensor(), at::Tensor()};
  }
};

bool has_forward_grad(const at::Tensor& t) { return t.defined() && t._fw_grad(/*level=*/0).defined(); }

}  // namespace

at::Tensor GemmA16W16::cuda(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                            std::optional<at::ScalarType> otype) {
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(x, kOp);
    const c10::cuda::CUDAGuard guard(device);
    at::Tensor out = at::empty(linear_output_sizes(x, w), x.options().dtype(output_type(x, otype)));
    run_a16w16(device, x, w, out, bias);
    return out;
  });
}

void GemmA16W16Out::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                         const std::optional<at::Tensor>& bias) {
  with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(x, kOp);
    const c10::cuda::CUDAGuard guard(device);
    run_a16w16(device, x, w, out, bias);
  });
}

at::Tensor GemmA16W16::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                                const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> otype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    // Forward-mode AD has no formula here: refuse rather than drop the tangent.
    if (has_forward_grad(x) || has_forward_grad(w) || (has_tensor(bias) && has_forward_grad(*bias))) {
      throw_error(kOp, "forward-mode AD (dual tensors) is not supported; use torch.nn.functional.linear");
    }
    const c10::DispatchKeySet below = keys & c10::after_autograd_keyset;
    const bool needs_grad = at::GradMode::is_enabled() &&
                            (x.requires_grad() || w.requires_grad() || (has_tensor(bias) && bias->requires_grad()));
    if (!needs_grad) {
      // The common inference path: no graph node, straight to the CUDA kernel.
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      return op_handle<GemmA16W16>().redispatch(below, x, w, bias, otype);
    }
    return GemmA16W16Function::apply(x, w, bias, otype, below);
  });
}

// out= has no derivative (as in ATen): an error when autograd would have to track it, otherwise
// the kernel below autograd and the version bump ATen's out= kernels do for a mutated tensor.
void GemmA16W16Out::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                             const at::Tensor& out, const std::optional<at::Tensor>& bias) {
  with_c10_tgemm_errors([&] {
    const bool tracked = x.requires_grad() || w.requires_grad() || out.requires_grad() ||
                         (has_tensor(bias) && bias->requires_grad());
    if (at::GradMode::is_enabled() && tracked) {
      throw_error("gemm_a16w16_out", "functions with an out tensor do not support automatic differentiation, "
                  "but an argument requires grad; use gemm_a16w16");
    }
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      op_handle<GemmA16W16Out>().redispatch(keys & c10::after_autograd_keyset, x, w, out, bias);
    }
    torch::autograd::impl::bump_version(out);
  });
}

// CPU kernels: only to say which argument is not on the GPU.
at::Tensor GemmA16W16::cpu(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                           std::optional<at::ScalarType>) {
  return with_c10_errors(kOp, [&]() -> at::Tensor {
    throw_not_cuda(kOp, {{"x", &x}, {"w", &w}, {"bias", has_tensor(bias) ? &*bias : nullptr}});
  });
}

void GemmA16W16Out::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                        const std::optional<at::Tensor>& bias) {
  with_c10_errors(kOp, [&] {
    throw_not_cuda(kOp, {{"x", &x}, {"w", &w}, {"out", &out}, {"bias", has_tensor(bias) ? &*bias : nullptr}});
  });
}

DispatchInfo describe_a16w16(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                             std::optional<at::ScalarType> otype) {
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(x, kOp);
    const c10::cuda::CUDAGuard guard(device);
    // A real output, allocated as the op allocates it: its alignment is part of the dispatch key.
    const at::Tensor out = at::empty(linear_output_sizes(x, w), x.options().dtype(output_type(x, otype)));
    const A16W16Args args(device, x, w, out, bias);
    return describe_gemm_a16w16(args.x, args.w, args.out, args.options);
  });
}

}  // namespace tgemm::torch_binding
