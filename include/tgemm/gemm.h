// Dense GEMM entry points: out = act(alpha * (x @ w^T) + beta * c + bias), w laid out as in
// torch.nn.functional.linear. The plain form (alpha 1, beta 0, no activation) is F.linear.
#pragma once

#include <cstdint>
#include <string>

#include "tgemm/tensor.h"

namespace tgemm {

// Activation applied last, in fp32, before the output cast.
enum class Activation : std::uint8_t {
  kNone,
  kGelu,      // x * Phi(x) with the exact normal CDF (erf): F.gelu's default
  kGeluTanh,  // the tanh approximation: F.gelu(approximate="tanh")
  kRelu,
};

struct GemmOptions {
  // Optional bias [N], dtype of x or of out. Added once, in fp32, before the activation.
  const TensorView* bias = nullptr;
  Activation activation = Activation::kNone;
  // out = act(alpha * (x @ w^T) + beta * c + bias), all in fp32. c is [..., N] shaped like out,
  // out's dtype, rows contiguous; read only when beta != 0 (then required). c may be out itself
  // (the same view: accumulate in place) but must not otherwise overlap out or the inputs.
  float alpha = 1.0f;
  float beta = 0.0f;
  const TensorView* c = nullptr;
};

// out[M,N] = act(alpha * x[M,K] @ w[N,K]^T + beta * c[M,N] + bias[N]).
//   x: bf16 or fp16, rank >= 2 flattened as F.linear does ([..., K] -> [M, K]); rows may have
//      any leading dimension but elements of a row are contiguous.
//   w: [N, K] of x's dtype, rows contiguous (any leading dimension >= K).
//   out: bf16, fp16 or fp32, shaped [..., N] like x with K replaced by N, rows contiguous.
// Empty problems (M = 0 or N = 0) launch nothing; K = 0 writes bias (or zeros).
// Runs on `stream` (nullptr: the legacy default stream) of the current device.
// Throws tgemm::Error for bad input, before anything is launched.
void gemm_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                 const GemmOptions& options = {}, Stream stream = nullptr);

// The fused-epilogue forms of AITER's op list, each gemm_a16w16 with the matching options (so
// they are dispatched through the same tables, keyed by their epilogue).
// out = x @ w^T + bias
void gemm_bias(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& out,
               Stream stream = nullptr);
// out = gelu(x @ w^T (+ bias)); tanh_approximation selects F.gelu(approximate="tanh").
void gemm_gelu(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& out,
               bool tanh_approximation = false, Stream stream = nullptr);
// out = relu(x @ w^T (+ bias))
void gemm_relu(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& out,
               Stream stream = nullptr);
// out = alpha * (x @ w^T) + beta * c; c may be out (in-place accumulation).
void gemm_alpha_beta(const TensorView& x, const TensorView& w, const TensorView& c, float alpha, float beta,
                     const TensorView& out, Stream stream = nullptr);

// Where a call with these arguments is routed, without running it (first resolution of a shape
// runs the lookup walk and caches it, exactly as a real call would).
struct DispatchInfo {
  std::string level;        // exact | range | default
  std::int64_t matched_m = -1;  // the M of the table row used, -1 for the default
  std::string file;         // table file of the row ("" for the default)
  int line = 0;             // line in that file
  std::string libtype;      // backend
  std::string kernel_name;  // full solution name
};
DispatchInfo describe_gemm_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                                  const GemmOptions& options = {});

}  // namespace tgemm
