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

}  // namespace tgemm
