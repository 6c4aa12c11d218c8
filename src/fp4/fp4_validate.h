// Argument checks of the MXFP4 entry points (include/tgemm/fp4.h), host only: ranks, dtypes,
// shape agreement (K a multiple of 32, packed and scale widths, activation scales), row layouts,
// overlap. The first
// failing check throws tgemm::Error naming the op, the argument, what was expected and what was
// given. On success they return what the kernels need.
#pragma once

#include <cstdint>
#include <string_view>

#include "tgemm/tensor.h"

namespace tgemm {

struct Mxfp4QuantCall {
  std::int64_t m = 0, k = 0;  // x flattened to [M, K]
  const void* x = nullptr;
  std::int64_t ldx = 0;  // elements between rows
  DType x_type = DType::kBFloat16;
  std::uint8_t* q = nullptr;
  std::int64_t ldq = 0;  // bytes between rows
  std::uint8_t* scale = nullptr;
  std::int64_t ld_scale = 0;
};

Mxfp4QuantCall validate_quant_mxfp4(const TensorView& x, const TensorView& q, const TensorView& scale,
                                    std::string_view op);

// The checked arguments of the GEMMs of MXFP4 weights (gemm_a16w4, gemm_a8w4, gemm_a4w4).
struct W4GemmCall {
  std::int64_t m = 0, n = 0, k = 0;  // x flattened to [M, K] (values), out to [M, N]
  const void* x = nullptr;
  std::int64_t ldx = 0;             // x's storage units between rows: elements; bytes for packed e2m1 codes
  DType x_type = DType::kBFloat16;  // bf16/fp16 (a16w4), float8_e4m3fn (a8w4), uint8 codes (a4w4)
  // a8w4: fp32, index m * ld_x_scale (0: per-tensor, 1: per-token). a4w4: E8M0 bytes [M, K / 32]
  // with row stride ld_x_scale. a16w4: null.
  const void* x_scale = nullptr;
  std::int64_t ld_x_scale = 0;
  const std::uint8_t* w = nullptr;
  std::int64_t ldw = 0;  // bytes between rows of w
  const std::uint8_t* w_scale = nullptr;
  std::int64_t ld_scale = 0;
  void* out = nullptr;
  std::int64_t ldo = 0;
  DType out_type = DType::kBFloat16;
  const void* bias = nullptr;  // null: no bias
  DType bias_type = DType::kBFloat16;
};

// x bf16/fp16 [..., K]; bias of x's or out's dtype.
W4GemmCall validate_a16w4(const TensorView& x, const TensorView& w, const TensorView& w_scale, const TensorView& out,
                          const TensorView* bias, std::string_view op);
// x float8_e4m3fn [..., K]; x_scale fp32 with 1 or M contiguous elements; bias of out's dtype or
// fp32.
W4GemmCall validate_a8w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
                         const TensorView& out, const TensorView* bias, std::string_view op);
// x uint8 [..., K / 2]; x_scale uint8 [..., K / 32] with x's leading sizes; bias of out's dtype or
// fp32.
W4GemmCall validate_a4w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
                         const TensorView& out, const TensorView* bias, std::string_view op);

}  // namespace tgemm
