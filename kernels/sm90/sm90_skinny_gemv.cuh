// GEMV kernel for sm_90a: out[M, N] = x[M, K] · w[N, K]^T (+ bias[N]) for M <= M_MAX (1, 2, 4) on
// CUDA cores, for 16-bit inputs (bf16, fp16) and the 8-bit ones of gemm_a8w8 (FP8 e4m3, INT8),
// one weight row per warp or per group of warps, with the weight read the way the streaming-read
// floor kernel reads memory.
//
// Why: at M <= 4 the FLOPs are 2·M per weight element, far below what 132 SMs' FMA units do in
// the time the weight takes to stream, so tensor cores buy nothing, and the MMA kernels'
// structure (16-row tiles, k-block batches, cluster split-K) costs per-launch time the floor
// kernel does not pay (1.1-3 us above the floor at every size). Here a warp reads one contiguous stretch of one weight
// row, 512 bytes per load instruction, CHUNKS loads in flight per lane before any arithmetic, and the CTA sums its
// warps through shared memory: no clusters, no workspace, no atomics.
//
// Layout: a CTA is WARPS warps; a weight row is split into `segs` contiguous segments (segs a
// power of two <= WARPS, chosen by the host so that a lane has about CHUNKS 16-byte chunks of
// its segment), so a CTA covers WARPS / segs rows, warp w taking segment w % segs of row
// w / segs. Lane l reads chunks l, l + 32, ... of its segment (a chunk: 8 consecutive k), CHUNKS
// at a time together with the same 8 k of every token's x (read through L1; tokens past M read
// the last token's), then multiplies them in fp32. The segments of a row are summed in segment
// order after a warp-shuffle reduction, so the result is bit-identical run to run; the bias is
// added once in fp32 before the output cast.
// K % 8 != 0: the chunk that straddles K is read element by element (zeros past K) after the
// main loop.
// 8-bit inputs (a8w8): a chunk is 16 consecutive k, so a lane streams the same bytes per load
// as for 16-bit inputs and a row is half the bytes. FP8: each 32-bit word of the weight chunk is
// converted once (cvt.rn.f16x2.e4m3x2 through cuda_fp8.h, then half2 -> float2: exact, e4m3
// values are fp16 values) and met by every token's matching word, products summed in fp32. INT8:
// __dp4a on the raw words, summed exactly in int32 (as cuBLASLt's IMMA kernels; no overflow while
// K < 2^17, |products| <= 2^14). The sums meet the scales once, in the store: out = acc *
// x_scale[m] * w_scale[n] (+ bias), fp32, the scales read from device memory (no host read,
// graph-safe). K is a multiple of 16 (the host's check): no chunk straddles K.
//
// Preconditions (the host's can_implement checks them): an sm_90 image; 1 <= M <= M_MAX;
// N >= 1; 1 <= K <= 2^30 (8-bit: a multiple of 16); x and w 16-byte aligned with lda, ldb
// multiples of 16 bytes (lda ignored when M = 1, ldb when N = 1); 8-bit: x_scale and w_scale set;
// out, bias element-aligned; segs in {1, 2, 4, ..., WARPS}; grid ceil(N / (WARPS / segs)), block
// 32 * WARPS, no dynamic shared memory.
//
// Test: tests/gpu/test_skinny.cu (every variant against the fp32 reference with tails, bias,
// every output dtype; the sanitizer subset), tests/gpu/test_skinny_a8w8.cpp (the 8-bit variants
// against the reference of the dequantized operands, every scale recipe).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/numeric.cuh"
#include "kernels/sm90/sm90_skinny_common.cuh"

namespace tgemm::kernels {

namespace gemv_detail {

// Two 16-bit elements of a 32-bit word as floats (low half first).
template <typename In>
__device__ __forceinline__ float2 unpack2(std::uint32_t v) {
  if constexpr (std::is_same_v<In, bf16>) {
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
  } else {
    return __half22float2(__halves2half2(__ushort_as_half(static_cast<unsigned short>(v & 0xffffu)),
                                         __ushort_as_half(static_cast<unsigned short>(v >> 16))));
  }
}

// acc += dot(w, x) over the 8 elements of a chunk (16-bit In).
template <typename In>
__device__ __forceinline__ float dot8(const uint4& w, const uint4& x, float acc) {
  const std::uint32_t ws[4] = {w.x, w.y, w.z, w.w};
  const std::uint32_t xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = unpack2<In>(ws[i]);
    const float2 b = unpack2<In>(xs[i]);
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
  return acc;
}

// Four FP8 e4m3 elements of a 32-bit word as floats, in k order (exact).
__device__ __forceinline__ void fp8x4_to_float(std::uint32_t v, float (&f)[4]) {
  const __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v & 0xffffu), __NV_E4M3);
  const __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v >> 16), __NV_E4M3);
  const float2 a = __half22float2(__half2(lo));
  const float2 b = __half22float2(__half2(hi));
  f[0] = a.x;
  f[1] = a.y;
  f[2] = b.x;
  f[3] = b.y;
}

// acc[m] += dot(w, x[m]) over one chunk, for every token. 16-bit In: dot8 per token. FP8: each
// weight word converted once, then met by each token's word. INT8: __dp4a, exact in int32.
template <typename In, int M_MAX>
__device__ __forceinline__ void dot_tokens(const uint4& w, const uint4 (&x)[M_MAX], SkinnyAcc<In> (&acc)[M_MAX]) {
  if constexpr (std::is_same_v<In, fp8e4m3>) {
    const std::uint32_t ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float wf[4];
      fp8x4_to_float(ws[i], wf);
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) {
        const std::uint32_t xs[4] = {x[m].x, x[m].y, x[m].z, x[m].w};
        float xf[4];
        fp8x4_to_float(xs[i], xf);
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[m] = fmaf(wf[e], xf[e], acc[m]);
      }
    }
  } else if constexpr (std::is_same_v<In, std::int8_t>) {
#pragma unroll
    for (int m = 0; m < M_MAX; ++m) {
      acc[m] = __dp4a(static_cast<int>(w.x), static_cast<int>(x[m].x), acc[m]);
      acc[m] = __dp4a(static_cast<int>(w.y), static_cast<int>(x[m].y), acc[m]);
      acc[m] = __dp4a(static_cast<int>(w.z), static_cast<int>(x[m].z), acc[m]);
      acc[m] = __dp4a(static_cast<int>(w.w), static_cast<int>(x[m].w), acc[m]);
    }
  } else {
#pragma unroll
    for (int m = 0; m < M_MAX; ++m) acc[m] = dot8<In>(w, x[m], acc[m]);
  }
}

// A lane's chunks in the segment's last pass that lie past its whole chunks are not read: each
// load is a predicated PTX load (skinny_detail::load_weight_if / load_activation_if), so the pass
// is straight-line code with no extra traffic. On an H200, a select around each load
// (`in ? load : 0`) ties it on the backend's best tiles and is 1-6% slower on tiles that run only
// last passes (w8 c4 at K = 5120); clamped re-reads zeroed after the load are 5-25% slower.
using skinny_detail::load_activation_if;
using skinny_detail::load_weight_if;

template <int M_MAX>
struct TokenSums {
  float v[M_MAX];
};

// K % 8 != 0: the chunk that straddles K (chunk K / 8, in the last segment), element by element
// with zeros past K, for the lane whose stride reaches it (zeros for every other lane). Out of
// line, and its row, segment and pointers derived afresh (thread_index and cta_index are opaque
// reads) rather than kept live through the main loop: kept, they cost 8-16 bytes of spills at the
// register caps below, and inline, the code of this rarely taken path sat between the main loop
// and the stores (the same placement cost the weight-as-B MMA kernel 0.1-0.2 us).
template <typename In, int M_MAX, int WARPS>
__device__ __noinline__ TokenSums<M_MAX> straddle_chunk(const In* w, const In* x, int m_count, int n, int k,
                                                      std::int64_t lda, std::int64_t ldb, int segs) {
  namespace sd = skinny_detail;
  TokenSums<M_MAX> r;
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) r.v[m] = 0.0f;
  const int t_lane = sd::thread_index() % 32;
  const int t_warp = sd::thread_index() / 32;
  const int t_log_segs = __ffs(segs) - 1;
  const int t_seg = t_warp & (segs - 1);
  const int t_row = sd::cta_index() * (WARPS >> t_log_segs) + (t_warp >> t_log_segs);
  const int t_chunks = (k + 7) >> 3;
  const int cs = k >> 3;
  const int t_begin = static_cast<int>((static_cast<std::int64_t>(t_chunks) * t_seg) >> t_log_segs);
  const int t_end = static_cast<int>((static_cast<std::int64_t>(t_chunks) * (t_seg + 1)) >> t_log_segs);
  if (t_row < n && cs < t_end && cs >= t_begin && (cs - t_begin) % 32 == t_lane) {
    const In* w_s = w + static_cast<std::int64_t>(t_row) * ldb + 8 * static_cast<std::int64_t>(cs);
    const uint4 wv_s = sd::load_partial_chunk(w_s, k - 8 * cs);
#pragma unroll
    for (int m = 0; m < M_MAX; ++m) {
      const In* x_s = x + static_cast<std::int64_t>(min(m, m_count - 1)) * lda + 8 * static_cast<std::int64_t>(cs);
      r.v[m] = dot8<In>(wv_s, sd::load_partial_chunk(x_s, k - 8 * cs), 0.0f);
    }
  }
  return r;
}

}  // namespace gemv_detail

// Resident CTAs an SM asked of ptxas: the registers a lane's loads in flight take (CHUNKS weight
// chunks and as many of x per token, 4 each) plus 16 for the rest, out of 64 K. Left free, ptxas
// took ~70 registers at M = 1, CHUNKS = 4 (3 CTAs of 8 warps an SM) where 48 suffice (5): with
// 4 an SM, 576 one-row CTAs (576 x 7168) ran in two waves and took ~1.3 us more than in one.
// 8-bit inputs add 8 (EXTRA): at the 16-bit budget ptxas (CUDA 13.0) spilled 12-20 bytes for FP8 at
// M = 1 and 2, CHUNKS = 4 (the conversions' floats and temporaries) and for INT8 at M = 2,
// CHUNKS = 4. Their rows hold half the chunks of a 16-bit row of the same K, so their grids have
// half the CTAs of the 16-bit launch that needed the tighter budget.
template <int M_MAX, int WARPS, int CHUNKS, int EXTRA = 0>
constexpr int gemv_min_blocks() {
  const int regs = 4 * CHUNKS * (1 + M_MAX) + 16 + EXTRA;
  const int blocks = 65536 / (32 * WARPS * regs);
  return blocks < 1 ? 1 : blocks;
}

template <typename In, int M_MAX, int WARPS, int CHUNKS>
__global__ void __launch_bounds__(32 * WARPS, gemv_min_blocks<M_MAX, WARPS, CHUNKS, kIs8Bit<In> ? 8 : 0>())
    sm90_skinny_gemv(const SkinnyParams p, const int segs) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched there: the host checks the loaded image's PTX arch first
#else
  static_assert(M_MAX >= 1 && M_MAX <= 8, "M_MAX: 1..8 tokens");
  static_assert(WARPS >= 1 && WARPS <= 32 && (WARPS & (WARPS - 1)) == 0, "WARPS: a power of two");
  namespace sd = skinny_detail;
  namespace gd = gemv_detail;
  using Acc = SkinnyAcc<In>;
  // log2 of the elements a 16-byte chunk holds (8 or 16).
  constexpr int kChunkShift = kIs8Bit<In> ? 4 : 3;
  __shared__ Acc partial[WARPS][M_MAX];

  // segs is a power of two (the host's GemvTile::segs): shifts, no run-time division, and
  // 32-bit indices (N < 2^31, K <= 2^30), so that few registers stay live through the main loop
  // (64-bit divisions and indices cost 16-24 bytes of spills at the 48 registers that one wave of
  // 576 CTAs needs).
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int log_segs = __ffs(segs) - 1;
  const int seg = warp & (segs - 1);
  const int row = static_cast<int>(blockIdx.x) * (WARPS >> log_segs) + (warp >> log_segs);
  const int chunks = (p.k + kChunkElems<In> - 1) >> kChunkShift;  // per row, the last one possibly partial
  const int full_chunks = p.k >> kChunkShift;
  const int c_begin = static_cast<int>((static_cast<std::int64_t>(chunks) * seg) >> log_segs);
  const int c_end = static_cast<int>((static_cast<std::int64_t>(chunks) * (seg + 1)) >> log_segs);

  Acc acc[M_MAX];
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) acc[m] = Acc(0);

  if (row < p.n) {
    // 16-byte chunks (x and w rows are 16-byte aligned): chunk c + 32 j is base + immediate.
    const uint4* w_row = reinterpret_cast<const uint4*>(static_cast<const In*>(p.w) + static_cast<std::int64_t>(row) * p.ldb);
    // Token rows, tokens past M clamped to the last (their sums are discarded), so the loads
    // below carry no per-token branch.
    const uint4* x_rows[M_MAX];
#pragma unroll
    for (int m = 0; m < M_MAX; ++m)
      x_rows[m] = reinterpret_cast<const uint4*>(static_cast<const In*>(p.x) +
                                                 static_cast<std::int64_t>(min(m, p.m - 1)) * p.lda);
    const int c_full = min(c_end, full_chunks);
#pragma unroll 1
    for (int c0 = c_begin + lane; c0 < c_end; c0 += 32 * CHUNKS) {
      // The weight chunks and the x chunks they meet are loaded together, before any
      // arithmetic: x's first reads miss L1, and loading it only after the weight arrived cost
      // one L2 round trip per chunk (4.66 against ~4.1 us on the 7.9 MiB weight).
      uint4 wv[CHUNKS];
      uint4 xv[CHUNKS][M_MAX];
      if (c0 + 32 * (CHUNKS - 1) < c_full) {
        // All CHUNKS whole and inside the segment: the loads go out back to back.
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) wv[j] = sd::load_weight(w_row + c0 + 32 * j);
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j)
#pragma unroll
          for (int m = 0; m < M_MAX; ++m) xv[j][m] = sd::load_activation(x_rows[m] + c0 + 32 * j);
      } else {
        // The segment's last pass: whole chunks only (zeros past them add nothing); the chunk
        // that straddles K, if any, is added after the loop. Predicated loads (gd::load_*_if).
#pragma unroll
        for (int j = 0; j < CHUNKS; ++j) {
          const int c = c0 + 32 * j;
          const bool in = c < c_full;
          wv[j] = gd::load_weight_if(w_row + c, in);
#pragma unroll
          for (int m = 0; m < M_MAX; ++m) xv[j][m] = gd::load_activation_if(x_rows[m] + c, in);
        }
      }
#pragma unroll
      for (int j = 0; j < CHUNKS; ++j) gd::dot_tokens<In, M_MAX>(wv[j], xv[j], acc);
    }
  }
  // K % 8 != 0: the chunk that straddles K, out of line (gd::straddle_chunk), summed last in the
  // lane that reads it, the same place every run. 8-bit In: K % 16 == 0, never.
  if constexpr (!kIs8Bit<In>) {
    if ((p.k & 7) != 0) {
      const auto t = gd::straddle_chunk<In, M_MAX, WARPS>(static_cast<const In*>(p.w), static_cast<const In*>(p.x), p.m,
                                                          p.n, p.k, p.lda, p.ldb, segs);
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) acc[m] += t.v[m];
    }
  }
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], off);
  }
  if (lane == 0) {
    const int w = sd::thread_index() / 32;
#pragma unroll
    for (int m = 0; m < M_MAX; ++m) partial[w][m] = acc[m];
  }
  __syncthreads();
  // One thread per (row of the CTA, token): the row's segments in order. The indices are derived
  // afresh (sd::thread_index is an opaque read) rather than kept live through the main loop.
  const int t = sd::thread_index();
  const int rows_per_cta = WARPS >> log_segs;
  if (t < rows_per_cta * M_MAX) {
    const int r = t / M_MAX, m = t % M_MAX;
    const int n = static_cast<int>(blockIdx.x) * rows_per_cta + r;
    if (m < p.m && n < p.n) {
      Acc sum = partial[r * segs][m];
      for (int q = 1; q < segs; ++q) sum += partial[r * segs + q][m];
      if constexpr (kIs8Bit<In>) {
        sd::store_element(p, m, n, sd::dequantize<In>(p, m, n, sum));
      } else if (p.bias_type == kSkinnyNone && p.activation == 0 &&
                 p.out_type == sd::kOwnOutType<In>) {  // no switch on the common path
        static_cast<In*>(p.out)[static_cast<std::int64_t>(m) * p.ldo + n] = from_float<In>(sum);
      } else {
        sd::store_element(p, m, n, sum);
      }
    }
  }
#endif
}

}  // namespace tgemm::kernels
