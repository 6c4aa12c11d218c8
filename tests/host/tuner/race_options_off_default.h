// A tune whose every race option (what `tgemm tune` passes its workers: tuner/command_options.cpp)
// differs from its default, so that a test of the workers' arguments cannot pass with an option
// dropped. The switches stay at their defaults; each test flips the ones it checks.
#pragma once

#include "tuner/command.h"

namespace tgemm {

inline TuneOptions race_values_off_the_default() {
  TuneOptions o;
  o.err_ratio = 0.02;
  o.libtype = "cublaslt";
  o.warmup = 7;
  o.iters = 33;
  o.confirm_placements = 4;
  o.final_placements = 3;
  o.finalists = 5;
  o.finalists_mem = 12;
  o.final_margin = 0.025;
  o.final_contenders = 1;
  o.refine_bases = 30;
  o.final_rounds = 5;
  o.accurate_block = 4;
  o.confirm_tries = 2;
  o.confirm_rounds = 6;
  o.confirm_margin = 0.015;
  o.sustained_round_ms = 70;
  o.sustained_margin = 0.02;
  o.graph_screen_us = 40;
  o.min_accurate = 32;
  o.accurate_margin = 0.2;
  o.placement_tolerance = 0.01;
  o.min_rotation_sets = 2;
  o.order_band = 0.005;
  return o;
}

}  // namespace tgemm
