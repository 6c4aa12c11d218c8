// The sparse_gemm backends (cuSPARSELt for 2:4, cuSPARSE for CSR) behind include/tgemm/sparse.h.
// Each takes a validated call; each runs on the calling thread's current device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sparse/sparse_validate.h"
#include "tgemm/sparse.h"

namespace tgemm::sparse {

// cuSPARSELt (sparse_cusparselt.cpp). The build compiles against its header alone and loads
// libcusparseLt.so.0 on first use (dlopen), so a program that never runs a 2:4 GEMM needs no
// cuSPARSELt at run time and libtgemm.so carries no dependency on it.
// Empty when cuSPARSELt can be used here, else why not (not built, library not found).
std::string cusparselt_unavailable_reason();
std::size_t cusparselt_compressed_bytes(std::int64_t n, std::int64_t k, DType dtype);
// Compresses the 2:4 weight w (device, [n, k], row-major, contiguous) into `compressed`.
void cusparselt_compress(const void* w, std::int64_t n, std::int64_t k, DType dtype, void* compressed, Stream stream);
// out = x @ W^T for the 2:4 weight w (bias not applied: the caller's epilogue adds it).
void cusparselt_matmul(const SparseGemmCall& call, const SparseWeight& w, const void* x, void* out, int algorithm,
                       int split_k, Stream stream);

// cuSPARSE SpMM (sparse_cusparse.cpp): out = x @ W^T for the CSR weight w (bias not applied).
void cusparse_csr_matmul(const SparseGemmCall& call, const SparseWeight& w, const void* x, void* out, Stream stream);

// The prune_2_4 kernel (sparse_prune.cu): w and out [n, k], row strides ldw and ldo, 16-bit.
void launch_prune_2_4(const void* w, std::int64_t ldw, void* out, std::int64_t ldo, std::int64_t n, std::int64_t k,
                      DType dtype, Stream stream);

}  // namespace tgemm::sparse
