// The host-only half of the CUTLASS grouped backend (src/grouped/gmm_cutlass.h): instance names
// and the routing rule, unit-tested without a GPU.
#include <limits>

#include "grouped/gmm_cutlass.h"

namespace tgemm::grouped_cutlass {

namespace {

const char* dtype_token(DType t) { return t == DType::kFloat16 ? "fp16" : "bf16"; }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// How far a configuration is from the preferred one: the tile area ratio, then the schedule.
std::int64_t distance(const GroupedConfig& c, const GroupedConfig& want) {
  const std::int64_t a = std::int64_t{c.tile_m} * c.tile_n, b = std::int64_t{want.tile_m} * want.tile_n;
  const std::int64_t ratio = a > b ? a / b : b / a;
  return ratio * 4 + (c.tile_m == want.tile_m ? 0 : 2) + (c.schedule == want.schedule ? 0 : 1);
}

}  // namespace

std::string instance_name(const GroupedConfig& c) {
  return std::string("sm90_grouped_") + dtype_token(c.in) + (c.b_k_major ? "_bk_" : "_bn_") + std::to_string(c.tile_m) +
         "x" + std::to_string(c.tile_n) + "x" + std::to_string(c.tile_k) +
         (c.schedule == Schedule::kCooperative ? "_coop" : "_pingpong");
}

bool cutlass_can_take(const GroupedShape& s) {
  constexpr std::int64_t kMaxExtent = std::numeric_limits<std::int32_t>::max();  // CUTLASS shapes are int32
  return s.tma_compatible && (s.in == DType::kBFloat16 || s.in == DType::kFloat16) && s.k > 0 && s.k % 8 == 0 &&
         s.n > 0 && s.n % 8 == 0 && s.rows <= kMaxExtent && s.n <= kMaxExtent && s.k <= kMaxExtent && s.groups > 0 &&
         s.groups <= kMaxExtent;
}

int choose_grouped_config(const std::vector<GroupedConfig>& available, const GroupedShape& s, GroupedBackend backend,
                          int sm_count) {
  if (backend == GroupedBackend::kTile || !cutlass_can_take(s)) return -1;
  const std::int64_t per_group = s.rows / s.groups;
  GroupedConfig want{s.in, s.b_k_major, 128, 128, 64, Schedule::kCooperative};
  if (per_group < 128) {
    want.tile_m = 64;
    want.schedule = Schedule::kPingpong;
  } else if (ceil_div(per_group, 128) * s.groups * ceil_div(s.n, 256) >= sm_count) {
    want.tile_n = 256;
  }
  int best = -1;
  std::int64_t best_distance = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < available.size(); ++i) {
    const GroupedConfig& c = available[i];
    if (c.in != s.in || c.b_k_major != s.b_k_major) continue;
    const std::int64_t d = distance(c, want);
    if (d < best_distance) {
      best = static_cast<int>(i);
      best_distance = d;
    }
  }
  return best;
}

}  // namespace tgemm::grouped_cutlass
