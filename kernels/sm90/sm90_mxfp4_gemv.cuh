// Decode GEMV of MXFP4 weights for sm_90a: out[M, N] = dequant(x)[M, K] · dequant(w, w_scale)[N, K]^T
// (+ bias[N]) for M <= M_MAX (1 or 4) on CUDA cores, w packed e2m1 codes with one E8M0 scale
// per 32 values (include/tgemm/fp4.h), sums in fp32. The activation format A is one of:
//   bf16, fp16       gemm_a16w4: x as it is;
//   Fp8E4M3          gemm_a8w4: e4m3 bytes widened two at a time to fp16 (exact; one
//                    cvt.rn.f16x2.e4m3x2 on sm_89+), each token's sum times its fp32 x_scale;
//   Mxfp4Codes       gemm_a4w4: packed e2m1 codes, each block's sum also times the token's E8M0
//                    scale of that block.
//
// Why: at M <= 4 the time is the weight's read (K / 2 bytes a row, a quarter of bf16's), so the
// kernel reads it the way the 16-bit skinny GEMV does (kernels/sm90/sm90_skinny_gemv.cuh): one
// warp per weight row, 16-byte chunks per lane through the non-allocating L1 path, CHUNKS loads
// in flight before any arithmetic, a warp-shuffle reduction. A 16-byte chunk is 32 codes: exactly
// one scale block, so a lane meets one scale byte per chunk. The 32 products of a chunk are summed
// in fp32 against the unscaled code values and the sum multiplied by the block's scale 2^(s-127)
// once: a power of two, so this equals scaling every product (no rounding differs) except where
// a partial sum under- or overflows fp32 (or, for Mxfp4Codes, the product of the two scales
// leaves fp32's range).
//
// Layout: a CTA is WARPS warps, warp w taking weight row blockIdx.x * WARPS + w; lane l reads
// chunks l, l + 32, ... of the row and, for each, the matching 32 values of every token's x
// (64, 32 or 16 bytes by format, read 8 values at a time through L1; tokens past M read the last
// token's, their sums discarded). Lanes' sums are combined in a fixed shuffle order: results are
// bit-identical run to run.
//
// Preconditions (gemm_a16w4, gemm_a8w4 and gemm_a4w4 check them): 1 <= M <= M_MAX, N >= 1,
// K % 32 == 0, K >= 32; x and w rows 16-byte aligned (data and row strides); out, bias, x_scale
// element-aligned.
//
// Test: tests/gpu/test_fp4.cpp (against the fp32 reference of the dequantized operands, every
// M <= 4, N not a multiple of 128, bias, every output dtype, each format); bench:
// bench/torch_bench.py --a16w4.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/mxfp4.cuh"
#include "kernels/common/numeric.cuh"
#include "kernels/sm90/sm90_skinny_common.cuh"

namespace tgemm::kernels {

// Activation formats of the GEMV besides bf16 and fp16 (tags; x's bytes are read as such).
struct Fp8E4M3 {};
struct Mxfp4Codes {};

struct Mxfp4GemvParams {
  const void* x;
  std::int64_t ldx;  // storage units: elements (bf16, fp16, e4m3), bytes of packed codes
  // Fp8E4M3: fp32, token m's at m * ld_x_scale (0: per-tensor). Mxfp4Codes: E8M0 bytes, token m's
  // block c at m * ld_x_scale + c. bf16, fp16: unused.
  const void* x_scale;
  std::int64_t ld_x_scale;
  const std::uint8_t* w;
  std::int64_t ldw;  // bytes
  const std::uint8_t* w_scale;
  std::int64_t ld_scale;
  void* out;
  std::int64_t ldo;
  int out_type;  // 0 bf16, 1 fp16, 2 fp32
  const void* bias;
  int bias_type;  // as out_type; bias null: none
  int m, n, k;
};

namespace mxfp4_gemv_detail {

template <typename T>
__device__ __forceinline__ float2 unpack2(std::uint32_t v) {
  if constexpr (std::is_same_v<T, bf16>) {
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
  } else {
    return __half22float2(__halves2half2(__ushort_as_half(static_cast<unsigned short>(v & 0xffffu)),
                                         __ushort_as_half(static_cast<unsigned short>(v >> 16))));
  }
}

// Two e4m3 bytes (low byte first in k) as floats: every e4m3 value, NaN included, is an fp16 value.
__device__ __forceinline__ float2 e4m3x2_to_float2(std::uint32_t v) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v & 0xffffu), __NV_E4M3);
  return __half22float2(__half2(h));
}

// What the GEMV needs of an activation format: its storage unit (ldx counts them), 8 values at
// element k of a row as floats, and whether x carries per-block (E8M0) or per-token (fp32) scales.
template <typename A>
struct Activation {
  using Unit = A;  // bf16, fp16
  static constexpr bool kBlockScaled = false, kTokenScaled = false;
  __device__ __forceinline__ static void load8(const Unit* row, std::int64_t k, float (&v)[8]) {
    const uint4 xv = *reinterpret_cast<const uint4*>(row + k);
    const std::uint32_t xs[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = unpack2<A>(xs[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  }
};

template <>
struct Activation<Fp8E4M3> {
  using Unit = std::uint8_t;
  static constexpr bool kBlockScaled = false, kTokenScaled = true;
  __device__ __forceinline__ static void load8(const Unit* row, std::int64_t k, float (&v)[8]) {
    const uint2 xv = *reinterpret_cast<const uint2*>(row + k);
    const std::uint32_t xs[2] = {xv.x, xv.y};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float2 lo = e4m3x2_to_float2(xs[i]), hi = e4m3x2_to_float2(xs[i] >> 16);
      v[4 * i] = lo.x;
      v[4 * i + 1] = lo.y;
      v[4 * i + 2] = hi.x;
      v[4 * i + 3] = hi.y;
    }
  }
};

template <>
struct Activation<Mxfp4Codes> {
  using Unit = std::uint8_t;
  static constexpr bool kBlockScaled = true, kTokenScaled = false;
  __device__ __forceinline__ static void load8(const Unit* row, std::int64_t k, float (&v)[8]) {
    const std::uint32_t word = *reinterpret_cast<const std::uint32_t*>(row + k / 2);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = mxfp4::e2m1_value((word >> (4 * j)) & 15u);
  }
};

__device__ __forceinline__ float load_as_float(const void* p, int type, std::int64_t i) {
  if (type == 0) return __bfloat162float(static_cast<const bf16*>(p)[i]);
  if (type == 1) return __half2float(static_cast<const fp16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

__device__ __forceinline__ void store_from_float(void* p, int type, std::int64_t i, float v) {
  if (type == 0) {
    static_cast<bf16*>(p)[i] = __float2bfloat16_rn(v);
  } else if (type == 1) {
    static_cast<fp16*>(p)[i] = __float2half_rn(v);
  } else {
    static_cast<float*>(p)[i] = v;
  }
}

// part[m] += sum over the 8 codes of `word` (k order: low nibble first) times token m's 8 values
// at element `k` of its row.
template <typename A, int M_MAX>
__device__ __forceinline__ void dot_word(std::uint32_t word, const typename Activation<A>::Unit* x, std::int64_t ldx,
                                         int m_count, std::int64_t k, float (&part)[M_MAX]) {
  float wf[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) wf[j] = mxfp4::e2m1_value((word >> (4 * j)) & 15u);
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) {
    float xf[8];
    Activation<A>::load8(x + static_cast<std::int64_t>(min(m, m_count - 1)) * ldx, k, xf);
#pragma unroll
    for (int j = 0; j < 8; ++j) part[m] = fmaf(wf[j], xf[j], part[m]);
  }
}

}  // namespace mxfp4_gemv_detail

template <typename A, int M_MAX, int WARPS, int CHUNKS>
__global__ void __launch_bounds__(32 * WARPS) sm90_mxfp4_gemv(const Mxfp4GemvParams p) {
  namespace gd = mxfp4_gemv_detail;
  using Act = gd::Activation<A>;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int row = static_cast<int>(blockIdx.x) * WARPS + static_cast<int>(threadIdx.x) / 32;
  if (row >= p.n) return;  // a whole warp: no shuffle below misses a lane
  const auto* x = static_cast<const typename Act::Unit*>(p.x);
  const uint4* w_row = reinterpret_cast<const uint4*>(p.w + static_cast<std::int64_t>(row) * p.ldw);
  const std::uint8_t* s_row = p.w_scale + static_cast<std::int64_t>(row) * p.ld_scale;
  const int chunks = p.k / mxfp4::kBlock;

  float acc[M_MAX];
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) acc[m] = 0.0f;

#pragma unroll 1
  for (int c0 = lane; c0 < chunks; c0 += 32 * CHUNKS) {
    // Weight chunks and their scales loaded together before any arithmetic; chunks past the row
    // are not read (predicated loads, no traffic) and skipped below.
    uint4 wv[CHUNKS];
    std::uint32_t sv[CHUNKS];
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
      const int c = c0 + 32 * j;
      const bool in = c < chunks;
      wv[j] = skinny_detail::load_weight_if(w_row + c, in);
      sv[j] = in ? s_row[c] : 0u;
    }
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
      const int c = c0 + 32 * j;
      if (c >= chunks) break;
      float part[M_MAX];
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) part[m] = 0.0f;
      const std::int64_t k0 = static_cast<std::int64_t>(c) * mxfp4::kBlock;
      gd::dot_word<A, M_MAX>(wv[j].x, x, p.ldx, p.m, k0, part);
      gd::dot_word<A, M_MAX>(wv[j].y, x, p.ldx, p.m, k0 + 8, part);
      gd::dot_word<A, M_MAX>(wv[j].z, x, p.ldx, p.m, k0 + 16, part);
      gd::dot_word<A, M_MAX>(wv[j].w, x, p.ldx, p.m, k0 + 24, part);
      const float s = mxfp4::e8m0_value(sv[j]);
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) {
        if constexpr (Act::kBlockScaled) {
          // The token's scale of this block; tokens past M read the last token's (discarded).
          const auto* xs = static_cast<const std::uint8_t*>(p.x_scale);
          const float sx = mxfp4::e8m0_value(xs[static_cast<std::int64_t>(min(m, p.m - 1)) * p.ld_x_scale + c]);
          acc[m] = fmaf(part[m], s * sx, acc[m]);
        } else {
          acc[m] = fmaf(part[m], s, acc[m]);
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], off);
  }
  if (lane == 0) {
    const float b = p.bias != nullptr ? gd::load_as_float(p.bias, p.bias_type, row) : 0.0f;
#pragma unroll
    for (int m = 0; m < M_MAX; ++m) {
      if (m >= p.m) continue;
      float v = acc[m];
      if constexpr (Act::kTokenScaled) v *= static_cast<const float*>(p.x_scale)[m * p.ld_x_scale];
      gd::store_from_float(p.out, p.out_type, static_cast<std::int64_t>(m) * p.ldo + row, v + b);
    }
  }
}

}  // namespace tgemm::kernels
