// Tensor-core MXFP4 weight kernel for sm_90a, M <= 16 MT (MT = 1 or 2 token tiles): out[M, N] =
// (x[M, K] (* x_scale)) · dequant(w, w_scale)[N, K]^T (+ bias[N]), w packed e2m1 codes with one
// E8M0 scale per 32 values (include/tgemm/fp4.h), x as the A operand of mma.sync.m16n8k16 (16
// tokens a tile, rows past M padded with the last token's, their sums dropped), the decoded
// weight as B, sums in fp32. The
// activation format A is one of
//   bf16, fp16   gemm_a16w4: x as it is, B decoded to x's type;
//   Fp8E4M3      gemm_a8w4: e4m3 pairs widened to fp16 (cvt.rn.f16x2.e4m3x2, exact), B decoded to
//                fp16, each token's sum times its fp32 x_scale in the epilogue.
//
// Why: the GEMV (sm90_mxfp4_gemv.cuh) meets every token with CUDA-core FMAs, and at M = 16 it is
// bound by FMA issue at 22-35x the 4-bit streaming floor; the dequantize path moves about 8x the
// 4-bit bytes. Here the codes are read once (16 bytes a lane, the non-allocating L1 path) and
// decoded in registers straight into the B fragments, each decoded fragment serving the 16
// tokens of every token tile.
//
// Decode (per 16-byte chunk = 32 codes = one scale block, so a lane meets one scale byte a
// chunk): register j of word q pairs codes j and j + 4 of the word (nibbles j and j + 4, bits 4j
// and 16 + 4j), so one shift puts both codes at the bottom of their 16-bit halves; their
// magnitude bits (e1 e0 m) are then placed at the bottom of the 16-bit exponent (bf16 bits 8..6,
// fp16 bits 11..9) and the sign at bit 15: a bf16 of value e2m1 * 2^-126, an fp16 of value
// e2m1 * 2^-14 (the code with e = 0 lands on the subnormal of the same value), four integer
// instructions a register. One 16-bit multiply by 2^126 * 2^(s - 127) (bf16) or 2^14 * 2^(s -
// 127) (fp16) then gives the scaled weight: both factors are powers of two, so the product is
// rounded once from the exact e2m1 * 2^(s - 127), as the dequantize path rounds it (bf16: exact
// for every finite value; fp16: rounded to fp16's range as there). That factor is a normal 16-bit
// number for s in [0, 128] (bf16) or [99, 128] (fp16), the scales of weights of magnitude up to
// 12; a chunk with another scale (NaN 255 included) is decoded through fp32 instead
// (decode_chunk_fp32), the same rounding. The scale is folded into B rather than applied to the
// fp32 sums because the 16 k of one MMA come from four lanes' chunks, i.e. four scale blocks.
// The A fragments use the same k pairing: x's 16-byte chunk (8 k) is permuted with one PRMT a
// register (16-bit x) or one PRMT + one cvt (e4m3 x).
//
// Layout: a CTA is W warps over RB n8 blocks of weight rows (8 * RB rows); a k-step is 128 k:
// lane (g, t) of a quad reads the 16-byte chunk of scale block 4 step + t of row g of each n8
// block and tokens g + 8 r's (r < 2 MT) 32 matching x values (through L1: every CTA re-reads x). The
// warps split the CTA's k-steps, split_k CTAs (a (1, split_k, 1) cluster) split K further:
// split_k * W balanced contiguous parts. U k-steps are loaded before their MMAs; chunks past K are
// not read (predicated loads, zeros: their B and A are 0). Reduction as the dense weight-as-B
// kernel's (sm90_skinny_mma_weight_b.cuh): each warp's MT x RB x 32 float4 fragments into shared
// memory, the CTA's sum in warp order, the other ranks' sums into rank 0 by st.async on its
// mbarrier, summed in rank order: bit-identical run to run, no workspace.
//
// Preconditions (src/fp4/fp4.cu checks them): an sm_90 image; 1 <= M <= 16 MT, N >= 1, K % 32 == 0,
// 32 <= K < 2^31; x's and w's rows 16-byte aligned (data and row strides; a single row's stride
// unused); out, bias, x_scale element-aligned; grid (ceil(N / (8 RB)), split_k), block 32 W, a
// (1, split_k, 1) cluster when split_k > 1 (split_k <= 8), dynamic shared memory
// Mxfp4MmaShape::smem_bytes(split_k).
//
// Test: tests/gpu/test_fp4.cpp (random M 5..32 problems of every format against the fp32
// reference of the dequantized operands, N tails, bias, every out dtype, NaN scales);
// bench: bench/torch_bench.py --a16w4.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/mxfp4.cuh"
#include "kernels/common/numeric.cuh"
#include "kernels/sm90/sm90_mxfp4_gemv.cuh"
#include "kernels/sm90/sm90_skinny_common.cuh"

namespace tgemm::kernels {

template <int MT, int RB, int W, int U>
struct Mxfp4MmaShape {
  static_assert(MT == 1 || MT == 2, "MT: 1 or 2 tiles of 16 tokens");
  static_assert(RB >= 1 && RB <= 4, "RB: 1..4 n8 blocks of weight rows");
  static_assert(W >= MT * RB && W <= 16, "W: MT RB..16 warps (a CTA's threads cover its MT x RB x 32 items)");
  static constexpr int kTokens = 16 * MT;
  static constexpr int kRows = 8 * RB;
  static constexpr int kThreads = 32 * W;
  static constexpr int kKStep = 4 * mxfp4::kBlock;  // a quad's four chunks
  static constexpr int kItems = MT * RB * 32;       // float4 fragments of a warp (and of a CTA's sum)
  static constexpr int kPartBytes = kItems * 16;
  static constexpr int smem_bytes(int split_k) {
    return W * kPartBytes + (split_k > 1 ? split_k * kPartBytes + 16 : 0);
  }
};

namespace mxfp4_mma_detail {

// What the kernel needs of an activation format: the 16-bit MMA type, x's storage unit, the
// lane's loads of one token's 32 values at element k (zeros where !in), and the 16 A registers
// made of them (register 4q + j: values 8q + j and 8q + j + 4).
template <typename A>
struct MmaActivation {
  using Mma = A;  // bf16, fp16
  using Unit = A;
  static constexpr bool kTokenScaled = false;
  static constexpr int kLoads = 4;  // 16-byte loads of one token's 32 values
  __device__ __forceinline__ static void load(const Unit* row, std::int64_t k, bool in, uint4 (&r)[kLoads]) {
#pragma unroll
    for (int q = 0; q < 4; ++q) r[q] = skinny_detail::load_activation_if(row + k + 8 * q, in);
  }
  __device__ __forceinline__ static void fragments(const uint4 (&r)[kLoads], std::uint32_t (&a)[16]) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      a[4 * q + 0] = __byte_perm(r[q].x, r[q].z, 0x5410);
      a[4 * q + 1] = __byte_perm(r[q].x, r[q].z, 0x7632);
      a[4 * q + 2] = __byte_perm(r[q].y, r[q].w, 0x5410);
      a[4 * q + 3] = __byte_perm(r[q].y, r[q].w, 0x7632);
    }
  }
};

// Two e4m3 bytes (low byte to the low half) as an fp16 pair: every e4m3 value, NaN included, is
// an fp16 value.
__device__ __forceinline__ std::uint32_t e4m3x2_to_f16x2(std::uint32_t v) {
  std::uint32_t r;
  asm("{\n .reg .b16 lo;\n cvt.u16.u32 lo, %1;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n}" : "=r"(r) : "r"(v));
  return r;
}

template <>
struct MmaActivation<Fp8E4M3> {
  using Mma = fp16;
  using Unit = std::uint8_t;
  static constexpr bool kTokenScaled = true;
  static constexpr int kLoads = 2;
  __device__ __forceinline__ static void load(const Unit* row, std::int64_t k, bool in, uint4 (&r)[kLoads]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) r[h] = skinny_detail::load_activation_if(row + k + 16 * h, in);
  }
  __device__ __forceinline__ static void fragments(const uint4 (&r)[kLoads], std::uint32_t (&a)[16]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::uint32_t words[4] = {r[h].x, r[h].y, r[h].z, r[h].w};
#pragma unroll
      for (int qq = 0; qq < 2; ++qq) {
        const std::uint32_t lo = words[2 * qq], hi = words[2 * qq + 1];  // values 8q..8q+3, 8q+4..8q+7
#pragma unroll
        for (int j = 0; j < 4; ++j) a[4 * (2 * h + qq) + j] = e4m3x2_to_f16x2(__byte_perm(lo, hi, j | ((j + 4) << 4)));
      }
    }
  }
};

// Bits of the 16-bit decode: where the magnitude bits go, and the scale factor's range that is a
// normal number of the type.
template <typename T>
struct Decode;
template <>
struct Decode<bf16> {
  static constexpr int kMagShift = 6;  // e1 e0 m at bits 8..6: value e2m1 * 2^-126
  static constexpr std::uint32_t kMagMask = 0x01c001c0u;
  // 2^126 * 2^(s - 127) = 2^(s - 1), exponent field s + 126: normal for s in [0, 128].
  __device__ __forceinline__ static bool fast(std::uint32_t s) { return s <= 128u; }
  __device__ __forceinline__ static std::uint32_t factor(std::uint32_t s) { return ((s + 126u) << 7) * 0x10001u; }
  // mul.rn.bf16x2 (sm_90) has no flush-to-zero form: the code 0.5, decoded to the subnormal
  // 2^-127, is kept.
  __device__ __forceinline__ static std::uint32_t mul(std::uint32_t a, std::uint32_t b) {
    std::uint32_t r;
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  __device__ __forceinline__ static std::uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 r = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&r);
  }
};
template <>
struct Decode<fp16> {
  static constexpr int kMagShift = 9;  // e1 e0 m at bits 11..9: value e2m1 * 2^-14
  static constexpr std::uint32_t kMagMask = 0x0e000e00u;
  // 2^14 * 2^(s - 127) = 2^(s - 113), exponent field s - 98: normal for s in [99, 128].
  __device__ __forceinline__ static bool fast(std::uint32_t s) { return s - 99u <= 29u; }
  __device__ __forceinline__ static std::uint32_t factor(std::uint32_t s) { return ((s - 98u) << 10) * 0x10001u; }
  // No .ftz: subnormal inputs and results are kept.
  __device__ __forceinline__ static std::uint32_t mul(std::uint32_t a, std::uint32_t b) {
    std::uint32_t r;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  __device__ __forceinline__ static std::uint32_t pack(float lo, float hi) {
    const __half2 r = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&r);
  }
};

// The chunk's 32 codes, scaled, as the 16 B registers (register 4q + j: codes j and j + 4 of word q).
template <typename T>
__device__ __forceinline__ void decode_chunk(const uint4& c, std::uint32_t f, std::uint32_t (&b)[16]) {
  const std::uint32_t words[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
  for (int q = 0; q < 4; ++q)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t v = words[q] >> (4 * j);
      const std::uint32_t bits = ((v << Decode<T>::kMagShift) & Decode<T>::kMagMask) | ((v << 12) & 0x80008000u);
      b[4 * q + j] = Decode<T>::mul(bits, f);
    }
}

struct BFragments {
  std::uint32_t v[16];
};

// The same through fp32 (scales whose factor is not a normal 16-bit number): each value
// e2m1 * 2^(s - 127) computed exactly (or inf, NaN) in fp32 and rounded once to T. Out of line
// and returned by value: the rarely taken path costs the main loop no code, and no array of the
// caller is addressed (an array passed by reference would live in local memory).
template <typename T>
__device__ __noinline__ BFragments decode_chunk_fp32(uint4 c, std::uint32_t s) {
  BFragments b;
  const float sf = mxfp4::e8m0_value(s);
  const std::uint32_t words[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
  for (int q = 0; q < 4; ++q)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t v = words[q] >> (4 * j);
      b.v[4 * q + j] = Decode<T>::pack(mxfp4::e2m1_value(v & 15u) * sf, mxfp4::e2m1_value((v >> 16) & 15u) * sf);
    }
  return b;
}

// Token m (nothing past M), output column n (nothing past N): v (* x_scale[m]) + bias[n], rounded
// once to out's type.
template <bool TOKEN_SCALED>
__device__ __forceinline__ void store(const Mxfp4GemvParams& p, int m, int n, float v) {
  if (m >= p.m || n >= p.n) return;
  if constexpr (TOKEN_SCALED) v *= static_cast<const float*>(p.x_scale)[static_cast<std::int64_t>(m) * p.ld_x_scale];
  if (p.bias != nullptr) v += mxfp4_gemv_detail::load_as_float(p.bias, p.bias_type, n);
  mxfp4_gemv_detail::store_from_float(p.out, p.out_type, static_cast<std::int64_t>(m) * p.ldo + n, v);
}

}  // namespace mxfp4_mma_detail

template <typename A, int MT, int RB, int W, int U>
__global__ void __launch_bounds__(32 * W) sm90_mxfp4_mma(const Mxfp4GemvParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched there: the library's images are sm_90a
#else
  namespace md = mxfp4_mma_detail;
  namespace sd = skinny_detail;
  using Shape = Mxfp4MmaShape<MT, RB, W, U>;
  using Act = md::MmaActivation<A>;
  using T = typename Act::Mma;
  extern __shared__ float4 smem_parts[];  // [W][MT][RB][32] warp parts, [split_k][MT][RB][32] rank slots, mbarrier
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  const int split_k = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const int row0 = static_cast<int>(blockIdx.x) * Shape::kRows;
  const int blocks = p.k / mxfp4::kBlock;
  const int steps = (blocks + 3) / 4;
  const int parts = split_k * W, pidx = rank * W + warp;
  const int s_begin = static_cast<int>(static_cast<std::int64_t>(steps) * pidx / parts);
  const int s_end = static_cast<int>(static_cast<std::int64_t>(steps) * (pidx + 1) / parts);
  float4* const slots = smem_parts + W * Shape::kItems;
  const std::uint32_t bar = sd::smem_addr(slots + split_k * Shape::kItems);
  if (split_k > 1) {
    if (rank == 0 && threadIdx.x == 0) {
      sd::mbar_init(bar, 1);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      sd::mbar_arrive_expect(bar, static_cast<std::uint32_t>((split_k - 1) * Shape::kPartBytes));
    }
    sd::cluster_arrive_relaxed();
  }

  // Two accumulator sets (even and odd MMAs of a chunk): two dependency chains instead of one.
  float acc[2][MT][RB][4];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int b = 0; b < RB; ++b) acc[h][mt][b][0] = acc[h][mt][b][1] = acc[h][mt][b][2] = acc[h][mt][b][3] = 0.0f;
  const std::uint8_t* wrow[RB];
  const std::uint8_t* srow[RB];
#pragma unroll
  for (int b = 0; b < RB; ++b) {
    const std::int64_t r = min(row0 + 8 * b + g, p.n - 1);
    wrow[b] = p.w + r * p.ldw;
    srow[b] = p.w_scale + r * p.ld_scale;
  }
  const auto* x = static_cast<const typename Act::Unit*>(p.x);
  // Token g + 8 r (r < 2 MT): A row g + 8 (r % 2) of token tile r / 2.
  const typename Act::Unit* xrow[2 * MT];
#pragma unroll
  for (int r = 0; r < 2 * MT; ++r) xrow[r] = x + static_cast<std::int64_t>(min(g + 8 * r, p.m - 1)) * p.ldx;

#pragma unroll 1
  for (int s0 = s_begin; s0 < s_end; s0 += U) {
    // Every weight chunk, scale and x chunk of U k-steps first; chunks past the warp's range or K
    // are not read.
    uint4 wv[U][RB];
    std::uint32_t sv[U][RB];
    uint4 xv[U][2 * MT][Act::kLoads];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int blk = 4 * (s0 + u) + t;
      const bool in = s0 + u < s_end && blk < blocks;
#pragma unroll
      for (int b = 0; b < RB; ++b) {
        wv[u][b] = sd::load_weight_if(wrow[b] + static_cast<std::int64_t>(blk) * 16, in);
        sv[u][b] = in ? __ldg(srow[b] + blk) : 127u;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int blk = 4 * (s0 + u) + t;
      const bool in = s0 + u < s_end && blk < blocks;
      const std::int64_t k = static_cast<std::int64_t>(blk) * mxfp4::kBlock;
#pragma unroll
      for (int r = 0; r < 2 * MT; ++r) Act::load(xrow[r], k, in, xv[u][r]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (s0 + u >= s_end) break;  // warp-uniform
      std::uint32_t a[2 * MT][16];
#pragma unroll
      for (int r = 0; r < 2 * MT; ++r) Act::fragments(xv[u][r], a[r]);
#pragma unroll
      for (int b = 0; b < RB; ++b) {
        std::uint32_t bf[16];
        if (md::Decode<T>::fast(sv[u][b])) {
          md::decode_chunk<T>(wv[u][b], md::Decode<T>::factor(sv[u][b]), bf);
        } else {
          const md::BFragments f = md::decode_chunk_fp32<T>(wv[u][b], sv[u][b]);
#pragma unroll
          for (int e = 0; e < 16; ++e) bf[e] = f.v[e];
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int i = 0; i < 8; ++i)
            sd::mma_m16n8k16<T>(acc[i % 2][mt][b], a[2 * mt][2 * i], a[2 * mt + 1][2 * i], a[2 * mt][2 * i + 1],
                                a[2 * mt + 1][2 * i + 1], bf[2 * i], bf[2 * i + 1]);
      }
    }
  }

  // Every warp's fragments into this CTA's shared memory, part `warp`; the CTA's sum in warp order.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int b = 0; b < RB; ++b)
      smem_parts[((warp * MT + mt) * RB + b) * 32 + lane] =
          make_float4(acc[0][mt][b][0] + acc[1][mt][b][0], acc[0][mt][b][1] + acc[1][mt][b][1],
                      acc[0][mt][b][2] + acc[1][mt][b][2], acc[0][mt][b][3] + acc[1][mt][b][3]);
  __syncthreads();
  const int i = static_cast<int>(threadIdx.x);
  if (i >= Shape::kItems) return;  // whole warps (kItems is a multiple of 32); they have arrived
  float4 v = smem_parts[i];
  for (int q = 1; q < W; ++q) {
    const float4 o = smem_parts[q * Shape::kItems + i];
    v.x += o.x;
    v.y += o.y;
    v.z += o.z;
    v.w += o.w;
  }
  if (split_k > 1) {
    sd::cluster_wait_acquire();  // the cluster's CTAs run; rank 0's mbarrier is initialised
    if (rank != 0) {
      sd::st_async_16(sd::map_cluster_rank(sd::smem_addr(slots + rank * Shape::kItems + i), 0), v,
                      sd::map_cluster_rank(bar, 0));
      return;
    }
    sd::mbar_wait(bar, 0);
    for (int r = 1; r < split_k; ++r) {
      const float4 o = slots[r * Shape::kItems + i];
      v.x += o.x;
      v.y += o.y;
      v.z += o.z;
      v.w += o.w;
    }
  }
  // Item i: fragment (mt, b) = (i / (32 RB), i / 32 % RB) (rows row0 + 8 b ..) of lane l = i % 32:
  // tokens 16 mt + l / 4 and + 8, rows 2 (l % 4) and + 1.
  const int l = i % 32, n0 = row0 + 8 * (i / 32 % RB) + 2 * (l % 4), m0 = 16 * (i / (32 * RB)) + l / 4;
  md::store<Act::kTokenScaled>(p, m0, n0, v.x);
  md::store<Act::kTokenScaled>(p, m0, n0 + 1, v.y);
  md::store<Act::kTokenScaled>(p, m0 + 8, n0, v.z);
  md::store<Act::kTokenScaled>(p, m0 + 8, n0 + 1, v.w);
#endif
}

}  // namespace tgemm::kernels
