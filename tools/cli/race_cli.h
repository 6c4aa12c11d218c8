// What `tgemm tune-gmm` and `tgemm tune-fmoe` (tools/cli/gmm_cli.h, tools/cli/fmoe_cli.h) share:
// the options of a two-routing race and of the problems' selection, the check of the table a tune
// merges into, and the printout of one key's race. Each command keeps what differs: its problems,
// its table and its columns.
#pragma once

#include <CLI/CLI.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "tuner/routing_race.h"

namespace tgemm::cli {

// --filter and --max-problems.
void add_problem_selection_options(CLI::App& t, std::string& filter, int& max_problems);

// The problems of `all` whose name contains `filter` (every one where it is empty), the first
// `max_problems` of them (all where 0).
template <class Problem>
std::vector<Problem> selected_problems(const std::vector<Problem>& all, const std::string& filter, int max_problems) {
  std::vector<Problem> out;
  for (const Problem& p : all) {
    if (!filter.empty() && p.name.find(filter) == std::string::npos) continue;
    if (max_problems > 0 && static_cast<int>(out.size()) >= max_problems) break;
    out.push_back(p);
  }
  return out;
}

// --rounds, --replays, --tie-band, --seed (described by `seed_help`) and --dry-run.
void add_routing_race_options(CLI::App& t, RoutingRaceOptions& race, bool& dry_run, const std::string& seed_help);

// The rows of the tuned table at `path` of a keyed table (core/keyed_table.h: Traits::parse, kName,
// kTuneCommand), none where it cannot be opened. Throws tgemm::Error where a line is not one of
// its rows: the merge would drop it.
template <class Traits>
std::vector<typename Traits::Row> existing_table_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in.good()) return {};
  auto parsed = Traits::parse(in, path);
  TGEMM_CHECK(parsed.warnings.empty(), Traits::kTuneCommand, "-o/--output ", path, " has lines that are not ",
              Traits::kName, " rows (fix or move it first): ", parsed.warnings[0]);
  return parsed.rows;
}

// One key's race: `header`, then a line per candidate (its solution left-aligned in
// `solution_width` columns; the winner and the default marked), then the no-row line where the
// default keeps the key.
void print_routing_race(const std::string& header, int solution_width,
                        const std::vector<GmmCandidateTiming>& candidates, int default_index, int winner, bool row);

template <class Key, class Row>
void print_routing_race(const std::string& header, int solution_width, const RoutingRaceResult<Key, Row>& r) {
  print_routing_race(header, solution_width, r.candidates, r.default_index, r.winner, r.row.has_value());
}

}  // namespace tgemm::cli
