// CUDA, CPU and autograd kernels of m_grouped_gemm_fp8_contiguous and m_grouped_gemm_fp8_masked
// (rows of python/csrc/op_table.h).
//
// Forward: tensors -> TensorViews -> include/tgemm/grouped_fp8.h on
// at::cuda::getCurrentCUDAStream() of x's device; every tensor must be on that device (to_view
// checks it). No backward: the autograd kernels refuse a call that autograd would have to track,
// and bump the version of out. Errors leave as c10::Error.
//
// Tests: tests/python/test_grouped_fp8.py (results vs a dequantized torch reference, opcheck,
// CUDA-graph replay with new indices and masks, errors).
#include "python/csrc/ops_grouped_fp8.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/variable.h>

#include <initializer_list>
#include <string_view>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/grouped_fp8.h"

namespace tgemm::torch_binding {
namespace {

constexpr std::string_view kContiguous = "m_grouped_gemm_fp8_contiguous";
constexpr std::string_view kMasked = "m_grouped_gemm_fp8_masked";

// Refuses a call autograd would have to track (these ops have no derivative).
void refuse_tracked(std::string_view op, std::initializer_list<const at::Tensor*> tensors) {
  if (!at::GradMode::is_enabled()) return;
  for (const at::Tensor* t : tensors) {
    if (t->defined() && t->requires_grad()) throw_error(op, "has no derivative, but an argument requires grad");
  }
}

}  // namespace

void MGroupedGemmFp8Contiguous::cuda(const at::Tensor& x, const at::Tensor& x_scale, const at::Tensor& w,
                                     const at::Tensor& w_scale, const at::Tensor& out, const at::Tensor& m_indices) {
  with_c10_errors(kContiguous, [&] {
    const c10::Device device = op_device(x, kContiguous);
    const c10::cuda::CUDAGuard guard(device);
    m_grouped_gemm_fp8_contiguous(
        to_view(x, device, kContiguous, "x"), to_view(x_scale, device, kContiguous, "x_scale"),
        to_view(w, device, kContiguous, "w"), to_view(w_scale, device, kContiguous, "w_scale"),
        to_view(out, device, kContiguous, "out"), to_view(m_indices, device, kContiguous, "m_indices"),
        at::cuda::getCurrentCUDAStream(device.index()).stream());
  });
}

void MGroupedGemmFp8Masked::cuda(const at::Tensor& x, const at::Tensor& x_scale, const at::Tensor& w,
                                 const at::Tensor& w_scale, const at::Tensor& out, const at::Tensor& masked_m,
                                 std::int64_t expected_m) {
  with_c10_errors(kMasked, [&] {
    const c10::Device device = op_device(x, kMasked);
    const c10::cuda::CUDAGuard guard(device);
    m_grouped_gemm_fp8_masked(to_view(x, device, kMasked, "x"), to_view(x_scale, device, kMasked, "x_scale"),
                              to_view(w, device, kMasked, "w"), to_view(w_scale, device, kMasked, "w_scale"),
                              to_view(out, device, kMasked, "out"), to_view(masked_m, device, kMasked, "masked_m"),
                              expected_m, at::cuda::getCurrentCUDAStream(device.index()).stream());
  });
}

void MGroupedGemmFp8Contiguous::cpu(const at::Tensor& x, const at::Tensor& x_scale, const at::Tensor& w,
                                    const at::Tensor& w_scale, const at::Tensor& out, const at::Tensor& m_indices) {
  with_c10_errors(kContiguous, [&] {
    throw_not_cuda(
        kContiguous,
        {{"x", &x}, {"x_scale", &x_scale}, {"w", &w}, {"w_scale", &w_scale}, {"out", &out}, {"m_indices", &m_indices}});
  });
}

void MGroupedGemmFp8Masked::cpu(const at::Tensor& x, const at::Tensor& x_scale, const at::Tensor& w,
                                const at::Tensor& w_scale, const at::Tensor& out, const at::Tensor& masked_m,
                                std::int64_t) {
  with_c10_errors(kMasked, [&] {
    throw_not_cuda(
        kMasked,
        {{"x", &x}, {"x_scale", &x_scale}, {"w", &w}, {"w_scale", &w_scale}, {"out", &out}, {"masked_m", &masked_m}});
  });
}

void MGroupedGemmFp8Contiguous::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& x_scale,
                                         const at::Tensor& w, const at::Tensor& w_scale, const at::Tensor& out,
                                         const at::Tensor& m_indices) {
  with_c10_tgemm_errors([&] {
    refuse_tracked(kContiguous, {&x, &x_scale, &w, &w_scale, &out});
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      op_handle<MGroupedGemmFp8Contiguous>().redispatch(keys & c10::after_autograd_keyset, x, x_scale, w, w_scale, out,
                                                        m_indices);
    }
    torch::autograd::impl::bump_version(out);
  });
}

void MGroupedGemmFp8Masked::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& x_scale,
                                     const at::Tensor& w, const at::Tensor& w_scale, const at::Tensor& out,
                                     const at::Tensor& masked_m, std::int64_t expected_m) {
  with_c10_tgemm_errors([&] {
    refuse_tracked(kMasked, {&x, &x_scale, &w, &w_scale, &out});
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      op_handle<MGroupedGemmFp8Masked>().redispatch(keys & c10::after_autograd_keyset, x, x_scale, w, w_scale, out,
                                                    masked_m, expected_m);
    }
    torch::autograd::impl::bump_version(out);
  });
}

}  // namespace tgemm::torch_binding
