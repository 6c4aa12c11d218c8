// What the two-routing races of `tgemm tune-gmm` and `tgemm tune-fmoe` share (tuner/gmm_race.h,
// tuner/fmoe_race.h): their options, the shape of their result (a key raced on a uniform and a
// skewed routing with the winner rule of tuner/gmm_tune.h) and the merge of their tuned file.
// Host-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/csv.h"
#include "core/keyed_table.h"
#include "tuner/gmm_tune.h"

namespace tgemm {

struct RoutingRaceOptions {
  int rounds = 10;   // interleaved rounds per routing
  int replays = 10;  // timed replays of each graph per round
  // A candidate must beat the default by more than this on both routings. Twice the dense tuner's
  // 1% band (tuner/select.h): a row rests on paired ratios of ~10 rounds per routing, not on a
  // screen, finals and a confirmation; not yet measured on a GPU.
  double tie_band = 0.02;
  std::uint64_t seed = 1;  // the routings' seed (gmm's uniform routing takes none)
};

template <class Key, class Row>
struct RoutingRaceResult {
  Key key;
  std::string default_solution;
  std::vector<GmmCandidateTiming> candidates;
  int default_index = -1;
  int winner = -1;         // index into candidates; -1: the default rule keeps the key
  std::optional<Row> row;  // the row to write (winner's), absent where the default keeps it
};

// The tuned file of a keyed table (core/keyed_table.h) after a tune: `existing` rows whose keys were
// not raced, then the new rows (a raced key without a new row loses its old one: the default
// measured as good), ordered by key, under `columns`, each row as `format` writes it.
template <class Traits, class Format>
std::string merged_tuned_table(const std::vector<typename Traits::Row>& existing,
                               const std::vector<typename Traits::Key>& raced,
                               const std::vector<typename Traits::Row>& rows, const std::vector<std::string>& columns,
                               Format format) {
  const std::unordered_set<typename Traits::Key, typename Traits::Hash> raced_keys(raced.begin(), raced.end());
  KeyedTable<Traits> table;
  std::vector<typename Traits::Row> kept;
  for (const auto& r : existing) {
    if (raced_keys.count(r.key) == 0) kept.push_back(r);
  }
  table.add_rows(kept);
  table.add_rows(rows);
  std::string text = csv::join(columns) + "\n";
  for (const auto* r : table.all_rows()) text += format(*r) + "\n";
  return text;
}

}  // namespace tgemm
