// The split backend's logic without a GPU: which problems it takes, the plain problem it hands
// on, names and from_row round trips through the registry, candidates from the other backends'
// defaults, and run() = the inner solution on the plain problem (no bias) then the pass on the
// original problem.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/split/split_backend.h"
#include "core/registry.h"
#include "core/table.h"
#include "tests/common/host_fakes.h"
#include "tgemm/error.h"

namespace tgemm::test {
namespace {

// Records what run() received; accepts plain problems only (as a backend without epilogues).
class RecordingSolution : public Solution {
 public:
  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return "rec"; }
  int solidx() const override { return 7; }
  int split_k() const override { return 3; }
  bool can_implement(const GemmProblem& p) const noexcept override {
    return !p.has_bias() && p.activation == Activation::kNone;
  }
  std::size_t workspace_size(const GemmProblem& p) const override { return static_cast<std::size_t>(p.n); }
  void run(const GemmProblem& p, const GemmArgs& a, const Workspace&, Stream) const override {
    problems.push_back(p);
    args.push_back(a);
  }
  mutable std::vector<GemmProblem> problems;
  mutable std::vector<GemmArgs> args;

 private:
  std::string name_ = "rec:plain";
};

class RecordingBackend : public Backend {
 public:
  std::shared_ptr<RecordingSolution> sol = std::make_shared<RecordingSolution>();
  std::string_view libtype() const override { return "rec"; }
  SolutionPtr from_row(const TableRow& row, const GemmProblem&, std::string& why) const override {
    if (row.kernel_name == sol->name() && row.libtype == "rec") return sol;
    why = "unknown kernelName '" + row.kernel_name + "'";
    return nullptr;
  }
  SolutionPtr default_solution(const GemmProblem&) const override { return sol; }
  std::vector<SolutionPtr> candidates(const GemmProblem&) const override { return {sol}; }
};

struct Fixture {
  Registry registry;
  RecordingBackend* rec = nullptr;
  std::vector<GemmProblem> passed;
  Fixture() {
    auto r = std::make_unique<RecordingBackend>();
    rec = r.get();
    registry.add(std::move(r));
    registry.add(std::make_unique<FakeBackend>("fake", std::vector<std::string>{"tile64", "tile128"}, "tile64"));
    registry.add(std::make_unique<FakeBackend>("reference", std::vector<std::string>{"simt"}, "simt"));
    register_split_solutions(registry, [this](const GemmProblem& p, const GemmArgs&, Stream) { passed.push_back(p); });
  }
  const Backend& split() const { return *registry.find("split"); }
};

TableRow split_row(const std::string& kernel) {
  TableRow row;
  row.libtype = "split";
  row.kernel_name = kernel;
  return row;
}

TEST(SplitBackend, TakesBiasOrActivationWithUnitAlphaAndNoC) {
  GemmProblem bias = a16w16_problem(16, 256, 512, true);
  ASSERT_TRUE(split_inner_problem(bias).has_value());
  const GemmProblem ip = *split_inner_problem(bias);
  EXPECT_FALSE(ip.has_bias());
  EXPECT_EQ(ip.activation, Activation::kNone);
  EXPECT_EQ(ip.m, 16);
  EXPECT_EQ(ip.n, 256);
  EXPECT_EQ(ip.k, 512);
  EXPECT_EQ(ip.ldo, bias.ldo);

  GemmProblem gelu = a16w16_problem(16, 256, 512, false);
  gelu.activation = Activation::kGelu;
  EXPECT_TRUE(split_inner_problem(gelu).has_value());

  EXPECT_FALSE(split_inner_problem(a16w16_problem(16, 256, 512, false)).has_value());  // nothing to split
  GemmProblem alpha = bias;
  alpha.unit_alpha = false;
  EXPECT_FALSE(split_inner_problem(alpha).has_value());
  GemmProblem c = bias;
  c.use_c = true;
  EXPECT_FALSE(split_inner_problem(c).has_value());
  GemmProblem scaled = bias;
  scaled.scale_ab = true;
  EXPECT_FALSE(split_inner_problem(scaled).has_value());
}

TEST(SplitBackend, CandidatesWrapOtherBackendsDefaultsButNotTheReference) {
  Fixture f;
  std::vector<SolutionPtr> c = f.split().candidates(a16w16_problem(16, 256, 512, true));
  std::vector<std::string> names;
  for (const auto& s : c) names.push_back(s->name());
  EXPECT_EQ(names, (std::vector<std::string>{"split:rec:plain", "split:fake:tile64"}));
  for (const auto& s : c) EXPECT_EQ(s->libtype(), "split");
  EXPECT_TRUE(f.split().candidates(a16w16_problem(16, 256, 512, false)).empty());
  EXPECT_EQ(f.split().default_solution(a16w16_problem(16, 256, 512, true)), nullptr);
}

TEST(SplitBackend, FromRowRoundTripsAndExplainsRefusals) {
  Fixture f;
  const GemmProblem p = a16w16_problem(16, 256, 512, true);
  std::string why;
  SolutionPtr s = f.split().from_row(split_row("split:rec:plain"), p, why);
  ASSERT_NE(s, nullptr) << why;
  EXPECT_EQ(s->name(), "split:rec:plain");
  EXPECT_EQ(s->solidx(), 7);
  EXPECT_EQ(s->split_k(), 3);
  EXPECT_TRUE(s->can_implement(p));
  EXPECT_EQ(s->workspace_size(p), 256u);

  struct Bad {
    std::string kernel, needle;
  };
  for (const Bad& b : {Bad{"rec:plain", "does not start with 'split:'"},
                       Bad{"split:split:rec:plain", "does not name a solution of another backend"},
                       Bad{"split:noname", "does not name a solution of another backend"},
                       Bad{"split:nosuchlib:x", "names libtype 'nosuchlib'"},
                       Bad{"split:rec:other", "split: unknown kernelName 'rec:other'"}}) {
    why.clear();
    EXPECT_EQ(f.split().from_row(split_row(b.kernel), p, why), nullptr) << b.kernel;
    EXPECT_NE(why.find(b.needle), std::string::npos) << b.kernel << ": " << why;
  }
  why.clear();
  EXPECT_EQ(f.split().from_row(split_row("split:rec:plain"), a16w16_problem(16, 256, 512, false), why), nullptr);
  EXPECT_NE(why.find("split rows apply to problems with a bias or an activation"), std::string::npos) << why;
}

TEST(SplitBackend, RunsThePlainProductThenThePass) {
  Fixture f;
  GemmProblem p = a16w16_problem(5, 64, 32, true);
  p.activation = Activation::kRelu;
  std::string why;
  SolutionPtr s = f.split().from_row(split_row("split:rec:plain"), p, why);
  ASSERT_NE(s, nullptr) << why;
  int bias_value = 0, out_value = 0;
  GemmArgs args;
  args.bias = &bias_value;
  args.out = &out_value;
  s->run(p, args, Workspace{}, nullptr);
  ASSERT_EQ(f.rec->sol->problems.size(), 1u);
  EXPECT_FALSE(f.rec->sol->problems[0].has_bias());
  EXPECT_EQ(f.rec->sol->problems[0].activation, Activation::kNone);
  EXPECT_EQ(f.rec->sol->args[0].bias, nullptr);
  EXPECT_EQ(f.rec->sol->args[0].out, &out_value);
  ASSERT_EQ(f.passed.size(), 1u);
  EXPECT_TRUE(f.passed[0] == p);

  // A problem it cannot implement is an error naming the solution, and nothing runs.
  GemmProblem plain = a16w16_problem(5, 64, 32, false);
  EXPECT_THROW(s->run(plain, args, Workspace{}, nullptr), Error);
  EXPECT_EQ(f.rec->sol->problems.size(), 1u);
  EXPECT_EQ(f.passed.size(), 1u);
}

}  // namespace
}  // namespace tgemm::test
