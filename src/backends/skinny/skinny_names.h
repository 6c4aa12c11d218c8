// Solution names of the skinny backend (the kernelName column of a tuned table), built from a
// kernel family and its parameters, and parsed back. Host-only.
//
// A name is `skinny:sm90_<family>_<fields>`: each field `_<key><value>`, in the fixed order below,
// `[...]` optional. Every parameter of every family, in one place:
//
//   skinny:sm90_gemv[_<T>]_m<M>_w<W>_c<C>[_wp]
//     GEMV on CUDA cores (kernels/sm90/sm90_skinny_gemv.cuh): a weight row is split into
//     segments, one warp each, summed in shared memory; no split-K.
//     T   the operands (gemm_a8w8): fp8 (FP8 e4m3) or int8; absent: bf16 and fp16 (a16w16)
//     m   tokens it covers: M <= m (1, 2 or 4)
//     w   warps per CTA
//     c   16-byte weight chunks a lane loads before its arithmetic (per pass over its segment)
//     wp  whole passes: the row split whose segments are whole passes of 32 x c chunks, where
//         one exists (GemvTile::segs); without it, the fewest segments that give each lane at
//         most c chunks
//
//   skinny:sm90_mma_wa_m<M>_n<N>_wn<WN>_wk<WK>_u<U>[_p<P>]_sk<S>
//     Weight-as-A MMA (kernels/sm90/sm90_skinny_mma_weight_a.cuh): 16 weight rows are the A
//     operand of mma.m16n8k16, the tokens its n8 B operand.
//     m   M tile: tokens per CTA, M <= m (8, 16 or 32)
//     n   weight rows per CTA (rows per warp x wn; rows per warp a multiple of 16)
//     wn  warps side by side over the CTA's rows
//     wk  warps splitting the CTA's k-range, summed in shared memory
//     u   32-wide k-blocks a warp loads per batch (with p: per ring slot)
//     p   a cp.async ring of p slots per warp in shared memory instead of register batches
//     sk  CTAs splitting K: a (1, sk, 1) cluster summed through distributed shared memory
//
//   skinny:sm90_mma_wb[_<T>]_m16_n<N>_wk<WK>_u<U>_c<C>_sk<S>
//     Weight-as-B MMA with cluster split-K (kernels/sm90/sm90_skinny_mma_weight_b.cuh): the 16
//     tokens are the A operand of mma.m16n8k16 (m16n8k32 for 8-bit operands), 8 weight rows its
//     n8 B operand.
//     T   the operands, as for the GEMV
//     m16 tokens: M <= 16, always
//     n   weight rows per CTA, a multiple of 8
//     wk  warps per CTA, splitting its k-range, summed in shared memory
//     u   k-steps a warp loads per batch
//     c   16-byte chunks a lane loads per row and k-step (a k-step is 32 x c elements, 64 x c
//         for 8-bit operands)
//     sk  CTAs splitting K: a (1, sk, 1) cluster; the ranks' sums meet in rank 0's shared memory
//
// e.g. skinny:sm90_gemv_m1_w8_c4, skinny:sm90_mma_wa_m16_n32_wn1_wk4_u2_sk1,
// skinny:sm90_mma_wb_m16_n16_wk4_u4_c1_sk2, skinny:sm90_gemv_fp8_m1_w8_c4,
// skinny:sm90_mma_wb_int8_m16_n16_wk4_u4_c1_sk2. Which tiles a build has is skinny_kernels.h's
// lists.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "backends/skinny/skinny_kernels.h"

namespace tgemm::skinny {

enum class SkinnyFamily { kGemv, kMmaWeightA, kMmaWeightB };

// The operands a solution runs: bf16 and fp16 (no tag), FP8 e4m3 (`_fp8`) or INT8 (`_int8`). The
// weight-as-A family has 16-bit instances only.
enum class SkinnyOperands { k16Bit, kFp8, kInt8 };

// What a name says: the family, its tile (only the family's member is meaningful) and the
// cluster split-K factor (1 for the GEMV).
struct SkinnyVariant {
  SkinnyFamily family = SkinnyFamily::kGemv;
  GemvTile gemv;
  MmaWeightATile weight_a;
  MmaWeightBTile weight_b;
  int split_k = 1;
  SkinnyOperands operands = SkinnyOperands::k16Bit;
};

std::string gemv_name(const GemvTile& tile, SkinnyOperands operands = SkinnyOperands::k16Bit);
std::string mma_weight_a_name(const MmaWeightATile& tile, int split_k);
std::string mma_weight_b_name(const MmaWeightBTile& tile, int split_k,
                              SkinnyOperands operands = SkinnyOperands::k16Bit);
std::string skinny_name(const SkinnyVariant& v);

// The variant a name describes, or nullopt if it is not a name of the grammar above (unknown
// family, a field missing, out of order or repeated, an operand tag other than fp8 or int8 or on
// the weight-as-A family, a value that is not a positive decimal
// number without leading zeros, anything after the last field). Whether this build has that tile
// is a separate question (skinny_kernels.h's lists).
std::optional<SkinnyVariant> parse_skinny_name(std::string_view name);

}  // namespace tgemm::skinny
