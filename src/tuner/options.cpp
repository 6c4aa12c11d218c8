// The tuner's option validation and defaults (tuner/options.h): host-only, in tgemm_core so the
// host tests can call them.
#include "tuner/options.h"

#include <algorithm>

#include "core/check.h"
#include "tgemm/tensor.h"

namespace tgemm {

namespace {
// `value` for RaceOptions::<name> must satisfy `ok`; the message names the field, what it must be
// and what it is.
template <typename T>
void require(bool ok, const char* name, const char* expectation, T value) {
  TGEMM_CHECK(ok, "race_problem", "RaceOptions::", name, " must be ", expectation, ", got ", value);
}

void validate_stages(const RaceOptions& o) {
  require(o.screen.iters >= 1, "screen.iters", ">= 1", o.screen.iters);
  require(o.screen.graph_us >= 0, "screen.graph_us", ">= 0 (0: off)", o.screen.graph_us);
  require(o.accurate.warmup >= 0, "accurate.warmup", ">= 0", o.accurate.warmup);
  require(o.accurate.iters >= 1, "accurate.iters", ">= 1", o.accurate.iters);
  require(o.accurate.launches_per_graph >= 1, "accurate.launches_per_graph", ">= 1", o.accurate.launches_per_graph);
  require(o.accurate.block >= 0, "accurate.block", ">= 0 (0: each candidate alone)", o.accurate.block);
  require(o.finals.margin >= 0, "finals.margin", ">= 0", o.finals.margin);
  require(o.finals.max_finalists >= 1, "finals.max_finalists", ">= 1", o.finals.max_finalists);
  require(o.finals.rounds >= 1, "finals.rounds", ">= 1", o.finals.rounds);
  require(o.finals.placements >= 1, "finals.placements", ">= 1", o.finals.placements);
  require(o.finals.sustained_warmup_ms >= 0, "finals.sustained_warmup_ms", ">= 0", o.finals.sustained_warmup_ms);
  require(o.finals.sustained_round_ms >= 0, "finals.sustained_round_ms", ">= 0", o.finals.sustained_round_ms);
  require(o.confirm.rounds >= 0, "confirm.rounds", ">= 0 (0: no confirmation)", o.confirm.rounds);
  require(o.confirm.margin >= 0 && o.confirm.margin < 1, "confirm.margin", "in [0, 1)", o.confirm.margin);
  require(o.confirm.placement_tolerance >= 0 && o.confirm.placement_tolerance < 0.5, "confirm.placement_tolerance",
          "in [0, 0.5)", o.confirm.placement_tolerance);
  require(o.confirm.placements >= 1, "confirm.placements", ">= 1", o.confirm.placements);
  require(o.confirm.tries >= 1, "confirm.tries", ">= 1", o.confirm.tries);
}
}  // namespace

void validate_race_options(const RaceOptions& o) {
  require(o.data.rotation_l2_factor > 0, "data.rotation_l2_factor", "> 0", o.data.rotation_l2_factor);
  require(o.data.min_rotation_sets >= 1 && o.data.min_rotation_sets <= 32, "data.min_rotation_sets", "in [1, 32]",
          o.data.min_rotation_sets);
  require(o.data.memory_budget > 0, "data.memory_budget", "> 0 bytes", o.data.memory_budget);
  validate_stages(o);
  require(o.sustained_default_margin >= 0 && o.sustained_default_margin < 1, "sustained_default_margin", "in [0, 1)",
          o.sustained_default_margin);
  require(o.select.min_accurate >= 1, "select.min_accurate", ">= 1", o.select.min_accurate);
  require(o.select.accurate_margin >= 0, "select.accurate_margin", ">= 0", o.select.accurate_margin);
  require(o.select.tie_band >= 0 && o.select.tie_band < 1, "select.tie_band", "in [0, 1)", o.select.tie_band);
  require(o.select.order_band < 1, "select.order_band", "below 1 (< 0: the tie band)", o.select.order_band);
  require(o.select.default_margin >= 0 && o.select.default_margin < 1, "select.default_margin", "in [0, 1)",
          o.select.default_margin);
  require(o.select.max_err_ratio >= 0 && o.select.max_err_ratio <= 1, "select.max_err_ratio", "in [0, 1]",
          o.select.max_err_ratio);
}

bool is_compute_bound(const GemmProblem& p) {
  const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  const double bytes = static_cast<double>(dtype_size(p.a_type)) * static_cast<double>(p.m * p.k + p.n * p.k) +
                       static_cast<double>(dtype_size(p.out_type)) * static_cast<double>(p.m * p.n);
  return flops / bytes > 128.0;
}

std::int64_t last_memory_bound_m(GemmProblem p, std::int64_t up_to) {
  TGEMM_CHECK(up_to >= 1, "last_memory_bound_m", "up_to must be >= 1, got ", up_to);
  // Invariant: memory-bound at lo (0 stands for "none"), compute-bound above hi.
  std::int64_t lo = 0, hi = up_to;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    p.m = mid;
    if (is_compute_bound(p)) {
      hi = mid - 1;
    } else {
      lo = mid;
    }
  }
  return lo;
}

std::size_t finalists_for(const GemmProblem& p, const FinalsOptions& o) {
  return is_compute_bound(p) ? o.max_finalists : std::max(o.max_finalists, o.memory_bound_finalists);
}

RaceOptions grid_race_options(RaceOptions o, const GemmProblem& p, const GridRacePreset& preset) {
  o.select.min_accurate = preset.min_accurate;
  o.finals.memory_bound_finalists = preset.memory_bound_finalists;
  o.finals.placements = preset.final_placements;
  if (is_compute_bound(p)) {
    o.screen.refine_bases = preset.compute_bound_refine_bases;
    o.screen.dedupe_launches = o.screen.dedupe_launches || preset.compute_bound_dedupe;
  }
  return o;
}

RaceOptions tune_race_defaults() {
  RaceOptions o;
  o.finals.placements = 4;
  o.screen.graph_us = 50;
  o.select.min_accurate = 48;
  o.finals.memory_bound_finalists = 16;
  o.short_slots = true;
  o.accurate.block = 8;
  o.confirm.sustained_all = true;
  // The reconfirmation's margin (kReconfirmMargin) is the one that decides; the race's only orders.
  o.sustained_default_margin = 0.01;
  o.confirm.placements = 1;
  o.confirm.rounds = 2;
  return o;
}

}  // namespace tgemm
