#include "backends/skinny/skinny_mma.h"

namespace tgemm::skinny {
namespace {

// Cluster split-K factors registered for every tile; 8 is the portable cluster-size limit.
constexpr int kSplitKs[] = {1, 2, 4, 8};

template <class Tile>
std::vector<std::shared_ptr<const MmaSolution<Tile>>> solutions_of(const std::vector<SplitKKernel<Tile>>& kernels) {
  std::vector<std::shared_ptr<const MmaSolution<Tile>>> out;
  for (const auto& g : group_by_tile(kernels))
    for (int sk : kSplitKs) out.push_back(std::make_shared<MmaSolution<Tile>>(g.tile, sk, g.operands, g.kernels));
  return out;
}

}  // namespace

MmaSolutions make_mma_solutions() {
  std::vector<MmaWeightAKernel> weight_a;
  std::vector<MmaWeightBKernel> weight_b;
  append_mma_weight_a_kernels_bf16_small(weight_a);
  append_mma_weight_b_kernels_bf16(weight_b);
  append_mma_weight_b_kernels_fp8(weight_b);
#ifndef TGEMM_SKINNY_CI_SUBSET
  append_mma_weight_b_kernels_int8(weight_b);
  append_mma_weight_a_kernels_bf16_large(weight_a);
  append_mma_weight_a_kernels_fp16_small(weight_a);
  append_mma_weight_a_kernels_fp16_large(weight_a);
  append_mma_weight_b_kernels_fp16(weight_b);
#endif
  return MmaSolutions{solutions_of(weight_a), solutions_of(weight_b)};
}

int smallest_mma_m_tile(const MmaSolutions& s, const GemmProblem& p) {
  int m_tile = std::numeric_limits<int>::max();
  for (const auto& a : s.weight_a)
    if (a->tile().m_tile < m_tile && a->can_implement(p)) m_tile = a->tile().m_tile;
  for (const auto& b : s.weight_b)
    if (b->tile().m_tile < m_tile && b->can_implement(p)) m_tile = b->tile().m_tile;
  return m_tile;
}

void append_mma_candidates(const MmaSolutions& s, const GemmProblem& p, std::vector<SolutionPtr>& out) {
  const int m_tile = smallest_mma_m_tile(s, p);
  for (const auto& a : s.weight_a)
    if (is_mma_candidate(*a, p, m_tile)) out.push_back(a);
  for (const auto& b : s.weight_b)
    if (is_mma_candidate(*b, p, m_tile)) out.push_back(b);
}

}  // namespace tgemm::skinny
