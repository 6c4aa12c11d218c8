// Public GEMM entry points: validate, return early on empty problems, resolve, run.
#include "core/validate.h"
#include "runtime/elementwise.h"
#include "runtime/runtime.h"
#include "tgemm/gemm.h"

namespace tgemm {

void gemm_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                 const GemmOptions& options, Stream stream) {
  GemmCall call = validate_a16w16(x, w, out, options);
  GemmProblem& p = call.problem;
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    // An empty sum: out = bias (or 0). No GEMM backend is asked to handle K = 0.
    epilogue_rows(call.args.out, p.out_type, p.ldo, nullptr, 0, p.m, p.n, call.args.bias, p.bias_type, stream);
    return;
  }
  Runtime& rt = Runtime::get();
  p.device = rt.platform().current_device();
  const Resolution& r = rt.dispatcher().resolve(p);
  Workspace ws = rt.workspaces().get(p.device, stream, r.solution->workspace_size(p));
  r.solution->run(p, call.args, ws, stream);
}

DispatchInfo describe_gemm_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                                  const GemmOptions& options) {
  GemmCall call = validate_a16w16(x, w, out, options);
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
