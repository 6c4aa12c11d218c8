// The host-only half of the FP8 grouped CUTLASS path (src/grouped/fp8_cutlass.h): which calls the
// kernel can take and the routing rule, unit-tested without a GPU.
#include <cstdint>
#include <limits>

#include "grouped/fp8_cutlass.h"

namespace tgemm::fp8_cutlass {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

const char* instance_name() { return "sm90_grouped_fp8_blockwise_128x128x128_c1x2_coop"; }

bool can_take(const Fp8GroupedProblem& p, const Fp8GroupedArgs& a) {
  constexpr std::int64_t kMaxExtent = std::numeric_limits<std::int32_t>::max();
  // The prepare kernel's grid.y walks the K scale blocks: 65535 at most (K <= 8388480).
  constexpr std::int64_t kMaxScaleBlocks = 65535;
  // TMA moves 16-byte units: FP8 rows and group strides in multiples of 16 elements, bf16 in 8.
  const bool strides = p.lda % 16 == 0 && p.ldw % 16 == 0 && p.w_group_stride % 16 == 0 && p.ldo % 8 == 0 &&
                       (!p.masked || (p.x_group_stride % 16 == 0 && p.out_group_stride % 8 == 0));
  return p.groups > 0 && p.groups <= kMaxExtent && p.rows > 0 && p.rows <= kMaxExtent && p.n > 0 && p.n % 8 == 0 &&
         p.n <= kMaxExtent && p.k > 0 && p.k % kTileK == 0 && p.k / kTileK <= kMaxScaleBlocks && strides &&
         aligned16(a.x) && aligned16(a.w) && aligned16(a.out);
}

bool choose_cutlass(bool can_take, bool available, GroupedBackend backend) {
  return backend == GroupedBackend::kCutlass && can_take && available;
}

}  // namespace tgemm::fp8_cutlass
