// The tune command's options turned into what runs them (tuner/command.h): the race's options of
// a worker, and the arguments of the processes `tgemm tune` spawns. Host-only.
#include <algorithm>
#include <fmt/core.h>

#include "core/csv.h"
#include "tuner/command.h"

namespace tgemm {

namespace {
// --libtype: "all" (every backend: an empty list) or a comma list of libtypes.
std::vector<std::string> libtype_list(const std::string& libtype) {
  if (libtype == "all") return {};
  return csv::split_line(libtype).value_or(std::vector<std::string>{});
}
}  // namespace

RaceOptions race_options_of(const TuneOptions& o) {
  RaceOptions ro;
  ro.select.max_err_ratio = o.err_ratio;
  ro.select.require_strict = !o.loose;
  ro.select.min_accurate = static_cast<std::size_t>(o.min_accurate);
  ro.select.accurate_margin = o.accurate_margin;
  ro.select.order_band = o.order_band;
  ro.data.min_rotation_sets = o.min_rotation_sets;
  ro.screen.graph_us = o.graph_screen_us;
  ro.screen.refine_bases = static_cast<std::size_t>(o.refine_bases);
  ro.screen.dedupe_launches = o.dedupe_launches;
  ro.accurate.warmup = o.warmup;
  ro.accurate.iters = o.iters;
  ro.accurate.block = o.accurate_block;
  ro.accurate.check_all = o.check_all;
  ro.finals.placements = o.final_placements;
  ro.finals.max_finalists = static_cast<std::size_t>(o.finalists);
  ro.finals.memory_bound_finalists = static_cast<std::size_t>(o.finalists_mem);
  ro.finals.margin = o.final_margin;
  ro.finals.contenders = static_cast<std::size_t>(o.final_contenders);
  ro.finals.rounds = o.final_rounds;
  ro.finals.sustained_round_ms = o.sustained_round_ms;
  ro.confirm.placements = o.confirm_placements;
  ro.confirm.best = o.confirm_best;
  ro.confirm.near_default = o.confirm_near_default;
  ro.confirm.tries = o.confirm_tries;
  ro.confirm.rounds = o.confirm_rounds;
  ro.confirm.margin = o.confirm_margin;
  ro.confirm.placement_tolerance = o.placement_tolerance;
  ro.confirm.sustained_all = o.sustained_confirm_all;
  ro.sustained_default_margin = o.sustained_margin;
  ro.short_slots = o.short_slots;
  ro.libtypes = libtype_list(o.libtype);
  return ro;
}

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
  // Both ways: the switches on by default must be told to the worker when they are off.
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

}  // namespace tgemm
