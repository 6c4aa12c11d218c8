// `tgemm reconfirm --alternatives N --profile FILE`: where a row's own pick does not pass the
// fresh-process reconfirmation, or a faster candidate than the default was left behind by the
// tune's margins, the reconfirmation times the tune's next best candidates of the same problem
// against the default too and keeps the fastest that passes. This file reads the candidates from
// the tune's profile (--profile_file) and ranks them; host-only.
#pragma once

#include <istream>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/table.h"

namespace tgemm {

// One accurately timed candidate of a problem, as the tune's profile recorded it.
struct ProfiledCandidate {
  std::string libtype;
  std::string name;
  double final_ratio = -1;    // its time / the default's in the finals (< 1: faster); -1 if not in them
  double confirm_ratio = -1;  // the default's time / its in the confirmation (> 1: faster); -1 if not confirmed
  double accurate_us = -1;    // the accurate stage's time; -1 if not timed there
  double err_ratio = 0;       // the tune's correctness check
};

// The problem key of a profile line or a table row: arch, SMs, M, N, K, bias, dtypes, epilogue, and
// for a8w8 the scale recipe (the profile's `scales` column, written by a8w8 tunes).
std::string profile_problem_key(const TableRow& row);

// Profile lines by problem key: candidates that were timed accurately and passed the tune's
// correctness check (err_ratio within max_err_ratio, the strict check unless `loose`, no error).
// A later line of the same problem and candidate replaces an earlier one (a resumed tune appends).
// Malformed lines are skipped with a warning "file:line: reason" in `warnings`; a header without
// the stage and accurate_us columns is a tgemm::Error.
std::unordered_map<std::string, std::vector<ProfiledCandidate>> read_profile_candidates(
    std::istream& in, const std::string& file, double max_err_ratio, bool loose, std::vector<std::string>& warnings);

// Up to `count` candidates other than `default_name` and those in `exclude`, estimated faster than
// the default, fastest first: by the finals' ratio where a candidate was in the finals, else by the
// confirmation's, else by its accurate time over the default's. Ties by name.
std::vector<ProfiledCandidate> rank_alternatives(const std::vector<ProfiledCandidate>& candidates,
                                                 const std::string& default_name,
                                                 const std::vector<std::string>& exclude, int count);

}  // namespace tgemm
