// CUDA, CPU and autograd kernels of tgmm, tgmm_out, grouped_gemm and m_grouped_gemm_masked (rows
// of python/csrc/op_table.h).
//
// Forward: tensors -> TensorViews -> include/tgemm/grouped.h on at::cuda::getCurrentCUDAStream()
// of the first operand's device; every tensor must be on that device (to_view checks it). No
// backward: the autograd kernels refuse a call that autograd would have to track, and bump the
// version of the tensors an out= op writes. Errors leave as c10::Error.
//
// Tests: tests/python/test_grouped.py (results vs per-group torch references, opcheck, compile,
// CUDA-graph replay with new device data, errors); tests/python/test_moe.py for the MoE ops.
#include "python/csrc/ops_grouped.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/variable.h>

#include <initializer_list>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/grouped.h"
#include "tgemm/moe.h"

namespace tgemm::torch_binding {
namespace {

const char* tgmm_name(bool persistent) { return persistent ? "ptgmm" : "nptgmm"; }

std::optional<TensorView> optional_view(const std::optional<at::Tensor>& t, c10::Device device, std::string_view op,
                                        std::string_view name) {
  if (!has_tensor(t)) return std::nullopt;
  return to_view(*t, device, op, name);
}

const TensorView* ptr(const std::optional<TensorView>& v) { return v ? &*v : nullptr; }

// The output dtype: out_dtype, else the operands'. The core checks which ones the op takes.
at::ScalarType output_type(const at::Tensor& x, std::optional<at::ScalarType> out_dtype, std::string_view op) {
  if (!out_dtype) return x.scalar_type();
  to_dtype(*out_dtype, op, "out_dtype");  // a type tgemm has at all
  return *out_dtype;
}

// Refuses a call autograd would have to track (these ops have no derivative).
void refuse_tracked(std::string_view op, std::initializer_list<const at::Tensor*> tensors) {
  if (!at::GradMode::is_enabled()) return;
  for (const at::Tensor* t : tensors) {
    if (t != nullptr && t->defined() && t->requires_grad()) {
      throw_error(op, "has no derivative, but an argument requires grad");
    }
  }
}

void run_tgmm(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes, const at::Tensor& out,
              const std::optional<at::Tensor>& bias_grad, bool accumulate, bool persistent, c10::Device device) {
  const char* op = tgmm_name(persistent);
  const TensorView lv = to_view(lhs, device, op, "lhs");
  const TensorView rv = to_view(rhs, device, op, "rhs");
  const TensorView sv = to_view(group_sizes, device, op, "group_sizes");
  const TensorView ov = to_view(out, device, op, "out");
  const std::optional<TensorView> bv = optional_view(bias_grad, device, op, "bias_grad");
  const Stream stream = at::cuda::getCurrentCUDAStream(device.index()).stream();
  if (persistent) {
    ptgmm(lv, rv, sv, ov, ptr(bv), accumulate, stream);
  } else {
    nptgmm(lv, rv, sv, ov, ptr(bv), accumulate, stream);
  }
}

MoeScoring to_scoring(std::string_view scoring) {
  if (scoring == "sigmoid") return MoeScoring::kSigmoid;
  if (scoring == "softmax") return MoeScoring::kSoftmax;
  throw_error("grouped_topk", "scoring must be 'sigmoid' or 'softmax', got '", scoring, "'");
}

MoeActivation to_activation(std::string_view activation) {
  if (activation == "silu") return MoeActivation::kSilu;
  if (activation == "gelu") return MoeActivation::kGelu;
  throw_error("fused_moe", "activation must be 'silu' or 'gelu', got '", activation, "'");
}

// The routing outputs [T, k] (fp32 weights, int32 ids) for gating [T, E]; a wrong rank gives T = 0
// so the core's rank message is the one raised.
std::tuple<at::Tensor, at::Tensor> routing_outputs(const at::Tensor& gating, std::int64_t k, std::string_view op) {
  if (k < 0) throw_error(op, "k must be >= 0, got ", k);
  const std::int64_t t = gating.dim() == 2 ? gating.size(0) : 0;
  return {at::empty({t, k}, gating.options().dtype(at::kFloat)), at::empty({t, k}, gating.options().dtype(at::kInt))};
}

}  // namespace

at::Tensor Tgmm::cuda(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes, bool persistent,
                      std::optional<at::ScalarType> out_dtype) {
  const char* op = tgmm_name(persistent);
  return with_c10_errors(op, [&] {
    const c10::Device device = op_device(lhs, op);
    const c10::cuda::CUDAGuard guard(device);
    // [G, K, N]; a wrong rank gives an empty dimension so the core's rank message is the one raised.
    const std::int64_t g = group_sizes.dim() == 1 ? group_sizes.size(0) : 0;
    const std::int64_t k = lhs.dim() == 2 ? lhs.size(0) : 0;
    const std::int64_t n = rhs.dim() == 2 ? rhs.size(1) : 0;
    at::Tensor out = at::empty({g, k, n}, lhs.options().dtype(output_type(lhs, out_dtype, op)));
    run_tgmm(lhs, rhs, group_sizes, out, std::nullopt, false, persistent, device);
    return out;
  });
}

void TgmmOut::cuda(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes, const at::Tensor& out,
                   const std::optional<at::Tensor>& bias_grad, bool accumulate, bool persistent) {
  const char* op = tgmm_name(persistent);
  with_c10_errors(op, [&] {
    const c10::Device device = op_device(lhs, op);
    const c10::cuda::CUDAGuard guard(device);
    run_tgmm(lhs, rhs, group_sizes, out, bias_grad, accumulate, persistent, device);
  });
}

at::Tensor GroupedGemm::cuda(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& expert_ids,
                             const std::optional<at::Tensor>& topk_weights, bool transpose_weights,
                             std::optional<at::ScalarType> out_dtype) {
  constexpr std::string_view kOp = "grouped_gemm";
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(x, kOp);
    const c10::cuda::CUDAGuard guard(device);
    // [T, topk, N], or [T, N] with topk_weights; wrong ranks give empty dimensions (see Tgmm).
    const std::int64_t t = expert_ids.dim() == 2 ? expert_ids.size(0) : 0;
    const std::int64_t topk = expert_ids.dim() == 2 ? expert_ids.size(1) : 0;
    const std::int64_t n = weights.dim() == 3 ? weights.size(transpose_weights ? 1 : 2) : 0;
    const auto options = x.options().dtype(output_type(x, out_dtype, kOp));
    at::Tensor out = has_tensor(topk_weights) ? at::empty({t, n}, options) : at::empty({t, topk, n}, options);
    const TensorView xv = to_view(x, device, kOp, "x");
    const TensorView wv = to_view(weights, device, kOp, "weights");
    const TensorView iv = to_view(expert_ids, device, kOp, "expert_ids");
    const TensorView ov = to_view(out, device, kOp, "out");
    const std::optional<TensorView> tv = optional_view(topk_weights, device, kOp, "topk_weights");
    grouped_gemm(xv, wv, iv, ov, transpose_weights, ptr(tv), at::cuda::getCurrentCUDAStream(device.index()).stream());
    return out;
  });
}

void MGroupedGemmMasked::cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                              const at::Tensor& masked_m, std::int64_t expected_m) {
  constexpr std::string_view kOp = "m_grouped_gemm_masked";
  with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(x, kOp);
    const c10::cuda::CUDAGuard guard(device);
    m_grouped_gemm_masked(to_view(x, device, kOp, "x"), to_view(w, device, kOp, "w"), to_view(out, device, kOp, "out"),
                          to_view(masked_m, device, kOp, "masked_m"), expected_m,
                          at::cuda::getCurrentCUDAStream(device.index()).stream());
  });
}

std::tuple<at::Tensor, at::Tensor> TopkSoftmax::cuda(const at::Tensor& gating, std::int64_t k, bool renormalize) {
  constexpr std::string_view kOp = "topk_softmax";
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(gating, kOp);
    const c10::cuda::CUDAGuard guard(device);
    auto [weights, ids] = routing_outputs(gating, k, kOp);
    topk_softmax(to_view(gating, device, kOp, "gating"), to_view(weights, device, kOp, "topk_weights"),
                 to_view(ids, device, kOp, "topk_ids"), renormalize,
                 at::cuda::getCurrentCUDAStream(device.index()).stream());
    return std::make_tuple(weights, ids);
  });
}

std::tuple<at::Tensor, at::Tensor> GroupedTopk::cuda(const at::Tensor& gating,
                                                     const std::optional<at::Tensor>& correction_bias,
                                                     std::int64_t n_group, std::int64_t topk_group, std::int64_t k,
                                                     std::string_view scoring, bool renormalize,
                                                     double routed_scaling) {
  constexpr std::string_view kOp = "grouped_topk";
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(gating, kOp);
    const c10::cuda::CUDAGuard guard(device);
    const MoeScoring rule = to_scoring(scoring);
    auto [weights, ids] = routing_outputs(gating, k, kOp);
    const std::optional<TensorView> bv = optional_view(correction_bias, device, kOp, "correction_bias");
    grouped_topk(to_view(gating, device, kOp, "gating"), ptr(bv), n_group, topk_group, rule, renormalize,
                 routed_scaling, to_view(weights, device, kOp, "topk_weights"), to_view(ids, device, kOp, "topk_ids"),
                 at::cuda::getCurrentCUDAStream(device.index()).stream());
    return std::make_tuple(weights, ids);
  });
}

at::Tensor FusedMoe::cuda(const at::Tensor& hidden, const at::Tensor& w1, const at::Tensor& w2,
                          const at::Tensor& topk_weights, const at::Tensor& topk_ids, std::string_view activation,
                          const std::optional<at::Tensor>& expert_map, std::optional<at::ScalarType> out_dtype) {
  constexpr std::string_view kOp = "fused_moe";
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(hidden, kOp);
    const c10::cuda::CUDAGuard guard(device);
    const MoeActivation act = to_activation(activation);
    // [T, H]; a wrong rank gives empty dimensions (see Tgmm).
    const std::int64_t t = hidden.dim() == 2 ? hidden.size(0) : 0;
    const std::int64_t h = hidden.dim() == 2 ? hidden.size(1) : 0;
    at::Tensor out = at::empty({t, h}, hidden.options().dtype(output_type(hidden, out_dtype, kOp)));
    const std::optional<TensorView> mv = optional_view(expert_map, device, kOp, "expert_map");
    fused_moe(to_view(hidden, device, kOp, "hidden"), to_view(w1, device, kOp, "w1"), to_view(w2, device, kOp, "w2"),
              to_view(topk_weights, device, kOp, "topk_weights"), to_view(topk_ids, device, kOp, "topk_ids"),
              to_view(out, device, kOp, "out"), act, ptr(mv), at::cuda::getCurrentCUDAStream(device.index()).stream());
    return out;
  });
}

DispatchInfo describe_fused_moe_call(const at::Tensor& hidden, const at::Tensor& w1, const at::Tensor& w2,
                                     const at::Tensor& topk_weights, const at::Tensor& topk_ids,
                                     std::string_view activation, const std::optional<at::Tensor>& expert_map,
                                     std::optional<at::ScalarType> out_dtype) {
  constexpr std::string_view kOp = "describe_fused_moe";
  return with_c10_errors(kOp, [&] {
    const c10::Device device = op_device(hidden, kOp);
    const c10::cuda::CUDAGuard guard(device);
    const MoeActivation act = to_activation(activation);
    const std::int64_t t = hidden.dim() == 2 ? hidden.size(0) : 0;
    const std::int64_t h = hidden.dim() == 2 ? hidden.size(1) : 0;
    const at::Tensor out = at::empty({t, h}, hidden.options().dtype(output_type(hidden, out_dtype, kOp)));
    const std::optional<TensorView> mv = optional_view(expert_map, device, kOp, "expert_map");
    return describe_fused_moe(to_view(hidden, device, kOp, "hidden"), to_view(w1, device, kOp, "w1"),
                              to_view(w2, device, kOp, "w2"), to_view(topk_weights, device, kOp, "topk_weights"),
                              to_view(topk_ids, device, kOp, "topk_ids"), to_view(out, device, kOp, "out"), act,
                              ptr(mv));
  });
}

at::Tensor Tgmm::autograd(c10::DispatchKeySet keys, const at::Tensor& lhs, const at::Tensor& rhs,
                          const at::Tensor& group_sizes, bool persistent, std::optional<at::ScalarType> out_dtype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    refuse_tracked(tgmm_name(persistent), {&lhs, &rhs});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<Tgmm>().redispatch(keys & c10::after_autograd_keyset, lhs, rhs, group_sizes, persistent,
                                        out_dtype);
  });
}

void TgmmOut::autograd(c10::DispatchKeySet keys, const at::Tensor& lhs, const at::Tensor& rhs,
                       const at::Tensor& group_sizes, const at::Tensor& out, const std::optional<at::Tensor>& bias_grad,
                       bool accumulate, bool persistent) {
  with_c10_tgemm_errors([&] {
    refuse_tracked(tgmm_name(persistent), {&lhs, &rhs, &out, has_tensor(bias_grad) ? &*bias_grad : nullptr});
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      op_handle<TgmmOut>().redispatch(keys & c10::after_autograd_keyset, lhs, rhs, group_sizes, out, bias_grad,
                                      accumulate, persistent);
    }
    torch::autograd::impl::bump_version(out);
    if (has_tensor(bias_grad)) torch::autograd::impl::bump_version(*bias_grad);
  });
}

at::Tensor GroupedGemm::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& weights,
                                 const at::Tensor& expert_ids, const std::optional<at::Tensor>& topk_weights,
                                 bool transpose_weights, std::optional<at::ScalarType> out_dtype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    refuse_tracked("grouped_gemm", {&x, &weights, has_tensor(topk_weights) ? &*topk_weights : nullptr});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<GroupedGemm>().redispatch(keys & c10::after_autograd_keyset, x, weights, expert_ids, topk_weights,
                                               transpose_weights, out_dtype);
  });
}

void MGroupedGemmMasked::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& w,
                                  const at::Tensor& out, const at::Tensor& masked_m, std::int64_t expected_m) {
  with_c10_tgemm_errors([&] {
    refuse_tracked("m_grouped_gemm_masked", {&x, &w, &out});
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      op_handle<MGroupedGemmMasked>().redispatch(keys & c10::after_autograd_keyset, x, w, out, masked_m, expected_m);
    }
    torch::autograd::impl::bump_version(out);
  });
}

std::tuple<at::Tensor, at::Tensor> TopkSoftmax::autograd(c10::DispatchKeySet keys, const at::Tensor& gating,
                                                         std::int64_t k, bool renormalize) {
  return with_c10_tgemm_errors([&] {
    refuse_tracked("topk_softmax", {&gating});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<TopkSoftmax>().redispatch(keys & c10::after_autograd_keyset, gating, k, renormalize);
  });
}

std::tuple<at::Tensor, at::Tensor> GroupedTopk::autograd(c10::DispatchKeySet keys, const at::Tensor& gating,
                                                         const std::optional<at::Tensor>& correction_bias,
                                                         std::int64_t n_group, std::int64_t topk_group, std::int64_t k,
                                                         std::string_view scoring, bool renormalize,
                                                         double routed_scaling) {
  return with_c10_tgemm_errors([&] {
    refuse_tracked("grouped_topk", {&gating, has_tensor(correction_bias) ? &*correction_bias : nullptr});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<GroupedTopk>().redispatch(keys & c10::after_autograd_keyset, gating, correction_bias, n_group,
                                               topk_group, k, scoring, renormalize, routed_scaling);
  });
}

at::Tensor FusedMoe::autograd(c10::DispatchKeySet keys, const at::Tensor& hidden, const at::Tensor& w1,
                              const at::Tensor& w2, const at::Tensor& topk_weights, const at::Tensor& topk_ids,
                              std::string_view activation, const std::optional<at::Tensor>& expert_map,
                              std::optional<at::ScalarType> out_dtype) {
  return with_c10_tgemm_errors([&]() -> at::Tensor {
    refuse_tracked("fused_moe", {&hidden, &w1, &w2, &topk_weights});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return op_handle<FusedMoe>().redispatch(keys & c10::after_autograd_keyset, hidden, w1, w2, topk_weights, topk_ids,
                                            activation, expert_map, out_dtype);
  });
}

// CPU kernels: only to say which argument is not on the GPU.
at::Tensor Tgmm::cpu(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes, bool persistent,
                     std::optional<at::ScalarType>) {
  return with_c10_errors(tgmm_name(persistent), [&]() -> at::Tensor {
    throw_not_cuda(tgmm_name(persistent), {{"lhs", &lhs}, {"rhs", &rhs}, {"group_sizes", &group_sizes}});
  });
}

void TgmmOut::cpu(const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes, const at::Tensor& out,
                  const std::optional<at::Tensor>& bias_grad, bool, bool persistent) {
  with_c10_errors(tgmm_name(persistent), [&] {
    throw_not_cuda(tgmm_name(persistent), {{"lhs", &lhs},
                                           {"rhs", &rhs},
                                           {"group_sizes", &group_sizes},
                                           {"out", &out},
                                           {"bias_grad", has_tensor(bias_grad) ? &*bias_grad : nullptr}});
  });
}

at::Tensor GroupedGemm::cpu(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& expert_ids,
                            const std::optional<at::Tensor>& topk_weights, bool, std::optional<at::ScalarType>) {
  return with_c10_errors("grouped_gemm", [&]() -> at::Tensor {
    throw_not_cuda("grouped_gemm", {{"x", &x},
                                    {"weights", &weights},
                                    {"expert_ids", &expert_ids},
                                    {"topk_weights", has_tensor(topk_weights) ? &*topk_weights : nullptr}});
  });
}

void MGroupedGemmMasked::cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& out,
                             const at::Tensor& masked_m, std::int64_t) {
  with_c10_errors("m_grouped_gemm_masked", [&] {
    throw_not_cuda("m_grouped_gemm_masked", {{"x", &x}, {"w", &w}, {"out", &out}, {"masked_m", &masked_m}});
  });
}

std::tuple<at::Tensor, at::Tensor> TopkSoftmax::cpu(const at::Tensor& gating, std::int64_t, bool) {
  return with_c10_errors("topk_softmax", [&]() -> std::tuple<at::Tensor, at::Tensor> {
    throw_not_cuda("topk_softmax", {{"gating", &gating}});
  });
}

std::tuple<at::Tensor, at::Tensor> GroupedTopk::cpu(const at::Tensor& gating,
                                                    const std::optional<at::Tensor>& correction_bias, std::int64_t,
                                                    std::int64_t, std::int64_t, std::string_view, bool, double) {
  return with_c10_errors("grouped_topk", [&]() -> std::tuple<at::Tensor, at::Tensor> {
    throw_not_cuda("grouped_topk", {{"gating", &gating},
                                    {"correction_bias", has_tensor(correction_bias) ? &*correction_bias : nullptr}});
  });
}

at::Tensor FusedMoe::cpu(const at::Tensor& hidden, const at::Tensor& w1, const at::Tensor& w2,
                         const at::Tensor& topk_weights, const at::Tensor& topk_ids, std::string_view,
                         const std::optional<at::Tensor>& expert_map, std::optional<at::ScalarType>) {
  return with_c10_errors("fused_moe", [&]() -> at::Tensor {
    throw_not_cuda("fused_moe", {{"hidden", &hidden},
                                 {"w1", &w1},
                                 {"w2", &w2},
                                 {"topk_weights", &topk_weights},
                                 {"topk_ids", &topk_ids},
                                 {"expert_map", has_tensor(expert_map) ? &*expert_map : nullptr}});
  });
}

}  // namespace tgemm::torch_binding
