#include "core/lookup.h"

#include <algorithm>

namespace tgemm {

std::string_view walk_level_name(WalkLevel level) {
  switch (level) {
    case WalkLevel::kExact:
      return "exact";
    case WalkLevel::kPaddedM:
      return "padded_m";
    case WalkLevel::kPow2M:
      return "pow2_m";
    case WalkLevel::kNearestM:
      return "nearest_m";
    case WalkLevel::kDefault:
      return "default";
  }
  return "?";
}

std::int64_t padded_m(std::int64_t m) {
  auto round_up = [](std::int64_t v, std::int64_t q) { return (v + q - 1) / q * q; };
  if (m <= 256) return round_up(m, 16);
  if (m <= 1024) return round_up(m, 32);
  if (m <= 4096) return round_up(m, 64);
  return round_up(m, 128);
}

std::int64_t next_pow2(std::int64_t m) {
  std::int64_t p = 1;
  while (p < m) p <<= 1;
  return p;
}

std::vector<WalkStep> walk(const Table::RowsByM* rows, std::int64_t m) {
  std::vector<WalkStep> steps;
  if (rows == nullptr || rows->empty()) return steps;
  std::vector<std::int64_t> used;
  auto try_m = [&](WalkLevel level, std::int64_t want) {
    if (std::find(used.begin(), used.end(), want) != used.end()) return;
    auto it = rows->find(want);
    if (it == rows->end()) return;
    used.push_back(want);
    steps.push_back({level, &it->second});
  };
  try_m(WalkLevel::kExact, m);
  try_m(WalkLevel::kPaddedM, padded_m(m));
  try_m(WalkLevel::kPow2M, next_pow2(m));

  // Distance by ratio, compared exactly: a row x is far / near = max(x, m) / min(x, m) away from m.
  const std::int64_t mm = std::max<std::int64_t>(m, 1);
  struct Ratio {
    __int128 far, near;
  };
  auto ratio = [mm](std::int64_t x) { return Ratio{std::max(x, mm), std::min(x, mm)}; };
  std::vector<const TableRow*> rest;
  for (const auto& [row_m, row] : *rows) {
    if (std::find(used.begin(), used.end(), row_m) != used.end()) continue;
    const Ratio r = ratio(row_m);
    if (r.far <= r.near * kNearestMaxRatio) rest.push_back(&row);
  }
  std::stable_sort(rest.begin(), rest.end(), [&](const TableRow* a, const TableRow* b) {
    const Ratio ra = ratio(a->m), rb = ratio(b->m);
    if (ra.far * rb.near != rb.far * ra.near) return ra.far * rb.near < rb.far * ra.near;
    return a->m > b->m;
  });
  for (const TableRow* r : rest) steps.push_back({WalkLevel::kNearestM, r});
  return steps;
}

}  // namespace tgemm
