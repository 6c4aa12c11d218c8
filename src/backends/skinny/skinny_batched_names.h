// The batched skinny backend (libtype "batched_skinny"): batched_gemm's small-M products, one
// kernel launch over the whole batch that streams every product's b once with 16-byte loads, on
// CUDA cores or, at M <= 16, tensor cores (kernels/sm90/sm90_batched_skinny.cuh). Host-only: the tiles, their names,
// and the problems a tile accepts (pure functions of the GemmProblem, so the host tests cover them).
//
// A name is `batched_skinny:sm90_<family>_<layout>_m<M>_<field><value>`:
//
//   batched_skinny:sm90_bgemv_nk_m<M>_l<L>
//     b stored [B, N, K] (transpose_b, K contiguous; the dense GEMV's access pattern): L lanes
//     of a warp share one row of b, each reading 16-byte chunks L apart, summed by warp shuffles.
//     m   tokens it covers: M <= m (1, 2, 4, 8 or 16)
//     l   lanes per row of b (8 or 32); a CTA of 128 threads covers 128 / l rows
//
//   batched_skinny:sm90_bgemv_kn_m<M>_c<C>
//     b stored [B, K, N] (not transposed, N contiguous): a thread owns 8 consecutive columns (one
//     16-byte chunk of a row of b), the CTA's 256 threads are C chunks side by side times 256 / C
//     k-slices, summed in shared memory.
//     m   tokens it covers: M <= m (1, 2, 4 or 8)
//     c   16-byte column chunks per CTA (2, 8 or 32): 8 * c columns of out
//
//   batched_skinny:sm90_bmma_nk_m<M>_u<U>
//     b stored [B, N, K] on tensor cores: a warp's 8 rows of b are the n8 B operand of
//     mma.m16n8k16, the tokens (rows of a, padded to 16) its A operand; a CTA is 4 warps.
//     m   tokens it covers: M <= m (16)
//     u   16-byte chunks of b a lane loads before its MMAs (2 or 4)
//
// e.g. batched_skinny:sm90_bgemv_nk_m1_l32, batched_skinny:sm90_bgemv_kn_m4_c8,
// batched_skinny:sm90_bmma_nk_m16_u4.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"

namespace tgemm::skinny {

inline constexpr std::string_view kBatchedLibtype = "batched_skinny";

// How b is stored, which decides the kernel: kNK b[i] is [N, K] (transpose_b), kKN b[i] is [K, N].
enum class BatchedLayout { kNK, kKN };

// Threads per CTA of the two kernels.
inline constexpr int kBatchedNkThreads = 128;
inline constexpr int kBatchedKnThreads = 256;

// CUDA-core FMAs (bgemv) or mma.sync (bmma, nk only).
enum class BatchedFamily { kGemv, kMma };

struct BatchedTile {
  BatchedLayout layout = BatchedLayout::kNK;
  int m_max = 1;  // tokens: M <= m_max
  int param = 0;  // gemv kNK: lanes per row of b; gemv kKN: 16-byte column chunks per CTA; mma: chunks in flight
  BatchedFamily family = BatchedFamily::kGemv;
  bool operator==(const BatchedTile& o) const {
    return layout == o.layout && m_max == o.m_max && param == o.param && family == o.family;
  }
  // Output columns one CTA covers.
  int block_n() const {
    if (family == BatchedFamily::kMma) return 8 * kBatchedNkThreads / 32;
    return layout == BatchedLayout::kNK ? kBatchedNkThreads / param : 8 * param;
  }
};

// Every tile the instance translation units build, X(m_max, param) per layout.
#define TGEMM_BATCHED_SKINNY_NK_TILES(X) \
  X(1, 32) X(1, 8) X(2, 32) X(2, 8) X(4, 32) X(4, 8) X(8, 32) X(8, 8) X(16, 32) X(16, 8)
#define TGEMM_BATCHED_SKINNY_KN_TILES(X) \
  X(1, 2) X(1, 8) X(1, 32) X(2, 2) X(2, 8) X(2, 32) X(4, 2) X(4, 8) X(4, 32) X(8, 2) X(8, 8) X(8, 32)
#define TGEMM_BATCHED_SKINNY_MMA_TILES(X) X(16, 2) X(16, 4)

std::vector<BatchedTile> batched_tiles();

std::string batched_skinny_name(const BatchedTile& t);
// The tile a name describes, or nullopt if it is not a name of the grammar above (the prefix, a
// family other than bgemv or bmma, a layout other than nk or kn (nk for bmma), fields missing, out of order, with
// leading zeros, or trailing text). Whether this build has the tile is batched_tiles()'s question.
std::optional<BatchedTile> parse_batched_skinny_name(std::string_view name);

// Whether a tile's kernel computes p exactly (device and instance aside): batched_gemm (family
// kBatched) of bf16 or fp16 a and b of one dtype; bf16, fp16 or fp32 out; an optional bias of a
// 16-bit float or fp32; no scales, activation, alpha or c; 1 <= M <= m_max; b stored as the
// tile's layout; 1 <= N, K <= 2^30; batch within the grid's y limit (65535).
// kNK reads a and b rows as 16-byte chunks: a not transposed, both bases 16-byte aligned (their
// batch strides included, GemmProblem::align_*), lda and ldb multiples of 8 elements (K itself
// may be odd: the last chunk is read element by element). kKN reads b rows as 16-byte chunks (b
// aligned, ldb a multiple of 8; N may be odd) and a by elements (either transpose, any stride).
bool batched_tile_accepts(const BatchedTile& t, const GemmProblem& p) noexcept;

}  // namespace tgemm::skinny
