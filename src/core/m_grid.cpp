#include "core/m_grid.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace tgemm {

std::vector<std::int64_t> m_grid(std::int64_t max_m) {
  TGEMM_CHECK(max_m >= 1 && max_m <= kMGridLimit, "m_grid", "the largest M must be in [1, ", kMGridLimit, "], got ",
              max_m);
  std::vector<std::int64_t> grid;
  for (std::int64_t m = 1; m <= std::min(max_m, kMGridDenseTo); ++m) grid.push_back(m);
  // 2^(j/4), written out so that bench/torch_bench.py computes the same doubles; ldexp scales
  // them exactly, so every value is round(2^(p + j/4)) on every platform.
  static constexpr double kSteps[kMGridStepsPerOctave] = {1.0, 1.189207115002721, 1.4142135623730951,
                                                          1.681792830507429};
  constexpr int kFirstOctave = 4;
  static_assert(kMGridDenseTo == (std::int64_t{1} << kFirstOctave),
                "the geometric steps start where the dense run ends");
  bool below = max_m > kMGridDenseTo;
  for (int p = kFirstOctave; below; ++p) {
    for (double step : kSteps) {
      const auto m = static_cast<std::int64_t>(std::floor(std::ldexp(step, p) + 0.5));
      if (m >= max_m) {
        below = false;
        break;
      }
      if (m > grid.back()) grid.push_back(m);
    }
  }
  if (grid.back() != max_m) grid.push_back(max_m);
  return grid;
}

}  // namespace tgemm

namespace tgemm {

std::vector<std::int64_t> tune_grid(std::int64_t max_m, double factor) {
  TGEMM_CHECK(max_m >= 1 && max_m <= kMGridLimit, "tune_grid", "the largest M must be in [1, ", kMGridLimit, "], got ",
              max_m);
  TGEMM_CHECK(factor >= kTuneGridFactorMin && factor <= kTuneGridFactorMax, "tune_grid", "the factor must be in [",
              kTuneGridFactorMin, ", ", kTuneGridFactorMax, "], got ", factor);
  std::vector<std::int64_t> grid;
  for (std::int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16}) {
    if (m < max_m) grid.push_back(m);
  }
  constexpr std::int64_t kRound = 8;
  const double last_step = static_cast<double>(max_m) / std::sqrt(factor);
  for (double v = 16.0 * factor; v <= last_step; v *= factor) {
    const auto m = static_cast<std::int64_t>(std::floor(v / kRound + 0.5)) * kRound;
    if (m > grid.back() && m < max_m) grid.push_back(m);
  }
  grid.push_back(max_m);
  return grid;
}

}  // namespace tgemm
