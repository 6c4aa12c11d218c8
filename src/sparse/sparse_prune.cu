// prune_2_4: in every group of 4 consecutive elements of a row, the 2 of largest magnitude are kept
// and the other 2 zeroed (ties keep the lower index, so the result is deterministic). One thread
// per group: the op runs once per weight, memory-bound, 8 bytes in and out per thread.
// Tested by tests/gpu/test_sparse.cpp (Prune*).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/cuda_check.h"
#include "sparse/sparse_backends.h"

namespace tgemm::sparse {
namespace {

__device__ float magnitude(__nv_bfloat16 v) { return fabsf(__bfloat162float(v)); }
__device__ float magnitude(__half v) { return fabsf(__half2float(v)); }

template <typename T>
__global__ void prune_2_4_kernel(const T* w, std::int64_t ldw, T* out, std::int64_t ldo, std::int64_t n,
                                 std::int64_t groups_per_row) {
  const std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= n * groups_per_row) return;
  const std::int64_t row = g / groups_per_row, col = (g % groups_per_row) * 4;
  T v[4];
  float a[4];
  for (int j = 0; j < 4; ++j) {
    v[j] = w[row * ldw + col + j];
    a[j] = magnitude(v[j]);
  }
  // Rank of element j: how many others beat it (larger, or equal at a lower index). Keep rank < 2.
  for (int j = 0; j < 4; ++j) {
    int beaten_by = 0;
    for (int i = 0; i < 4; ++i) {
      if (i != j && (a[i] > a[j] || (a[i] == a[j] && i < j))) ++beaten_by;
    }
    out[row * ldo + col + j] = beaten_by < 2 ? v[j] : T(0.0f);
  }
}

}  // namespace

void launch_prune_2_4(const void* w, std::int64_t ldw, void* out, std::int64_t ldo, std::int64_t n, std::int64_t k,
                      DType dtype, Stream stream) {
  const std::int64_t groups = n * (k / 4);
  if (groups == 0) return;
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>((groups + kThreads - 1) / kThreads);
  if (dtype == DType::kBFloat16) {
    prune_2_4_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(w), ldw,
                                                      static_cast<__nv_bfloat16*>(out), ldo, n, k / 4);
  } else {
    prune_2_4_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(w), ldw, static_cast<__half*>(out),
                                                      ldo, n, k / 4);
  }
  TGEMM_CUDA_CHECK_LAUNCH("prune_2_4");
}

}  // namespace tgemm::sparse
