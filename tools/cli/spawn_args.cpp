#include <algorithm>
#include <fmt/core.h>

#include "tools/cli/tune.h"

namespace tgemm::cli {

std::vector<std::string> worker_arguments(const TuneOptions& o) {
  std::vector<std::string> args = {"tune", "--worker", "--errRatio", fmt::format("{}", o.err_ratio),
                                   "--libtype", o.libtype, "--warmup", std::to_string(o.warmup), "--iters",
                                   std::to_string(o.iters), "--confirm_placements",
                                   std::to_string(o.confirm_placements), "--final_placements",
                                   std::to_string(o.final_placements), "--finalists", std::to_string(o.finalists),
                                   "--finalists_mem", std::to_string(o.finalists_mem),
                                   "--final_margin", fmt::format("{}", o.final_margin), "--final_contenders",
                                   std::to_string(o.final_contenders), "--refine_bases",
                                   std::to_string(o.refine_bases), "--final_rounds",
                                   std::to_string(o.final_rounds), "--accurate_block", std::to_string(o.accurate_block),
                                   "--confirm_tries", std::to_string(o.confirm_tries),
                                   "--confirm_rounds", std::to_string(o.confirm_rounds), "--confirm_margin",
                                   fmt::format("{}", o.confirm_margin), "--sustained_round_ms",
                                   fmt::format("{}", o.sustained_round_ms), "--sustained_margin",
                                   fmt::format("{}", o.sustained_margin),
                                   "--graph_screen", fmt::format("{}", o.graph_screen_us), "--min_accurate",
                                   std::to_string(o.min_accurate), "--accurate_margin",
                                   fmt::format("{}", o.accurate_margin), "--placement_tolerance",
                                   fmt::format("{}", o.placement_tolerance), "--min_rotation_sets",
                                   std::to_string(o.min_rotation_sets)};
  // Only where given: its default (-1, the tie band) is outside the option's range.
  if (o.order_band >= 0) {
    args.push_back("--order_band");
    args.push_back(fmt::format("{}", o.order_band));
  }
  if (o.loose) args.push_back("--loose");
  args.push_back(o.confirm_best ? "--confirm_best" : "--no-confirm_best");
  if (o.confirm_near_default) args.push_back("--confirm_near_default");
  if (o.dedupe_launches) args.push_back("--dedupe_launches");
  if (o.check_all) args.push_back("--check_all");
  // Both ways: on by default since session 33, so the worker must be told when it is off.
  args.push_back(o.sustained_confirm_all ? "--sustained_confirm_all" : "--no-sustained_confirm_all");
  args.push_back(o.short_slots ? "--short_slots" : "--no-short_slots");
  return args;
}

std::vector<std::string> reconfirm_arguments(const TuneOptions& o) {
  // The reconfirmation's own rule (TuneOptions::reconfirm_*: one margin for every problem, the
  // compute-bound ones too; placements; tolerance), with the tune's --confirm_rounds unless
  // --reconfirm_rounds is given.
  const int rounds = o.reconfirm_rounds > 0 ? o.reconfirm_rounds : std::max(1, o.confirm_rounds);
  std::vector<std::string> args = {"reconfirm",
          o.tuned_file,
          "--libtype",
          o.libtype,
          "--errRatio",
          fmt::format("{}", o.err_ratio),
          "--placements",
          std::to_string(o.reconfirm_placements),
          "--rounds",
          std::to_string(rounds),
          "--margin",
          fmt::format("{}", o.reconfirm_margin),
          "--sustained_margin",
          fmt::format("{}", o.reconfirm_margin),
          "--placement_tolerance",
          fmt::format("{}", o.reconfirm_tolerance),
          "--min_rotation_sets",
          std::to_string(o.min_rotation_sets),
          o.short_slots ? "--short_slots" : "--no-short_slots"};
  const int alternatives = reconfirm_alternatives(o);
  if (alternatives > 0) {
    args.insert(args.end(), {"--alternatives", std::to_string(alternatives), "--profile", o.profile_file});
  }
  return args;
}

int reconfirm_alternatives(const TuneOptions& o) {
  if (o.reconfirm_alternatives >= 0) return o.reconfirm_alternatives;
  return o.reconfirm ? kReconfirmAlternatives : 0;
}

}  // namespace tgemm::cli
