// grouped_gemm by expert ids (include/tgemm/grouped.h), tiled on WMMA tensor cores:
//   y[t, j] = x_row(t, j) @ W(expert_ids[t, j]);  out = y, or sum_j topk_weights[t, j] * y[t, j].
// The S = T * topk slots are sorted by expert on the device, then run as gmm's groups, with no
// host synchronisation:
//  1. expert_histogram_kernel counts the slots per expert; ids outside [0, E) count in bucket E;
//  2. the offsets scan of gmm (launch_group_offsets) over the E counts: expert e's sorted slots
//     are [row_off[e], row_off[e + 1]); the out-of-range ids form the tail segment E;
//  3. expert_scatter_kernel writes each slot's index at its expert's next free sorted position
//     (atomic order: the positions vary, a slot's result does not, since rows are independent);
//  4. gather_tiled_kernel: gmm's tile walk over the sorted slots; each CTA gathers its 64 slots'
//     x rows and scatters its output rows; segment E's tiles write zeros;
//  5. with topk_weights, the kernel writes fp32 y to the workspace and topk_reduce_kernel sums
//     each token's slots in slot order.
// Preconditions: a validated GatherProblem, T > 0, N > 0, topk > 0 or topk_weights given.
// Tested by tests/gpu/test_grouped.cpp (GroupedGemm.*); benched by bench/torch_bench.py
// --grouped-gemm.
#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "grouped/gmm_launch.h"
#include "grouped/wmma_tile.cuh"

namespace tgemm {
namespace {

using namespace grouped;

constexpr int kSlotThreads = 256;

__device__ __forceinline__ std::int64_t expert_bucket(std::int32_t id, std::int64_t experts) {
  return id >= 0 && id < experts ? id : experts;
}

__global__ void __launch_bounds__(kSlotThreads)
    expert_histogram_kernel(const std::int32_t* __restrict__ ids, std::int64_t slots, std::int64_t experts,
                            std::int32_t* __restrict__ counts) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kSlotThreads + threadIdx.x;
  if (i < slots) atomicAdd(&counts[expert_bucket(ids[i], experts)], 1);
}

__global__ void __launch_bounds__(kSlotThreads)
    expert_scatter_kernel(const std::int32_t* __restrict__ ids, std::int64_t slots, std::int64_t experts,
                          const std::int64_t* __restrict__ row_off, std::int32_t* __restrict__ cursor,
                          std::int32_t* __restrict__ perm) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kSlotThreads + threadIdx.x;
  if (i >= slots) return;
  const std::int64_t e = expert_bucket(ids[i], experts);
  const std::int64_t pos = row_off[e] + atomicAdd(&cursor[e], 1);
  // Ids changed between the two reads (by another stream) could overflow a bucket: never write
  // outside it.
  if (pos < row_off[e + 1]) perm[pos] = static_cast<std::int32_t>(i);
}

struct GatherParams {
  const void* x;
  const void* weights;
  void* out;
  const std::int64_t* row_off;
  const std::int64_t* tile_off;
  const std::int32_t* perm;
  std::int64_t slots, topk, n, k, experts;
  std::int64_t x_token_stride, x_slot_stride, w_expert_stride, w_row_stride;
  std::int64_t out_token_stride, out_slot_stride;  // into the fp32 workspace: topk * N and N
  bool out_fp32;
};

template <typename In, bool kTransposeW, bool kVec16>
__global__ void __launch_bounds__(kThreads) gather_tiled_kernel(GatherParams p) {
  const std::int64_t tile = blockIdx.x;
  if (tile >= p.tile_off[p.experts + 1]) return;
  std::int64_t seg = 0, row0 = 0;
  int rows = 0;
  find_segment_tile(p.row_off, p.tile_off, p.experts, tile, seg, row0, rows);
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.y) * BLOCK_N;
  const int cols = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_N), p.n - col0));

  __shared__ TileSmem<In> s;
  __shared__ std::int64_t x_row[BLOCK_M], out_row[BLOCK_M];  // element offsets of the tile's slots
  if (threadIdx.x < BLOCK_M) {
    const int r = threadIdx.x;
    const std::int64_t slot =
        r < rows ? min(max(static_cast<std::int64_t>(p.perm[row0 + r]), std::int64_t{0}), p.slots - 1) : 0;
    const std::int64_t t = slot / p.topk, j = slot % p.topk;
    x_row[r] = t * p.x_token_stride + j * p.x_slot_stride;
    out_row[r] = t * p.out_token_stride + j * p.out_slot_stride;
  }
  __syncthreads();

  AccFrag acc[2][2];
  zero_acc(acc);
  if (seg < p.experts) {  // segment E (ids out of range) keeps its zeros
    const auto* x = static_cast<const In*>(p.x);
    const auto* w = static_cast<const In*>(p.weights) + seg * p.w_expert_stride;
    const auto row = [&](int r) { return x + x_row[r]; };
    mma_full_k<In, kTransposeW, kVec16>(s, acc, row, rows, w, p.w_row_stride, col0, cols, p.k);
  }
  store_acc(s, acc);
  __syncthreads();
  for_each_output(s, rows, cols,
                  [&](int r, int c, float v) { store_out<In>(p.out, out_row[r] + col0 + c, p.out_fp32, v); });
}

// out[t, n] = sum_j topk_weights[t, j] * y[t * topk + j, n] (y fp32 [S, N]), in slot order.
template <typename Out, typename Weight>
__global__ void __launch_bounds__(kSlotThreads)
    topk_reduce_kernel(const float* __restrict__ y, const Weight* __restrict__ topk_weights, std::int64_t tokens,
                       std::int64_t topk, std::int64_t n, Out* __restrict__ out, std::int64_t ldo) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kSlotThreads + threadIdx.x;
  if (i >= tokens * n) return;
  const std::int64_t t = i / n, c = i % n;
  float sum = 0.0f;
  for (std::int64_t j = 0; j < topk; ++j) sum += to_float(topk_weights[t * topk + j]) * y[(t * topk + j) * n + c];
  out[t * ldo + c] = from_float<Out>(sum);
}

// Whether every chunk of 8 elements along a contiguous dimension starting at a multiple of 8 is
// one aligned 16-byte load inside its row: x rows along H, weights along H ([E, N, H]) or N.
bool vectorizable(const GatherProblem& p, const GatherArgs& args) {
  auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  return p.k % 8 == 0 && p.x_token_stride % 8 == 0 && p.x_slot_stride % 8 == 0 && p.w_row_stride % 8 == 0 &&
         p.w_expert_stride % 8 == 0 && (p.transpose_weights || p.n % 8 == 0) && aligned(args.x) &&
         aligned(args.weights);
}

template <typename In, bool kTransposeW>
void launch_layout(const GatherParams& gp, bool vec16, dim3 grid, Stream stream) {
  if (vec16) {
    gather_tiled_kernel<In, kTransposeW, true><<<grid, kThreads, 0, stream>>>(gp);
  } else {
    gather_tiled_kernel<In, kTransposeW, false><<<grid, kThreads, 0, stream>>>(gp);
  }
}

template <typename In>
void launch_tiles(const GatherProblem& p, const GatherArgs& args, const GatherParams& gp, Stream stream) {
  const std::int64_t tiles = (gp.slots + BLOCK_M - 1) / BLOCK_M + p.experts + 1;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>((p.n + BLOCK_N - 1) / BLOCK_N));
  if (p.transpose_weights) {
    launch_layout<In, true>(gp, vectorizable(p, args), grid, stream);
  } else {
    launch_layout<In, false>(gp, vectorizable(p, args), grid, stream);
  }
  TGEMM_CUDA_CHECK_LAUNCH("grouped_gemm: gather_tiled_kernel");
}

template <typename Out, typename Weight>
void launch_reduce(const GatherProblem& p, const GatherArgs& args, const float* y, Stream stream) {
  const std::int64_t elems = p.tokens * p.n;
  topk_reduce_kernel<Out, Weight>
      <<<static_cast<unsigned>((elems + kSlotThreads - 1) / kSlotThreads), kSlotThreads, 0, stream>>>(
          y, static_cast<const Weight*>(args.topk_weights), p.tokens, p.topk, p.n, static_cast<Out*>(args.out),
          p.out_token_stride);
  TGEMM_CUDA_CHECK_LAUNCH("grouped_gemm: topk_reduce_kernel");
}

template <typename In>
void launch_weighted_reduce(const GatherProblem& p, const GatherArgs& args, const float* y, Stream stream) {
  const bool w32 = p.topk_weights_type == DType::kFloat32;
  if (p.out_type == DType::kFloat32) {
    w32 ? launch_reduce<float, float>(p, args, y, stream) : launch_reduce<float, In>(p, args, y, stream);
  } else {
    w32 ? launch_reduce<In, float>(p, args, y, stream) : launch_reduce<In, In>(p, args, y, stream);
  }
}

std::size_t align16(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

// Workspace sections, each 16-byte aligned: counts and cursors (int32 [E + 1] each), row and tile
// offsets (int64 [E + 2] each), the permutation (int32 [S]), y (fp32 [S, N], weighted only).
struct GatherWorkspace {
  std::int32_t* counts;
  std::int32_t* cursor;
  std::int64_t* row_off;
  std::int64_t* tile_off;
  std::int32_t* perm;
  float* y;
  std::size_t counters_bytes, bytes;
};

GatherWorkspace carve(const GatherProblem& p, void* base) {
  const std::size_t slots = static_cast<std::size_t>(p.tokens * p.topk);
  const std::size_t buckets = static_cast<std::size_t>(p.experts + 1);
  GatherWorkspace w{};
  auto* at = static_cast<char*>(base);
  std::size_t off = 0;
  auto take = [&](std::size_t bytes) {
    char* ptr = at == nullptr ? nullptr : at + off;
    off += align16(bytes);
    return ptr;
  };
  w.counts = reinterpret_cast<std::int32_t*>(take(buckets * 4));
  w.cursor = reinterpret_cast<std::int32_t*>(take(buckets * 4));
  w.counters_bytes = off;
  w.row_off = reinterpret_cast<std::int64_t*>(take((buckets + 1) * 8));
  w.tile_off = reinterpret_cast<std::int64_t*>(take((buckets + 1) * 8));
  w.perm = reinterpret_cast<std::int32_t*>(take(slots * 4));
  w.y = reinterpret_cast<float*>(take(p.weighted ? slots * static_cast<std::size_t>(p.n) * 4 : 0));
  w.bytes = off;
  return w;
}

// Steps 1-3: the slots' permutation sorted by expert and the offsets, into w. Needs slots > 0.
void sort_slots(const GatherProblem& p, const GatherArgs& args, const GatherWorkspace& w, Stream stream) {
  const std::int64_t slots = p.tokens * p.topk;
  const auto blocks = static_cast<unsigned>((slots + kSlotThreads - 1) / kSlotThreads);
  TGEMM_CUDA_CHECK(cudaMemsetAsync(w.counts, 0, w.counters_bytes, stream), "grouped_gemm: zero the counters");
  expert_histogram_kernel<<<blocks, kSlotThreads, 0, stream>>>(args.expert_ids, slots, p.experts, w.counts);
  TGEMM_CUDA_CHECK_LAUNCH("grouped_gemm: expert_histogram_kernel");
  launch_group_offsets(w.counts, p.experts, slots, w.row_off, w.tile_off, stream, "grouped_gemm: gmm_offsets_kernel");
  expert_scatter_kernel<<<blocks, kSlotThreads, 0, stream>>>(args.expert_ids, slots, p.experts, w.row_off, w.cursor,
                                                             w.perm);
  TGEMM_CUDA_CHECK_LAUNCH("grouped_gemm: expert_scatter_kernel");
}

// Steps 4-5 over the sort in w.
template <typename In>
void run_sorted(const GatherProblem& p, const GatherArgs& args, const GatherWorkspace& w, Stream stream) {
  const std::int64_t slots = p.tokens * p.topk;
  if (slots > 0) {
    GatherParams gp{};
    gp.x = args.x;
    gp.weights = args.weights;
    gp.row_off = w.row_off;
    gp.tile_off = w.tile_off;
    gp.perm = w.perm;
    gp.slots = slots;
    gp.topk = p.topk;
    gp.n = p.n;
    gp.k = p.k;
    gp.experts = p.experts;
    gp.x_token_stride = p.x_token_stride;
    gp.x_slot_stride = p.x_slot_stride;
    gp.w_expert_stride = p.w_expert_stride;
    gp.w_row_stride = p.w_row_stride;
    if (p.weighted) {  // y fp32 [S, N], slot s = t * topk + j at row s
      gp.out = w.y;
      gp.out_token_stride = p.topk * p.n;
      gp.out_slot_stride = p.n;
      gp.out_fp32 = true;
    } else {
      gp.out = args.out;
      gp.out_token_stride = p.out_token_stride;
      gp.out_slot_stride = p.out_slot_stride;
      gp.out_fp32 = p.out_type == DType::kFloat32;
    }
    launch_tiles<In>(p, args, gp, stream);
  }
  if (p.weighted) launch_weighted_reduce<In>(p, args, w.y, stream);
}

void run_sorted_typed(const GatherProblem& p, const GatherArgs& args, const GatherWorkspace& w, Stream stream) {
  if (p.in_type == DType::kFloat16) {
    run_sorted<fp16>(p, args, w, stream);
  } else {
    run_sorted<bf16>(p, args, w, stream);
  }
}

}  // namespace

std::size_t gather_workspace_bytes(const GatherProblem& p) { return carve(p, nullptr).bytes; }

void launch_gather_tiled(const GatherProblem& p, const GatherArgs& args, void* workspace, Stream stream) {
  const GatherWorkspace w = carve(p, workspace);
  if (p.tokens * p.topk > 0) sort_slots(p, args, w, stream);
  run_sorted_typed(p, args, w, stream);
}

GatherSortView gather_sort_view(const GatherProblem& p, void* workspace) {
  const GatherWorkspace w = carve(p, workspace);
  return {w.row_off, w.perm};
}

void launch_gather_sort(const GatherProblem& p, const GatherArgs& args, void* workspace, Stream stream) {
  if (p.tokens * p.topk > 0) sort_slots(p, args, carve(p, workspace), stream);
}

void launch_gather_presorted(const GatherProblem& p, const GatherArgs& args, void* workspace, Stream stream) {
  run_sorted_typed(p, args, carve(p, workspace), stream);
}

}  // namespace tgemm
