// The dequantizing epilogue of the a8w8 GEMMs, callable from host-only code (no CUDA types here):
//   out[b, i, j] = acc[b, i, j] * x_scale[b, i or 0] * w_scale[b, j or 0] + bias[j]
// for each of `batch` products b (1 outside batched_gemm_a8w8), in fp32, one rounding to out_type. acc is the unscaled
// product of the 8-bit operands: int32 (IMMA, exact) or fp32 (FP8). And the broadcast that turns a per-tensor scale
// into a vector for cuBLASLt's outer-vector scale mode, and the copy that puts block scales into the layout of its
// block-scale modes.
#pragma once

#include <cstdint>

#include "core/problem.h"
#include "tgemm/tensor.h"

namespace tgemm {

struct ScaleEpilogueParams {
  void* out = nullptr;
  DType out_type = DType::kBFloat16;  // bf16, fp16 or fp32
  std::int64_t ldo = 0;
  const void* acc = nullptr;
  DType acc_type = DType::kFloat32;  // fp32 or int32
  std::int64_t ld_acc = 0;
  const float* a_scale = nullptr;  // [m] when a_per_row, else [1]
  bool a_per_row = false;
  const float* b_scale = nullptr;  // [n] when b_per_col, else [1]
  bool b_per_col = false;
  const void* bias = nullptr;  // [n] or null
  DType bias_type = DType::kFloat32;
  std::int64_t m = 0, n = 0;
  // Product b's matrices and scales lie these many elements past product 0's (scale strides 0:
  // one scale or vector for every product).
  std::int64_t batch = 1;
  std::int64_t batch_out = 0, batch_acc = 0, batch_a_scale = 0, batch_b_scale = 0;
};

// The parameters for problem p (each of its p.batch products) whose unscaled product lies at `acc` ([B, M, N], dense).
ScaleEpilogueParams a8w8_epilogue(const GemmProblem& p, const GemmArgs& args, const void* acc, DType acc_type);

void scale_rows(const ScaleEpilogueParams& params, Stream stream);

// dst[i] = *src for i < n: a per-tensor scale as the vector cuBLASLt's OUTER_VEC_32F mode reads.
void broadcast_scale(const float* src, float* dst, std::int64_t n, Stream stream);

// A block-scale matrix copied into the layout cuBLASLt's VEC128_32F / BLK128x128_32F modes read:
//   dst[r * dst_ld + c] = c < cols ? src[r * src_stride_r + c * src_stride_c] : 0
// for r < rows, c < dst_ld (dst_ld >= cols: the padding columns are zeros).
struct ScaleRepack {
  const float* src = nullptr;
  std::int64_t src_stride_r = 0, src_stride_c = 0;
  std::int64_t rows = 0, cols = 0;
  float* dst = nullptr;
  std::int64_t dst_ld = 0;
};
void repack_scales(const ScaleRepack& r, Stream stream);

}  // namespace tgemm
