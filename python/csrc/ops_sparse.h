// The sparse-weight GEMM ops (rows of python/csrc/op_table.h), each allocating its output and
// calling include/tgemm/sparse.h on the current CUDA stream:
//   tgemm::prune_2_4(w) -> w with the 2 smallest |w| of every 4 along K zeroed
//   tgemm::sparse_gemm_2_4(x, compressed, n, bias=None, algorithm=-1, split_k=0) -> [..., n]
//       compressed: the int8 bytes tgemm._C.compress_2_4 made from a 2:4 [n, K] weight
//   tgemm::sparse_gemm_csr(x, crow_indices, col_indices, values, n, bias=None) -> [..., n]
//       CSR arrays (int32 indices) that tgemm._C.check_sparse_csr has checked
//   tgemm::sparse_gemm_bsr(x, crow_indices, col_indices, values, n, bias=None) -> [..., n]
//       BSR arrays (int32 block indices, values [nnzb, bs, bs]) that tgemm._C.check_sparse_bsr
//       has checked
//   tgemm::sparse_gemm_2_4_fp8(x, compressed, n, x_scale, w_scale, bias=None, out_dtype=None,
//       algorithm=-1, split_k=0) -> [..., n]: y = (x @ W^T) * x_scale * w_scale (+ bias), x and W
//       float8_e4m3fn (compressed from an e4m3 2:4 weight), out_dtype None is bf16
// y = x @ W^T (+ bias) as F.linear. `dense`, optional on each GEMM op, is the weight's dense [n, K]
// copy (SparseWeight::with_dense): with it, a table row naming the dense path can run. Not
// differentiable (the autograd kernels only redispatch).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>

#include "python/csrc/torch_view.h"

namespace tgemm::torch_binding {

struct Prune24 {
  using Sig = at::Tensor(const at::Tensor& w);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct SparseGemm24 {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& compressed, std::int64_t n,
                         const std::optional<at::Tensor>& bias, std::int64_t algorithm, std::int64_t split_k,
                         const std::optional<at::Tensor>& dense);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct SparseGemmCsr {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& crow_indices, const at::Tensor& col_indices,
                         const at::Tensor& values, std::int64_t n, const std::optional<at::Tensor>& bias,
                         const std::optional<at::Tensor>& dense);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct SparseGemmBsr {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& crow_indices, const at::Tensor& col_indices,
                         const at::Tensor& values, std::int64_t n, const std::optional<at::Tensor>& bias,
                         const std::optional<at::Tensor>& dense);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct SparseGemm24Fp8 {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& compressed, std::int64_t n, const at::Tensor& x_scale,
                         const at::Tensor& w_scale, const std::optional<at::Tensor>& bias,
                         std::optional<at::ScalarType> out_dtype, std::int64_t algorithm, std::int64_t split_k,
                         const std::optional<at::Tensor>& dense);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

// Weight preparation, eager only (module functions of tgemm._C, not ops: they read the weight
// back to the host once and synchronize).
// The int8 bytes of cuSPARSELt's compressed form of the 2:4 weight w [N, K]; tgemm::Error for a
// weight that is not 2:4.
at::Tensor compress_2_4(const at::Tensor& w);
// tgemm::Error unless the CSR arrays of an [n, k] weight are well formed (SparseWeight::csr).
void check_sparse_csr(const at::Tensor& crow_indices, const at::Tensor& col_indices, const at::Tensor& values,
                      std::int64_t n, std::int64_t k);
// tgemm::Error unless the BSR arrays of an [n, k] weight of block_size blocks are well formed
// (SparseWeight::bsr).
void check_sparse_bsr(const at::Tensor& crow_indices, const at::Tensor& col_indices, const at::Tensor& values,
                      std::int64_t n, std::int64_t k, std::int64_t block_size);

}  // namespace tgemm::torch_binding
