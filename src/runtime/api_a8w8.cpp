// Public a8w8 entry points: validate, return early on empty problems, resolve, run.
#include "core/validate.h"
#include "cuda/elementwise.h"
#include "runtime/runtime.h"
#include "tgemm/a8w8.h"

namespace tgemm {

void gemm_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias, Stream stream) {
  GemmCall call = validate_a8w8(x, w, x_scale, w_scale, out, bias);
  GemmProblem& p = call.problem;
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    // An empty sum scales to zero: out = bias (or zeros). No GEMM backend is asked to handle K = 0.
    epilogue_rows(gemm_epilogue(p, call.args, ProductAt::kNowhere), stream);
    return;
  }
  Runtime& rt = Runtime::get();
  p.device = rt.platform().current_device();
  const Resolution& r = rt.dispatcher().resolve(p);
  Workspace ws = rt.workspaces().get(p.device, stream, r.solution->workspace_size(p));
  r.solution->run(p, call.args, ws, stream);
}

DispatchInfo describe_gemm_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                const TensorView& w_scale, const TensorView& out, const TensorView* bias) {
  GemmCall call = validate_a8w8(x, w, x_scale, w_scale, out, bias);
  GemmProblem& p = call.problem;
  DispatchInfo info;
  if (p.m == 0 || p.n == 0 || p.k == 0) {
    info.level = "empty";
    info.libtype = "none";
    info.kernel_name = p.k == 0 ? "broadcast_bias" : "none";
    return info;
  }
  Runtime& rt = Runtime::get();
  p.device = rt.platform().current_device();
  const Resolution& r = rt.dispatcher().resolve(p);
  info.level = std::string(walk_level_name(r.level));
  info.matched_m = r.matched_m;
  info.file = r.file;
  info.line = r.line;
  info.libtype = std::string(r.solution->libtype());
  info.kernel_name = r.solution->name();
  return info;
}

}  // namespace tgemm
