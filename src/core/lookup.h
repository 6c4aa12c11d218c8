// The lookup walk for a call with M rows (same key): exact M; M rounded up (to a multiple of 16
// up to 256, 32 up to 1024, 64 up to 4096, 128 beyond); the next power of two; the nearest tuned
// M (by ratio, ties to the larger M) among the rows within kNearestMaxRatio of M; then the default
// solution. Each step's row must still pass validation, so the walk yields candidates in order and
// the dispatcher takes the first valid one.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/table.h"

namespace tgemm {

enum class WalkLevel { kExact, kPaddedM, kPow2M, kNearestM, kDefault };
std::string_view walk_level_name(WalkLevel level);

// The nearest-M level offers only rows tuned within this factor of M (docs/design-choices.md).
// Session 26 (gelu + bias rows of the shipped table, tuned at M = 512): run at M = 1 and 16 they
// measured 0.18-0.78x of the cuBLASLt default GEMM plus the separate pass (H200), at M = 128
// (x4) 0.41-0.95x (H100), where the default solutions are never worse than that baseline. With
// the shipped tables' M grid (1, 16, 64, 128, 512, 2048, 8192) only M = 3-7 lie beyond 2x of a
// row.
inline constexpr std::int64_t kNearestMaxRatio = 2;

std::int64_t padded_m(std::int64_t m);
std::int64_t next_pow2(std::int64_t m);

struct WalkStep {
  WalkLevel level;
  const TableRow* row;
};

// Candidate rows for M in walk order; each tuned M appears at most once.
std::vector<WalkStep> walk(const Table::RowsByM* rows, std::int64_t m);

}  // namespace tgemm
