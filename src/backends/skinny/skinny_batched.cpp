#include "backends/skinny/skinny_batched.h"

#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "backends/skinny/skinny_common.h"
#include "core/check.h"
#include "core/table.h"

namespace tgemm::skinny {
namespace {

class BatchedSolution final : public Solution {
 public:
  BatchedSolution(const BatchedTile& tile, const DtypeKernels<BatchedKernel>::Slots& kernels)
      : tile_(tile), kernels_(kernels), name_(batched_skinny_name(tile)) {}

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kBatchedLibtype; }
  int split_k() const override { return 1; }
  bool can_implement(const GemmProblem& p) const noexcept override {
    if (kernels_.get(p.a_type) == nullptr || !batched_tile_accepts(tile_, p)) return false;
    if (!is_sm90(p.device)) return false;
    return kernels_.info(p.a_type, [](const BatchedKernel& k) { return k.query(); }).ptx_arch >= 90;
  }
  std::size_t workspace_size(const GemmProblem&) const override { return 0; }
  void run(const GemmProblem& p, const GemmArgs& args, const Workspace&, Stream stream) const override {
    TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
    kernels_.get(p.a_type)->launch(p, args, stream, name_.c_str());
  }

  const BatchedTile& tile() const { return tile_; }

 private:
  BatchedTile tile_;
  DtypeKernels<BatchedKernel> kernels_;
  std::string name_;
};

using BatchedSolutions = std::vector<std::shared_ptr<const BatchedSolution>>;

BatchedSolutions make_batched_solutions() {
  std::vector<BatchedKernel> kernels;
  append_batched_kernels_bf16(kernels);
#ifndef TGEMM_SKINNY_CI_SUBSET
  append_batched_kernels_fp16(kernels);
#endif
  BatchedSolutions out;
  for (const auto& g : group_by_tile(kernels)) out.push_back(std::make_shared<BatchedSolution>(g.tile, g.kernels));
  return out;
}

class BatchedSkinnyBackend final : public Backend {
 public:
  BatchedSkinnyBackend() : solutions_(make_batched_solutions()) {
    for (const auto& s : solutions_) by_name_.emplace(s->name(), s);
  }

  std::string_view libtype() const override { return kBatchedLibtype; }

  SolutionPtr from_row(const TableRow& row, const GemmProblem&, std::string& why) const override {
    auto it = by_name_.find(row.kernel_name);
    if (it != by_name_.end()) return it->second;
    if (!parse_batched_skinny_name(row.kernel_name))
      why = "kernelName '" + row.kernel_name +
            "' is not a batched skinny solution name (src/backends/skinny/skinny_batched_names.h)";
    else
      why = "unknown kernelName '" + row.kernel_name + "' for libtype batched_skinny (no such tile in this build)";
    return nullptr;
  }

  // The CUDA-core tiles of the smallest fitting token count (a larger one reads more of a and
  // runs more FMAs for the same stream of b), every split of them, and the tensor-core tiles.
  std::vector<SolutionPtr> candidates(const GemmProblem& p) const override {
    auto gemv = [](const BatchedSolution& s) { return s.tile().family == BatchedFamily::kGemv; };
    int m_max = std::numeric_limits<int>::max();
    for (const auto& s : solutions_)
      if (gemv(*s) && s->tile().m_max < m_max && s->can_implement(p)) m_max = s->tile().m_max;
    std::vector<SolutionPtr> out;
    for (const auto& s : solutions_)
      if ((!gemv(*s) || s->tile().m_max == m_max) && s->can_implement(p)) out.push_back(s);
    return out;
  }

  // No default: cuBLASLt stays batched_gemm's default until these are measured against it.
  SolutionPtr default_solution(const GemmProblem&) const override { return nullptr; }

  const BatchedSolutions& solutions() const { return solutions_; }

 private:
  BatchedSolutions solutions_;
  std::unordered_map<std::string, SolutionPtr> by_name_;
};

}  // namespace
}  // namespace tgemm::skinny

namespace tgemm {

std::vector<SolutionPtr> batched_skinny_solutions() {
  const auto solutions = skinny::make_batched_solutions();
  return std::vector<SolutionPtr>(solutions.begin(), solutions.end());
}

void register_batched_skinny_solutions(Registry& registry) {
  registry.add(std::make_unique<skinny::BatchedSkinnyBackend>());
}

}  // namespace tgemm
