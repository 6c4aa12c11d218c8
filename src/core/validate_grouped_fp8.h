// Argument checks of the FP8 block-scaled grouped GEMMs (include/tgemm/grouped_fp8.h): the
// contiguous layout (per-row group index) and the masked layout. Same order as the other entry
// points: ranks, null pointers, dtypes, shape agreement, strides, alignment, overlap; the first
// failing check names the error. m_indices and masked_m are device data: never read here.
#pragma once

#include <cstdint>
#include <string_view>

#include "tgemm/tensor.h"

namespace tgemm {

// Both layouts as one problem: group g's rows of x, x_scale and out start at g * *_group_stride
// (masked) or all rows share group stride 0 and each row names its group (contiguous).
struct Fp8GroupedProblem {
  bool masked = false;
  std::int64_t groups = 0;
  std::int64_t rows = 0;  // M (contiguous) or max_m (masked): rows of x per group stride
  std::int64_t n = 0, k = 0, expected_m = 0;
  // Strides in elements. x_scale is addressed as (row, block) -> row * xs_row_stride + block *
  // xs_col_stride (row-major: (ld, 1), MN-major: (1, ld)); w_scale's planes are row-major.
  std::int64_t x_group_stride = 0, lda = 0;
  std::int64_t xs_group_stride = 0, xs_row_stride = 0, xs_col_stride = 0;
  std::int64_t w_group_stride = 0, ldw = 0;
  std::int64_t ws_group_stride = 0, ws_row_stride = 0;
  std::int64_t out_group_stride = 0, ldo = 0;
};

struct Fp8GroupedArgs {
  const void* x = nullptr;  // float8_e4m3fn
  const float* x_scale = nullptr;
  const void* w = nullptr;  // float8_e4m3fn
  const float* w_scale = nullptr;
  const std::int32_t* group_data = nullptr;  // m_indices [M] or masked_m [G]
  void* out = nullptr;                       // bf16
};

struct Fp8GroupedCall {
  Fp8GroupedProblem problem;
  Fp8GroupedArgs args;
};

Fp8GroupedCall validate_fp8_contiguous(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                                       const TensorView& w_scale, const TensorView& out, const TensorView& m_indices,
                                       std::string_view op);

Fp8GroupedCall validate_fp8_masked(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                                   const TensorView& w_scale, const TensorView& out, const TensorView& masked_m,
                                   std::int64_t expected_m, std::string_view op);

}  // namespace tgemm
