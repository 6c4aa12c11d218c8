// CUDA, CPU and autograd kernels of the quantization ops (rows of python/csrc/op_table.h; what each
// computes: ops_quant.h and include/tgemm/quant.h).
//
// Outputs are allocated here (q contiguous with x's sizes; scales as ops_quant.h shapes them, the
// MN-major 1x128 scales with strides (1, mn_major_tma_aligned_ld(M))), then the tensors become
// TensorViews (torch_view.h) and the C++ entry point validates and launches on
// at::cuda::getCurrentCUDAStream() of x's device.
//
// Errors: as ops_a16w16.cpp: c10::Error only. The autograd kernels redispatch below autograd: the
// codes are integers or FP8, the scales a function of amax, neither differentiable.
//
// Tests: tests/python/test_quant_ops.py. Bench: bench/torch_bench.py --quant.
#include "python/csrc/ops_quant.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <string_view>
#include <vector>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/quant.h"

namespace tgemm::torch_binding {
namespace {

constexpr std::string_view kPerTensor = "quant_fp8_per_tensor";
constexpr std::string_view kPerTensorStatic = "quant_fp8_per_tensor_static";
constexpr std::string_view kPerToken = "quant_per_token";
constexpr std::string_view kBlock1x128 = "quant_fp8_per_block_1x128";
constexpr std::string_view kBlock128x128 = "quant_fp8_per_block_128x128";

Stream current_stream(c10::Device device) { return at::cuda::getCurrentCUDAStream(device.index()).stream(); }

// The device of the op's input, named as the C++ API names it (x, or w for weights).
c10::Device input_device(const at::Tensor& t, std::string_view op, const char* name) {
  if (!t.defined()) throw_error(op, name, " must be a defined tensor");
  if (!t.is_cuda()) throw_error(op, name, " must be a CUDA tensor, got device ", t.device().str());
  return t.device();
}

// Rows of the input flattened to [M, K] (the C++ validation refuses rank < 2 with its message).
std::int64_t rows_of(const at::Tensor& x) {
  std::int64_t m = 1;
  for (std::int64_t d = 0; d + 1 < x.dim(); ++d) m *= x.size(d);
  return m;
}

std::int64_t blocks_of(std::int64_t a) { return (a + kQuantBlock - 1) / kQuantBlock; }

at::Tensor fp8_like(const at::Tensor& x) { return at::empty(x.sizes(), x.options().dtype(at::kFloat8_e4m3fn)); }

at::TensorOptions fp32_on(const at::Tensor& x) { return x.options().dtype(at::kFloat); }

// Runs body(device) with x's device current, every error as c10::Error.
template <typename Body>
decltype(auto) on_device(const at::Tensor& x, std::string_view op, const char* name, Body&& body) {
  return with_c10_errors(op, [&]() -> decltype(auto) {
    const c10::Device device = input_device(x, op, name);
    const c10::cuda::CUDAGuard guard(device);
    return body(device);
  });
}

template <typename K, typename... Args>
auto redispatch_below_autograd(c10::DispatchKeySet keys, const Args&... args) {
  return with_c10_tgemm_errors([&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<K>().redispatch(keys & c10::after_autograd_keyset, args...);
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> QuantFp8PerTensor::cuda(const at::Tensor& x) {
  return on_device(x, kPerTensor, "x", [&](c10::Device device) {
    at::Tensor q = fp8_like(x);
    at::Tensor scale = at::empty({1}, fp32_on(x));
    quant_fp8_per_tensor(to_view(x, device, kPerTensor, "x"), to_view(q, device, kPerTensor, "q"),
                         to_view(scale, device, kPerTensor, "scale"), current_stream(device));
    return std::make_tuple(q, scale);
  });
}

at::Tensor QuantFp8PerTensorStatic::cuda(const at::Tensor& x, const at::Tensor& scale) {
  return on_device(x, kPerTensorStatic, "x", [&](c10::Device device) {
    const TensorView xv = to_view(x, device, kPerTensorStatic, "x");
    const TensorView sv = to_view(scale, device, kPerTensorStatic, "scale");
    at::Tensor q = fp8_like(x);
    quant_fp8_per_tensor_static(xv, to_view(q, device, kPerTensorStatic, "q"), sv, current_stream(device));
    return q;
  });
}

std::tuple<at::Tensor, at::Tensor> QuantPerToken::cuda(const at::Tensor& x, std::optional<at::ScalarType> qtype) {
  return on_device(x, kPerToken, "x", [&](c10::Device device) {
    const at::ScalarType qt = qtype.value_or(at::kFloat8_e4m3fn);
    to_dtype(qt, kPerToken, "qtype");  // a type tgemm has; the C++ validation says which ones it takes
    at::Tensor q = at::empty(x.sizes(), x.options().dtype(qt));
    std::vector<std::int64_t> scale_sizes(x.sizes().begin(), x.sizes().end());
    if (scale_sizes.empty()) scale_sizes.push_back(1);
    scale_sizes.back() = 1;
    at::Tensor scale = at::empty(scale_sizes, fp32_on(x));
    quant_per_token(to_view(x, device, kPerToken, "x"), to_view(q, device, kPerToken, "q"),
                    to_view(scale, device, kPerToken, "scale"), current_stream(device));
    return std::make_tuple(q, scale);
  });
}

std::tuple<at::Tensor, at::Tensor> QuantFp8PerBlock1x128::cuda(const at::Tensor& x, bool mn_major) {
  return on_device(x, kBlock1x128, "x", [&](c10::Device device) {
    at::Tensor q = fp8_like(x);
    const std::int64_t m = rows_of(x), kb = blocks_of(x.dim() > 0 ? x.size(-1) : 0);
    at::Tensor scale = mn_major ? at::empty_strided({m, kb}, {1, mn_major_tma_aligned_ld(m)}, fp32_on(x))
                                : at::empty({m, kb}, fp32_on(x));
    quant_fp8_per_block_1x128(to_view(x, device, kBlock1x128, "x"), to_view(q, device, kBlock1x128, "q"),
                              to_view(scale, device, kBlock1x128, "scale"), current_stream(device));
    return std::make_tuple(q, scale);
  });
}

std::tuple<at::Tensor, at::Tensor> QuantFp8PerBlock128x128::cuda(const at::Tensor& w) {
  return on_device(w, kBlock128x128, "w", [&](c10::Device device) {
    at::Tensor q = fp8_like(w);
    const std::int64_t nb = blocks_of(w.dim() == 2 ? w.size(0) : 0), kb = blocks_of(w.dim() == 2 ? w.size(1) : 0);
    at::Tensor scale = at::empty({nb, kb}, fp32_on(w));
    quant_fp8_per_block_128x128(to_view(w, device, kBlock128x128, "w"), to_view(q, device, kBlock128x128, "q"),
                                to_view(scale, device, kBlock128x128, "scale"), current_stream(device));
    return std::make_tuple(q, scale);
  });
}

// ---- CPU kernels: only to say which argument is not on the GPU ----

std::tuple<at::Tensor, at::Tensor> QuantFp8PerTensor::cpu(const at::Tensor& x) {
  return with_c10_errors(kPerTensor, [&]() -> std::tuple<at::Tensor, at::Tensor> {
    throw_not_cuda(kPerTensor, {{"x", &x}});
  });
}

at::Tensor QuantFp8PerTensorStatic::cpu(const at::Tensor& x, const at::Tensor& scale) {
  return with_c10_errors(kPerTensorStatic, [&]() -> at::Tensor {
    throw_not_cuda(kPerTensorStatic, {{"x", &x}, {"scale", &scale}});
  });
}

std::tuple<at::Tensor, at::Tensor> QuantPerToken::cpu(const at::Tensor& x, std::optional<at::ScalarType>) {
  return with_c10_errors(kPerToken, [&]() -> std::tuple<at::Tensor, at::Tensor> {
    throw_not_cuda(kPerToken, {{"x", &x}});
  });
}

std::tuple<at::Tensor, at::Tensor> QuantFp8PerBlock1x128::cpu(const at::Tensor& x, bool) {
  return with_c10_errors(kBlock1x128, [&]() -> std::tuple<at::Tensor, at::Tensor> {
    throw_not_cuda(kBlock1x128, {{"x", &x}});
  });
}

std::tuple<at::Tensor, at::Tensor> QuantFp8PerBlock128x128::cpu(const at::Tensor& w) {
  return with_c10_errors(kBlock128x128, [&]() -> std::tuple<at::Tensor, at::Tensor> {
    throw_not_cuda(kBlock128x128, {{"w", &w}});
  });
}

// ---- Autograd kernels: nothing to differentiate ----

std::tuple<at::Tensor, at::Tensor> QuantFp8PerTensor::autograd(c10::DispatchKeySet keys, const at::Tensor& x) {
  return redispatch_below_autograd<QuantFp8PerTensor>(keys, x);
}

at::Tensor QuantFp8PerTensorStatic::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& scale) {
  return redispatch_below_autograd<QuantFp8PerTensorStatic>(keys, x, scale);
}

std::tuple<at::Tensor, at::Tensor> QuantPerToken::autograd(c10::DispatchKeySet keys, const at::Tensor& x,
                                                           std::optional<at::ScalarType> qtype) {
  return redispatch_below_autograd<QuantPerToken>(keys, x, qtype);
}

std::tuple<at::Tensor, at::Tensor> QuantFp8PerBlock1x128::autograd(c10::DispatchKeySet keys, const at::Tensor& x,
                                                                   bool mn_major) {
  return redispatch_below_autograd<QuantFp8PerBlock1x128>(keys, x, mn_major);
}

std::tuple<at::Tensor, at::Tensor> QuantFp8PerBlock128x128::autograd(c10::DispatchKeySet keys, const at::Tensor& w) {
  return redispatch_below_autograd<QuantFp8PerBlock128x128>(keys, w);
}

}  // namespace tgemm::torch_binding
