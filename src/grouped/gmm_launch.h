// Launchers of the grouped GEMM (gmm) kernels; host-only declarations.
#pragma once

#include <cstddef>

#include "core/validate.h"

namespace tgemm {

// Workspace of one gmm call: the groups' row offsets and tile offsets (2 x (G + 2) int64).
std::size_t gmm_workspace_bytes(const GmmProblem& p);

// out = gmm(...) for a validated call with M > 0 and N > 0: a scan of group_sizes on the device
// into the workspace, then the tiled kernel. Never synchronises with the host.
void launch_gmm_tiled(const GmmProblem& p, const GmmArgs& args, void* workspace, Stream stream);

}  // namespace tgemm
