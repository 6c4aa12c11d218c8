// What the two-routing races of `tgemm tune-gmm` and `tgemm tune-fmoe` share (tuner/gmm_race.h,
// tuner/fmoe_race.h): their options and the shape of their result, a key raced on a uniform and a
// skewed routing with the winner rule of tuner/gmm_tune.h. Host-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace tgemm
