// The host-only half of `tgemm tune-gmm` (src/tuner/gmm_race.h races on the GPU): the problems to
// race (an untuned gmm CSV or the MoE shape suite), the seeded routings each key is raced on, the
// rule that turns the measured candidates into a row, and the tuned file's merge. Unit-tested
// without a GPU.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "grouped/gmm_table.h"

namespace tgemm {

// One problem of a tune: total rows M over G groups, out [M, N] = lhs [M, K] @ rhs[g] (+ bias).
struct GmmTuneProblem {
  std::string name;  // the suite's name, or "file:line" of an untuned row
  std::int64_t groups = 0, m = 0, n = 0, k = 0;
  bool rhs_nk = true;  // rhs [G, N, K]
  DType dtype = DType::kBFloat16;
  DType out_dtype = DType::kBFloat16;
  bool bias = false;
  // The key of this problem on a device of `arch` and `sm_count`.
  GmmKey key(const std::string& arch, int sm_count) const;
};

// An untuned gmm CSV (gmm_untuned_columns(): G,M,N,K,rhs,dtype[,outdtype][,bias]; columns by
// name). Throws tgemm::Error naming file, line and value for a malformed row: a tune input is
// written by the capture or by hand, and a row that cannot be raced is a mistake to fix.
std::vector<GmmTuneProblem> parse_gmm_untuned(std::istream& in, const std::string& file);

// The MoE suite (name,G,tokens_per_expert,N,K: ../shared/shapes/moe_shapes.csv): M = G x
// tokens_per_expert, with the given layout, dtypes and bias. Throws tgemm::Error likewise.
std::vector<GmmTuneProblem> parse_moe_suite(std::istream& in, const std::string& file, bool rhs_nk, DType dtype,
                                            DType out_dtype, bool bias);

// Group sizes of a routing of m rows over g groups, summing to m. Uniform: m / g each, the first
// m % g groups one more. Skewed (torch_bench.moe_routing's shape): group i of a seeded permutation
// gets a share proportional to (i + 1)^-1.2, rounded down, the rest to the largest, so the busiest
// group holds several times the mean and some may get none.
std::vector<std::int32_t> gmm_routing(std::int64_t m, std::int64_t g, bool skewed, std::uint64_t seed);

// What the race measured of one candidate.
struct GmmCandidateTiming {
  std::string solution;        // "tile" or a CUTLASS instance name
  std::string error;           // non-empty: it failed to run or the check (then it is not timed)
  double us[2] = {0, 0};       // median per call on the uniform and the skewed routing
  double speedup[2] = {0, 0};  // the default's time over its own, paired by round, per routing
};

// The winner: among candidates without error whose speedup over the default exceeds 1 + tie_band
// on both routings, the one with the largest smaller speedup (the first in candidate order among
// equals); -1 where none does, so the default rule keeps the key. `default_index` never wins.
int select_gmm_winner(const std::vector<GmmCandidateTiming>& candidates, int default_index, double tie_band);

// The tuned file after a tune: `existing` rows whose keys were not raced, then the new rows (a
// raced key without a new row loses its old one: the default measured as good), ordered by key,
// under gmm_tuned_columns()'s header.
std::string merged_gmm_table(const std::vector<GmmRow>& existing, const std::vector<GmmKey>& raced,
                             const std::vector<GmmRow>& rows);

}  // namespace tgemm
