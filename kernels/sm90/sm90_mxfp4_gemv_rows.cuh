// Decode GEMV of MXFP4 weights for sm_90a, ROWS weight rows a warp: the same product as
// sm90_mxfp4_gemv (kernels/sm90/sm90_mxfp4_gemv.cuh: out[M, N] = dequant(x)[M, K] ·
// dequant(w, w_scale)[N, K]^T (+ bias[N]), M <= M_MAX <= 4, every activation format of that
// kernel, sums in fp32), with each x value loaded and widened once for ROWS rows and the e2m1
// codes decoded through the e4m3 converter.
//
// Why: the one-row-a-warp GEMV issues, per 16-byte chunk of codes (32 codes) and token, 4 16-byte
// x loads through L1 (64 bytes: 4x the weight bytes), 32 widenings of x, about 6 integer and
// float instructions a code to decode it (two shifts, two masks, OR, FMUL by 2^126) and 32 FMAs:
// its loop is 251 SASS instructions a chunk at M = 1 (464 at M = 4; CUDA 13.0, bf16 x). An H200
// issues about 132 SMs x 4 x 1.75 GHz = 0.92 T warp instructions a second against 4.4 TB/s
// streamed: about 110 instructions a 512-byte warp chunk (3.4 a code) before issue, not HBM, is
// the bound. Here, per chunk and row:
//   - x: lane l takes chunk c of ROWS rows at once, so its 4 x loads and 32 widenings a token
//     serve ROWS rows (x bytes a weight byte: 4 / ROWS; ROWS = 4: 1 load and 8 widenings a row).
//     x stays in registers rather than shared memory: a lane's 32 values are 64 contiguous bytes
//     that L1 serves as well as shared memory would, and staging them per CTA would cost a
//     barrier and, with one 128-byte x span a lane, 8-way bank conflicts without a swizzle.
//   - decode, 8 codes (one 32-bit word) in 19 instructions: 3 shifts and 4 LOP3 place each code
//     as an e4m3 byte (sign to bit 7, the 3 magnitude bits to bits 2..4: exponent field e, mantissa
//     m00, i.e. exactly the e2m1 value times 2^-6, subnormal code 0.5 included), 4
//     cvt.rn.f16x2.e4m3x2 (F2FP, 2 codes each, exact) and 8 fp16 -> fp32 (HADD2.F32, exact), then
//     one fp32 FMA a code and token. The loop is 134 SASS instructions a chunk and row at M = 1
//     with ROWS = 4 or 8 (4.2 a code), 266 at M = 4 with ROWS = 4. No fp16 product anywhere: every
//     product w * x is the fp32 product of the dequantized operands (exact: 2 x 8 or 2 x 11
//     significant bits).
//   - the factor 2^-6 rides in the sums and is taken out once, times 64, before x_scale and bias:
//     the fp32 sums round as the unscaled ones do except where a partial sum is within 2^6 of
//     fp32's underflow (|x| around 2^-120).
// Weight chunks of ROWS rows and CHUNKS passes (ROWS * CHUNKS 16-byte loads a lane: 8 KiB a warp
// at 16) are loaded through the non-allocating L1 path before any arithmetic, as in the one-row
// kernel. ROWS and CHUNKS are template parameters (src/fp4/fp4.cu picks them); which ones win is
// unmeasured.
//
// Layout: warp w of CTA b takes rows (b * WARPS + w) * ROWS + [0, ROWS); rows past N are not read
// (predicated loads: zeros) and not written. Lane l reads chunks l, l + 32, ... of each row. The
// V = ROWS * M_MAX sums are reduced across the warp by a transposing butterfly (each step sends
// half of a lane's values and keeps the other half: V - 1 + 5 - log2 V shuffles, not 5 V), in a
// fixed order: results are bit-identical run to run; lane i * (32 / V) ends with sum i, so V
// lanes store at once.
//
// Preconditions: those of sm90_mxfp4_gemv (1 <= M <= M_MAX, N >= 1, K % 32 == 0, K >= 32, x and
// w rows 16-byte aligned; out, bias, x_scale element-aligned), ROWS * M_MAX a power of two <= 32.
//
// Test: tests/gpu/test_fp4.cpp, every GEMV check forced onto this kernel (TGEMM_FP4_PATH's
// gemv_rows; src/fp4/fp4_forced.h); bench: TGEMM_FP4_PATH=gemv_rows bench/torch_bench.py --a16w4.
#pragma once

#include <cstdint>

#include "kernels/sm90/sm90_mxfp4_gemv.cuh"

namespace tgemm::kernels {

namespace mxfp4_gemv_rows_detail {

// The two 16-bit halves of `v` (e4m3 byte pairs, low byte first) as two f16x2 words: exact, every
// e4m3 value is an fp16 value. F2FP reads the high half in place (no shift).
__device__ __forceinline__ void e4m3x4_to_f16x2x2(std::uint32_t v, std::uint32_t& lo, std::uint32_t& hi) {
  asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e4m3x2 %0, l;\n cvt.rn.f16x2.e4m3x2 %1, h;\n}"
      : "=r"(lo), "=r"(hi)
      : "r"(v));
}

__device__ __forceinline__ float2 f16x2_to_float2(std::uint32_t h) {
  return __half22float2(__halves2half2(__ushort_as_half(static_cast<unsigned short>(h & 0xffffu)),
                                       __ushort_as_half(static_cast<unsigned short>(h >> 16))));
}

// The 8 codes of `w` (k order: low nibble first) as the fp32 values e2m1 * 2^-6, exact. Byte j of
// `odd` is code 2j + 1 (the high nibble of byte j: sign already at bit 7, magnitude shifted from
// bits 4..6 to 2..4), byte j of `even` code 2j (magnitude from bits 0..2, sign from bit 3).
__device__ __forceinline__ void decode8(std::uint32_t w, float (&v)[8]) {
  const std::uint32_t odd = ((w >> 2) & 0x1c1c1c1cu) | (w & 0x80808080u);
  const std::uint32_t even = ((w << 2) & 0x1c1c1c1cu) | ((w << 4) & 0x80808080u);
  std::uint32_t e01, e23, o01, o23;  // e01: codes 0 and 2; e23: 4 and 6; o01: 1 and 3; o23: 5 and 7
  e4m3x4_to_f16x2x2(even, e01, e23);
  e4m3x4_to_f16x2x2(odd, o01, o23);
  const float2 a = f16x2_to_float2(e01), b = f16x2_to_float2(e23), c = f16x2_to_float2(o01), d = f16x2_to_float2(o23);
  v[0] = a.x;
  v[1] = c.x;
  v[2] = a.y;
  v[3] = c.y;
  v[4] = b.x;
  v[5] = d.x;
  v[6] = b.y;
  v[7] = d.y;
}

// 2^(s - 127) as mxfp4::e8m0_value gives it (2^-127 for s = 0, NaN for 255), as selects: the
// branches of that form split every row's scale into a divergent block.
__device__ __forceinline__ float e8m0_value_sel(std::uint32_t s) {
  const std::uint32_t special = s == 0u ? 0x00400000u : 0x7fc00000u;
  return __uint_as_float(s == 0u || s == 255u ? special : s << 23);
}

// The decode's factor: sums of e2m1 * 2^-6 times x, times this, are the sums of e2m1 times x.
inline constexpr float kDecodeUnscale = 64.0f;

// One step of transpose_reduce: a lane keeps the half of v[0..2 HALF) selected by its bit OFF
// and adds its partner's (lane ^ OFF) copy of that half, into v[0..HALF).
template <int HALF, int OFF, int V>
__device__ __forceinline__ void transpose_step(float (&v)[V], int lane) {
  const bool upper = (lane & OFF) != 0;
#pragma unroll
  for (int i = 0; i < HALF; ++i) {
    const float send = upper ? v[i] : v[i + HALF];
    const float keep = upper ? v[i + HALF] : v[i];
    v[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
  }
  if constexpr (HALF > 1) transpose_step<HALF / 2, OFF / 2>(v, lane);
}

// Sums v[0..V) of every lane reduced over the warp: after the steps of offsets 16, 8, ... (log2 V
// of them) a lane holds value lane / (32 / V) summed over the 2^log2(V) lanes that share its
// other bits; the remaining offsets finish the sum. Returns it.
template <int V>
__device__ __forceinline__ float transpose_reduce(float (&v)[V], int lane) {
  static_assert(V >= 1 && V <= 32 && (V & (V - 1)) == 0, "V: a power of two <= 32");
  if constexpr (V > 1) transpose_step<V / 2, 16>(v, lane);
  float s = v[0];
#pragma unroll
  for (int off = 16 / V; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  return s;
}

}  // namespace mxfp4_gemv_rows_detail

template <typename A, int M_MAX, int ROWS, int WARPS, int CHUNKS>
__global__ void __launch_bounds__(32 * WARPS) sm90_mxfp4_gemv_rows(const Mxfp4GemvParams p) {
  namespace gd = mxfp4_gemv_detail;
  namespace rd = mxfp4_gemv_rows_detail;
  using Act = gd::Activation<A>;
  constexpr int kSums = ROWS * M_MAX;
  static_assert(kSums <= 32 && (kSums & (kSums - 1)) == 0, "ROWS * M_MAX: a power of two <= 32");
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int row0 = (static_cast<int>(blockIdx.x) * WARPS + static_cast<int>(threadIdx.x) / 32) * ROWS;
  if (row0 >= p.n) return;  // a whole warp: no shuffle below misses a lane
  // Token m's row of x; tokens past M read the last token's (their sums are not stored).
  const typename Act::Unit* x_row[M_MAX];
#pragma unroll
  for (int m = 0; m < M_MAX; ++m)
    x_row[m] = static_cast<const typename Act::Unit*>(p.x) + static_cast<std::int64_t>(m < p.m ? m : p.m - 1) * p.ldx;
  const int chunks = p.k / mxfp4::kBlock;

  // Rows past N point at row0 (never read: their loads are predicated off).
  const uint4* w_row[ROWS];
  const std::uint8_t* s_row[ROWS];
  bool live[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    live[r] = row0 + r < p.n;
    const std::int64_t row = live[r] ? row0 + r : row0;
    w_row[r] = reinterpret_cast<const uint4*>(p.w + row * p.ldw);
    s_row[r] = p.w_scale + row * p.ld_scale;
  }

  float acc[kSums];  // acc[r * M_MAX + m]: row r, token m
#pragma unroll
  for (int i = 0; i < kSums; ++i) acc[i] = 0.0f;

#pragma unroll 1
  for (int c0 = lane; c0 < chunks; c0 += 32 * CHUNKS) {
    uint4 wv[CHUNKS][ROWS];
    std::uint32_t sv[CHUNKS][ROWS];
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const int c = c0 + 32 * j;
        const bool in = c < chunks && live[r];
        wv[j][r] = skinny_detail::load_weight_if(w_row[r] + c, in);
        sv[j][r] = in ? s_row[r][c] : 0u;
      }
    }
#pragma unroll
    for (int j = 0; j < CHUNKS; ++j) {
      const int c = c0 + 32 * j;
      if (c >= chunks) break;
      const std::int64_t k0 = static_cast<std::int64_t>(c) * mxfp4::kBlock;
      float part[kSums];
#pragma unroll
      for (int i = 0; i < kSums; ++i) part[i] = 0.0f;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        // Token m's 8 values at k0 + 8q, widened once for the ROWS rows.
        float xf[M_MAX][8];
#pragma unroll
        for (int m = 0; m < M_MAX; ++m) Act::load8(x_row[m], k0 + 8 * q, xf[m]);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          const std::uint32_t word = q == 0 ? wv[j][r].x : q == 1 ? wv[j][r].y : q == 2 ? wv[j][r].z : wv[j][r].w;
          float wf[8];
          rd::decode8(word, wf);
#pragma unroll
          for (int m = 0; m < M_MAX; ++m) {
#pragma unroll
            for (int i = 0; i < 8; ++i) part[r * M_MAX + m] = fmaf(wf[i], xf[m][i], part[r * M_MAX + m]);
          }
        }
      }
      float sx[M_MAX];
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) {
        if constexpr (Act::kBlockScaled) {
          // The token's E8M0 scale of this block, shared by the ROWS rows.
          const auto* xs = static_cast<const std::uint8_t*>(p.x_scale);
          sx[m] = rd::e8m0_value_sel(xs[static_cast<std::int64_t>(m < p.m ? m : p.m - 1) * p.ld_x_scale + c]);
        } else {
          sx[m] = 1.0f;
        }
      }
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const float s = rd::e8m0_value_sel(sv[j][r]);
#pragma unroll
        for (int m = 0; m < M_MAX; ++m) {
          const float f = Act::kBlockScaled ? s * sx[m] : s;
          acc[r * M_MAX + m] = fmaf(part[r * M_MAX + m], f, acc[r * M_MAX + m]);
        }
      }
    }
  }

  const float sum = rd::transpose_reduce<kSums>(acc, lane);
  constexpr int kLanesPerSum = 32 / kSums;
  if (lane % kLanesPerSum != 0) return;
  const int idx = lane / kLanesPerSum;
  const int row = row0 + idx / M_MAX, m = idx % M_MAX;
  if (row >= p.n || m >= p.m) return;
  float v = sum * rd::kDecodeUnscale;
  if constexpr (Act::kTokenScaled) v *= static_cast<const float*>(p.x_scale)[m * p.ld_x_scale];
  const float b = p.bias != nullptr ? gd::load_as_float(p.bias, p.bias_type, row) : 0.0f;
  gd::store_from_float(p.out, p.out_type, static_cast<std::int64_t>(m) * p.ldo + row, v + b);
}

}  // namespace tgemm::kernels
