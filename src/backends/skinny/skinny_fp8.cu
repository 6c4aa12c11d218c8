// Skinny kernel instances, FP8 e4m3 inputs (gemm_a8w8): the weight-as-B MMA tiles and the GEMV
// tiles (the lists are in skinny_kernels.h). One translation unit per dtype so the build
// parallelises and CI can prune.
#include "backends/skinny/skinny_launch.cuh"

namespace tgemm::skinny {

void append_mma_weight_b_kernels_fp8(std::vector<MmaWeightBKernel>& out) {
  append_mma_weight_b_kernels<kernels::fp8e4m3>(out);
}

void append_gemv_kernels_fp8(std::vector<GemvKernel>& out) { append_gemv_kernels<kernels::fp8e4m3>(out); }

}  // namespace tgemm::skinny
