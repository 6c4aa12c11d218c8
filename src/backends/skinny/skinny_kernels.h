// The skinny backend's kernel instances as host code sees them: a tile configuration, the input
// dtype, and host entry points compiled in the instance translation units (skinny_<dtype>_*.cu).
// Host-only header (no CUDA types); the kernel itself is kernels/sm90/sm90_gemm_skinny.cuh.
#pragma once

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
  int block_n() const { return rows_per_warp * warps_n; }
  int threads() const { return 32 * warps_n * warps_k; }
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

// One appender per instance translation unit: bf16 and fp16, M tiles 8-16 ("small") and 32
// ("large"). The CI build (TGEMM_KERNELS=ci) compiles bf16 small only and defines
// TGEMM_SKINNY_CI_SUBSET, so the backend registers just those.
void append_skinny_kernels_bf16_small(std::vector<SkinnyKernel>& out);
void append_skinny_kernels_bf16_large(std::vector<SkinnyKernel>& out);
void append_skinny_kernels_fp16_small(std::vector<SkinnyKernel>& out);
void append_skinny_kernels_fp16_large(std::vector<SkinnyKernel>& out);

}  // namespace tgemm::skinny
