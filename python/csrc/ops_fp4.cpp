// CUDA, CPU and autograd kernels of the MXFP4 ops (rows of python/csrc/op_table.h; what each
// computes: ops_fp4.h and include/tgemm/fp4.h). Outputs are allocated here, contiguous; the C++
// entry points validate and launch on at::cuda::getCurrentCUDAStream() of x's device. Errors:
// c10::Error only, as the other ops.
//
// Tests: tests/python/test_fp4_ops.py. Bench: bench/torch_bench.py --a16w4.
#include "python/csrc/ops_fp4.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <string_view>
#include <vector>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/fp4.h"

namespace tgemm::torch_binding {
namespace {

constexpr std::string_view kQuant = "quant_mxfp4";
constexpr std::string_view kGemm = "gemm_a16w4";
constexpr std::string_view kA8W4 = "gemm_a8w4";
constexpr std::string_view kA4W4 = "gemm_a4w4";

Stream current_stream(c10::Device device) { return at::cuda::getCurrentCUDAStream(device.index()).stream(); }

// x's sizes with the last one replaced by `last` (rank 0 stays [last]: the core refuses the rank).
std::vector<std::int64_t> with_last(const at::Tensor& x, std::int64_t last) {
  std::vector<std::int64_t> s(x.sizes().begin(), x.sizes().end());
  if (s.empty()) s.push_back(0);
  s.back() = last;
  return s;
}

using ScaledW4Fn = void (*)(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                            const TensorView&, const TensorView*, Stream);

// gemm_a8w4 and gemm_a4w4: out [..., N] of out_dtype (None: bf16), N from w.
at::Tensor run_scaled_w4(ScaledW4Fn fn, std::string_view op, const at::Tensor& x, const at::Tensor& w,
                         const at::Tensor& x_scale, const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                         std::optional<at::ScalarType> out_dtype) {
  return with_c10_errors(op, [&] {
    const c10::Device device = op_device(x, op);
    const c10::cuda::CUDAGuard guard(device);
    const at::ScalarType ot = out_dtype.value_or(at::kBFloat16);
    to_dtype(ot, op, "out_dtype");  // a type tgemm has; the core says which ones this op takes
    const TensorView xv = to_view(x, device, op, "x");
    const TensorView wv = to_view(w, device, op, "w");
    const TensorView xsv = to_view(x_scale, device, op, "x_scale");
    const TensorView sv = to_view(w_scale, device, op, "w_scale");
    at::Tensor out = at::empty(with_last(x, w.dim() >= 1 ? w.size(0) : 0), x.options().dtype(ot));
    TensorView bv;
    const TensorView* bp = nullptr;
    if (has_tensor(bias)) {
      bv = to_view(*bias, device, op, "bias");
      bp = &bv;
    }
    fn(xv, wv, xsv, sv, to_view(out, device, op, "out"), bp, current_stream(device));
    return out;
  });
}

at::Tensor scaled_w4_cpu(std::string_view op, const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                         const at::Tensor& w_scale, const std::optional<at::Tensor>& bias) {
  return with_c10_errors(op, [&]() -> at::Tensor {
    throw_not_cuda(op, {{"x", &x},
                        {"w", &w},
                        {"x_scale", &x_scale},
                        {"w_scale", &w_scale},
                        {"bias", has_tensor(bias) ? &*bias : nullptr}});
  });
}

template <class K>
at::Tensor scaled_w4_autograd(std::string_view op, c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    const bool tracked = x.requires_grad() || x_scale.requires_grad() || (has_tensor(bias) && bias->requires_grad());
    if (at::GradMode::is_enabled() && tracked) {
      throw_error(op, "has no derivative (quantized inference op), but an argument requires grad");
    }
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<K>().redispatch(keys & c10::after_autograd_keyset, x, w, x_scale, w_scale, bias, out_dtype);
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> QuantMxfp4::cuda(const at::Tensor& x) {
  return with_c10_errors(kQuant, [&] {
    const c10::Device device = op_device(x, kQuant);
    const c10::cuda::CUDAGuard guard(device);
    const std::int64_t k = x.dim() > 0 ? x.size(-1) : 0;
    // K % 32 != 0 gives [..., K / 2] and [..., K / 32] here; the core then names K in its error.
    at::Tensor q = at::empty(with_last(x, k / 2), x.options().dtype(at::kByte));
    at::Tensor scale = at::empty(with_last(x, k / kMxfp4Block), x.options().dtype(at::kByte));
    quant_mxfp4(to_view(x, device, kQuant, "x"), to_view(q, device, kQuant, "q"),
                to_view(scale, device, kQuant, "scale"), current_stream(device));
    return std::make_tuple(q, scale);
  });
}

at::Tensor GemmA16W4::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& w_scale,
                           const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  return with_c10_errors(kGemm, [&] {
    const c10::Device device = op_device(x, kGemm);
    const c10::cuda::CUDAGuard guard(device);
    const at::ScalarType ot = out_dtype.value_or(x.scalar_type());
    to_dtype(ot, kGemm, "out_dtype");  // a type tgemm has; the core says which ones this op takes
    const TensorView xv = to_view(x, device, kGemm, "x");
    const TensorView wv = to_view(w, device, kGemm, "w");
    const TensorView sv = to_view(w_scale, device, kGemm, "w_scale");
    at::Tensor out = at::empty(with_last(x, w.dim() >= 1 ? w.size(0) : 0), x.options().dtype(ot));
    TensorView bv;
    const TensorView* bp = nullptr;
    if (has_tensor(bias)) {
      bv = to_view(*bias, device, kGemm, "bias");
      bp = &bv;
    }
    gemm_a16w4(xv, wv, sv, to_view(out, device, kGemm, "out"), bp, current_stream(device));
    return out;
  });
}

std::tuple<at::Tensor, at::Tensor> QuantMxfp4::cpu(const at::Tensor& x) {
  return with_c10_errors(kQuant, [&]() -> std::tuple<at::Tensor, at::Tensor> { throw_not_cuda(kQuant, {{"x", &x}}); });
}

at::Tensor GemmA16W4::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& w_scale,
                          const std::optional<at::Tensor>& bias, std::optional<at::ScalarType>) {
  return with_c10_errors(kGemm, [&]() -> at::Tensor {
    throw_not_cuda(kGemm, {{"x", &x}, {"w", &w}, {"w_scale", &w_scale}, {"bias", has_tensor(bias) ? &*bias : nullptr}});
  });
}

std::tuple<at::Tensor, at::Tensor> QuantMxfp4::autograd(c10::DispatchKeySet keys, const at::Tensor& x) {
  return with_c10_tgemm_errors([&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<QuantMxfp4>().redispatch(keys & c10::after_autograd_keyset, x);
  });
}

at::Tensor GemmA16W4::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                               const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                               std::optional<at::ScalarType> out_dtype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    const bool tracked = x.requires_grad() || (has_tensor(bias) && bias->requires_grad());
    if (at::GradMode::is_enabled() && tracked) {
      throw_error(kGemm, "has no derivative (quantized inference op), but an argument requires grad");
    }
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<GemmA16W4>().redispatch(keys & c10::after_autograd_keyset, x, w, w_scale, bias, out_dtype);
  });
}

at::Tensor GemmA8W4::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                          const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                          std::optional<at::ScalarType> out_dtype) {
  return run_scaled_w4(&gemm_a8w4, kA8W4, x, w, x_scale, w_scale, bias, out_dtype);
}

at::Tensor GemmA4W4::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale,
                          const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                          std::optional<at::ScalarType> out_dtype) {
  return run_scaled_w4(&gemm_a4w4, kA4W4, x, w, x_scale, w_scale, bias, out_dtype);
}

at::Tensor GemmA8W4::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                         const std::optional<at::Tensor>& bias, std::optional<at::ScalarType>) {
  return scaled_w4_cpu(kA8W4, x, w, x_scale, w_scale, bias);
}

at::Tensor GemmA4W4::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                         const std::optional<at::Tensor>& bias, std::optional<at::ScalarType>) {
  return scaled_w4_cpu(kA4W4, x, w, x_scale, w_scale, bias);
}

at::Tensor GemmA8W4::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  return scaled_w4_autograd<GemmA8W4>(kA8W4, keys, x, w, x_scale, w_scale, bias, out_dtype);
}

at::Tensor GemmA4W4::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                              const at::Tensor& x_scale, const at::Tensor& w_scale,
                              const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
  return scaled_w4_autograd<GemmA4W4>(kA4W4, keys, x, w, x_scale, w_scale, bias, out_dtype);
}

}  // namespace tgemm::torch_binding
