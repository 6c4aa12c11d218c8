// Every backend of this build, in the order their defaults are offered: specialised kernels
// first (they decline problems they do not win), the staged GELU default, cuBLASLt's heuristic
// next, the reference last.
#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/cutlass/cutlass_backend.h"
#include "backends/reference/reference_backend.h"
#include "backends/skinny/skinny_backend.h"
#include "backends/skinny/skinny_batched.h"
#include "backends/split/split_backend.h"
#include "cuda/elementwise.h"
#include "runtime/runtime.h"

namespace tgemm {

void register_all_backends(Registry& registry) {
  register_skinny_solutions(registry);
  register_batched_skinny_solutions(registry);
  register_cutlass_solutions(registry);
  // Bias splitting: another backend's plain product, then out = act(out + bias) in one pass.
  // Before cuBLASLt, whose fp32-staged erf-GELU path its default rule replaces at large M.
  register_split_solutions(registry, [](const GemmProblem& p, const GemmArgs& args, Stream stream) {
    epilogue_rows(gemm_epilogue(p, args, ProductAt::kOut), stream);
  });
  register_cublaslt_solutions(registry);
  register_reference_solutions(registry);
}

}  // namespace tgemm
