// The a8w8 dequantizing epilogue (scale_epilogue.h): one thread per element, grid-stride. It
// reads 4 (int32/fp32) bytes and writes 2-4 per element, so it runs near copy bandwidth without
// vectorised accesses only at large N; it is the path of the products cuBLASLt cannot scale
// itself (int8, and FP8 where its scale modes do not apply), to be replaced by fused epilogues
// where the tuner measures them faster.
// Tested by tests/gpu/test_gemm_a8w8.cpp (every scale recipe, bias and out dtype, int8 and FP8) and,
// over a batch, tests/gpu/test_batched_a8w8.cpp;
// repack_scales by tests/gpu/test_gemm_a8w8_blockscale.cpp (both x_scale layouts, padded M).
#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/scale_epilogue.h"
#include "kernels/common/numeric.cuh"

namespace tgemm {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float acc_as_float(const float* p, std::int64_t i) { return p[i]; }
__device__ __forceinline__ float acc_as_float(const std::int32_t* p, std::int64_t i) {
  return static_cast<float>(p[i]);
}

template <typename Acc, typename Out, typename Bias>
__global__ void __launch_bounds__(kThreads) scale_rows_kernel(ScaleEpilogueParams p) {
  auto* out = static_cast<Out*>(p.out);
  const auto* acc = static_cast<const Acc*>(p.acc);
  const auto* bias = static_cast<const Bias*>(p.bias);
  const std::int64_t plane = p.m * p.n;
  const std::int64_t total = p.batch * plane;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = i / plane, e = i % plane;
    const std::int64_t r = e / p.n, col = e % p.n;
    const float xs = p.a_scale[b * p.batch_a_scale + (p.a_per_row ? r : 0)];
    const float ws = p.b_scale[b * p.batch_b_scale + (p.b_per_col ? col : 0)];
    float v = acc_as_float(acc, b * p.batch_acc + r * p.ld_acc + col) * xs * ws;
    if (bias) v += to_float(bias[col]);
    out[b * p.batch_out + r * p.ldo + col] = from_float<Out>(v);
  }
}

__global__ void broadcast_scale_kernel(const float* src, float* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = *src;
  }
}

// One thread per destination element, consecutive threads along a destination row: the writes
// coalesce; the reads are strided when the copy transposes, which a few MB of scales tolerate.
__global__ void repack_scales_kernel(ScaleRepack r) {
  const std::int64_t total = r.rows * r.dst_ld;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / r.dst_ld, col = i % r.dst_ld;
    r.dst[i] = col < r.cols ? r.src[row * r.src_stride_r + col * r.src_stride_c] : 0.0f;
  }
}

int blocks_for(std::int64_t total) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>((total + kThreads - 1) / kThreads, 65535)));
}

template <typename Acc, typename Out>
void launch_for_bias(const ScaleEpilogueParams& p, cudaStream_t stream) {
  const int blocks = blocks_for(p.batch * p.m * p.n);
  switch (p.bias_type) {
    case DType::kBFloat16: scale_rows_kernel<Acc, Out, bf16><<<blocks, kThreads, 0, stream>>>(p); break;
    case DType::kFloat16: scale_rows_kernel<Acc, Out, fp16><<<blocks, kThreads, 0, stream>>>(p); break;
    default: scale_rows_kernel<Acc, Out, float><<<blocks, kThreads, 0, stream>>>(p); break;
  }
}

template <typename Acc>
void launch_for_out(const ScaleEpilogueParams& p, cudaStream_t stream) {
  switch (p.out_type) {
    case DType::kBFloat16: return launch_for_bias<Acc, bf16>(p, stream);
    case DType::kFloat16: return launch_for_bias<Acc, fp16>(p, stream);
    case DType::kFloat32: return launch_for_bias<Acc, float>(p, stream);
    default: detail::throw_error("scale_rows", "unsupported out dtype ", dtype_name(p.out_type));
  }
}

}  // namespace

ScaleEpilogueParams a8w8_epilogue(const GemmProblem& p, const GemmArgs& args, const void* acc, DType acc_type) {
  ScaleEpilogueParams e;
  e.out = args.out;
  e.out_type = p.out_type;
  e.ldo = p.ldo;
  e.acc = acc;
  e.acc_type = acc_type;
  e.ld_acc = p.n;
  e.a_scale = args.a_scale;
  e.a_per_row = p.a_scale == ScaleGranularity::kRow;
  e.b_scale = args.b_scale;
  e.b_per_col = p.b_scale == ScaleGranularity::kRow;
  e.bias = p.has_bias() ? args.bias : nullptr;
  e.bias_type = p.bias_type;
  e.m = p.m;
  e.n = p.n;
  e.batch = p.batch;
  e.batch_out = p.batch_stride_out;
  e.batch_acc = p.m * p.n;
  e.batch_a_scale = p.batch_stride_a_scale;
  e.batch_b_scale = p.batch_stride_b_scale;
  return e;
}

void scale_rows(const ScaleEpilogueParams& p, Stream s) {
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  auto stream = reinterpret_cast<cudaStream_t>(s);
  if (p.acc_type == DType::kInt32) {
    launch_for_out<std::int32_t>(p, stream);
  } else {
    launch_for_out<float>(p, stream);
  }
  TGEMM_CUDA_CHECK_LAUNCH("scale_rows");
}

void repack_scales(const ScaleRepack& r, Stream s) {
  if (r.rows == 0 || r.dst_ld == 0) return;
  repack_scales_kernel<<<blocks_for(r.rows * r.dst_ld), kThreads, 0, reinterpret_cast<cudaStream_t>(s)>>>(r);
  TGEMM_CUDA_CHECK_LAUNCH("repack_scales");
}

void broadcast_scale(const float* src, float* dst, std::int64_t n, Stream s) {
  if (n == 0) return;
  broadcast_scale_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(s)>>>(src, dst, n);
  TGEMM_CUDA_CHECK_LAUNCH("broadcast_scale");
}

}  // namespace tgemm
