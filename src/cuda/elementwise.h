// Elementwise passes over a GEMM output, callable from host-only code (no CUDA types here).
#pragma once

#include <cstdint>

#include "core/problem.h"
#include "tgemm/gemm.h"
#include "tgemm/tensor.h"

namespace tgemm {

// out[i, j] = act(alpha * src[i, j] + beta * c[i, j] + bias[j]) for i < m, j < n, in fp32, cast
// to out_type. src is fp32 (ld ld_src) or null (an empty sum: 0); c has out's dtype (ld ldc) and
// is read only when beta != 0; it may be out itself (read before written, element by element);
// bias may be null. The second half of a GEMM whose backend wrote the fp32 product (mixed
// input/output types, epilogues a backend cannot fuse) and the whole result when K = 0.
// Built by gemm_epilogue below, not field by field.
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

// Where the epilogue pass of a GEMM finds its product alpha * (x @ w^T).
enum class ProductAt {
  kNowhere,  // K = 0, an empty sum: out = act(beta * c + bias)
  kStaging,  // fp32 [M, N], ld N, alpha applied: out = act(staging + beta * c + bias)
  kOut,      // already in out, beta * c included: out = act(out + bias), in place
};

// The pass that finishes the GEMM (p, args) from its product at `at` (`staging` for kStaging):
// the bias where p has one, the activation, and beta * c unless the product already holds it.
inline EpilogueParams gemm_epilogue(const GemmProblem& p, const GemmArgs& args, ProductAt at,
                                    const float* staging = nullptr) {
  EpilogueParams e;
  e.out = args.out;
  e.out_type = p.out_type;
  e.ldo = p.ldo;
  e.m = p.m;
  e.n = p.n;
  if (at == ProductAt::kOut) {
    e.c = args.out;  // out = 1 * out + bias, element by element in place
    e.ldc = p.ldo;
    e.beta = 1.0f;
  } else {
    if (at == ProductAt::kStaging) {
      e.src = staging;
      e.ld_src = p.n;
    }
    e.c = args.c;
    e.ldc = p.ldc;
    e.beta = p.use_c ? args.beta : 0.0f;
  }
  e.bias = p.has_bias() ? args.bias : nullptr;
  e.bias_type = p.bias_type;
  e.activation = p.activation;
  return e;
}

void epilogue_rows(const EpilogueParams& params, Stream stream);

}  // namespace tgemm
