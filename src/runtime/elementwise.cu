// Elementwise helpers of the runtime. epilogue_rows: out = act(alpha * src + beta * c + bias) in
// fp32, cast to the output type; with src null it is the whole result of a GEMM with K = 0.
// Tested by tests/gpu/test_gemm_a16w16.cpp (K = 0, mixed input/output dtypes, epilogues).
#include "kernels/common/activation.cuh"
#include "kernels/common/numeric.cuh"
#include "runtime/cuda_check.h"
#include "runtime/elementwise.h"

namespace tgemm {
namespace {

template <typename Out, typename Bias>
__global__ void epilogue_rows_kernel(EpilogueParams p) {
  auto* out = static_cast<Out*>(p.out);
  const auto* c = static_cast<const Out*>(p.c);
  const auto* bias = static_cast<const Bias*>(p.bias);
  const int act = static_cast<int>(p.activation);
  const std::int64_t total = p.m * p.n;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / p.n, col = i % p.n;
    float v = p.src ? p.alpha * p.src[r * p.ld_src + col] : 0.0f;
    if (p.beta != 0.0f) v += p.beta * to_float(c[r * p.ldc + col]);
    if (bias) v += to_float(bias[col]);
    out[r * p.ldo + col] = from_float<Out>(kernels::activate(act, v));
  }
}

template <typename Out>
void launch_for_out(const EpilogueParams& p, cudaStream_t stream) {
  const std::int64_t total = p.m * p.n;
  const int blocks = static_cast<int>(std::min<std::int64_t>((total + 255) / 256, 65535));
  switch (p.bias_type) {
    case DType::kBFloat16:
      epilogue_rows_kernel<Out, bf16><<<blocks, 256, 0, stream>>>(p);
      break;
    case DType::kFloat16:
      epilogue_rows_kernel<Out, fp16><<<blocks, 256, 0, stream>>>(p);
      break;
    default:
      epilogue_rows_kernel<Out, float><<<blocks, 256, 0, stream>>>(p);
      break;
  }
}

}  // namespace

void epilogue_rows(const EpilogueParams& p, Stream s) {
  if (p.m == 0 || p.n == 0) return;
  auto stream = reinterpret_cast<cudaStream_t>(s);
  switch (p.out_type) {
    case DType::kBFloat16:
      launch_for_out<bf16>(p, stream);
      break;
    case DType::kFloat16:
      launch_for_out<fp16>(p, stream);
      break;
    case DType::kFloat32:
      launch_for_out<float>(p, stream);
      break;
    default:
      detail::throw_error("epilogue_rows", "unsupported out dtype ", dtype_name(p.out_type));
  }
  TGEMM_CUDA_CHECK_LAUNCH("epilogue_rows");
}

}  // namespace tgemm
