// Launcher of the FP8 block-scaled grouped GEMM kernels (include/tgemm/grouped_fp8.h); host-only
// declarations, kernels in src/grouped/fp8_grouped_tiled.cu.
#pragma once

#include "core/validate_grouped_fp8.h"
#include "tgemm/tensor.h"

namespace tgemm {

// One launch, no workspace, no host synchronisation: the contiguous or the masked layout by
// p.masked. Preconditions: a validated call with rows > 0 and n > 0 (and groups > 0 if masked).
void launch_fp8_grouped_tiled(const Fp8GroupedProblem& p, const Fp8GroupedArgs& args, Stream stream);

}  // namespace tgemm
