// The skinny backend's GEMV family as solutions (kernels/sm90/sm90_skinny_gemv.cuh): CUDA cores,
// M <= 4, no split-K. One solution per tile and row-split policy; names in skinny_names.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/skinny/skinny_common.h"
#include "core/registry.h"

namespace tgemm::skinny {

class GemvSolution final : public Solution {
 public:
  // kernels: the tile's instances by dtype slot, all of one operand class (skinny_common.h).
  GemvSolution(const GemvTile& tile, SkinnyOperands operands, const DtypeKernels<GemvKernel>::Slots& kernels);

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kLibtype; }
  int split_k() const override { return 1; }
  bool can_implement(const GemmProblem& p) const noexcept override;
  std::size_t workspace_size(const GemmProblem&) const override { return 0; }
  void run(const GemmProblem& p, const GemmArgs& args, const Workspace&, Stream stream) const override;

  const GemvTile& tile() const { return tile_; }

 private:
  SkinnyKernelInfo info(DType t) const noexcept;

  GemvTile tile_;
  DtypeKernels<GemvKernel> kernels_;
  std::string name_;
};

using GemvSolutions = std::vector<std::shared_ptr<const GemvSolution>>;

// Every GEMV solution of this build: each tile of the instance list twice, with the default row
// split and with whole passes (GemvTile::whole; the split is a launch argument, so no more
// instances).
GemvSolutions make_gemv_solutions();

// The solutions with the smallest token count (tile().m_max) that can implement p: a larger one
// reads more x for the same weight stream.
void append_gemv_candidates(const GemvSolutions& solutions, const GemmProblem& p, std::vector<SolutionPtr>& out);

}  // namespace tgemm::skinny
