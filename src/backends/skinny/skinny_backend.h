// The skinny backend (libtype "skinny"): decode GEMMs, y[M, N] = x[M, K] · w[N, K]^T (+ bias)
// for M <= 32, bf16/fp16 in, bf16/fp16/fp32 out, that stream the weight once with 16-byte loads
// straight into tensor-core fragments (kernels/sm90/sm90_gemm_skinny.cuh). Each tile
// configuration x split-K factor is one solution named
//   skinny:sm90_m<M tile>_n<rows per CTA>_wn<warps over rows>_wk<warps over k>_u<k-blocks per
//   load batch>_sk<CTAs over k (cluster)>_v16
// e.g. skinny:sm90_m16_n16_wn1_wk8_u4_sk2_v16. Its default rule takes decode problems it expects
// to win (docs/perf-notes.md) and declines the rest, so cuBLASLt stays the default there.
#pragma once

#include <vector>

#include "core/registry.h"

namespace tgemm {

void register_skinny_solutions(Registry& registry);

// Every skinny solution of this build, in registration order (tests and tools).
std::vector<SolutionPtr> skinny_solutions();

}  // namespace tgemm
