// Argument checks of the quantization entry points (include/tgemm/quant.h), host only: ranks,
// dtypes, shape agreement, row layouts, scale shapes and layouts, alignment, overlap. The first
// failing check throws tgemm::Error naming the op, the argument, what was expected and what was
// given. On success they return what the kernels need.
#pragma once

#include <cstdint>
#include <string_view>

#include "tgemm/tensor.h"

namespace tgemm {

enum class QuantGrouping : std::uint8_t {
  kPerTensor,
  kPerToken,
  kBlock1x128,
  kBlock128x128,
};

struct QuantCall {
  std::int64_t m = 0, k = 0;  // x flattened to [M, K]
  const void* x = nullptr;
  std::int64_t ldx = 0;  // elements between rows of x
  DType x_type = DType::kBFloat16;
  void* q = nullptr;
  std::int64_t ldq = 0;
  DType q_type = DType::kFloat8E4M3;
  float* scale = nullptr;
  // Elements between consecutive scales: along the rows (per token, block rows) and along K
  // (blocks); 0 where the grouping has no such dimension.
  std::int64_t scale_row_stride = 0;
  std::int64_t scale_col_stride = 0;
};

// `op` names the entry point in messages. q is float8_e4m3fn, or int8 for kPerToken.
QuantCall validate_quant(const TensorView& x, const TensorView& q, const TensorView& scale, QuantGrouping grouping,
                         std::string_view op);

// ceil(a / 128): blocks of kQuantBlock elements covering a elements.
inline std::int64_t quant_blocks(std::int64_t a) { return (a + 127) / 128; }

}  // namespace tgemm
