// The `tgemm reconfirm` that `tgemm tune --reconfirm` spawns: the tune's confirmation rule by
// default, the --reconfirm_* options where given (tools/cli/reconfirm_args.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/cli/tune.h"

namespace tgemm::cli {
namespace {

// The value that follows `flag` in args; fails the test if the flag is missing or last.
std::string value_of(const std::vector<std::string>& args, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  ADD_FAILURE() << flag << " not among the reconfirmation's arguments";
  return "";
}

TuneOptions some_tune() {
  TuneOptions o;
  o.tuned_file = "/tmp/t.csv";
  o.libtype = "cublaslt";
  o.err_ratio = 0.05;
  o.confirm_rounds = 6;
  o.confirm_placements = 4;
  o.confirm_margin = 0.01;
  o.sustained_margin = 0.02;
  o.placement_tolerance = 0.0;
  o.min_rotation_sets = 2;
  o.short_slots = true;
  return o;
}

TEST(ReconfirmArguments, FollowTheTunesConfirmationByDefault) {
  const std::vector<std::string> a = reconfirm_arguments(some_tune());
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0], "reconfirm");
  EXPECT_EQ(a[1], "/tmp/t.csv");
  EXPECT_EQ(value_of(a, "--libtype"), "cublaslt");
  EXPECT_EQ(value_of(a, "--rounds"), "6");
  EXPECT_EQ(value_of(a, "--placements"), "4");
  EXPECT_EQ(value_of(a, "--margin"), "0.01");
  EXPECT_EQ(value_of(a, "--sustained_margin"), "0.02");
  EXPECT_EQ(value_of(a, "--placement_tolerance"), "0");
  EXPECT_EQ(value_of(a, "--min_rotation_sets"), "2");
  EXPECT_EQ(a.back(), "--short_slots");
}

TEST(ReconfirmArguments, TheReconfirmOptionsReplaceTheTunesRule) {
  TuneOptions o = some_tune();
  o.reconfirm_margin = 0;
  o.reconfirm_rounds = 3;
  o.reconfirm_placements = 2;
  o.reconfirm_tolerance = 0.02;
  o.short_slots = false;
  const std::vector<std::string> a = reconfirm_arguments(o);
  EXPECT_EQ(value_of(a, "--rounds"), "3");
  EXPECT_EQ(value_of(a, "--placements"), "2");
  // One margin for every problem: the compute-bound one too.
  EXPECT_EQ(value_of(a, "--margin"), "0");
  EXPECT_EQ(value_of(a, "--sustained_margin"), "0");
  EXPECT_EQ(value_of(a, "--placement_tolerance"), "0.02");
  EXPECT_EQ(a.back(), "--no-short_slots");
}

TEST(ReconfirmArguments, ConfirmationOffStillReconfirmsWithOneRound) {
  TuneOptions o = some_tune();
  o.confirm_rounds = 0;  // no confirmation in the tune: the reconfirmation still needs a round
  EXPECT_EQ(value_of(reconfirm_arguments(o), "--rounds"), "1");
}

}  // namespace
}  // namespace tgemm::cli
