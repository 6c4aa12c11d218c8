// MXFP4 entry points (include/tgemm/fp4.h): validate, return early where nothing is to be
// written, launch on the caller's stream. gemm_a16w4 takes the decode GEMV
// (kernels/sm90/sm90_mxfp4_gemv.cuh) where M <= 16 and the rows it reads with 16-byte loads are
// aligned, else dequantizes w to x's dtype (kernels/common/mxfp4.cuh) and runs gemm_a16w16.
#include <cstdint>
#include <limits>

#include "core/check.h"
#include "cuda/cuda_check.h"
#include "fp4/fp4_validate.h"
#include "kernels/common/mxfp4.cuh"
#include "kernels/sm90/sm90_mxfp4_gemv.cuh"
#include "tgemm/fp4.h"
#include "tgemm/gemm.h"

namespace tgemm {
namespace {

// The GEMV's largest M: above it the dequantized weight meets tensor cores (gemm_a16w16) and the
// read of the weight stops being the whole cost.
constexpr std::int64_t kGemvMaxM = 16;
constexpr int kGemvWarps = 4;
// 16-byte weight chunks a lane has in flight: 4 x 16 bytes x 32 lanes = 2 KiB a warp, a whole
// 4096-wide row (128 chunks) in one pass; 8 KiB a CTA of 4 warps.
constexpr int kGemvChunks = 4;

unsigned block_grid(std::int64_t blocks, const char* op) {
  const std::int64_t grid = (blocks + mxfp4::kThreads - 1) / mxfp4::kThreads;
  TGEMM_CHECK(grid <= std::numeric_limits<std::int32_t>::max(), op, blocks,
              " blocks of 32 values are more than one launch covers");
  return static_cast<unsigned>(grid);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

int type_code(DType t) { return t == DType::kBFloat16 ? 0 : (t == DType::kFloat16 ? 1 : 2); }

template <typename T, int M_MAX>
void launch_gemv(const kernels::Mxfp4GemvParams& p, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>((p.n + kGemvWarps - 1) / kGemvWarps);
  kernels::sm90_mxfp4_gemv<T, M_MAX, kGemvWarps, kGemvChunks><<<grid, 32 * kGemvWarps, 0, stream>>>(p);
}

template <typename T>
void run_gemv(const A16W4Call& c, cudaStream_t stream) {
  kernels::Mxfp4GemvParams p{};
  p.x = c.x;
  p.ldx = c.ldx;
  p.w = c.w;
  p.ldw = c.ldw;
  p.w_scale = c.w_scale;
  p.ld_scale = c.ld_scale;
  p.out = c.out;
  p.ldo = c.ldo;
  p.out_type = type_code(c.out_type);
  p.bias = c.bias;
  p.bias_type = type_code(c.bias_type);
  p.m = static_cast<int>(c.m);
  p.n = static_cast<int>(c.n);
  p.k = static_cast<int>(c.k);
  if (c.m == 1) {
    launch_gemv<T, 1>(p, stream);
  } else if (c.m <= 4) {
    launch_gemv<T, 4>(p, stream);
  } else {
    launch_gemv<T, 16>(p, stream);
  }
}

// 16-byte loads of x's and w's rows: bases and row strides multiples of 16 bytes (a single row's
// stride is never used).
bool gemv_fits(const A16W4Call& c) {
  return c.m <= kGemvMaxM && c.k >= mxfp4::kBlock && aligned16(c.x) && (c.m == 1 || (c.ldx * 2) % 16 == 0) &&
         aligned16(c.w) && (c.n == 1 || c.ldw % 16 == 0);
}

void run_dequant_gemm(const A16W4Call& c, const TensorView& x, const TensorView& out, const TensorView* bias,
                      cudaStream_t stream, const char* op) {
  const std::size_t bytes = static_cast<std::size_t>(c.n) * static_cast<std::size_t>(c.k) * 2;
  void* ws = nullptr;
  if (bytes > 0) {
    // Stream-ordered, so it is neither the runtime's GEMM workspace (which gemm_a16w16 uses below)
    // nor a synchronizing allocation, and is captured as an allocation node inside a CUDA graph.
    TGEMM_CUDA_CHECK(cudaMallocAsync(&ws, bytes, stream), op);
    const unsigned grid = block_grid(c.n * (c.k / mxfp4::kBlock), op);
    if (c.x_type == DType::kBFloat16) {
      mxfp4::dequant_kernel<bf16>
          <<<grid, mxfp4::kThreads, 0, stream>>>(c.w, c.ldw, c.w_scale, c.ld_scale, static_cast<bf16*>(ws), c.n, c.k);
    } else {
      mxfp4::dequant_kernel<fp16>
          <<<grid, mxfp4::kThreads, 0, stream>>>(c.w, c.ldw, c.w_scale, c.ld_scale, static_cast<fp16*>(ws), c.n, c.k);
    }
    const cudaError_t launch = cudaGetLastError();
    if (launch != cudaSuccess) {
      cudaFreeAsync(ws, stream);
      TGEMM_CUDA_CHECK(launch, op);
    }
  }
  const TensorView w16 = TensorView::contiguous(ws, c.x_type, {c.n, c.k});
  GemmOptions options;
  options.bias = bias;
  try {
    gemm_a16w16(x, w16, out, options, reinterpret_cast<Stream>(stream));
  } catch (...) {
    if (ws != nullptr) cudaFreeAsync(ws, stream);
    throw;
  }
  if (ws != nullptr) TGEMM_CUDA_CHECK(cudaFreeAsync(ws, stream), op);
}

}  // namespace

void quant_mxfp4(const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream) {
  constexpr const char* kOp = "quant_mxfp4";
  const Mxfp4QuantCall c = validate_quant_mxfp4(x, q, scale, kOp);
  if (c.m == 0 || c.k == 0) return;
  const unsigned grid = block_grid(c.m * (c.k / mxfp4::kBlock), kOp);
  auto* s = reinterpret_cast<cudaStream_t>(stream);
  if (c.x_type == DType::kBFloat16) {
    mxfp4::quant_kernel<bf16><<<grid, mxfp4::kThreads, 0, s>>>(static_cast<const bf16*>(c.x), c.ldx, c.q, c.ldq,
                                                               c.scale, c.ld_scale, c.m, c.k);
  } else {
    mxfp4::quant_kernel<fp16><<<grid, mxfp4::kThreads, 0, s>>>(static_cast<const fp16*>(c.x), c.ldx, c.q, c.ldq,
                                                               c.scale, c.ld_scale, c.m, c.k);
  }
  TGEMM_CUDA_CHECK_LAUNCH(kOp);
}

void gemm_a16w4(const TensorView& x, const TensorView& w, const TensorView& w_scale, const TensorView& out,
                const TensorView* bias, Stream stream) {
  constexpr const char* kOp = "gemm_a16w4";
  const A16W4Call c = validate_a16w4(x, w, w_scale, out, bias, kOp);
  if (c.m == 0 || c.n == 0) return;
  auto* s = reinterpret_cast<cudaStream_t>(stream);
  if (gemv_fits(c)) {
    if (c.x_type == DType::kBFloat16) {
      run_gemv<bf16>(c, s);
    } else {
      run_gemv<fp16>(c, s);
    }
    TGEMM_CUDA_CHECK_LAUNCH(kOp);
    return;
  }
  run_dequant_gemm(c, x, out, bias, s, kOp);
}

}  // namespace tgemm
