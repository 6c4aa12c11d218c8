// Public entry points of include/tgemm/grouped_fp8.h: validate, return early on empty problems,
// then run the CUTLASS blockwise-scaled grouped GEMM where it can take the call and is built and
// loadable on the device (src/grouped/fp8_cutlass.h), the tiled FP8 grouped kernel (no workspace)
// elsewhere. TGEMM_GROUPED_BACKEND=tile forces the tile kernel; =cutlass is the default rule.
#include "core/validate_grouped_fp8.h"
#include "grouped/fp8_cutlass.h"
#include "grouped/fp8_grouped_launch.h"
#include "runtime/runtime.h"
#include "tgemm/grouped_fp8.h"

namespace tgemm {

namespace fp8_cutlass {

bool uses_cutlass(const Fp8GroupedCall& call, int device) {
#if defined(TGEMM_HAVE_FP8_GROUPED_CUTLASS)
  const GroupedBackend backend = Runtime::get().dispatcher().settings().grouped_backend;
  const bool take = backend != GroupedBackend::kTile && can_take(call.problem, call.args);
  return choose_cutlass(take, take && loadable(device), backend);
#else
  (void)call;
  (void)device;
  return false;  // this build has no sm_90a target, so no CUTLASS instance
#endif
}

}  // namespace fp8_cutlass

namespace {

void run_fp8_grouped(const Fp8GroupedCall& call, Stream stream, const char* where) {
  const Fp8GroupedProblem& p = call.problem;
#if defined(TGEMM_HAVE_FP8_GROUPED_CUTLASS)
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  if (fp8_cutlass::uses_cutlass(call, device)) {
    const int sm_count = rt.platform().device_info(device).sm_count;
    Workspace ws = rt.workspaces().get(device, stream, fp8_cutlass::workspace_bytes(p, sm_count));
    fp8_cutlass::launch(p, call.args, ws.data, device, sm_count, stream, where);
    return;
  }
#else
  (void)where;
#endif
  launch_fp8_grouped_tiled(p, call.args, stream);
}

}  // namespace

void m_grouped_gemm_fp8_contiguous(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                                   const TensorView& w_scale, const TensorView& out, const TensorView& m_indices,
                                   Stream stream) {
  const Fp8GroupedCall call =
      validate_fp8_contiguous(x, x_scale, w, w_scale, out, m_indices, "m_grouped_gemm_fp8_contiguous");
  const Fp8GroupedProblem& p = call.problem;
  if (p.rows == 0 || p.n == 0) return;
  run_fp8_grouped(call, stream, "m_grouped_gemm_fp8_contiguous: CUTLASS grouped GEMM");
}

void m_grouped_gemm_fp8_masked(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                               const TensorView& w_scale, const TensorView& out, const TensorView& masked_m,
                               std::int64_t expected_m, Stream stream) {
  const Fp8GroupedCall call =
      validate_fp8_masked(x, x_scale, w, w_scale, out, masked_m, expected_m, "m_grouped_gemm_fp8_masked");
  const Fp8GroupedProblem& p = call.problem;
  if (p.groups == 0 || p.rows == 0 || p.n == 0) return;
  run_fp8_grouped(call, stream, "m_grouped_gemm_fp8_masked: CUTLASS grouped GEMM");
}

}  // namespace tgemm
