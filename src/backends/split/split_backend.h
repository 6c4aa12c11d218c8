// The split backend (libtype "split"): bias splitting, AITER's fallback for kernels without a
// bias epilogue, as a tuner candidate. A problem with a bias and/or an activation is computed
// as the plain product by another backend's solution (into out), then one elementwise pass over
// out adds the bias and applies the activation in fp32 (out = act(out + bias)). It wins where
// the fused kernels of a shape are slower than the plain one plus that pass (2 x M x N elements
// of traffic). Named after the inner solution:
//   split:<inner kernelName>, e.g. split:cublaslt:heuristic, split:skinny:sm90_mma_wa_m8_n16_wn1_wk4_u4_sk1
// A default only for erf-GELU + bias problems that the backends registered before it decline
// (it is registered after skinny and CUTLASS, before cuBLASLt): cuBLASLt's default product,
// then the pass. Otherwise only tuned rows route here. Alpha != 1 and beta * c
// problems are not split.
// The plain product is rounded to out's dtype before the bias is added: one more rounding than a
// fused epilogue, within the library's tolerances (tests/gpu/test_split.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/registry.h"

namespace tgemm {

// The elementwise pass: out[i, j] = act(out[i, j] + bias[j]) for the problem's M x N, on stream.
// Injected so the backend's logic stays host-only (the runtime passes its epilogue kernel).
using SplitEpiloguePass = std::function<void(const GemmProblem& p, const GemmArgs& args, Stream stream)>;

// Registers the split backend; it finds inner solutions through `registry` (which must outlive
// it, as the registry owns it).
void register_split_solutions(Registry& registry, SplitEpiloguePass pass);

// The plain problem a split solution hands to its inner solution, or nullopt when p is not one
// the split backend takes (no bias and no activation, alpha != 1, beta * c, other families).
std::optional<GemmProblem> split_inner_problem(const GemmProblem& p);

}  // namespace tgemm
