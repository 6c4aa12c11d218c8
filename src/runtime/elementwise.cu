// Elementwise helpers of the runtime. epilogue_rows: out[i, j] = src[i, j] + bias[j] in fp32, cast
// to the output type; with src null it is the whole result of a GEMM with K = 0. Tested by
// tests/gpu/test_gemm_a16w16.cpp (K = 0 cases, mixed input/output dtypes).
#include "kernels/common/numeric.cuh"
#include "runtime/cuda_check.h"
#include "runtime/elementwise.h"

namespace tgemm {
namespace {

template <typename Out, typename Bias>
__global__ void epilogue_rows_kernel(Out* out, std::int64_t ldo, const float* src, std::int64_t ld_src,
                                     std::int64_t m, std::int64_t n, const Bias* bias) {
  std::int64_t total = m * n;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t r = i / n, c = i % n;
    float v = src ? src[r * ld_src + c] : 0.0f;
    if (bias) v += to_float(bias[c]);
    out[r * ldo + c] = from_float<Out>(v);
  }
}

template <typename Out>
void launch_for_out(void* out, std::int64_t ldo, const float* src, std::int64_t ld_src, std::int64_t m,
                    std::int64_t n, const void* bias, DType bias_type, cudaStream_t stream) {
  std::int64_t total = m * n;
  int blocks = static_cast<int>(std::min<std::int64_t>((total + 255) / 256, 65535));
  auto* o = static_cast<Out*>(out);
  switch (bias_type) {
    case DType::kBFloat16:
      epilogue_rows_kernel<<<blocks, 256, 0, stream>>>(o, ldo, src, ld_src, m, n, static_cast<const bf16*>(bias));
      break;
    case DType::kFloat16:
      epilogue_rows_kernel<<<blocks, 256, 0, stream>>>(o, ldo, src, ld_src, m, n, static_cast<const fp16*>(bias));
      break;
    default:
      epilogue_rows_kernel<<<blocks, 256, 0, stream>>>(o, ldo, src, ld_src, m, n, static_cast<const float*>(bias));
      break;
  }
}

}  // namespace

void epilogue_rows(void* out, DType out_type, std::int64_t ldo, const float* src, std::int64_t ld_src,
                   std::int64_t m, std::int64_t n, const void* bias, DType bias_type, Stream s) {
  if (m == 0 || n == 0) return;
  auto stream = reinterpret_cast<cudaStream_t>(s);
  switch (out_type) {
    case DType::kBFloat16:
      launch_for_out<bf16>(out, ldo, src, ld_src, m, n, bias, bias_type, stream);
      break;
    case DType::kFloat16:
      launch_for_out<fp16>(out, ldo, src, ld_src, m, n, bias, bias_type, stream);
      break;
    case DType::kFloat32:
      launch_for_out<float>(out, ldo, src, ld_src, m, n, bias, bias_type, stream);
      break;
    default:
      detail::throw_error("epilogue_rows", "unsupported out dtype ", dtype_name(out_type));
  }
  TGEMM_CUDA_CHECK_LAUNCH("epilogue_rows");
}

}  // namespace tgemm
