// validate_race_options (tune/racer.h): host-only, in tgemm_core so the host tests can call it.
#include "core/check.h"
#include "tune/racer.h"

namespace tgemm {

namespace {
// `value` for RaceOptions::<name> must satisfy `ok`; the message names the field, what it must be
// and what it is.
template <typename T>
void require(bool ok, const char* name, const char* expectation, T value) {
  TGEMM_CHECK(ok, "race_problem", "RaceOptions::", name, " must be ", expectation, ", got ", value);
}
}  // namespace

void validate_race_options(const RaceOptions& o) {
  require(o.screen_iters >= 1, "screen_iters", ">= 1", o.screen_iters);
  require(o.graph_screen_us >= 0, "graph_screen_us", ">= 0 (0: off)", o.graph_screen_us);
  require(o.warmup >= 0, "warmup", ">= 0", o.warmup);
  require(o.iters >= 1, "iters", ">= 1", o.iters);
  require(o.launches_per_graph >= 1, "launches_per_graph", ">= 1", o.launches_per_graph);
  require(o.rotation_l2_factor > 0, "rotation_l2_factor", "> 0", o.rotation_l2_factor);
  require(o.min_rotation_sets >= 1 && o.min_rotation_sets <= 32, "min_rotation_sets", "in [1, 32]", o.min_rotation_sets);
  require(o.placement_tolerance >= 0 && o.placement_tolerance < 0.5, "placement_tolerance", "in [0, 0.5)",
          o.placement_tolerance);
  require(o.final_margin >= 0, "final_margin", ">= 0", o.final_margin);
  require(o.max_finalists >= 1, "max_finalists", ">= 1", o.max_finalists);
  require(o.final_rounds >= 1, "final_rounds", ">= 1", o.final_rounds);
  require(o.accurate_block >= 0, "accurate_block", ">= 0 (0: each candidate alone)", o.accurate_block);
  require(o.final_placements >= 1, "final_placements", ">= 1", o.final_placements);
  require(o.sustained_warmup_ms >= 0, "sustained_warmup_ms", ">= 0", o.sustained_warmup_ms);
  require(o.sustained_round_ms >= 0, "sustained_round_ms", ">= 0", o.sustained_round_ms);
  require(o.sustained_default_margin >= 0 && o.sustained_default_margin < 1, "sustained_default_margin",
          "in [0, 1)", o.sustained_default_margin);
  require(o.confirm_rounds >= 0, "confirm_rounds", ">= 0 (0: no confirmation)", o.confirm_rounds);
  require(o.confirm_margin >= 0 && o.confirm_margin < 1, "confirm_margin", "in [0, 1)", o.confirm_margin);
  require(o.confirm_placements >= 1, "confirm_placements", ">= 1", o.confirm_placements);
  require(o.confirm_tries >= 1, "confirm_tries", ">= 1", o.confirm_tries);
  require(o.memory_budget > 0, "memory_budget", "> 0 bytes", o.memory_budget);
  require(o.select.min_accurate >= 1, "select.min_accurate", ">= 1", o.select.min_accurate);
  require(o.select.accurate_margin >= 0, "select.accurate_margin", ">= 0", o.select.accurate_margin);
  require(o.select.tie_band >= 0 && o.select.tie_band < 1, "select.tie_band", "in [0, 1)", o.select.tie_band);
  require(o.select.order_band < 1, "select.order_band", "below 1 (< 0: the tie band)", o.select.order_band);
  require(o.select.default_margin >= 0 && o.select.default_margin < 1, "select.default_margin", "in [0, 1)",
          o.select.default_margin);
  require(o.select.max_err_ratio >= 0 && o.select.max_err_ratio <= 1, "select.max_err_ratio", "in [0, 1]",
          o.select.max_err_ratio);
}

}  // namespace tgemm
