#include "backends/skinny/skinny_backend.h"

#include <string>
#include <unordered_map>
#include <utility>

#include "backends/skinny/skinny_default_rule.h"
#include "backends/skinny/skinny_gemv.h"
#include "backends/skinny/skinny_mma.h"
#include "backends/skinny/skinny_names.h"
#include "core/table.h"

namespace tgemm {
namespace {

using skinny::GemvSolutions;
using skinny::MmaSolutions;

class SkinnyBackend final : public Backend {
 public:
  SkinnyBackend() : mma_(skinny::make_mma_solutions()), gemv_(skinny::make_gemv_solutions()) {
    for (const auto& s : mma_.weight_a) by_name_.emplace(s->name(), s);
    for (const auto& s : mma_.weight_b) by_name_.emplace(s->name(), s);
    for (const auto& s : gemv_) by_name_.emplace(s->name(), s);
  }

  std::string_view libtype() const override { return skinny::kLibtype; }

  SolutionPtr from_row(const TableRow& row, const GemmProblem&, std::string& why) const override {
    auto it = by_name_.find(row.kernel_name);
    if (it != by_name_.end()) return it->second;
    if (!skinny::parse_skinny_name(row.kernel_name))
      why = "kernelName '" + row.kernel_name + "' is not a skinny solution name (src/backends/skinny/skinny_names.h)";
    else
      why = "unknown kernelName '" + row.kernel_name + "' for libtype skinny (no such variant in this build)";
    return nullptr;
  }

  // Both MMA families' candidates of the smallest fitting M tile, then the GEMV's of the
  // smallest fitting token count.
  std::vector<SolutionPtr> candidates(const GemmProblem& p) const override {
    std::vector<SolutionPtr> out;
    skinny::append_mma_candidates(mma_, p, out);
    skinny::append_gemv_candidates(gemv_, p, out);
    return out;
  }

  SolutionPtr default_solution(const GemmProblem& p) const override {
    return skinny::default_solution(mma_, gemv_, p);
  }

 private:
  MmaSolutions mma_;
  GemvSolutions gemv_;
  std::unordered_map<std::string, SolutionPtr> by_name_;
};

}  // namespace

std::vector<SolutionPtr> skinny_solutions() {
  const MmaSolutions mma = skinny::make_mma_solutions();
  const GemvSolutions gemv = skinny::make_gemv_solutions();
  std::vector<SolutionPtr> out(mma.weight_a.begin(), mma.weight_a.end());
  out.insert(out.end(), mma.weight_b.begin(), mma.weight_b.end());
  out.insert(out.end(), gemv.begin(), gemv.end());
  return out;
}

void register_skinny_solutions(Registry& registry) { registry.add(std::make_unique<SkinnyBackend>()); }

}  // namespace tgemm
