#include <algorithm>
#include <fmt/core.h>

#include "tools/cli/tune.h"

namespace tgemm::cli {

std::vector<std::string> reconfirm_arguments(const TuneOptions& o) {
  // The tune's own confirmation rule (rounds, margins, placements), not reconfirm's defaults:
  // session 27's pair with --sustained_margin 0.01 had its compute-bound rows confirmed at 1% and
  // then reconfirmed at the default 2%, which reverted rows measured 1.01-1.02x.
  // --reconfirm_margin, --reconfirm_rounds, --reconfirm_placements and --reconfirm_tolerance,
  // where given, replace them (TuneOptions).
  const bool own_margin = o.reconfirm_margin >= 0;
  const int rounds = o.reconfirm_rounds > 0 ? o.reconfirm_rounds : std::max(1, o.confirm_rounds);
  const int placements = o.reconfirm_placements > 0 ? o.reconfirm_placements : o.confirm_placements;
  const double tolerance = o.reconfirm_tolerance >= 0 ? o.reconfirm_tolerance : o.placement_tolerance;
  return {"reconfirm",
          o.tuned_file,
          "--libtype",
          o.libtype,
          "--errRatio",
          fmt::format("{}", o.err_ratio),
          "--placements",
          std::to_string(placements),
          "--rounds",
          std::to_string(rounds),
          "--margin",
          fmt::format("{}", own_margin ? o.reconfirm_margin : o.confirm_margin),
          "--sustained_margin",
          fmt::format("{}", own_margin ? o.reconfirm_margin : o.sustained_margin),
          "--placement_tolerance",
          fmt::format("{}", tolerance),
          "--min_rotation_sets",
          std::to_string(o.min_rotation_sets),
          o.short_slots ? "--short_slots" : "--no-short_slots"};
}

}  // namespace tgemm::cli
