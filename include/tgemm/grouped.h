// Grouped GEMMs for mixture-of-experts layers beyond gmm (tgemm/gmm.h): the weight-gradient form
// (ptgmm / nptgmm), the expert-id form (grouped_gemm) and DeepGEMM's masked form
// (m_grouped_gemm_masked). Operands bf16/fp16 (masked: bf16), products accumulated in fp32 and
// rounded once to the output's dtype.
//
// No host synchronisation: group sizes, expert ids and masks are read on the device only, by the
// kernels of the call, so a call can be captured in a CUDA graph whose device data change between
// replays. The host cannot check those values; each has a documented device-side meaning below,
// and no value makes a kernel read or write out of bounds. Everything the host can check throws
// tgemm::Error (op, argument, expectation, value) before anything is launched.
#pragma once

#include <cstdint>

#include "tgemm/tensor.h"

namespace tgemm {

// Weight gradient of gmm: for every group g,
//   out[g] = lhs[:, cols of g] @ rhs[rows of g]        (accumulate = false)
//   out[g] += lhs[:, cols of g] @ rhs[rows of g]       (accumulate = true; fp32 sum, one rounding)
//   bias_grad[g, :] = sum of lhs[:, cols of g] over the columns (fp32), when bias_grad is given
// where the columns of lhs (rows of rhs) of group g are the g-th consecutive block of
// group_sizes[g], as in gmm.
// lhs: [K, M] bf16 or fp16, row-major (stride(1) == 1) or column-major (stride(0) == 1: an [M, K]
//      row-major tensor transposed, the seeds' other layout); both run without a copy.
// rhs: [M, N] of lhs's dtype, rows contiguous.
// group_sizes: [G] int32, contiguous, on the device.
// out: [G, K, N], lhs's dtype or fp32, rows contiguous; must not overlap an input.
// bias_grad: optional [G, K] fp32, rows contiguous; always overwritten (accumulate does not apply
//      to it, as in AITER).
// Device-side rules for group_sizes (as gmm's): a negative size counts as 0; the groups' column
// ranges are prefix sums clamped to M; columns past the sum belong to no group. An empty group g
// gets out[g] = 0 (accumulate: out[g] unchanged) and bias_grad[g] = 0.
// Empty problems: K = 0 or G = 0 launch nothing; N = 0 computes bias_grad only; M = 0 makes every
// group empty.
// ptgmm runs a persistent grid (one wave of CTAs striding over the G x ceil(K/64) x ceil(N/64)
// output tiles), nptgmm one CTA per tile; they compute the same values bit for bit.
void ptgmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
           const TensorView* bias_grad = nullptr, bool accumulate = false, Stream stream = nullptr);
void nptgmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
            const TensorView* bias_grad = nullptr, bool accumulate = false, Stream stream = nullptr);

// MoE expert GEMM by expert ids. T tokens, topk slots each, E experts, hidden size H:
//   y[t, j, :] = x_row(t, j) @ W(expert_ids[t, j])
// with x_row(t, j) = x[t, :] for x [T, H] (every slot of a token reads the token's row: the first
// GEMM of an MoE layer) or x[t, j, :] for x [T, topk, H] (one row per slot: the second GEMM), and
// W(e) = weights[e] for weights [E, H, N] (transpose_weights = false) or weights[e]^T for
// [E, N, H] (transpose_weights = true: stacked nn.Linear weights); the flag is explicit because
// H == N makes the two shapes alike.
//   - without topk_weights: out [T, topk, N] = y;
//   - with topk_weights [T, topk] (x's dtype or fp32): out [T, N] = sum over j of
//     topk_weights[t, j] * y[t, j, :], summed in fp32 in slot order j = 0 .. topk-1, one rounding.
// expert_ids: [T, topk] int32, contiguous, on the device. An id outside [0, E) gives y[t, j] = 0
// (the row is zeroed; weights are never indexed with it). out: x's dtype or fp32, rows contiguous,
// must not overlap an input. The weighted form keeps y in fp32 in the stream's workspace
// (T * topk * N * 4 bytes).
// Slots are sorted by expert on the device (a counting sort) and each expert's rows run as one
// group of the tiled grouped kernel; the result of a slot does not depend on the others.
void grouped_gemm(const TensorView& x, const TensorView& weights, const TensorView& expert_ids, const TensorView& out,
                  bool transpose_weights = false, const TensorView* topk_weights = nullptr, Stream stream = nullptr);

// DeepGEMM's masked grouped GEMM (decode under CUDA graphs), bf16:
//   out[g, :m_g, :] = x[g, :m_g, :] @ w[g]^T,  m_g = min(max(masked_m[g], 0), max_m)
// x [G, max_m, K], w [G, N, K], out [G, max_m, N], all bf16 with rows contiguous; masked_m [G]
// int32 contiguous on the device. Rows m_g .. max_m-1 of out[g] are left untouched (not written),
// as in DeepGEMM: callers read only the first masked_m[g] rows. expected_m (>= 0) is the caller's
// estimate of the rows per group, DeepGEMM's kernel-selection hint; it is validated, and with the
// one kernel variant here it selects nothing.
void m_grouped_gemm_masked(const TensorView& x, const TensorView& w, const TensorView& out, const TensorView& masked_m,
                           std::int64_t expected_m, Stream stream = nullptr);

}  // namespace tgemm
