// Every backend of this build, in the order their defaults are offered: specialised kernels
// first (they decline problems they do not win), cuBLASLt's heuristic next, the reference last.
#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/cutlass/cutlass_backend.h"
#include "backends/reference/reference_backend.h"
#include "backends/skinny/skinny_backend.h"
#include "runtime/runtime.h"

namespace tgemm {

void register_all_backends(Registry& registry) {
  register_skinny_solutions(registry);
  register_cutlass_solutions(registry);
  register_cublaslt_solutions(registry);
  register_reference_solutions(registry);
}

}  // namespace tgemm
