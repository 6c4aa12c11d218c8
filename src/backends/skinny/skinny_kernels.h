// The skinny backend's kernel instances as host code sees them: per kernel family, its tile
// configuration, the list of tiles that are instantiated, and the host entry points compiled in
// the instance translation units (skinny_<dtype>_<group>.cu). Host-only header (no CUDA types);
// the kernels are kernels/sm90/sm90_skinny_{mma_weight_a,mma_weight_b,gemv}.cuh, and the solution
// names built from these tiles are explained in skinny_names.h.
#pragma once

#include <cstdint>
#include <vector>

#include "core/problem.h"

namespace tgemm::skinny {

// Elements of dtype t in one 16-byte chunk, the unit of every skinny kernel's loads: 8 for the
// 16-bit inputs, 16 for the 8-bit ones of gemm_a8w8.
inline int chunk_elems(DType t) { return 16 / static_cast<int>(dtype_size(t)); }

// --- Weight-as-A MMA (kernels/sm90/sm90_skinny_mma_weight_a.cuh) ------------------------------

struct MmaWeightATile {
  int m_tile = 0;         // tokens per CTA: M <= m_tile (the kernel runs m_tile/8 n8 MMA tiles)
  int rows_per_warp = 0;  // weight rows per warp, a multiple of the MMA's 16
  int warps_n = 0;        // warps side by side over rows
  int warps_k = 0;        // warps splitting the CTA's k-range, summed in shared memory
  int unroll = 0;         // 32-wide k-blocks a warp loads per batch (stages: per ring slot)
  int stages = 0;         // 0: register batches; >= 2: cp.async ring of this many slots per warp
  int block_n() const { return rows_per_warp * warps_n; }
  // Elements of K one k-block of a warp covers (16-bit inputs only: chunk_elems is 8).
  int k_step(int /*chunk_elems*/ = 8) const { return 32; }
  int threads() const { return 32 * warps_n * warps_k; }
  bool operator==(const MmaWeightATile& o) const {
    return m_tile == o.m_tile && rows_per_warp == o.rows_per_warp && warps_n == o.warps_n && warps_k == o.warps_k &&
           unroll == o.unroll && stages == o.stages;
  }
};

// Every weight-as-A tile, X(m_tile, rows_per_warp, warps_n, warps_k, unroll, stages). Each is
// instantiated for bf16 and fp16 and registered with split_k 1, 2, 4, 8 (a run-time cluster
// size, so it costs no instantiation).
// stages == 0: register batches, chosen so that each lane keeps 4-8 16-byte weight loads in
// flight (unroll * rows_per_warp / 8) within ~128 registers (16 warps per SM).
// stages >= 2: a per-warp cp.async ring in shared memory, stages - 1 slots of unroll k-blocks in
// flight while one is consumed, row-contiguous copies, <= 80 registers.
#define TGEMM_SKINNY_MMA_WEIGHT_A_TILES(X) \
  X(8, 16, 1, 8, 4, 0)                     \
  X(8, 16, 1, 4, 8, 0)                     \
  X(8, 32, 1, 4, 4, 0)                     \
  X(8, 32, 1, 8, 2, 0)                     \
  X(8, 64, 1, 4, 1, 0)                     \
  X(8, 16, 2, 4, 4, 0)                     \
  X(16, 16, 1, 8, 4, 0)                    \
  X(16, 16, 1, 4, 4, 0)                    \
  X(16, 32, 1, 8, 2, 0)                    \
  X(16, 32, 1, 4, 2, 0)                    \
  X(16, 64, 1, 4, 1, 0)                    \
  X(16, 16, 2, 4, 4, 0)                    \
  X(16, 32, 2, 4, 2, 0)                    \
  X(16, 32, 4, 2, 2, 0)                    \
  X(16, 64, 2, 4, 1, 0)                    \
  X(32, 16, 1, 8, 2, 0)                    \
  X(32, 16, 2, 4, 2, 0)                    \
  X(32, 32, 1, 8, 1, 0)                    \
  X(32, 32, 2, 4, 1, 0)                    \
  X(32, 16, 4, 2, 2, 0)                    \
  X(32, 32, 4, 2, 1, 0)                    \
  X(8, 16, 1, 4, 2, 4)                     \
  X(8, 16, 1, 4, 4, 4)                     \
  X(8, 16, 1, 8, 2, 4)                     \
  X(8, 16, 1, 4, 8, 3)                     \
  X(8, 32, 1, 4, 2, 4)                     \
  X(16, 16, 1, 4, 2, 4)                    \
  X(16, 16, 1, 4, 4, 4)                    \
  X(16, 16, 1, 8, 2, 4)                    \
  X(16, 32, 1, 4, 2, 4)                    \
  X(16, 32, 2, 4, 2, 4)

// --- Weight-as-B MMA with cluster split-K (kernels/sm90/sm90_skinny_mma_weight_b.cuh) ---------

struct MmaWeightBTile {
  static constexpr int m_tile = 16;  // x fills the MMA's m16 A operand: M <= 16
  int row_blocks = 0;  // n8 blocks of weight rows per CTA (8 * row_blocks rows)
  int chunks = 0;      // 16-byte chunks a lane loads per row and k-step (see k_step)
  int warps_k = 0;     // warps splitting the CTA's k-range, summed in shared memory
  int unroll = 0;      // k-steps a warp loads per batch
  int block_n() const { return 8 * row_blocks; }
  // Elements of K a k-step covers: 4 lanes x chunks x chunk_elems (32 x chunks for 16-bit inputs,
  // 64 x chunks for 8-bit ones: the same bytes).
  int k_step(int chunk_elems = 8) const { return 4 * chunk_elems * chunks; }
  int threads() const { return 32 * warps_k; }
  bool operator==(const MmaWeightBTile& o) const {
    return row_blocks == o.row_blocks && chunks == o.chunks && warps_k == o.warps_k && unroll == o.unroll;
  }
};

// Every weight-as-B tile, X(row_blocks, chunks, warps_k, unroll); instantiated for bf16 and fp16
// (the "small" translation units) and for FP8 and INT8 (skinny_fp8.cu, skinny_int8.cu: a lane
// loads the same bytes, so the tiles that stream a 16-bit weight stream an 8-bit one), and
// registered with split_k 1, 2, 4, 8 like the weight-as-A tiles.
#define TGEMM_SKINNY_MMA_WEIGHT_B_TILES(X) \
  X(1, 1, 8, 4)                            \
  X(1, 2, 8, 2)                            \
  X(1, 1, 4, 4)                            \
  X(1, 2, 4, 2)                            \
  X(2, 1, 4, 4)                            \
  X(2, 1, 8, 4)

// --- GEMV on CUDA cores (kernels/sm90/sm90_skinny_gemv.cuh) -----------------------------------

struct GemvTile {
  int m_max = 0;   // tokens: M <= m_max (1, 2, 4)
  int warps = 0;   // warps per CTA (a power of two)
  int chunks = 0;  // 16-byte weight chunks each lane loads before its arithmetic
  // Whole passes: where one exists, the split whose segments are whole passes of 32 x chunks
  // chunks (see segs). At K = 5120 the default split leaves every pass partial and runs
  // 1x10240x5120 at 1.18-1.30x of the floor on an H200; one warp a row (5 whole passes of w8 c4)
  // ran it at 1.09x.
  bool whole = false;
  int threads() const { return 32 * warps; }
  // Segments a weight row of K elements is split into (warps per row), a power of two <= warps;
  // ce = chunk_elems (8 for 16-bit inputs, 16 for 8-bit ones).
  // Default: the smallest that gives each lane at most `chunks` chunks of its segment (longer
  // rows loop). whole: the largest whose segments are whole passes (K % ce == 0 and K / ce a
  // multiple of segs x 32 x chunks); where none is, the default's.
  int segs(std::int64_t k, int ce = 8) const {
    const std::int64_t per_warp = 32LL * chunks;
    if (whole && k % ce == 0) {
      int best = 0;
      for (int s = 1; s <= warps; s *= 2)
        if ((k / ce) % (s * per_warp) == 0) best = s;
      if (best > 0) return best;
    }
    const std::int64_t want = (((k + ce - 1) / ce) + per_warp - 1) / per_warp;
    int s = 1;
    while (s < warps && s < want) s *= 2;
    return s;
  }
  int rows_per_cta(std::int64_t k, int ce = 8) const { return warps / segs(k, ce); }
  bool operator==(const GemvTile& o) const {
    return m_max == o.m_max && warps == o.warps && chunks == o.chunks && whole == o.whole;
  }
};

// Every GEMV tile, X(m_max, warps, chunks); each is instantiated for bf16 and fp16 (the "small"
// translation units) and for FP8 and INT8 (skinny_fp8.cu, skinny_int8.cu), and registered twice,
// with the default split and with whole passes (the split is a launch argument). Chunks 2-8: 1-4 KB of a row per warp
// and pass, 4 KB-16 KB of loads in flight per CTA.
#define TGEMM_SKINNY_GEMV_TILES(X) \
  X(1, 8, 2)                       \
  X(1, 8, 4)                       \
  X(1, 8, 8)                       \
  X(1, 4, 4)                       \
  X(2, 8, 4)                       \
  X(2, 8, 8)                       \
  X(4, 8, 4)                       \
  X(4, 8, 8)

// --- Instances ---------------------------------------------------------------------------------

struct SkinnyKernelInfo {
  int ptx_arch = 0;     // PTX arch the running image was built from (90 for compute_90a)
  int ctas_per_sm = 0;  // resident CTAs per SM (occupancy query)
  int registers = 0;    // per thread
};

// One instance of an MMA family (Tile: MmaWeightATile or MmaWeightBTile) for one input dtype.
template <class Tile>
struct SplitKKernel {
  Tile tile;
  DType in = DType::kBFloat16;  // x and w
  // Enqueues the kernel on `stream`: grid (ceil(N / block_n), split_k), a (1, split_k, 1)
  // cluster when split_k > 1. Throws tgemm::Error naming `where` on a launch error.
  void (*launch)(const GemmProblem& p, const GemmArgs& args, int split_k, Stream stream,
                 const char* where) = nullptr;
  // Facts about the loaded kernel image on the current device for a launch with this split_k
  // (its shared memory depends on it); all 0 if a query fails.
  SkinnyKernelInfo (*query)(int split_k) = nullptr;
};
using MmaWeightAKernel = SplitKKernel<MmaWeightATile>;
using MmaWeightBKernel = SplitKKernel<MmaWeightBTile>;

struct GemvKernel {
  GemvTile tile;
  DType in = DType::kBFloat16;
  // Enqueues the kernel with `segs` segments a row (the solution's GemvTile::segs): grid
  // ceil(N / (warps / segs)), tile.threads() threads. Throws tgemm::Error naming `where` on a
  // launch error.
  void (*launch)(const GemmProblem& p, const GemmArgs& args, int segs, Stream stream, const char* where) = nullptr;
  // Facts about the loaded kernel image on the current device; all 0 if a query fails.
  SkinnyKernelInfo (*query)() = nullptr;
};

// One appender per family and instance translation unit: bf16 and fp16; the weight-as-A tiles of
// M tile 8-16 ("small") and 32 ("large"). The CI build (TGEMM_KERNELS=ci) compiles the bf16 small
// unit only and defines TGEMM_SKINNY_CI_SUBSET, so the backend registers just those.
void append_mma_weight_a_kernels_bf16_small(std::vector<MmaWeightAKernel>& out);
void append_mma_weight_a_kernels_bf16_large(std::vector<MmaWeightAKernel>& out);
void append_mma_weight_a_kernels_fp16_small(std::vector<MmaWeightAKernel>& out);
void append_mma_weight_a_kernels_fp16_large(std::vector<MmaWeightAKernel>& out);
void append_mma_weight_b_kernels_bf16(std::vector<MmaWeightBKernel>& out);
void append_mma_weight_b_kernels_fp16(std::vector<MmaWeightBKernel>& out);
void append_gemv_kernels_bf16(std::vector<GemvKernel>& out);
void append_gemv_kernels_fp16(std::vector<GemvKernel>& out);
// The a8w8 instances (FP8 e4m3, INT8): the weight-as-B and GEMV tiles. The CI build compiles the
// FP8 unit and not the INT8 one (TGEMM_SKINNY_CI_SUBSET).
void append_mma_weight_b_kernels_fp8(std::vector<MmaWeightBKernel>& out);
void append_gemv_kernels_fp8(std::vector<GemvKernel>& out);
void append_mma_weight_b_kernels_int8(std::vector<MmaWeightBKernel>& out);
void append_gemv_kernels_int8(std::vector<GemvKernel>& out);

}  // namespace tgemm::skinny
