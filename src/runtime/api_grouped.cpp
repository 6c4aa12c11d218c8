// Public entry points of include/tgemm/grouped.h: validate, return early on empty problems, run
// the grouped kernels with the stream's workspace.
#include "core/validate_grouped.h"
#include "grouped/gmm_launch.h"
#include "runtime/runtime.h"
#include "tgemm/grouped.h"

namespace tgemm {
namespace {

Workspace stream_workspace(Stream stream, std::size_t bytes) {
  Runtime& rt = Runtime::get();
  return rt.workspaces().get(rt.platform().current_device(), stream, bytes);
}

void run_tgmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
              const TensorView* bias_grad, bool accumulate, bool persistent, const char* op, Stream stream) {
  const TgmmCall call = validate_tgmm(lhs, rhs, group_sizes, out, bias_grad, accumulate, persistent, op);
  const TgmmProblem& p = call.problem;
  if (p.k == 0 || p.groups == 0 || (p.n == 0 && !p.has_bias_grad)) return;
  Workspace ws = stream_workspace(stream, tgmm_workspace_bytes(p));
  launch_tgmm_tiled(p, call.args, ws.data, stream);
}

}  // namespace

void ptgmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
           const TensorView* bias_grad, bool accumulate, Stream stream) {
  run_tgmm(lhs, rhs, group_sizes, out, bias_grad, accumulate, true, "ptgmm", stream);
}

void nptgmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
            const TensorView* bias_grad, bool accumulate, Stream stream) {
  run_tgmm(lhs, rhs, group_sizes, out, bias_grad, accumulate, false, "nptgmm", stream);
}

void grouped_gemm(const TensorView& x, const TensorView& weights, const TensorView& expert_ids, const TensorView& out,
                  bool transpose_weights, const TensorView* topk_weights, Stream stream) {
  const GatherCall call =
      validate_grouped_gemm(x, weights, expert_ids, out, transpose_weights, topk_weights, "grouped_gemm");
  const GatherProblem& p = call.problem;
  if (p.tokens == 0 || p.n == 0 || (p.topk == 0 && !p.weighted)) return;
  Workspace ws = stream_workspace(stream, gather_workspace_bytes(p));
  launch_gather_tiled(p, call.args, ws.data, stream);
}

void m_grouped_gemm_masked(const TensorView& x, const TensorView& w, const TensorView& out, const TensorView& masked_m,
                           std::int64_t expected_m, Stream stream) {
  const MaskedCall call = validate_masked(x, w, out, masked_m, expected_m, "m_grouped_gemm_masked");
  const MaskedProblem& p = call.problem;
  if (p.groups == 0 || p.max_m == 0 || p.n == 0) return;
  launch_masked_tiled(p, call.args, stream);
}

}  // namespace tgemm
