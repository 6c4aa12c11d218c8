// Device code shared by the skinny (small-M) kernels of kernels/sm90/sm90_skinny_*.cuh: the
// parameter block, the weight and activation loads, the m16n8k16 MMA, the epilogue's stores, and
// the shared-memory, mbarrier and cluster primitives the kernels build on. No kernel here.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/activation.cuh"
#include "kernels/common/numeric.cuh"

namespace tgemm::kernels {

// The a8w8 operand types (gemm_a8w8): FP8 e4m3 (fn) and INT8. Every other In of the skinny
// kernels is a 16-bit float (bf16, fp16).
using fp8e4m3 = __nv_fp8_e4m3;
template <typename In>
inline constexpr bool kIs8Bit = sizeof(In) == 1;
// Elements of In in one 16-byte chunk: 8 for 16-bit inputs, 16 for 8-bit ones.
template <typename In>
inline constexpr int kChunkElems = 16 / static_cast<int>(sizeof(In));
// The accumulator: int32 for INT8 (exact, as cuBLASLt's IMMA kernels), fp32 otherwise.
template <typename In>
using SkinnyAcc = std::conditional_t<std::is_same_v<In, std::int8_t>, int, float>;

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
  // The epilogue's activation, applied in fp32 after the bias (tgemm::Activation: 0 none, 1 erf
  // GELU, 2 tanh GELU, 3 ReLU; kernels/common/activation.cuh).
  int activation = 0;
  // a8w8 only (8-bit In): the fp32 dequantization scales, device memory read in the epilogue
  // (graph-safe, no host read): x's per token if x_scale_rows, else x_scale[0]; w's per output
  // channel if w_scale_rows, else w_scale[0]. out = acc * x_scale * w_scale (+ bias), as
  // cuda/scale_epilogue.cu and the reference compute it.
  const float* x_scale = nullptr;
  const float* w_scale = nullptr;
  int x_scale_rows = 0;
  int w_scale_rows = 0;
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

// The weight's load (load_weight) if `pred`, else zeros: a predicated PTX load (`@p ld`) into
// registers zeroed first, straight-line code that reads nothing where `pred` is false (the GEMV's
// last pass, the weight-as-B MMA kernel's last batch).
__device__ __forceinline__ uint4 load_weight_if(const void* ptr, bool pred) {
  uint4 v;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n"
      " mov.b32 %3, 0;\n @p ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
      : "=&r"(v.x), "=&r"(v.y), "=&r"(v.z), "=&r"(v.w)
      : "l"(ptr), "r"(static_cast<int>(pred)));
  return v;
}

// The activation's load (through L1, as load_activation) if `pred`, else zeros.
__device__ __forceinline__ uint4 load_activation_if(const void* ptr, bool pred) {
  uint4 v;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n"
      " mov.b32 %3, 0;\n @p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
      : "=&r"(v.x), "=&r"(v.y), "=&r"(v.z), "=&r"(v.w)
      : "l"(ptr), "r"(static_cast<int>(pred)));
  return v;
}

// The first `count` (0..kChunkElems - 1) elements at ptr, zeros after: the chunk that straddles
// K. Never reached for 8-bit In (their K is a multiple of 16, a whole chunk), kept generic so that
// every kernel compiles for every In.
template <typename In>
__device__ __forceinline__ uint4 load_partial_chunk(const In* ptr, int count) {
  if constexpr (kIs8Bit<In>) {
    std::uint32_t b[4] = {0u, 0u, 0u, 0u};
    const auto* e = reinterpret_cast<const unsigned char*>(ptr);
#pragma unroll
    for (int i = 0; i < 16; ++i) b[i / 4] |= (i < count ? static_cast<std::uint32_t>(e[i]) : 0u) << (8 * (i % 4));
    return make_uint4(b[0], b[1], b[2], b[3]);
  } else {
    std::uint32_t h[8];
    const auto* e = reinterpret_cast<const unsigned short*>(ptr);
#pragma unroll
    for (int i = 0; i < 8; ++i) h[i] = i < count ? e[i] : 0u;
    return make_uint4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
  }
}

// One tensor-core MMA of a 16 x 8 tile over 16 bytes of k a row: m16n8k16 for 16-bit In,
// m16n8k32 for 8-bit In (FP8 e4m3 into fp32, INT8 into int32). At the level of 32-bit registers
// the two have the same fragment layout: a0 = (row g, k-word t), a1 = (row g + 8, word t), a2 =
// (row g, word t + 4), a3 = (row g + 8, word t + 4), b0 = (word t, column g), b1 = (word t + 4,
// column g), a k-word holding 2 16-bit or 4 8-bit elements in k order; so every caller that pairs
// A and B words of the same k works unchanged for either width.
template <typename In>
__device__ __forceinline__ void mma_m16n8k16(SkinnyAcc<In> (&c)[4], std::uint32_t a0, std::uint32_t a1,
                                             std::uint32_t a2, std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<In, bf16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else if constexpr (std::is_same_v<In, fp16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else if constexpr (std::is_same_v<In, fp8e4m3>) {
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    static_assert(std::is_same_v<In, std::int8_t>, "In: bf16, fp16, fp8e4m3 or int8");
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
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

// The output element type equal to input type In. The GEMV and the weight-as-B MMA kernel store
// directly when there is no bias and the output is of this type, without store_element's bias and
// output-type switches: that code, present but not taken, cost their last CTA 0.1-0.4 us.
// 8-bit In has none (-2 matches no out_type): their stores always scale.
template <typename In>
inline constexpr int kOwnOutType = kIs8Bit<In>                ? -2
                                   : std::is_same_v<In, bf16> ? kSkinnyBf16
                                                              : kSkinnyFp16;

// The accumulator of token m, output column n as the fp32 value the epilogue stores: for 8-bit In
// dequantized (acc * x_scale * w_scale, in that order, as the reference), else acc itself. m and n
// are clamped into the problem for the scale reads (the stores drop what lies past M or N).
template <typename In>
__device__ __forceinline__ float dequantize(const SkinnyParams& p, int m, int n, SkinnyAcc<In> acc) {
  if constexpr (kIs8Bit<In>) {
    const float xs = p.x_scale[p.x_scale_rows ? min(m, p.m - 1) : 0];
    const float ws = p.w_scale[p.w_scale_rows ? min(n, p.n - 1) : 0];
    return static_cast<float>(acc) * xs * ws;
  } else {
    return acc;
  }
}

// The bias of output column n as fp32 (0 without a bias).
__device__ __forceinline__ float bias_at(const SkinnyParams& p, int n) {
  switch (p.bias_type) {
    case kSkinnyBf16: return to_float(static_cast<const bf16*>(p.bias)[n]);
    case kSkinnyFp16: return to_float(static_cast<const fp16*>(p.bias)[n]);
    case kSkinnyF32: return static_cast<const float*>(p.bias)[n];
    default: return 0.0f;
  }
}

__device__ __forceinline__ void store_element(const SkinnyParams& p, int m, int n, float v) {
  if (m >= p.m || n >= p.n) return;
  v = activate(p.activation, v + bias_at(p, n));
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

// --- Pipelined (STAGES > 0) weight stream: cp.async into a per-warp shared-memory ring. -------

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// mbarriers (the weight-as-B MMA kernel's cross-CTA sum).
__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// One arrival that also announces `bytes` of asynchronous copies still to land on this phase.
__device__ __forceinline__ void mbar_arrive_expect(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile(
      "{\n"
      "  .reg .b64 state;\n"
      "  mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n"
      "}\n" ::"r"(bar),
      "r"(bytes)
      : "memory");
}

// Spins until the barrier's phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        "  .reg .pred ready;\n"
        "  mbarrier.try_wait.parity.shared::cta.b64 ready, [%1], %2;\n"
        "  selp.u32 %0, 1, 0, ready;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
}

// The shared::cluster address of `local` (a shared-memory address of this CTA) in the CTA of
// cluster rank `rank`.
__device__ __forceinline__ std::uint32_t map_cluster_rank(std::uint32_t local, unsigned rank) {
  std::uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
  return r;
}

// 16 bytes into another CTA's shared memory (`remote`, `remote_bar`: shared::cluster addresses),
// completing as 16 transaction bytes on that CTA's mbarrier.
__device__ __forceinline__ void st_async_16(std::uint32_t remote, float4 v, std::uint32_t remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(remote),
               "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(remote_bar)
               : "memory");
}

// 16-byte asynchronous copy global -> shared, L1 bypassed (.cg), 256-byte L2 prefetch; the
// `bytes` (0..16) first bytes are read, the rest of the 16 are zero-filled (0: nothing is read).
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ uint4 lds128(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// x's 16-byte chunk of 8 k starting at ptr, of which `rest` (K - k of the chunk's first
// element) are inside K: all 8, the first `rest` (zeros after), or none (zeros).
template <typename In>
__device__ __forceinline__ uint4 load_activation_guarded(const In* ptr, int rest) {
  if (rest >= 8) return load_activation(ptr);
  if (rest <= 0) return make_uint4(0, 0, 0, 0);
  return load_partial_chunk(ptr, rest);
}

// threadIdx.x through an opaque read, so the compiler re-reads it instead of keeping a copy
// live across the main loop.
__device__ __forceinline__ int thread_index() {
  unsigned v;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(v));
  return static_cast<int>(v);
}

// blockIdx.x through an opaque read, for the same reason.
__device__ __forceinline__ int cta_index() {
  unsigned v;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(v));
  return static_cast<int>(v);
}

// --- Cluster barrier halves (split-K across a (1, split_k, 1) cluster). ---------------------
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

}  // namespace skinny_detail

}  // namespace tgemm::kernels
