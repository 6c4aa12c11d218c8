// The path rules of the MXFP4 weight GEMMs (src/fp4/fp4_route.h).
#include "fp4/fp4_route.h"

#include <algorithm>
#include <cstdint>

#include "tgemm/fp4.h"

namespace tgemm::fp4_route {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Bytes of x's storage unit (ldx counts units): 16-bit elements, e4m3 bytes, bytes of two codes.
std::int64_t unit_bytes(DType x_type) { return x_type == DType::kBFloat16 || x_type == DType::kFloat16 ? 2 : 1; }

bool gemv_runs(const W4GemmCall& c) { return c.m <= kGemvMaxM && rows_aligned(c); }

// gemm_a4w4's codes have no tensor-core form here: the kernel decodes only the weight.
bool mma_runs(const W4GemmCall& c) { return c.m <= kMmaMaxM && c.x_type != DType::kUInt8 && rows_aligned(c); }

}  // namespace

bool rows_aligned(const W4GemmCall& c) {
  return c.k >= kMxfp4Block && aligned16(c.x) && (c.m == 1 || (c.ldx * unit_bytes(c.x_type)) % 16 == 0) &&
         aligned16(c.w) && (c.n == 1 || c.ldw % 16 == 0);
}

W4Path choose_w4_path(const W4GemmCall& c, W4Force force) {
  if (force == W4Force::kGemv && gemv_runs(c)) return W4Path::kGemv;
  if (force == W4Force::kGemvRows && gemv_runs(c)) return W4Path::kGemvRows;
  if (force == W4Force::kMma && mma_runs(c)) return W4Path::kMma;
  if (force == W4Force::kDequant) return W4Path::kDequant;
  if (gemv_runs(c)) return W4Path::kGemv;
  if (mma_runs(c)) return W4Path::kMma;
  return W4Path::kDequant;
}

int mma_split_k(std::int64_t tiles, std::int64_t steps, int warps, int sm_count) {
  const std::int64_t want = std::max<std::int64_t>(1, (2 * std::int64_t{std::max(sm_count, 1)} + tiles - 1) / tiles);
  const std::int64_t room = std::max<std::int64_t>(1, steps / (std::int64_t{warps} * kMinStepsPerPart));
  return static_cast<int>(std::min<std::int64_t>({want, room, 8}));
}

}  // namespace tgemm::fp4_route
