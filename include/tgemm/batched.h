// Strided-batched GEMM (AITER's batched_gemm):
//   out[i] = op(a[i]) @ op(b[i]) (+ bias)   for i < B
// each product accumulated in fp32, the bias added in fp32, then one rounding to out's dtype.
#pragma once

#include "tgemm/gemm.h"
#include "tgemm/tensor.h"

namespace tgemm {

// a: bf16 or fp16, [B, M, K], or [B, K, M] with transpose_a (a[i] is then used transposed).
// b: a's dtype, [B, K, N], or [B, N, K] with transpose_b (B stacked nn.Linear weights).
// The flags say how the operands are stored; the last dimension of each is contiguous, so a
// transposed view (a.transpose(1, 2)) is passed as the tensor it views with the flag flipped.
// Any batch stride is accepted for a and b, 0 included (one matrix broadcast to every product,
// as torch's expand gives), and padded row and batch strides.
// out: [B, M, N], bf16, fp16 or fp32, rows contiguous; its elements distinct (batch stride never
//      0; padded or interleaved batches are fine) and not overlapping a, b or bias.
// bias: optional [N], a's dtype or out's, added to every product.
// Empty problems (B, M or N = 0) launch nothing; K = 0 writes the bias (or zeros).
// Throws tgemm::Error for bad input (naming the argument, what was expected and what was given),
// before anything is launched.
void batched_gemm(const TensorView& a, const TensorView& b, const TensorView& out, bool transpose_a = false,
                  bool transpose_b = false, const TensorView* bias = nullptr, Stream stream = nullptr);

// Where batched_gemm with these arguments is routed, without running it.
DispatchInfo describe_batched_gemm(const TensorView& a, const TensorView& b, const TensorView& out,
                                   bool transpose_a = false, bool transpose_b = false,
                                   const TensorView* bias = nullptr);

// Strided-batched GEMM with 8-bit operands (AITER's batched_gemm_a8w8):
//   out[i] = (a[i] @ b[i]^T) * a_scale[i] * b_scale[i] (+ bias)   for i < B
// each product accumulated exactly in int32 (int8) or in fp32 (float8_e4m3fn), the scales and the
// bias applied in fp32, then one rounding to out's dtype.
// a: [B, M, K] float8_e4m3fn or int8, rows contiguous. b: [B, N, K] of a's dtype (B stacked
//    nn.Linear weights), rows contiguous. No transpose flags: Hopper's FP8 and IMMA tensor-core
//    kernels (cuBLASLt's included) take only K-major operands, so a transposed 8-bit operand would
//    be a copy the caller can make as well. K and the row strides of a and b multiples of 16
//    (16-byte rows, as gemm_a8w8). Any batch stride, 0 included (one matrix broadcast to every
//    product), and padded row and batch strides.
// a_scale: fp32, one element (one scale for every product), [B] or [B, 1, 1] (per-tensor, one per
//    product) or [B, M, 1] (per-token, M contiguous per product). b_scale: fp32, one element, [B] or
//    [B, 1, 1], or [B, N, 1] (per-channel). Every mix is accepted; any batch stride of the scales.
//    Scales are device memory read on the stream (graph-safe).
// bias: optional [N], out's dtype or fp32, added in fp32 after scaling, to every product.
// out: [B, M, N] bf16, fp16 or fp32, rows contiguous, its elements distinct and not overlapping
//    any input.
// Empty problems (B, M or N = 0) launch nothing; K = 0 writes the bias (or zeros).
// Runs cuBLASLt's strided-batched FP8/IMMA GEMM into a [B, M, N] fp32/int32 workspace (B * M * N * 4
// bytes), then one scaling pass; the reference kernel where cuBLASLt has no algorithm. Throws
// tgemm::Error for bad input (naming the argument, what was expected and what was given), before
// anything is launched.
void batched_gemm_a8w8(const TensorView& a, const TensorView& b, const TensorView& a_scale, const TensorView& b_scale,
                       const TensorView& out, const TensorView* bias = nullptr, Stream stream = nullptr);

// Where batched_gemm_a8w8 with these arguments is routed, without running it.
DispatchInfo describe_batched_gemm_a8w8(const TensorView& a, const TensorView& b, const TensorView& a_scale,
                                        const TensorView& b_scale, const TensorView& out,
                                        const TensorView* bias = nullptr);

}  // namespace tgemm
