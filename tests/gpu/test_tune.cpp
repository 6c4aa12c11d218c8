// The tuner on the GPU: its pair timing (what the confirmation and `tgemm compare --measure`
// use): a solution timed against itself is a tie, bad arguments are refused with a clear error;
// launch fingerprints (equal for the same launch, different for another configuration or other
// arguments, absent for what cannot be captured); a whole race of one problem, whose kept row
// obeys the confirmation's rules; and `tgemm reconfirm`'s decision for one row.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/cublaslt/cublaslt_backend.h"
#include "core/problem.h"
#include "runtime/launch_fingerprint.h"
#include "runtime/runtime.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/error.h"
#include "tuner/tuner.h"

namespace tgemm::test {
namespace {

GemmProblem plain_problem(std::int64_t m, std::int64_t n, std::int64_t k) {
  TableKey key;
  key.arch = "sm_90a";
  key.sm_count = 132;
  key.n = n;
  key.k = k;
  return problem_of_key(key, m, Runtime::get().platform().current_device());
}

SolutionPtr cublaslt_default(const GemmProblem& p) {
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  EXPECT_NE(lt, nullptr);
  SolutionPtr s = lt ? lt->default_solution(p) : nullptr;
  EXPECT_NE(s, nullptr);
  return s;
}

TEST(TimeSolutionPair, ASolutionAgainstItselfIsATie) {
  TGEMM_REQUIRE_GPU();
  for (std::int64_t m : {1, 64, 1000}) {
    const GemmProblem p = plain_problem(m, 4096, 4096);
    SolutionPtr s = cublaslt_default(p);
    ASSERT_NE(s, nullptr);
    const PairTiming t = time_solution_pair(p, *s, *s, RaceOptions{}, 6);
    EXPECT_GT(t.a_us, 0) << p.describe();
    EXPECT_GT(t.b_us, 0) << p.describe();
    // The same kernel on the same inputs, paired round by round: well inside 10% of 1.
    EXPECT_GT(t.ratio, 0.9) << p.describe();
    EXPECT_LT(t.ratio, 1.1) << p.describe();
  }
}

TEST(TimeSolutionPair, SeveralPlacementsReportTheirRange) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(16, 4096, 4096);
  SolutionPtr s = cublaslt_default(p);
  ASSERT_NE(s, nullptr);
  const PairTiming t = time_solution_pair(p, *s, *s, RaceOptions{}, 4, 3);
  EXPECT_EQ(t.placements, 3);
  EXPECT_GT(t.a_us, 0);
  EXPECT_GT(t.b_us, 0);
  EXPECT_LE(t.min_ratio, t.ratio);
  EXPECT_GE(t.max_ratio, t.ratio);
  EXPECT_GT(t.min_ratio, 0.9);
  EXPECT_LT(t.max_ratio, 1.1);
  // A memory budget that holds one placement only: one is measured.
  RaceOptions small;
  small.data.memory_budget = 1;
  EXPECT_EQ(time_solution_pair(p, *s, *s, small, 2, 3).placements, 1);
  try {
    time_solution_pair(p, *s, *s, RaceOptions{}, 2, 0);
    FAIL() << "0 placements accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("placements must be >= 1, got 0"), std::string::npos) << e.what();
  }
}

TEST(TimeSolutionPair, RefusesZeroRounds) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(16, 256, 128);
  SolutionPtr s = cublaslt_default(p);
  ASSERT_NE(s, nullptr);
  try {
    time_solution_pair(p, *s, *s, RaceOptions{}, 0);
    FAIL() << "0 rounds accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("time_solution_pair: rounds must be >= 1, got 0"), std::string::npos) << e.what();
  }
}

// A solution that is only a name and a solidx (the screen's load key reads nothing else).
class KeyOnlySolution final : public Solution {
 public:
  KeyOnlySolution(std::string name, int solidx) : name_(std::move(name)), solidx_(solidx) {}
  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return "test"; }
  int solidx() const override { return solidx_; }
  bool can_implement(const GemmProblem&) const noexcept override { return false; }
  std::size_t workspace_size(const GemmProblem&) const override { return 0; }
  void run(const GemmProblem&, const GemmArgs&, const Workspace&, Stream) const override {}

 private:
  std::string name_;
  int solidx_;
};

// The screen's lazy-loading guard: a configuration's name stands for its kernels, the library's
// heuristic choice (solidx -1) does not (cuBLASLt picks its kernel per problem), so those are
// remembered per problem. Host logic: runs without a GPU.
TEST(ScreenLoadKey, HeuristicChoicesArePerProblem) {
  TableKey key;
  key.arch = "sm_90a";
  key.sm_count = 132;
  key.n = 4096;
  key.k = 4096;
  const GemmProblem a = problem_of_key(key, 16, /*device=*/0);
  key.n = 24576;
  key.k = 1536;
  const GemmProblem b = problem_of_key(key, 16, /*device=*/0);
  const std::string config = "cublaslt:algo66_tile137_stages35_splitk1_red0_swz0_opt0_inner0_cluster2_v130100";
  const KeyOnlySolution lt(config, 66), gemv("skinny:sm90_gemv_m1_w4_c4", 0);
  EXPECT_EQ(screen_load_key(lt, a), config);
  EXPECT_EQ(screen_load_key(lt, a), screen_load_key(lt, b));
  EXPECT_EQ(screen_load_key(gemv, b), "skinny:sm90_gemv_m1_w4_c4");
  for (const std::string name : {"cublaslt:heuristic", "cublaslt:heuristic_torch_default", "split:cublaslt:heuristic"}) {
    const KeyOnlySolution h(name, -1);
    EXPECT_NE(screen_load_key(h, a), screen_load_key(h, b)) << name;
    EXPECT_EQ(screen_load_key(h, a), screen_load_key(h, a)) << name;
    EXPECT_EQ(screen_load_key(h, a).rfind(name, 0), 0u) << name;
  }
}

// The reconfirmation tests' rule: 2 rounds on 2 placements.
RaceOptions short_confirmation() {
  RaceOptions o;
  o.confirm.rounds = 2;
  o.confirm.placements = 2;
  return o;
}

// `tgemm reconfirm`'s decision (reconfirm_row): the race's default is kept without timing; the
// reference backend's SIMT kernel, many times slower than cuBLASLt at 256x2048x2048, loses on
// every placement and reverts to cuBLASLt's heuristic, which is checked against the reference.
TEST(Reconfirm, TheDefaultIsKeptAndASlowRowReverts) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(256, 2048, 2048);
  const RaceOptions o = short_confirmation();
  SolutionPtr def = cublaslt_default(p);
  ASSERT_NE(def, nullptr);
  ASSERT_EQ(def->name(), "cublaslt:heuristic");
  const Reconfirmation same = reconfirm_row(p, *def, o);
  EXPECT_EQ(same.default_name, "cublaslt:heuristic");
  EXPECT_EQ(same.default_solution, nullptr);
  EXPECT_TRUE(same.kept);

  const Backend* ref = Runtime::get().registry().find("reference");
  ASSERT_NE(ref, nullptr);
  SolutionPtr slow = ref->default_solution(p);
  ASSERT_NE(slow, nullptr);
  const Reconfirmation r = reconfirm_row(p, *slow, o);
  ASSERT_NE(r.default_solution, nullptr);
  EXPECT_EQ(r.default_solution->name(), "cublaslt:heuristic");
  EXPECT_FALSE(r.kept);
  EXPECT_EQ(r.timing.placements, 2);
  EXPECT_GT(r.timing.a_us, 0);
  EXPECT_GT(r.timing.b_us, r.timing.a_us);
  EXPECT_LT(r.timing.max_ratio, 0.5) << "the reference kernel should be far slower than cuBLASLt";
  EXPECT_DOUBLE_EQ(r.margin, 0.02) << "256x2048x2048 is compute-bound: the sustained margin";
  EXPECT_GE(r.default_err_ratio, 0.0);
  EXPECT_LE(r.default_err_ratio, 0.05);
  EXPECT_TRUE(r.default_strict_ok);
}

// `tgemm reconfirm --alternatives` (reconfirm_rows): several solutions of one problem on one set
// of placements. The default among them is kept untimed; the default timed against itself (a
// second copy under another object) ties within 10%; the reference kernel loses on every
// placement, so the default is checked once for a revert; each result is in the rows' order.
TEST(Reconfirm, SeveralRowsOfOneProblemOnOnePlacementSet) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(256, 2048, 2048);
  const RaceOptions o = short_confirmation();
  SolutionPtr def = race_default_solution(p, o);
  ASSERT_NE(def, nullptr);
  ASSERT_EQ(def->name(), "cublaslt:heuristic");
  const Backend* ref = Runtime::get().registry().find("reference");
  ASSERT_NE(ref, nullptr);
  SolutionPtr slow = ref->default_solution(p);
  ASSERT_NE(slow, nullptr);
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  ASSERT_NE(lt, nullptr);
  std::vector<SolutionPtr> cands = lt->candidates(p);
  ASSERT_GE(cands.size(), 2u);
  SolutionPtr explicit_top1 = cands[1];  // the heuristic's top configuration as an explicit one
  const std::vector<Reconfirmation> rs = reconfirm_rows(p, {slow.get(), def.get(), explicit_top1.get()}, o, def);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_FALSE(rs[0].kept);
  EXPECT_EQ(rs[0].timing.placements, 2);
  EXPECT_LT(rs[0].timing.max_ratio, 0.5) << "the reference kernel should be far slower than cuBLASLt";
  EXPECT_GE(rs[0].default_err_ratio, 0.0) << "a lost row gets the default's check";
  EXPECT_LE(rs[0].default_err_ratio, 0.05);
  EXPECT_TRUE(rs[0].default_strict_ok);
  EXPECT_TRUE(rs[1].kept);
  EXPECT_EQ(rs[1].default_solution, nullptr) << "the default is not timed against itself";
  ASSERT_NE(rs[2].default_solution, nullptr);
  EXPECT_EQ(rs[2].timing.placements, 2);
  EXPECT_GT(rs[2].timing.ratio, 0.9) << explicit_top1->name() << " against the heuristic's choice";
  EXPECT_LT(rs[2].timing.ratio, 1.1) << explicit_top1->name() << " against the heuristic's choice";
  EXPECT_DOUBLE_EQ(rs[2].margin, 0.02);
  // time_solutions_against: the same timings' shape for each, in order; a null solution refused.
  const std::vector<PairTiming> ts = time_solutions_against(p, *def, {def.get(), explicit_top1.get()}, o, 2, 2);
  ASSERT_EQ(ts.size(), 2u);
  for (const PairTiming& t : ts) {
    EXPECT_EQ(t.placements, 2);
    EXPECT_GT(t.ratio, 0.9);
    EXPECT_LT(t.ratio, 1.1);
  }
  try {
    time_solutions_against(p, *def, {nullptr}, o, 2, 1);
    FAIL() << "a null solution accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a solution to time must not be null"), std::string::npos) << e.what();
  }
}

// The same call fingerprints the same, and so do the heuristic's choice and its top-1 as an
// explicit configuration; another split-K configuration of cuBLASLt, or the same one on another
// output, does not.
TEST(LaunchFingerprint, EqualExactlyForTheSameLaunch) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 16;
  c.n = 1280;
  c.k = 8192;
  A16W16Data d = make_a16w16(c, 7);
  const GemmProblem p = d.problem();
  const GemmArgs args = d.args();
  DeviceBuffer other_out(static_cast<std::size_t>(c.m * c.n) * 2);
  GemmArgs other_args = args;
  other_args.out = other_out.data();
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  ASSERT_NE(lt, nullptr);
  // candidates() starts with the heuristic's choice (split_k() 0: its configuration is not
  // decoded), then the heuristic's top configurations as explicit ones, the first of which is
  // the same algorithm (their captures are equal on an H200: the first split-K configuration
  // after the default is that top-1), so the test takes both configurations of the "different
  // launch" pair from the explicit ones.
  std::vector<SolutionPtr> cands = lt->candidates(p);
  ASSERT_GE(cands.size(), 3u);
  SolutionPtr def = cands[0], top1 = cands[1];
  ASSERT_EQ(def->name(), "cublaslt:heuristic");
  ASSERT_GT(top1->split_k(), 0) << top1->name();
  SolutionPtr a = top1;
  // An explicit configuration with another split-K factor than a's.
  SolutionPtr b;
  for (SolutionPtr& s : cands) {
    if (s->split_k() > 1 && s->split_k() != a->split_k() && s->can_implement(p)) {
      b = s;
      break;
    }
  }
  ASSERT_NE(b, nullptr) << "no split-K configuration other than " << a->split_k() << " for " << p.describe();
  DeviceBuffer ws(std::max<std::size_t>({def->workspace_size(p), a->workspace_size(p), b->workspace_size(p), 256}));
  const Workspace w{ws.data(), ws.bytes()};
  // Warm both (module loading, first-call state), as the tuner's screen does.
  def->run(p, args, w, nullptr);
  a->run(p, args, w, nullptr);
  b->run(p, args, w, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto fp = [&](const Solution& s, const GemmArgs& ga) {
    return launch_fingerprint([&](Stream st) { s.run(p, ga, w, st); });
  };
  const std::optional<std::string> a1 = fp(*a, args), a2 = fp(*a, args), b1 = fp(*b, args), a3 = fp(*a, other_args);
  ASSERT_TRUE(a1.has_value()) << a->name();
  ASSERT_TRUE(a2.has_value());
  ASSERT_TRUE(b1.has_value()) << b->name();
  ASSERT_TRUE(a3.has_value());
  EXPECT_EQ(*a1, *a2) << a->name();
  EXPECT_NE(*a1, *b1) << a->name() << " vs " << b->name();
  EXPECT_NE(*a1, *a3) << "another output pointer";
  // The heuristic's choice and its top-1 as an explicit configuration: one launch, so that
  // --dedupe_launches races the top-1 once.
  const std::optional<std::string> d1 = fp(*def, args);
  ASSERT_TRUE(d1.has_value());
  EXPECT_EQ(*d1, *a1) << def->name() << " vs " << a->name();
  // Nothing ran: the output still holds what the warm-up runs wrote, and no error is pending.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(LaunchFingerprint, NothingForCallsThatCannotBeCapturedAndNoErrorLeft) {
  TGEMM_REQUIRE_GPU();
  // Synchronising inside a capture invalidates it.
  EXPECT_FALSE(launch_fingerprint([](Stream) { (void)cudaDeviceSynchronize(); }).has_value());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // A call that throws.
  EXPECT_FALSE(launch_fingerprint([](Stream) { throw Error("test: refused"); }).has_value());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // A call that enqueues nothing: an empty graph, the same every time.
  const auto e1 = launch_fingerprint([](Stream) {}), e2 = launch_fingerprint([](Stream) {});
  ASSERT_TRUE(e1.has_value());
  ASSERT_TRUE(e2.has_value());
  EXPECT_EQ(*e1, *e2);
  // A memset is compared by its destination and value.
  DeviceBuffer buf(4096);
  auto memset_fp = [&](int value) {
    return launch_fingerprint([&](Stream st) {
      (void)cudaMemsetAsync(buf.data(), value, 4096, reinterpret_cast<cudaStream_t>(st));
    });
  };
  const auto m0 = memset_fp(0), m0b = memset_fp(0), m1 = memset_fp(1);
  ASSERT_TRUE(m0.has_value() && m0b.has_value() && m1.has_value());
  EXPECT_EQ(*m0, *m0b);
  EXPECT_NE(*m0, *m1);
  EXPECT_NE(*m0, *e1);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// With no margin at all, the finals still run: the default and its final_contenders nearest
// rivals are re-timed (on this problem a default's accurate time that led everyone by 12% would
// keep the row without finals in one tune; another tune's finals put it 3% behind).
TEST(RaceProblem, FinalsRunWithContendersBeyondTheMargin) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(16, 1280, 8192);
  RaceOptions o;
  o.libtypes = {"cublaslt"};
  o.finals.margin = 0.0;
  o.finals.contenders = 2;
  const RaceResult r = race_problem(p, o);
  ASSERT_GE(r.winner, 0);
  EXPECT_EQ(r.final_placements, 1);
  std::size_t in_finals = 0, others = 0;
  for (const CandidateResult& x : r.candidates) {
    if (x.final_ratio <= 0) continue;
    ++in_finals;
    if (!x.is_default) ++others;
    EXPECT_EQ(x.stage == "final" || x.stage == "confirm", true) << x.name << ": " << x.stage;
  }
  // Candidates at or below the winner's time (it may be a tie-order pick within the tie band)
  // qualify by the zero margin too; the contenders count towards the cap, not on top of it.
  EXPECT_GE(others, 2u);
  EXPECT_LE(others, o.finals.max_finalists);
  EXPECT_EQ(in_finals, others + 1);  // and the default
  EXPECT_GT(r.candidates[static_cast<std::size_t>(r.winner)].final_ratio, 0);
}

// Memory-bound problems take up to memory_bound_finalists finalists, compute-bound ones
// max_finalists (finalists_for); with a margin wide enough that every passing candidate
// qualifies, the finals of a decode problem hold exactly that many besides the default, and
// every one of them was checked against the reference.
TEST(RaceProblem, MemoryBoundProblemsTakeMoreFinalists) {
  TGEMM_REQUIRE_GPU();
  RaceOptions o;
  o.libtypes = {"cublaslt"};
  o.finals.margin = 1.0;
  o.finals.max_finalists = 2;
  o.finals.memory_bound_finalists = 9;
  o.confirm.rounds = 0;
  const GemmProblem decode = plain_problem(1, 1280, 8192), big = plain_problem(2048, 2048, 2048);
  EXPECT_EQ(finalists_for(decode, o.finals), 9u);
  EXPECT_EQ(finalists_for(big, o.finals), 2u);
  o.finals.memory_bound_finalists = 1;  // smaller than max_finalists: max_finalists
  EXPECT_EQ(finalists_for(decode, o.finals), 2u);
  o.finals.memory_bound_finalists = 9;
  for (const GemmProblem& p : {decode, big}) {
    SCOPED_TRACE(p.describe());
    const RaceResult r = race_problem(p, o);
    ASSERT_GE(r.winner, 0);
    std::size_t others = 0, with_default = 0;
    for (const CandidateResult& x : r.candidates) {
      if (x.final_ratio <= 0) continue;
      EXPECT_GE(x.err_ratio, 0) << x.name << " reached the finals unchecked";
      ++with_default;
      if (!x.is_default) ++others;
    }
    EXPECT_EQ(others, finalists_for(p, o.finals));
    EXPECT_EQ(with_default, others + 1);
  }
}

// A race of one decode problem over cuBLASLt's space: the kept row passes the checks, and a row
// other than the default was confirmed on every placement (no placement lost, median ratio
// beyond the margin); with confirm_best as well, and with the finals spread over placements.
TEST(RaceProblem, KeptRowObeysTheConfirmation) {
  TGEMM_REQUIRE_GPU();
  struct Case {
    bool best;
    int final_placements;
    bool dedupe;
    std::size_t finalists;
    int final_rounds;
    bool near = false;  // ConfirmOptions::near_default
  };
  std::set<std::string> raced_before;  // names this process has raced (a race seeds no others)
  for (const Case c : {Case{false, 1, false, 6, 4}, Case{true, 1, false, 6, 4}, Case{false, 4, false, 6, 4},
                       Case{false, 1, true, 6, 4}, Case{true, 4, false, 16, 8}, Case{true, 4, false, 6, 4, true}}) {
    const GemmProblem p = plain_problem(16, 1280, 8192);
    RaceOptions o;
    o.libtypes = {"cublaslt"};
    o.confirm.best = c.best;
    o.finals.placements = c.final_placements;
    o.screen.dedupe_launches = c.dedupe;
    o.finals.max_finalists = c.finalists;
    o.finals.rounds = c.final_rounds;
    o.confirm.near_default = c.near;
    // Finals run only with two finalists or more; the default can lead the others by more than
    // the default 3% margin, so the test widens it to make the finals certain.
    o.finals.margin = 0.5;
    const RaceResult r = race_problem(p, o);
    SCOPED_TRACE(testing::Message() << "confirm_best " << c.best << ", final_placements " << c.final_placements
                                    << ", dedupe " << c.dedupe << ", finalists " << c.finalists << ", near " << c.near);
    ASSERT_GE(r.winner, 0);
    // Candidates not raced because they launch what another does: each names one that stands for
    // itself; none of them was timed.
    std::map<std::string, const CandidateResult*> by_name;
    for (const CandidateResult& x : r.candidates) by_name[x.name] = &x;
    int same = 0;
    for (const CandidateResult& x : r.candidates) {
      if (x.same_as.empty()) continue;
      ++same;
      EXPECT_LT(x.screen_us, 0) << x.name;
      EXPECT_LT(x.us, 0) << x.name;
      ASSERT_EQ(by_name.count(x.same_as), 1u) << x.name << " -> " << x.same_as;
      EXPECT_TRUE(by_name[x.same_as]->same_as.empty()) << x.same_as;
    }
    EXPECT_EQ(same, r.same_launches);
    if (!c.dedupe) EXPECT_EQ(same, 0);
    // A second screen launch only for a candidate's first use in this process (kernels load
    // lazily): never more than the names this test has not raced before.
    int new_names = 0;
    for (const CandidateResult& x : r.candidates) new_names += raced_before.insert(x.name).second ? 1 : 0;
    EXPECT_GE(r.rescreened, 0);
    EXPECT_LE(r.rescreened, new_names);
    // Finals ran (with the 50% margin, the accurate candidates near the fastest qualify) on every
    // placement asked for: 4 of this problem fit the memory budget many times over.
    EXPECT_EQ(r.final_placements, c.final_placements);
    // The stages the profile reports: the default and at most `finalists` others reached the
    // finals (with the 50% margin, as many as asked for), each with its paired ratio to the
    // default; those confirmed carry their confirmation ratio.
    std::size_t in_finals = 0, confirmed_stage = 0;
    bool default_in_finals = false;
    for (const CandidateResult& x : r.candidates) {
      if (x.stage == "final") EXPECT_GT(x.final_ratio, 0) << x.name;
      if (x.final_ratio > 0) {
        ++in_finals;
        if (x.is_default) {
          default_in_finals = true;
          EXPECT_DOUBLE_EQ(x.final_ratio, 1.0);
        }
      }
      if (x.stage == "confirm") {
        ++confirmed_stage;
        EXPECT_FALSE(x.is_default);
        EXPECT_GT(x.confirm_ratio, 0) << x.name;
      } else {
        EXPECT_LT(x.confirm_ratio, 0) << x.name;
      }
      if (x.us > 0 && x.error.empty()) EXPECT_TRUE(x.stage == "accurate" || x.stage == "final" || x.stage == "confirm") << x.name;
      if (x.screen_us > 0 && x.error.empty()) EXPECT_FALSE(x.stage.empty()) << x.name;
      // The accurate stage's own time survives the finals and the confirmation (accurate_us):
      // set exactly for the candidates that stage timed, equal to `us` where nothing re-timed them.
      if (x.stage == "accurate" || x.stage == "final" || x.stage == "confirm") {
        EXPECT_GT(x.accurate_us, 0) << x.name;
        if (x.stage == "accurate" && x.error.empty()) EXPECT_DOUBLE_EQ(x.accurate_us, x.us) << x.name;
      } else {
        EXPECT_LT(x.accurate_us, 0) << x.name;
      }
    }
    EXPECT_TRUE(default_in_finals);
    EXPECT_GE(in_finals, 2u);
    EXPECT_LE(in_finals, c.finalists + 1);
    EXPECT_EQ(confirmed_stage, static_cast<std::size_t>(r.confirm_tried));
    // The finals ran, so the winner and every candidate confirmed are finalists (or the default).
    for (const CandidateResult& x : r.candidates) {
      if (x.stage == "confirm") EXPECT_GT(x.final_ratio, 0) << x.name;
      if (x.us > 0 && x.final_ratio < 0) EXPECT_TRUE(x.beyond_finals) << x.name;
    }
    EXPECT_GT(r.candidates[static_cast<std::size_t>(r.winner)].final_ratio, 0);
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    EXPECT_TRUE(w.error.empty()) << w.name << ": " << w.error;
    EXPECT_GT(w.us, 0) << w.name;
    EXPECT_GE(w.err_ratio, 0) << w.name;
    EXPECT_LE(w.err_ratio, o.select.max_err_ratio) << w.name;
    EXPECT_TRUE(w.strict_ok) << w.name;
    EXPECT_GT(r.enumerated, 100);
    if (!w.is_default) {
      EXPECT_TRUE(r.confirmed) << w.name;
      EXPECT_GE(r.confirm_tried, 1);
      EXPECT_LE(r.confirm_tried, o.confirm.tries);
      EXPECT_GE(r.confirm_placements, 1);
      EXPECT_LE(r.confirm_placements, o.confirm.placements);
      EXPECT_GE(r.confirm_min_ratio, 1.0) << w.name;
      EXPECT_GT(r.confirm_ratio * (1.0 - o.confirm.margin), 1.0) << w.name;
      EXPECT_DOUBLE_EQ(w.us, r.confirm_winner_us);
    } else if (r.confirm_tried > 0) {
      EXPECT_FALSE(r.confirmed);  // every try failed: the default is kept
    }
    // confirm_near_default (with confirm_best: every try is timed): a default kept in the end met
    // every finalist the finals put at or under it in the confirmation, up to confirm_tries.
    if (c.near && w.is_default) {
      std::size_t rivals = 0;
      for (const CandidateResult& x : r.candidates)
        rivals += !x.is_default && x.final_ratio > 0 && x.final_ratio <= 1.0 ? 1 : 0;
      EXPECT_EQ(static_cast<std::size_t>(r.confirm_tried), std::min<std::size_t>(rivals, o.confirm.tries));
    }
  }
}

// ConfirmOptions::sustained_all: a compute-bound problem (1024x2048x2048: 512 FLOPs a byte)
// runs no finals; of its finalists besides the default (5 with the 50% margin), the confirm_tries
// (4) fastest are confirmed against the default, and a kept row other than the default beat it by
// the margin on the median of its placements. A memory-bound problem (16x1280x8192) still runs
// its finals.
TEST(RaceProblem, SustainedConfirmAllConfirmsEveryFinalist) {
  TGEMM_REQUIRE_GPU();
  RaceOptions o;
  o.libtypes = {"cublaslt"};
  o.confirm.sustained_all = true;
  o.finals.margin = 0.5;
  o.finals.max_finalists = 5;
  o.confirm.tries = 4;
  o.confirm.placements = 2;
  o.confirm.rounds = 2;
  {
    const RaceResult r = race_problem(plain_problem(1024, 2048, 2048), o);
    ASSERT_GE(r.winner, 0);
    EXPECT_EQ(r.final_placements, 0);
    std::size_t confirmed = 0;
    for (const CandidateResult& x : r.candidates) {
      EXPECT_NE(x.stage, "final") << x.name;
      EXPECT_LT(x.final_ratio, 0) << x.name;
      if (x.stage == "confirm") {
        ++confirmed;
        EXPECT_FALSE(x.is_default) << x.name;
        EXPECT_GT(x.confirm_ratio, 0) << x.name;
      }
    }
    EXPECT_EQ(confirmed, static_cast<std::size_t>(o.confirm.tries));
    EXPECT_EQ(r.confirm_tried, o.confirm.tries);
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    EXPECT_TRUE(w.error.empty()) << w.name << ": " << w.error;
    EXPECT_TRUE(w.strict_ok) << w.name;
    if (!w.is_default) {
      EXPECT_TRUE(r.confirmed) << w.name;
      EXPECT_EQ(w.stage, "confirm") << w.name;
      EXPECT_GE(r.confirm_min_ratio, 1.0) << w.name;
      EXPECT_GT(r.confirm_ratio * (1.0 - o.sustained_default_margin), 1.0) << w.name;
      EXPECT_DOUBLE_EQ(w.confirm_ratio, r.confirm_ratio) << w.name;
    } else {
      EXPECT_FALSE(r.confirmed);
    }
  }
  {
    const RaceResult r = race_problem(plain_problem(16, 1280, 8192), o);
    ASSERT_GE(r.winner, 0);
    EXPECT_GE(r.final_placements, 1);
    std::size_t in_finals = 0;
    for (const CandidateResult& x : r.candidates) in_finals += x.final_ratio > 0 ? 1 : 0;
    EXPECT_GE(in_finals, 2u);
  }
}

// Graph screening (ScreenOptions::graph_us): candidates of a ~10 us problem are screened by
// CUDA-graph replays, so their screen times track the GPU times the accurate stage measures
// (launched one by one they are timed by cuBLASLt's host cost: 11-15 us screen, 8 us accurate). Over the accurately timed candidates the median screen / accurate
// ratio is near 1; the race still keeps a checked winner. With min_accurate 48, at least 48 are
// timed accurately.
TEST(RaceProblem, GraphScreenTracksTheGpuTime) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(16, 1280, 8192);
  RaceOptions o;
  o.libtypes = {"cublaslt"};
  o.screen.graph_us = 50;
  o.select.min_accurate = 48;  // `tune --min_accurate`: at least this many timed accurately
  const RaceResult r = race_problem(p, o);
  ASSERT_GE(r.winner, 0);
  EXPECT_GE(r.accurate, 48);
  std::vector<double> ratios;
  for (const CandidateResult& x : r.candidates) {
    if (x.error.empty() && x.same_as.empty()) EXPECT_GT(x.screen_us, 0) << x.name;
    if (x.error.empty() && x.us > 0 && x.screen_us > 0 && x.stage == "accurate") ratios.push_back(x.screen_us / x.us);
  }
  ASSERT_GE(ratios.size(), 20u);
  std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
  const double med = ratios[ratios.size() / 2];
  EXPECT_GT(med, 0.8);
  EXPECT_LT(med, 1.25);
  const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
  EXPECT_TRUE(w.strict_ok) << w.name;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Checks (AccurateOptions::check_all off, the default): the default, every finalist, every candidate
// confirmed and the winner were checked against the reference; of 48 accurately timed
// candidates, those slower than any finalist can be were not (err_ratio -1). With check_all,
// every accurately timed candidate was.
TEST(RaceProblem, ChecksCoverEveryContender) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(16, 4096, 4096);
  for (bool all : {false, true}) {
    RaceOptions o;
    o.libtypes = {"cublaslt"};
    o.select.min_accurate = 48;
    o.accurate.check_all = all;
    const RaceResult r = race_problem(p, o);
    ASSERT_GE(r.winner, 0) << "check_all " << all;
    EXPECT_GE(r.accurate, 48);
    int timed = 0, checked = 0, failed = 0;
    for (const CandidateResult& x : r.candidates) {
      if (!x.error.empty() || x.us <= 0) continue;
      ++timed;
      if (x.err_ratio >= 0) ++checked;
      if (x.err_ratio > o.select.max_err_ratio || (x.err_ratio >= 0 && !x.strict_ok)) ++failed;
      if (x.is_default || x.final_ratio > 0 || x.stage == "confirm" || all) {
        EXPECT_GE(x.err_ratio, 0) << x.name << " (check_all " << all << ")";
      }
    }
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    EXPECT_GE(w.err_ratio, 0) << w.name;
    EXPECT_TRUE(w.strict_ok) << w.name;
    EXPECT_GE(timed, 48);
    if (all) {
      EXPECT_EQ(checked, timed);
    } else {
      // The default and at least the finals' contenders; at most the default and max_finalists
      // passing others, plus any that failed their check.
      EXPECT_GE(checked, 1 + static_cast<int>(o.finals.contenders));
      EXPECT_LE(checked - failed, 1 + static_cast<int>(o.finals.max_finalists));
      EXPECT_LT(checked, timed);
    }
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// AccurateOptions::block: the accurate stage in blocks interleaved with the default. Every
// accurately timed candidate gets a time, on the scale of the default's own (its ratio to the
// default in the same rounds times the default's time alone): a candidate's time is near the one
// the same problem's race gives it timed alone (median over the candidates both races timed,
// within 15%: a per-graph instead of a per-call time or a ratio against the wrong launcher would
// be off by far more). Not closer: an H200 read the blocked times 6.8% above the alone ones on
// this problem (two races a few seconds apart; the interleaved ratios
// put the candidates further behind the default than one-at-a-time timing did). The checks still
// cover the winner.
TEST(RaceProblem, AccurateBlocksTimeOnTheDefaultsScale) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(16, 4096, 4096);
  std::map<std::string, double> alone, blocked;
  for (int block : {0, 5}) {
    RaceOptions o;
    o.libtypes = {"cublaslt"};
    o.select.min_accurate = 32;
    o.accurate.block = block;
    const RaceResult r = race_problem(p, o);
    ASSERT_GE(r.winner, 0) << "accurate_block " << block;
    EXPECT_GE(r.accurate, 32) << "accurate_block " << block;
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    EXPECT_GE(w.err_ratio, 0) << w.name;
    EXPECT_TRUE(w.strict_ok) << w.name;
    int timed = 0;
    for (const CandidateResult& x : r.candidates) {
      if (!x.error.empty() || x.accurate_us <= 0) continue;
      ++timed;
      EXPECT_TRUE(std::isfinite(x.accurate_us)) << x.name;
      (block == 0 ? alone : blocked)[x.name] = x.accurate_us;
    }
    EXPECT_GE(timed, 32) << "accurate_block " << block;
  }
  std::vector<double> log_ratios;
  for (const auto& [name, us] : blocked) {
    auto it = alone.find(name);
    if (it != alone.end()) log_ratios.push_back(std::log(us / it->second));
  }
  // Each race times its own >= 32 screen leaders, and screen times vary between races: the two
  // sets overlap in part (15 of 32 seen on an H200), so the median is taken over at least 8.
  ASSERT_GE(log_ratios.size(), 8u);
  std::sort(log_ratios.begin(), log_ratios.end());
  const double med = log_ratios[log_ratios.size() / 2];
  EXPECT_LT(std::abs(med), std::log(1.15)) << "median blocked / alone time " << std::exp(med) << " over "
                                           << log_ratios.size() << " candidates";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// The race's default is what the dispatcher runs without a row: for an erf-GELU + bias problem of
// M >= 512 that CUTLASS declines, the staged path (split:cublaslt:heuristic) when split is raced;
// cuBLASLt's heuristic otherwise. It is always timed (default_us), and the kept row is it or one
// confirmed against it.
TEST(RaceProblem, DefaultIsTheDispatchersDefault) {
  TGEMM_REQUIRE_GPU();
  TableKey key;
  key.arch = "sm_90a";
  key.sm_count = 132;
  key.n = 512;  // 4 x 4 tiles of 128 x 128: CUTLASS's rule declines (below half a wave)
  key.k = 4160;
  key.bias = true;
  key.epilogue.activation = Activation::kGelu;
  const GemmProblem p = problem_of_key(key, 512, Runtime::get().platform().current_device());
  struct Case {
    std::vector<std::string> libtypes;
    const char* want;
  };
  for (const Case& c : {Case{{"cublaslt", "split"}, "split:cublaslt:heuristic"}, Case{{"cublaslt"}, "cublaslt:heuristic"}}) {
    RaceOptions o;
    o.libtypes = c.libtypes;
    const RaceResult r = race_problem(p, o);
    SCOPED_TRACE(testing::Message() << "libtypes " << c.libtypes.size() << ", want " << c.want);
    int defaults = 0;
    for (const CandidateResult& x : r.candidates) {
      if (!x.is_default) continue;
      ++defaults;
      EXPECT_EQ(x.name, c.want);
      EXPECT_GT(x.us, 0) << x.name;
      EXPECT_DOUBLE_EQ(r.default_us, x.us);
    }
    EXPECT_EQ(defaults, 1);
    ASSERT_GE(r.winner, 0);
    const CandidateResult& w = r.candidates[static_cast<std::size_t>(r.winner)];
    EXPECT_TRUE(w.is_default || r.confirmed) << w.name;
    EXPECT_TRUE(w.strict_ok) << w.name;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}


// cuBLASLt's refine() expands the bases of the heuristic's own top choices whatever their screen
// time (a tune that screened three of them 4-7x slow at idle clocks never expanded their bases
// and missed rows 7.8-7.9% faster than the one it kept). Here the screen list has
// those choices last, behind 40 other screened configurations, and refine() must still return
// every expansion of the first 8 of their bases (except the names already screened).
TEST(CublasLtRefine, ExpandsTheHeuristicsBasesWhateverTheirScreenTime) {
  TGEMM_REQUIRE_GPU();
  const GemmProblem p = plain_problem(1, 1536, 7168);
  const Backend* lt = Runtime::get().registry().find("cublaslt");
  ASSERT_NE(lt, nullptr);
  const auto suggested = LtSolution::heuristic_top(p, 16);
  ASSERT_FALSE(suggested.empty());
  // The heuristic's first 8 distinct bases are the ones refine() always expands.
  std::vector<std::string> first_names;
  for (const auto& s : suggested) first_names.push_back(s->name());
  const std::vector<LtConfig> first_bases = lt_refine_bases(first_names, 8);
  std::set<std::string> suggested_names;
  for (const auto& s : suggested) suggested_names.insert(s->name());
  std::vector<ScreenedCandidate> screened;
  double us = 10.0;
  for (const LtConfig& c : enumerate_lt_bases(p, LtSpaceOptions{}, nullptr)) {
    const std::string name = format_lt_name(c);
    if (suggested_names.count(name) != 0) continue;
    screened.push_back({name, us});
    us += 0.1;
    if (screened.size() == 40) break;
  }
  for (const auto& s : suggested) screened.push_back({s->name(), 1000.0});
  std::set<std::string> screened_names;
  for (const auto& c : screened) screened_names.insert(c.name);

  const std::vector<SolutionPtr> refined = lt->refine(p, screened, RefineOptions{24});
  std::set<std::string> refined_names;
  for (const auto& s : refined) refined_names.insert(s->name());
  int bases_checked = 0;
  for (const LtConfig& base : first_bases) {
    const std::vector<LtConfig> expansions = expand_lt_configs(p, {base}, LtSpaceOptions{}, nullptr);
    for (const LtConfig& e : expansions) {
      const std::string name = format_lt_name(e);
      if (screened_names.count(name) != 0) continue;
      EXPECT_EQ(refined_names.count(name), 1u) << "expansion " << name << " of the heuristic's base " << format_lt_name(base);
    }
    bases_checked += expansions.empty() ? 0 : 1;
  }
  // At M = 1 every split-K-capable choice has expansions: the check above is not vacuous.
  EXPECT_GT(bases_checked, 0);
}

}  // namespace
}  // namespace tgemm::test
