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
