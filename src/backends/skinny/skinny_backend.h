// The skinny backend (libtype "skinny"): small-M GEMMs, y[M, N] = x[M, K] · w[N, K]^T (+ bias,
// activation) for M <= 32, bf16/fp16 in, bf16/fp16/fp32 out, that stream the weight once with
// 16-byte loads. Three kernel families, each in its own file:
//   - GEMV on CUDA cores, M <= 4 (skinny_gemv.*, kernels/sm90/sm90_skinny_gemv.cuh);
//   - weight-as-A MMA, M <= 32, cluster split-K (skinny_mma.*, sm90_skinny_mma_weight_a.cuh);
//   - weight-as-B MMA, M <= 16, cluster split-K (skinny_mma.*, sm90_skinny_mma_weight_b.cuh).
// Solution names and every parameter in them: skinny_names.h. The default rule
// (skinny_default_rule.*) takes the decode problems it expects to win and declines the rest, so
// cuBLASLt stays the default there.
#pragma once

#include <vector>

#include "core/registry.h"

namespace tgemm {

void register_skinny_solutions(Registry& registry);

// Every skinny solution of this build, in registration order (tests and tools).
std::vector<SolutionPtr> skinny_solutions();

}  // namespace tgemm
