// The sparse_gemm backends (cuSPARSELt for 2:4, cuSPARSE for CSR and block) behind
// include/tgemm/sparse.h.
// Each takes a validated call; each runs on the calling thread's current device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sparse/sparse_table.h"
#include "sparse/sparse_validate.h"
#include "tgemm/sparse.h"

namespace tgemm::sparse {

// cuSPARSELt (sparse_cusparselt.cpp). The build compiles against its header alone and loads
// libcusparseLt.so.0 on first use (dlopen), so a program that never runs a 2:4 GEMM needs no
// cuSPARSELt at run time and libtgemm.so carries no dependency on it.
// Empty when cuSPARSELt can be used here, else why not (not built, library not found).
std::string cusparselt_unavailable_reason();
std::size_t cusparselt_compressed_bytes(std::int64_t n, std::int64_t k, DType dtype);
// Compresses the 2:4 weight w (device, [n, k], row-major, contiguous; bf16, fp16 or e4m3) into
// `compressed`.
void cusparselt_compress(const void* w, std::int64_t n, std::int64_t k, DType dtype, void* compressed, Stream stream);
// out = x @ W^T for the 16-bit 2:4 weight w (bias not applied: the caller's epilogue adds it).
void cusparselt_matmul(const SparseGemmCall& call, const SparseWeight& w, const void* x, void* out, int algorithm,
                       int split_k, Stream stream);
// The fp32 product x @ W^T [m, n] (row stride n) of the e4m3 2:4 weight w and e4m3 x, written to
// the workspace and handed to `finish` (which enqueues the pass that reads it on `stream`) while
// the workspace is held.
void cusparselt_matmul_fp8(const SparseGemmCall& call, const SparseWeight& w, const void* x, int algorithm, int split_k,
                           Stream stream, const std::function<void(const float*)>& finish);
// Configurations cuSPARSELt has for this problem (CUSPARSELT_MATMUL_ALG_CONFIG_MAX_ID): the
// algorithm ids a tuner races are [0, this).
int cusparselt_algorithm_count(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype);

// cuSPARSE SpMM (sparse_cusparse.cpp): x @ W^T for the CSR or block (BSR) weight w, bias not
// applied. algorithm: a cusparseSpMMAlg_t the weight's format takes (-1: CSR's default, BSR's
// only one); cusparse_algorithms lists them. The fp32 product [m, n] (row stride n) goes to the
// workspace and to `finish`, which enqueues the pass that rounds it into out while the workspace
// is held; where the format's SpMM takes no fp32 output, cuSPARSE writes out itself and `finish`
// gets nullptr.
void cusparse_matmul(const SparseGemmCall& call, const SparseWeight& w, const void* x, void* out, int algorithm,
                     Stream stream, const std::function<void(const float*)>& finish);
std::vector<int> cusparse_algorithms(SparsePattern pattern);

// What sparse_gemm (sparse_gemm_a8w8) runs for the weight w at M = m with default options: the
// table's row (its backend, algorithm, split-K and "file:line") where one applies, else the
// default rule (backend resolved, where "default").
SparseChoice describe_sparse_gemm(const SparseWeight& w, std::int64_t m);

// The prune_2_4 kernel (sparse_prune.cu): w and out [n, k], row strides ldw and ldo, 16-bit.
void launch_prune_2_4(const void* w, std::int64_t ldw, void* out, std::int64_t ldo, std::int64_t n, std::int64_t k,
                      DType dtype, Stream stream);

}  // namespace tgemm::sparse
