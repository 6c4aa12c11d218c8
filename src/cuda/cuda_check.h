// Wrappers that turn CUDA runtime / cuBLASLt failures into tgemm::Error naming the call.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "core/check.h"

namespace tgemm::detail {

[[noreturn]] void throw_cuda_error(const char* call, cudaError_t err, const char* where);
[[noreturn]] void throw_cublas_error(const char* call, cublasStatus_t status, const char* where);
const char* cublas_status_name(cublasStatus_t status);

}  // namespace tgemm::detail

// TGEMM_CUDA_CHECK(cudaMalloc(&p, n), "gemm_a16w16") -> "gemm_a16w16: cudaMalloc(&p, n) failed:
// out of memory (cudaErrorMemoryAllocation)". The error is also cleared, so it does not stick.
#define TGEMM_CUDA_CHECK(call, where)                                    \
  do {                                                                   \
    cudaError_t tgemm_err_ = (call);                                     \
    if (tgemm_err_ != cudaSuccess) {                                     \
      ::tgemm::detail::throw_cuda_error(#call, tgemm_err_, (where));     \
    }                                                                    \
  } while (0)

#define TGEMM_CUBLAS_CHECK(call, where)                                  \
  do {                                                                   \
    cublasStatus_t tgemm_st_ = (call);                                   \
    if (tgemm_st_ != CUBLAS_STATUS_SUCCESS) {                            \
      ::tgemm::detail::throw_cublas_error(#call, tgemm_st_, (where));    \
    }                                                                    \
  } while (0)

// After a kernel launch: launch-configuration errors are reported (and cleared) here.
#define TGEMM_CUDA_CHECK_LAUNCH(where) TGEMM_CUDA_CHECK(cudaGetLastError(), where)
