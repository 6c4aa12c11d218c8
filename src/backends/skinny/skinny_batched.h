// The batched skinny backend (libtype "batched_skinny", skinny_batched_names.h): its kernel
// instances as host code sees them, and its registration. The kernels are
// kernels/sm90/sm90_batched_skinny.cuh; the instance translation units skinny_batched_<dtype>.cu.
// It offers no default: cuBLASLt's strided-batched solution stays batched_gemm's default until
// measurements say where these win (docs/performance.md); a tuned table row names them.
#pragma once

#include <vector>

#include "backends/skinny/skinny_batched_names.h"
#include "backends/skinny/skinny_kernels.h"
#include "core/registry.h"

namespace tgemm::skinny {

// One tile's instance for one input dtype.
struct BatchedKernel {
  BatchedTile tile;
  DType in = DType::kBFloat16;
  // Enqueues the kernel over the whole batch: grid (ceil(N / tile.block_n()), B).
  void (*launch)(const GemmProblem& p, const GemmArgs& args, Stream stream, const char* where) = nullptr;
  SkinnyKernelInfo (*query)() = nullptr;
};

// The instances of every tile of skinny_batched_names.h's lists, per dtype (the CI build compiles
// bf16 only, TGEMM_SKINNY_CI_SUBSET).
void append_batched_kernels_bf16(std::vector<BatchedKernel>& out);
void append_batched_kernels_fp16(std::vector<BatchedKernel>& out);

}  // namespace tgemm::skinny

namespace tgemm {

void register_batched_skinny_solutions(Registry& registry);

// Every batched skinny solution of this build, in registration order (tests and tools).
std::vector<SolutionPtr> batched_skinny_solutions();

}  // namespace tgemm
