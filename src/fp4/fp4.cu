// MXFP4 entry points (include/tgemm/fp4.h, and their forced forms src/fp4/fp4_forced.h):
// validate, return early where nothing is to be written, launch on the caller's stream.
// gemm_a16w4, gemm_a8w4 and gemm_a4w4 take the path of src/fp4/fp4_route.h: the decode GEMV
// (kernels/sm90/sm90_mxfp4_gemv.cuh, templated on the activation format) where M <= 4 (where
// forced, its several-rows-a-warp form, kernels/sm90/sm90_mxfp4_gemv_rows.cuh), the tensor-core
// weight-as-B kernel (kernels/sm90/sm90_mxfp4_mma.cuh; 16-bit and FP8 x) where M <= 32, both only
// where the rows they read with 16-byte loads are aligned; else w (and x where it is not 16-bit)
// dequantized to 16 bits (kernels/common/mxfp4.cuh) and gemm_a16w16.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <optional>

#include "core/check.h"
#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "fp4/fp4_forced.h"
#include "fp4/fp4_route.h"
#include "fp4/fp4_validate.h"
#include "kernels/common/mxfp4.cuh"
#include "kernels/sm90/sm90_mxfp4_gemv.cuh"
#include "kernels/sm90/sm90_mxfp4_gemv_rows.cuh"
#include "kernels/sm90/sm90_mxfp4_mma.cuh"
#include "runtime/runtime.h"
#include "tgemm/fp4.h"
#include "tgemm/gemm.h"

namespace tgemm {
namespace {

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

int type_code(DType t) { return t == DType::kBFloat16 ? 0 : (t == DType::kFloat16 ? 1 : 2); }

template <typename A, int M_MAX>
void launch_gemv(const kernels::Mxfp4GemvParams& p, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>((p.n + kGemvWarps - 1) / kGemvWarps);
  kernels::sm90_mxfp4_gemv<A, M_MAX, kGemvWarps, kGemvChunks><<<grid, 32 * kGemvWarps, 0, stream>>>(p);
}

kernels::Mxfp4GemvParams kernel_params(const W4GemmCall& c) {
  kernels::Mxfp4GemvParams p{};
  p.x = c.x;
  p.ldx = c.ldx;
  p.x_scale = c.x_scale;
  p.ld_x_scale = c.ld_x_scale;
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
  return p;
}

template <typename A>
void run_gemv(const W4GemmCall& c, cudaStream_t stream) {
  const kernels::Mxfp4GemvParams p = kernel_params(c);
  if (c.m == 1) {
    launch_gemv<A, 1>(p, stream);
  } else {
    launch_gemv<A, fp4_route::kGemvMaxM>(p, stream);
  }
}

void run_gemv_any(const W4GemmCall& c, cudaStream_t stream) {
  switch (c.x_type) {
    case DType::kBFloat16: run_gemv<bf16>(c, stream); break;
    case DType::kFloat16: run_gemv<fp16>(c, stream); break;
    case DType::kFloat8E4M3: run_gemv<kernels::Fp8E4M3>(c, stream); break;
    default:  // kUInt8: packed e2m1 codes (validate_a4w4)
      run_gemv<kernels::Mxfp4Codes>(c, stream);
      break;
  }
}

// The several-rows-a-warp GEMV (TGEMM_FP4_PATH=gemv_rows): rows a warp by N and M, the instance
// of 1, 2 or 4 tokens (3 runs as 4), the activation format's.
constexpr int kGemvRowsWarps = 4;

// 16-byte weight loads a lane has in flight (ROWS rows x CHUNKS chunks): 16 for one token (8 KiB a
// warp), 8 for more, whose sums, x values and FMAs take the registers (and whose FMAs take longer
// a byte, so that fewer bytes in flight keep up). The one-row GEMV keeps 4 (2 KiB a warp). Chosen
// so that no instance spills (ptxas -v, CUDA 13.0: 126-252 registers); unmeasured.
template <int M_MAX>
constexpr int kGemvRowsLoads = M_MAX == 1 ? 16 : 8;

// Weight rows a warp: the most of 8 (4 from 3 tokens on: 8 rows' 32 sums of 4 tokens leave no
// registers for the loads in flight), 4, 2 that still gives every SM 4 warps (ceil(N / rows) >= 4
// x the SM count), 2 where none does. Wider warps widen each x value for more rows but leave
// fewer warps to hide the loads' latency with. Unmeasured.
int gemv_rows_per_warp(std::int64_t n, std::int64_t m) {
  const int sms = cuda_sm_count(cuda_current_device());
  const std::int64_t want = 4 * std::int64_t{sms > 0 ? sms : 1};
  for (const int rows : {8, 4}) {
    if (rows == 8 && m > 2) continue;
    if ((n + rows - 1) / rows >= want) return rows;
  }
  return 2;
}

template <typename A, int M_MAX, int ROWS>
void launch_gemv_rows(const kernels::Mxfp4GemvParams& p, cudaStream_t stream) {
  constexpr int kRowsPerCta = ROWS * kGemvRowsWarps;
  const auto grid = static_cast<unsigned>((p.n + kRowsPerCta - 1) / kRowsPerCta);
  kernels::sm90_mxfp4_gemv_rows<A, M_MAX, ROWS, kGemvRowsWarps, kGemvRowsLoads<M_MAX> / ROWS>
      <<<grid, 32 * kGemvRowsWarps, 0, stream>>>(p);
}

template <typename A, int M_MAX>
void run_gemv_rows_m(const kernels::Mxfp4GemvParams& p, cudaStream_t stream) {
  const int rows = gemv_rows_per_warp(p.n, p.m);
  if constexpr (M_MAX <= 2) {
    if (rows == 8) return launch_gemv_rows<A, M_MAX, 8>(p, stream);
  }
  if (rows == 4) return launch_gemv_rows<A, M_MAX, 4>(p, stream);
  launch_gemv_rows<A, M_MAX, 2>(p, stream);
}

template <typename A>
void run_gemv_rows(const W4GemmCall& c, cudaStream_t stream) {
  const kernels::Mxfp4GemvParams p = kernel_params(c);
  if (c.m == 1) {
    run_gemv_rows_m<A, 1>(p, stream);
  } else if (c.m == 2) {
    run_gemv_rows_m<A, 2>(p, stream);
  } else {
    run_gemv_rows_m<A, 4>(p, stream);
  }
}

void run_gemv_rows_any(const W4GemmCall& c, cudaStream_t stream) {
  switch (c.x_type) {
    case DType::kBFloat16: run_gemv_rows<bf16>(c, stream); break;
    case DType::kFloat16: run_gemv_rows<fp16>(c, stream); break;
    case DType::kFloat8E4M3: run_gemv_rows<kernels::Fp8E4M3>(c, stream); break;
    default:  // kUInt8: packed e2m1 codes (validate_a4w4)
      run_gemv_rows<kernels::Mxfp4Codes>(c, stream);
      break;
  }
}

// The tensor-core kernel's tile: 2 n8 blocks (16 weight rows) a CTA, so that N = 576..1536 still
// gives 36..96 CTAs before split-K; 4 warps over K; 2 k-steps (2 x 16 bytes of codes a lane and
// n8 block) loaded before their MMAs with one token tile (M <= 16), 1 with two (M <= 32: their x
// loads and fragments double). Unmeasured starting point (docs/performance.md).
constexpr int kMmaRowBlocks = 2;
constexpr int kMmaWarps = 4;

template <typename A, int MT>
void run_mma(const W4GemmCall& c, cudaStream_t stream, const char* op) {
  constexpr int kUnroll = MT == 1 ? 2 : 1;
  using Shape = kernels::Mxfp4MmaShape<MT, kMmaRowBlocks, kMmaWarps, kUnroll>;
  constexpr auto kernel = &kernels::sm90_mxfp4_mma<A, MT, kMmaRowBlocks, kMmaWarps, kUnroll>;
  const std::int64_t tiles = (c.n + Shape::kRows - 1) / Shape::kRows;
  const std::int64_t steps = (c.k / mxfp4::kBlock + 3) / 4;
  TGEMM_CHECK(tiles <= std::numeric_limits<std::int32_t>::max(), op, "N = ", c.n, " is more than one launch covers");
  const int split_k = fp4_route::mma_split_k(tiles, steps, kMmaWarps, cuda_sm_count(cuda_current_device()));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(split_k), 1);
  config.blockDim = dim3(Shape::kThreads, 1, 1);
  config.dynamicSmemBytes = static_cast<std::size_t>(Shape::smem_bytes(split_k));
  config.stream = stream;
  cudaLaunchAttribute cluster{};
  if (split_k > 1) {
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = 1;
    cluster.val.clusterDim.y = static_cast<unsigned>(split_k);
    cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = 1;
  }
  TGEMM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, kernel_params(c)), op);
}

template <int MT>
void run_mma_tiles(const W4GemmCall& c, cudaStream_t stream, const char* op) {
  switch (c.x_type) {
    case DType::kBFloat16: run_mma<bf16, MT>(c, stream, op); break;
    case DType::kFloat16: run_mma<fp16, MT>(c, stream, op); break;
    default:  // kFloat8E4M3 (choose_w4_path takes no other x here)
      run_mma<kernels::Fp8E4M3, MT>(c, stream, op);
      break;
  }
}

// One token tile up to 16 tokens, two up to 32 (fp4_route::kMmaMaxM).
void run_mma_any(const W4GemmCall& c, cudaStream_t stream, const char* op) {
  if (c.m <= 16) {
    run_mma_tiles<1>(c, stream, op);
  } else {
    run_mma_tiles<2>(c, stream, op);
  }
}

// Stream-ordered scratch memory, so it is neither the runtime's GEMM workspace (which
// gemm_a16w16 uses) nor a synchronizing allocation, and is captured as an allocation node inside
// a CUDA graph. Freed on the stream by release() (checked) or, on an exception, the destructor.
class StreamScratch {
 public:
  StreamScratch(std::size_t bytes, cudaStream_t stream, const char* op) : stream_(stream) {
    if (bytes > 0) TGEMM_CUDA_CHECK(cudaMallocAsync(&base_, bytes, stream), op);
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch() {
    if (base_ != nullptr) cudaFreeAsync(base_, stream_);
  }
  char* at(std::size_t offset) const { return static_cast<char*>(base_) + offset; }
  void release(const char* op) {
    void* p = base_;
    base_ = nullptr;
    if (p != nullptr) TGEMM_CUDA_CHECK(cudaFreeAsync(p, stream_), op);
  }

 private:
  void* base_ = nullptr;
  cudaStream_t stream_;
};

// 256-byte aligned offsets of the scratch regions (16 bytes would do for the kernels; 256 keeps
// every region as aligned as a fresh allocation, which cuBLASLt's alignment checks reward).
std::size_t round_up_256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// The path above the register-decoding kernels' M (or for unaligned rows): w dequantized to 16
// bits (x's dtype for gemm_a16w4, else bf16), x widened (e4m3) or dequantized (e2m1) to bf16
// unless it is 16-bit already, then gemm_a16w16. Where x_scale is per tensor or token (gemm_a8w4)
// or the bias has a dtype gemm_a16w16 does not take (fp32 with a 16-bit out), gemm_a16w16 sums
// into fp32 (out itself when out is fp32) and scale_bias_kernel applies x_scale and bias and
// rounds once.
void run_dequant_gemm(const W4GemmCall& c, const TensorView& x, const TensorView& out, const TensorView* bias,
                      cudaStream_t stream, const char* op) {
  const bool x16 = c.x_type == DType::kBFloat16 || c.x_type == DType::kFloat16;
  const DType wtype = c.x_type == DType::kFloat16 ? DType::kFloat16 : DType::kBFloat16;
  const bool token_scaled = c.x_type == DType::kFloat8E4M3;
  const bool bias_in_gemm = bias == nullptr || bias->dtype == wtype || bias->dtype == out.dtype;
  const bool epilogue = token_scaled || !bias_in_gemm;
  const bool acc_in_out = epilogue && out.dtype == DType::kFloat32;
  const auto m = static_cast<std::size_t>(c.m), n = static_cast<std::size_t>(c.n), k = static_cast<std::size_t>(c.k);
  const std::size_t w_bytes = round_up_256(n * k * 2), x_bytes = x16 ? 0 : round_up_256(m * k * 2);
  const std::size_t acc_bytes = epilogue && !acc_in_out ? m * n * 4 : 0;
  StreamScratch scratch(w_bytes + x_bytes + acc_bytes, stream, op);
  void* w16 = scratch.at(0);
  void* xw = scratch.at(w_bytes);
  void* acc = acc_in_out ? out.data : scratch.at(w_bytes + x_bytes);
  if (c.k > 0) {
    const unsigned wgrid = block_grid(c.n * (c.k / mxfp4::kBlock), op);
    if (wtype == DType::kBFloat16) {
      mxfp4::dequant_kernel<bf16>
          <<<wgrid, mxfp4::kThreads, 0, stream>>>(c.w, c.ldw, c.w_scale, c.ld_scale, static_cast<bf16*>(w16), c.n, c.k);
    } else {
      mxfp4::dequant_kernel<fp16>
          <<<wgrid, mxfp4::kThreads, 0, stream>>>(c.w, c.ldw, c.w_scale, c.ld_scale, static_cast<fp16*>(w16), c.n, c.k);
    }
    if (!x16) {
      const unsigned xgrid = block_grid(c.m * (c.k / mxfp4::kBlock), op);
      const auto* xp = static_cast<const std::uint8_t*>(c.x);
      if (token_scaled) {
        mxfp4::widen_e4m3_kernel<<<xgrid, mxfp4::kThreads, 0, stream>>>(xp, c.ldx, static_cast<bf16*>(xw), c.m, c.k);
      } else {
        mxfp4::dequant_kernel<bf16><<<xgrid, mxfp4::kThreads, 0, stream>>>(
            xp, c.ldx, static_cast<const std::uint8_t*>(c.x_scale), c.ld_x_scale, static_cast<bf16*>(xw), c.m, c.k);
      }
    }
    TGEMM_CUDA_CHECK_LAUNCH(op);
  }
  // Views of the 16-bit operands and of the GEMM's target; x's dequantized copy is 2-D, so out is
  // viewed 2-D ([M, N], its checked row stride) beside it.
  const TensorView xv = x16 ? x : TensorView::contiguous(xw, DType::kBFloat16, {c.m, c.k});
  const TensorView wv = TensorView::contiguous(w16, wtype, {c.n, c.k});
  const TensorView out2 = TensorView::strided(c.out, c.out_type, {c.m, c.n}, {c.ldo, 1});
  const TensorView target = !epilogue    ? (x16 ? out : out2)
                            : acc_in_out ? out2
                                         : TensorView::contiguous(acc, DType::kFloat32, {c.m, c.n});
  GemmOptions options;
  options.bias = epilogue ? nullptr : bias;
  gemm_a16w16(xv, wv, target, options, reinterpret_cast<Stream>(stream));
  if (epilogue) {
    const std::int64_t lda = acc_in_out ? c.ldo : c.n;
    mxfp4::scale_bias_kernel<<<block_grid(c.m * c.n, op), mxfp4::kThreads, 0, stream>>>(
        static_cast<const float*>(acc), lda, token_scaled ? static_cast<const float*>(c.x_scale) : nullptr,
        c.ld_x_scale, c.bias, type_code(c.bias_type), c.out, type_code(c.out_type), c.ldo, c.m, c.n);
    TGEMM_CUDA_CHECK_LAUNCH(op);
  }
  scratch.release(op);
}

// Every W4 GEMM once checked: nothing to write, or the path of fp4_route::choose_w4_path with
// `force`, or TGEMM_FP4_PATH's value where there is none (read only where something is written).
void run_w4(const W4GemmCall& c, const TensorView& x, const TensorView& out, const TensorView* bias, Stream stream,
            const char* op, std::optional<fp4_route::W4Force> force) {
  if (c.m == 0 || c.n == 0) return;
  auto* s = reinterpret_cast<cudaStream_t>(stream);
  switch (fp4_route::choose_w4_path(c, force ? *force : Runtime::get().dispatcher().settings().fp4_path)) {
    case fp4_route::W4Path::kGemv: run_gemv_any(c, s); break;
    case fp4_route::W4Path::kGemvRows: run_gemv_rows_any(c, s); break;
    case fp4_route::W4Path::kMma: run_mma_any(c, s, op); break;
    default: run_dequant_gemm(c, x, out, bias, s, op); return;
  }
  TGEMM_CUDA_CHECK_LAUNCH(op);
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
  run_w4(validate_a16w4(x, w, w_scale, out, bias, kOp), x, out, bias, stream, kOp, std::nullopt);
}

void gemm_a8w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias, Stream stream) {
  constexpr const char* kOp = "gemm_a8w4";
  run_w4(validate_a8w4(x, w, x_scale, w_scale, out, bias, kOp), x, out, bias, stream, kOp, std::nullopt);
}

void gemm_a4w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias, Stream stream) {
  constexpr const char* kOp = "gemm_a4w4";
  run_w4(validate_a4w4(x, w, x_scale, w_scale, out, bias, kOp), x, out, bias, stream, kOp, std::nullopt);
}

namespace fp4_route {

void gemm_a16w4_forced(W4Force force, const TensorView& x, const TensorView& w, const TensorView& w_scale,
                       const TensorView& out, const TensorView* bias, Stream stream) {
  constexpr const char* kOp = "gemm_a16w4";
  run_w4(validate_a16w4(x, w, w_scale, out, bias, kOp), x, out, bias, stream, kOp, force);
}

void gemm_a8w4_forced(W4Force force, const TensorView& x, const TensorView& w, const TensorView& x_scale,
                      const TensorView& w_scale, const TensorView& out, const TensorView* bias, Stream stream) {
  constexpr const char* kOp = "gemm_a8w4";
  run_w4(validate_a8w4(x, w, x_scale, w_scale, out, bias, kOp), x, out, bias, stream, kOp, force);
}

void gemm_a4w4_forced(W4Force force, const TensorView& x, const TensorView& w, const TensorView& x_scale,
                      const TensorView& w_scale, const TensorView& out, const TensorView* bias, Stream stream) {
  constexpr const char* kOp = "gemm_a4w4";
  run_w4(validate_a4w4(x, w, x_scale, w_scale, out, bias, kOp), x, out, bias, stream, kOp, force);
}

}  // namespace fp4_route

}  // namespace tgemm
