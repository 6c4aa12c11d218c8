// cuSPARSE backend of sparse_gemm (CSR and block weights): out[M,N] = x[M,K] @ W[N,K]^T run as the
// SpMM C = A @ B with A = W (CSR, or BSR with row-major bs x bs blocks, N x K), B = x^T
// (column-major K x M, ld = x's row stride) and C = out^T (column-major N x M, ld = out's row
// stride), fp32 accumulation. CSR: cuSPARSE's default algorithm unless asked for CSR_ALG1..3 (the
// candidates a tuner races); BSR: BSR_ALG1, its only SpMM algorithm.
// C is fp32 in the workspace (row-major [M, N]) and one pass rounds it once into out: with a 16-bit
// C, cuSPARSE's SpMM rounded partial sums to bf16 (1-8 bf16 ulps off the fp32 reference on an H200,
// relative error up to 1.9 on outputs near zero). A format whose SpMM takes no fp32 C for 16-bit
// inputs writes out directly.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "runtime/runtime.h"
#include "sparse/sparse_backends.h"

namespace tgemm::sparse {
namespace {

#define TGEMM_CUSPARSE_CHECK(call, where)                                                                            \
  do {                                                                                                               \
    cusparseStatus_t tgemm_st_ = (call);                                                                             \
    TGEMM_CHECK(tgemm_st_ == CUSPARSE_STATUS_SUCCESS, (where), #call " failed: ", cusparseGetErrorString(tgemm_st_), \
                " (status ", static_cast<int>(tgemm_st_), ")");                                                      \
  } while (0)

// One handle per thread and device: cusparseSetStream changes the handle, so threads must not
// share one. Kept for the thread's life (a handle's creation allocates on the device).
cusparseHandle_t handle_for(int device, const char* op) {
  thread_local std::map<int, cusparseHandle_t> handles;
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cusparseHandle_t h = nullptr;
  TGEMM_CUSPARSE_CHECK(cusparseCreate(&h), op);
  handles.emplace(device, h);
  return h;
}

cudaDataType cuda_type(DType t) { return t == DType::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F; }

// Descriptors destroyed on every exit, errors included.
struct Descriptors {
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnMatDescr_t b = nullptr, c = nullptr;
  ~Descriptors() {
    if (a != nullptr) cusparseDestroySpMat(a);
    if (b != nullptr) cusparseDestroyDnMat(b);
    if (c != nullptr) cusparseDestroyDnMat(c);
  }
};

}  // namespace

std::vector<int> cusparse_algorithms(SparsePattern pattern) {
  if (pattern == SparsePattern::kBlock) return {CUSPARSE_SPMM_BSR_ALG1};
  return {CUSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_CSR_ALG1, CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_SPMM_CSR_ALG3};
}

void cusparse_matmul(const SparseGemmCall& call, const SparseWeight& w, const void* x, void* out, int algorithm,
                     Stream stream, const std::function<void(const float*)>& finish) {
  constexpr const char* op = "sparse_gemm (cuSPARSE)";
  const bool block = w.pattern() == SparsePattern::kBlock;
  const std::vector<int> algorithms = cusparse_algorithms(w.pattern());
  if (algorithm < 0) algorithm = algorithms.front();
  TGEMM_CHECK(std::find(algorithms.begin(), algorithms.end(), algorithm) != algorithms.end(), op, "options.algorithm ",
              algorithm, " is not a cuSPARSE SpMM algorithm for a ", sparse_pattern_name(w.pattern()), " weight (",
              block ? "14: BSR_ALG1" : "0, 4, 6, 12: CSR", ")");
  const auto alg = static_cast<cusparseSpMMAlg_t>(algorithm);
  const int device = cuda_current_device();
  cusparseHandle_t h = handle_for(device, op);
  TGEMM_CUSPARSE_CHECK(cusparseSetStream(h, stream), op);
  Descriptors desc;
  const cudaDataType t = cuda_type(w.dtype());
  if (block) {
    const std::int64_t bs = w.block_size();
    TGEMM_CUSPARSE_CHECK(
        cusparseCreateBsr(&desc.a, call.n / bs, call.k / bs, w.col_indices().sizes[0], bs, bs, w.row_offsets().data,
                          w.col_indices().data, w.values().data, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, t, CUSPARSE_ORDER_ROW),
        op);
  } else {
    TGEMM_CUSPARSE_CHECK(
        cusparseCreateCsr(&desc.a, call.n, call.k, w.nnz(), w.row_offsets().data, w.col_indices().data, w.values().data,
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, t),
        op);
  }
  TGEMM_CUSPARSE_CHECK(
      cusparseCreateDnMat(&desc.b, call.k, call.m, call.ldx, const_cast<void*>(x), t, CUSPARSE_ORDER_COL), op);
  const float alpha = 1.0f, beta = 0.0f;
  // The fp32 C first (its pointer is set once the workspace is held); cuSPARSE says at
  // bufferSize whether the format takes it.
  TGEMM_CUSPARSE_CHECK(cusparseCreateDnMat(&desc.c, call.n, call.m, call.n, nullptr, CUDA_R_32F, CUSPARSE_ORDER_COL),
                       op);
  std::size_t bytes = 0;
  cusparseStatus_t st = cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                &alpha, desc.a, desc.b, &beta, desc.c, CUDA_R_32F, alg, &bytes);
  const bool staged = st == CUSPARSE_STATUS_SUCCESS;
  if (!staged) {
    TGEMM_CHECK(st == CUSPARSE_STATUS_NOT_SUPPORTED, op, "cusparseSpMM_bufferSize failed: ", cusparseGetErrorString(st),
                " (status ", static_cast<int>(st), ")");
    cusparseDestroyDnMat(desc.c);
    desc.c = nullptr;
    TGEMM_CUSPARSE_CHECK(cusparseCreateDnMat(&desc.c, call.n, call.m, call.ldo, out, t, CUSPARSE_ORDER_COL), op);
    TGEMM_CUSPARSE_CHECK(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                 &alpha, desc.a, desc.b, &beta, desc.c, CUDA_R_32F, alg, &bytes),
                         op);
  }
  // Workspace: the fp32 product (staged), then cuSPARSE's buffer at a 256-byte aligned offset.
  const std::size_t product_bytes = staged ? (static_cast<std::size_t>(call.m * call.n) * 4 + 255) / 256 * 256 : 0;
  Workspace ws = Runtime::get().workspaces().get(device, stream, product_bytes + bytes);
  auto* product = static_cast<float*>(ws.data);
  if (staged) TGEMM_CUSPARSE_CHECK(cusparseDnMatSetValues(desc.c, product), op);
  void* buffer = bytes > 0 ? static_cast<char*>(ws.data) + product_bytes : nullptr;
  TGEMM_CUSPARSE_CHECK(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                    desc.a, desc.b, &beta, desc.c, CUDA_R_32F, alg, buffer),
                       op);
  finish(staged ? product : nullptr);
}

}  // namespace tgemm::sparse
