// The arguments `tgemm tune` gives the processes it spawns (tuner/command_options.cpp), parsed back
// through the command's own option registrations (tools/cli/tune_cli.cpp): every option a worker or
// the reconfirmation receives must read back as the tune sent it, on by default or off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/host/tuner/race_options_off_default.h"
#include "tools/cli/tune_cli.h"

namespace tgemm::cli {
namespace {

// CLI11 parses a vector of arguments in reverse order.
void parse(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
}

TuneOptions parse_worker(const TuneOptions& sent) {
  TuneOptions got;
  CLI::App app;
  CLI::App* t = add_tune_command(app, got);
  parse(app, worker_arguments(sent));
  EXPECT_TRUE(t->parsed());
  EXPECT_TRUE(got.worker);
  return got;
}

void expect_same_race_options(const TuneOptions& got, const TuneOptions& sent) {
  EXPECT_EQ(got.err_ratio, sent.err_ratio);
  EXPECT_EQ(got.libtype, sent.libtype);
  EXPECT_EQ(got.warmup, sent.warmup);
  EXPECT_EQ(got.iters, sent.iters);
  EXPECT_EQ(got.confirm_placements, sent.confirm_placements);
  EXPECT_EQ(got.final_placements, sent.final_placements);
  EXPECT_EQ(got.finalists, sent.finalists);
  EXPECT_EQ(got.finalists_mem, sent.finalists_mem);
  EXPECT_EQ(got.final_margin, sent.final_margin);
  EXPECT_EQ(got.final_contenders, sent.final_contenders);
  EXPECT_EQ(got.refine_bases, sent.refine_bases);
  EXPECT_EQ(got.final_rounds, sent.final_rounds);
  EXPECT_EQ(got.accurate_block, sent.accurate_block);
  EXPECT_EQ(got.confirm_tries, sent.confirm_tries);
  EXPECT_EQ(got.confirm_rounds, sent.confirm_rounds);
  EXPECT_EQ(got.confirm_margin, sent.confirm_margin);
  EXPECT_EQ(got.sustained_round_ms, sent.sustained_round_ms);
  EXPECT_EQ(got.sustained_margin, sent.sustained_margin);
  EXPECT_EQ(got.graph_screen_us, sent.graph_screen_us);
  EXPECT_EQ(got.min_accurate, sent.min_accurate);
  EXPECT_EQ(got.accurate_margin, sent.accurate_margin);
  EXPECT_EQ(got.placement_tolerance, sent.placement_tolerance);
  EXPECT_EQ(got.min_rotation_sets, sent.min_rotation_sets);
  EXPECT_EQ(got.order_band, sent.order_band);
  EXPECT_EQ(got.loose, sent.loose);
  EXPECT_EQ(got.confirm_best, sent.confirm_best);
  EXPECT_EQ(got.confirm_near_default, sent.confirm_near_default);
  EXPECT_EQ(got.dedupe_launches, sent.dedupe_launches);
  EXPECT_EQ(got.check_all, sent.check_all);
  EXPECT_EQ(got.sustained_confirm_all, sent.sustained_confirm_all);
  EXPECT_EQ(got.short_slots, sent.short_slots);
}

TEST(TuneCommandLine, TheDefaultsReachTheWorker) {
  TuneOptions sent;
  expect_same_race_options(parse_worker(sent), sent);
}

TEST(TuneCommandLine, EveryRaceOptionReachesTheWorkerOffTheDefault) {
  // Each value or switch the other way from its default.
  TuneOptions sent = race_values_off_the_default();
  sent.loose = !sent.loose;
  sent.confirm_best = !sent.confirm_best;
  sent.confirm_near_default = !sent.confirm_near_default;
  sent.dedupe_launches = !sent.dedupe_launches;
  sent.check_all = !sent.check_all;
  sent.sustained_confirm_all = !sent.sustained_confirm_all;
  sent.short_slots = !sent.short_slots;
  expect_same_race_options(parse_worker(sent), sent);
}

TEST(TuneCommandLine, TheReconfirmationReadsTheTunesRule) {
  TuneOptions sent;
  sent.tuned_file = "/tmp/t.csv";
  sent.profile_file = "/tmp/prof.csv";
  sent.libtype = "cublaslt";
  sent.min_rotation_sets = 2;
  ReconfirmOptions got;
  CLI::App app;
  CLI::App* rc = add_reconfirm_command(app, got);
  parse(app, reconfirm_arguments(sent));
  ASSERT_TRUE(rc->parsed());
  EXPECT_EQ(got.tuned_file, "/tmp/t.csv");
  EXPECT_EQ(got.libtype, "cublaslt");
  EXPECT_EQ(got.err_ratio, sent.err_ratio);
  EXPECT_EQ(got.rounds, sent.confirm_rounds);
  EXPECT_EQ(got.placements, kReconfirmPlacements);
  EXPECT_EQ(got.margin, kReconfirmMargin);
  EXPECT_EQ(got.sustained_margin, kReconfirmMargin);
  EXPECT_EQ(got.placement_tolerance, kReconfirmTolerance);
  EXPECT_EQ(got.min_rotation_sets, 2);
  EXPECT_EQ(got.short_slots, sent.short_slots);
  EXPECT_EQ(got.alternatives, kReconfirmAlternatives);
  EXPECT_EQ(got.profile_file, "/tmp/prof.csv");
}

TEST(TuneCommandLine, TheMGridOptionsParseAndValuesOutsideTheirRangeAreRefused) {
  {
    TuneOptions got;
    CLI::App app;
    add_tune_command(app, got);
    parse(app, {"tune", "-i", "in.csv", "-o", "out.csv"});
    EXPECT_FALSE(got.m_grid);
    EXPECT_EQ(got.m_grid_max, kMGridMax);
    EXPECT_EQ(got.m_grid_factor, kTuneGridFactor);
    EXPECT_EQ(got.m_grid_shrink_steps, 3);
    EXPECT_EQ(got.m_grid_race, "preset");
    EXPECT_EQ(got.m_grid_compute_bound, "skip");
    EXPECT_FALSE(got.m_grid_plan);
  }
  {
    TuneOptions got;
    CLI::App app;
    add_tune_command(app, got);
    parse(app,
          {"tune", "-i", "in.csv", "-o", "out.csv", "--m-grid", "--m-grid-max", "4096", "--m-grid-factor", "2",
           "--m-grid-shrink-steps", "1", "--m-grid-race", "tune", "--m-grid-compute-bound", "exact", "--m-grid-plan"});
    EXPECT_TRUE(got.m_grid);
    EXPECT_EQ(got.m_grid_max, 4096);
    EXPECT_EQ(got.m_grid_factor, 2.0);
    EXPECT_EQ(got.m_grid_shrink_steps, 1);
    EXPECT_EQ(got.m_grid_race, "tune");
    EXPECT_EQ(got.m_grid_compute_bound, "exact");
    EXPECT_TRUE(got.m_grid_plan);
  }
  {
    // The plan counts grid points: without --m-grid there are none.
    TuneOptions got;
    CLI::App app;
    add_tune_command(app, got);
    EXPECT_THROW(parse(app, {"tune", "-i", "in.csv", "-o", "out.csv", "--m-grid-plan"}), CLI::ParseError);
  }
  {
    // Which grid points are compute-bound is a question of the grid: without --m-grid it is refused.
    TuneOptions got;
    CLI::App app;
    add_tune_command(app, got);
    EXPECT_THROW(parse(app, {"tune", "-i", "in.csv", "-o", "out.csv", "--m-grid-compute-bound", "exact"}),
                 CLI::ParseError);
  }
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--m-grid-max", "0"},
                                              {"--m-grid-max", "2147483648"},
                                              {"--m-grid-factor", "1.05"},
                                              {"--m-grid-factor", "5"},
                                              {"--m-grid-shrink-steps", "-1"},
                                              {"--m-grid-race", "fast"},
                                              {"--m-grid-compute-bound", "range"}}) {
    TuneOptions got;
    CLI::App app;
    add_tune_command(app, got);
    std::vector<std::string> args = {"tune", "-i", "in.csv", "-o", "out.csv", "--m-grid"};
    args.insert(args.end(), bad.begin(), bad.end());
    EXPECT_THROW(parse(app, args), CLI::ParseError) << bad[0] << " " << bad[1];
  }
}

}  // namespace
}  // namespace tgemm::cli
