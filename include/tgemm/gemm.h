// Dense GEMM entry points. y = x @ w^T (+ bias), w laid out as in torch.nn.functional.linear.
#pragma once

#include <cstdint>
#include <string>

#include "tgemm/tensor.h"

namespace tgemm {

struct GemmOptions {
  // Optional bias [N], dtype of x or of out. Added once, in fp32, before the output cast.
  const TensorView* bias = nullptr;
};

// out[M,N] = x[M,K] @ w[N,K]^T (+ bias[N]).
//   x: bf16 or fp16, rank >= 2 flattened as F.linear does ([..., K] -> [M, K]); rows may have
//      any leading dimension but elements of a row are contiguous.
//   w: [N, K] of x's dtype, rows contiguous (any leading dimension >= K).
//   out: bf16, fp16 or fp32, shaped [..., N] like x with K replaced by N, rows contiguous.
// Empty problems (M = 0 or N = 0) launch nothing; K = 0 writes bias (or zeros).
// Runs on `stream` (nullptr: the legacy default stream) of the current device.
// Throws tgemm::Error for bad input, before anything is launched.
void gemm_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                 const GemmOptions& options = {}, Stream stream = nullptr);

// Where a call with these arguments is routed, without running it (first resolution of a shape
// runs the lookup walk and caches it, exactly as a real call would).
struct DispatchInfo {
  std::string level;        // exact | padded_m | pow2_m | nearest_m | default
  std::int64_t matched_m = -1;  // the M of the table row used, -1 for the default
  std::string file;         // table file of the row ("" for the default)
  int line = 0;             // line in that file
  std::string libtype;      // backend
  std::string kernel_name;  // full solution name
};
DispatchInfo describe_gemm_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                                  const GemmOptions& options = {});

}  // namespace tgemm
