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
  int finalists = 6;               // RaceOptions::max_finalists
  double final_margin = 0.03;      // RaceOptions::final_margin
  int final_rounds = 4;            // RaceOptions::final_rounds
  int confirm_tries = 3;           // RaceOptions::confirm_tries
  double graph_screen_us = 0;      // RaceOptions::graph_screen_us
  int min_accurate = 20;           // SelectOptions::min_accurate
  double accurate_margin = 0.10;   // SelectOptions::accurate_margin
  bool dedupe_launches = false;    // race identical launches once (RaceOptions::dedupe_launches)
  bool verbose = false;
  bool loose = false;              // accept candidates that fail the strict check
  bool worker = false;             // internal: run as a worker
  // After the tune, run `tgemm reconfirm` on the tuned file in a fresh process (on the first
  // worker's GPU): rows that do not beat the default again there revert to it.
  bool reconfirm = false;
  std::string devices;             // comma-separated device ordinals (default 0..mp-1)
};

int run_tune(const TuneOptions& options);

// `tgemm reconfirm TABLE`: every row of this GPU's arch and SM count whose solution is not the
// race's default is timed against the default once more in this process, by the race's
// confirmation rule (src/tune/racer.h, reconfirm_row); a row that does not pass reverts to the
// default (checked against the fp32 reference first). The table is rewritten atomically. Two
// tunes then keep a non-default row only where it passed in two processes: the rows two
// independent tunes disagree on are mostly decided by between-process shifts of a few percent
// (docs/perf-notes.md, tuner agreement).
struct ReconfirmOptions {
  std::string tuned_file;
  std::string output;              // default: tuned_file (in place)
  std::string libtype = "all";     // as the tune's --libtype: decides the race's default
  double err_ratio = 0.05;         // the default must pass this to replace a row
  int rounds = 6;                  // RaceOptions::confirm_rounds
  int placements = 4;              // RaceOptions::confirm_placements
  double margin = 0.01;            // RaceOptions::confirm_margin
};

int run_reconfirm(const ReconfirmOptions& options);

}  // namespace tgemm::cli
