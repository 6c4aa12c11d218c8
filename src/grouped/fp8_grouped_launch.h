// Launcher of the FP8 block-scaled grouped GEMM kernels (include/tgemm/grouped_fp8.h); host-only
// declarations, kernels in src/grouped/fp8_grouped_tiled.cu.
#pragma once

#include <cstdint>

#include "core/validate_grouped_fp8.h"
#include "tgemm/tensor.h"

namespace tgemm {

// One launch, no workspace, no host synchronisation: the contiguous or the masked layout by
// p.masked. Preconditions: a validated call with rows > 0 and n > 0 (and groups > 0 if masked).
// run_if (contiguous only): null, or a device int32 the kernel reads first; where it is 0 every
// CTA returns without touching out (the CUTLASS path launches the tile kernel behind its flag).
void launch_fp8_grouped_tiled(const Fp8GroupedProblem& p, const Fp8GroupedArgs& args, Stream stream,
                              const std::int32_t* run_if = nullptr);

}  // namespace tgemm
