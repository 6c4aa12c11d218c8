// The tuner's selection logic with injected timings (no GPU): which candidates are re-timed
// accurately and which one wins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "tuner/options.h"
#include "tuner/select.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

CandidateResult screened(const std::string& name, double screen_us, int backend_rank = 0) {
  CandidateResult r;
  r.name = name;
  r.backend_rank = backend_rank;
  r.screen_us = screen_us;
  return r;
}

// A candidate that was timed accurately and passed every check.
CandidateResult measured(const std::string& name, double us, int backend_rank = 0) {
  CandidateResult r = screened(name, us, backend_rank);
  r.us = us;
  r.err_ratio = 0;
  r.strict_ok = true;
  return r;
}

std::vector<std::string> names(const std::vector<CandidateResult>& rs,
                               const std::vector<std::size_t>& idx) {
  std::vector<std::string> out;
  for (std::size_t i : idx) out.push_back(rs.at(i).name);
  return out;
}

std::string winner_name(const std::vector<CandidateResult>& rs, const SelectOptions& o = {}) {
  int w = select_winner(rs, o);
  return w < 0 ? "(none)" : rs.at(static_cast<std::size_t>(w)).name;
}

TEST(SelectForAccurate, LeadersFirstAndFailuresDropped) {
  std::vector<CandidateResult> rs = {screened("c", 30), screened("a", 10), screened("err", 5),
                                     screened("unmeasured", -1), screened("b", 20)};
  rs[2].error = "launch failed";
  SelectOptions o;
  o.min_accurate = 10;
  EXPECT_EQ(names(rs, select_for_accurate(rs, o)), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(SelectForAccurate, AtLeastMinAccurateThenEveryoneWithinTheMargin) {
  std::vector<CandidateResult> rs;
  for (int i = 0; i < 10; ++i) rs.push_back(screened("s" + std::to_string(i), 100 + 10 * i));
  SelectOptions o;
  o.min_accurate = 3;
  o.accurate_margin = 0.10;  // up to 110 us
  // 100, 110 are within the margin, 120 is the third kept by min_accurate; 130+ dropped.
  EXPECT_EQ(names(rs, select_for_accurate(rs, o)), (std::vector<std::string>{"s0", "s1", "s2"}));
  o.min_accurate = 1;
  EXPECT_EQ(names(rs, select_for_accurate(rs, o)), (std::vector<std::string>{"s0", "s1"}));
  o.accurate_margin = 0.35;  // up to 135 us
  EXPECT_EQ(select_for_accurate(rs, o).size(), 4u);
}

TEST(SelectForAccurate, EqualScreenTimesInTieOrder) {
  std::vector<CandidateResult> rs = {screened("z", 10, 1), screened("b", 10, 0),
                                     screened("a", 10, 0)};
  SelectOptions o;
  EXPECT_EQ(names(rs, select_for_accurate(rs, o)), (std::vector<std::string>{"a", "b", "z"}));
}

TEST(SelectForAccurate, NothingScreened) {
  EXPECT_TRUE(select_for_accurate({}, SelectOptions{}).empty());
  std::vector<CandidateResult> rs = {screened("x", -1)};
  EXPECT_TRUE(select_for_accurate(rs, SelectOptions{}).empty());
}

TEST(TieOrder, BackendRankThenName) {
  EXPECT_TRUE(tie_order_less(screened("z", 1, 0), screened("a", 1, 1)));
  EXPECT_FALSE(tie_order_less(screened("a", 1, 1), screened("z", 1, 0)));
  EXPECT_TRUE(tie_order_less(screened("a", 1, 2), screened("b", 1, 2)));
  EXPECT_FALSE(tie_order_less(screened("a", 1, 2), screened("a", 9, 2)));
}

TEST(SelectWinner, FastestOutsideTheTieBandWins) {
  std::vector<CandidateResult> rs = {measured("slow", 12, 0), measured("fast", 10, 1)};
  EXPECT_EQ(winner_name(rs), "fast");
}

TEST(SelectWinner, WithinTheTieBandTheFixedOrderDecides) {
  // 10.05 is within 1% of 10.0: the lower backend rank wins although it measured slower.
  std::vector<CandidateResult> rs = {measured("lt:b", 10.0, 1), measured("skinny:a", 10.05, 0),
                                     measured("lt:a", 10.2, 0)};
  EXPECT_EQ(winner_name(rs), "skinny:a");
  // The same measurements in any order give the same winner.
  std::sort(rs.begin(), rs.end(), [](const auto& a, const auto& b) { return a.name > b.name; });
  EXPECT_EQ(winner_name(rs), "skinny:a");
  std::reverse(rs.begin(), rs.end());
  EXPECT_EQ(winner_name(rs), "skinny:a");
}

TEST(SelectWinner, CandidatesFailingChecksNeverWin) {
  SelectOptions o;
  o.max_err_ratio = 0.05;
  std::vector<CandidateResult> rs = {measured("errored", 1),   measured("inaccurate", 2),
                                     measured("unchecked", 3), measured("not_strict", 4),
                                     measured("untimed", 5),   measured("ok", 50)};
  rs[0].error = "illegal address";
  rs[1].err_ratio = 0.06;
  rs[2].err_ratio = -1;
  rs[3].strict_ok = false;
  rs[4].us = -1;
  EXPECT_EQ(winner_name(rs, o), "ok");
  o.require_strict = false;
  EXPECT_EQ(winner_name(rs, o), "not_strict");
  o.max_err_ratio = 0.1;
  EXPECT_EQ(winner_name(rs, o), "inaccurate");
}

TEST(SelectWinner, NoPassingCandidateIsMinusOne) {
  EXPECT_EQ(select_winner({}, SelectOptions{}), -1);
  std::vector<CandidateResult> rs = {measured("bad", 1)};
  rs[0].err_ratio = 1;
  EXPECT_EQ(select_winner(rs, SelectOptions{}), -1);
}

TEST(SelectWinner, TheDefaultComesFirstAmongTies) {
  CandidateResult def = measured("lt:heuristic", 10.05, 1);
  def.is_default = true;
  // Within the 1% band: the default wins although its name sorts after "lt:a".
  EXPECT_EQ(winner_name({measured("lt:a", 10.0, 1), def}), "lt:heuristic");
}

TEST(SelectWinner, OrderBandNarrowsTheFixedOrderAmongTheOthers) {
  // lt:b is 0.8% behind lt:z, the fastest: inside the 1% tie band the name decides (lt:b), inside
  // a 0.5% order band it no longer ties and the fastest wins.
  std::vector<CandidateResult> rs = {measured("lt:z", 10.0, 1), measured("lt:b", 10.08, 1),
                                     measured("lt:y", 10.04, 1)};
  EXPECT_EQ(winner_name(rs), "lt:b");
  SelectOptions o;
  o.order_band = 0.005;
  EXPECT_EQ(winner_name(rs, o), "lt:y");  // 0.4% behind: still ties with lt:z, and sorts first
  o.order_band = 0;
  EXPECT_EQ(winner_name(rs, o), "lt:z");
  // The default keeps the whole tie band: 0.8% behind, it still wins over a 0.5% order band.
  CandidateResult def = measured("lt:heuristic", 10.08, 1);
  def.is_default = true;
  o.order_band = 0.005;
  EXPECT_EQ(winner_name({measured("lt:z", 10.0, 1), def}, o), "lt:heuristic");
  // Beyond the tie band it does not.
  def.us = 10.2;
  EXPECT_EQ(winner_name({measured("lt:z", 10.0, 1), def}, o), "lt:z");
}

TEST(SelectWinner, DefaultMarginKeepsTheDefaultUnlessClearlyBeaten) {
  CandidateResult def = measured("lt:heuristic", 10.0, 1);
  def.is_default = true;
  SelectOptions o;
  o.default_margin = 0.02;
  // 1.5% faster: not enough to replace the default.
  EXPECT_EQ(winner_name({measured("lt:a", 9.85, 1), def}, o), "lt:heuristic");
  // 3% faster: replaces it.
  EXPECT_EQ(winner_name({measured("lt:a", 9.7, 1), def}, o), "lt:a");
  // Without a margin the faster one wins.
  EXPECT_EQ(winner_name({measured("lt:a", 9.85, 1), def}), "lt:a");
  // A default that failed its checks is no fallback.
  CandidateResult bad_default = def;
  bad_default.strict_ok = false;
  EXPECT_EQ(winner_name({measured("lt:a", 9.85, 1), bad_default}, o), "lt:a");
}

TEST(Median, OddEvenAndEmpty) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({7.0}), 7.0);
  EXPECT_EQ(median({}), 0.0);
}

TEST(PassesChecks, ErrorTimeErrRatioAndStrictness) {
  SelectOptions o;
  CandidateResult r;
  r.us = 10;
  r.err_ratio = 0.0;
  r.strict_ok = true;
  EXPECT_TRUE(passes_checks(r, o));
  CandidateResult bad = r;
  bad.error = "launch failed";
  EXPECT_FALSE(passes_checks(bad, o));
  bad = r;
  bad.us = -1;  // no accurate time
  EXPECT_FALSE(passes_checks(bad, o));
  bad = r;
  bad.err_ratio = -1;  // not checked
  EXPECT_FALSE(passes_checks(bad, o));
  bad = r;
  bad.err_ratio = 0.06;  // above --errRatio 0.05
  EXPECT_FALSE(passes_checks(bad, o));
  bad = r;
  bad.strict_ok = false;
  EXPECT_FALSE(passes_checks(bad, o));
  o.require_strict = false;
  EXPECT_TRUE(passes_checks(bad, o));
  bad = r;
  bad.beyond_finals = true;  // the finals ran without it
  EXPECT_FALSE(passes_checks(bad, o));
}

// After finals, a candidate left out of them does not win on its accurate time, which is on
// another scale than the finalists' (the finals can read ~9% above the accurate stage, and the
// fastest candidate just outside the finals would take the row).
TEST(SelectWinner, CandidatesBeyondTheFinalsDoNotWin) {
  CandidateResult def = measured("lt:default", 82.6);
  def.is_default = true;
  CandidateResult finalist = measured("lt:final", 79.7);
  CandidateResult outside = measured("lt:outside", 73.8);
  outside.beyond_finals = true;
  EXPECT_EQ(winner_name({def, finalist, outside}), "lt:final");
  EXPECT_EQ(winner_name({def, outside}), "lt:default");
  outside.beyond_finals = false;  // no finals ran: accurate times decide
  EXPECT_EQ(winner_name({def, finalist, outside}), "lt:outside");
}

// The finals: the default, the candidates within the margin up to the cap, fastest first, and at
// least `min_contenders` others whatever their margin (a default timed 8.4 us in the accurate
// stage, 12% ahead of everyone, would be kept without finals; another tune's finals put it at
// 10.6 us, 3% behind the row it picked).
TEST(SelectFinalists, TheDefaultMeetsItsNearestRivalsEvenBeyondTheMargin) {
  SelectOptions o;
  CandidateResult def = measured("lt:default", 8.42);
  def.is_default = true;
  std::vector<CandidateResult> rs = {measured("lt:c", 9.70), def, measured("lt:a", 9.56), measured("lt:b", 9.57),
                                     measured("lt:broken", 9.0)};
  rs[4].err_ratio = 1.0;  // fails the check: never a finalist
  auto names = [&](const std::vector<std::size_t>& idx) {
    std::vector<std::string> out;
    for (std::size_t i : idx) out.push_back(rs[i].name);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(select_finalists(rs, 8.42, 0.03, 6, 2, o)), (V{"lt:default", "lt:a", "lt:b"}));
  EXPECT_EQ(names(select_finalists(rs, 8.42, 0.03, 6, 0, o)), (V{"lt:default"}));  // no finals
  // Within the margin, the cap counts the others only; the default always enters.
  rs[1].us = 9.9;
  EXPECT_EQ(names(select_finalists(rs, 9.56, 0.03, 2, 0, o)), (V{"lt:a", "lt:b", "lt:default"}));
  EXPECT_EQ(names(select_finalists(rs, 9.56, 0.03, 6, 0, o)), (V{"lt:a", "lt:b", "lt:c", "lt:default"}));
  // Contenders count towards the cap, not on top of it.
  EXPECT_EQ(names(select_finalists(rs, 9.56, 0.03, 6, 2, o)), (V{"lt:a", "lt:b", "lt:c", "lt:default"}));
  // A default that fails the checks is not re-timed.
  rs[1].error = "launch failed";
  EXPECT_EQ(names(select_finalists(rs, 9.56, 0.0, 6, 1, o)), (V{"lt:a"}));
}

// RaceOptions out of range are refused before any GPU work, naming the field, the expectation and
// the value; the defaults and `tgemm tune`'s defaults pass.
TEST(ValidateRaceOptions, NamesTheFieldTheExpectationAndTheValue) {
  EXPECT_NO_THROW(validate_race_options(RaceOptions{}));
  auto message = [](RaceOptions o) -> std::string {
    try {
      validate_race_options(o);
    } catch (const tgemm::Error& e) {
      return e.what();
    }
    return "accepted";
  };
  RaceOptions o;
  o.finals.rounds = 0;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::finals.rounds must be >= 1, got 0");
  o = RaceOptions{};
  o.finals.max_finalists = 0;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::finals.max_finalists must be >= 1, got 0");
  o = RaceOptions{};
  o.finals.margin = std::nan("");
  EXPECT_NE(message(o).find("RaceOptions::finals.margin must be >= 0, got"), std::string::npos) << message(o);
  o = RaceOptions{};
  o.screen.graph_us = -1;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::screen.graph_us must be >= 0 (0: off), got -1");
  o = RaceOptions{};
  o.confirm.margin = 1.5;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::confirm.margin must be in [0, 1), got 1.5");
  o = RaceOptions{};
  o.select.min_accurate = 0;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::select.min_accurate must be >= 1, got 0");
  o = RaceOptions{};
  o.select.max_err_ratio = -0.1;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::select.max_err_ratio must be in [0, 1], got -0.1");
  o = RaceOptions{};
  o.data.min_rotation_sets = 0;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::data.min_rotation_sets must be in [1, 32], got 0");
  o = RaceOptions{};
  o.confirm.placement_tolerance = 0.5;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::confirm.placement_tolerance must be in [0, 0.5), got 0.5");
  o = RaceOptions{};
  o.select.order_band = 1;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::select.order_band must be below 1 (< 0: the tie band), got 1");
  o = RaceOptions{};
  o.accurate.block = -1;
  EXPECT_EQ(message(o), "race_problem: RaceOptions::accurate.block must be >= 0 (0: each candidate alone), got -1");
  o = RaceOptions{};
  o.data.min_rotation_sets = 2;
  o.confirm.placement_tolerance = 0.01;
  o.accurate.block = 8;
  EXPECT_EQ(message(o), "accepted");
  EXPECT_EQ(message(tune_race_defaults()), "accepted");
  o = RaceOptions{};
  o.confirm.rounds = 0;  // allowed: no confirmation
  o.finals.contenders = 0;
  o.accurate.warmup = 0;
  EXPECT_EQ(message(o), "accepted");
}

// The confirmation keeps a candidate that beats the default by the margin at the median and loses
// on no placement; with a tolerance, a placement loses only below 1 - tolerance.
TEST(PassesConfirmation, MarginAtTheMedianNoPlacementLost) {
  EXPECT_TRUE(passes_confirmation(1.05, 1.00, 0.01, 0.0));
  EXPECT_FALSE(passes_confirmation(1.05, 0.994, 0.01, 0.0));  // one placement at 0.994
  EXPECT_TRUE(passes_confirmation(1.05, 0.994, 0.01, 0.01));
  EXPECT_TRUE(loses_placement(0.994, 0.0));
  EXPECT_FALSE(loses_placement(1.0, 0.0));
  EXPECT_FALSE(loses_placement(0.98, 0.02));
  EXPECT_TRUE(loses_placement(0.979, 0.02));
  EXPECT_FALSE(passes_confirmation(1.05, 0.985, 0.01, 0.01));
  EXPECT_FALSE(passes_confirmation(1.005, 1.002, 0.01, 0.0));  // under the margin at the median
  EXPECT_FALSE(passes_confirmation(1.0, 1.0, 0.0, 0.0));       // a tie is not a win
}

TEST(PairedRatio, MedianOfPerRoundRatios) {
  // Round 2 ran at lower clocks for both: the pooled medians would compare 10 vs 10.5, the rounds
  // all say a takes 5% longer than b.
  EXPECT_NEAR(paired_ratio({10.5, 10.5, 21.0}, {10.0, 10.0, 20.0}), 1.05, 1e-12);
  // Even count: the mean of the two middle ratios.
  EXPECT_NEAR(paired_ratio({1.0, 2.0, 3.0, 4.0}, {1.0, 1.0, 1.0, 1.0}), 2.5, 1e-12);
  // One outlier round does not move it.
  EXPECT_NEAR(paired_ratio({10.0, 10.0, 10.0, 10.0, 30.0}, {10.0, 10.0, 10.0, 10.0, 10.0}), 1.0, 1e-12);
}

TEST(PairedRatio, SkipsUnmeasuredRoundsAndRefusesUnequalLengths) {
  EXPECT_NEAR(paired_ratio({0.0, 12.0, 9.0}, {10.0, 10.0, -1.0}), 1.2, 1e-12);
  EXPECT_EQ(paired_ratio({}, {}), 0.0);
  EXPECT_EQ(paired_ratio({0.0}, {1.0}), 0.0);
  try {
    paired_ratio({1.0, 2.0}, {1.0});
    FAIL() << "unequal lengths accepted";
  } catch (const tgemm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("paired_ratio: a and b must hold one time per round each (equal lengths), got 2 and 1"), std::string::npos)
        << e.what();
  }
}

TEST(PlanSlots, ShortCallsKeepTwentyCallsLongCallsGetShortSlotsAndMoreRounds) {
  // A call under ~300 us: 20 calls a graph, 10 rounds.
  for (double us : {1.0, 8.0, 150.0, 300.0}) {
    SlotPlan p = plan_slots(us);
    EXPECT_EQ(p.launches_per_graph, 20) << us;
    EXPECT_EQ(p.rounds, 10) << us;
  }
  // Dense M = 8192 problems (~2.7 ms): 2 calls a graph, 60 rounds, as measured unbiased.
  SlotPlan big = plan_slots(2700.0);
  EXPECT_EQ(big.launches_per_graph, 2);
  EXPECT_EQ(big.rounds, 60);
  // In between: a graph holds ~6 ms, and rounds x calls keeps the timed work (>= 10 x 20).
  SlotPlan mid = plan_slots(423.0);  // 8192x4096x4096 at ~650 TFLOP/s
  EXPECT_EQ(mid.launches_per_graph, 14);
  EXPECT_EQ(mid.rounds, 15);
  EXPECT_GE(mid.rounds * mid.launches_per_graph, 200);
  // Longer calls never go under min_launches; rounds never over max_rounds.
  SlotPlan huge = plan_slots(50000.0);
  EXPECT_EQ(huge.launches_per_graph, 2);
  EXPECT_EQ(huge.rounds, 60);
  // An explicit base_rounds is the floor.
  EXPECT_EQ(plan_slots(1.0, 25).rounds, 25);
}

TEST(PlanSlots, RefusesBadArguments) {
  EXPECT_THROW(plan_slots(0.0), Error);
  EXPECT_THROW(plan_slots(-5.0), Error);
  EXPECT_THROW(plan_slots(100.0, 10, 0.0), Error);
  EXPECT_THROW(plan_slots(100.0, 10, 6000.0, 5, 4), Error);
  EXPECT_THROW(plan_slots(100.0, 70, 6000.0, 2, 20, 60), Error);
}

// Candidates that launch the same work are raced once: the first in tie order stands for them.
TEST(MarkSameLaunches, TheFirstInTieOrderStandsForEqualLaunches) {
  std::vector<CandidateResult> rs = {screened("lt:b", -1, 1), screened("lt:a", -1, 1), screened("lt:heuristic", -1, 1),
                                     screened("skinny:x", -1, 2), screened("lt:c", -1, 1)};
  rs[2].is_default = true;
  using F = std::optional<std::string>;
  // b, a and the default launch the same kernel; skinny:x happens to be that launch too (kept
  // apart only by its fingerprint, as any other); c has no fingerprint (capture failed).
  const std::vector<F> fp = {F("k1"), F("k1"), F("k1"), F("k2"), std::nullopt};
  EXPECT_EQ(mark_same_launches(rs, fp), 2u);
  EXPECT_EQ(rs[0].same_as, "lt:heuristic");  // the default comes first in tie order
  EXPECT_EQ(rs[1].same_as, "lt:heuristic");
  EXPECT_EQ(rs[2].same_as, "");
  EXPECT_EQ(rs[3].same_as, "");
  EXPECT_EQ(rs[4].same_as, "");  // unknown launches are never merged
  // Without the default, the name decides among one backend's equal launches.
  std::vector<CandidateResult> two = {screened("lt:b", -1, 1), screened("lt:a", -1, 1)};
  EXPECT_EQ(mark_same_launches(two, {F("k"), F("k")}), 1u);
  EXPECT_EQ(two[0].same_as, "lt:a");
  EXPECT_EQ(two[1].same_as, "");
}

TEST(MarkSameLaunches, NewCandidatesDeferToEarlierOnesAndFailuresAreLeftAlone) {
  using F = std::optional<std::string>;
  std::vector<CandidateResult> rs = {screened("lt:m", 5, 1), screened("lt:n", 6, 1), screened("lt:broken", -1, 1)};
  rs[2].error = "launch failed";
  std::vector<F> fp = {F("k1"), F("k2"), F("k3")};
  EXPECT_EQ(mark_same_launches(rs, fp), 0u);
  // A refinement adds candidates: one launches what lt:n does (it stays with lt:n even though
  // "lt:a" sorts first), one launches what the failed one did (not merged into a failure), two
  // new ones are equal to each other.
  for (const char* n : {"lt:a", "lt:z", "lt:y", "lt:x"}) rs.push_back(screened(n, -1, 1));
  fp.insert(fp.end(), {F("k2"), F("k3"), F("k4"), F("k4")});
  EXPECT_EQ(mark_same_launches(rs, fp, 3), 2u);
  EXPECT_EQ(rs[3].same_as, "lt:n");
  EXPECT_EQ(rs[4].same_as, "");
  EXPECT_EQ(rs[5].same_as, "lt:x");
  EXPECT_EQ(rs[6].same_as, "");
  EXPECT_EQ(rs[1].same_as, "");
  EXPECT_EQ(rs[2].same_as, "");
}

TEST(MarkSameLaunches, RefusesMismatchedFingerprints) {
  std::vector<CandidateResult> rs = {screened("a", 1), screened("b", 1)};
  try {
    mark_same_launches(rs, {std::string("k")});
    FAIL() << "one fingerprint for two candidates accepted";
  } catch (const tgemm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mark_same_launches: one fingerprint per candidate expected, got 1 for 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tgemm
