// Skinny GEMM instances: fp16 inputs, M tiles 8-16 (see skinny_kernels.h for the list).
// One translation unit per (dtype, M-tile group) so the build parallelises and CI can prune.
#include "backends/skinny/skinny_launch.cuh"

namespace tgemm::skinny {

void append_skinny_kernels_fp16_small(std::vector<SkinnyKernel>& out) {
  append_skinny_kernels<fp16, 8, 16>(out);
}

void append_skinny_stream_kernels_fp16_small(std::vector<SkinnyStreamKernel>& out) {
  append_skinny_stream_kernels<fp16, 8, 16>(out);
}

void append_skinny_gemv_kernels_fp16(std::vector<SkinnyGemvKernel>& out) {
  append_skinny_gemv_kernels<fp16>(out);
}

void append_skinny_bulk_kernels_fp16(std::vector<SkinnyBulkKernel>& out) {
  append_skinny_bulk_kernels<fp16>(out);
}

}  // namespace tgemm::skinny
