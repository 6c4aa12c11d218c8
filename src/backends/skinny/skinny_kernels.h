// The skinny backend's kernel instances as host code sees them: a tile configuration, the input
// dtype, and host entry points compiled in the instance translation units (skinny_<dtype>_*.cu).
// Host-only header (no CUDA types); the kernel itself is kernels/sm90/sm90_gemm_skinny.cuh.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/problem.h"

namespace tgemm::skinny {

struct SkinnyTile {
  int m_tile = 0;         // tokens per CTA: M <= m_tile (the kernel runs m_tile/8 n8 MMA tiles)
  int rows_per_warp = 0;  // weight rows per warp, a multiple of the MMA's 16
  int warps_n = 0;        // warps side by side over rows
  int warps_k = 0;        // warps splitting the CTA's k-range, summed in shared memory
  int unroll = 0;         // 32-wide k-blocks a warp loads per batch (stages: per ring slot)
  int stages = 0;         // 0: register batches; >= 2: cp.async ring of this many slots per warp
  // Version 7 ("bop", kernels/sm90/sm90_gemm_skinny_bop.cuh) when > 0: the weight is the MMA's B
  // operand (rows_per_warp = 8 x n8 blocks, warps_n 1, m_tile 16) and each lane loads this many
  // 16-byte chunks of a row per 32 * bop-wide k-step; 0: versions 1-2 (the weight as A).
  int bop = 0;
  int block_n() const { return rows_per_warp * warps_n; }
  // Elements of K one k-step (block) of a warp covers.
  int k_step() const { return 32 * (bop > 0 ? bop : 1); }
  int threads() const { return 32 * warps_n * warps_k; }
  bool operator==(const SkinnyTile& o) const {
    return m_tile == o.m_tile && rows_per_warp == o.rows_per_warp && warps_n == o.warps_n && warps_k == o.warps_k &&
           unroll == o.unroll && stages == o.stages && bop == o.bop;
  }
};

// Every tile configuration, X(m_tile, rows_per_warp, warps_n, warps_k, unroll, stages). Each is
// instantiated for bf16 and fp16 and registered with split_k 1, 2, 4, 8 (a run-time cluster
// size, so it costs no instantiation).
// stages == 0 (version 1): register batches, chosen so that each lane keeps 4-8 16-byte weight
// loads in flight (unroll * rows_per_warp / 8) within ~128 registers (16 warps per SM).
// stages >= 2 (version 2): a per-warp cp.async ring in shared memory, stages - 1 slots of
// unroll k-blocks in flight while one is consumed, row-contiguous copies, <= 80 registers.
// docs/perf-notes.md has the reasoning and each instance's resource usage.
#define TGEMM_SKINNY_TILES(X) \
  X(8, 16, 1, 8, 4, 0)        \
  X(8, 16, 1, 4, 8, 0)        \
  X(8, 32, 1, 4, 4, 0)        \
  X(8, 32, 1, 8, 2, 0)        \
  X(8, 64, 1, 4, 1, 0)        \
  X(8, 16, 2, 4, 4, 0)        \
  X(16, 16, 1, 8, 4, 0)       \
  X(16, 16, 1, 4, 4, 0)       \
  X(16, 32, 1, 8, 2, 0)       \
  X(16, 32, 1, 4, 2, 0)       \
  X(16, 64, 1, 4, 1, 0)       \
  X(16, 16, 2, 4, 4, 0)       \
  X(16, 32, 2, 4, 2, 0)       \
  X(16, 32, 4, 2, 2, 0)       \
  X(16, 64, 2, 4, 1, 0)       \
  X(32, 16, 1, 8, 2, 0)       \
  X(32, 16, 2, 4, 2, 0)       \
  X(32, 32, 1, 8, 1, 0)       \
  X(32, 32, 2, 4, 1, 0)       \
  X(32, 16, 4, 2, 2, 0)       \
  X(32, 32, 4, 2, 1, 0)       \
  X(8, 16, 1, 4, 2, 4)        \
  X(8, 16, 1, 4, 4, 4)        \
  X(8, 16, 1, 8, 2, 4)        \
  X(8, 16, 1, 4, 8, 3)        \
  X(8, 32, 1, 4, 2, 4)        \
  X(16, 16, 1, 4, 2, 4)       \
  X(16, 16, 1, 4, 4, 4)       \
  X(16, 16, 1, 8, 2, 4)       \
  X(16, 32, 1, 4, 2, 4)       \
  X(16, 32, 2, 4, 2, 4)

// Version 7 (session 17, measured in bench/micro/decode16_lab.cu as "bt"): X(n8 blocks of rows,
// chunks a lane and k-step, warps over k, k-steps a load batch); m_tile 16, instantiated for bf16
// and fp16 (the "small" translation units) and registered with split_k 1, 2, 4, 8 like the tiles
// above. The five that won a suite weight in the lab (docs/perf-notes.md, skinny, "Session 17").
#define TGEMM_SKINNY_BOP_TILES(X) \
  X(1, 1, 8, 4)                   \
  X(1, 2, 8, 2)                   \
  X(1, 1, 4, 4)                   \
  X(1, 2, 4, 2)                   \
  X(2, 1, 4, 4)                   \
  X(2, 1, 8, 4)

struct SkinnyKernelInfo {
  int ptx_arch = 0;     // PTX arch the running image was built from (90 for compute_90a)
  int ctas_per_sm = 0;  // resident CTAs per SM (occupancy query)
  int registers = 0;    // per thread
};

struct SkinnyKernel {
  SkinnyTile tile;
  DType in = DType::kBFloat16;  // x and w
  // Enqueues the kernel on `stream`: grid (ceil(N / block_n), split_k), a (1, split_k, 1)
  // cluster when split_k > 1. Throws tgemm::Error naming `where` on a launch error.
  void (*launch)(const GemmProblem& p, const GemmArgs& args, int split_k, Stream stream,
                 const char* where) = nullptr;
  // Facts about the loaded kernel image on the current device for a launch with this split_k
  // (its shared memory depends on it); all 0 if a query fails.
  SkinnyKernelInfo (*query)(int split_k) = nullptr;
};

// Versions 1-2 as programmatic dependent launches (the kernel prefetches its weight rows into
// L2, up to a bound that keeps all resident CTAs' prefetches within half of L2, then waits for
// the previous grid; the next grid may launch early): off unless the environment sets
// TGEMM_SKINNY_V2_PDL=1 when the first launch reads it, or set_skinny_v2_pdl says otherwise; off
// for the rest of the process once a launch with it is refused. Measurements: docs/perf-notes.md,
// skinny, "Session 9". One state for the process.
inline std::atomic<int>& skinny_v2_pdl_state() {
  static std::atomic<int> state{-1};  // -1 not read yet, 0 off, 1 on
  return state;
}
inline bool skinny_v2_pdl_enabled() {
  int s = skinny_v2_pdl_state().load(std::memory_order_relaxed);
  if (s < 0) {
    const char* env = std::getenv("TGEMM_SKINNY_V2_PDL");
    s = env != nullptr && env[0] == '1' && env[1] == '\0' ? 1 : 0;
    int expected = -1;
    skinny_v2_pdl_state().compare_exchange_strong(expected, s, std::memory_order_relaxed);
    s = skinny_v2_pdl_state().load(std::memory_order_relaxed);
  }
  return s == 1;
}
inline void set_skinny_v2_pdl(bool on) { skinny_v2_pdl_state().store(on ? 1 : 0, std::memory_order_relaxed); }

// --- Version 3: persistent stream-K (kernels/sm90/sm90_gemm_skinny_stream.cuh) ---------------

struct SkinnyStreamTile {
  int m_tile = 0;         // tokens per CTA: 8 (M = 1..8), 16 or 32
  int rows_per_warp = 0;  // 8, 16, 32 or 64 (n8 MMA tiles of weight rows)
  int warps_n = 0;        // warps side by side over rows
  int warps_k = 0;        // warps splitting each segment's k-blocks, summed in shared memory
  int unroll = 0;         // k-blocks per register batch (two batches in flight per warp)
  int xkb = 0;            // x staged in shared memory: at most xkb k-blocks (units) per CTA
  int block_n() const { return rows_per_warp * warps_n; }
  int threads() const { return 32 * warps_n * warps_k; }
  // One CTA's fp32 partial of a tile (block_n rows x the MMA's 16 tokens per m16 tile), as the
  // kernel stores it.
  int partial_bytes() const { return block_n() * (m_tile < 16 ? 16 : m_tile) * 4; }
  // The most CTAs per SM that 128 registers per thread allow (512 threads per SM).
  int max_ctas_per_sm() const { return 512 / threads(); }
};

// X(m_tile, rows_per_warp, warps_n, warps_k, unroll, xkb); each is instantiated for bf16 and
// fp16 and registered with CTAs-per-SM targets of max_ctas_per_sm() and half of it (run-time, no
// extra instance). xkb is sized so that the x stage still lets the register-bound number of CTAs
// reside (128 threads: 4 per SM, 256: 2: x stage + partial slots + 1 KB reserved per CTA within
// the SM's 228 KB); it caps the
// units per CTA, so one wave covers up to SMs x CTAs x xkb x block_n x 64 bytes of weight
// (132 SMs, M tile 8: 50-100 MB; 16: 25-50 MB). The M-tile-32 tiles trade waves for shared memory.
// docs/perf-notes.md ("Version 3") has the reasoning and each instance's resources.
#define TGEMM_SKINNY_STREAM_TILES(X) \
  X(8, 16, 1, 4, 4, 96)              \
  X(8, 32, 1, 4, 2, 88)              \
  X(8, 8, 1, 4, 8, 96)               \
  X(8, 16, 1, 8, 4, 192)             \
  X(8, 16, 2, 4, 4, 192)             \
  X(16, 16, 1, 4, 4, 48)             \
  X(16, 32, 1, 4, 2, 44)             \
  X(16, 8, 1, 4, 8, 48)              \
  X(16, 16, 1, 8, 4, 96)             \
  X(16, 16, 2, 4, 4, 96)             \
  X(16, 32, 2, 4, 2, 96)             \
  X(32, 16, 1, 4, 2, 16)             \
  X(32, 16, 2, 4, 2, 48)

// The launch geometry the host computed for one problem (SkinnyStreamSolution::plan).
struct SkinnyStreamPlan {
  long long units = 0;    // row tiles x k-blocks
  long long per_cta = 0;  // units per CTA
  int kb_total = 0;       // ceil(K / 32)
  int grid = 0;           // ceil(units / per_cta)
  int prefetch_units = 0;  // units of each CTA's range prefetched into L2 at kernel start
};

struct SkinnyStreamKernel {
  SkinnyStreamTile tile;
  DType in = DType::kBFloat16;
  // Enqueues the kernel: grid plan.grid, partials (2 * grid * partial_bytes, 16-byte aligned)
  // and counters (grid entries, zero) as described in the kernel header; as a programmatic
  // dependent launch (it may start while the previous kernel in the stream finishes) unless
  // TGEMM_SKINNY_PDL=0 or the launch is refused. Throws tgemm::Error naming `where` on a launch
  // error.
  void (*launch)(const GemmProblem& p, const GemmArgs& args, const SkinnyStreamPlan& plan,
                 void* partials, unsigned* counters, Stream stream, const char* where) = nullptr;
  // Facts about the loaded kernel image on the current device; all 0 if a query fails.
  SkinnyKernelInfo (*query)() = nullptr;
};

// --- Version 4: GEMV on CUDA cores (kernels/sm90/sm90_gemv_skinny.cuh) -----------------------

struct SkinnyGemvTile {
  int m_max = 0;   // tokens: M <= m_max (1, 2, 4)
  int warps = 0;   // warps per CTA (a power of two)
  int chunks = 0;  // 16-byte weight chunks each lane loads before its arithmetic
  // Whole passes (`_wp` variants, session 28): where one exists, the split whose segments are
  // whole passes of 32 x chunks chunks (see segs). Session 18's lab: at K = 5120 the default
  // split leaves every pass partial and runs 1x10240x5120 at 1.18-1.30x of the floor on an H200;
  // one warp a row (5 whole passes of w8 c4) ran it at 1.09x.
  bool whole = false;
  int threads() const { return 32 * warps; }
  // Segments a weight row of K elements is split into (warps per row), a power of two <= warps.
  // Default: the smallest that gives each lane at most `chunks` chunks of its segment (longer
  // rows loop). whole: the largest whose segments are whole passes (K % 8 == 0 and K / 8 a
  // multiple of segs x 32 x chunks); where none is, the default's.
  int segs(std::int64_t k) const {
    const std::int64_t per_warp = 32LL * chunks;
    if (whole && k % 8 == 0) {
      int best = 0;
      for (int s = 1; s <= warps; s *= 2)
        if ((k / 8) % (s * per_warp) == 0) best = s;
      if (best > 0) return best;
    }
    const std::int64_t want = (((k + 7) / 8) + per_warp - 1) / per_warp;
    int s = 1;
    while (s < warps && s < want) s *= 2;
    return s;
  }
  int rows_per_cta(std::int64_t k) const { return warps / segs(k); }
};

// X(m_max, warps, chunks); each is instantiated for bf16 and fp16 (the "small" translation
// units). Chunks 2-8: 1-4 KB of a row per warp and pass, 4 KB-16 KB of loads in flight per CTA.
#define TGEMM_SKINNY_GEMV_TILES(X) \
  X(1, 8, 2)                       \
  X(1, 8, 4)                       \
  X(1, 8, 8)                       \
  X(1, 4, 4)                       \
  X(2, 8, 4)                       \
  X(2, 8, 8)                       \
  X(4, 8, 4)                       \
  X(4, 8, 8)

struct SkinnyGemvKernel {
  SkinnyGemvTile tile;
  DType in = DType::kBFloat16;
  // Enqueues the kernel with `segs` segments a row (the solution's SkinnyGemvTile::segs): grid
  // ceil(N / (warps / segs)), tile.threads() threads. Throws tgemm::Error naming `where` on a
  // launch error.
  void (*launch)(const GemmProblem& p, const GemmArgs& args, int segs, Stream stream, const char* where) = nullptr;
  // Facts about the loaded kernel image on the current device; all 0 if a query fails.
  SkinnyKernelInfo (*query)() = nullptr;
};

// --- Version 5: bulk-copy GEMV (kernels/sm90/sm90_gemv_bulk.cuh) --------------------------------

// (Version 6, the same ring feeding tensor-core MMAs at M <= 16, was removed in session 10: it
// measured 3-6x slower than the best candidate on every decode problem; docs/perf-notes.md.)
struct SkinnyBulkTile {
  int m_max = 0;      // tokens: M <= m_max (1, 2, 4)
  int consumers = 0;  // consumer warps (one more warp copies)
  int threads() const { return 32 * (consumers + 1); }
  // Rows of a row tile: one a consumer warp.
  int rows_per_tile() const { return consumers; }
};

// Shared-memory ring of a version-5 CTA: two CTAs fit an SM (228 KB), each with up to
// kGemvBulkMaxStages (16) slots of `consumers` row slices in flight.
constexpr std::int64_t kSkinnyBulkRingBytes = 96 * 1024;

// X(m_max, consumers); each is instantiated for bf16 and fp16 (the "small" translation units).
// No (4, 8): 124 registers x 288 threads leave one CTA an SM (ptxas spills when held to two).
#define TGEMM_SKINNY_BULK_TILES(X) \
  X(1, 4)                          \
  X(1, 8)                          \
  X(2, 4)                          \
  X(2, 8)                          \
  X(4, 4)

struct SkinnyBulkKernel {
  SkinnyBulkTile tile;
  DType in = DType::kBFloat16;
  // Enqueues the kernel on `grid` persistent CTAs (<= the plan's row tiles), tile.threads()
  // threads. Throws tgemm::Error naming `where` on a launch error.
  void (*launch)(const GemmProblem& p, const GemmArgs& args, int grid, Stream stream, const char* where) = nullptr;
  // Facts about the loaded kernel image on the current device (co-resident CTAs with the whole
  // ring); all 0 if a query fails.
  SkinnyKernelInfo (*query)() = nullptr;
};

// One appender per instance translation unit: bf16 and fp16, M tiles 8-16 ("small") and 32
// ("large"). The CI build (TGEMM_KERNELS=ci) compiles bf16 small only and defines
// TGEMM_SKINNY_CI_SUBSET, so the backend registers just those.
void append_skinny_kernels_bf16_small(std::vector<SkinnyKernel>& out);
void append_skinny_kernels_bf16_large(std::vector<SkinnyKernel>& out);
void append_skinny_kernels_fp16_small(std::vector<SkinnyKernel>& out);
void append_skinny_kernels_fp16_large(std::vector<SkinnyKernel>& out);
void append_skinny_stream_kernels_bf16_small(std::vector<SkinnyStreamKernel>& out);
void append_skinny_stream_kernels_bf16_large(std::vector<SkinnyStreamKernel>& out);
void append_skinny_stream_kernels_fp16_small(std::vector<SkinnyStreamKernel>& out);
void append_skinny_stream_kernels_fp16_large(std::vector<SkinnyStreamKernel>& out);
void append_skinny_gemv_kernels_bf16(std::vector<SkinnyGemvKernel>& out);
void append_skinny_gemv_kernels_fp16(std::vector<SkinnyGemvKernel>& out);
void append_skinny_bulk_kernels_bf16(std::vector<SkinnyBulkKernel>& out);
void append_skinny_bulk_kernels_fp16(std::vector<SkinnyBulkKernel>& out);

}  // namespace tgemm::skinny
