// Argument checks of the MXFP4 entry points (include/tgemm/fp4.h), host only: ranks, dtypes,
// shape agreement (K a multiple of 32, packed and scale widths), row layouts, overlap. The first
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

struct A16W4Call {
  std::int64_t m = 0, n = 0, k = 0;  // x flattened to [M, K], out to [M, N]
  const void* x = nullptr;
  std::int64_t ldx = 0;
  DType x_type = DType::kBFloat16;
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

A16W4Call validate_a16w4(const TensorView& x, const TensorView& w, const TensorView& w_scale, const TensorView& out,
                         const TensorView* bias, std::string_view op);

}  // namespace tgemm
