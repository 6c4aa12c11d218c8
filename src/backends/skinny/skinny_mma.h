// The skinny backend's two tensor-core families as solutions: the weight-as-A MMA
// (kernels/sm90/sm90_skinny_mma_weight_a.cuh) and the weight-as-B MMA
// (kernels/sm90/sm90_skinny_mma_weight_b.cuh). Both split K over a (1, split_k, 1) cluster chosen at
// launch, so one solution is a tile and a split_k (1, 2, 4, 8); names in skinny_names.h.
#pragma once

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/skinny/skinny_common.h"
#include "backends/skinny/skinny_names.h"
#include "core/check.h"
#include "core/registry.h"

namespace tgemm::skinny {

inline std::string mma_name(const MmaWeightATile& t, int split_k, SkinnyOperands) {
  return mma_weight_a_name(t, split_k);  // 16-bit instances only
}
inline std::string mma_name(const MmaWeightBTile& t, int split_k, SkinnyOperands operands) {
  return mma_weight_b_name(t, split_k, operands);
}

// One tile of an MMA family (Tile: MmaWeightATile or MmaWeightBTile) at one cluster split-K.
template <class Tile>
class MmaSolution final : public Solution {
 public:
  using Kernel = SplitKKernel<Tile>;

  // kernels: the tile's instances by dtype slot, all of one operand class (skinny_common.h).
  MmaSolution(const Tile& tile, int split_k, SkinnyOperands operands,
              const typename DtypeKernels<Kernel>::Slots& kernels)
      : tile_(tile), split_k_(split_k), kernels_(kernels), name_(mma_name(tile, split_k, operands)) {}

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kLibtype; }
  int split_k() const override { return split_k_; }

  bool can_implement(const GemmProblem& p) const noexcept override {
    if (p.a_type != p.b_type || kernels_.get(p.a_type) == nullptr) return false;  // built dtypes
    if (!accepts_operands(p, tile_.m_tile)) return false;
    return is_sm90(p.device) && info(p.a_type).ptx_arch >= 90;
  }

  std::size_t workspace_size(const GemmProblem&) const override { return 0; }

  void run(const GemmProblem& p, const GemmArgs& args, const Workspace&, Stream stream) const override {
    TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
    kernels_.get(p.a_type)->launch(p, args, split_k_, stream, name_.c_str());
  }

  const Tile& tile() const { return tile_; }

  // Resident CTAs per SM of the first dtype's kernel (bf16 and fp16 have the same resources), >= 1.
  int ctas_per_sm() const { return std::max(1, info(kernels_.any()).ctas_per_sm); }

 private:
  SkinnyKernelInfo info(DType t) const noexcept {
    return kernels_.info(t, [&](const Kernel& k) { return k.query(split_k_); });
  }

  Tile tile_;
  int split_k_;
  DtypeKernels<Kernel> kernels_;
  std::string name_;
};

using MmaWeightASolution = MmaSolution<MmaWeightATile>;
using MmaWeightBSolution = MmaSolution<MmaWeightBTile>;

struct MmaSolutions {
  std::vector<std::shared_ptr<const MmaWeightASolution>> weight_a;
  std::vector<std::shared_ptr<const MmaWeightBSolution>> weight_b;
};

// Every MMA solution of this build: each tile of the instance lists with split_k 1, 2, 4, 8.
MmaSolutions make_mma_solutions();

// The smallest M tile of either family that can implement p (a larger one reads more x and holds
// more registers for the same weight stream, so it never wins); INT_MAX if none can.
int smallest_mma_m_tile(const MmaSolutions& s, const GemmProblem& p);

// Whether s is a candidate for p among tiles of M tile m_tile: it is one, it can implement p, and
// its split leaves every k-part at least one k-step.
template <class Tile>
bool is_mma_candidate(const MmaSolution<Tile>& s, const GemmProblem& p, int m_tile) {
  if (s.tile().m_tile != m_tile || !s.can_implement(p)) return false;
  const std::int64_t steps = ceil_div(p.k, s.tile().k_step(chunk_elems(p.b_type)));
  return s.split_k() == 1 || std::int64_t{s.split_k()} * s.tile().warps_k <= steps;
}

// The candidates of both families for p: weight-as-A, then weight-as-B, each in registration order.
void append_mma_candidates(const MmaSolutions& s, const GemmProblem& p, std::vector<SolutionPtr>& out);

}  // namespace tgemm::skinny
