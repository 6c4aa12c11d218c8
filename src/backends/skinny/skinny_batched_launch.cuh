// Host side of the batched skinny instances: problem -> kernel parameters, the launch, the image
// query, and the appender each instance translation unit calls. Included only by
// skinny_batched_<dtype>.cu.
#pragma once

#include <vector>

#include "backends/skinny/skinny_batched.h"
#include "backends/skinny/skinny_launch.cuh"
#include "kernels/sm90/sm90_batched_skinny.cuh"

namespace tgemm::skinny {

inline kernels::BatchedSkinnyParams batched_params(const GemmProblem& p, const GemmArgs& args) {
  kernels::BatchedSkinnyParams kp;
  kp.a = args.a;
  kp.b = args.b;
  kp.out = args.out;
  kp.bias = p.has_bias() ? args.bias : nullptr;
  kp.m = static_cast<int>(p.m);
  kp.n = static_cast<int>(p.n);
  kp.k = static_cast<int>(p.k);
  kp.transpose_a = p.transpose_a ? 1 : 0;
  kp.lda = p.lda;
  kp.ldb = p.ldb;
  kp.ldo = p.ldo;
  kp.stride_a = p.batch_stride_a;
  kp.stride_b = p.batch_stride_b;
  kp.stride_out = p.batch_stride_out;
  kp.out_type = skinny_elem(p.out_type);
  kp.bias_type = p.has_bias() ? skinny_elem(p.bias_type) : kernels::kSkinnyNone;
  return kp;
}

inline dim3 batched_grid(const GemmProblem& p, int block_n) {
  return dim3(static_cast<unsigned>((p.n + block_n - 1) / block_n), static_cast<unsigned>(p.batch), 1);
}

template <typename In, int M_MAX, int LANES>
void launch_batched_nk(const GemmProblem& p, const GemmArgs& args, Stream stream, const char* where) {
  kernels::sm90_batched_gemv_nk<In, M_MAX, LANES>
      <<<batched_grid(p, kBatchedNkThreads / LANES), kBatchedNkThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
          batched_params(p, args));
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int M_MAX, int COLS>
void launch_batched_kn(const GemmProblem& p, const GemmArgs& args, Stream stream, const char* where) {
  kernels::sm90_batched_gemv_kn<In, M_MAX, COLS>
      <<<batched_grid(p, 8 * COLS), kBatchedKnThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
          batched_params(p, args));
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

// The mma kernel's template has no token count (it always covers 16): M_MAX is the tile's m_max.
template <typename In, int M_MAX, int UNROLL>
void launch_batched_mma(const GemmProblem& p, const GemmArgs& args, Stream stream, const char* where) {
  static_assert(M_MAX == 16, "the mma kernel covers 16 tokens");
  kernels::sm90_batched_mma_nk<In, UNROLL>
      <<<batched_grid(p, 8 * kBatchedNkThreads / 32), kBatchedNkThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
          batched_params(p, args));
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int M_MAX, int UNROLL>
SkinnyKernelInfo query_batched_mma() {
  return query_image<&kernels::sm90_batched_mma_nk<In, UNROLL>>(kBatchedNkThreads, 0, 0);
}

template <typename In, int M_MAX, int LANES>
SkinnyKernelInfo query_batched_nk() {
  return query_image<&kernels::sm90_batched_gemv_nk<In, M_MAX, LANES>>(kBatchedNkThreads, 0, 0);
}

template <typename In, int M_MAX, int COLS>
SkinnyKernelInfo query_batched_kn() {
  return query_image<&kernels::sm90_batched_gemv_kn<In, M_MAX, COLS>>(kBatchedKnThreads, 0, 0);
}

template <typename In>
void append_batched_kernels(std::vector<BatchedKernel>& out) {
#define TGEMM_BATCHED_APPEND(LAYOUT, FAMILY, LAUNCH, QUERY, M, P)             \
  {                                                                           \
    BatchedKernel k;                                                          \
    k.tile = BatchedTile{BatchedLayout::LAYOUT, M, P, BatchedFamily::FAMILY}; \
    k.in = dtype_of<In>();                                                    \
    k.launch = &LAUNCH<In, M, P>;                                             \
    k.query = &QUERY<In, M, P>;                                               \
    out.push_back(k);                                                         \
  }
#define TGEMM_BATCHED_APPEND_NK(M, L) TGEMM_BATCHED_APPEND(kNK, kGemv, launch_batched_nk, query_batched_nk, M, L)
#define TGEMM_BATCHED_APPEND_KN(M, C) TGEMM_BATCHED_APPEND(kKN, kGemv, launch_batched_kn, query_batched_kn, M, C)
#define TGEMM_BATCHED_APPEND_MMA(M, U) TGEMM_BATCHED_APPEND(kNK, kMma, launch_batched_mma, query_batched_mma, M, U)
  TGEMM_BATCHED_SKINNY_NK_TILES(TGEMM_BATCHED_APPEND_NK)
  TGEMM_BATCHED_SKINNY_KN_TILES(TGEMM_BATCHED_APPEND_KN)
  TGEMM_BATCHED_SKINNY_MMA_TILES(TGEMM_BATCHED_APPEND_MMA)
#undef TGEMM_BATCHED_APPEND_NK
#undef TGEMM_BATCHED_APPEND_KN
#undef TGEMM_BATCHED_APPEND_MMA
#undef TGEMM_BATCHED_APPEND
}

}  // namespace tgemm::skinny
