// FP8 grouped GEMMs with DeepSeek-V3 block scales (DeepGEMM's m_grouped_gemm_fp8_fp8_bf16_nt_contiguous
// and _masked). With L = ceil(K / 128) blocks along K and a row of x in group g:
//   out[row, n] = sum_{b < L} (sum_{k in block b} x[row, k] w[g, n, k]) * x_scale[row, b]
//                 * w_scale[g, n / 128, b]
// the block sums exact in fp32 (every FP8 product is), scaled and summed in fp32, one rounding to
// bf16. The 1x128 activation scales and 128x128 weight scales are those of
// quant_fp8_per_block_1x128 and quant_fp8_per_block_128x128 (tgemm/quant.h), as for
// gemm_a8w8_blockscale (tgemm/a8w8.h).
//
// Common to both ops: x and w float8_e4m3fn, w [G, N, K] (G stacked nn.Linear weights), K and the
// row strides of x and w multiples of 16 (16-byte rows, as gemm_a8w8_blockscale); K need not be a
// multiple of 128 (the last block is partial). Scales fp32; w_scale [G, ceil(N / 128), L], each
// group's plane row-major (strides (.., ld, 1), ld >= L). out bf16, rows contiguous, must not
// overlap an input. Non-finite scales or operands propagate as IEEE arithmetic does.
//
// No host synchronisation: m_indices and masked_m are read on the device only, by the kernel of
// the call, so a call can be captured in a CUDA graph whose indices or masks change between
// replays. Each device value has a documented meaning below; none makes the kernel read or write
// out of bounds. Everything the host can check throws tgemm::Error before anything is launched.
#pragma once

#include <cstdint>

#include "tgemm/tensor.h"

namespace tgemm {

// Contiguous layout (prefill/training: the rows of all groups concatenated):
//   out[row] = x[row] @ w[m_indices[row]]^T, block-scaled as above.
// x [M, K]; x_scale [M, L] row-major (strides (ld, 1), ld >= L) or MN-major (strides (1, ld),
// ld >= M, DeepGEMM's TMA-aligned layout included); m_indices [M] int32 contiguous on the device;
// out [M, N].
// Device rule: a row whose m_indices value lies outside [0, G) -- DeepGEMM marks the padding rows
// of its 128-aligned groups with -1 -- is a padding row: its out row is written with zeros and its
// x row and x_scale row are not read. Every row of out is written. Rows of one group need not be
// adjacent nor aligned to any tile. The tile kernel computes the call, one pass per group present
// in a 64-row tile; under TGEMM_GROUPED_BACKEND=cutlass, where every group's rows are adjacent
// (DeepGEMM's layout, checked on the device), the FP8 grouped tensor-core kernel does
// (docs/performance.md).
// Empty problems: M = 0 or N = 0 launch nothing; K = 0 writes zeros.
void m_grouped_gemm_fp8_contiguous(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                                   const TensorView& w_scale, const TensorView& out, const TensorView& m_indices,
                                   Stream stream = nullptr);

// Masked layout (decode under CUDA graphs):
//   out[g, :m_g] = x[g, :m_g] @ w[g]^T, block-scaled as above, m_g = min(max(masked_m[g], 0), max_m)
// x [G, max_m, K]; x_scale [G, max_m, L], each group's plane row-major or MN-major (as the
// contiguous op's x_scale); masked_m [G] int32 contiguous on the device; out [G, max_m, N].
// Device rule: rows m_g .. max_m - 1 of out[g] are left untouched (not written), and those rows of
// x and x_scale are not read, as in DeepGEMM: callers read only the first masked_m[g] rows.
// expected_m (>= 0) is the caller's estimate of the rows per group, DeepGEMM's kernel-selection
// hint; it is validated, and with the one kernel variant here it selects nothing.
// Empty problems: G = 0, max_m = 0 or N = 0 launch nothing; K = 0 writes zeros to the m_g rows.
void m_grouped_gemm_fp8_masked(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                               const TensorView& w_scale, const TensorView& out, const TensorView& masked_m,
                               std::int64_t expected_m, Stream stream = nullptr);

}  // namespace tgemm
