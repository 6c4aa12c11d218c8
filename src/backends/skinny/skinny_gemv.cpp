#include "backends/skinny/skinny_gemv.h"

#include <limits>

#include "backends/skinny/skinny_names.h"
#include "core/check.h"

namespace tgemm::skinny {

GemvSolution::GemvSolution(const GemvTile& tile, SkinnyOperands operands,
                           const DtypeKernels<GemvKernel>::Slots& kernels)
    : tile_(tile), kernels_(kernels), name_(gemv_name(tile, operands)) {}

bool GemvSolution::can_implement(const GemmProblem& p) const noexcept {
  if (p.a_type != p.b_type || kernels_.get(p.a_type) == nullptr) return false;
  if (!accepts_operands(p, tile_.m_max)) return false;
  if (ceil_div(p.n, tile_.rows_per_cta(p.k, chunk_elems(p.a_type))) > std::numeric_limits<std::int32_t>::max())
    return false;
  return is_sm90(p.device) && info(p.a_type).ptx_arch >= 90;
}

void GemvSolution::run(const GemmProblem& p, const GemmArgs& args, const Workspace&, Stream stream) const {
  TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
  kernels_.get(p.a_type)->launch(p, args, tile_.segs(p.k, chunk_elems(p.a_type)), stream, name_.c_str());
}

SkinnyKernelInfo GemvSolution::info(DType t) const noexcept {
  return kernels_.info(t, [](const GemvKernel& k) { return k.query(); });
}

GemvSolutions make_gemv_solutions() {
  std::vector<GemvKernel> kernels;
  append_gemv_kernels_bf16(kernels);
  append_gemv_kernels_fp8(kernels);
#ifndef TGEMM_SKINNY_CI_SUBSET
  append_gemv_kernels_fp16(kernels);
  append_gemv_kernels_int8(kernels);
#endif
  std::vector<GemvKernel> whole = kernels;
  for (GemvKernel& k : whole) k.tile.whole = true;
  kernels.insert(kernels.end(), whole.begin(), whole.end());
  GemvSolutions out;
  for (const auto& g : group_by_tile(kernels))
    out.push_back(std::make_shared<GemvSolution>(g.tile, g.operands, g.kernels));
  return out;
}

void append_gemv_candidates(const GemvSolutions& solutions, const GemmProblem& p, std::vector<SolutionPtr>& out) {
  int m_max = std::numeric_limits<int>::max();
  for (const auto& s : solutions)
    if (s->tile().m_max < m_max && s->can_implement(p)) m_max = s->tile().m_max;
  for (const auto& s : solutions)
    if (s->tile().m_max == m_max && s->can_implement(p)) out.push_back(s);
}

}  // namespace tgemm::skinny
