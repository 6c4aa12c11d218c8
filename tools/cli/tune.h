// `tgemm tune`: AITER's gradlib flow, made sound. The parent process reads the untuned CSV, skips
// problems already tuned (resume), hands problems to one worker process per GPU, watches them
// (a hung or crashed candidate is excluded and its problem retried in a fresh worker), writes the
// tuned CSV atomically after each batch, shows progress, and exits non-zero if a problem failed.
// Workers (`tgemm tune --worker`) race candidates with src/tune/racer.h.
#pragma once

#include <string>

namespace tgemm::cli {

struct TuneOptions {
  std::string input_file;
  std::string tuned_file;
  std::string libtype = "all";
  double err_ratio = 0.05;
  int mp = 1;
  int batch = 16;
  bool all = false;
  std::string profile_file;
  double timeout = 600;            // seconds per problem
  double candidate_timeout = 60;   // seconds without progress = hang
  int warmup = 3;
  int iters = 10;
  int confirm_placements = 4;      // operand placements a winner is confirmed on (RaceOptions)
  bool confirm_best = false;       // confirm every try, keep the best (RaceOptions::confirm_best)
  int final_placements = 1;        // placements the finals are spread over (RaceOptions)
  bool dedupe_launches = false;    // race identical launches once (RaceOptions::dedupe_launches)
  bool verbose = false;
  bool loose = false;              // accept candidates that fail the strict check
  bool worker = false;             // internal: run as a worker
  std::string devices;             // comma-separated device ordinals (default 0..mp-1)
};

int run_tune(const TuneOptions& options);

}  // namespace tgemm::cli
