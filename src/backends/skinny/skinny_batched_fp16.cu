// Batched skinny kernel instances, fp16 inputs: every tile of skinny_batched_names.h's lists. One
// translation unit per dtype so the build parallelises and CI can prune.
#include "backends/skinny/skinny_batched_launch.cuh"

namespace tgemm::skinny {

void append_batched_kernels_fp16(std::vector<BatchedKernel>& out) { append_batched_kernels<fp16>(out); }

}  // namespace tgemm::skinny
