// Batched small-M kernels for sm_90a: out[i] = a[i] @ op(b[i]) (+ bias[N]) for every product
// i < B of batched_gemm, M <= 16, bf16/fp16 in, fp32 accumulation, bf16/fp16/fp32 out, on CUDA
// cores (and mma.sync for b [N, K]), one launch over the whole batch (grid (N tiles, B)).
//
// Why: the decode-shaped batched products (DeepSeek MLA's absorbed projections: B = 16 or 128
// heads, M = 1, N x K = 512 x 128 or 128 x 512) are one small GEMM per head; cuBLASLt's
// strided-batched tiles (64-128 rows of M) spend most of their MMAs on padding and its per-head
// CTA reads the head's weight at a fraction of the bandwidth. At M <= 16 the FLOPs are 2·M per
// weight element, far below what the FMA units do while the weights stream, so the time is the
// bytes of b (B·N·K·2) over the bandwidth: the kernels only have to stream every product's b
// once with 16-byte loads from enough CTAs to keep the memory system busy.
//
// Two layouts of b, a CUDA-core kernel each, and a tensor-core kernel for the first:
//   sm90_batched_gemv_nk: b[i] stored [N, K] (K contiguous, the dense GEMV's pattern). LANES
//     lanes share one row of b: lane l reads 16-byte chunks l, l + LANES, ... of the row, with
//     the same 8 k of every token's a row (through L1), and the LANES partial sums meet by warp
//     shuffles (xor, a fixed order: bit-identical run to run). K % 8 != 0: the chunk that
//     straddles K is read element by element by the lane whose stride reaches it.
//   sm90_batched_gemv_kn: b[i] stored [K, N] (N contiguous). A thread owns one 16-byte chunk of
//     columns (8 consecutive n) and a k-slice (k = slice, slice + SLICES, ...): a warp reads
//     rows of b coalesced along N. a's element (m, k) is read as a scalar (the same address for
//     every thread of a slice: one L1 broadcast), either transpose. The slices' sums meet in
//     shared memory, summed in slice order by one thread per column (bit-identical run to run).
//     N % 8 != 0: the last chunk of columns is read element by element.
//   sm90_batched_mma_nk: b[i] stored [N, K], M <= 16 on tensor cores: a warp's 8 rows of b are the
//     n8 B operand of mma.m16n8k16 and the 16 tokens (rows of a, padded) its A operand. Lane
//     (g, t) loads 16-byte chunk c0 + t of b's row g and of a's rows g and g + 8 (UNROLL such
//     chunks 4 apart in flight), and two MMAs consume each chunk (skinny_detail::mma_k32: the k
//     order inside a chunk is the same in A and B, so the sum is the product's). A CTA is 4
//     warps, 32 rows of b. K % 8 != 0: one more step in which lane t = 0 holds the straddling
//     chunk, zeros past K.
// Tokens past M read the last token's row (their sums are never stored), so the loads carry no
// per-token branch. The bias is added once in fp32 before the output's rounding.
//
// Preconditions (the host's batched_tile_accepts, src/backends/skinny/skinny_batched_names.h):
// an sm_90 image; 1 <= M <= M_MAX; 1 <= N, K <= 2^30; B <= 65535 (grid y); b's base and batch
// stride 16-byte aligned with ldb a multiple of 8; nk: a not transposed, a 16-byte aligned with
// lda a multiple of 8 (when M > 1); out and bias element-aligned. Grid (ceil(N / block_n), B),
// 128 (nk) or 256 (kn) threads, no dynamic shared memory.
//
// mma: a and b rows 16-byte chunks as for nk; grid (ceil(N / 32), B), 128 threads.
//
// Test: tests/gpu/test_batched_skinny.cpp (every tile against an fp32 host reference on the
// suite's decode shapes and random odd shapes, broadcast batches, NaN-poisoned outputs; the
// dispatch of a table row naming a tile). Bench: `tgemm tune` of bench/shapes/batched_shapes.csv's
// problems, then `python3 bench/torch_bench.py --batched --no-overhead` (docs/performance.md).
#pragma once

#include <cstdint>

#include "kernels/common/numeric.cuh"
#include "kernels/sm90/sm90_skinny_common.cuh"
#include "kernels/sm90/sm90_skinny_gemv.cuh"

namespace tgemm::kernels {

struct BatchedSkinnyParams {
  const void* a = nullptr;     // product i's a at a + i * stride_a: [M, K] ld lda, or [K, M] (transpose_a)
  const void* b = nullptr;     // product i's b at b + i * stride_b: [N, K] (nk) or [K, N] (kn), ld ldb
  void* out = nullptr;         // product i's out at out + i * stride_out: [M, N] ld ldo
  const void* bias = nullptr;  // [N] or nullptr, shared by every product
  int m = 0, n = 0, k = 0;
  int transpose_a = 0;
  std::int64_t lda = 0, ldb = 0, ldo = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_out = 0;
  int out_type = kSkinnyBf16;  // SkinnyElem
  int bias_type = kSkinnyNone;
};

namespace batched_detail {

__device__ __forceinline__ void store(const BatchedSkinnyParams& p, std::int64_t batch, int m, int n, float v) {
  switch (p.bias_type) {
    case kSkinnyBf16: v += to_float(static_cast<const bf16*>(p.bias)[n]); break;
    case kSkinnyFp16: v += to_float(static_cast<const fp16*>(p.bias)[n]); break;
    case kSkinnyF32: v += static_cast<const float*>(p.bias)[n]; break;
    default: break;
  }
  const std::int64_t off = batch * p.stride_out + static_cast<std::int64_t>(m) * p.ldo + n;
  switch (p.out_type) {
    case kSkinnyBf16: static_cast<bf16*>(p.out)[off] = from_float<bf16>(v); break;
    case kSkinnyFp16: static_cast<fp16*>(p.out)[off] = from_float<fp16>(v); break;
    default: static_cast<float*>(p.out)[off] = v; break;
  }
}

// acc[e] += x * w[e] over the 8 elements of a chunk of b.
template <typename In>
__device__ __forceinline__ void axpy8(float x, const uint4& w, float (&acc)[8]) {
  const std::uint32_t ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = gemv_detail::unpack2<In>(ws[i]);
    acc[2 * i] = fmaf(x, f.x, acc[2 * i]);
    acc[2 * i + 1] = fmaf(x, f.y, acc[2 * i + 1]);
  }
}

}  // namespace batched_detail

template <typename In, int M_MAX, int LANES>
__global__ void __launch_bounds__(128) sm90_batched_gemv_nk(const BatchedSkinnyParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched there: the host checks the loaded image's PTX arch first
#else
  static_assert(LANES == 8 || LANES == 16 || LANES == 32, "LANES: lanes of one warp per row of b");
  namespace sd = skinny_detail;
  constexpr int kRows = 128 / LANES;
  // Chunks of b a lane loads before its arithmetic: two while the tokens' chunks fit the
  // registers (4 per chunk and token), one from 8 tokens on.
  constexpr int kChunks = M_MAX >= 8 ? 1 : 2;
  const int sub = static_cast<int>(threadIdx.x) % LANES;
  const int n = static_cast<int>(blockIdx.x) * kRows + static_cast<int>(threadIdx.x) / LANES;
  const std::int64_t batch = blockIdx.y;
  const In* a = static_cast<const In*>(p.a) + batch * p.stride_a;
  const In* b = static_cast<const In*>(p.b) + batch * p.stride_b;

  float acc[M_MAX];
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) acc[m] = 0.0f;

  if (n < p.n) {
    const In* b_row = b + static_cast<std::int64_t>(n) * p.ldb;
    const uint4* w_row = reinterpret_cast<const uint4*>(b_row);
    const uint4* x_rows[M_MAX];
#pragma unroll
    for (int m = 0; m < M_MAX; ++m)
      x_rows[m] = reinterpret_cast<const uint4*>(a + static_cast<std::int64_t>(min(m, p.m - 1)) * p.lda);
    const int full = p.k >> 3;  // whole chunks of a row
#pragma unroll 1
    for (int c0 = sub; c0 < full; c0 += kChunks * LANES) {
      uint4 wv[kChunks];
      uint4 xv[kChunks][M_MAX];
#pragma unroll
      for (int j = 0; j < kChunks; ++j) {
        const int c = c0 + j * LANES;
        const bool in = c < full;
        wv[j] = sd::load_weight_if(w_row + c, in);
#pragma unroll
        for (int m = 0; m < M_MAX; ++m) xv[j][m] = sd::load_activation_if(x_rows[m] + c, in);
      }
#pragma unroll
      for (int j = 0; j < kChunks; ++j)
#pragma unroll
        for (int m = 0; m < M_MAX; ++m) acc[m] = gemv_detail::dot8<In>(wv[j], xv[j][m], acc[m]);
    }
    const int rest = p.k - 8 * full;
    if (rest != 0 && sub == full % LANES) {
      const uint4 w = sd::load_partial_chunk(b_row + 8 * static_cast<std::int64_t>(full), rest);
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) {
        const In* x = a + static_cast<std::int64_t>(min(m, p.m - 1)) * p.lda + 8 * static_cast<std::int64_t>(full);
        acc[m] = gemv_detail::dot8<In>(w, sd::load_partial_chunk(x, rest), acc[m]);
      }
    }
  }
  // Every lane of the warp reaches the shuffles (rows past N hold zeros).
#pragma unroll
  for (int m = 0; m < M_MAX; ++m)
#pragma unroll
    for (int off = LANES / 2; off > 0; off /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], off);
  if (n < p.n) {
#pragma unroll
    for (int m = 0; m < M_MAX; ++m)
      if (m % LANES == sub && m < p.m) batched_detail::store(p, batch, m, n, acc[m]);
  }
#endif
}

template <typename In, int M_MAX, int COLS>
__global__ void __launch_bounds__(256) sm90_batched_gemv_kn(const BatchedSkinnyParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched there: the host checks the loaded image's PTX arch first
#else
  static_assert(COLS >= 1 && COLS <= 32 && 256 % COLS == 0, "COLS: 16-byte column chunks per CTA");
  namespace sd = skinny_detail;
  constexpr int kSlices = 256 / COLS;
  // The slices' sums of one token: 8 KB whatever COLS.
  __shared__ float partial[kSlices][COLS * 8];
  const int col = static_cast<int>(threadIdx.x) % COLS;
  const int slice = static_cast<int>(threadIdx.x) / COLS;
  const int n0 = (static_cast<int>(blockIdx.x) * COLS + col) * 8;
  const std::int64_t batch = blockIdx.y;
  const In* a = static_cast<const In*>(p.a) + batch * p.stride_a;
  const In* b = static_cast<const In*>(p.b) + batch * p.stride_b;

  float acc[M_MAX][8];
#pragma unroll
  for (int m = 0; m < M_MAX; ++m)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[m][e] = 0.0f;

  if (n0 < p.n) {
    const int cols = min(8, p.n - n0);
    const In* b_col = b + n0;
    // a's element (m, k) at m * step_m + k * step_k.
    const std::int64_t step_m = p.transpose_a ? 1 : p.lda;
    const std::int64_t step_k = p.transpose_a ? p.lda : 1;
    const In* x_rows[M_MAX];
#pragma unroll
    for (int m = 0; m < M_MAX; ++m) x_rows[m] = a + static_cast<std::int64_t>(min(m, p.m - 1)) * step_m;
#pragma unroll 1
    for (int k0 = slice; k0 < p.k; k0 += 2 * kSlices) {
      // Two rows of b in flight before the arithmetic.
      const int k1 = k0 + kSlices;
      const bool second = k1 < p.k;
      const In* w0p = b_col + static_cast<std::int64_t>(k0) * p.ldb;
      const In* w1p = b_col + static_cast<std::int64_t>(second ? k1 : k0) * p.ldb;
      uint4 w0, w1;
      if (cols == 8) {
        w0 = sd::load_weight(w0p);
        w1 = sd::load_weight_if(w1p, second);
      } else {
        w0 = sd::load_partial_chunk(w0p, cols);
        w1 = second ? sd::load_partial_chunk(w1p, cols) : make_uint4(0u, 0u, 0u, 0u);
      }
      float x0[M_MAX], x1[M_MAX];
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) {
        x0[m] = to_float(x_rows[m][static_cast<std::int64_t>(k0) * step_k]);
        x1[m] = second ? to_float(x_rows[m][static_cast<std::int64_t>(k1) * step_k]) : 0.0f;
      }
#pragma unroll
      for (int m = 0; m < M_MAX; ++m) {
        batched_detail::axpy8<In>(x0[m], w0, acc[m]);
        batched_detail::axpy8<In>(x1[m], w1, acc[m]);
      }
    }
  }
  const int t = static_cast<int>(threadIdx.x);
  const int n_out = static_cast<int>(blockIdx.x) * COLS * 8 + t;
#pragma unroll
  for (int m = 0; m < M_MAX; ++m) {
    if (m >= p.m) break;  // the same for every thread: the barriers below stay uniform
#pragma unroll
    for (int e = 0; e < 8; ++e) partial[slice][col * 8 + e] = acc[m][e];
    __syncthreads();
    if (t < COLS * 8 && n_out < p.n) {
      float sum = partial[0][t];
      for (int s = 1; s < kSlices; ++s) sum += partial[s][t];
      batched_detail::store(p, batch, m, n_out, sum);
    }
    __syncthreads();
  }
#endif
}

template <typename In, int UNROLL>
__global__ void __launch_bounds__(128) sm90_batched_mma_nk(const BatchedSkinnyParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // never launched there: the host checks the loaded image's PTX arch first
#else
  namespace sd = skinny_detail;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const int n_base = (static_cast<int>(blockIdx.x) * 4 + static_cast<int>(threadIdx.x) / 32) * 8;
  const int n = n_base + g;  // this lane's row of b
  const bool row_in = n < p.n;
  const std::int64_t batch = blockIdx.y;
  const In* a = static_cast<const In*>(p.a) + batch * p.stride_a;
  const In* b = static_cast<const In*>(p.b) + batch * p.stride_b;
  // Rows past N and tokens past M read a valid row (clamped) or nothing; their sums are not stored.
  const In* b_row = b + static_cast<std::int64_t>(min(n, p.n - 1)) * p.ldb;
  const In* a_lo = a + static_cast<std::int64_t>(min(g, p.m - 1)) * p.lda;
  const In* a_hi = a + static_cast<std::int64_t>(min(g + 8, p.m - 1)) * p.lda;
  const uint4* w_row = reinterpret_cast<const uint4*>(b_row);
  const uint4* x_lo = reinterpret_cast<const uint4*>(a_lo);
  const uint4* x_hi = reinterpret_cast<const uint4*>(a_hi);

  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int full = p.k >> 3;
  // Every lane runs every step (full is the same for the warp): mma.sync needs the whole warp.
#pragma unroll 1
  for (int c0 = 0; c0 < full; c0 += 4 * UNROLL) {
    uint4 wv[UNROLL], lo[UNROLL], hi[UNROLL];
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) {
      const int ch = c0 + 4 * j + t;
      const bool in = ch < full;
      wv[j] = sd::load_weight_if(w_row + ch, in && row_in);
      lo[j] = sd::load_activation_if(x_lo + ch, in);
      hi[j] = sd::load_activation_if(x_hi + ch, in);
    }
#pragma unroll
    for (int j = 0; j < UNROLL; ++j) sd::mma_k32<In>(c, lo[j], hi[j], wv[j]);
  }
  const int rest = p.k - 8 * full;
  if (rest != 0) {
    uint4 w = make_uint4(0u, 0u, 0u, 0u), lo = w, hi = w;
    if (t == 0) {
      const std::int64_t at = 8 * static_cast<std::int64_t>(full);
      if (row_in) w = sd::load_partial_chunk(b_row + at, rest);
      lo = sd::load_partial_chunk(a_lo + at, rest);
      hi = sd::load_partial_chunk(a_hi + at, rest);
    }
    sd::mma_k32<In>(c, lo, hi, w);
  }
  // Accumulators of lane (g, t): tokens g and g + 8, columns n_base + 2t and n_base + 2t + 1.
  const int col = n_base + 2 * t;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int token = g + 8 * (i / 2), nn = col + i % 2;
    if (token < p.m && nn < p.n) batched_detail::store(p, batch, token, nn, c[i]);
  }
#endif
}

}  // namespace tgemm::kernels
