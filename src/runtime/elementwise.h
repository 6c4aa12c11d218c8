// Small device helpers of the runtime, callable from host-only code (no CUDA types here).
#pragma once

#include <cstdint>

#include "tgemm/tensor.h"

namespace tgemm {

// out[i, :] = bias (or 0 when bias is null) for i < m; out row stride ldo.
void broadcast_rows(void* out, DType out_type, std::int64_t ldo, std::int64_t m, std::int64_t n,
                    const void* bias, DType bias_type, Stream stream);

}  // namespace tgemm
