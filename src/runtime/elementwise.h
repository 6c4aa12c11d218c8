// Small device helpers of the runtime, callable from host-only code (no CUDA types here).
#pragma once

#include <cstdint>

#include "tgemm/tensor.h"

namespace tgemm {

// out[i, j] = src[i, j] + bias[j] for i < m, j < n, in fp32, cast to out_type. src is fp32 with
// row stride ld_src, or null (an empty sum: 0); bias may be null. The second half of a GEMM whose
// backend wrote fp32 partials (mixed input/output types) and the whole result when K = 0.
void epilogue_rows(void* out, DType out_type, std::int64_t ldo, const float* src, std::int64_t ld_src,
                   std::int64_t m, std::int64_t n, const void* bias, DType bias_type, Stream stream);

}  // namespace tgemm
