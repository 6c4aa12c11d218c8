// Weight-as-A MMA kernel for sm_90a, small M: out[M, N] = x[M, K] · w[N, K]^T (+ bias[N]) for
// M <= M_TILE (a multiple of 8 up to 64; the backend builds 8, 16, 32), bf16 or fp16 inputs, fp32
// accumulation, bf16/fp16/fp32 output, bias of bf16/fp16/fp32 added once in fp32 before the output
// cast, then the activation.
//
// Design (the bytes are the weight's; FLOPs are negligible at small M):
// - The weight is the MMA's A operand (m16n8k16: 16 weight rows per m16 tile, 8 tokens per n8
//   tile). It streams once, straight from global memory into A fragments: each lane loads 16
//   contiguous bytes per weight row and 32-wide k-block. The mma.m16n8k16 fragment holds
//   k {2t, 2t+1, 2t+8, 2t+9} for lane t of a quad; because a dot product may sum its k in any
//   order, k is permuted identically in A (w) and B (x) so that one 16-byte load of 8 contiguous
//   k feeds two MMAs (words 0-1 the first, words 2-3 the second). The same permutation makes each
//   lane's x fragment 16 contiguous bytes too.
// - A warp owns ROWS_PER_WARP weight rows (R = ROWS_PER_WARP/16 m16 tiles) and all M_TILE tokens
//   (M_TILE/8 n8 tiles); every weight element is reused across all tokens from registers.
// - Main loop, STAGES == 0 (register batches): UNROLL k-blocks are loaded before the first MMA,
//   UNROLL*R*2 16-byte weight loads in flight per lane, no shared memory. x is read through L1
//   (ld.global.nc), w bypasses L1 (L1::no_allocate) so it does not evict x; x bytes re-read from
//   L2 are M/BLOCK_N of the weight bytes.
//   STAGES >= 2 (cp.async ring): each warp streams its weight rows through a private
//   shared-memory ring of STAGES slots of UNROLL k-blocks, filled by row-contiguous 16-byte
//   cp.async copies (STAGES - 1 slots in flight while one is consumed, no CTA barrier:
//   wait_group + __syncwarp), read back in fragment order.
// - A CTA is WARPS_N x WARPS_K warps over BLOCK_N = ROWS_PER_WARP*WARPS_N rows; the WARPS_K warps
//   split the CTA's k-range and are summed through shared memory in warp order. The grid is
//   (ceil(N/BLOCK_N), split_k); with split_k > 1 the split_k CTAs of one row tile form a thread
//   block cluster (1, split_k, 1): every warp stores its partial into the leader CTA's shared
//   memory (one barrier phase, the other CTAs exit) and the leader sums the parts in order; when
//   the partials are too large for that (above 64 KB) the CTAs sum their warps first and share
//   the final sum through distributed shared memory in rank order. Every sum has a fixed order,
//   so results are bit-identical run to run, and no state outlives the launch (no workspace, no
//   counters): safe under CUDA-graph replay.
// - Rows past N and tokens past M are clamped to the last valid row (valid addresses, results
//   discarded), so the main loop has no predicates; the k tail (K not a multiple of 32) is one
//   predicated pass of whole 16-byte chunks, plus, for K not a multiple of 8, element loads of
//   the one chunk that straddles K.
//
// Preconditions (the host side's can_implement checks them): an sm_90 device running an image
// built for compute_90 or later (older passes compile to a trap); 1 <= M <= M_TILE; N >= 1;
// 1 <= K <= 2^30; x and w 16-byte aligned with lda, ldb multiples of 8 elements (lda is
// ignored when M = 1, ldb when N = 1); out, bias element-aligned; split_k in 1..8, launched as
// a cluster of (1, split_k, 1) when above 1, with MmaWeightAShape::smem_bytes(split_k) bytes of
// dynamic shared memory (the host raises the kernel's limit to kMaxSmemBytes first).
//
// Test: tests/gpu/test_skinny.cu (every variant against the fp32 reference kernel, tails, bias,
// determinism, graph replay, refusals): ctest --test-dir build/release -R Skinny.
// Bench: `tgemm bench` over bench/shapes/llm_shapes.csv at M = 1, 16 with --candidates.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "kernels/sm90/sm90_skinny_common.cuh"

namespace tgemm::kernels {

// Compile-time facts of one tile configuration, shared by the kernel and the host launcher.
// STAGES == 0: the register-batch main loop (UNROLL k-blocks in registers per batch);
// STAGES >= 2: the cp.async ring (STAGES slots of UNROLL k-blocks per warp in shared memory).
template <int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int STAGES>
struct MmaWeightAShape {
  static_assert(M_TILE % 8 == 0 && M_TILE >= 8 && M_TILE <= 64, "M_TILE: 8, 16, 24, ..., 64");
  static_assert(ROWS_PER_WARP % 16 == 0, "ROWS_PER_WARP: a multiple of the MMA's 16 rows");
  static_assert(STAGES == 0 || STAGES >= 2, "STAGES: 0 (register batches) or a ring of >= 2");
  static_assert(STAGES == 0 || UNROLL == 1 || UNROLL == 2 || UNROLL == 4 || UNROLL == 8,
                "pipelined UNROLL: 1, 2, 4 or 8 k-blocks per stage (4 * UNROLL lanes per row)");
  static constexpr int kTokenTiles = M_TILE / 8;        // n8 MMA tiles over tokens
  static constexpr int kRowTiles = ROWS_PER_WARP / 16;  // m16 MMA tiles over weight rows
  static constexpr int kBlockN = ROWS_PER_WARP * WARPS_N;
  static constexpr int kWarps = WARPS_N * WARPS_K;
  static constexpr int kThreads = 32 * kWarps;
  // float4 accumulator fragments per lane over the CTA's rows and tokens.
  static constexpr int kFrags = WARPS_N * kRowTiles * kTokenTiles;
  // One k-part's partial of the CTA's tile: a float4 per fragment and lane.
  static constexpr int kPartBytes = kFrags * 32 * 16;
  // Ring: one stage of one warp is UNROLL k-blocks x ROWS_PER_WARP rows x 64 bytes.
  static constexpr int kStageBytes = UNROLL * ROWS_PER_WARP * 64;
  static constexpr int kRingBytes = STAGES * kStageBytes * kWarps;
  // Split-K reduction: "flat" pushes every warp's partial straight into the cluster leader's
  // shared memory (split_k * WARPS_K parts, one barrier); above this size the CTA first sums
  // its warps and the ranks share the final sum through distributed shared memory.
  static constexpr int kFlatLimit = 64 * 1024;
  static constexpr __host__ __device__ bool flat(int split_k) {
    return split_k > 1 && split_k * WARPS_K * kPartBytes <= kFlatLimit;
  }
  // Dynamic shared memory of a launch: the ring, then the reduction slots.
  static constexpr __host__ __device__ int smem_bytes(int split_k) {
    return kRingBytes + (flat(split_k) ? split_k * WARPS_K : WARPS_K) * kPartBytes;
  }
  // The most any split_k in 1..8 needs (flat at the largest split_k that still fits the
  // limit, or WARPS_K slots).
  static constexpr int kMaxSmemBytes =
      kRingBytes + (kFlatLimit > WARPS_K * kPartBytes ? kFlatLimit : WARPS_K * kPartBytes);
  static_assert(kMaxSmemBytes <= 227 * 1024, "shared memory above the sm_90 limit");
  // Register cap: 128 for the register batches (16 warps per SM); for the ring, as many as the
  // CTAs that its shared memory lets reside on an SM (227 KB, 1 KB reserved per CTA) leave,
  // at most 24 warps per SM (~80 registers).
  static constexpr int kSmemCtas = 227 * 1024 / (kRingBytes + WARPS_K * kPartBytes + 1024);
  static constexpr int kRingCtas = kSmemCtas < 768 / kThreads ? kSmemCtas : 768 / kThreads;
  static constexpr int kMinBlocks = STAGES == 0 ? 512 / kThreads : (kRingCtas > 0 ? kRingCtas : 1);
};

// grid (ceil(N / BLOCK_N), split_k), block kThreads, dynamic shared memory
// Shape::smem_bytes(split_k); cluster (1, split_k, 1) when split_k > 1.
template <typename In, int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int STAGES>
__global__ void __launch_bounds__(
    MmaWeightAShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>::kThreads,
    MmaWeightAShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>::kMinBlocks)
    sm90_skinny_mma_weight_a(const SkinnyParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  // Built into a pre-Hopper image (clusters, distributed shared memory and L2 prefetch hints
  // are sm_90): never launched there, the host checks the loaded image's PTX arch first.
  __trap();
#else
  using Shape = MmaWeightAShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>;
  constexpr int NT = Shape::kTokenTiles;
  constexpr int R = Shape::kRowTiles;
  namespace sd = skinny_detail;

  extern __shared__ uint4 skinny_smem[];  // ring (STAGES > 0), then the reduction slots

  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int wn = warp % WARPS_N, wk = warp / WARPS_N;
  const int g = lane / 4, t = lane % 4;  // MMA group (row / token) and thread in group (k)
  const int n_warp = static_cast<int>(blockIdx.x) * Shape::kBlockN + wn * ROWS_PER_WARP;
  const int split_k = static_cast<int>(gridDim.y);

  // This warp's contiguous range of 32-wide k-blocks: split_k * WARPS_K balanced parts, the
  // CTA's WARPS_K parts adjacent.
  const int kb_total = (p.k + 31) / 32;
  const int parts = split_k * WARPS_K;
  const int part = static_cast<int>(blockIdx.y) * WARPS_K + wk;
  const int kb_begin = static_cast<int>(static_cast<std::int64_t>(kb_total) * part / parts);
  const int kb_end = static_cast<int>(static_cast<std::int64_t>(kb_total) * (part + 1) / parts);

  float acc[R][NT][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][j][i] = 0.0f;

  // Token rows of this lane's x fragments (tokens past M clamped to the last), at kb_begin.
  const In* x_rows[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int row = min(j * 8 + g, p.m - 1);
    x_rows[j] = static_cast<const In*>(p.x) + static_cast<std::int64_t>(row) * p.lda + 8 * t +
                static_cast<std::int64_t>(kb_begin) * 32;
  }

  // Split-K: announce this CTA has started; the wait before the first distributed-shared-memory
  // access makes sure every CTA of the cluster is running (its shared memory exists).
  if (split_k > 1) sd::cluster_arrive_relaxed();

  if constexpr (STAGES == 0) {
    const int kb_full = p.k / 32;
    const int kb_end_full = min(kb_end, kb_full);
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
    // Pointers advance with the loop so every load of a batch is base + immediate offset.
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) w_rows[r][h] += kb_begin * 32;

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
  } else {
    // Ring: each warp streams its rows' k-range through STAGES private slots of UNROLL
    // k-blocks, (STAGES - 1) slots in flight while one is consumed; no CTA barrier. The copies
    // are row-contiguous in global memory: 4 * UNROLL lanes read 16 * 4 * UNROLL consecutive
    // bytes of one row (UNROLL k-blocks), so an instruction covers 32 / (4 * UNROLL) rows; each
    // lane writes its chunk where the consuming lane's fragment expects it (slot layout
    // (k-block, row tile, half, lane) of 16-byte chunks, the k-block's 64-byte halves swapped
    // on odd k-blocks so that writes and reads are both free of bank conflicts). Zero-fill
    // (cp.async src-size) covers the k tail, K % 8 included: no separate tail pass.
    constexpr int kLanesPerRow = 4 * UNROLL;
    constexpr int kRowsPerIssue = 32 / kLanesPerRow;
    constexpr int kIssues = ROWS_PER_WARP / kRowsPerIssue;  // copies per lane per stage
    constexpr int kSb = Shape::kStageBytes;
    const std::uint32_t ring = sd::smem_addr(skinny_smem) + warp * (STAGES * kSb);
    const int c = lane % kLanesPerRow;  // 16-byte chunk of the stage this lane copies
    const int cu = c / 4;               // ... its k-block in the stage
    const int lrow = lane / kLanesPerRow;
    const std::uint32_t swz = (cu & 1) << 6;
    // Copy i of a stage: row i * kRowsPerIssue + lrow of the warp's rows; rows past N are
    // zero-filled (src-size 0: nothing read) instead of clamped, so one base pointer serves.
    const int rows_left = p.n - n_warp - lrow;  // copy i reads a row iff i * kRowsPerIssue < this
    const char* src = reinterpret_cast<const char*>(
        static_cast<const In*>(p.w) + static_cast<std::int64_t>(min(n_warp + lrow, p.n - 1)) * p.ldb +
        static_cast<std::int64_t>(kb_begin) * 32 + 8 * c);
    const std::int64_t src_step = static_cast<std::int64_t>(kRowsPerIssue) * p.ldb * sizeof(In);
    // Slot offset of (k-block cu, row) for lane (g = row % 8, t = c % 4): the consumer reads
    // (cu * R + r) * 1024 + h * 512 + lane * 16 = cu * R * 1024 + row * 64 + t * 16.
    const std::uint32_t dst0 = static_cast<std::uint32_t>(cu * R * 1024 + lrow * 64 + (c % 4) * 16);
    const int n_st = (kb_end - kb_begin + UNROLL - 1) / UNROLL;
    auto issue = [&](int s) {
      const int blk = kb_begin + s * UNROLL + cu;
      const int rest = p.k - (blk * 32 + 8 * (c % 4));  // elements of K from the chunk on
      const int bytes = blk < kb_end ? 2 * max(0, min(rest, 8)) : 0;
      const std::uint32_t slot = ring + (s % STAGES) * kSb;
      const char* stage_src = src + static_cast<std::int64_t>(s) * (UNROLL * 64);
#pragma unroll
      for (int i = 0; i < kIssues; ++i) {
        const int b = i * kRowsPerIssue < rows_left ? bytes : 0;
        sd::cp_async_16(slot + ((dst0 + i * kRowsPerIssue * 64) ^ swz),
                        b > 0 ? stage_src + i * src_step : p.w, b);
      }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < n_st) issue(s);
      sd::cp_async_commit();
    }
    const std::uint32_t lane_off[2] = {static_cast<std::uint32_t>(lane * 16),
                                       static_cast<std::uint32_t>(lane * 16) ^ 64u};
#pragma unroll 1
    for (int s = 0; s < n_st; ++s) {
      // x of this stage first: its latency overlaps the wait for the weights.
      uint4 xv[UNROLL][NT];
      const int blk0 = kb_begin + s * UNROLL;
      if (blk0 + UNROLL <= kb_end && (blk0 + UNROLL) * 32 <= p.k) {  // warp-uniform: all inside
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
          for (int j = 0; j < NT; ++j)
            xv[u][j] = sd::load_activation(x_rows[j] + (s * UNROLL + u) * 32);
      } else {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int rest = blk0 + u < kb_end ? p.k - ((blk0 + u) * 32 + 8 * t) : 0;
#pragma unroll
          for (int j = 0; j < NT; ++j)
            xv[u][j] = sd::load_activation_guarded(x_rows[j] + (s * UNROLL + u) * 32, rest);
        }
      }
      __syncwarp();  // every lane has read slot (s - 1) % STAGES, which the next issue refills
      if (s + STAGES - 1 < n_st) issue(s + STAGES - 1);
      sd::cp_async_commit();
      sd::cp_async_wait<STAGES - 1>();  // this lane's copies of stage s have landed
      __syncwarp();                     // ... and every other lane's
      const std::uint32_t slot = ring + (s % STAGES) * kSb;
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const uint4 w_lo = sd::lds128(slot + (u * R + r) * 1024 + lane_off[u & 1]);
          const uint4 w_hi = sd::lds128(slot + (u * R + r) * 1024 + 512 + lane_off[u & 1]);
#pragma unroll
          for (int j = 0; j < NT; ++j) sd::mma_k32<In>(acc[r][j], w_lo, w_hi, xv[u][j]);
        }
    }
    sd::cp_async_wait<0>();  // no copy may still target the ring (only empty groups remain)
  }

  // Epilogue, through shared memory so that no register array is indexed at run time and the
  // stores are spread over the CTA. Partials are summed in a fixed order (k-part order: CTA
  // rank, then warp), so results are bit-identical run to run.
  constexpr int kItems = Shape::kFrags * 32;  // float4 items of one k-part's partial
  // The thread's indices again, read afresh rather than kept live through the main loop (the
  // register-batch loop of the largest tiles sits at the 128-register cap).
  const int tid = sd::thread_index();
  const int e_lane = tid % 32, e_wn = (tid / 32) % WARPS_N, e_wk = (tid / 32) / WARPS_N;
  float4* slots = reinterpret_cast<float4*>(reinterpret_cast<char*>(skinny_smem) + Shape::kRingBytes);
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
  auto publish = [&](float4* dst_part) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int j = 0; j < NT; ++j)
        dst_part[((e_wn * R + r) * NT + j) * 32 + e_lane] =
            make_float4(acc[r][j][0], acc[r][j][1], acc[r][j][2], acc[r][j][3]);
  };

  if (split_k == 1) {
    publish(slots + e_wk * kItems);
    __syncthreads();
    for (int i = tid; i < kItems; i += Shape::kThreads) {
      float4 sum = slots[i];
#pragma unroll
      for (int w = 1; w < WARPS_K; ++w) add(sum, slots[w * kItems + i]);
      store_item(i, sum);
    }
    return;
  }

  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(blockIdx.y);  // == cluster.block_rank() for (1, split_k, 1)
  sd::cluster_wait_acquire();  // every CTA of the cluster has started

  if (Shape::flat(split_k)) {
    // Flat: every warp writes its partial into the leader's (rank 0's) slot `part`, then one
    // barrier phase; the other CTAs leave at once and the leader sums all parts in order.
    publish(cluster.map_shared_rank(slots, 0) + (rank * WARPS_K + e_wk) * kItems);
    sd::cluster_arrive_release();
    if (rank != 0) return;  // exited threads no longer count at the barrier
    sd::cluster_wait_acquire();
    for (int i = tid; i < kItems; i += Shape::kThreads) {
      float4 sum = slots[i];
      for (int q = 1; q < split_k * WARPS_K; ++q) add(sum, slots[q * kItems + i]);
      store_item(i, sum);
    }
    return;
  }

  // Large partials: the CTA sums its warps into slot 0 (each item read and written by one
  // thread), then CTA `rank` finishes its share of the items by summing all ranks' slot 0 in
  // rank order through distributed shared memory.
  publish(slots + e_wk * kItems);
  __syncthreads();
  if constexpr (WARPS_K > 1) {
    for (int i = tid; i < kItems; i += Shape::kThreads) {
      float4 sum = slots[i];
#pragma unroll
      for (int w = 1; w < WARPS_K; ++w) add(sum, slots[w * kItems + i]);
      slots[i] = sum;
    }
  }
  cluster.sync();  // release our partial, acquire the others'
  const int i_end = (rank + 1) * kItems / split_k;
  for (int i = rank * kItems / split_k + tid; i < i_end; i += Shape::kThreads) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int src_rank = 0; src_rank < split_k; ++src_rank)
      add(sum, cluster.map_shared_rank(slots, src_rank)[i]);
    store_item(i, sum);
  }
  cluster.sync();  // no CTA may exit while a peer still reads its shared memory
#endif
}

}  // namespace tgemm::kernels
