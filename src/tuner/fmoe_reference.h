// The fp32 reference of fused_moe's layer for `tgemm tune-fmoe`, `tgemm bench --family fmoe` and
// their GPU test (src/tuner/fmoe_reference.cu):
//   ref[t] = sum over j < k of topk_weights[t, j] * (act(x_t @ w1[e, :I]^T) * (x_t @ w1[e, I:]^T)) @ w2[e]^T
// in fp32 from the bf16/fp16 operands, e = the slot's local expert (slots with none contribute 0),
// and per element the scale of what fused_moe's documented roundings move it by (include/tgemm/
// moe.h: the gate/up products and the activated product each rounded once to the input type):
//   mag[t] = sqrt(sum over j, i of (w_tj w2[e, :, i] (2 |act(g_i) u_i| + |act'(g_i) g_i u_i|))^2)
// (each term: the first-order effect of a relative rounding of g_i, of u_i and of act(g_i) u_i).
// A root sum of squares, not a sum of magnitudes: the roundings are independent, so their sum
// grows like the root of the terms' count (I up to 14336 here), and a worst-case sum would be a
// tolerance looser than the outputs themselves.
// Host-only declarations.
#pragma once

#include <cstdint>
#include <vector>

#include "tgemm/moe.h"
#include "tgemm/tensor.h"

namespace tgemm {

struct FmoeReferenceProblem {
  std::int64_t tokens = 0, topk = 0, experts = 0, hidden = 0, inter = 0;
  DType dtype = DType::kBFloat16;  // hidden, w1, w2
  MoeActivation activation = MoeActivation::kSilu;
};

// ref and mag: device fp32 [T, H]. hidden [T, H], w1 [E, 2I, H], w2 [E, H, I]: device, contiguous,
// of p.dtype. local_ids [T * k]: each slot's local expert (after any expert_map), -1 for none;
// weights [T * k]: the routing weights. Both on the host: the caller built the routing there.
// Runs on `stream` and synchronises with it (its scratch buffers are freed on return).
void fmoe_reference(const FmoeReferenceProblem& p, const void* hidden, const void* w1, const void* w2,
                    const std::vector<std::int32_t>& local_ids, const std::vector<float>& weights, float* ref,
                    float* mag, Stream stream);

struct FmoeCompare {
  std::int64_t checked = 0;
  std::int64_t bad = 0;         // |out - ref| > rtol |ref| + mag_coef mag + atol, NaN or Inf
  std::int64_t first_bad = -1;  // row-major index of the first bad element, -1 if none
  double first_bad_out = 0, first_bad_ref = 0, first_bad_tol = 0;
};

// Compares out [count] (out_type: bf16, fp16 or fp32) with ref under the per-element tolerance
// rtol |ref| + mag_coef mag + atol. Synchronises with `stream`.
FmoeCompare fmoe_compare(const void* out, DType out_type, const float* ref, const float* mag, std::int64_t count,
                         double rtol, double mag_coef, double atol, Stream stream);

}  // namespace tgemm
