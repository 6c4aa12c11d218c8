// CUDA, CPU and autograd kernels of gmm (a row of python/csrc/op_table.h).
//
// Forward: tensors -> TensorViews -> tgemm::gmm on at::cuda::getCurrentCUDAStream() of lhs's
// device; every tensor must be on that device (to_view checks it). No backward: the autograd
// kernel refuses a call that autograd would have to track. Errors leave as c10::Error.
//
// Tests: tests/python/test_gmm.py (results vs a per-group torch reference, opcheck, compile,
// CUDA-graph replay with new group sizes).
#include "python/csrc/ops_gmm.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/gmm.h"

namespace tgemm::torch_binding {
namespace {

constexpr std::string_view kOp = "gmm";

// [M, N]: M rows of lhs, N from rhs [G, K, N] or [G, N, K]. Ranks are checked by the core; a wrong
// rank gives an empty dimension here so the core's rank message is the one raised.
at::Tensor empty_output(const at::Tensor& lhs, const at::Tensor& rhs, bool transpose_rhs,
                        std::optional<at::ScalarType> out_dtype) {
  const std::int64_t m = lhs.dim() == 2 ? lhs.size(0) : 0;
  const std::int64_t n = rhs.dim() == 3 ? rhs.size(transpose_rhs ? 1 : 2) : 0;
  at::ScalarType type = lhs.scalar_type();
  if (out_dtype) {
    to_dtype(*out_dtype, kOp, "out_dtype");  // a type tgemm has at all; the core checks which ones gmm takes
    type = *out_dtype;
  }
  return at::empty({m, n}, lhs.options().dtype(type));
}

}  // namespace

at::Tensor Gmm::cuda(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes,
                     const std::optional<at::Tensor>& bias, bool transpose_rhs,
                     std::optional<at::ScalarType> out_dtype) {
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(lhs, kOp);
    const c10::cuda::CUDAGuard guard(device);
    at::Tensor out = empty_output(lhs, rhs, transpose_rhs, out_dtype);
    const TensorView lv = to_view(lhs, device, kOp, "lhs");
    const TensorView rv = to_view(rhs, device, kOp, "rhs");
    const TensorView sv = to_view(group_sizes, device, kOp, "group_sizes");
    const TensorView ov = to_view(out, device, kOp, "out");
    TensorView bv;
    if (has_tensor(bias)) bv = to_view(*bias, device, kOp, "bias");
    gmm(lv, rv, sv, ov, transpose_rhs, has_tensor(bias) ? &bv : nullptr,
        at::cuda::getCurrentCUDAStream(device.index()).stream());
    return out;
  });
}

DispatchInfo describe_gmm_call(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes,
                               const std::optional<at::Tensor>& bias, bool transpose_rhs,
                               std::optional<at::ScalarType> out_dtype) {
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(lhs, kOp);
    const c10::cuda::CUDAGuard guard(device);
    const at::Tensor out = empty_output(lhs, rhs, transpose_rhs, out_dtype);
    const TensorView lv = to_view(lhs, device, kOp, "lhs");
    const TensorView rv = to_view(rhs, device, kOp, "rhs");
    const TensorView sv = to_view(group_sizes, device, kOp, "group_sizes");
    const TensorView ov = to_view(out, device, kOp, "out");
    TensorView bv;
    if (has_tensor(bias)) bv = to_view(*bias, device, kOp, "bias");
    return describe_gmm(lv, rv, sv, ov, transpose_rhs, has_tensor(bias) ? &bv : nullptr);
  });
}

at::Tensor Gmm::autograd(c10::DispatchKeySet keys, const at::Tensor& lhs, const at::Tensor& rhs,
                         const at::Tensor& group_sizes, const std::optional<at::Tensor>& bias, bool transpose_rhs,
                         std::optional<at::ScalarType> out_dtype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    const bool tracked = lhs.requires_grad() || rhs.requires_grad() || (has_tensor(bias) && bias->requires_grad());
    if (at::GradMode::is_enabled() && tracked) {
      throw_error(kOp, "has no derivative (inference op), but an argument requires grad");
    }
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<Gmm>().redispatch(keys & c10::after_autograd_keyset, lhs, rhs, group_sizes, bias, transpose_rhs,
                                       out_dtype);
  });
}

at::Tensor Gmm::cpu(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes,
                    const std::optional<at::Tensor>& bias, bool, std::optional<at::ScalarType>) {
  return with_c10_errors(kOp, [&]() -> at::Tensor {
    throw_not_cuda(
        kOp,
        {{"lhs", &lhs}, {"rhs", &rhs}, {"group_sizes", &group_sizes}, {"bias", has_tensor(bias) ? &*bias : nullptr}});
  });
}

}  // namespace tgemm::torch_binding
