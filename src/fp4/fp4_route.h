// The path of a GEMM of MXFP4 weights (gemm_a16w4, gemm_a8w4, gemm_a4w4: src/fp4/fp4.cu), host
// only and unit-tested without a GPU: the CUDA-core GEMV (kernels/sm90/sm90_mxfp4_gemv.cuh; its
// several-rows-a-warp form, kernels/sm90/sm90_mxfp4_gemv_rows.cuh, only where forced), the
// tensor-core weight-as-B kernel (kernels/sm90/sm90_mxfp4_mma.cuh) or the weight dequantized to
// 16 bits for gemm_a16w16; how a path forced by TGEMM_FP4_PATH (Settings::fp4_path) applies; the
// tensor-core kernel's split-K.
#pragma once

#include <cstdint>

#include "core/settings.h"
#include "fp4/fp4_validate.h"

namespace tgemm::fp4_route {

enum class W4Path { kGemv, kGemvRows, kMma, kDequant };
using W4Force = ::tgemm::W4Force;  // Settings::fp4_path (TGEMM_FP4_PATH)

// The GEMV's largest M: at 16 tokens its CUDA-core FMAs are the bound, not the weight read
// (22-35x the 4-bit streaming floor on an H200, docs/performance.md); at M <= 4 it issues a
// quarter of those FMAs or fewer and at M = 1 is 1.06-1.70x faster than F.linear. Where the
// tensor-core kernel overtakes it in (1, 4] is not measured: TGEMM_FP4_PATH=mma forces it there.
inline constexpr std::int64_t kGemvMaxM = 4;
// The tensor-core kernel's largest M: two m16n8k16 tiles of tokens. Where it stops beating the
// dequantize path (and whether more tiles would) is not measured: TGEMM_FP4_PATH=dequant forces
// that path at any M.
inline constexpr std::int64_t kMmaMaxM = 32;

// Whether x's and w's rows are 16-byte aligned (bases and row strides; a single row's stride is
// never used) and K >= 32: what the GEMV and the tensor-core kernel read with 16-byte loads.
bool rows_aligned(const W4GemmCall& c);

// The path of a checked, non-empty call: the forced one (Settings::fp4_path, TGEMM_FP4_PATH) where
// it can run (either GEMV: M <= 4; gemv_rows, the GEMV sharing each x load over several weight
// rows, is never a default: unmeasured; the tensor-core kernel: M <= 32, x bf16, fp16 or e4m3; both: rows_aligned),
// else the GEMV up to kGemvMaxM, the tensor-core kernel up to kMmaMaxM, the dequantize path above or wherever the rows
// are not aligned.
W4Path choose_w4_path(const W4GemmCall& c, W4Force force);

// CTAs of the tensor-core kernel along K (a cluster of that many, at most 8): enough CTAs for
// about two a SM where N alone gives fewer (`tiles` = ceil(N / rows a CTA)), while each of the
// split_k * warps parts keeps at least kMinStepsPerPart of the `steps` 128-wide k-steps. Both
// targets are unmeasured starting points.
inline constexpr int kMinStepsPerPart = 4;
int mma_split_k(std::int64_t tiles, std::int64_t steps, int warps, int sm_count);

}  // namespace tgemm::fp4_route
