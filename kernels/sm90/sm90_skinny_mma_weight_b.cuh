// Weight-as-B MMA kernel for sm_90a with cluster split-K: out[M, N] = x[M, K] · w[N, K]^T
// (+ bias[N]) for M <= 16, the weight as the tensor-core MMA's B operand.
//
// Why: the weight-as-A kernel (sm90_skinny_mma_weight_a.cuh) puts 16 weight rows in the MMA's A
// operand, so a CTA owns at least 16 rows and the K-heavy decode weights (576-1536 rows of 7-8 K)
// have only 36-96 row tiles: they need split-K to fill 132 SMs. With x as A (the 16 tokens) and 8
// weight rows as B (m16n8k16), a CTA owns 8 * RB rows: twice the row tiles, and the CTAs of a
// split sum through distributed shared memory. At M = 16 it took 5.9 / 8.6 / 8.8 us on 576x7168 /
// 1280x8192 / 1536x7168 (H200), against 6.8 / 9.1 / 9.7 us for the weight-as-A kernel.
//
// Layout: a CTA is W warps over RB n8 blocks of weight rows (8 * RB rows); the warps split the
// CTA's k-range, and split_k CTAs (a (1, split_k, 1) cluster) split K further: split_k * W
// balanced contiguous parts of the k-steps. A k-step is 32 * C elements: lane (g, t) of a quad
// loads C contiguous 16-byte chunks of row g of each n8 block at k = step + 8 C t, and the same
// chunks of tokens g and g + 8 of x (through L1; tokens past M read the last token's, their sums
// are discarded). Each chunk feeds two MMAs, half h taking elements 4h..4h+3: B = (w word 2h,
// word 2h + 1), A = (x_g word 2h, x_{g+8} word 2h, x_g word 2h + 1, x_{g+8} word 2h + 1), so A
// and B agree on the k order inside the chunk (the layout the MMA wants is a permutation of k).
// U k-steps are loaded before their MMAs. The accumulator of lane (g, t) holds tokens g and g + 8
// of rows 2t and 2t + 1: one 4-byte (16-bit out) or 8-byte (fp32 out) store each.
// Reduction: every warp writes its RB x 32 float4 fragments into its CTA's shared memory, one CTA
// barrier, and the CTA sums its warps in warp order. With split_k > 1 the other ranks then push
// their sums into rank 0's shared memory (st.async, completing on rank 0's mbarrier) and leave at
// once; rank 0 waits on the mbarrier and adds them in rank order: bit-identical run to run, no
// workspace. (Every warp writing its fragments into rank 0 through DSMEM under a release barrier,
// rank 0 summing split_k x W parts, was 0.2-0.7 us slower on the shipped M = 16 grids.)
// K tails: the last k-step (K % (32 C) != 0) is loaded with guards: whole chunks inside K, the
// chunk that straddles K element by element (zeros past K), zeros after it. Its warp runs it
// first, out of line (mma_weight_b_detail::partial_step), so that only the epilogue follows the
// main loop: inline, that code and the general store path cost 0.3-0.5 us on launches that never
// took them.
//
// 8-bit inputs (gemm_a8w8): the same kernel with mma.m16n8k32 (FP8 e4m3 into fp32, INT8 into
// int32), whose fragments are those of m16n8k16 at the level of 32-bit words
// (skinny_detail::mma_m16n8k16): a chunk is 16 k, a k-step 64 * C, the same bytes a lane loads as
// for 16-bit inputs and half the weight bytes a row. INT8 sums stay int32 through the warps' and
// the ranks' sums (exact, bit patterns carried in the float4 slots), then meet the scales once in
// the store: out = acc * x_scale[m] * w_scale[n] (+ bias) in fp32 (skinny_detail::dequantize);
// FP8 sums likewise. K is a multiple of 16 (the host's check): no chunk straddles K.
//
// Preconditions (the host's can_implement checks them): an sm_90 image; 1 <= M <= 16; N >= 1;
// 1 <= K <= 2^30 (8-bit: a multiple of 16); x and w 16-byte aligned with lda, ldb multiples of
// 16 bytes (lda ignored when M = 1, ldb when N = 1); 8-bit: x_scale and w_scale set; out, bias
// element-aligned; grid (ceil(N / (8 RB)), split_k), block 32 W, a (1, split_k, 1) cluster when
// split_k > 1 (split_k <= 8), dynamic shared memory MmaWeightBShape::smem_bytes(split_k).
//
// Test: tests/gpu/test_skinny.cu (every variant against the fp32 reference with tails, bias,
// every output dtype; determinism; the sanitizer subset), tests/gpu/test_skinny_a8w8.cpp (the
// 8-bit variants against the reference of the dequantized operands, every scale recipe).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/numeric.cuh"
#include "kernels/sm90/sm90_skinny_common.cuh"

namespace tgemm::kernels {

template <int RB, int C, int W, int U, int CHUNK_ELEMS = 8>
struct MmaWeightBShape {
  static_assert(RB >= 1 && RB <= 4, "RB: 1..4 n8 blocks of weight rows");
  static_assert(C == 1 || C == 2, "C: 1 or 2 chunks a lane and k-step");
  static_assert(W >= 1 && W <= 32, "W: 1..32 warps (the library's tiles: 4 or 8)");
  static constexpr int kRows = 8 * RB;
  static constexpr int kThreads = 32 * W;
  static constexpr int kKStep = 4 * CHUNK_ELEMS * C;
  static constexpr int kItems = RB * 32;           // float4 fragments of a warp (and of a CTA's sum)
  static constexpr int kPartBytes = kItems * 16;   // one warp's fragments
  // The W warps' parts; with split_k > 1 also split_k slots for the ranks' sums (rank 0's are
  // filled by the others) and rank 0's mbarrier.
  static constexpr int smem_bytes(int split_k) { return W * kPartBytes + (split_k > 1 ? split_k * kPartBytes + 16 : 0); }
  static constexpr int kMaxSmemBytes = (W + 8) * kPartBytes + 16;
  static_assert(RB <= W, "a CTA's threads cover its RB x 32 items");
};

namespace mma_weight_b_detail {

// Token m, rows n0 and n0 + 1 (n0 even): one paired store where both rows exist and the pair is
// aligned, else element by element (skinny_detail::store_element, which adds the bias and applies
// the activation itself).
__device__ __forceinline__ void store_pair(const SkinnyParams& p, int m, int n0, float v0, float v1) {
  using skinny_detail::bias_at;
  if (m >= p.m || n0 >= p.n) return;
  const std::int64_t off = static_cast<std::int64_t>(m) * p.ldo + n0;
  const auto addr = reinterpret_cast<std::uintptr_t>(p.out);
  if (n0 + 1 < p.n && (p.ldo & 1) == 0) {
    const float e0 = activate(p.activation, v0 + bias_at(p, n0));
    const float e1 = activate(p.activation, v1 + bias_at(p, n0 + 1));
    if (p.out_type == kSkinnyF32 && (addr & 7) == 0) {
      *reinterpret_cast<float2*>(static_cast<float*>(p.out) + off) = make_float2(e0, e1);
      return;
    }
    if (p.out_type == kSkinnyBf16 && (addr & 3) == 0) {
      *reinterpret_cast<__nv_bfloat162*>(static_cast<bf16*>(p.out) + off) = __floats2bfloat162_rn(e0, e1);
      return;
    }
    if (p.out_type == kSkinnyFp16 && (addr & 3) == 0) {
      *reinterpret_cast<__half2*>(static_cast<fp16*>(p.out) + off) = __floats2half2_rn(e0, e1);
      return;
    }
  }
  skinny_detail::store_element(p, m, n0, v0);
  skinny_detail::store_element(p, m, n0 + 1, v1);  // nothing past N
}

// Token m (nothing past M), rows n0 and n0 + 1, in the input's type: one 4-byte store. For
// no bias, out of type skinny_detail::kOwnOutType<In>, ldo even, out 4-byte aligned, both rows inside N.
template <typename In>
__device__ __forceinline__ void store_plain_pair(const SkinnyParams& p, int m, int n0, float v0, float v1) {
  using In2 = std::conditional_t<std::is_same_v<In, bf16>, __nv_bfloat162, __half2>;
  if (m >= p.m) return;
  In2 h;
  h.x = from_float<In>(v0);
  h.y = from_float<In>(v1);
  *reinterpret_cast<In2*>(static_cast<In*>(p.out) + static_cast<std::int64_t>(m) * p.ldo + n0) = h;
}

// The MMAs of one 16-byte weight chunk w against the same chunk of tokens g (x0) and g + 8 (x1):
// half h takes words 2h, 2h + 1 (see the header), accumulated into c0 (h = 0) and c1 (h = 1).
template <typename In>
__device__ __forceinline__ void chunk_mmas(const uint4& w, const uint4& x0, const uint4& x1, SkinnyAcc<In> (&c0)[4],
                                           SkinnyAcc<In> (&c1)[4]) {
  const std::uint32_t* wr = reinterpret_cast<const std::uint32_t*>(&w);
  const std::uint32_t* a = reinterpret_cast<const std::uint32_t*>(&x0);
  const std::uint32_t* b = reinterpret_cast<const std::uint32_t*>(&x1);
  skinny_detail::mma_m16n8k16<In>(c0, a[0], b[0], a[1], b[1], wr[0], wr[1]);
  skinny_detail::mma_m16n8k16<In>(c1, a[2], b[2], a[3], b[3], wr[2], wr[3]);
}

// a += b, component by component (the epilogue's sums over warps and over ranks), in Acc: the
// float4 slots of an INT8 kernel carry int32 bit patterns.
template <typename Acc>
__device__ __forceinline__ void add4(float4& a, const float4& b) {
  if constexpr (std::is_same_v<Acc, int>) {
    a.x = __int_as_float(__float_as_int(a.x) + __float_as_int(b.x));
    a.y = __int_as_float(__float_as_int(a.y) + __float_as_int(b.y));
    a.z = __int_as_float(__float_as_int(a.z) + __float_as_int(b.z));
    a.w = __int_as_float(__float_as_int(a.w) + __float_as_int(b.w));
  } else {
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
  }
}

// An accumulator as the 32 bits of a float4 slot, and back (the identity for fp32).
__device__ __forceinline__ float acc_bits(float v) { return v; }
__device__ __forceinline__ float acc_bits(int v) { return __int_as_float(v); }
template <typename Acc>
__device__ __forceinline__ Acc acc_of(float bits) {
  if constexpr (std::is_same_v<Acc, int>)
    return __float_as_int(bits);
  else
    return bits;
}

// Token m, rows n0 and n0 + 1 of an 8-bit kernel: the sums' bits dequantized
// (skinny_detail::dequantize), then store_pair.
template <typename In>
__device__ __forceinline__ void store_dequantized_pair(const SkinnyParams& p, int m, int n0, float b0, float b1) {
  using Acc = SkinnyAcc<In>;
  if (m >= p.m || n0 >= p.n) return;
  store_pair(p, m, n0, skinny_detail::dequantize<In>(p, m, n0, acc_of<Acc>(b0)),
             skinny_detail::dequantize<In>(p, m, n0 + 1, acc_of<Acc>(b1)));
}

template <typename In, int RB>
struct RowPointers {
  const In* w[RB];
};
template <typename Acc, int RB>
struct Fragments {
  Acc v[RB][4];
};

// The partial last k-step (K % (4 C kChunkElems) != 0) of the warp that owns it, out of line:
// the chunks inside K whole, the one that straddles K element by element (16-bit In only), zeros
// after it; rest0 = elements of K left at the lane's first chunk. Out of line because the code of
// this rarely taken path, inline, cost the kernel 0.1-0.2 us on shapes that never take it.
template <typename In, int RB, int C>
__device__ __noinline__ Fragments<SkinnyAcc<In>, RB> partial_step(RowPointers<In, RB> wp, const In* x0, const In* x1,
                                                                  int rest0) {
  namespace sd = skinny_detail;
  constexpr int CE = kChunkElems<In>;
  Fragments<SkinnyAcc<In>, RB> f;
#pragma unroll
  for (int b = 0; b < RB; ++b) f.v[b][0] = f.v[b][1] = f.v[b][2] = f.v[b][3] = SkinnyAcc<In>(0);
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int rest = rest0 - CE * c;
    const uint4 xa = rest >= CE ? sd::load_activation(x0 + CE * c)
                                : (rest > 0 ? sd::load_partial_chunk(x0 + CE * c, rest) : make_uint4(0, 0, 0, 0));
    const uint4 xb = rest >= CE ? sd::load_activation(x1 + CE * c)
                                : (rest > 0 ? sd::load_partial_chunk(x1 + CE * c, rest) : make_uint4(0, 0, 0, 0));
#pragma unroll
    for (int b = 0; b < RB; ++b) {
      const uint4 wv = rest >= CE
                           ? sd::load_weight(wp.w[b] + CE * c)
                           : (rest > 0 ? sd::load_partial_chunk(wp.w[b] + CE * c, rest) : make_uint4(0, 0, 0, 0));
      chunk_mmas<In>(wv, xa, xb, f.v[b], f.v[b]);
    }
  }
  return f;
}

}  // namespace mma_weight_b_detail

template <typename In, int RB, int C, int W, int U>
__global__ void __launch_bounds__(32 * W, W <= 8 ? 2 : 1) sm90_skinny_mma_weight_b(const SkinnyParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched there: the host checks the loaded image's PTX arch first
#else
  using Shape = MmaWeightBShape<RB, C, W, U, kChunkElems<In> >;
  using Acc = SkinnyAcc<In>;
  constexpr int KSTEP = Shape::kKStep;
  constexpr int CE = kChunkElems<In>;
  namespace sd = skinny_detail;
  extern __shared__ float4 smem_parts[];  // [W][RB][32] warp parts, then [split_k][RB][32] rank slots, then the mbarrier
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  const int split_k = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const int row0 = static_cast<int>(blockIdx.x) * Shape::kRows;
  const int steps = (p.k + KSTEP - 1) / KSTEP;  // the last one possibly partial
  const int full_steps = p.k / KSTEP;
  const int parts = split_k * W, pidx = rank * W + warp;
  const int s_begin = static_cast<int>(static_cast<std::int64_t>(steps) * pidx / parts);
  const int s_end = static_cast<int>(static_cast<std::int64_t>(steps) * (pidx + 1) / parts);
  // Rank 0's mbarrier collects the other ranks' sums: one arrival (its own, now) and their bytes.
  // First phase of the cluster barrier: by its wait (before the sums go to rank 0), every CTA of
  // the cluster is running and rank 0's mbarrier is initialised (the fence releases it).
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

  // Two accumulator sets, one per MMA half (acc[h]), summed before the epilogue: the MMAs of a
  // batch form two dependency chains instead of one (0.5-1% on H100).
  Acc acc[2][RB][4];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int b = 0; b < RB; ++b) acc[h][b][0] = acc[h][b][1] = acc[h][b][2] = acc[h][b][3] = Acc(0);
  const In* wp[RB];
#pragma unroll
  for (int b = 0; b < RB; ++b)
    wp[b] = static_cast<const In*>(p.w) + static_cast<std::int64_t>(min(row0 + 8 * b + g, p.n - 1)) * p.ldb +
            s_begin * KSTEP + CE * C * t;
  const In* xp[2] = {
      static_cast<const In*>(p.x) + static_cast<std::int64_t>(min(g, p.m - 1)) * p.lda + s_begin * KSTEP + CE * C * t,
      static_cast<const In*>(p.x) + static_cast<std::int64_t>(min(g + 8, p.m - 1)) * p.lda + s_begin * KSTEP +
          CE * C * t};

  // NU k-steps: every load first, then the MMAs. PARTIAL: only the first `rem` of them are in the
  // warp's range; the others' loads are predicated off (nothing read) and their MMAs skipped.
  auto batch = [&](auto nu_tag, auto partial_tag, int rem) {
    constexpr int NU = decltype(nu_tag)::value;
    constexpr bool PARTIAL = decltype(partial_tag)::value;
    uint4 wv[NU][RB][C], xv[NU][2][C];
    auto load_w = [&] {
#pragma unroll
      for (int u = 0; u < NU; ++u)
#pragma unroll
        for (int b = 0; b < RB; ++b)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const In* ptr = wp[b] + u * KSTEP + CE * c;
            if constexpr (PARTIAL) wv[u][b][c] = sd::load_weight_if(ptr, u < rem);
            else wv[u][b][c] = sd::load_weight(ptr);
          }
    };
    auto load_x = [&] {
#pragma unroll
      for (int u = 0; u < NU; ++u)
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const In* ptr = xp[j] + u * KSTEP + CE * c;
            if constexpr (PARTIAL) xv[u][j][c] = sd::load_activation_if(ptr, u < rem);
            else xv[u][j][c] = sd::load_activation(ptr);
          }
    };
    load_w();
    load_x();
#pragma unroll
    for (int b = 0; b < RB; ++b) wp[b] += NU * KSTEP;
#pragma unroll
    for (int j = 0; j < 2; ++j) xp[j] += NU * KSTEP;
#pragma unroll
    for (int u = 0; u < NU; ++u) {
      if (PARTIAL && u >= rem) break;
#pragma unroll
      for (int c = 0; c < C; ++c)
#pragma unroll
        for (int b = 0; b < RB; ++b)
          mma_weight_b_detail::chunk_mmas<In>(wv[u][b][c], xv[u][0][c], xv[u][1][c], acc[0][b], acc[1][b]);
    }
  };
  const int s_full = min(s_end, full_steps);
  if (s_full < s_end) {
    // The partial last k-step (s_full == full_steps, the warp's last), first and out of line, so
    // that the code after the main loop is the epilogue alone.
    const int off = (s_full - s_begin) * KSTEP;
    mma_weight_b_detail::RowPointers<In, RB> rows;
#pragma unroll
    for (int b = 0; b < RB; ++b) rows.w[b] = wp[b] + off;
    const auto f = mma_weight_b_detail::partial_step<In, RB, C>(rows, xp[0] + off, xp[1] + off,
                                                                p.k - (s_full * KSTEP + CE * C * t));
#pragma unroll
    for (int b = 0; b < RB; ++b)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[0][b][e] += f.v[b][e];
  }
  int s = s_begin;
#pragma unroll 1
  for (; s + U <= s_full; s += U) batch(std::integral_constant<int, U>{}, std::false_type{}, U);
  // The last rem < U whole k-steps as one batch: every load before the first MMA, so the remainder
  // costs one round trip, not rem. The MMAs run in the order rem one-step batches ran them
  // (bit-identical to them). On an H200, 16x576x7168 with n8_wk4_u4_c1 at split 4 (14 k-steps a
  // warp: 4 round trips instead of 5) took 6.03 us against 6.14 without it.
  if constexpr (U > 1)
    if (s < s_full) batch(std::integral_constant<int, U>{}, std::true_type{}, s_full - s);

  // Every warp's fragments into this CTA's shared memory, part `warp`; the CTA's sum in warp order.
#pragma unroll
  for (int b = 0; b < RB; ++b)
    smem_parts[(warp * RB + b) * 32 + lane] = make_float4(mma_weight_b_detail::acc_bits(acc[0][b][0] + acc[1][b][0]),
                                                          mma_weight_b_detail::acc_bits(acc[0][b][1] + acc[1][b][1]),
                                                          mma_weight_b_detail::acc_bits(acc[0][b][2] + acc[1][b][2]),
                                                          mma_weight_b_detail::acc_bits(acc[0][b][3] + acc[1][b][3]));
  __syncthreads();
  // Item i = fragment i / 32 (rows row0 + 8 (i / 32) ..) of lane i % 32: tokens l / 4 and l / 4 + 8,
  // rows 2 (l % 4) and + 1; thread i owns it (Shape::kItems <= threads).
  const int i = sd::thread_index();
  if (i >= Shape::kItems) return;
  float4 v = smem_parts[i];
  for (int q = 1; q < W; ++q) mma_weight_b_detail::add4<Acc>(v, smem_parts[q * Shape::kItems + i]);
  if (split_k > 1) {
    sd::cluster_wait_acquire();  // the cluster's CTAs run; rank 0's mbarrier is initialised
    if (rank != 0) {
      // Into rank 0's slot `rank`, completing on its mbarrier; nothing here is read after.
      sd::st_async_16(sd::map_cluster_rank(sd::smem_addr(slots + rank * Shape::kItems + i), 0), v,
                      sd::map_cluster_rank(bar, 0));
      return;
    }
    sd::mbar_wait(bar, 0);  // every other rank's bytes have landed
    for (int r = 1; r < split_k; ++r) mma_weight_b_detail::add4<Acc>(v, slots[r * Shape::kItems + i]);
  }
  // The store of item i. The common case (no bias or activation, output in the input's type, paired
  // stores aligned) takes a short path of two 4-byte stores; the rest goes through store_pair
  // (the general path's code cost the last CTA 0.2-0.4 us although these launches never took its
  // branches). Indices read afresh.
  if constexpr (kIs8Bit<In>) {
    // 8-bit: every store dequantizes (there is no plain path), element pairs through store_pair.
    const int e_row0 = sd::cta_index() * Shape::kRows;
    const int l = i % 32, n0 = e_row0 + 8 * (i / 32) + 2 * (l % 4), m0 = l / 4;
    mma_weight_b_detail::store_dequantized_pair<In>(p, m0, n0, v.x, v.y);
    mma_weight_b_detail::store_dequantized_pair<In>(p, m0 + 8, n0, v.z, v.w);
  } else {
    const bool plain = p.bias_type == kSkinnyNone && p.activation == 0 && p.out_type == sd::kOwnOutType<In> &&
                       (p.ldo & 1) == 0 && (reinterpret_cast<std::uintptr_t>(p.out) & 3) == 0;
    const int e_row0 = sd::cta_index() * Shape::kRows;
    const int l = i % 32, n0 = e_row0 + 8 * (i / 32) + 2 * (l % 4), m0 = l / 4;
    if (plain && n0 + 1 < p.n) {
      mma_weight_b_detail::store_plain_pair<In>(p, m0, n0, v.x, v.y);
      mma_weight_b_detail::store_plain_pair<In>(p, m0 + 8, n0, v.z, v.w);
    } else {
      mma_weight_b_detail::store_pair(p, m0, n0, v.x, v.y);
      mma_weight_b_detail::store_pair(p, m0 + 8, n0, v.z, v.w);
    }
  }
#endif
}

}  // namespace tgemm::kernels
