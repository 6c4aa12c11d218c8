// CUDA, CPU and autograd kernels of batched_gemm and batched_gemm_out (rows of
// python/csrc/op_table.h).
//
// Forward: tensors -> TensorViews -> tgemm::batched_gemm on at::cuda::getCurrentCUDAStream() of
// a's device; every tensor must be on that device (to_view checks it). No backward: the autograd
// kernels refuse a call that autograd would have to track. Errors leave as c10::Error.
//
// Tests: tests/python/test_batched.py (results vs torch.bmm in fp32, opcheck, compile, CUDA graph).
#include "python/csrc/ops_batched.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/variable.h>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/batched.h"

namespace tgemm::torch_binding {
namespace {

constexpr std::string_view kOp = "batched_gemm";

struct BatchedArgs {
  TensorView a, b, out, bias;
  const TensorView* bias_ptr = nullptr;

  BatchedArgs(c10::Device device, const at::Tensor& a_t, const at::Tensor& b_t, const at::Tensor& out_t,
              const std::optional<at::Tensor>& bias_t)
      : a(to_view(a_t, device, kOp, "a")), b(to_view(b_t, device, kOp, "b")), out(to_view(out_t, device, kOp, "out")) {
    if (has_tensor(bias_t)) {
      bias = to_view(*bias_t, device, kOp, "bias");
      bias_ptr = &bias;
    }
  }
  BatchedArgs(const BatchedArgs&) = delete;
  BatchedArgs& operator=(const BatchedArgs&) = delete;
};

// [B, M, N] from a [B, M, K] / [B, K, M] and b [B, K, N] / [B, N, K]. Ranks are checked by the
// core; a wrong rank gives an empty output here so the core's rank message is the one raised.
at::Tensor empty_output(const at::Tensor& a, const at::Tensor& b, bool transpose_a, bool transpose_b,
                        std::optional<at::ScalarType> out_dtype) {
  const bool ranks_ok = a.dim() == 3 && b.dim() == 3;
  const std::int64_t batch = ranks_ok ? a.size(0) : 0;
  const std::int64_t m = ranks_ok ? a.size(transpose_a ? 2 : 1) : 0;
  const std::int64_t n = ranks_ok ? b.size(transpose_b ? 1 : 2) : 0;
  at::ScalarType type = a.scalar_type();
  if (out_dtype) {
    to_dtype(*out_dtype, kOp, "out_dtype");  // a type tgemm has at all; the core checks which ones it takes
    type = *out_dtype;
  }
  return at::empty({batch, m, n}, a.options().dtype(type));
}

void run(c10::Device device, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out, bool transpose_a,
         bool transpose_b, const std::optional<at::Tensor>& bias) {
  const BatchedArgs args(device, a, b, out, bias);
  batched_gemm(args.a, args.b, args.out, transpose_a, transpose_b, args.bias_ptr,
               at::cuda::getCurrentCUDAStream(device.index()).stream());
}

bool tracked(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias) {
  return at::GradMode::is_enabled() &&
         (a.requires_grad() || b.requires_grad() || (has_tensor(bias) && bias->requires_grad()));
}

}  // namespace

at::Tensor BatchedGemm::cuda(const at::Tensor& a, const at::Tensor& b, bool transpose_a, bool transpose_b,
                             const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(a, kOp);
    const c10::cuda::CUDAGuard guard(device);
    at::Tensor out = empty_output(a, b, transpose_a, transpose_b, out_dtype);
    run(device, a, b, out, transpose_a, transpose_b, bias);
    return out;
  });
}

void BatchedGemmOut::cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out, bool transpose_a,
                          bool transpose_b, const std::optional<at::Tensor>& bias) {
  with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(a, kOp);
    const c10::cuda::CUDAGuard guard(device);
    run(device, a, b, out, transpose_a, transpose_b, bias);
  });
}

at::Tensor BatchedGemm::autograd(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b, bool transpose_a,
                                 bool transpose_b, const std::optional<at::Tensor>& bias,
                                 std::optional<at::ScalarType> out_dtype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    if (tracked(a, b, bias)) {
      throw_error(kOp, "has no derivative (inference op), but an argument requires grad; use torch.bmm");
    }
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<BatchedGemm>().redispatch(keys & c10::after_autograd_keyset, a, b, transpose_a, transpose_b, bias,
                                               out_dtype);
  });
}

// out= has no derivative (as in ATen): the kernel below autograd and the version bump ATen's out=
// kernels do for a mutated tensor.
void BatchedGemmOut::autograd(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                              bool transpose_a, bool transpose_b, const std::optional<at::Tensor>& bias) {
  with_c10_tgemm_errors([&] {
    if (tracked(a, b, bias) || (at::GradMode::is_enabled() && out.requires_grad())) {
      throw_error("batched_gemm_out",
                  "functions with an out tensor do not support automatic differentiation, "
                  "but an argument requires grad");
    }
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      op_handle<BatchedGemmOut>().redispatch(keys & c10::after_autograd_keyset, a, b, out, transpose_a, transpose_b,
                                             bias);
    }
    torch::autograd::impl::bump_version(out);
  });
}

at::Tensor BatchedGemm::cpu(const at::Tensor& a, const at::Tensor& b, bool, bool, const std::optional<at::Tensor>& bias,
                            std::optional<at::ScalarType>) {
  return with_c10_errors(kOp, [&]() -> at::Tensor {
    throw_not_cuda(kOp, {{"a", &a}, {"b", &b}, {"bias", has_tensor(bias) ? &*bias : nullptr}});
  });
}

void BatchedGemmOut::cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out, bool, bool,
                         const std::optional<at::Tensor>& bias) {
  with_c10_errors(kOp, [&] {
    throw_not_cuda(kOp, {{"a", &a}, {"b", &b}, {"out", &out}, {"bias", has_tensor(bias) ? &*bias : nullptr}});
  });
}

DispatchInfo describe_batched(const at::Tensor& a, const at::Tensor& b, bool transpose_a, bool transpose_b,
                              const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(a, kOp);
    const c10::cuda::CUDAGuard guard(device);
    const at::Tensor out = empty_output(a, b, transpose_a, transpose_b, out_dtype);
    const BatchedArgs args(device, a, b, out, bias);
    return describe_batched_gemm(args.a, args.b, args.out, transpose_a, transpose_b, args.bias_ptr);
  });
}

}  // namespace tgemm::torch_binding
