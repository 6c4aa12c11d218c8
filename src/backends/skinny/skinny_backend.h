// The skinny backend (libtype "skinny"): decode GEMMs, y[M, N] = x[M, K] · w[N, K]^T (+ bias)
// for M <= 32, bf16/fp16 in, bf16/fp16/fp32 out, that stream the weight once with 16-byte loads
// straight into tensor-core fragments. Versions 1-2 (kernels/sm90/sm90_gemm_skinny.cuh): each
// tile configuration x split-K factor is one solution named
//   skinny:sm90_m<M tile>_n<rows per CTA>_wn<warps over rows>_wk<warps over k>_u<k-blocks per
//   load batch>[_p<ring stages>]_sk<CTAs over k (cluster)>_v16
// e.g. skinny:sm90_m16_n16_wn1_wk8_u4_sk2_v16; version 7 (sm90_gemm_skinny_bop.cuh, the weight as
// the MMA's B operand, 8-row blocks) adds _b<16-byte chunks a lane and k-step> before _sk, e.g.
// skinny:sm90_m16_n8_wn1_wk8_u4_b1_sk4_v16. Version 3 (sm90_gemm_skinny_stream.cuh, persistent
// stream-K, split_k() 0): each tile x CTAs-per-SM target is one solution named
//   skinny:sm90_m<M tile>_n<rows per CTA>_wn<..>_wk<..>_u<..>_x<staged k-blocks>_pk<CTAs per SM>_v16
// e.g. skinny:sm90_m8_n16_wn1_wk4_u4_x96_pk4_v16; they need a workspace (workspace_size) for
// their split-tile partials. The default rule takes decode problems it expects to win
// (docs/perf-notes.md; version-1 variants only until the others are measured) and declines the rest, so
// cuBLASLt stays the default there.
#pragma once

#include <vector>

#include "core/registry.h"

namespace tgemm {

void register_skinny_solutions(Registry& registry);

// Every skinny solution of this build, in registration order (tests and tools).
std::vector<SolutionPtr> skinny_solutions();

}  // namespace tgemm
