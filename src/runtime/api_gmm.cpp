// Public gmm entry point: validate, return early on empty problems, run the CUTLASS grouped kernel
// where src/grouped/gmm_cutlass.h's rule picks it, the tile kernels otherwise.
#include "core/validate.h"
#include "grouped/gmm_launch.h"
#include "runtime/runtime.h"
#include "tgemm/gmm.h"

namespace tgemm {

void gmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
         bool transpose_rhs, const TensorView* bias, Stream stream) {
  const GmmCall call = validate_gmm(lhs, rhs, group_sizes, out, transpose_rhs, bias);
  const GmmProblem& p = call.problem;
  if (p.m == 0 || p.n == 0) return;
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  if (const auto* k = select_gmm_cutlass(p, call.args, device)) {
    Workspace ws = rt.workspaces().get(device, stream, gmm_cutlass_workspace_bytes(p, *k, device));
    launch_gmm_cutlass(p, call.args, *k, ws.data, device, stream);
    return;
  }
  Workspace ws = rt.workspaces().get(device, stream, gmm_workspace_bytes(p));
  launch_gmm_tiled(p, call.args, ws.data, stream);
}

}  // namespace tgemm
