// Skinny kernel instances, bf16 inputs: the weight-as-A MMA tiles of M tile 8-16, the weight-as-B
// MMA tiles and the GEMV tiles (the lists are in skinny_kernels.h). One translation unit per
// (dtype, group) so the build parallelises and CI can prune.
#include "backends/skinny/skinny_launch.cuh"

namespace tgemm::skinny {

void append_mma_weight_a_kernels_bf16_small(std::vector<MmaWeightAKernel>& out) {
  append_mma_weight_a_kernels<bf16, 8, 16>(out);
}

void append_mma_weight_b_kernels_bf16(std::vector<MmaWeightBKernel>& out) { append_mma_weight_b_kernels<bf16>(out); }

void append_gemv_kernels_bf16(std::vector<GemvKernel>& out) { append_gemv_kernels<bf16>(out); }

}  // namespace tgemm::skinny
