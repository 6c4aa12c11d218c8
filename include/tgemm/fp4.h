// MXFP4 (OCP Microscaling Formats v1.0): 4-bit weights with one power-of-two scale per 32 values
// along K, the quantizer that writes them and the GEMMs of such weights with 16-bit, FP8 or MXFP4
// activations.
//
// Format.
//   Values: FP4 e2m1 (1 sign, 2 exponent, 1 mantissa bit, no inf/NaN), code c in [0, 15]:
//           magnitude {0, 0.5, 1, 1.5, 2, 3, 4, 6}[c & 7], negative where c & 8 (0x8 is -0).
//   Packing: two codes a byte along K, element 2i in the low nibble and 2i + 1 in the high
//           nibble of byte i (gpt-oss's checkpoints and the OCP common layout): q [rows, K / 2].
//   Scales: E8M0 (uint8) s, scale 2^(s - 127) for s in [0, 254] (s = 0 is 2^-127), s = 255 NaN;
//           one per 32 consecutive values of a row, block j covering k in [32 j, 32 j + 32):
//           scale [rows, K / 32]. A value is code_value * 2^(s - 127); a NaN scale makes its
//           whole block NaN.
//
// Quantizer rules (OCP v1.0 section 6.3), per block of 32 values of a row:
//   amax = max |x| over the block;
//   s    = clamp(floor(log2(amax)) - 2, -127, 127) + 127, 2 being emax of e2m1 (its largest
//          value 6 = 1.5 * 2^2), so amax / 2^(s - 127) lies in [4, 8) where not clamped;
//          amax = 0 gives s = 0 (every code is then +-0);
//   code = x / 2^(s - 127) rounded to nearest, ties to the even code (the one whose mantissa bit
//          is 0: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4), and
//          saturated to +-6 (magnitudes in (6, 8) become 6, as the OCP rule implies); the sign is
//          kept, so negative values that round to 0 give -0 (code 0x8).
//   A block holding a NaN or an infinity gets s = 255 (NaN) and codes 0: it dequantizes to NaN
//   everywhere, so the non-finite input is never hidden.
//
// Errors: tgemm::Error, before anything is launched, for bad dtypes, shapes, layouts, overlap and
// K not a multiple of 32.
#pragma once

#include <cstdint>

#include "tgemm/tensor.h"

namespace tgemm {

// Values per E8M0 scale along K.
inline constexpr std::int64_t kMxfp4Block = 32;

// x [..., K] bf16/fp16 (rows contiguous, any row stride; flattened to [M, K] as F.linear does),
// q uint8 [M, K / 2] and scale uint8 [M, K / 32], both with contiguous rows (any row stride).
// K % 32 == 0. Empty inputs launch nothing. Runs on `stream` of the current device.
void quant_mxfp4(const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream = nullptr);

// out[M, N] = x[M, K] @ dequant(w, w_scale)[N, K]^T (+ bias[N]), sums in fp32.
//   x: bf16/fp16 [..., K], rows contiguous; w: uint8 [N, K / 2] packed e2m1 codes; w_scale: uint8
//   [N, K / 32] E8M0; rows of w and w_scale contiguous (any row stride); K % 32 == 0.
//   out: bf16/fp16/fp32 [..., N] like x; bias (optional): [N] of x's or out's dtype, added once in
//   fp32.
// Paths (with x's and w's rows 16-byte aligned): M <= 4 a GEMV that decodes w in registers (w
// read once); M <= 32 a tensor-core kernel that decodes w in registers into x's dtype (w read
// once). Otherwise (or with unaligned rows) w is dequantized to x's dtype in stream-ordered
// scratch memory (N * K * 2 bytes, cudaMallocAsync) and gemm_a16w16 runs on it. With bf16 x every
// path is exact up to the fp32 summation order (every e2m1 x E8M0 product is a bf16 value where it
// is a finite fp32 value); with fp16 x the tensor-core kernel and the dequantize path round
// weights outside fp16's range (|w| > 65504 or below 2^-24) to fp16, the GEMV does not.
// TGEMM_FP4_PATH=gemv|gemv_rows|mma|dequant forces a path where it can run (gemv, gemv_rows: M <= 4; mma: M <= 32),
// for measuring; auto or unset: the rule above.
// Empty problems launch nothing; M > 0, N > 0 with K = 0 writes bias (or zeros).
void gemm_a16w4(const TensorView& x, const TensorView& w, const TensorView& w_scale, const TensorView& out,
                const TensorView* bias = nullptr, Stream stream = nullptr);

// out[M, N] = (x[M, K] * x_scale) @ dequant(w, w_scale)[N, K]^T (+ bias[N]), sums in fp32.
//   x: float8_e4m3fn [..., K], rows contiguous; x_scale: fp32, 1 element (per-tensor) or M
//   contiguous elements ([..., 1]: per-token), device memory read on the stream (graph-safe);
//   w, w_scale as gemm_a16w4; K % 32 == 0. out: bf16/fp16/fp32 [..., N] like x; bias (optional):
//   [N] of out's dtype or fp32, added once in fp32 after scaling.
// Paths: M <= 4 with x's and w's rows 16-byte aligned: the GEMV of gemm_a16w4 reading FP8 x
// (e4m3 pairs widened to fp16 exactly), each token's sum times its x_scale; M <= 32 so aligned: the
// tensor-core kernel of gemm_a16w4 with x widened to fp16 and w decoded to fp16 (weights outside
// fp16's range rounded to it), each token's sum times its x_scale. Otherwise x is widened
// to bf16 and w dequantized to bf16 in stream-ordered scratch memory, gemm_a16w16 sums into fp32
// (out itself when out is fp32, else scratch of M * N * 4 bytes) and one pass applies x_scale and
// bias and rounds to out's dtype. Both paths are exact up to the fp32 summation order (e4m3 values
// are bf16 values; x_scale multiplies each token's sum rather than each x), except where a
// dequantized weight is beyond fp32's range (scale 2^127 with |code| >= 2: inf on the second path,
// where the GEMV may stay finite) or a partial sum over- or underflows. Non-finite x, x_scale or
// scales (E8M0 255 = NaN) propagate as IEEE arithmetic does to the outputs they touch.
// Empty problems launch nothing; M > 0, N > 0 with K = 0 writes bias (or zeros).
void gemm_a8w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias = nullptr, Stream stream = nullptr);

// out[M, N] = dequant(x, x_scale)[M, K] @ dequant(w, w_scale)[N, K]^T (+ bias[N]), sums in fp32:
// MXFP4 on both sides (AITER's gemm_a4w4 block-scale GEMM).
//   x: uint8 [..., K / 2] packed e2m1 codes, x_scale: uint8 [..., K / 32] E8M0 (as quant_mxfp4
//   writes for activations [..., K]); w: uint8 [N, K / 2], w_scale: uint8 [N, K / 32]; rows
//   contiguous (any row stride); K % 32 == 0. out: bf16/fp16/fp32 [..., N] like x; bias (optional):
//   [N] of out's dtype or fp32, added once in fp32.
// Paths: M <= 4 with x's and w's rows 16-byte aligned: the GEMV of gemm_a16w4 decoding both
// operands in registers, each 32-wide block's sum of code products times 2^(sx - 127) 2^(sw - 127).
// Otherwise both operands are dequantized to bf16 (exact) in stream-ordered scratch memory and
// gemm_a16w16 runs on them (through fp32 scratch and one epilogue pass where bias is fp32 and out
// 16-bit). Both paths are exact up to the fp32 summation order, except where a block's scale
// product leaves fp32's range (2^(sx + sw - 254) below 2^-149 or above 2^127 in the GEMV; a
// dequantized value above fp32's range on the second path) or a partial sum over- or underflows.
// A NaN scale (255) makes its block, and every output it touches, NaN.
// Empty problems launch nothing; M > 0, N > 0 with K = 0 writes bias (or zeros).
void gemm_a4w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias = nullptr, Stream stream = nullptr);

}  // namespace tgemm
