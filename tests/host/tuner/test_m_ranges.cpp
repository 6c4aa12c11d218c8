// `tgemm tune --m-grid`'s range pass (tuner/m_ranges.h) with injected ratios: ranges planned from
// per-point winners and the solutions that tied them, within where each can run, the gap split,
// ends that shrink by bisection, midpoints that split a run, merging, the cut around exact rows,
// the rows written and the resume state; claims that end at the key's last memory-bound M and the
// grid points left out above it; and the tuned file's replacement of a key's range rows
// (tuner/tuned_file.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/lookup.h"
#include "core/m_grid.h"
#include "core/table.h"
#include "tests/common/host_test_util.h"
#include "tgemm/error.h"
#include "tuner/m_ranges.h"
#include "tuner/options.h"
#include "tuner/tuned_file.h"

namespace tgemm {
namespace {

constexpr double kBand = 0.01;

std::vector<GridWinner> winners(const std::vector<std::pair<std::int64_t, std::string>>& pts) {
  std::vector<GridWinner> out;
  for (const auto& [m, s] : pts) out.push_back({m, s, s == "default"});
  return out;
}

// Runs a check to the end, each measured M's ratio from `ratio_at`; returns every M measured.
std::vector<std::int64_t> run_check(RangeCheck& c, const std::function<double(std::int64_t)>& ratio_at) {
  std::vector<std::int64_t> measured;
  for (int round = 0; round < 64 && !settled(c); ++round) {
    std::map<std::int64_t, double> ratios;
    for (std::int64_t m : pending(c)) {
      ratios[m] = ratio_at(m);
      measured.push_back(m);
    }
    apply_ratios(c, ratios, kBand);
  }
  EXPECT_TRUE(settled(c));
  return measured;
}

TEST(GapSplit, GeometricMeanStrictlyInsideTheGap) {
  EXPECT_EQ(gap_split(8, 9), 8);     // no M between: the lower point claims nothing more
  EXPECT_EQ(gap_split(8, 10), 9);    // sqrt(80) = 8.9 is below x + 1
  EXPECT_EQ(gap_split(16, 24), 19);  // sqrt(384) = 19.6
  EXPECT_EQ(gap_split(920, 1384), 1128);
  EXPECT_EQ(gap_split(1, 4), 2);
  EXPECT_THROW(gap_split(10, 10), Error);
  EXPECT_THROW(gap_split(0, 10), Error);
}

TEST(PlanRanges, RunsOfOneSolutionClaimHalfGapsAndDefaultPointsClaimNothing) {
  const auto checks = plan_ranges(
      winners({{16, "A"}, {1, "default"}, {2, "A"}, {3, "A"}, {4, "B"}, {8, "default"}, {10, "A"}, {12, "A"}}));
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_EQ(checks[0].solution, "A");
  EXPECT_EQ(checks[0].grid, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(checks[0].lo, 2);  // 1 and 2 are neighbours: nothing between them to claim
  EXPECT_EQ(checks[0].hi, 3);
  EXPECT_EQ(checks[1].solution, "B");
  EXPECT_EQ(checks[1].lo, 4);
  EXPECT_EQ(checks[1].hi, gap_split(4, 8));  // half the gap toward the default's point
  EXPECT_EQ(checks[2].grid, (std::vector<std::int64_t>{10, 12, 16}));
  EXPECT_EQ(checks[2].lo, gap_split(8, 10) + 1);
  EXPECT_EQ(checks[2].hi, 16);  // the last grid point: nothing above it was raced
  // Every claimed range holds its grid points and stays strictly between its neighbours' points.
  for (const RangeCheck& c : checks) {
    EXPECT_LE(c.lo, c.grid.front());
    EXPECT_GE(c.hi, c.grid.back());
  }
  EXPECT_LT(checks[1].hi, 8);
  EXPECT_GT(checks[2].lo, 8);
}

TEST(PlanRanges, NeighbouringWinnersSplitTheGapBetweenThem) {
  const auto checks = plan_ranges(winners({{120, "A"}, {184, "B"}}));
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].hi + 1, checks[1].lo);
  EXPECT_EQ(checks[0].hi, gap_split(120, 184));
}

TEST(PlanRanges, RepeatedMIsAnError) {
  EXPECT_THROW(plan_ranges(winners({{4, "A"}, {4, "B"}})), Error);
  EXPECT_TRUE(plan_ranges(winners({{4, "default"}, {8, "default"}})).empty());
}

TEST(RangeCheck, EverythingHoldsKeepsTheClaimAndMeasuresEndsAndMidpoints) {
  auto checks = plan_ranges(winners({{16, "default"}, {24, "A"}, {40, "A"}, {56, "A"}, {80, "default"}}));
  ASSERT_EQ(checks.size(), 1u);
  RangeCheck& c = checks[0];
  const std::vector<std::int64_t> expected = {gap_split(16, 24) + 1, gap_split(24, 40), gap_split(40, 56),
                                              gap_split(56, 80)};
  EXPECT_EQ(pending(c), expected);
  const auto measured = run_check(c, [](std::int64_t) { return 1.05; });
  EXPECT_EQ(measured, expected);  // one round, nothing else measured
  const auto pieces = verified_ranges(c);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].lo, c.lo);
  EXPECT_EQ(pieces[0].hi, c.hi);
  EXPECT_EQ(pieces[0].grid, (std::vector<std::int64_t>{24, 40, 56}));
}

TEST(RangeCheck, ATieWithinTheBandHoldsAndJustBeyondItFails) {
  EXPECT_TRUE(ratio_holds(0.99, kBand));
  EXPECT_TRUE(ratio_holds(1.0, kBand));
  EXPECT_FALSE(ratio_holds(0.989, kBand));
  EXPECT_FALSE(ratio_holds(-1.0, kBand));  // could not run there
  EXPECT_FALSE(ratio_holds(std::nan(""), kBand));
}

TEST(RangeCheck, AFailingEndShrinksByBisectionToTheFarthestMThatHeld) {
  // A holds up to M = 1000 and loses above it; its claim reaches gap_split(920, 1384) = 1128.
  auto checks = plan_ranges(winners({{616, "A"}, {920, "A"}, {1384, "default"}}), 3);
  ASSERT_EQ(checks.size(), 1u);
  RangeCheck& c = checks[0];
  EXPECT_EQ(c.hi, 1128);
  const auto measured = run_check(c, [](std::int64_t m) { return m <= 1000 ? 1.02 : 0.95; });
  // The end 1128 fails; bisection toward 920: 1024 (fails), 972 (holds), 998 (holds).
  EXPECT_EQ(measured, (std::vector<std::int64_t>{gap_split(616, 920), 1128, 1024, 972, 998}));
  const auto pieces = verified_ranges(c);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].hi, 998);
  EXPECT_EQ(pieces[0].lo, c.lo);  // the first grid point: nothing below 616 was claimed
  // The end is an M that was measured and held: nothing claimed beyond what was measured.
  EXPECT_LE(pieces[0].hi, 1000);
}

TEST(RangeCheck, ALowEndThatFailsEverywhereFallsBackToTheGridPoint) {
  auto checks = plan_ranges(winners({{24, "default"}, {40, "A"}}), 2);
  ASSERT_EQ(checks.size(), 1u);
  RangeCheck& c = checks[0];
  EXPECT_EQ(c.lo, gap_split(24, 40) + 1);
  const auto measured = run_check(c, [](std::int64_t m) { return m == 40 ? 1.1 : 0.9; });
  EXPECT_EQ(measured.size(), 3u);  // the end and two bisection steps
  const auto pieces = verified_ranges(c);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].lo, 40);
  EXPECT_EQ(pieces[0].hi, 40);
}

TEST(RangeCheck, ZeroShrinkStepsDropsAFailingEndAtOnce) {
  auto checks = plan_ranges(winners({{40, "A"}, {56, "default"}}), 0);
  const auto measured = run_check(checks[0], [](std::int64_t) { return 0.5; });
  EXPECT_EQ(measured.size(), 1u);
  EXPECT_EQ(verified_ranges(checks[0])[0].hi, 40);
}

TEST(RangeCheck, AFailingMidpointSplitsTheRunAndTheGapGoesToTheDefault) {
  auto checks = plan_ranges(winners({{120, "A"}, {184, "A"}, {272, "A"}, {408, "A"}}));
  ASSERT_EQ(checks.size(), 1u);
  const std::int64_t bad_mid = gap_split(184, 272);
  run_check(checks[0], [&](std::int64_t m) { return m == bad_mid ? 0.97 : 1.01; });
  const auto pieces = verified_ranges(checks[0]);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].lo, 120);
  EXPECT_EQ(pieces[0].hi, 184);
  EXPECT_EQ(pieces[0].grid, (std::vector<std::int64_t>{120, 184}));
  EXPECT_EQ(pieces[1].lo, 272);
  EXPECT_EQ(pieces[1].hi, 408);
  // No piece serves the failing midpoint.
  for (const auto& p : pieces) EXPECT_FALSE(p.lo <= bad_mid && bad_mid <= p.hi);
}

TEST(RangeCheck, AMissingRatioCountsAsFailed) {
  auto checks = plan_ranges(winners({{40, "A"}, {56, "default"}}), 0);
  apply_ratios(checks[0], {}, kBand);
  ASSERT_TRUE(settled(checks[0]));
  EXPECT_EQ(verified_ranges(checks[0])[0].hi, 40);
}

TEST(RangeCheck, UnsettledChecksHaveNoRanges) {
  auto checks = plan_ranges(winners({{40, "A"}, {56, "default"}}));
  EXPECT_THROW(verified_ranges(checks[0]), Error);
}

// Over the whole tuning grid with random crossovers, a verified range only ever claims M values
// between two measured M that held (or grid points the solution won), and never an M that failed.
TEST(RangeCheck, NoRangeClaimsAnMOutsideWhatWasMeasured) {
  const std::vector<std::int64_t> grid = tune_grid();
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::vector<GridWinner> pts;
    unsigned s = seed;
    auto next = [&]() { return s = s * 1103515245u + 12345u, (s >> 16) % 4; };
    for (std::int64_t m : grid) {
      const unsigned r = next();
      pts.push_back({m, r == 0 ? "default" : (r == 1 ? "A" : "B"), r == 0});
    }
    const std::int64_t fail_from = 1 + static_cast<std::int64_t>(next()) * 3000;
    auto truth = [&](std::int64_t m) { return (m % 7 == 3 || m >= fail_from) ? 0.9 : 1.03; };
    for (RangeCheck& c : plan_ranges(pts)) {
      std::set<std::int64_t> held(c.grid.begin(), c.grid.end()), failed;
      for (std::int64_t m : run_check(c, truth)) (ratio_holds(truth(m), kBand) ? held : failed).insert(m);
      for (const VerifiedRange& r : verified_ranges(c)) {
        EXPECT_TRUE(held.count(r.lo) == 1 && held.count(r.hi) == 1)
            << "seed " << seed << " [" << r.lo << ", " << r.hi << "]";
        for (std::int64_t f : failed) EXPECT_FALSE(r.lo <= f && f <= r.hi) << "seed " << seed << " M " << f;
      }
    }
  }
}

// Points won as given, each with the solutions that tied its winner there.
std::vector<GridWinner> with_ties(
    const std::vector<std::tuple<std::int64_t, std::string, std::vector<std::string>>>& pts) {
  std::vector<GridWinner> out;
  for (const auto& [m, s, tied] : pts) out.push_back({m, s, s == "default", tied});
  return out;
}

TEST(PlanRanges, WithoutTiesAlternatingWinnersGiveOneRunEach) {
  const auto checks = plan_ranges(winners({{3, "A"}, {4, "B"}, {5, "A"}, {6, "C"}, {7, "A"}, {8, "A"}}));
  ASSERT_EQ(checks.size(), 5u);
  EXPECT_EQ(checks[4].grid, (std::vector<std::int64_t>{7, 8}));
}

TEST(PlanRanges, ARunAbsorbsANeighbouringPointWhereItTiedTheWinner) {
  // 1536x7168's decode points: A won 3, 5, 7, 8; B won 4 and C won 6, where the race timed A within
  // the tie band of each.
  auto checks = plan_ranges(with_ties({{2, "default", {}},
                                       {3, "A", {}},
                                       {4, "B", {"A"}},
                                       {5, "A", {}},
                                       {6, "C", {"A", "B"}},
                                       {7, "A", {}},
                                       {8, "A", {}},
                                       {10, "D", {}}}));
  ASSERT_EQ(checks.size(), 2u);
  RangeCheck& a = checks[0];
  EXPECT_EQ(a.solution, "A");
  EXPECT_EQ(a.grid, (std::vector<std::int64_t>{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(a.absorbed, (std::map<std::int64_t, std::string>{{4, "B"}, {6, "C"}}));
  EXPECT_EQ(a.lo, 3);
  EXPECT_EQ(a.hi, gap_split(8, 10));
  EXPECT_EQ(checks[1].solution, "D");
  EXPECT_EQ(checks[1].lo, gap_split(8, 10) + 1);
  // Only the claim's upper end is measured: the points between 3 and 8 are neighbours.
  EXPECT_EQ(pending(a), (std::vector<std::int64_t>{9}));
  run_check(a, [](std::int64_t) { return 1.02; });
  const auto pieces = verified_ranges(a);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].lo, 3);
  EXPECT_EQ(pieces[0].hi, 9);
  EXPECT_EQ(pieces[0].grid, (std::vector<std::int64_t>{3, 5, 7, 8}));  // the row is written at a point A won
  EXPECT_EQ(row_m(pieces[0]), 5);
  // One row serves 3..9; the points B and C won are served by A.
  std::map<std::int64_t, TableRow> grid_rows;
  for (const auto& [m, k] :
       std::vector<std::pair<std::int64_t, std::string>>{{3, "A"}, {4, "B"}, {5, "A"}, {6, "C"}, {7, "A"}, {8, "A"}}) {
    grid_rows[m] = TableRow{};
    grid_rows[m].m = m;
    grid_rows[m].kernel_name = k;
  }
  const auto rows = range_rows(pieces, grid_rows, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kernel_name, "A");
  EXPECT_EQ(rows[0].m_lo, 3);
  EXPECT_EQ(rows[0].m_hi, 9);
}

TEST(PlanRanges, AbsorbingNeedsTheTieAtEveryPointOfTheRun) {
  // A did not tie at 4: three runs, whatever the ties at 6.
  const auto checks = plan_ranges(with_ties({{3, "A", {}}, {4, "B", {}}, {5, "A", {}}, {6, "C", {"A"}}, {7, "A", {}}}));
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_EQ(checks[0].grid, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(checks[1].grid, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(checks[2].grid, (std::vector<std::int64_t>{5, 6, 7}));
  EXPECT_EQ(checks[2].absorbed.size(), 1u);
}

TEST(PlanRanges, ADefaultPointIsNeverAbsorbed) {
  // A tying the race's winner where the default won gains nothing there: the run stops.
  const auto checks = plan_ranges(with_ties({{3, "A", {}}, {4, "default", {"A"}}, {5, "A", {}}}));
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].hi, 3);
  EXPECT_EQ(checks[1].lo, 5);
}

TEST(PlanRanges, ARunTakesASolutionThatWonOneOfItsPointsTheMostWinsFirst) {
  // C tied everywhere but won nothing: no row of C can be written, so it takes no run.
  auto checks = plan_ranges(with_ties({{3, "A", {"C"}}, {4, "B", {"C"}}}));
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].solution, "A");
  EXPECT_EQ(checks[1].solution, "B");
  // A and B tie each other at both points, one win each: one run, the first by name.
  checks = plan_ranges(with_ties({{3, "B", {"A"}}, {4, "A", {"B"}}}));
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].solution, "A");
  EXPECT_EQ(checks[0].absorbed, (std::map<std::int64_t, std::string>{{3, "B"}}));
  // B won two of three and tied the third: B, absorbing the one point A won.
  checks = plan_ranges(with_ties({{3, "B", {"A"}}, {4, "A", {"B"}}, {5, "B", {}}}));
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].solution, "B");
  EXPECT_EQ(checks[0].absorbed, (std::map<std::int64_t, std::string>{{4, "A"}}));
}

TEST(PlanRanges, TheFewestRunsThenTheMostPointsServedByTheirOwnWinner) {
  // Two runs either way: A over 1..3 then B over 4..5 (absorbing 5), or A at 1 then B over 2..5
  // (absorbing 2, 3 and 5). The first serves more points by their own winner.
  const auto checks =
      plan_ranges(with_ties({{1, "A", {}}, {2, "A", {"B"}}, {3, "A", {"B"}}, {4, "B", {}}, {5, "C", {"B"}}}));
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].solution, "A");
  EXPECT_EQ(checks[0].grid, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(checks[1].solution, "B");
  EXPECT_EQ(checks[1].grid, (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(checks[1].absorbed, (std::map<std::int64_t, std::string>{{5, "C"}}));
}

// Random winners and ties over the tuning grid: every point the default did not win is in exactly
// one run, a run's solution won at least one of its points and won or tied every other, no default
// point is in a run, and no cut has more runs than the runs of one winner each.
TEST(PlanRanges, RunsCoverEveryPointOnceWithASolutionThatWonOrTiedThere) {
  const std::vector<std::int64_t> grid = tune_grid();
  const std::vector<std::string> names = {"A", "B", "C"};
  for (unsigned seed = 1; seed <= 200; ++seed) {
    unsigned s = seed;
    auto next = [&](unsigned n) { return s = s * 1103515245u + 12345u, (s >> 16) % n; };
    std::vector<GridWinner> pts;
    for (std::int64_t m : grid) {
      const unsigned r = next(5);
      GridWinner g{m, r == 0 ? "default" : names[r % 3], r == 0, {}};
      for (const std::string& other : names) {
        if (other != g.solution && !g.is_default && next(2) == 0) g.tied.push_back(other);
      }
      pts.push_back(g);
    }
    std::vector<std::pair<std::int64_t, std::string>> untied;
    for (const GridWinner& g : pts) untied.emplace_back(g.m, g.solution);
    const std::size_t runs_without_ties = plan_ranges(winners(untied)).size();
    const auto checks = plan_ranges(pts);
    EXPECT_LE(checks.size(), runs_without_ties) << "seed " << seed;
    std::map<std::int64_t, int> covered;
    for (const RangeCheck& c : checks) {
      bool won_one = false;
      for (std::int64_t m : c.grid) {
        ++covered[m];
        const GridWinner& g = *std::find_if(pts.begin(), pts.end(), [&](const GridWinner& p) { return p.m == m; });
        EXPECT_FALSE(g.is_default) << "seed " << seed << " M " << m;
        const bool tied = std::find(g.tied.begin(), g.tied.end(), c.solution) != g.tied.end();
        EXPECT_TRUE(g.solution == c.solution || tied) << "seed " << seed << " M " << m;
        EXPECT_EQ(c.absorbed.count(m) == 1, g.solution != c.solution) << "seed " << seed << " M " << m;
        won_one = won_one || g.solution == c.solution;
      }
      EXPECT_TRUE(won_one) << "seed " << seed << " run of " << c.solution;
    }
    for (const GridWinner& g : pts) EXPECT_EQ(covered[g.m], g.is_default ? 0 : 1) << "seed " << seed << " M " << g.m;
  }
}

TEST(RangeCheck, APieceLeftWithAbsorbedPointsOnlyGivesThemBackToTheirWinners) {
  // A won 24 and tied B at 36; the midpoint between them fails: 36 has no row of A, so it goes back
  // to B at M = 36 alone (the claim around 36 was verified for A, not for B).
  auto checks = plan_ranges(with_ties({{16, "default", {}}, {24, "A", {}}, {36, "B", {"A"}}, {54, "default", {}}}));
  ASSERT_EQ(checks.size(), 1u);
  const std::int64_t mid = gap_split(24, 36);
  run_check(checks[0], [&](std::int64_t m) { return m == mid ? 0.9 : 1.05; });
  const auto pieces = verified_ranges(checks[0]);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].solution, "A");
  EXPECT_EQ(pieces[0].lo, gap_split(16, 24) + 1);
  EXPECT_EQ(pieces[0].hi, 24);
  EXPECT_EQ(pieces[1].solution, "B");
  EXPECT_EQ(pieces[1].lo, 36);
  EXPECT_EQ(pieces[1].hi, 36);
  EXPECT_EQ(pieces[1].grid, (std::vector<std::int64_t>{36}));
}

TEST(CutAround, AnAbsorbedPointCutOffFromItsRangesPointsGoesBackToItsWinner) {
  const VerifiedRange r{"A", 10, 60, {16}, {{24, "B"}, {40, "C"}}};
  const auto pieces = cut_around(r, {20, 30});
  // [10, 19] holds 16 (A); [21, 29] only the absorbed 24: B at 24; [31, 60] only 40: C at 40.
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].solution, "A");
  EXPECT_EQ(pieces[0].hi, 19);
  EXPECT_EQ(pieces[1].solution, "B");
  EXPECT_EQ(pieces[1].lo, 24);
  EXPECT_EQ(pieces[1].hi, 24);
  EXPECT_EQ(pieces[2].solution, "C");
  EXPECT_EQ(pieces[2].lo, 40);
  EXPECT_EQ(pieces[2].hi, 40);
  // Uncut, the absorbed points stay inside A's range.
  const auto whole = cut_around(r, {});
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].absorbed.size(), 2u);
}

TEST(PlanRanges, AClaimStaysWhereItsSolutionCanRun) {
  // An m8 tile won 8; the gap toward the default's 16 splits at 11, but the tile runs only to 8:
  // nothing above 8 is claimed or measured.
  auto checks = plan_ranges(winners({{4, "default"}, {8, "S"}, {16, "default"}}), 3, {{"S", RunnableM{1, 8}}});
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].hi, 8);
  EXPECT_EQ(pending(checks[0]), (std::vector<std::int64_t>{gap_split(4, 8) + 1}));  // the low end only
  // Runs to 10: the claim ends there. A limit inside the run's own points does not cut them.
  checks = plan_ranges(winners({{8, "S"}, {16, "default"}}), 3, {{"S", RunnableM{1, 10}}});
  EXPECT_EQ(checks[0].hi, 10);
  checks = plan_ranges(winners({{8, "S"}, {12, "S"}, {16, "default"}}), 3, {{"S", RunnableM{9, 10}}});
  EXPECT_EQ(checks[0].lo, 8);
  EXPECT_EQ(checks[0].hi, 12);
  // A lower limit: claimed from 5 up, not from the gap split with 1.
  checks = plan_ranges(winners({{1, "default"}, {8, "S"}}), 3, {{"S", RunnableM{5, 16384}}});
  EXPECT_EQ(checks[0].lo, 5);
  // Unknown intervals (lo 0) narrow nothing.
  checks = plan_ranges(winners({{8, "S"}, {16, "default"}}), 3, {{"S", RunnableM{}}});
  EXPECT_EQ(checks[0].hi, gap_split(8, 16));
}

// A key's problem at M = 1 (last_memory_bound_m ignores M).
GemmProblem key_problem(std::int64_t n, std::int64_t k) {
  GemmProblem p;
  p.m = 1;
  p.n = n;
  p.k = k;
  return p;
}

TEST(LastMemoryBoundM, TheLargestMWhereTheKeyIsNotComputeBound) {
  // 4096x4096 bf16: FLOPs per byte 1 / (1/4096 + 1/M + 1/4096), 127.5 at M = 136 and 128.4 at 137.
  const GemmProblem o_proj = key_problem(4096, 4096);
  EXPECT_EQ(last_memory_bound_m(o_proj, 16384), 136);
  GemmProblem at = o_proj;
  at.m = 136;
  EXPECT_FALSE(is_compute_bound(at));
  at.m = 137;
  EXPECT_TRUE(is_compute_bound(at));
  // dsv3 q_b 24576x1536: compute-bound from 141, the range [753, 1128] that lost at 861 and 1024
  // lies far above it.
  EXPECT_EQ(last_memory_bound_m(key_problem(24576, 1536), 16384), 140);
  // Below the crossover, up_to itself; a key compute-bound at no M (64x64 reaches 32 FLOPs a byte).
  EXPECT_EQ(last_memory_bound_m(o_proj, 100), 100);
  EXPECT_EQ(last_memory_bound_m(key_problem(64, 64), 16384), 16384);
  EXPECT_THROW(last_memory_bound_m(o_proj, 0), Error);
  // Every key of the shape suite (bench/shapes/llm_shapes.csv) turns compute-bound between the grid
  // points 120 and 184.
  for (const auto& [n, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{{6144, 4096},
                                                                               {4096, 4096},
                                                                               {28672, 4096},
                                                                               {4096, 14336},
                                                                               {1280, 8192},
                                                                               {8192, 1024},
                                                                               {7168, 8192},
                                                                               {8192, 3584},
                                                                               {10240, 5120},
                                                                               {5120, 8192},
                                                                               {51200, 5120},
                                                                               {5120, 25600},
                                                                               {1536, 7168},
                                                                               {576, 7168},
                                                                               {24576, 1536},
                                                                               {7168, 16384}}) {
    const std::int64_t last = last_memory_bound_m(key_problem(n, k), 16384);
    EXPECT_GE(last, 120) << n << "x" << k;
    EXPECT_LT(last, 184) << n << "x" << k;
  }
}

TEST(PlanRanges, AClaimEndsAtTheLastMemoryBoundMAndItsEndIsVerified) {
  // 4096x4096: memory-bound to 136. A won 80 and 120, and the compute-bound 184 and 272: only the
  // memory-bound points form a run, and its claim stops at 136, not at gap_split(120, 184) = 148.
  const std::int64_t last = 136;
  auto checks = plan_ranges(winners({{56, "default"}, {80, "A"}, {120, "A"}, {184, "A"}, {272, "A"}}), 3, {}, last);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].grid, (std::vector<std::int64_t>{80, 120}));
  EXPECT_EQ(checks[0].lo, gap_split(56, 80) + 1);
  EXPECT_EQ(checks[0].hi, last);
  // The cut end is measured as any end is.
  EXPECT_EQ(pending(checks[0]), (std::vector<std::int64_t>{gap_split(56, 80) + 1, gap_split(80, 120), last}));
  // Without the bound the same points give one run to 272 (the behaviour the bound replaces).
  const auto unbounded = plan_ranges(winners({{56, "default"}, {80, "A"}, {120, "A"}, {184, "A"}, {272, "A"}}));
  ASSERT_EQ(unbounded.size(), 1u);
  EXPECT_EQ(unbounded[0].hi, 272);
  // A compute-bound point not raced (no solution) splits the gap the same way; a bound above the gap
  // split leaves the split as the end.
  checks = plan_ranges({{80, "A", false}, {120, "A", false}, {184, "", true}}, 3, {}, last);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].hi, last);
  checks = plan_ranges({{80, "A", false}, {120, "A", false}, {184, "", true}}, 3, {}, 160);
  EXPECT_EQ(checks[0].hi, gap_split(120, 184));
  // A run whose last point is the last memory-bound M claims nothing above it.
  checks = plan_ranges(winners({{120, "A"}, {136, "A"}, {184, "B"}}), 3, {}, 136);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].hi, 136);
  EXPECT_EQ(checks[0].high.target, 0);
  // Compute-bound winners alone: no run at all.
  EXPECT_TRUE(plan_ranges(winners({{120, "default"}, {184, "A"}, {272, "B"}}), 3, {}, last).empty());
  EXPECT_THROW(plan_ranges(winners({{120, "A"}}), 3, {}, -1), Error);
}

TEST(PlanRanges, AFailingCutEndBisectsTowardTheLastMemoryBoundPoint) {
  auto checks = plan_ranges(winners({{80, "A"}, {120, "A"}, {184, "A"}}), 3, {}, 136);
  ASSERT_EQ(checks.size(), 1u);
  const auto measured = run_check(checks[0], [](std::int64_t m) { return m <= 128 ? 1.02 : 0.9; });
  // 136 fails; bisection toward 120: 128 holds, 132 fails, 130 fails.
  EXPECT_EQ(measured, (std::vector<std::int64_t>{gap_split(80, 120), 136, 128, 132, 130}));
  const auto pieces = verified_ranges(checks[0]);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].hi, 128);
}

// Over the whole tuning grid with random winners (compute-bound ones too), for keys whose last
// memory-bound M falls anywhere: no claim, measured M or verified range reaches above it, and every
// run is of memory-bound points.
TEST(PlanRanges, NoClaimEverIncludesAComputeBoundM) {
  const std::vector<std::int64_t> grid = tune_grid();
  for (unsigned seed = 1; seed <= 40; ++seed) {
    unsigned s = seed;
    auto next = [&]() { return s = s * 1103515245u + 12345u, (s >> 16) % 4; };
    std::vector<GridWinner> pts;
    for (std::int64_t m : grid) {
      const unsigned r = next();
      pts.push_back({m, r == 0 ? "default" : (r == 1 ? "A" : "B"), r == 0});
    }
    const std::int64_t last = 100 + static_cast<std::int64_t>(next()) * 37 + seed;  // 101..251
    for (RangeCheck& c : plan_ranges(pts, 3, {}, last)) {
      EXPECT_LE(c.hi, last) << "seed " << seed;
      EXPECT_LE(c.grid.back(), last) << "seed " << seed;
      for (std::int64_t m : run_check(c, [](std::int64_t m) { return m % 5 == 0 ? 0.9 : 1.02; })) {
        EXPECT_LE(m, last) << "seed " << seed << " measured M " << m;
      }
      for (const VerifiedRange& r : verified_ranges(c)) EXPECT_LE(r.hi, last) << "seed " << seed;
    }
  }
}

TEST(KeyGridPlan, ComputeBoundPointsAreLeftOutOrRacedForExactRows) {
  const std::vector<std::int64_t> grid = tune_grid();
  ASSERT_EQ(grid.size(), 28u);
  const std::int64_t last = last_memory_bound_m(key_problem(4096, 4096), grid.back());
  const auto none = [](std::int64_t) { return false; };
  // skip: the 16 points up to 120 race, the 12 from 184 on are left out.
  KeyGridPlan plan = plan_key_grid(grid, last, false, none);
  EXPECT_EQ(plan.to_race.size(), 16u);
  EXPECT_EQ(plan.to_race.back(), 120);
  EXPECT_TRUE(plan.raced_before.empty());
  EXPECT_EQ(plan.left_out.size(), 12u);
  EXPECT_EQ(plan.left_out.front(), 184);
  EXPECT_EQ(plan.left_out.back(), 16384);
  // exact: every point races.
  plan = plan_key_grid(grid, last, true, none);
  EXPECT_EQ(plan.to_race, grid);
  EXPECT_TRUE(plan.left_out.empty());
  // Resumed: points raced before are not raced again; a compute-bound point raced before (an older
  // state) is still left out under skip.
  const auto raced = [](std::int64_t m) { return m <= 8 || m == 920; };
  plan = plan_key_grid(grid, last, false, raced);
  EXPECT_EQ(plan.raced_before.size(), 8u);
  EXPECT_EQ(plan.to_race.size(), 8u);
  EXPECT_EQ(plan.left_out.size(), 12u);
  plan = plan_key_grid(grid, last, true, raced);
  EXPECT_EQ(plan.raced_before.size(), 9u);
  EXPECT_EQ(plan.to_race.size(), 19u);
  // A key memory-bound at every grid point leaves nothing out.
  plan = plan_key_grid(grid, last_memory_bound_m(key_problem(64, 64), grid.back()), false, none);
  EXPECT_EQ(plan.to_race, grid);
}

TEST(Ties, ComparedOnTheMostRepeatableStageBothReached) {
  // solution, finals' ratio (time / default's), confirmation's (default / time), accurate ratio.
  const PointTiming w{"W", 0.90, 1.12, 0.88, {}};
  // Confirmed both: 1 / 1.11 = 0.901 is within 1% of 1 / 1.12 = 0.893, whatever the finals say.
  EXPECT_TRUE(ties_with(PointTiming{"S", 0.99, 1.11, 0.99, {}}, w, kBand));
  EXPECT_FALSE(ties_with(PointTiming{"S", 0.90, 1.10, 0.88, {}}, w, kBand));
  // Not confirmed: the finals (0.905 <= 0.909), not the accurate stage.
  EXPECT_TRUE(ties_with(PointTiming{"S", 0.905, -1, 0.95, {}}, w, kBand));
  EXPECT_FALSE(ties_with(PointTiming{"S", 0.92, -1, 0.87, {}}, w, kBand));
  // Neither of those: the accurate stage.
  EXPECT_TRUE(ties_with(PointTiming{"S", -1, -1, 0.885, {}}, w, kBand));
  EXPECT_FALSE(ties_with(PointTiming{"S", -1, -1, 0.90, {}}, w, kBand));
  EXPECT_FALSE(ties_with(PointTiming{"S", -1, -1, -1, {}}, w, kBand));  // never timed
  const std::vector<PointTiming> point = {w,
                                          {"d", 1.0, -1, 1.0, {}},
                                          {"T2", 0.902, -1, 0.95, {}},
                                          {"T1", 0.901, -1, 0.95, {}},
                                          {"slow", 0.95, -1, 0.90, {}}};
  EXPECT_EQ(tied_solutions(point, "W", "d", kBand), (std::vector<std::string>{"T1", "T2"}));
  EXPECT_EQ(tied_solutions(point, "T1", "d", kBand), (std::vector<std::string>{"T2", "W"}));
  EXPECT_TRUE(tied_solutions(point, "missing", "d", kBand).empty());  // the winner was not timed
}

TEST(Ties, RunnableIntervalsAreTheHullOfWhatThePointsProbed) {
  const std::map<std::int64_t, std::vector<PointTiming>> timings = {
      {4, {{"S", -1, -1, 1, RunnableM{1, 8}}, {"L", -1, -1, 1, RunnableM{1, 16384}}}},
      {8, {{"S", -1, -1, 1, RunnableM{2, 8}}, {"U", -1, -1, 1, RunnableM{}}}}};
  const auto r = runnable_intervals(timings);
  ASSERT_EQ(r.count("S"), 1u);
  EXPECT_EQ(r.at("S").lo, 1);
  EXPECT_EQ(r.at("S").hi, 8);
  EXPECT_EQ(r.at("L").hi, 16384);
  EXPECT_EQ(r.count("U"), 0u);  // not probed: no interval
}

TEST(MergeRanges, TouchingRangesOfOneSolutionMergeOthersStay) {
  const auto merged =
      merge_ranges({{"A", 20, 30, {24}}, {"A", 10, 19, {16}}, {"B", 31, 40, {32}}, {"B", 42, 50, {48}}});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].solution, "A");
  EXPECT_EQ(merged[0].lo, 10);
  EXPECT_EQ(merged[0].hi, 30);
  EXPECT_EQ(merged[0].grid, (std::vector<std::int64_t>{16, 24}));
  EXPECT_EQ(merged[1].lo, 31);
  EXPECT_EQ(merged[2].lo, 42);  // a gap of one M (41): not merged
  EXPECT_THROW(merge_ranges({{"A", 10, 20, {16}}, {"B", 20, 30, {24}}}), Error);
}

TEST(CutAround, ExactRowsSplitARangeAndPiecesWithoutAGridPointGo) {
  const VerifiedRange r{"A", 10, 100, {16, 40, 80}};
  const auto pieces = cut_around(r, {5, 40, 60, 200});
  // [10, 39] holds 16; [41, 59] no grid point: dropped; [61, 100] holds 80.
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].lo, 10);
  EXPECT_EQ(pieces[0].hi, 39);
  EXPECT_EQ(pieces[0].grid, (std::vector<std::int64_t>{16}));
  EXPECT_EQ(pieces[1].lo, 61);
  EXPECT_EQ(pieces[1].hi, 100);
  EXPECT_EQ(cut_around(r, {}).size(), 1u);
  EXPECT_TRUE(cut_around(VerifiedRange{"A", 16, 16, {16}}, {16}).empty());
}

TableRow grid_row(std::int64_t m, const std::string& kernel, double us) {
  TableRow r;
  r.key.arch = "sm_90a";
  r.key.sm_count = 132;
  r.key.n = 4096;
  r.key.k = 4096;
  r.m = m;
  r.libtype = "cublaslt";
  r.kernel_name = kernel;
  r.us = us;
  return r;
}

TEST(RangeRows, OneRowPerPieceAtItsMiddleGridPointServingExactlyItsRange) {
  const std::map<std::int64_t, TableRow> grid_rows = {
      {16, grid_row(16, "A", 1)}, {24, grid_row(24, "A", 2)}, {40, grid_row(40, "A", 3)}, {56, grid_row(56, "B", 4)}};
  const auto rows = range_rows({{"A", 13, 31, {16, 24}}, {"A", 32, 47, {40}}, {"B", 48, 60, {56}}}, grid_rows, {24});
  // A's two touching ranges merge to [13, 47] over 16, 24, 40; the exact row at 24 cuts it into
  // [13, 23] (row at 16) and [25, 47] (row at 40).
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].m, 16);
  EXPECT_EQ(rows[0].m_lo, 13);
  EXPECT_EQ(rows[0].m_hi, 23);
  EXPECT_EQ(rows[0].us, 1);
  EXPECT_EQ(rows[1].m, 40);
  EXPECT_EQ(rows[1].m_lo, 25);
  EXPECT_EQ(rows[1].m_hi, 47);
  EXPECT_EQ(rows[2].kernel_name, "B");
  EXPECT_EQ(rows[2].m_lo, 48);
  // The rows load as a table (each M inside its range, ranges disjoint) and the walk serves each M
  // of a range by its row, the exact row's M by nothing of these.
  Table t;
  std::vector<std::string> warnings;
  t.add_rows(rows, &warnings);
  EXPECT_TRUE(warnings.empty());
  const auto* by_m = t.rows_for(rows[0].key);
  ASSERT_NE(by_m, nullptr);
  EXPECT_EQ(find_row(by_m, 13)->m, 16);
  EXPECT_EQ(find_row(by_m, 24), nullptr);
  EXPECT_EQ(find_row(by_m, 47)->m, 40);
  EXPECT_EQ(find_row(by_m, 61), nullptr);
  EXPECT_THROW(range_rows({{"C", 1, 2, {2}}}, grid_rows, {}), Error);  // no race result of C at 2
}

TEST(MGridStateFile, RoundTripsAndSaysWhichRangePassesAreLeft) {
  MGridState s;
  s.defaults["key one"] = {{1, "cublaslt:heuristic"}, {16, "split:cublaslt:heuristic"}};
  s.timings["key one"][16] = {{"A", 0.9, 1.1, 0.85, RunnableM{1, 16}}, {"B", -1, -1, 0.95, RunnableM{}}};
  s.reconfirmed["key one"] = {1, 2, 16};
  s.ranges_written["key one"] = {1, 2, 16};
  s.exact_written["key one"] = {184, 16384};
  const MGridState back = MGridState::from_json(s.to_json(), "state.json");
  EXPECT_EQ(back.defaults, s.defaults);
  const auto& t = back.timings.at("key one").at(16);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].solution, "A");
  EXPECT_EQ(t[0].final_ratio, 0.9);
  EXPECT_EQ(t[0].confirm_ratio, 1.1);
  EXPECT_EQ(t[0].accurate_ratio, 0.85);
  EXPECT_EQ(t[0].runs.hi, 16);
  EXPECT_FALSE(t[1].runs.known());
  EXPECT_EQ(back.reconfirmed, s.reconfirmed);
  EXPECT_EQ(back.ranges_written, s.ranges_written);
  EXPECT_EQ(back.exact_written, s.exact_written);
  EXPECT_FALSE(back.ranges_pending("key one", {1, 2, 16}));
  EXPECT_TRUE(back.ranges_pending("key one", {1, 2, 16, 24}));  // another grid: its pass runs again
  EXPECT_TRUE(back.ranges_pending("key two", {1, 2, 16}));
  EXPECT_TRUE(back.raced("key one", 16));
  EXPECT_FALSE(back.raced("key one", 2));  // in the points' file maybe, but no default: raced again
  EXPECT_FALSE(back.raced("key two", 1));
  EXPECT_THROW(MGridState::from_json("[1, 2]", "state.json"), Error);
  EXPECT_THROW(MGridState::from_json("{\"reconfirmed\": {\"k\": \"x\"}}", "state.json"), Error);
  EXPECT_THROW(MGridState::from_json("not json", "state.json"), Error);
  EXPECT_THROW(MGridState::from_json("{\"defaults\": {\"k\": {\"x\": \"a\"}}}", "state.json"), Error);
  EXPECT_THROW(MGridState::from_json("{\"timings\": {\"k\": {\"4\": [{\"solution\": \"A\"}]}}}", "state.json"), Error);
  EXPECT_THROW(MGridState::from_json("{\"exact_written\": [184]}", "state.json"), Error);
  // A state file written before timings or exact rows were kept plans without them.
  const MGridState older = MGridState::from_json("{\"defaults\": {\"k\": {\"4\": \"d\"}}}", "state.json");
  EXPECT_TRUE(older.timings.empty());
  EXPECT_TRUE(older.exact_written.empty());
}

TEST(MGridStateFile, ANewRaceResultAtAPointRedoesItsReconfirmationAndTheKeysRangePass) {
  MGridState s;
  s.defaults["k"] = {{1, "d"}, {2, "d"}};
  s.reconfirmed["k"] = {1, 2};
  s.ranges_written["k"] = {1, 2, 3};
  s.ranges_written["other"] = {1, 2, 3};
  s.record_race("k", 3, "d");  // point 3 failed before and is raced now
  EXPECT_TRUE(s.raced("k", 3));
  EXPECT_EQ(s.reconfirmed["k"], (std::set<std::int64_t>{1, 2}));
  EXPECT_TRUE(s.ranges_pending("k", {1, 2, 3}));
  EXPECT_FALSE(s.ranges_pending("other", {1, 2, 3}));
  s.record_race("k", 2, "d", {{"A", -1, -1, 0.9, {}}});  // raced again (--all): reconfirmed again too
  EXPECT_EQ(s.reconfirmed["k"], (std::set<std::int64_t>{1}));
  ASSERT_EQ(s.timings["k"][2].size(), 1u);
  s.record_race("k", 2, "d");  // the timings are this race's
  EXPECT_TRUE(s.timings["k"][2].empty());
}

TEST(MGridStateFile, AComputeBoundPointRacedForItsExactRowLeavesTheRangesWritten) {
  MGridState s;
  s.ranges_written["k"] = {1, 2, 184};
  s.exact_written["k"] = {184, 272};
  s.record_race("k", 184, "d", {}, false);
  EXPECT_TRUE(s.raced("k", 184));
  EXPECT_FALSE(s.ranges_pending("k", {1, 2, 184}));
  // Raced again: its exact row is written again from the new result, the other one stays.
  EXPECT_EQ(s.exact_written["k"], (std::set<std::int64_t>{272}));
  s.record_race("k", 2, "d", {}, true);
  EXPECT_TRUE(s.ranges_pending("k", {1, 2, 184}));
}

// A tuned file whose ranges were written before claims stopped at the last memory-bound M: the key
// is planned again (ranges_reach_above) from its memory-bound points, and the range rows that
// replace the old ones reach no compute-bound M, while exact rows stay.
TEST(ResumeOlderRanges, ARangeReachingAComputeBoundMIsPlannedAgainBelowIt) {
  test::TempDir dir;
  const std::string path = dir.file("tuned.csv");
  const std::int64_t last = 136;  // 4096x4096
  TableRow low = grid_row(56, "A", 1);
  low.m_lo = 45;
  low.m_hi = 148;  // gap_split(120, 184): the claim of the old plan
  TableRow high = grid_row(920, "B", 9);
  high.m_lo = 753;
  high.m_hi = 1128;
  TableRow exact = grid_row(2048, "E", 20);
  update_tuned_table(path, {low, high, exact});
  std::ifstream in(path);
  const std::vector<TableRow> before = parse_tuned_table(in, path).rows;
  EXPECT_TRUE(ranges_reach_above(before, low.key, last));
  TableKey other = low.key;
  other.n = 1024;
  EXPECT_FALSE(ranges_reach_above(before, other, last));
  EXPECT_FALSE(ranges_reach_above({low, exact}, low.key, 148));  // an exact row at 2048 is no range
  // The older state's points: A won 40..120, B the compute-bound 184..1384.
  const auto pts = winners({{32, "default"},
                            {40, "A"},
                            {56, "A"},
                            {80, "A"},
                            {120, "A"},
                            {184, "B"},
                            {272, "B"},
                            {920, "B"},
                            {1384, "default"}});
  auto checks = plan_ranges(pts, 3, {}, last);
  ASSERT_EQ(checks.size(), 1u);
  run_check(checks[0], [](std::int64_t) { return 1.02; });
  const std::map<std::int64_t, TableRow> grid_rows = {{40, grid_row(40, "A", 1)},   {56, grid_row(56, "A", 1)},
                                                      {80, grid_row(80, "A", 2)},   {120, grid_row(120, "A", 3)},
                                                      {184, grid_row(184, "B", 4)}, {920, grid_row(920, "B", 9)}};
  const auto rows = replace_range_rows(path, low.key, [&](const std::set<std::int64_t>& exact_ms) {
    return range_rows(verified_ranges(checks[0]), grid_rows, exact_ms);
  });
  EXPECT_FALSE(ranges_reach_above(rows, low.key, last));
  std::vector<std::string> got;
  for (const TableRow& r : rows) {
    got.push_back(std::to_string(r.m) + "[" + std::to_string(r.m_lo) + "," + std::to_string(r.m_hi) + "]" +
                  r.kernel_name);
  }
  std::sort(got.begin(), got.end());
  const std::string lo = std::to_string(gap_split(32, 40) + 1);
  EXPECT_EQ(got, (std::vector<std::string>{"2048[0,0]E", "56[" + lo + ",136]A"}));
}

TEST(ReplaceRangeRows, ReplacesTheKeysRangeRowsKeepsExactRowsAndCutsAroundThem) {
  test::TempDir dir;
  const std::string path = dir.file("tuned.csv");
  TableRow exact = grid_row(24, "E", 5);
  TableRow old_range = grid_row(40, "A", 3);
  old_range.m_lo = 30;
  old_range.m_hi = 50;
  TableRow other_key = grid_row(40, "A", 3);
  other_key.key.n = 1024;
  other_key.m_lo = 30;
  other_key.m_hi = 50;
  update_tuned_table(path, {exact, old_range, other_key});
  const std::map<std::int64_t, TableRow> grid_rows = {{16, grid_row(16, "A", 1)}, {40, grid_row(40, "A", 3)}};
  std::set<std::int64_t> seen_exact;
  const auto rows = replace_range_rows(path, exact.key, [&](const std::set<std::int64_t>& exact_ms) {
    seen_exact = exact_ms;
    return range_rows({{"A", 13, 47, {16, 40}}}, grid_rows, exact_ms);
  });
  EXPECT_EQ(seen_exact, (std::set<std::int64_t>{24}));
  std::ifstream in(path);
  const ParsedTable parsed = parse_tuned_table(in, path);
  EXPECT_TRUE(parsed.warnings.empty());
  std::vector<std::string> got;
  for (const TableRow& r : parsed.rows) {
    got.push_back(std::to_string(r.key.n) + ":" + std::to_string(r.m) + "[" + std::to_string(r.m_lo) + "," +
                  std::to_string(r.m_hi) + "]" + r.kernel_name);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"1024:40[30,50]A", "4096:16[13,23]A", "4096:24[0,0]E", "4096:40[25,47]A"}));
  EXPECT_EQ(rows.size(), 4u);
}

TEST(UpdateTunedTable, AnExactRowInsideARangeNarrowsItToTheSideOfItsRow) {
  test::TempDir dir;
  const std::string path = dir.file("tuned.csv");
  TableRow range = grid_row(40, "A", 3);
  range.m_lo = 25;
  range.m_hi = 60;
  TableRow below = grid_row(56, "B", 4);  // another key's range is left alone
  below.key.k = 1024;
  below.m_lo = 25;
  below.m_hi = 60;
  update_tuned_table(path, {range, below});
  update_tuned_table(path, {grid_row(30, "E", 1)});  // below the row's M: the range starts above it
  update_tuned_table(path, {grid_row(50, "F", 1)});  // above: the range ends below it
  std::ifstream in(path);
  const ParsedTable parsed = parse_tuned_table(in, path);
  EXPECT_TRUE(parsed.warnings.empty());
  std::vector<std::string> got;
  for (const TableRow& r : parsed.rows) {
    got.push_back(std::to_string(r.key.k) + ":" + std::to_string(r.m) + "[" + std::to_string(r.m_lo) + "," +
                  std::to_string(r.m_hi) + "]" + r.kernel_name);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"1024:56[25,60]B", "4096:30[0,0]E", "4096:40[31,49]A", "4096:50[0,0]F"}));
}

}  // namespace
}  // namespace tgemm
