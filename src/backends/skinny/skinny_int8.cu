// Skinny kernel instances, INT8 inputs (gemm_a8w8): the weight-as-B MMA tiles and the GEMV tiles
// (the lists are in skinny_kernels.h). One translation unit per dtype so the build parallelises
// and CI can prune.
#include <cstdint>

#include "backends/skinny/skinny_launch.cuh"

namespace tgemm::skinny {

void append_mma_weight_b_kernels_int8(std::vector<MmaWeightBKernel>& out) {
  append_mma_weight_b_kernels<std::int8_t>(out);
}

void append_gemv_kernels_int8(std::vector<GemvKernel>& out) { append_gemv_kernels<std::int8_t>(out); }

}  // namespace tgemm::skinny
