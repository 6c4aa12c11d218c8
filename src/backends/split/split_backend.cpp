#include "backends/split/split_backend.h"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "core/check.h"
#include "core/table.h"

namespace tgemm {

namespace {

constexpr std::string_view kLibtype = "split";
constexpr std::string_view kPrefix = "split:";

class SplitSolution final : public Solution {
 public:
  SplitSolution(SolutionPtr inner, std::shared_ptr<const SplitEpiloguePass> pass)
      : inner_(std::move(inner)), pass_(std::move(pass)), name_(std::string(kPrefix) + inner_->name()) {}

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kLibtype; }
  int solidx() const override { return inner_->solidx(); }
  int split_k() const override { return inner_->split_k(); }

  bool can_implement(const GemmProblem& p) const noexcept override {
    const std::optional<GemmProblem> ip = split_inner_problem(p);
    return ip.has_value() && inner_->can_implement(*ip);
  }

  std::size_t workspace_size(const GemmProblem& p) const override {
    const std::optional<GemmProblem> ip = split_inner_problem(p);
    TGEMM_CHECK(ip.has_value(), name_, "cannot implement ", p.describe());
    return inner_->workspace_size(*ip);
  }

  void run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws, Stream stream) const override {
    TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
    GemmArgs plain = args;
    plain.bias = nullptr;
    inner_->run(*split_inner_problem(p), plain, ws, stream);
    (*pass_)(p, args, stream);
  }

 private:
  SolutionPtr inner_;
  std::shared_ptr<const SplitEpiloguePass> pass_;
  std::string name_;
};

class SplitBackend final : public Backend {
 public:
  SplitBackend(const Registry& registry, SplitEpiloguePass pass)
      : registry_(registry), pass_(std::make_shared<const SplitEpiloguePass>(std::move(pass))) {}

  std::string_view libtype() const override { return kLibtype; }

  SolutionPtr from_row(const TableRow& row, const GemmProblem& p, std::string& why) const override {
    const std::string& name = row.kernel_name;
    if (name.compare(0, kPrefix.size(), kPrefix) != 0) {
      why = "kernelName '" + name + "' of libtype split does not start with 'split:'";
      return nullptr;
    }
    const std::string inner_name = name.substr(kPrefix.size());
    const std::size_t colon = inner_name.find(':');
    const std::string inner_libtype = colon == std::string::npos ? std::string() : inner_name.substr(0, colon);
    if (inner_libtype.empty() || inner_libtype == kLibtype) {
      why = "kernelName '" + name + "' does not name a solution of another backend after 'split:'";
      return nullptr;
    }
    const Backend* inner_backend = registry_.find(inner_libtype);
    if (inner_backend == nullptr) {
      why = "kernelName '" + name + "' names libtype '" + inner_libtype + "', which this build does not have";
      return nullptr;
    }
    const std::optional<GemmProblem> ip = split_inner_problem(p);
    if (!ip) {
      why = "split rows apply to problems with a bias or an activation and alpha = 1, no c; got " + p.describe();
      return nullptr;
    }
    TableRow inner_row = row;
    inner_row.libtype = inner_libtype;
    inner_row.kernel_name = inner_name;
    SolutionPtr inner = inner_backend->from_row(inner_row, *ip, why);
    if (inner == nullptr) {
      why = "split: " + why;
      return nullptr;
    }
    return std::make_shared<SplitSolution>(std::move(inner), pass_);
  }

  // Default rule: an erf-GELU + bias problem that the specialised kernels
  // decline (the skinny rule and CUTLASS's take the ones they win) runs staged: cuBLASLt's
  // default plain product, then the bias + GELU pass in place. Without this the next default is
  // cuBLASLt's heuristic solution, which for the erf GELU (cuBLASLt's GELU epilogue is the tanh
  // form) writes the product in fp32 to its workspace and runs the pass from there: ~10 bytes an
  // element of traffic against this path's 6 (one more bf16 rounding here, before the bias, as
  // F.gelu(F.linear(...)) has). That path ran at 0.988x of this one on 31 problems at
  // M = 512/2048/8192 (min 0.946x), and at 0.88-1.02x of it on the 32 decode problems (M = 1, 16;
  // H200 tune profile). Without a bias or with another activation nothing was measured: no staged
  // default.
  SolutionPtr default_solution(const GemmProblem& p) const override {
    if (p.activation != Activation::kGelu || !p.has_bias()) return nullptr;
    const std::optional<GemmProblem> ip = split_inner_problem(p);
    const Backend* lt = registry_.find("cublaslt");
    return ip && lt != nullptr ? staged_default(*lt, *ip) : nullptr;
  }

  // The default of every other backend (but the reference) for the plain problem: what the
  // product costs without a table row, plus the pass.
  std::vector<SolutionPtr> candidates(const GemmProblem& p) const override {
    std::vector<SolutionPtr> out;
    const std::optional<GemmProblem> ip = split_inner_problem(p);
    if (!ip) return out;
    std::unordered_set<std::string> names;
    for (const auto& backend : registry_.backends()) {
      if (backend->libtype() == kLibtype || backend->libtype() == "reference") continue;
      SolutionPtr s = staged_default(*backend, *ip);
      if (s != nullptr && names.insert(s->name()).second) out.push_back(std::move(s));
    }
    return out;
  }

 private:
  // `inner`'s default for the plain problem ip, then the pass; nullptr if it has none for ip.
  SolutionPtr staged_default(const Backend& inner, const GemmProblem& ip) const {
    SolutionPtr s = inner.default_solution(ip);
    if (s == nullptr || !s->can_implement(ip)) return nullptr;
    return std::make_shared<SplitSolution>(std::move(s), pass_);
  }

  const Registry& registry_;
  std::shared_ptr<const SplitEpiloguePass> pass_;
};

}  // namespace

std::optional<GemmProblem> split_inner_problem(const GemmProblem& p) {
  if (p.family != OpFamily::kA16W16 || p.scale_ab || p.bpreshuffle || !p.unit_alpha || p.use_c) return std::nullopt;
  if (!p.has_bias() && p.activation == Activation::kNone) return std::nullopt;
  GemmProblem ip = p;
  ip.epilogue = Epilogue::kNone;
  ip.activation = Activation::kNone;
  ip.bias_type = p.a_type;
  ip.align_bias = 16;
  return ip;
}

void register_split_solutions(Registry& registry, SplitEpiloguePass pass) {
  TGEMM_CHECK(static_cast<bool>(pass), "register_split_solutions", "needs an epilogue pass");
  registry.add(std::make_unique<SplitBackend>(registry, std::move(pass)));
}

}  // namespace tgemm
