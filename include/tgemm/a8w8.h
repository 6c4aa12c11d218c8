// Quantized GEMM with 8-bit operands (AITER's gemm_a8w8):
//   out[M,N] = (x[M,K] @ w[N,K]^T) * x_scale * w_scale (+ bias[N])
// with the product accumulated exactly in int32 (int8) or in fp32 (float8_e4m3fn), the scales
// and the bias applied in fp32, then one rounding to out's dtype.
#pragma once

#include "tgemm/gemm.h"
#include "tgemm/tensor.h"

namespace tgemm {

// x: [..., K] float8_e4m3fn or int8, flattened to [M, K] as F.linear does; rows contiguous.
// w: [N, K] of x's dtype, rows contiguous. K and the row strides of x and w multiples of 16
//    (16-byte rows: TMA and cuBLASLt's FP8/IMMA kernels move them in 16-byte units).
// x_scale: fp32, 1 element (per-tensor) or M contiguous elements ([M, 1] or x's leading dims with
//    a trailing 1: per-token). w_scale: fp32, 1 element or N contiguous elements ([N, 1] or [1, N]:
//    per-channel). Every mix of the two is accepted. Scales are device memory of the current
//    device and are read on the stream, never on the host, so a GEMM can be captured in a CUDA
//    graph with scales that change between replays. Zero scales give zeros; non-finite scales or
//    operands propagate as IEEE arithmetic does (NaN or inf in the affected rows/columns).
// bias: optional [N], out's dtype or fp32, added in fp32 after scaling.
// out: [..., N] bf16, fp16 or fp32, rows contiguous.
// Empty problems (M = 0 or N = 0) launch nothing; K = 0 writes the bias (or zeros).
// Throws tgemm::Error for bad input, before anything is launched.
void gemm_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias = nullptr, Stream stream = nullptr);

// Where gemm_a8w8 with these arguments is routed, without running it.
DispatchInfo describe_gemm_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                const TensorView& w_scale, const TensorView& out, const TensorView* bias = nullptr);

// FP8 GEMM with block scales, DeepSeek-V3's recipe (AITER's gemm_a8w8_blockscale): with
// L = ceil(K / 128) blocks along K,
//   out[m, n] = sum_{b < L} (sum_{k in block b} x[m, k] w[n, k]) * x_scale[m, b] * w_scale[n / 128, b]
//               (+ bias[n])
// the block sums exact in fp32 (each FP8 product is), scaled and summed in fp32, one rounding to
// out's dtype. Hopper's FP8 tensor cores keep about 14 bits of a running sum between promotions,
// so the fast paths differ from that by up to ~2^-11 of sum |x w| * scales (see the tests).
// x: [..., K] float8_e4m3fn, flattened to [M, K] as F.linear does; w: [N, K] float8_e4m3fn. K and
//    the row strides of x and w multiples of 16 (16-byte rows, as gemm_a8w8); K need not be a
//    multiple of 128 (the last block is partial).
// x_scale: fp32 [M, L] (1x128 activation blocks) in either layout quant_fp8_per_block_1x128 writes:
//    row-major:  strides (ld, 1), ld >= L (AITER's layout);
//    MN-major:   strides (1, ld), ld >= M. DeepGEMM's TMA-aligned layout (ld =
//                mn_major_tma_aligned_ld(M) in tgemm/quant.h) is what cuBLASLt reads without a copy;
//                any other ld costs a repacking pass into the workspace.
//    The strides decide: unit stride along L means row-major, unit stride along M MN-major (a
//    dimension of size 1 may have any stride; row-major is read where both fit).
// w_scale: fp32 [ceil(N / 128), L] (128x128 weight blocks), row-major, strides (ld, 1), ld >= L.
// Scales are device memory read on the stream (graph-safe). A scale of zero zeroes its block's
// contribution; non-finite scales or operands propagate as IEEE arithmetic does (a NaN or inf
// scale makes every output its block touches NaN or inf, 0 * inf giving NaN).
// bias: optional [N], out's dtype or fp32, added in fp32 after scaling. out: [..., N] bf16, fp16 or
// fp32, rows contiguous. Empty problems launch nothing; K = 0 writes the bias (or zeros).
// cuBLASLt runs it where its block-scaled FP8 kernels apply (sm_90, cuBLAS 12.9+, N a multiple of
// 4; M is padded to a multiple of 4 in the workspace); the reference kernel runs every other shape
// (slow, with a warning). Throws tgemm::Error for bad input, before anything is launched.
void gemm_a8w8_blockscale(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                          const TensorView& w_scale, const TensorView& out, const TensorView* bias = nullptr,
                          Stream stream = nullptr);

// Where gemm_a8w8_blockscale with these arguments is routed, without running it.
DispatchInfo describe_gemm_a8w8_blockscale(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                           const TensorView& w_scale, const TensorView& out,
                                           const TensorView* bias = nullptr);

}  // namespace tgemm
