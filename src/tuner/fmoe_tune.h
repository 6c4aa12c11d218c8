// The host-only half of `tgemm tune-fmoe` and `tgemm bench --family fmoe` (src/tuner/fmoe_race.h
// races on the GPU): the problems (an untuned fused_moe CSV, or the MoE layer suite at a list of
// token counts), the seeded routings each key is raced on, the rule that turns the measured
// candidates into a row (gmm's: tuner/gmm_tune.h), and the tuned file's merge. Unit-tested without
// a GPU.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "moe/fmoe_table.h"
#include "tuner/gmm_tune.h"

namespace tgemm {

// One MoE layer call: hidden [T, H], w1 [E, 2I, H], w2 [E, H, I], k experts per token.
struct FmoeTuneProblem {
  std::string name;  // "<suite name> T=<tokens>", or "file:line" of an untuned row
  std::int64_t tokens = 0, experts = 0, topk = 0, hidden = 0, inter = 0;
  // > experts: the ids are global experts of a model of that many, and an expert_map puts the
  // first `experts` of them on this rank (-1 for the rest), as one rank of expert parallelism
  // sees them; 0: no expert_map.
  std::int64_t global_experts = 0;
  DType dtype = DType::kBFloat16;
  MoeActivation activation = MoeActivation::kSilu;
  // The key of this problem on a device of `arch` and `sm_count` (quant none: fused_moe takes no
  // quantized weights).
  FmoeKey key(const std::string& arch, int sm_count) const;
};

// An untuned fused_moe CSV (fmoe_untuned_columns(): T,E,topk,H,I,dtype[,quant][,activation], and
// an optional E_global, the suite's; columns by name). Throws tgemm::Error naming file, line and
// value for a malformed row, a quant other than none (fused_moe has no quantized path to race) or
// topk above the experts.
std::vector<FmoeTuneProblem> parse_fmoe_untuned(std::istream& in, const std::string& file);

// `problems` as an untuned CSV that parse_fmoe_untuned reads back (T as given, E_global kept; the
// names become file:line): the share of one worker process of `tgemm tune-fmoe --mp`.
std::string fmoe_problems_csv(const std::vector<FmoeTuneProblem>& problems);

// The MoE layer suite (name,E,topk,H,I[,E_global]: bench/shapes/fmoe_shapes.csv), one problem per
// row and token count, in row order then `tokens` order. Throws tgemm::Error likewise.
std::vector<FmoeTuneProblem> parse_fmoe_suite(std::istream& in, const std::string& file,
                                              const std::vector<std::int64_t>& tokens, DType dtype,
                                              MoeActivation activation);

// The routing of a race: topk_ids [T, k] (row-major) over `experts` ids, k distinct per token, and
// topk_weights [T, k] fp32, each token's positive and summing to 1. Uniform: every id equally
// likely. Skewed (gmm_routing's shape over experts): id i of a seeded permutation is drawn with
// weight (i + 1)^-1.2, so the busiest expert receives several times the mean and some may get
// none. Seeded with the generator's raw output: the same routing on every standard library.
struct FmoeRouting {
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
};
FmoeRouting fmoe_routing(std::int64_t tokens, std::int64_t topk, std::int64_t experts, bool skewed, std::uint64_t seed);

// The expert_map of one rank holding the first `experts` of `global_experts`: [global_experts],
// g for g < experts, -1 after.
std::vector<std::int32_t> fmoe_rank_map(std::int64_t experts, std::int64_t global_experts);

// What the race measured of one candidate (solution "tile" or "cutlass up <instance> down
// <instance>"), and the winner rule: gmm's (select_gmm_winner), beating the default by more than
// the tie band on both routings.
using FmoeCandidateTiming = GmmCandidateTiming;

// The tuned file after a tune: `existing` rows whose keys were not raced, then the new rows (a
// raced key without a new row loses its old one: the default measured as good), ordered by key,
// under fmoe_tuned_columns()'s header.
std::string merged_fmoe_table(const std::vector<FmoeRow>& existing, const std::vector<FmoeKey>& raced,
                              const std::vector<FmoeRow>& rows);

}  // namespace tgemm
