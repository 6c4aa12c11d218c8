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

}  // namespace tgemm
