// Skinny kernel instances, bf16 inputs: the weight-as-A MMA tiles of M tile 32 (the list is in
// skinny_kernels.h). One translation unit per (dtype, group) so the build parallelises and CI can
// prune.
#include "backends/skinny/skinny_launch.cuh"

namespace tgemm::skinny {

void append_mma_weight_a_kernels_bf16_large(std::vector<MmaWeightAKernel>& out) {
  append_mma_weight_a_kernels<bf16, 32, 32>(out);
}

}  // namespace tgemm::skinny
