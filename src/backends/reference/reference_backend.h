// The reference backend: one slow, simple, exact-order solution (reference:simt_f32acc) used by
// tests and by the tuner's correctness check, and as the default of last resort when no fast
// solution can implement a problem (with a warning, never silently).
#pragma once

#include "core/registry.h"

namespace tgemm {

void register_reference_solutions(Registry& registry);

// Runs the reference kernel with an explicit output (dtype of `out_type`), e.g. an fp32 buffer
// for comparisons. Shapes and strides from p, except the output's ld, type and, for p's batch of
// products, the output's batch stride (0: one dense [M, ldo] after another).
void run_reference_gemm(const GemmProblem& p, const GemmArgs& args, DType out_type, std::int64_t ldo, Stream stream,
                        std::int64_t batch_stride_out = 0);

// The a8w8, a8w8_blockscale and a8w8_batched reference (kernels/common/reference_gemm_a8w8.cuh)
// with an explicit output, likewise.
void run_reference_gemm_a8w8(const GemmProblem& p, const GemmArgs& args, DType out_type, std::int64_t ldo,
                             Stream stream, std::int64_t batch_stride_out = 0);

}  // namespace tgemm
