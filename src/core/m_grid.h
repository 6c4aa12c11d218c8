// The M grid: the token counts over which `tgemm bench --m-grid`, `bench/torch_bench.py --m-grid`
// and `tgemm shapes --m-grid` cover a GEMM's (N, K), so that a slow M between tuned points cannot
// hide. Serving engines call a layer with whatever token count the step has; a bench at a few
// round M values (1, 16, 64, ...) says nothing about M = 300.
//
// The grid: every M from 1 to 16, then four geometric steps an octave (ratio 2^(1/4) ~ 1.19,
// rounded to the nearest integer) up to max_m, and max_m itself. Dense below 17 because the
// small-M kernels change there with every token count (GEMV up to M = 4, then MMA kernels
// compiled per token count up to 16); above it cuBLASLt's and CUTLASS's tiles are 64 rows and
// more, so a step of 19% of M crosses at most one tile boundary between neighbours. Every
// power of two up to max_m is on the grid (the M values tables have been tuned at), and with the
// default max (16384) 41 of its 56 values are not powers of two.
//
// bench/torch_bench.py's m_grid() computes the same values (tests/host/cli/m_grid_cli.cmake
// checks that the two agree).
#pragma once

#include <cstdint>
#include <vector>

namespace tgemm {

// The grid's largest M unless asked for another.
inline constexpr std::int64_t kMGridMax = 16384;
// Every M up to this one is on the grid.
inline constexpr std::int64_t kMGridDenseTo = 16;
// Geometric steps per doubling of M above kMGridDenseTo.
inline constexpr int kMGridStepsPerOctave = 4;
// The largest max_m accepted: GEMM dimensions are 32-bit in cuBLASLt and the kernels.
inline constexpr std::int64_t kMGridLimit = (std::int64_t{1} << 31) - 1;

// The grid's M values from 1 to max_m, strictly increasing, the last one max_m. Throws
// tgemm::Error when max_m is outside [1, kMGridLimit].
std::vector<std::int64_t> m_grid(std::int64_t max_m = kMGridMax);

}  // namespace tgemm

namespace tgemm {

// The tuning bucket grid of `tgemm tune --m-grid`: the M values raced for every (N, K, types) key,
// whose winners become M ranges (tuner/m_ranges.h). Sparser than m_grid above, because each point
// costs a whole race (a suite of 16 keys must tune in about 20 minutes on one GPU): every M from
// 1 to 8 (the GEMV serves M <= 4 and the weight-as-A MMA kernels are compiled per token count, so
// the best kernel changes with every token there), then 10, 12 and 16 (the weight-as-B tile's
// region, M = 9-16), then geometric steps by `factor` from 16, each rounded to the nearest multiple
// of 8 (tiles of every backend are multiples of 8 rows, so a rounded value says as much as an
// unrounded one), and max_m last. A geometric value above max_m / sqrt(factor) is dropped: the step
// from it to max_m would be under half a step. factor 1.5 and max_m 16384 give 28 points; 2.0 give
// 21 (the powers of two), 1.25 give 41. Only values <= max_m are kept, so a small max_m ends the dense run early.
inline constexpr double kTuneGridFactor = 1.5;
// The factor's accepted range: below 1.1 the grid has hundreds of points (hours of races); above 4
// a range would claim two octaves from one measured point.
inline constexpr double kTuneGridFactorMin = 1.1;
inline constexpr double kTuneGridFactorMax = 4.0;

// Strictly increasing, first 1, last max_m. Throws tgemm::Error when max_m is outside
// [1, kMGridLimit] or factor outside [kTuneGridFactorMin, kTuneGridFactorMax].
std::vector<std::int64_t> tune_grid(std::int64_t max_m = kMGridMax, double factor = kTuneGridFactor);

}  // namespace tgemm
