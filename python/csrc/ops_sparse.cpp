// CUDA, CPU and autograd kernels of the sparse ops (rows of python/csrc/op_table.h; what each
// computes: ops_sparse.h and include/tgemm/sparse.h). Errors as ops_quant.cpp: c10::Error only.
// Tests: tests/python/test_sparse_ops.py.
#include "python/csrc/ops_sparse.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <string_view>
#include <vector>

#include "python/csrc/op_table.h"
#include "python/csrc/torch_view.h"
#include "tgemm/sparse.h"

namespace tgemm::torch_binding {
namespace {

constexpr std::string_view kPrune = "prune_2_4";
constexpr std::string_view kGemm24 = "sparse_gemm_2_4";
constexpr std::string_view kGemmCsr = "sparse_gemm_csr";
constexpr std::string_view kCompress = "compress_2_4";
constexpr std::string_view kCheckCsr = "check_sparse_csr";
constexpr std::string_view kGemmBsr = "sparse_gemm_bsr";
constexpr std::string_view kGemm24Fp8 = "sparse_gemm_2_4_fp8";
constexpr std::string_view kCheckBsr = "check_sparse_bsr";

// A BSR values tensor's block size (values [nnzb, bs, bs]); 0 where it has no such shape, which
// the core's checks then name.
std::int64_t block_size_of(const at::Tensor& values) { return values.dim() == 3 ? values.size(1) : 0; }

Stream current_stream(c10::Device device) { return at::cuda::getCurrentCUDAStream(device.index()).stream(); }

template <typename Body>
decltype(auto) on_device(const at::Tensor& x, std::string_view op, Body&& body) {
  return with_c10_errors(op, [&]() -> decltype(auto) {
    const c10::Device device = op_device(x, op);
    const c10::cuda::CUDAGuard guard(device);
    return body(device);
  });
}

// y of x's sizes with the last replaced by n, of `options` (x's by default).
at::Tensor output_for(const at::Tensor& x, std::int64_t n, const at::TensorOptions& options) {
  std::vector<std::int64_t> sizes(x.sizes().begin(), x.sizes().end());
  if (!sizes.empty()) sizes.back() = n;
  return at::empty(sizes, options);
}
at::Tensor output_for(const at::Tensor& x, std::int64_t n) { return output_for(x, n, x.options()); }

// The weight's dense copy where the call passes one, so a table row naming the dense path can run.
void add_dense(SparseWeight& w, const std::optional<at::Tensor>& dense, c10::Device device, std::string_view op) {
  if (has_tensor(dense)) w.with_dense(to_view(*dense, device, op, "dense"));
}

// A 2:4 weight of cuSPARSELt's compressed bytes for x (K and dtype from x's view), its dense copy
// added where passed.
SparseWeight weight_2_4(const at::Tensor& x, const TensorView& xv, const at::Tensor& compressed, std::int64_t n,
                        const std::optional<at::Tensor>& dense, c10::Device device, std::string_view op) {
  SparseWeight w = SparseWeight::from_compressed_2_4(to_view(compressed, device, op, "compressed"), n,
                                                     x.dim() > 0 ? x.size(-1) : 0, xv.dtype);
  add_dense(w, dense, device, op);
  return w;
}

// The options of one sparse GEMM call; options.bias points at bias_view, so it stays in place.
struct CallOptions {
  CallOptions(const std::optional<at::Tensor>& bias, c10::Device device, std::string_view op) {
    if (has_tensor(bias)) {
      bias_view = to_view(*bias, device, op, "bias");
      options.bias = &bias_view;
    }
  }
  // cuSPARSELt's configuration and split-K, which only the 2:4 ops take.
  CallOptions(const std::optional<at::Tensor>& bias, std::int64_t algorithm, std::int64_t split_k, c10::Device device,
              std::string_view op)
      : CallOptions(bias, device, op) {
    options.algorithm = static_cast<int>(algorithm);
    options.split_k = static_cast<int>(split_k);
  }
  CallOptions(const CallOptions&) = delete;
  CallOptions& operator=(const CallOptions&) = delete;

  TensorView bias_view;
  SparseGemmOptions options;
};

// sparse_gemm of x with a CSR or BSR weight (make_weight(device) views its tensors), the dense copy
// added where passed.
template <typename MakeWeight>
at::Tensor compressed_rows_gemm(const at::Tensor& x, std::int64_t n, const std::optional<at::Tensor>& bias,
                                const std::optional<at::Tensor>& dense, std::string_view op, MakeWeight&& make_weight) {
  return on_device(x, op, [&](c10::Device device) {
    SparseWeight w = make_weight(device);
    add_dense(w, dense, device, op);
    at::Tensor y = output_for(x, n);
    const CallOptions call(bias, device, op);
    sparse_gemm(to_view(x, device, op, "x"), w, to_view(y, device, op, "out"), call.options, current_stream(device));
    return y;
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

at::Tensor Prune24::cuda(const at::Tensor& w) {
  return on_device(w, kPrune, [&](c10::Device device) {
    at::Tensor out = at::empty(w.sizes(), w.options());
    prune_2_4(to_view(w, device, kPrune, "w"), to_view(out, device, kPrune, "out"), current_stream(device));
    return out;
  });
}

at::Tensor SparseGemm24::cuda(const at::Tensor& x, const at::Tensor& compressed, std::int64_t n,
                              const std::optional<at::Tensor>& bias, std::int64_t algorithm, std::int64_t split_k,
                              const std::optional<at::Tensor>& dense) {
  return on_device(x, kGemm24, [&](c10::Device device) {
    const TensorView xv = to_view(x, device, kGemm24, "x");
    const SparseWeight w = weight_2_4(x, xv, compressed, n, dense, device, kGemm24);
    at::Tensor y = output_for(x, n);
    const CallOptions call(bias, algorithm, split_k, device, kGemm24);
    sparse_gemm(xv, w, to_view(y, device, kGemm24, "out"), call.options, current_stream(device));
    return y;
  });
}

at::Tensor SparseGemmCsr::cuda(const at::Tensor& x, const at::Tensor& crow_indices, const at::Tensor& col_indices,
                               const at::Tensor& values, std::int64_t n, const std::optional<at::Tensor>& bias,
                               const std::optional<at::Tensor>& dense) {
  return compressed_rows_gemm(x, n, bias, dense, kGemmCsr, [&](c10::Device device) {
    return SparseWeight::csr_prechecked(to_view(crow_indices, device, kGemmCsr, "crow_indices"),
                                        to_view(col_indices, device, kGemmCsr, "col_indices"),
                                        to_view(values, device, kGemmCsr, "values"), n, x.dim() > 0 ? x.size(-1) : 0);
  });
}

at::Tensor SparseGemmBsr::cuda(const at::Tensor& x, const at::Tensor& crow_indices, const at::Tensor& col_indices,
                               const at::Tensor& values, std::int64_t n, const std::optional<at::Tensor>& bias,
                               const std::optional<at::Tensor>& dense) {
  return compressed_rows_gemm(x, n, bias, dense, kGemmBsr, [&](c10::Device device) {
    return SparseWeight::bsr_prechecked(
        to_view(crow_indices, device, kGemmBsr, "crow_indices"), to_view(col_indices, device, kGemmBsr, "col_indices"),
        to_view(values, device, kGemmBsr, "values"), n, x.dim() > 0 ? x.size(-1) : 0, block_size_of(values));
  });
}

at::Tensor SparseGemm24Fp8::cuda(const at::Tensor& x, const at::Tensor& compressed, std::int64_t n,
                                 const at::Tensor& x_scale, const at::Tensor& w_scale,
                                 const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype,
                                 std::int64_t algorithm, std::int64_t split_k, const std::optional<at::Tensor>& dense) {
  return on_device(x, kGemm24Fp8, [&](c10::Device device) {
    const TensorView xv = to_view(x, device, kGemm24Fp8, "x");
    const SparseWeight w = weight_2_4(x, xv, compressed, n, dense, device, kGemm24Fp8);
    at::Tensor y = output_for(x, n, x.options().dtype(out_dtype.value_or(at::kBFloat16)));
    const CallOptions call(bias, algorithm, split_k, device, kGemm24Fp8);
    sparse_gemm_a8w8(xv, w, to_view(x_scale, device, kGemm24Fp8, "x_scale"),
                     to_view(w_scale, device, kGemm24Fp8, "w_scale"), to_view(y, device, kGemm24Fp8, "out"),
                     call.options, current_stream(device));
    return y;
  });
}

at::Tensor compress_2_4(const at::Tensor& w) {
  return on_device(w, kCompress, [&](c10::Device device) {
    const TensorView wv = to_view(w, device, kCompress, "w");
    const std::size_t bytes =
        sparse_compressed_bytes_2_4(wv.rank == 2 ? wv.sizes[0] : 0, wv.rank == 2 ? wv.sizes[1] : 0, wv.dtype);
    at::Tensor compressed = at::empty({static_cast<std::int64_t>(bytes)}, w.options().dtype(at::kChar));
    SparseWeight::compress_2_4(wv, to_view(compressed, device, kCompress, "compressed"), current_stream(device));
    return compressed;
  });
}

void check_sparse_csr(const at::Tensor& crow_indices, const at::Tensor& col_indices, const at::Tensor& values,
                      std::int64_t n, std::int64_t k) {
  on_device(values, kCheckCsr, [&](c10::Device device) {
    SparseWeight::csr(to_view(crow_indices, device, kCheckCsr, "crow_indices"),
                      to_view(col_indices, device, kCheckCsr, "col_indices"),
                      to_view(values, device, kCheckCsr, "values"), n, k, current_stream(device));
    return 0;
  });
}

void check_sparse_bsr(const at::Tensor& crow_indices, const at::Tensor& col_indices, const at::Tensor& values,
                      std::int64_t n, std::int64_t k, std::int64_t block_size) {
  on_device(values, kCheckBsr, [&](c10::Device device) {
    SparseWeight::bsr(to_view(crow_indices, device, kCheckBsr, "crow_indices"),
                      to_view(col_indices, device, kCheckBsr, "col_indices"),
                      to_view(values, device, kCheckBsr, "values"), n, k, block_size, current_stream(device));
    return 0;
  });
}

// ---- CPU kernels: only to say which argument is not on the GPU ----

at::Tensor Prune24::cpu(const at::Tensor& w) {
  return with_c10_errors(kPrune, [&]() -> at::Tensor { throw_not_cuda(kPrune, {{"w", &w}}); });
}

at::Tensor SparseGemm24::cpu(const at::Tensor& x, const at::Tensor& compressed, std::int64_t,
                             const std::optional<at::Tensor>&, std::int64_t, std::int64_t,
                             const std::optional<at::Tensor>&) {
  return with_c10_errors(kGemm24, [&]() -> at::Tensor {
    throw_not_cuda(kGemm24, {{"x", &x}, {"compressed", &compressed}});
  });
}

at::Tensor SparseGemmCsr::cpu(const at::Tensor& x, const at::Tensor& crow_indices, const at::Tensor& col_indices,
                              const at::Tensor& values, std::int64_t, const std::optional<at::Tensor>&,
                              const std::optional<at::Tensor>&) {
  return with_c10_errors(kGemmCsr, [&]() -> at::Tensor {
    throw_not_cuda(kGemmCsr,
                   {{"x", &x}, {"crow_indices", &crow_indices}, {"col_indices", &col_indices}, {"values", &values}});
  });
}

at::Tensor SparseGemmBsr::cpu(const at::Tensor& x, const at::Tensor& crow_indices, const at::Tensor& col_indices,
                              const at::Tensor& values, std::int64_t, const std::optional<at::Tensor>&,
                              const std::optional<at::Tensor>&) {
  return with_c10_errors(kGemmBsr, [&]() -> at::Tensor {
    throw_not_cuda(kGemmBsr,
                   {{"x", &x}, {"crow_indices", &crow_indices}, {"col_indices", &col_indices}, {"values", &values}});
  });
}

at::Tensor SparseGemm24Fp8::cpu(const at::Tensor& x, const at::Tensor& compressed, std::int64_t,
                                const at::Tensor& x_scale, const at::Tensor& w_scale, const std::optional<at::Tensor>&,
                                std::optional<at::ScalarType>, std::int64_t, std::int64_t,
                                const std::optional<at::Tensor>&) {
  return with_c10_errors(kGemm24Fp8, [&]() -> at::Tensor {
    throw_not_cuda(kGemm24Fp8, {{"x", &x}, {"compressed", &compressed}, {"x_scale", &x_scale}, {"w_scale", &w_scale}});
  });
}

// ---- Autograd kernels: not differentiable ----

at::Tensor Prune24::autograd(c10::DispatchKeySet keys, const at::Tensor& w) {
  return redispatch_below_autograd<Prune24>(keys, w);
}

at::Tensor SparseGemm24::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& compressed,
                                  std::int64_t n, const std::optional<at::Tensor>& bias, std::int64_t algorithm,
                                  std::int64_t split_k, const std::optional<at::Tensor>& dense) {
  return redispatch_below_autograd<SparseGemm24>(keys, x, compressed, n, bias, algorithm, split_k, dense);
}

at::Tensor SparseGemmCsr::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& crow_indices,
                                   const at::Tensor& col_indices, const at::Tensor& values, std::int64_t n,
                                   const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& dense) {
  return redispatch_below_autograd<SparseGemmCsr>(keys, x, crow_indices, col_indices, values, n, bias, dense);
}

at::Tensor SparseGemmBsr::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& crow_indices,
                                   const at::Tensor& col_indices, const at::Tensor& values, std::int64_t n,
                                   const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& dense) {
  return redispatch_below_autograd<SparseGemmBsr>(keys, x, crow_indices, col_indices, values, n, bias, dense);
}

at::Tensor SparseGemm24Fp8::autograd(c10::DispatchKeySet keys, const at::Tensor& x, const at::Tensor& compressed,
                                     std::int64_t n, const at::Tensor& x_scale, const at::Tensor& w_scale,
                                     const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype,
                                     std::int64_t algorithm, std::int64_t split_k,
                                     const std::optional<at::Tensor>& dense) {
  return redispatch_below_autograd<SparseGemm24Fp8>(keys, x, compressed, n, x_scale, w_scale, bias, out_dtype,
                                                    algorithm, split_k, dense);
}

}  // namespace tgemm::torch_binding
