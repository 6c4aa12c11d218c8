// Skinny (decode) GEMM for sm_90a: out[M, N] = x[M, K] · w[N, K]^T (+ bias[N]) for small M
// (1..M_TILE; M_TILE a multiple of 8 up to 64, the backend builds 8, 16, 32), bf16 or fp16
// inputs, fp32 accumulation, bf16/fp16/fp32 output, bias of bf16/fp16/fp32 added once in fp32
// before the output cast.
//
// Design (the bytes are the weight's; FLOPs are negligible at small M):
// - The weight streams once, straight from global memory into tensor-core A fragments: each
//   lane loads 16 contiguous bytes per weight row and 32-wide k-block, no shared memory. The
//   mma.m16n8k16 fragment holds k {2t, 2t+1, 2t+8, 2t+9} for lane t of a quad; because a dot
//   product may sum its k in any order, k is permuted identically in A (w) and B (x) so that
//   one 16-byte load of 8 contiguous k feeds two MMAs (words 0-1 the first, words 2-3 the
//   second). The same permutation makes each lane's x fragment 16 contiguous bytes too.
// - A warp owns ROWS_PER_WARP weight rows (R = ROWS_PER_WARP/16 m16 tiles) and all M_TILE tokens
//   (M_TILE/8 n8 tiles); every weight element is reused across all tokens from registers.
//   UNROLL k-blocks are loaded before the first MMA: UNROLL*R*2 16-byte weight loads in flight
//   per lane. x is read through L1 (ld.global.nc), w bypasses L1 (L1::no_allocate) so it does
//   not evict x; x bytes re-read from L2 are M/BLOCK_N of the weight bytes.
// - A CTA is WARPS_N x WARPS_K warps over BLOCK_N = ROWS_PER_WARP*WARPS_N rows; the WARPS_K warps
//   split the CTA's k-range and are summed through shared memory in warp order. The grid is
//   (ceil(N/BLOCK_N), split_k); with split_k > 1 the split_k CTAs of one row tile form a thread
//   block cluster (1, split_k, 1) and sum their partials through distributed shared memory in
//   rank order. Every sum has a fixed order, so results are bit-identical run to run, and no
//   state outlives the launch (no workspace, no counters): safe under CUDA-graph replay.
// - Rows past N and tokens past M are clamped to the last valid row (valid addresses, results
//   discarded), so the main loop has no predicates; the k tail (K not a multiple of 32) is one
//   predicated pass of whole 16-byte chunks, plus, for K not a multiple of 8, element loads of
//   the one chunk that straddles K.
//
// Preconditions (the host side's can_implement checks them): an sm_90 device running an image
// built for compute_90 or later (older passes compile to a trap); 1 <= M <= M_TILE; N >= 1;
// 1 <= K <= 2^30; x and w 16-byte aligned with lda, ldb multiples of 8 elements (lda is
// ignored when M = 1, ldb when N = 1); out, bias element-aligned; split_k in 1..8, launched as
// a cluster of (1, split_k, 1) when above 1.
//
// Test: tests/gpu/test_skinny.cu (every variant against the fp32 reference kernel, tails, bias,
// determinism, graph replay, refusals): ctest --test-dir build/release -R Skinny.
// Bench: `tgemm bench` over ../shared/shapes/llm_shapes.csv at M = 1, 16 with --candidates;
// notes and floors in docs/perf-notes.md (skinny section).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/numeric.cuh"

namespace tgemm::kernels {

// Element types of the output and the bias, decided at run time: the epilogue touches M*N
// elements only, so a switch there costs nothing and saves 9x the instantiations.
enum SkinnyElem : int { kSkinnyNone = -1, kSkinnyBf16 = 0, kSkinnyFp16 = 1, kSkinnyF32 = 2 };

struct SkinnyParams {
  const void* x = nullptr;     // [M, K], ld lda
  const void* w = nullptr;     // [N, K], ld ldb
  void* out = nullptr;         // [M, N], ld ldo
  const void* bias = nullptr;  // [N] or nullptr
  int m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldo = 0;
  int out_type = kSkinnyBf16;
  int bias_type = kSkinnyNone;
};

namespace skinny_detail {

// Weight stream: read once, so skip L1 (keeps x there); ask L2 for the whole 256-byte segment,
// which the next k-blocks of the same row read next.
__device__ __forceinline__ uint4 load_weight(const void* ptr) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(ptr));
  return v;
}

// Activations: re-read by every warp that shares its k-range, so cache in L1.
__device__ __forceinline__ uint4 load_activation(const void* ptr) {
  return __ldg(static_cast<const uint4*>(ptr));
}

// The first `count` (0..7) 16-bit elements at ptr, zeros after: the chunk that straddles K.
template <typename In>
__device__ __forceinline__ uint4 load_partial_chunk(const In* ptr, int count) {
  std::uint32_t h[8];
  const auto* e = reinterpret_cast<const unsigned short*>(ptr);
#pragma unroll
  for (int i = 0; i < 8; ++i) h[i] = i < count ? e[i] : 0u;
  return make_uint4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16),
                    h[6] | (h[7] << 16));
}

template <typename In>
__device__ __forceinline__ void mma_m16n8k16(float (&c)[4], std::uint32_t a0, std::uint32_t a1,
                                             std::uint32_t a2, std::uint32_t a3,
                                             std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<In, bf16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// One 32-wide k-block of one (16 rows) x (8 tokens) tile. w_lo/w_hi: 8 k of rows g and g+8;
// xv: the same 8 k of token g. Fragment registers: a0 = (row g, slots 2t..2t+1), a1 = (row g+8,
// slots 2t..), a2 = (row g, slots 2t+8..), a3 = (row g+8, slots 2t+8..); b0 = slots 2t.., b1 =
// slots 2t+8... Slot s of MMA i holds k = 8t + 4i + {0, 1, 2, 3}, the same in A and B.
template <typename In>
__device__ __forceinline__ void mma_k32(float (&c)[4], const uint4& w_lo, const uint4& w_hi,
                                        const uint4& xv) {
  mma_m16n8k16<In>(c, w_lo.x, w_hi.x, w_lo.y, w_hi.y, xv.x, xv.y);
  mma_m16n8k16<In>(c, w_lo.z, w_hi.z, w_lo.w, w_hi.w, xv.z, xv.w);
}

__device__ __forceinline__ void store_element(const SkinnyParams& p, int m, int n, float v) {
  if (m >= p.m || n >= p.n) return;
  switch (p.bias_type) {
    case kSkinnyBf16: v += to_float(static_cast<const bf16*>(p.bias)[n]); break;
    case kSkinnyFp16: v += to_float(static_cast<const fp16*>(p.bias)[n]); break;
    case kSkinnyF32: v += static_cast<const float*>(p.bias)[n]; break;
    default: break;
  }
  const std::int64_t off = static_cast<std::int64_t>(m) * p.ldo + n;
  switch (p.out_type) {
    case kSkinnyBf16: static_cast<bf16*>(p.out)[off] = from_float<bf16>(v); break;
    case kSkinnyFp16: static_cast<fp16*>(p.out)[off] = from_float<fp16>(v); break;
    default: static_cast<float*>(p.out)[off] = v; break;
  }
}

// The accumulator fragment of lane (g, t) for weight rows n, n + 8 and tokens m0, m0 + 1.
__device__ __forceinline__ void store_fragment(const SkinnyParams& p, int n, int m0, float c0,
                                               float c1, float c2, float c3) {
  store_element(p, m0, n, c0);
  store_element(p, m0 + 1, n, c1);
  store_element(p, m0, n + 8, c2);
  store_element(p, m0 + 1, n + 8, c3);
}

}  // namespace skinny_detail

template <int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K>
struct SkinnyShape {
  static_assert(M_TILE % 8 == 0 && M_TILE >= 8 && M_TILE <= 64, "M_TILE: 8, 16, 24, ..., 64");
  static_assert(ROWS_PER_WARP % 16 == 0, "ROWS_PER_WARP: a multiple of the MMA's 16 rows");
  static constexpr int kTokenTiles = M_TILE / 8;        // n8 MMA tiles over tokens
  static constexpr int kRowTiles = ROWS_PER_WARP / 16;  // m16 MMA tiles over weight rows
  static constexpr int kBlockN = ROWS_PER_WARP * WARPS_N;
  static constexpr int kThreads = 32 * WARPS_N * WARPS_K;
  // float4 accumulator fragments per lane over the CTA's rows and tokens.
  static constexpr int kFrags = WARPS_N * kRowTiles * kTokenTiles;
  // Shared memory for the epilogue: one float4 per fragment and lane for each k-part warp.
  static constexpr int kSmemBytes = WARPS_K * kFrags * 32 * 16;
  static_assert(kSmemBytes <= 48 * 1024, "static shared memory above 48 KB");
};

// grid (ceil(N / BLOCK_N), split_k), block kThreads; cluster (1, split_k, 1) when split_k > 1.
template <typename In, int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL>
__global__ void __launch_bounds__(SkinnyShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K>::kThreads,
                                  512 / SkinnyShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K>::kThreads)
    sm90_gemm_skinny(const SkinnyParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  // Built into a pre-Hopper image (clusters, distributed shared memory and L2 prefetch hints
  // are sm_90): never launched there, the host checks the loaded image's PTX arch first.
  __trap();
#else
  using Shape = SkinnyShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K>;
  constexpr int NT = Shape::kTokenTiles;
  constexpr int R = Shape::kRowTiles;
  namespace sd = skinny_detail;

  __shared__ float4 red[WARPS_K][Shape::kFrags][32];  // (k-part warp, fragment, lane)

  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int wn = warp % WARPS_N, wk = warp / WARPS_N;
  const int g = lane / 4, t = lane % 4;  // MMA group (row / token) and thread in group (k)
  const int n_warp = static_cast<int>(blockIdx.x) * Shape::kBlockN + wn * ROWS_PER_WARP;

  // Row pointers, each already at this lane's 8-element chunk of a k-block.
  const In* w_rows[R][2];  // (row tile, half: rows g / g + 8)
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = min(n_warp + r * 16 + h * 8 + g, p.n - 1);
      w_rows[r][h] = static_cast<const In*>(p.w) + static_cast<std::int64_t>(row) * p.ldb + 8 * t;
    }
  }
  const In* x_rows[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int row = min(j * 8 + g, p.m - 1);
    x_rows[j] = static_cast<const In*>(p.x) + static_cast<std::int64_t>(row) * p.lda + 8 * t;
  }

  // This warp's contiguous range of 32-wide k-blocks: split_k * WARPS_K balanced parts, the
  // CTA's WARPS_K parts adjacent.
  const int kb_total = (p.k + 31) / 32;
  const int kb_full = p.k / 32;
  const int parts = static_cast<int>(gridDim.y) * WARPS_K;
  const int part = static_cast<int>(blockIdx.y) * WARPS_K + wk;
  const int kb_begin = static_cast<int>(static_cast<std::int64_t>(kb_total) * part / parts);
  const int kb_end = static_cast<int>(static_cast<std::int64_t>(kb_total) * (part + 1) / parts);
  const int kb_end_full = min(kb_end, kb_full);

  float acc[R][NT][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][j][i] = 0.0f;

  // Pointers advance with the loop so every load of a batch is base + immediate offset.
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) w_rows[r][h] += kb_begin * 32;
#pragma unroll
  for (int j = 0; j < NT; ++j) x_rows[j] += kb_begin * 32;

  int kb = kb_begin;
#pragma unroll 1
  for (; kb + UNROLL <= kb_end_full; kb += UNROLL) {
    uint4 wv[UNROLL][R][2];  // (k-block, row tile, half)
    uint4 xv[UNROLL][NT];    // (k-block, token tile)
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) wv[u][r][h] = sd::load_weight(w_rows[r][h] + u * 32);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int j = 0; j < NT; ++j) xv[u][j] = sd::load_activation(x_rows[j] + u * 32);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) w_rows[r][h] += UNROLL * 32;
#pragma unroll
    for (int j = 0; j < NT; ++j) x_rows[j] += UNROLL * 32;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < NT; ++j) sd::mma_k32<In>(acc[r][j], wv[u][r][0], wv[u][r][1], xv[u][j]);
  }
  if (kb < kb_end) {
    // The rest of the range: kb + UNROLL > kb_end_full and kb_end <= kb_end_full + 1, so at
    // most UNROLL blocks. Whole 16-byte chunks inside [0, K) and the range are loaded, the
    // others are zeros (their MMAs add nothing).
    uint4 wv[UNROLL][R][2];
    uint4 xv[UNROLL][NT];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int blk = kb + u;
      const bool in = blk < kb_end && blk * 32 + 8 * t + 8 <= p.k;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          wv[u][r][h] = in ? sd::load_weight(w_rows[r][h] + u * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int j = 0; j < NT; ++j)
        xv[u][j] = in ? sd::load_activation(x_rows[j] + u * 32) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          sd::mma_k32<In>(acc[r][j], wv[u][r][0], wv[u][r][1], xv[u][j]);
  }
  if (p.k % 8 != 0 && kb_end == kb_total && kb_begin < kb_end) {
    // K not a multiple of 8: the one 16-byte chunk that straddles K, element by element
    // (the pass above loaded it as zeros). Only the warp owning the last k-block gets here.
    const int blk = kb_total - 1;
    const int k0 = blk * 32 + 8 * t;
    const bool straddles = k0 < p.k && k0 + 8 > p.k;
    uint4 wv[R][2];
    uint4 xv[NT];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wv[r][h] = sd::load_partial_chunk(w_rows[r][h] + (blk - kb) * 32, straddles ? p.k - k0 : 0);
#pragma unroll
    for (int j = 0; j < NT; ++j)
      xv[j] = sd::load_partial_chunk(x_rows[j] + (blk - kb) * 32, straddles ? p.k - k0 : 0);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int j = 0; j < NT; ++j) sd::mma_k32<In>(acc[r][j], wv[r][0], wv[r][1], xv[j]);
  }

  // Epilogue, through shared memory so that no register array is indexed at run time and the
  // stores are spread over the whole CTA: every warp publishes its partial in red[wk]; the sum
  // over the WARPS_K k-parts runs in warp order, then (split_k > 1) the sum over the cluster's
  // CTAs in rank order, then bias and the output cast.
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < NT; ++j)
      red[wk][(wn * R + r) * NT + j][lane] =
          make_float4(acc[r][j][0], acc[r][j][1], acc[r][j][2], acc[r][j][3]);

  constexpr int kItems = Shape::kFrags * 32;  // float4 items of the CTA's partial
  const int tid = static_cast<int>(threadIdx.x);
  const int split_k = static_cast<int>(gridDim.y);
  const float4* own = &red[0][0][0];
  auto add = [](float4& a, const float4& b) {
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
  };
  // Item i -> fragment (wn, r, j) and lane (g, t): rows n, n + 8 and tokens m0, m0 + 1.
  auto store_item = [&](int i, const float4& v) {
    const int frag = i / 32, l = i % 32;
    const int f_wn = frag / (R * NT), f_r = (frag / NT) % R, f_j = frag % NT;
    const int n = static_cast<int>(blockIdx.x) * Shape::kBlockN + f_wn * ROWS_PER_WARP +
                  f_r * 16 + l / 4;
    sd::store_fragment(p, n, 8 * f_j + 2 * (l % 4), v.x, v.y, v.z, v.w);
  };
  __syncthreads();

  if (split_k == 1) {
    for (int i = tid; i < kItems; i += Shape::kThreads) {
      float4 sum = own[i];
#pragma unroll
      for (int w = 1; w < WARPS_K; ++w) add(sum, own[w * kItems + i]);
      store_item(i, sum);
    }
    return;
  }

  // Split-K across the cluster: the CTA's own sum goes to red[0] (each item read and written by
  // one thread), then CTA `rank` finishes its share of the items by summing all ranks' red[0]
  // in rank order through distributed shared memory.
  if constexpr (WARPS_K > 1) {
    for (int i = tid; i < kItems; i += Shape::kThreads) {
      float4 sum = own[i];
#pragma unroll
      for (int w = 1; w < WARPS_K; ++w) add(sum, own[w * kItems + i]);
      red[0][i / 32][i % 32] = sum;
    }
  }
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // release our partial, acquire the others'
  const int rank = static_cast<int>(blockIdx.y);  // == cluster.block_rank() for (1, split_k, 1)
  const int i_end = (rank + 1) * kItems / split_k;
  for (int i = rank * kItems / split_k + tid; i < i_end; i += Shape::kThreads) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int src = 0; src < split_k; ++src) add(sum, cluster.map_shared_rank(own, src)[i]);
    store_item(i, sum);
  }
  cluster.sync();  // no CTA may exit while a peer still reads its shared memory
#endif
}

}  // namespace tgemm::kernels
