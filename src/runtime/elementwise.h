// Small device helpers of the runtime, callable from host-only code (no CUDA types here).
#pragma once

#include <cstdint>

#include "tgemm/gemm.h"
#include "tgemm/tensor.h"

namespace tgemm {

// out[i, j] = act(alpha * src[i, j] + beta * c[i, j] + bias[j]) for i < m, j < n, in fp32, cast
// to out_type. src is fp32 (ld ld_src) or null (an empty sum: 0); c has out's dtype (ld ldc) and
// is read only when beta != 0; it may be out itself (read before written, element by element);
// bias may be null. The second half of a GEMM whose backend wrote the fp32 product (mixed
// input/output types, epilogues a backend cannot fuse) and the whole result when K = 0.
struct EpilogueParams {
  void* out = nullptr;
  DType out_type = DType::kBFloat16;
  std::int64_t ldo = 0;
  const float* src = nullptr;
  std::int64_t ld_src = 0;
  float alpha = 1.0f;
  const void* c = nullptr;
  std::int64_t ldc = 0;
  float beta = 0.0f;
  const void* bias = nullptr;
  DType bias_type = DType::kBFloat16;
  Activation activation = Activation::kNone;
  std::int64_t m = 0, n = 0;
};

void epilogue_rows(const EpilogueParams& params, Stream stream);

}  // namespace tgemm
