// The tune command's options (tuner/command_options.cpp): a worker races with every one of them,
// and gets them all as arguments; the `tgemm reconfirm` of --reconfirm gets the --reconfirm_*
// options (by default margin 0.06, two placements, tolerance 0.02, three alternatives from the
// profile) and the tune's --confirm_rounds unless --reconfirm_rounds is given.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/host/tuner/race_options_off_default.h"
#include "tuner/command.h"

namespace tgemm {
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
  o.reconfirm_alternatives = 0;  // the row alone
  return o;
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  for (const std::string& a : args) {
    if (a == flag) return true;
  }
  return false;
}

// Every race option of the tune reaches the worker's RaceOptions, each off its default.
TEST(RaceOptionsOf, EveryTuneOptionReachesTheRace) {
  TuneOptions o = race_values_off_the_default();
  o.loose = true;
  o.confirm_best = !o.confirm_best;
  o.confirm_near_default = !o.confirm_near_default;
  o.dedupe_launches = !o.dedupe_launches;
  o.check_all = !o.check_all;
  o.sustained_confirm_all = !o.sustained_confirm_all;
  o.short_slots = !o.short_slots;
  const RaceOptions r = race_options_of(o);
  EXPECT_EQ(r.select.max_err_ratio, 0.02);
  EXPECT_FALSE(r.select.require_strict);
  EXPECT_EQ(r.libtypes, std::vector<std::string>{"cublaslt"});
  EXPECT_EQ(r.accurate.warmup, 7);
  EXPECT_EQ(r.accurate.iters, 33);
  EXPECT_EQ(r.confirm.placements, 4);
  EXPECT_EQ(r.finals.placements, 3);
  EXPECT_EQ(r.finals.max_finalists, 5u);
  EXPECT_EQ(r.finals.memory_bound_finalists, 12u);
  EXPECT_EQ(r.finals.margin, 0.025);
  EXPECT_EQ(r.finals.contenders, 1u);
  EXPECT_EQ(r.screen.refine_bases, 30u);
  EXPECT_EQ(r.finals.rounds, 5);
  EXPECT_EQ(r.accurate.block, 4);
  EXPECT_EQ(r.confirm.tries, 2);
  EXPECT_EQ(r.confirm.rounds, 6);
  EXPECT_EQ(r.confirm.margin, 0.015);
  EXPECT_EQ(r.finals.sustained_round_ms, 70);
  EXPECT_EQ(r.sustained_default_margin, 0.02);
  EXPECT_EQ(r.screen.graph_us, 40);
  EXPECT_EQ(r.select.min_accurate, 32u);
  EXPECT_EQ(r.select.accurate_margin, 0.2);
  EXPECT_EQ(r.confirm.placement_tolerance, 0.01);
  EXPECT_EQ(r.data.min_rotation_sets, 2);
  EXPECT_EQ(r.select.order_band, 0.005);
  EXPECT_EQ(r.confirm.best, o.confirm_best);
  EXPECT_EQ(r.confirm.near_default, o.confirm_near_default);
  EXPECT_EQ(r.screen.dedupe_launches, o.dedupe_launches);
  EXPECT_EQ(r.accurate.check_all, o.check_all);
  EXPECT_EQ(r.confirm.sustained_all, o.sustained_confirm_all);
  EXPECT_EQ(r.short_slots, o.short_slots);
  // --libtype all: every backend.
  o.libtype = "all";
  EXPECT_TRUE(race_options_of(o).libtypes.empty());
}

// A tune left at its defaults races with tune_race_defaults: the command line cannot drift from them.
TEST(RaceOptionsOf, TheTunesDefaultsAreTheRacesDefaults) {
  const RaceOptions r = race_options_of(TuneOptions{});
  const RaceOptions d = tune_race_defaults();
  EXPECT_EQ(r.finals.placements, d.finals.placements);
  EXPECT_EQ(r.screen.graph_us, d.screen.graph_us);
  EXPECT_EQ(r.select.min_accurate, d.select.min_accurate);
  EXPECT_EQ(r.finals.memory_bound_finalists, d.finals.memory_bound_finalists);
  EXPECT_EQ(r.short_slots, d.short_slots);
  EXPECT_EQ(r.accurate.block, d.accurate.block);
  EXPECT_EQ(r.confirm.sustained_all, d.confirm.sustained_all);
  EXPECT_EQ(r.sustained_default_margin, d.sustained_default_margin);
  EXPECT_EQ(r.confirm.placements, d.confirm.placements);
  EXPECT_EQ(r.confirm.rounds, d.confirm.rounds);
  EXPECT_EQ(r.confirm.best, d.confirm.best);
  EXPECT_TRUE(r.select.require_strict);
}

TEST(WorkerArguments, CarryEveryRaceOption) {
  // Each value differs from its default, so a dropped option cannot pass unnoticed.
  TuneOptions o = race_values_off_the_default();
  o.loose = true;
  o.confirm_near_default = true;
  o.short_slots = false;
  const std::vector<std::string> a = worker_arguments(o);
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0], "tune");
  EXPECT_EQ(a[1], "--worker");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"--errRatio", "0.02"},        {"--libtype", "cublaslt"},       {"--warmup", "7"},
      {"--iters", "33"},             {"--confirm_placements", "4"},  {"--final_placements", "3"},
      {"--finalists", "5"},          {"--finalists_mem", "12"},      {"--final_margin", "0.025"},
      {"--final_contenders", "1"},   {"--refine_bases", "30"},       {"--final_rounds", "5"},
      {"--accurate_block", "4"},     {"--confirm_tries", "2"},       {"--confirm_rounds", "6"},
      {"--confirm_margin", "0.015"},  {"--sustained_round_ms", "70"}, {"--sustained_margin", "0.02"},
      {"--graph_screen", "40"},      {"--min_accurate", "32"},       {"--accurate_margin", "0.2"},
      {"--placement_tolerance", "0.01"}, {"--min_rotation_sets", "2"}, {"--order_band", "0.005"}};
  for (const auto& [flag, value] : expected) EXPECT_EQ(value_of(a, flag), value) << flag;
  EXPECT_TRUE(has_flag(a, "--loose"));
  EXPECT_TRUE(has_flag(a, "--confirm_near_default"));
  EXPECT_TRUE(has_flag(a, "--no-confirm_best"));
  EXPECT_TRUE(has_flag(a, "--no-short_slots"));
  EXPECT_FALSE(has_flag(a, "--dedupe_launches"));
  // On by default: the worker hears both ways.
  o.sustained_confirm_all = false;
  EXPECT_TRUE(has_flag(worker_arguments(o), "--no-sustained_confirm_all"));
  EXPECT_FALSE(has_flag(worker_arguments(o), "--sustained_confirm_all"));
  o.sustained_confirm_all = true;
  EXPECT_TRUE(has_flag(worker_arguments(o), "--sustained_confirm_all"));
  // Not given: no --order_band (its -1 default is outside the option's range; the worker's own
  // default is the same -1).
  EXPECT_FALSE(has_flag(worker_arguments(some_tune()), "--order_band"));
}

TEST(ReconfirmArguments, TheTunesRoundsAndTheReconfirmationsOwnRule) {
  // The tune's confirmation: 6 rounds on 4 placements, margins 1% / 2%, tolerance 0. The
  // reconfirmation takes the rounds, and its own rule for the rest.
  const std::vector<std::string> a = reconfirm_arguments(some_tune());
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0], "reconfirm");
  EXPECT_EQ(a[1], "/tmp/t.csv");
  EXPECT_EQ(value_of(a, "--libtype"), "cublaslt");
  EXPECT_EQ(value_of(a, "--rounds"), "6");
  EXPECT_EQ(value_of(a, "--placements"), "2");
  EXPECT_EQ(value_of(a, "--margin"), "0.06");
  EXPECT_EQ(value_of(a, "--sustained_margin"), "0.06");
  EXPECT_EQ(value_of(a, "--placement_tolerance"), "0.02");
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

TEST(ReconfirmArguments, AlternativesOnlyWhereAskedForWithTheProfile) {
  TuneOptions o = some_tune();
  EXPECT_FALSE(has_flag(reconfirm_arguments(o), "--alternatives"));
  EXPECT_FALSE(has_flag(reconfirm_arguments(o), "--profile"));
  o.reconfirm_alternatives = 3;
  o.profile_file = "/tmp/prof.csv";
  const std::vector<std::string> a = reconfirm_arguments(o);
  EXPECT_EQ(value_of(a, "--alternatives"), "3");
  EXPECT_EQ(value_of(a, "--profile"), "/tmp/prof.csv");
  EXPECT_EQ(value_of(a, "--margin"), "0.06");  // the rest unchanged
}

TEST(ReconfirmArguments, TheDefaultsAreTheReconfirmRuleWithThreeAlternatives) {
  TuneOptions o;
  o.tuned_file = "/tmp/t.csv";
  o.profile_file = "/tmp/prof.csv";
  o.confirm_margin = 0.01;
  o.sustained_margin = 0.01;
  const std::vector<std::string> a = reconfirm_arguments(o);
  EXPECT_EQ(value_of(a, "--margin"), "0.06");
  EXPECT_EQ(value_of(a, "--sustained_margin"), "0.06");
  EXPECT_EQ(value_of(a, "--placements"), "2");
  EXPECT_EQ(value_of(a, "--rounds"), "2");  // the tune's --confirm_rounds, 2 by default
  EXPECT_EQ(value_of(a, "--placement_tolerance"), "0.02");
  EXPECT_EQ(value_of(a, "--alternatives"), "3");
  EXPECT_EQ(value_of(a, "--profile"), "/tmp/prof.csv");
  EXPECT_EQ(reconfirm_alternatives(o), 3);
  o.reconfirm = false;  // --no-reconfirm: no alternatives unless asked for
  EXPECT_EQ(reconfirm_alternatives(o), 0);
  o.reconfirm_alternatives = 5;
  EXPECT_EQ(reconfirm_alternatives(o), 5);
}

TEST(ReconfirmArguments, ConfirmationOffStillReconfirmsWithOneRound) {
  TuneOptions o = some_tune();
  o.confirm_rounds = 0;  // no confirmation in the tune: the reconfirmation still needs a round
  EXPECT_EQ(value_of(reconfirm_arguments(o), "--rounds"), "1");
}

GemmProblem problem_of(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

TEST(GridRaceOptions, ThePresetNarrowsTheRaceAndTheScreenOnlyWhereComputeBound) {
  const RaceOptions tune = race_options_of(some_tune());
  const GridRacePreset preset;
  const GemmProblem decode = problem_of(8, 7168, 2048);  // ~8 FLOPs a byte
  const GemmProblem big = problem_of(8192, 7168, 2048);  // far above 128
  ASSERT_FALSE(is_compute_bound(decode));
  ASSERT_TRUE(is_compute_bound(big));
  for (const GemmProblem& p : {decode, big}) {
    const RaceOptions g = grid_race_options(tune, p);
    EXPECT_EQ(g.select.min_accurate, preset.min_accurate);
    EXPECT_LT(g.select.min_accurate, tune.select.min_accurate);
    EXPECT_EQ(g.finals.placements, preset.final_placements);
    EXPECT_EQ(g.finals.memory_bound_finalists, preset.memory_bound_finalists);
    // Everything else is the tune's.
    EXPECT_EQ(g.confirm.rounds, tune.confirm.rounds);
    EXPECT_EQ(g.select.max_err_ratio, tune.select.max_err_ratio);
    EXPECT_EQ(g.libtypes, tune.libtypes);
    EXPECT_NO_THROW(validate_race_options(g));
  }
  const RaceOptions mem = grid_race_options(tune, decode);
  EXPECT_EQ(mem.screen.refine_bases, tune.screen.refine_bases);  // the memory-bound screen is whole
  EXPECT_EQ(mem.screen.dedupe_launches, tune.screen.dedupe_launches);
  EXPECT_EQ(finalists_for(decode, mem.finals), tune.finals.max_finalists);
  const RaceOptions cb = grid_race_options(tune, big);
  EXPECT_EQ(cb.screen.refine_bases, preset.compute_bound_refine_bases);
  EXPECT_TRUE(cb.screen.dedupe_launches);
}

}  // namespace
}  // namespace tgemm
