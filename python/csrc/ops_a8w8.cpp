// CUDA, CPU and autograd kernels of gemm_a8w8 and gemm_a8w8_blockscale (rows of
// python/csrc/op_table.h), one implementation over the two C++ entry points (A8W8Entry).
//
// Forward: tensors -> TensorViews -> tgemm::gemm_a8w8[_blockscale] on
// at::cuda::getCurrentCUDAStream() of x's device. Every tensor, the scales included, must be on x's
// device (to_view checks it: the C++ API cannot, a TensorView carries no device). No backward: the
// autograd kernel refuses a call that autograd would have to track. Errors leave as c10::Error
// (torch_view.h).
//
// Tests: tests/python/test_a8w8.py and tests/python/test_a8w8_blockscale.py (results vs a
// dequantized fp32 reference, opcheck, compile, CUDA graphs).
#include "python/csrc/ops_a8w8.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/a8w8.h"

namespace tgemm::torch_binding {
namespace {

// The C++ entry point and the describe function behind each kernels struct.
template <class K>
struct A8W8Entry;
template <>
struct A8W8Entry<GemmA8W8> {
  static constexpr std::string_view kOp = "gemm_a8w8";
  static constexpr auto run = &tgemm::gemm_a8w8;
  static constexpr auto describe = &tgemm::describe_gemm_a8w8;
};
template <>
struct A8W8Entry<GemmA8W8Blockscale> {
  static constexpr std::string_view kOp = "gemm_a8w8_blockscale";
  static constexpr auto run = &tgemm::gemm_a8w8_blockscale;
  static constexpr auto describe = &tgemm::describe_gemm_a8w8_blockscale;
};

struct A8W8Args {
  TensorView x, w, x_scale, w_scale, out, bias;
  const TensorView* bias_ptr = nullptr;

  A8W8Args(std::string_view op, c10::Device device, const at::Tensor& x_t, const at::Tensor& w_t,
           const at::Tensor& xs_t, const at::Tensor& ws_t, const at::Tensor& out_t,
           const std::optional<at::Tensor>& bias_t)
      : x(to_view(x_t, device, op, "x")),
        w(to_view(w_t, device, op, "w")),
        x_scale(to_view(xs_t, device, op, "x_scale")),
        w_scale(to_view(ws_t, device, op, "w_scale")),
        out(to_view(out_t, device, op, "out")) {
    if (has_tensor(bias_t)) {
      bias = to_view(*bias_t, device, op, "bias");
      bias_ptr = &bias;
    }
  }
  A8W8Args(const A8W8Args&) = delete;
  A8W8Args& operator=(const A8W8Args&) = delete;
};

at::ScalarType output_type(std::optional<at::ScalarType> out_dtype, std::string_view op) {
  if (!out_dtype) return at::kBFloat16;
  to_dtype(*out_dtype, op, "out_dtype");  // a type tgemm has at all; the core checks which ones this op takes
  return *out_dtype;
}

at::Tensor empty_output(const at::Tensor& x, const at::Tensor& w, std::optional<at::ScalarType> out_dtype,
                        std::string_view op) {
  return at::empty(linear_output_sizes(x, w), x.options().dtype(output_type(out_dtype, op)));
}

template <class K>
at::Tensor run_cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                    const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  constexpr std::string_view op = A8W8Entry<K>::kOp;
  return with_c10_errors(op, [&] {
    const c10::Device device = op_device(x, op);
    const c10::cuda::CUDAGuard guard(device);
    at::Tensor out = empty_output(x, w, out_dtype, op);
    const A8W8Args args(op, device, x, w, x_scale, w_scale, out, bias);
    A8W8Entry<K>::run(args.x, args.w, args.x_scale, args.w_scale, args.out, args.bias_ptr,
                      at::cuda::getCurrentCUDAStream(device.index()).stream());
    return out;
  });
}

template <class K>
at::Tensor run_autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                        const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                        std::optional<at::ScalarType> out_dtype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    const bool tracked = x.requires_grad() || w.requires_grad() || x_scale.requires_grad() || w_scale.requires_grad() ||
                         (has_tensor(bias) && bias->requires_grad());
    if (at::GradMode::is_enabled() && tracked) {
      throw_error(A8W8Entry<K>::kOp, "has no derivative (quantized inference op), but an argument requires grad");
    }
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<K>().redispatch(keys & c10::after_autograd_keyset, x, w, x_scale, w_scale, bias, out_dtype);
  });
}

template <class K>
at::Tensor run_cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                   const std::optional<at::Tensor>& bias) {
  constexpr std::string_view op = A8W8Entry<K>::kOp;
  return with_c10_errors(op, [&]() -> at::Tensor {
    throw_not_cuda(op, {{"x", &x},
                        {"w", &w},
                        {"x_scale", &x_scale},
                        {"w_scale", &w_scale},
                        {"bias", has_tensor(bias) ? &*bias : nullptr}});
  });
}

template <class K>
DispatchInfo run_describe(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                          const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                          std::optional<at::ScalarType> out_dtype) {
  constexpr std::string_view op = A8W8Entry<K>::kOp;
  return with_c10_errors(op, [&] {
    const c10::Device device = op_device(x, op);
    const c10::cuda::CUDAGuard guard(device);
    const at::Tensor out = empty_output(x, w, out_dtype, op);
    const A8W8Args args(op, device, x, w, x_scale, w_scale, out, bias);
    return A8W8Entry<K>::describe(args.x, args.w, args.x_scale, args.w_scale, args.out, args.bias_ptr);
  });
}

}  // namespace

at::Tensor GemmA8W8::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                          const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                          std::optional<at::ScalarType> out_dtype) {
  return run_cuda<GemmA8W8>(x, w, x_scale, w_scale, bias, out_dtype);
}

at::Tensor GemmA8W8::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  return run_autograd<GemmA8W8>(keys, x, w, x_scale, w_scale, bias, out_dtype);
}

at::Tensor GemmA8W8::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                         const std::optional<at::Tensor>& bias, std::optional<at::ScalarType>) {
  return run_cpu<GemmA8W8>(x, w, x_scale, w_scale, bias);
}

at::Tensor GemmA8W8Blockscale::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                                    const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                                    std::optional<at::ScalarType> out_dtype) {
  return run_cuda<GemmA8W8Blockscale>(x, w, x_scale, w_scale, bias, out_dtype);
}

at::Tensor GemmA8W8Blockscale::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                                        const at::Tensor& x_scale, const at::Tensor& w_scale,
                                        const std::optional<at::Tensor>& bias,
                                        std::optional<at::ScalarType> out_dtype) {
  return run_autograd<GemmA8W8Blockscale>(keys, x, w, x_scale, w_scale, bias, out_dtype);
}

at::Tensor GemmA8W8Blockscale::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                                   const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                                   std::optional<at::ScalarType>) {
  return run_cpu<GemmA8W8Blockscale>(x, w, x_scale, w_scale, bias);
}

DispatchInfo describe_a8w8(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                           const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                           std::optional<at::ScalarType> out_dtype) {
  return run_describe<GemmA8W8>(x, w, x_scale, w_scale, bias, out_dtype);
}

DispatchInfo describe_a8w8_blockscale(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                                      const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                                      std::optional<at::ScalarType> out_dtype) {
  return run_describe<GemmA8W8Blockscale>(x, w, x_scale, w_scale, bias, out_dtype);
}

}  // namespace tgemm::torch_binding
