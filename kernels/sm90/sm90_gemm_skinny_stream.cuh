// Skinny (decode) GEMM for sm_90a, version 3: a persistent stream-K grid, x staged in shared
// memory, and a split-K reduction through global memory. Same product and element types as
// sm90_gemm_skinny.cuh (out[M, N] = x[M, K] · w[N, K]^T (+ bias[N]), bf16/fp16 in, fp32
// accumulation, bf16/fp16/fp32 out). M_TILE 8 covers M = 1..8 (A rows 8-15 are zeros, the x
// stage holds 8 tokens per k-block: twice the k-blocks of M_TILE 16 in the same bytes), 16 covers
// M = 1..16, 32 covers M = 17..32.
//
// - Operands swapped against versions 1-2: the weight is the MMA's B operand (mma.m16n8k16: n8 =
//   8 weight rows, k16) and x the A operand (m16 = 16 tokens). A lane's B fragment is two
//   registers of one weight row, so one 16-byte load (8 k of row g) is exactly {b0, b1} of two
//   MMAs (words 0-1 and 2-3, with k permuted identically in A and B as in version 1): the loaded
//   registers feed the MMAs as they are. (As the A operand, rows g and g + 8 must be interleaved
//   in one register quad, which cost a register copy of every loaded batch: ~32 registers.)
// - Work units: (row tile of BLOCK_N rows, 32-wide k-block), numbered tile-major
//   (u = tile * KB + kb, KB = ceil(K / 32)). CTA c owns the contiguous units
//   [c * Q, min((c + 1) * Q, U)); the host picks Q = ceil(U / slots), slots = SMs x CTAs per SM
//   (at most XKB), so the grid is one wave: launch and first-load latency are paid once, every CTA
//   starts loading at once, and every SM streams the same bytes (balanced to one k-block).
// - x: the CTA's tokens (< M) x its k-blocks (at most XKB) are copied once into shared memory by
//   cp.async at kernel start (16-byte chunks; k >= K zero-filled), overlapping the first weight
//   batch. A fragments are built from two LDS.128 (tokens g and g + 8) right before the MMAs.
//   Tokens >= M are never copied: their A rows hold stale shared memory and only produce output
//   rows that are discarded (an MMA's output rows are independent).
// - A CTA walks its units as segments (tile, [kb0, kb1)); in each, the WARPS_N x WARPS_K warps
//   take ROWS_PER_WARP rows x a contiguous WARPS_K-th of the segment's k-blocks, summed through
//   shared memory in warp order. A segment that is a whole tile stores the output directly.
// - Main loop: register batches of UNROLL k-blocks, double-buffered: the next batch's loads are
//   issued before the current batch's MMAs, so a warp keeps one to two batches in flight instead
//   of draining to zero while it computes.
// - A tile split over several CTAs (contributors c_first..c_last, in unit order) is reduced
//   through global memory, without clusters: each contributor stores its fp32 partial (items with
//   a token < M and a row < N) into its workspace slot (CTA c's last segment: slot 2c + 1, its
//   first: 2c; a CTA has at most one of each), then thread 0 releases (fence.acq_rel.gpu) and
//   counts in on counters[c_first] (one counter per split tile). The CTA that brings the count to
//   nc acquires, sums the nc partials in contributor order (SUB threads per item each take every
//   SUB-th contributor in order, then a fixed xor tree), stores the output and resets the counter
//   to zero. Every sum has a fixed order: bit-identical results run to run. The counters are zero
//   before and after every launch; they live in a buffer that the backend owns per (device,
//   stream) and nothing else writes, zeroed once when allocated: so a CUDA graph may replay the
//   launch any number of times, and other solutions may use the per-stream workspace (which holds
//   only the partials, written and read within one launch) between calls.
// - Tails as in version 1: rows past N clamped (results discarded), the last < UNROLL k-blocks of
//   a warp's part one predicated pass of whole 16-byte chunks, K % 8 != 0 one element-wise chunk.
//
// Preconditions (the host side checks them): those of sm90_gemm_skinny (M <= M_TILE, 16-byte
// aligned x and w, lda/ldb multiples of 8, K <= 2^30), plus: U < 2^31; per_cta <= XKB; grid =
// ceil(U / per_cta) <= the counter buffer's length; partials holds 2 * grid * kItems float4
// (16-byte aligned); counters[0, grid) are zero; dynamic shared memory kSmemBytes.
//
// Test: tests/gpu/test_skinny.cu (every variant, the `_pk` ones included). Notes:
// docs/perf-notes.md, skinny section, "Version 3".
#pragma once

#include "kernels/sm90/sm90_gemm_skinny.cuh"

namespace tgemm::kernels {

struct SkinnyStreamArgs {
  float4* partials = nullptr;    // [2 * grid][kItems] float4: split tiles' partials (workspace)
  unsigned* counters = nullptr;  // [grid]: arrivals per split tile, zero at entry and at exit
  int units = 0;                 // U = row tiles x k-blocks (< 2^31)
  int per_cta = 0;               // Q: units per CTA (<= XKB); grid = ceil(U / Q)
  int kb_total = 0;              // KB = ceil(K / 32)
  int prefetch_units = 0;        // units from each CTA's first to prefetch into L2 at start
};

template <int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int XKB>
struct SkinnyStreamShape {
  static_assert(M_TILE == 8 || M_TILE == 16 || M_TILE == 32,
                "M_TILE: 8 (half an m16 MMA tile of tokens), 16 or 32");
  static_assert(ROWS_PER_WARP == 8 || ROWS_PER_WARP == 16 || ROWS_PER_WARP == 32 || ROWS_PER_WARP == 64,
                "ROWS_PER_WARP: 8, 16, 32 or 64 (n8 MMA tiles of weight rows)");
  static_assert(WARPS_N == 1 || WARPS_N == 2 || WARPS_N == 4 || WARPS_N == 8, "WARPS_N: 1-8, power of 2");
  static_assert(WARPS_K == 1 || WARPS_K == 2 || WARPS_K == 4 || WARPS_K == 8, "WARPS_K: 1-8, power of 2");
  static_assert(UNROLL >= 1 && UNROLL <= 8, "UNROLL: 1..8 k-blocks per batch");
  static_assert(XKB >= 4, "XKB: staged k-blocks per CTA");
  static constexpr int kTokenTiles = M_TILE == 8 ? 1 : M_TILE / 16;  // m16 MMA tiles over tokens
  static constexpr bool kHalfTile = M_TILE == 8;      // tokens 8-15 of the MMA tile are zeros
  static constexpr int kRowTiles = ROWS_PER_WARP / 8;  // n8 MMA tiles over weight rows
  static constexpr int kBlockN = ROWS_PER_WARP * WARPS_N;
  static constexpr int kWarps = WARPS_N * WARPS_K;
  static constexpr int kThreads = 32 * kWarps;
  static_assert(kThreads <= 512, "at most 16 warps per CTA");
  static constexpr int kFrags = WARPS_N * kRowTiles * kTokenTiles;
  static constexpr int kItems = kFrags * 32;  // float4 items of one partial
  static constexpr int kPartBytes = kItems * 16;
  static_assert(kPartBytes == kBlockN * kTokenTiles * 16 * 4, "a partial is BLOCK_N x (16 x tiles) fp32");
  static constexpr int kXBytes = XKB * M_TILE * 64;  // x stage: (k-block, token, 64 bytes)
  static constexpr int kFlagOffset = kXBytes + WARPS_K * kPartBytes;
  static constexpr int kSmemBytes = kFlagOffset + 16;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory above the sm_90 limit");
  // 128 registers per thread: 4 CTAs of 128 threads or 2 of 256 per SM; the shared memory of
  // that many (228 KB per SM, 1 KB reserved per CTA) must fit too, so XKB is sized for it.
  static constexpr int kMinBlocks = 512 / kThreads;
  static_assert(228 * 1024 / (kSmemBytes + 1024) >= kMinBlocks,
                "the x stage leaves room for fewer CTAs per SM than the registers allow");
};

namespace skinny_detail {

// One 32-wide k-block of one (16 tokens) x (8 weight rows) tile, weights as the B operand.
// xl, xh: 8 k of tokens g and g + 8 (this lane's chunk t); wv: the same 8 k of weight row g.
// MMA 1 takes words 0-1 of each (k 8t .. 8t + 3), MMA 2 words 2-3 (k 8t + 4 .. 8t + 7): A
// fragment {a0, a1, a2, a3} = {xl.x, xh.x, xl.y, xh.y} (rows g, g + 8; slots 2t.., 2t + 8..).
template <typename In>
__device__ __forceinline__ void mma_k32_wb(float (&c)[4], const uint4& xl, const uint4& xh, const uint4& wv) {
  mma_m16n8k16<In>(c, xl.x, xh.x, xl.y, xh.y, wv.x, wv.y);
  mma_m16n8k16<In>(c, xl.z, xh.z, xl.w, xh.w, wv.z, wv.w);
}

}  // namespace skinny_detail

// grid ceil(units / per_cta), block kThreads, dynamic shared memory kSmemBytes, no cluster.
template <typename In, int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int XKB>
__global__ void __launch_bounds__(
    SkinnyStreamShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, XKB>::kThreads,
    SkinnyStreamShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, XKB>::kMinBlocks)
    sm90_gemm_skinny_stream(const SkinnyParams p, const SkinnyStreamArgs sa) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // built into a pre-Hopper image: never launched there (the host checks the PTX arch)
#else
  using Shape = SkinnyStreamShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, XKB>;
  constexpr int TT = Shape::kTokenTiles;
  constexpr int NR = Shape::kRowTiles;
  constexpr int BN = Shape::kBlockN;
  constexpr int kItems = Shape::kItems;
  constexpr std::uint32_t kXRow = 64;                // bytes of one token's k-block in the stage
  constexpr std::uint32_t kXBlock = M_TILE * kXRow;  // bytes of one k-block in the stage
  namespace sd = skinny_detail;

  extern __shared__ uint4 skinny_stream_smem[];  // x stage, warp partials, flag
  char* const smem = reinterpret_cast<char*>(skinny_stream_smem);
  float4* const parts = reinterpret_cast<float4*>(smem + Shape::kXBytes);
  int* const flag = reinterpret_cast<int*>(smem + Shape::kFlagOffset);
  const std::uint32_t xs = sd::smem_addr(smem);

  // Thread indices are re-read (opaquely, sd::thread_index) where each phase needs them, so that
  // nothing derived from them stays live through the main loop.
  // This CTA's units [u_begin, u_end) and the x stage's first k-block, recomputed where needed
  // (cheap) rather than held in registers through the main loop. Slot s of the stage holds
  // k-block (xs_origin + s) mod KB of every token: a range of fewer than KB units touches
  // consecutive k-blocks from its first (wrapping once at a tile boundary, never onto itself); a
  // longer one (only when XKB >= KB) stages all KB from 0.
  auto u_begin = [&] { return static_cast<int>(blockIdx.x) * sa.per_cta; };  // < U < 2^31
  auto u_count = [&] { return min(sa.units - u_begin(), sa.per_cta); };
  auto xs_origin = [&] { return u_count() >= sa.kb_total ? 0 : u_begin() % sa.kb_total; };
  // Prologue, before the grid dependency: ask L2 for the first prefetch_units units of this CTA's
  // weight (row segments, one bulk prefetch each, clamped to K), so that HBM streams them from the
  // start (and, under programmatic dependent launch, while the previous kernel finishes); nothing
  // that the previous kernel may write (x, out, the workspace, the counters) is touched before.
  if (sa.prefetch_units > 0) {
    const int KB = sa.kb_total;
    const int pf_end = u_begin() + min(u_count(), sa.prefetch_units);
    for (int u = u_begin(); u < pf_end;) {
      const int tile = u / KB, kb0 = u - tile * KB;
      const int kb1 = min(KB, kb0 + (pf_end - u));
      // Whole 16-byte chunks inside K only (a hint: the last partial chunk is not worth a read
      // past the row's last element).
      const std::uint32_t bytes = static_cast<std::uint32_t>((min(kb1 * 32, p.k) - kb0 * 32) * 2) & ~15u;
      for (int r = sd::thread_index(); r < BN; r += Shape::kThreads) {
        const int row = tile * BN + r;
        if (row < p.n && bytes > 0)
          sd::prefetch_l2_bulk(static_cast<const In*>(p.w) + static_cast<std::int64_t>(row) * p.ldb + kb0 * 32, bytes);
      }
      u += kb1 - kb0;
    }
  }
  sd::grid_dependency_wait();
  sd::launch_dependents();

  {
    const int KB = sa.kb_total;
    const int origin = xs_origin();
    const int n_x = min(u_count(), KB);  // <= per_cta <= XKB
    const int m_st = min(p.m, M_TILE);
    const In* const x = static_cast<const In*>(p.x);
    for (int token = 0; token < m_st; ++token) {
      for (int i = sd::thread_index(); i < n_x * 4; i += Shape::kThreads) {
        const int s = i / 4, c = i % 4;
        int kb = origin + s;
        if (kb >= KB) kb -= KB;
        const int k = kb * 32 + 8 * c;
        const int bytes = 2 * max(0, min(p.k - k, 8));
        sd::cp_async_16(xs + static_cast<std::uint32_t>(s) * kXBlock + token * kXRow + c * 16,
                        bytes > 0 ? x + static_cast<std::int64_t>(token) * p.lda + k : x, bytes);
      }
    }
    sd::cp_async_commit();
  }
  bool x_pending = true;  // the first segment waits for the stage after issuing its first batch

  // Item i of a partial: fragment (wn, r, j), lane l = (g, t): tokens m0 = 16j + g and m0 + 8,
  // rows n0 = tile * BN + wn * ROWS_PER_WARP + 8r + 2t and n0 + 1.
  auto item_row = [&](int tile, int i) {
    const int frag = i / 32, l = i % 32;
    const int f_wn = frag / (NR * TT), f_r = (frag / TT) % NR;
    return tile * BN + f_wn * ROWS_PER_WARP + f_r * 8 + 2 * (l % 4);
  };
  auto item_token = [&](int i) { return 16 * ((i / 32) % TT) + (i % 32) / 4; };
  auto item_active = [&](int tile, int i) { return item_token(i) < p.m && item_row(tile, i) < p.n; };
  auto store_item = [&](int tile, int i, const float4& v) {
    const int m0 = item_token(i), n0 = item_row(tile, i);
    sd::store_element(p, m0, n0, v.x);
    sd::store_element(p, m0, n0 + 1, v.y);
    sd::store_element(p, m0 + 8, n0, v.z);
    sd::store_element(p, m0 + 8, n0 + 1, v.w);
  };
  auto add = [](float4& a, const float4& b) {
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
  };

  // Segment of unit u: (tile, [kb0, kb1)), recomputed after the main loop (only u stays live).
  struct Segment {
    int tile, kb0, kb1;
  };
  auto segment = [&](int u) {
    Segment sg;
    sg.tile = u / sa.kb_total;
    sg.kb0 = u - sg.tile * sa.kb_total;
    sg.kb1 = min(sa.kb_total, sg.kb0 + (u_begin() + u_count() - u));
    return sg;
  };

  for (int u = u_begin(); u < u_begin() + u_count();) {
    float acc[NR][TT][4];
#pragma unroll
    for (int r = 0; r < NR; ++r)
#pragma unroll
      for (int j = 0; j < TT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[r][j][e] = 0.0f;

    {
      const int KB = sa.kb_total;
      const auto [tile, kb0, kb1] = segment(u);
      const int lane = sd::thread_index() % 32, warp = sd::thread_index() / 32;
      const int wn = warp % WARPS_N, wk = warp / WARPS_N;
      const int g = lane / 4, t = lane % 4;
      const int len = kb1 - kb0;
      const int lo = kb0 + len * wk / WARPS_K;  // this warp's k-blocks [lo, hi)
      const int hi = kb0 + len * (wk + 1) / WARPS_K;
      const int n_warp = tile * BN + wn * ROWS_PER_WARP;

      // Weight rows (clamped to the last), at this lane's 8-element chunk of k-block lo.
      const In* w_rows[NR];
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        const int row = min(n_warp + r * 8 + g, p.n - 1);
        w_rows[r] = static_cast<const In*>(p.w) + static_cast<std::int64_t>(row) * p.ldb + 8 * t +
                    static_cast<std::int64_t>(lo) * 32;
      }
      // This lane's x chunk (token g, chunk t) of k-block lo in the stage; token g + 8 at +8 rows.
      int slot_lo = lo - xs_origin();
      if (slot_lo < 0) slot_lo += KB;
      std::uint32_t x_lane = xs + static_cast<std::uint32_t>(slot_lo) * kXBlock + g * kXRow + t * 16;

      const int kb_full = min(hi, p.k / 32);  // [lo, kb_full): k-blocks wholly inside K
      const int nb = kb_full > lo ? (kb_full - lo) / UNROLL : 0;

      auto load_batch = [&](uint4 (&wv)[UNROLL][NR]) {
#pragma unroll
        for (int e = 0; e < UNROLL; ++e)
#pragma unroll
          for (int r = 0; r < NR; ++r) wv[e][r] = sd::load_weight(w_rows[r] + e * 32);
#pragma unroll
        for (int r = 0; r < NR; ++r) w_rows[r] += UNROLL * 32;
      };
      auto mma_block = [&](const uint4 (&wv)[NR], std::uint32_t xa) {
#pragma unroll
        for (int j = 0; j < TT; ++j) {
          const uint4 xl = sd::lds128(xa + j * 16 * kXRow);
          const uint4 xh = Shape::kHalfTile ? make_uint4(0, 0, 0, 0) : sd::lds128(xa + (j * 16 + 8) * kXRow);
#pragma unroll
          for (int r = 0; r < NR; ++r) sd::mma_k32_wb<In>(acc[r][j], xl, xh, wv[r]);
        }
      };
      auto mma_batch = [&](const uint4 (&wv)[UNROLL][NR]) {
#pragma unroll
        for (int e = 0; e < UNROLL; ++e) mma_block(wv[e], x_lane + e * kXBlock);
        x_lane += UNROLL * kXBlock;
      };

      {
        // Double-buffered register batches: batch b + 1 is in flight while batch b is consumed.
        uint4 wa[UNROLL][NR], wb[UNROLL][NR];
        if (nb > 0) load_batch(wa);
        if (x_pending) {  // CTA-uniform: every warp's first segment
          sd::cp_async_wait<0>();
          __syncthreads();
          x_pending = false;
        }
        int b = 0;
#pragma unroll 1
        for (; b + 2 < nb; b += 2) {  // at least three batches left, the first in wa
          load_batch(wb);
          mma_batch(wa);
          load_batch(wa);
          mma_batch(wb);
        }
        if (b + 1 < nb) {  // two left
          load_batch(wb);
          mma_batch(wa);
          mma_batch(wb);
        } else if (b < nb) {  // one left
          mma_batch(wa);
        }
      }

      const int kb = lo + nb * UNROLL;  // pointers are here; [kb, hi) is at most UNROLL blocks
      if (kb < hi) {
        // Whole 16-byte chunks inside [0, K) are loaded, the others are zeros (x too, per lane,
        // so that no stale or non-finite x meets a zero weight); k-blocks past the part skipped.
        uint4 wv[UNROLL][NR];
#pragma unroll
        for (int e = 0; e < UNROLL; ++e) {
          const bool in = kb + e < hi && (kb + e) * 32 + 8 * t + 8 <= p.k;
#pragma unroll
          for (int r = 0; r < NR; ++r) wv[e][r] = in ? sd::load_weight(w_rows[r] + e * 32) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int e = 0; e < UNROLL; ++e) {
          if (kb + e < hi) {  // warp-uniform
            const bool in = (kb + e) * 32 + 8 * t + 8 <= p.k;
            const std::uint32_t xa = x_lane + e * kXBlock;
#pragma unroll
            for (int j = 0; j < TT; ++j) {
              const uint4 xl = in ? sd::lds128(xa + j * 16 * kXRow) : make_uint4(0, 0, 0, 0);
              const uint4 xh = in && !Shape::kHalfTile ? sd::lds128(xa + (j * 16 + 8) * kXRow) : make_uint4(0, 0, 0, 0);
#pragma unroll
              for (int r = 0; r < NR; ++r) sd::mma_k32_wb<In>(acc[r][j], xl, xh, wv[e][r]);
            }
          }
        }
      }
      if (p.k % 8 != 0 && hi == KB && lo < hi) {
        // K not a multiple of 8: the chunk that straddles K, element by element (zeros above;
        // the stage holds the chunk's first `count` elements and zeros after).
        const int blk = KB - 1;
        const int k0 = blk * 32 + 8 * t;
        const int count = k0 < p.k && k0 + 8 > p.k ? p.k - k0 : 0;
        uint4 wv[NR];
#pragma unroll
        for (int r = 0; r < NR; ++r) wv[r] = sd::load_partial_chunk(w_rows[r] + (blk - kb) * 32, count);
        const std::uint32_t xa = x_lane + (blk - kb) * kXBlock;
#pragma unroll
        for (int j = 0; j < TT; ++j) {
          const uint4 xl = count > 0 ? sd::lds128(xa + j * 16 * kXRow) : make_uint4(0, 0, 0, 0);
          const uint4 xh = count > 0 && !Shape::kHalfTile ? sd::lds128(xa + (j * 16 + 8) * kXRow) : make_uint4(0, 0, 0, 0);
#pragma unroll
          for (int r = 0; r < NR; ++r) sd::mma_k32_wb<In>(acc[r][j], xl, xh, wv[r]);
        }
      }
    }

    // The CTA's sum of this segment: warp k-parts through shared memory, in warp order.
    asm volatile("" : "+r"(u));  // opaque: the segment is recomputed, not kept through the loop
    const int KB = sa.kb_total;
    const auto [tile, kb0, kb1] = segment(u);
    const int tid = sd::thread_index();
    {
      const int e_lane = tid % 32, e_wn = (tid / 32) % WARPS_N, e_wk = (tid / 32) / WARPS_N;
#pragma unroll
      for (int r = 0; r < NR; ++r)
#pragma unroll
        for (int j = 0; j < TT; ++j)
          parts[e_wk * kItems + ((e_wn * NR + r) * TT + j) * 32 + e_lane] =
              make_float4(acc[r][j][0], acc[r][j][1], acc[r][j][2], acc[r][j][3]);
    }
    __syncthreads();
    auto cta_sum = [&](int i) {
      float4 v = parts[i];
#pragma unroll
      for (int w = 1; w < WARPS_K; ++w) add(v, parts[w * kItems + i]);
      return v;
    };

    if (kb0 == 0 && kb1 == KB) {
      // The whole tile is this CTA's: store it.
      for (int i = tid; i < kItems; i += Shape::kThreads) store_item(tile, i, cta_sum(i));
    } else {
      // Split tile: publish the partial, count in; the last contributor sums all in order.
      const int t0 = tile * KB;
      const int c_first = t0 / sa.per_cta;
      const int nc = (t0 + KB - 1) / sa.per_cta - c_first + 1;
      const int cta = static_cast<int>(blockIdx.x);
      float4* const mine = sa.partials + static_cast<std::size_t>(cta == c_first ? 2 * cta + 1 : 2 * cta) * kItems;
      for (int i = tid; i < kItems; i += Shape::kThreads) {
        const float4 v = cta_sum(i);
        if (item_active(tile, i)) __stcg(mine + i, v);
      }
      // Release / acquire through one thread (the CUTLASS semaphore pattern): the barrier orders
      // every thread's partial stores before thread 0's release fence and count; the last
      // contributor's acquire fence, then the barrier, order them before every thread's loads.
      __syncthreads();
      if (tid == 0) {
        sd::fence_acq_rel_gpu();
        const unsigned arrived = atomicAdd(sa.counters + c_first, 1u);
        const int last = arrived == static_cast<unsigned>(nc - 1);
        if (last) {
          sa.counters[c_first] = 0u;  // every contributor has counted: reset for the next launch
          sd::fence_acq_rel_gpu();
        }
        *flag = last;
      }
      __syncthreads();
      if (*flag) {
        // The items that can hold a token < M: lanes l < 4 min(M, 8) of each fragment (all at
        // M >= 8), A of them, each summed by SUB threads (the largest power of two <= 32 that
        // keeps A x SUB <= threads; CTA-uniform), thread s of an item taking contributors s,
        // s + SUB, ... in order, then a fixed xor tree over the SUB threads.
        const int lanes = 4 * min(p.m, 8);
        const int n_act = Shape::kFrags * lanes;
        int sub = 1;
        while (sub < 32 && 2 * sub * n_act <= Shape::kThreads) sub *= 2;
        const int s = tid % sub;
        constexpr int kBatch = 8;  // partial loads in flight per thread and round
        const float4* const first = sa.partials + static_cast<std::size_t>(2 * c_first) * kItems;
        for (int a0 = 0; a0 < n_act; a0 += Shape::kThreads / sub) {  // uniform trip count
          const int a = a0 + tid / sub;
          const int i = (a / lanes) * 32 + a % lanes;
          const bool active = a < n_act && item_active(tile, i);
          float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          if (active) {
            // Contributor q's slot: 2 (c_first + q) + 1 for q = 0 (its last segment), 2 (c_first
            // + q) after (their first).
            for (int q0 = s; q0 < nc; q0 += kBatch * sub) {
              float4 v[kBatch];
#pragma unroll
              for (int e = 0; e < kBatch; ++e) {
                const int q = q0 + e * sub;
                v[e] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (q < nc) v[e] = __ldcg(first + static_cast<std::size_t>(2 * q + (q == 0)) * kItems + i);
              }
#pragma unroll
              for (int e = 0; e < kBatch; ++e)
                if (q0 + e * sub < nc) add(sum, v[e]);
            }
          }
          // a + b == b + a bit for bit, so every thread of the group ends with the same sum.
          for (int off = sub / 2; off > 0; off /= 2) {
            sum.x += __shfl_xor_sync(0xffffffffu, sum.x, off);
            sum.y += __shfl_xor_sync(0xffffffffu, sum.y, off);
            sum.z += __shfl_xor_sync(0xffffffffu, sum.z, off);
            sum.w += __shfl_xor_sync(0xffffffffu, sum.w, off);
          }
          if (s == 0 && active) store_item(tile, i, sum);
        }
      }
    }
    __syncthreads();  // the partial slots and the flag are rewritten by the next segment
    u = tile * sa.kb_total + kb1;
  }
#endif
}

}  // namespace tgemm::kernels
