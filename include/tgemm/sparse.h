// Sparse-weight GEMM: out[M,N] = x[M,K] @ W[N,K]^T (+ bias[N]), W sparse, as F.linear computes
// with the dense W. The weight is a SparseWeight, built and validated once (construction reads
// the weight's structure back to the host and checks it; sparse_gemm only checks shapes).
//
// Patterns:
//   2:4  every group of 4 consecutive elements along K holds at most 2 nonzeros (Hopper's sparse
//        tensor cores, half the MMA work). Stored compressed by cuSPARSELt, in a buffer the caller
//        owns (sparse_compressed_bytes_2_4 gives its size). bf16, fp16 or float8_e4m3fn (the
//        FP8 weight runs through sparse_gemm_a8w8, with the A8W8 scales).
//   CSR  row offsets [N+1], column indices [nnz] (int32, sorted and distinct within a row, in
//        [0, K)), values [nnz] (bf16 or fp16); every array in caller-owned device memory.
//   block  dense bs x bs blocks in BSR form (torch's to_sparse_bsr layout): block-row offsets
//        [N/bs + 1], block-column indices [nnzb] (int32, sorted and distinct within a block row,
//        in [0, K/bs)), values [nnzb, bs, bs] (bf16 or fp16, each block row-major); bs divides N
//        and K.
// Every pattern may also carry the dense [N, K] weight (with_dense): the dense path, tgemm's own
// a16w16 GEMM, is then a candidate too, at the memory of a dense copy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tgemm/tensor.h"

namespace tgemm {

enum class SparsePattern : std::uint8_t { k2of4, kCsr, kBlock };

// Which implementation a sparse_gemm runs. kDefault: the tuned table's row for the problem where it
// has one the weight can take, else cuSPARSELt for 2:4, cuSPARSE for CSR and block.
enum class SparseBackend : std::uint8_t { kDefault, kCusparselt, kCusparse, kDense };

// Name for messages and tables ("2:4", "csr", "block"; "default", "cusparselt", "cusparse",
// "dense").
const char* sparse_pattern_name(SparsePattern p);
const char* sparse_backend_name(SparseBackend b);

// Whether this build has the cuSPARSELt backend (2:4). Without it, building a 2:4 weight and
// pruning throw tgemm::Error saying so.
bool has_cusparselt();

// Bytes of the cuSPARSELt compressed form of a 2:4 [n, k] weight of `dtype` (bf16, fp16 or
// float8_e4m3fn). Throws tgemm::Error for shapes cuSPARSELt does not take (n, k multiples of 16
// for 16-bit types, of 32 for FP8).
std::size_t sparse_compressed_bytes_2_4(std::int64_t n, std::int64_t k, DType dtype);

// out = w with, in every group of 4 consecutive elements of a row, the 2 of largest magnitude kept
// and the other 2 set to zero (ties: the lower index is kept). w: [N, K] bf16 or fp16, rows
// contiguous, K a multiple of 4; out: w's shape and dtype, rows contiguous, may be w itself.
void prune_2_4(const TensorView& w, const TensorView& out, Stream stream = nullptr);

class SparseWeight {
 public:
  // Compresses the 2:4 weight w [N, K] (bf16, fp16 or float8_e4m3fn, rows contiguous) into
  // `compressed`, a device buffer of at least sparse_compressed_bytes_2_4(N, K, dtype) bytes (dtype
  // int8, rank 1), after checking on the host that every group of 4 along K has at most 2 nonzeros.
  // The weight views `compressed`, which must outlive it. Synchronizes `stream`.
  static SparseWeight compress_2_4(const TensorView& w, const TensorView& compressed, Stream stream = nullptr);
  // A weight compressed earlier by compress_2_4 (of an [n, k] weight of `dtype`): only the
  // buffer's size is checked, its content was validated when it was compressed.
  static SparseWeight from_compressed_2_4(const TensorView& compressed, std::int64_t n, std::int64_t k, DType dtype);
  // A CSR weight of shape [n, k]: row_offsets [n+1] int32, col_indices [nnz] int32, values [nnz]
  // bf16 or fp16, all on the device, contiguous. Validated on the host here (offsets start at 0,
  // never decrease, end at nnz; indices in [0, k), strictly increasing within a row). The weight
  // views the three arrays. Synchronizes `stream`.
  static SparseWeight csr(const TensorView& row_offsets, const TensorView& col_indices, const TensorView& values,
                          std::int64_t n, std::int64_t k, Stream stream = nullptr);
  // A CSR weight over arrays SparseWeight::csr has checked before and that have not changed
  // since (a binding that keeps the arrays rather than the object): only their dtypes and sizes
  // are checked here, nothing is read from the device.
  static SparseWeight csr_prechecked(const TensorView& row_offsets, const TensorView& col_indices,
                                     const TensorView& values, std::int64_t n, std::int64_t k);

  // A block-sparse weight of shape [n, k] in BSR form: row_offsets [n / block_size + 1] int32,
  // col_indices [nnzb] int32 (block columns), values [nnzb, block_size, block_size] bf16 or fp16
  // (rank 3, contiguous), all on the device. Validated on the host here: block_size > 0 divides n
  // and k; offsets start at 0, never decrease, end at nnzb; block columns in [0, k / block_size),
  // strictly increasing within a block row. The weight views the three arrays. Synchronizes
  // `stream`.
  static SparseWeight bsr(const TensorView& row_offsets, const TensorView& col_indices, const TensorView& values,
                          std::int64_t n, std::int64_t k, std::int64_t block_size, Stream stream = nullptr);
  // A BSR weight over arrays SparseWeight::bsr has checked before and that have not changed since:
  // only dtypes, sizes and the block size are checked, nothing is read from the device.
  static SparseWeight bsr_prechecked(const TensorView& row_offsets, const TensorView& col_indices,
                                     const TensorView& values, std::int64_t n, std::int64_t k, std::int64_t block_size);

  // Adds the dense [N, K] weight (the weight's dtype, rows contiguous) as the dense path's
  // operand. Not checked against the sparse form: the caller passes the same matrix.
  SparseWeight& with_dense(const TensorView& dense);

  SparsePattern pattern() const { return pattern_; }
  DType dtype() const { return dtype_; }
  std::int64_t n() const { return n_; }
  std::int64_t k() const { return k_; }
  // Stored nonzeros: kept values (2:4), entries (CSR), block entries nnzb * bs * bs (block).
  std::int64_t nnz() const { return nnz_; }
  std::int64_t block_size() const { return block_size_; }  // 0 unless block
  // nnz / (N * K): 0.5 for 2:4.
  double density() const;
  bool has_dense() const { return dense_.data != nullptr; }
  const TensorView& compressed() const { return compressed_; }
  const TensorView& row_offsets() const { return row_offsets_; }
  const TensorView& col_indices() const { return col_indices_; }
  const TensorView& values() const { return values_; }
  const TensorView& dense() const { return dense_; }

 private:
  SparseWeight() = default;
  SparsePattern pattern_ = SparsePattern::k2of4;
  DType dtype_ = DType::kBFloat16;
  std::int64_t n_ = 0, k_ = 0, nnz_ = 0, block_size_ = 0;
  TensorView compressed_, row_offsets_, col_indices_, values_, dense_;
};

struct SparseGemmOptions {
  // Optional bias [N]: x's dtype (sparse_gemm); out's dtype or fp32 (sparse_gemm_a8w8).
  const TensorView* bias = nullptr;
  SparseBackend backend = SparseBackend::kDefault;
  // The space `tgemm tune-sparse` races. algorithm: cuSPARSELt's configuration id (2:4), or the
  // cusparseSpMMAlg_t value of cuSPARSE (CSR: 0 its default, 4, 6, 12 CSR_ALG1..3; block: 14
  // BSR_ALG1), -1 for the default. split_k: cuSPARSELt's split-K factor, 0 for its default. A
  // call that leaves backend, algorithm and split_k at their defaults takes the sparse table's row.
  int algorithm = -1;
  int split_k = 0;
};

// out[M,N] = x[M,K] @ W^T (+ bias). x: [M, K] (rank >= 2, flattened as F.linear does), the
// weight's dtype (bf16 or fp16), rows contiguous; out: [..., N] of x's dtype, rows contiguous, not
// overlapping the inputs. M = 0 launches nothing. Throws tgemm::Error for bad input before any
// launch.
void sparse_gemm(const TensorView& x, const SparseWeight& w, const TensorView& out,
                 const SparseGemmOptions& options = {}, Stream stream = nullptr);

// FP8 2:4: out[M,N] = (x[M,K] @ W^T) * x_scale * w_scale (+ bias), gemm_a8w8's contract
// (include/tgemm/a8w8.h) with W a float8_e4m3fn 2:4 weight: x float8_e4m3fn [..., K]; x_scale fp32,
// 1 element or M (per-token); w_scale fp32, 1 element or N (per-channel); out bf16, fp16 or fp32;
// options.bias [N] of out's dtype or fp32. cuSPARSELt accumulates the product in fp32 and writes
// it, unscaled, to an fp32 [M, N] buffer in the workspace; one pass then applies both scales and
// the bias in fp32 with one rounding to out's dtype (cuSPARSELt's alpha is a host scalar or a
// per-row vector of its D = out^T, so it cannot take a per-token scale, and scales read on the host
// would break graph capture). backend kDense runs gemm_a8w8 on the weight's dense copy.
void sparse_gemm_a8w8(const TensorView& x, const SparseWeight& w, const TensorView& x_scale, const TensorView& w_scale,
                      const TensorView& out, const SparseGemmOptions& options = {}, Stream stream = nullptr);

}  // namespace tgemm
