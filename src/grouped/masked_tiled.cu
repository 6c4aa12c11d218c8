// Masked grouped GEMM (DeepGEMM's m_grouped_gemm_masked, bf16), tiled on WMMA tensor cores:
//   out[g, :m_g] = x[g, :m_g] @ w[g]^T,  m_g = clamp(masked_m[g], 0, max_m)  (include/tgemm/grouped.h)
// One launch, no host synchronisation: grid.x covers G x ceil(max_m / 64) row tiles (the most any
// mask can ask for), grid.y the column tiles; a CTA reads its group's masked_m on the device and
// returns at once when its rows lie at or past m_g, so rows m_g.. of out are never written.
// Preconditions: a validated MaskedProblem, G, max_m and N > 0.
// Tested by tests/gpu/test_grouped.cpp (Masked.*); benched by bench/torch_bench.py --masked.
#include <cstdint>

#include "cuda/cuda_check.h"
#include "grouped/gmm_launch.h"
#include "grouped/wmma_tile.cuh"

namespace tgemm {
namespace {

using namespace grouped;

struct MaskedParams {
  const bf16* x;
  const bf16* w;
  const std::int32_t* masked_m;
  bf16* out;
  std::int64_t max_m, m_tiles, n, k;
  std::int64_t x_group_stride, lda, w_group_stride, ldw, out_group_stride, ldo;
};

template <bool kVec16>
__global__ void __launch_bounds__(kThreads) masked_tiled_kernel(MaskedParams p) {
  const std::int64_t g = blockIdx.x / p.m_tiles;
  const std::int64_t row0 = (blockIdx.x % p.m_tiles) * BLOCK_M;
  const std::int64_t m_g = min(max(static_cast<std::int64_t>(p.masked_m[g]), std::int64_t{0}), p.max_m);
  if (row0 >= m_g) return;
  const int rows = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_M), m_g - row0));
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.y) * BLOCK_N;
  const int cols = static_cast<int>(min(static_cast<std::int64_t>(BLOCK_N), p.n - col0));

  __shared__ TileSmem<bf16> s;
  AccFrag acc[2][2];
  zero_acc(acc);
  const bf16* x = p.x + g * p.x_group_stride + row0 * p.lda;
  const bf16* w = p.w + g * p.w_group_stride;
  const auto row = [&](int r) { return x + r * p.lda; };
  mma_full_k<bf16, true, kVec16>(s, acc, row, rows, w, p.ldw, col0, cols, p.k);
  store_acc(s, acc);
  __syncthreads();
  bf16* out = p.out + g * p.out_group_stride + row0 * p.ldo + col0;
  for_each_output(s, rows, cols, [&](int r, int c, float v) { out[r * p.ldo + c] = from_float<bf16>(v); });
}

}  // namespace

void launch_masked_tiled(const MaskedProblem& p, const MaskedArgs& args, Stream stream) {
  MaskedParams mp{};
  mp.x = static_cast<const bf16*>(args.x);
  mp.w = static_cast<const bf16*>(args.w);
  mp.masked_m = args.masked_m;
  mp.out = static_cast<bf16*>(args.out);
  mp.max_m = p.max_m;
  mp.m_tiles = (p.max_m + BLOCK_M - 1) / BLOCK_M;
  mp.n = p.n;
  mp.k = p.k;
  mp.x_group_stride = p.x_group_stride;
  mp.lda = p.lda;
  mp.w_group_stride = p.w_group_stride;
  mp.ldw = p.ldw;
  mp.out_group_stride = p.out_group_stride;
  mp.ldo = p.ldo;
  // 16-byte loads along K for x rows and w rows: every row start must be 16-byte aligned.
  auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  const bool vec16 = p.k % 8 == 0 && p.lda % 8 == 0 && p.x_group_stride % 8 == 0 && p.ldw % 8 == 0 &&
                     p.w_group_stride % 8 == 0 && aligned(args.x) && aligned(args.w);
  const dim3 grid(static_cast<unsigned>(p.groups * mp.m_tiles), static_cast<unsigned>((p.n + BLOCK_N - 1) / BLOCK_N));
  if (vec16) {
    masked_tiled_kernel<true><<<grid, kThreads, 0, stream>>>(mp);
  } else {
    masked_tiled_kernel<false><<<grid, kThreads, 0, stream>>>(mp);
  }
  TGEMM_CUDA_CHECK_LAUNCH("m_grouped_gemm_masked: masked_tiled_kernel");
}

}  // namespace tgemm
