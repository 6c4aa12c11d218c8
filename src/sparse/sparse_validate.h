// Host-only checks of sparse weights and sparse_gemm arguments (include/tgemm/sparse.h). The
// structure checks read host copies of the weight's arrays: the weight object runs them once,
// when it is built, so no call of sparse_gemm pays for them.
#pragma once

#include <cstdint>
#include <string_view>

#include "tgemm/sparse.h"

namespace tgemm {

// cuSPARSELt's structured-matrix rule: rows, columns and leading dimension multiples of 16
// elements for 16-bit types, of 32 for 8-bit ones (32 bytes either way: its sparse MMA tiles
// move rows in 32-byte units).
inline constexpr std::int64_t kSparse24Multiple = 16;
inline constexpr std::int64_t kSparse24Multiple8Bit = 32;
// K of an FP8 2:4 product on cuSPARSELt: its e4m3 kernels read whole 256-deep K tiles.
inline constexpr std::int64_t kSparse24Fp8KMultiple = 256;
std::int64_t sparse_2_4_multiple(DType dtype);

// tgemm::Error naming op unless dtype is bf16, fp16 or float8_e4m3fn and n, k are positive
// multiples of sparse_2_4_multiple(dtype).
void check_2_4_shape(std::int64_t n, std::int64_t k, DType dtype, std::string_view op);

// w: the [n, k] weight (row stride ld elements) on the host, bf16 or fp16 bits (16-bit) or
// float8_e4m3fn bits (8-bit). tgemm::Error naming op, the row and the group, unless every group of
// 4 consecutive elements of a row holds at most 2 nonzeros (+0 and -0 are zeros).
void check_2_4_host(const std::uint16_t* w, std::int64_t n, std::int64_t k, std::int64_t ld, std::string_view op);
void check_2_4_host(const std::uint8_t* w, std::int64_t n, std::int64_t k, std::int64_t ld, std::string_view op);

// The CSR arrays of an [n, k] matrix on the host: offsets [n + 1], cols [nnz]. tgemm::Error
// naming op, the row and the values, unless offsets[0] == 0, offsets never decrease,
// offsets[n] == nnz, and each row's column indices lie in [0, k) and strictly increase.
void check_csr_host(const std::int32_t* offsets, std::int64_t n, const std::int32_t* cols, std::int64_t nnz,
                    std::int64_t k, std::string_view op);

// The device views a CSR weight is built from: offsets [n + 1] int32, cols [nnz] int32, values
// [nnz] bf16 or fp16 (nnz = cols.size(0)), each rank 1 and contiguous, non-null where not empty.
// Returns nnz.
std::int64_t check_csr_views(const TensorView& row_offsets, const TensorView& col_indices, const TensorView& values,
                             std::int64_t n, std::int64_t k, std::string_view op);

// The device views a BSR weight is built from: block_size > 0 dividing n and k; offsets
// [n / block_size + 1] int32, cols [nnzb] int32, values [nnzb, block_size, block_size] bf16 or
// fp16, contiguous, non-null where not empty. Returns nnzb. The block structure itself is
// check_csr_host's over block rows and block columns.
std::int64_t check_bsr_views(const TensorView& row_offsets, const TensorView& col_indices, const TensorView& values,
                             std::int64_t n, std::int64_t k, std::int64_t block_size, std::string_view op);

// A dense [n, k] weight of `dtype` with contiguous rows, as compress_2_4, prune_2_4 and with_dense
// take it; returns its row stride.
std::int64_t check_dense_weight(const TensorView& w, const char* name, std::int64_t n, std::int64_t k, DType dtype,
                                std::string_view op);

// sparse_gemm's problem after its checks.
struct SparseGemmCall {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t ldx = 0, ldo = 0;
  SparseBackend backend = SparseBackend::kDefault;  // resolved: never kDefault
};

// Checks of sparse_gemm: a 16-bit weight; x [..., K] of the weight's dtype with contiguous rows,
// out [..., N] of the same dtype and leading shape, rows contiguous; bias [N] of x's dtype; the
// chosen backend able to run the weight (kDense needs with_dense; cuSPARSELt a 2:4 weight in a
// build that has it; cuSPARSE a CSR or block weight); out overlapping no input.
SparseGemmCall validate_sparse_gemm(const TensorView& x, const SparseWeight& w, const TensorView& out,
                                    const SparseGemmOptions& options, bool cusparselt_built);

// The backend a call runs on, asked for `asked` (kDefault: cuSPARSELt for 2:4, cuSPARSE
// otherwise): tgemm::Error naming op where the weight cannot run on it.
SparseBackend resolve_sparse_backend(const SparseWeight& w, SparseBackend asked, bool cusparselt_built,
                                     std::string_view op);

}  // namespace tgemm
