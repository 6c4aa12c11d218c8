// CUDA, CPU and autograd kernels of gemm_a8w8, gemm_a8w8_blockscale and batched_gemm_a8w8 (rows of
// python/csrc/op_table.h), one implementation over the three C++ entry points (A8W8Entry).
//
// Forward: tensors -> TensorViews -> tgemm::gemm_a8w8[_blockscale] on
// at::cuda::getCurrentCUDAStream() of x's device. Every tensor, the scales included, must be on x's
// device (to_view checks it: the C++ API cannot, a TensorView carries no device). No backward: the
// autograd kernel refuses a call that autograd would have to track. Errors leave as c10::Error
// (torch_view.h).
//
// Tests: tests/python/test_a8w8.py, tests/python/test_a8w8_blockscale.py and
// tests/python/test_batched_a8w8.py (results vs a dequantized fp32 reference, opcheck, compile, CUDA
// graphs).
#include "python/csrc/ops_a8w8.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/a8w8.h"
#include "tgemm/batched.h"

namespace tgemm::torch_binding {
namespace {

// The names of the four operands in messages.
struct A8W8Names {
  const char* x;
  const char* w;
  const char* x_scale;
  const char* w_scale;
};
constexpr A8W8Names kLinearNames{"x", "w", "x_scale", "w_scale"};

// The C++ entry point, the describe function, the operand names and the output's sizes behind each
// kernels struct.
template <class K>
struct A8W8Entry;
template <>
struct A8W8Entry<GemmA8W8> {
  static constexpr std::string_view kOp = "gemm_a8w8";
  static constexpr auto run = &tgemm::gemm_a8w8;
  static constexpr auto describe = &tgemm::describe_gemm_a8w8;
  static constexpr A8W8Names kNames = kLinearNames;
  static std::vector<std::int64_t> out_sizes(const at::Tensor& x, const at::Tensor& w) {
    return linear_output_sizes(x, w);
  }
};
template <>
struct A8W8Entry<GemmA8W8Blockscale> {
  static constexpr std::string_view kOp = "gemm_a8w8_blockscale";
  static constexpr auto run = &tgemm::gemm_a8w8_blockscale;
  static constexpr auto describe = &tgemm::describe_gemm_a8w8_blockscale;
  static constexpr A8W8Names kNames = kLinearNames;
  static std::vector<std::int64_t> out_sizes(const at::Tensor& x, const at::Tensor& w) {
    return linear_output_sizes(x, w);
  }
};
template <>
struct A8W8Entry<BatchedGemmA8W8> {
  static constexpr std::string_view kOp = "batched_gemm_a8w8";
  static constexpr auto run = &tgemm::batched_gemm_a8w8;
  static constexpr auto describe = &tgemm::describe_batched_gemm_a8w8;
  static constexpr A8W8Names kNames{"a", "b", "a_scale", "b_scale"};
  // [B, M, N] from a [B, M, K] and b [B, N, K]; a wrong rank gives an empty output here so the
  // core's rank message is the one raised.
  static std::vector<std::int64_t> out_sizes(const at::Tensor& a, const at::Tensor& b) {
    if (a.dim() != 3 || b.dim() != 3) return {0, 0, 0};
    return {a.size(0), a.size(1), b.size(1)};
  }
};

struct A8W8Args {
  TensorView x, w, x_scale, w_scale, out, bias;
  const TensorView* bias_ptr = nullptr;

  A8W8Args(std::string_view op, const A8W8Names& names, c10::Device device, const at::Tensor& x_t,
           const at::Tensor& w_t, const at::Tensor& xs_t, const at::Tensor& ws_t, const at::Tensor& out_t,
           const std::optional<at::Tensor>& bias_t)
      : x(to_view(x_t, device, op, names.x)),
        w(to_view(w_t, device, op, names.w)),
        x_scale(to_view(xs_t, device, op, names.x_scale)),
        w_scale(to_view(ws_t, device, op, names.w_scale)),
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

template <class K>
at::Tensor empty_output(const at::Tensor& x, const at::Tensor& w, std::optional<at::ScalarType> out_dtype) {
  return at::empty(A8W8Entry<K>::out_sizes(x, w), x.options().dtype(output_type(out_dtype, A8W8Entry<K>::kOp)));
}

template <class K>
at::Tensor run_cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                    const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  constexpr std::string_view op = A8W8Entry<K>::kOp;
  return with_c10_errors(op, [&] {
    const c10::Device device = op_device(x, op);
    const c10::cuda::CUDAGuard guard(device);
    at::Tensor out = empty_output<K>(x, w, out_dtype);
    const A8W8Args args(op, A8W8Entry<K>::kNames, device, x, w, x_scale, w_scale, out, bias);
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
  constexpr A8W8Names names = A8W8Entry<K>::kNames;
  return with_c10_errors(op, [&]() -> at::Tensor {
    throw_not_cuda(op, {{names.x, &x},
                        {names.w, &w},
                        {names.x_scale, &x_scale},
                        {names.w_scale, &w_scale},
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
    const at::Tensor out = empty_output<K>(x, w, out_dtype);
    const A8W8Args args(op, A8W8Entry<K>::kNames, device, x, w, x_scale, w_scale, out, bias);
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

at::Tensor BatchedGemmA8W8::cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& a_scale,
                                 const at::Tensor& b_scale, const std::optional<at::Tensor>& bias,
                                 std::optional<at::ScalarType> out_dtype) {
  return run_cuda<BatchedGemmA8W8>(a, b, a_scale, b_scale, bias, out_dtype);
}

at::Tensor BatchedGemmA8W8::autograd(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b,
                                     const at::Tensor& a_scale, const at::Tensor& b_scale,
                                     const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  return run_autograd<BatchedGemmA8W8>(keys, a, b, a_scale, b_scale, bias, out_dtype);
}

at::Tensor BatchedGemmA8W8::cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& a_scale,
                                const at::Tensor& b_scale, const std::optional<at::Tensor>& bias,
                                std::optional<at::ScalarType>) {
  return run_cpu<BatchedGemmA8W8>(a, b, a_scale, b_scale, bias);
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

DispatchInfo describe_batched_a8w8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& a_scale,
                                   const at::Tensor& b_scale, const std::optional<at::Tensor>& bias,
                                   std::optional<at::ScalarType> out_dtype) {
  return run_describe<BatchedGemmA8W8>(a, b, a_scale, b_scale, bias, out_dtype);
}

}  // namespace tgemm::torch_binding
