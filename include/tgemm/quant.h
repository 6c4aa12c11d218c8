// Quantization of bf16/fp16 activations and weights for the A8W8 GEMMs: FP8 (e4m3fn) per tensor,
// FP8 or INT8 per token (row), FP8 in 1x128 activation blocks and in 128x128 weight blocks.
//
// Every scale is fp32 and dequantizes: x ~= q * scale. Within a group (the tensor, a row, a block):
//   amax  = max |x| over the group's elements (NaN elements are left out of it);
//   scale = amax / 448 (FP8) or amax / 127 (INT8), floored at FLT_MIN (2^-126) so that 1 / scale
//           stays finite; a group whose amax is 0 (all zeros, or no element) gets scale 1;
//   q     = x * (1 / scale) rounded to nearest even and saturated: to +-448 for FP8 (a NaN stays
//           NaN), to [-127, 127] for INT8 (symmetric; a NaN gives 0). An infinite element makes its
//           group's scale infinite: the group's finite elements then give 0, the infinite ones NaN
//           (FP8) or 0 (INT8).
// These are DeepGEMM's and vLLM's recipes; the GPU tests compare every code and scale bit for bit
// with a host reference of the same arithmetic.
//
// Inputs x: [..., K] (weights [N, K]) of bf16 or fp16, flattened to [M, K] as F.linear does;
// elements of a row contiguous, rows at any stride. q: x's sizes, float8_e4m3fn (or int8 where
// said), rows contiguous. No view may overlap another. Empty inputs launch nothing (their scales,
// where they have any, are 1). Runs on `stream` of the current device; throws tgemm::Error for
// bad input before anything is launched. Fast paths need 16-byte aligned rows of x (row stride a
// multiple of 8 elements); other layouts take a scalar path with the same results.
#pragma once

#include <cstdint>

#include "tgemm/tensor.h"

namespace tgemm {

// Largest finite magnitudes of the formats: a group's amax is mapped onto them.
inline constexpr float kFp8E4M3Max = 448.0f;
inline constexpr float kInt8Max = 127.0f;
// Elements per block edge of the block-scaled formats (DeepSeek-V3's recipe).
inline constexpr std::int64_t kQuantBlock = 128;

// Per tensor, computed scale: two passes over x (amax, then quantize); scale: one fp32 element
// (any shape of one element), written.
void quant_fp8_per_tensor(const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream = nullptr);

// Per tensor, given scale: one fp32 element read on the device (graph-safe; a scale of 0 or a
// non-finite one is not checked: 0 maps every nonzero element to +-448 and zeros to NaN).
void quant_fp8_per_tensor_static(const TensorView& x, const TensorView& q, const TensorView& scale,
                                 Stream stream = nullptr);

// Per token: one scale per row of the flattened x, fp32, M elements contiguous (shaped [M], [M, 1]
// or x's leading dims then 1). q float8_e4m3fn (amax / 448) or int8 (amax / 127). One pass.
void quant_per_token(const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream = nullptr);

// 1x128 activation blocks, FP8: scale [M, ceil(K / 128)] fp32, block j of row i covering columns
// [128 j, 128 j + 128) (the last one partial when K is not a multiple of 128). Two layouts:
//   row-major:  stride (ld, 1) with ld >= ceil(K / 128);
//   MN-major: stride (1, ld) with ld >= M; DeepGEMM's get_mn_major_tma_aligned_tensor rounds ld up
//               to a multiple of 4 (16 bytes), see mn_major_tma_aligned_ld.
// One pass.
void quant_fp8_per_block_1x128(const TensorView& x, const TensorView& q, const TensorView& scale,
                               Stream stream = nullptr);

// 128x128 weight blocks, FP8: w [N, K]; scale [ceil(N / 128), ceil(K / 128)] fp32 with stride (ld, 1),
// ld >= ceil(K / 128); edge blocks partial. One pass.
void quant_fp8_per_block_128x128(const TensorView& w, const TensorView& q, const TensorView& scale,
                                 Stream stream = nullptr);

// The column stride of an MN-major TMA-aligned scale tensor of M rows: M rounded up to a multiple
// of 4 (16 bytes of fp32, the TMA's alignment).
inline std::int64_t mn_major_tma_aligned_ld(std::int64_t m) { return (m + 3) / 4 * 4; }

}  // namespace tgemm
