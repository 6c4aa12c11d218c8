// Grouped GEMM for mixture-of-experts layers (AITER's gmm):
//   out[rows of g] = lhs[rows of g] @ rhs[g] (+ bias[g])
// where the rows of group g are the g-th consecutive block of lhs's rows, group_sizes[g] long.
// Products are accumulated in fp32 and the bias is added in fp32 before one rounding to out's
// dtype.
#pragma once

#include "tgemm/gemm.h"
#include "tgemm/tensor.h"

namespace tgemm {

// lhs: [M, K] bf16 or fp16, rows contiguous (stride(1) == 1).
// rhs: lhs's dtype; [G, K, N] with transpose_rhs = false, or [G, N, K] (G stacked nn.Linear
//      weights) with transpose_rhs = true; the last dimension contiguous. An explicit flag, not a
//      guess from the strides: with K == N both layouts have the same shape.
// group_sizes: [G] int32, contiguous, in device memory of the current device.
// bias: optional [G, N], lhs's dtype or fp32, rows contiguous.
// out: [M, N], lhs's dtype or fp32, rows contiguous; it must not overlap any input.
//
// No host synchronisation: group_sizes are read on the device only, by the kernels of the call,
// so a call can be captured in a CUDA graph whose group_sizes change between replays. Because the
// host never sees them they cannot be checked; every value is given a meaning instead:
//   - a negative size counts as 0;
//   - the groups' row ranges are the prefix sums of the sizes, clamped to M: when the sizes sum
//     to more than M, the group crossing row M ends there and later groups are empty;
//   - rows of out past the sum of sizes (up to M) are written with zeros.
// Every row of out is written, and no row of lhs or out past M is read or written, for any sizes.
// Empty problems (M = 0 or N = 0) launch nothing; K = 0 writes the bias (or zeros) to the groups'
// rows. G = 0 zeroes out.
// Throws tgemm::Error for input that the host can check, before anything is launched.
void gmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
         bool transpose_rhs = false, const TensorView* bias = nullptr, Stream stream = nullptr);

// Where gmm routes a call with these arguments, without running it (validated as gmm does):
//   level "forced"   TGEMM_GROUPED_BACKEND=tile|cutlass chose;
//         "table"    a row of gmm's tuned table (tuned_gmm.csv, TGEMM_CONFIG_GMM) for the call's
//                    key: G, the bucket of M / G, N, K, rhs layout, dtypes, bias; file and line
//                    name the row, matched_m the total rows it was measured at;
//         "default"  gmm's default rule between the CUTLASS grouped kernel and the tile kernels;
//         "empty"    M = 0 or N = 0: nothing is launched.
// libtype "grouped_cutlass" or "grouped_tile"; kernel_name the CUTLASS instance or "tile".
DispatchInfo describe_gmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes,
                          const TensorView& out, bool transpose_rhs = false, const TensorView* bias = nullptr);

}  // namespace tgemm
