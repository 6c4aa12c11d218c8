// The options and printout `tgemm tune-gmm` and `tgemm tune-fmoe` share (tools/cli/race_cli.h).
#include "tools/cli/race_cli.h"

#include <fmt/core.h>

#include <cstdio>

namespace tgemm::cli {

void add_problem_selection_options(CLI::App& t, std::string& filter, int& max_problems) {
  t.add_option("--filter", filter, "only problems whose name contains this");
  t.add_option("--max-problems", max_problems, "stop after this many problems (0: all)");
}

void add_routing_race_options(CLI::App& t, RoutingRaceOptions& race, bool& dry_run, const std::string& seed_help) {
  t.add_option("--rounds", race.rounds, "interleaved timing rounds per routing")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  t.add_option("--replays", race.replays, "timed replays per round")->check(CLI::Range(1, 1000))->capture_default_str();
  t.add_option("--tie-band", race.tie_band,
               "a candidate must beat the default by more than this fraction on both routings to be written")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  t.add_option("--seed", race.seed, seed_help)->capture_default_str();
  t.add_flag("--dry-run", dry_run, "print the rows, write nothing");
}

void print_routing_race(const std::string& header, int solution_width,
                        const std::vector<GmmCandidateTiming>& candidates, int default_index, int winner, bool row) {
  fmt::print("{}", header);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const GmmCandidateTiming& c = candidates[i];
    if (!c.error.empty()) {
      fmt::print("  {:<{}} dropped: {}\n", c.solution, solution_width, c.error);
      continue;
    }
    fmt::print("  {:<{}} uniform {:>9.2f} us {:>6.3f}x  skewed {:>9.2f} us {:>6.3f}x{}\n", c.solution, solution_width,
               c.us[0], c.speedup[0], c.us[1], c.speedup[1],
               static_cast<int>(i) == winner          ? "  <- row"
               : static_cast<int>(i) == default_index ? "  (default)"
                                                      : "");
  }
  if (!row) fmt::print("  no candidate beats the default on both routings: no row\n");
  std::fflush(stdout);
}

}  // namespace tgemm::cli
