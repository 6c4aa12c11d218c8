// MXFP4 entry points (include/tgemm/fp4.h): validate, return early where nothing is to be
// written, launch on the caller's stream. gemm_a16w4, gemm_a8w4 and gemm_a4w4 take the decode
// GEMV (kernels/sm90/sm90_mxfp4_gemv.cuh, templated on the activation format) where M <= 4 and
// the rows it reads with 16-byte loads are aligned, else dequantize w (and x where it is not
// 16-bit) to 16 bits (kernels/common/mxfp4.cuh) and run gemm_a16w16.
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

// The GEMV's largest M. It meets every token with CUDA-core FMAs: at 16 tokens it is bound by FMA
// issue, not by the weight read, at 22-35x the 4-bit streaming floor on an H200 (0.11-0.18x of
// bf16 F.linear, docs/performance.md), where dequantizing the weight for gemm_a16w16's tensor
// cores moves about 8x the 4-bit bytes (the codes read, 2 bytes an element written and read
// again). At M <= 4 it issues a quarter of those FMAs or fewer; at M = 1 it is 1.06-1.70x faster
// than F.linear.
constexpr std::int64_t kGemvMaxM = 4;
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

template <typename A, int M_MAX>
void launch_gemv(const kernels::Mxfp4GemvParams& p, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>((p.n + kGemvWarps - 1) / kGemvWarps);
  kernels::sm90_mxfp4_gemv<A, M_MAX, kGemvWarps, kGemvChunks><<<grid, 32 * kGemvWarps, 0, stream>>>(p);
}

template <typename A>
void run_gemv(const W4GemmCall& c, cudaStream_t stream) {
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
  if (c.m == 1) {
    launch_gemv<A, 1>(p, stream);
  } else {
    launch_gemv<A, kGemvMaxM>(p, stream);
  }
}

// Bytes of x's storage unit (ldx counts units): 16-bit elements, e4m3 bytes, bytes of two codes.
std::int64_t unit_bytes(DType x_type) { return x_type == DType::kBFloat16 || x_type == DType::kFloat16 ? 2 : 1; }

// 16-byte loads of x's and w's rows: bases and row strides multiples of 16 bytes (a single row's
// stride is never used).
bool gemv_fits(const W4GemmCall& c) {
  return c.m <= kGemvMaxM && c.k >= mxfp4::kBlock && aligned16(c.x) &&
         (c.m == 1 || (c.ldx * unit_bytes(c.x_type)) % 16 == 0) && aligned16(c.w) && (c.n == 1 || c.ldw % 16 == 0);
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

// The path for M > 4 or unaligned rows: w dequantized to 16 bits (x's dtype for gemm_a16w4, else
// bf16), x widened (e4m3) or dequantized (e2m1) to bf16 unless it is 16-bit already, then
// gemm_a16w16. Where x_scale is per tensor or token (gemm_a8w4) or the bias has a dtype gemm_a16w16
// does not take (fp32 with a 16-bit out), gemm_a16w16 sums into fp32 (out itself when out is fp32)
// and scale_bias_kernel applies x_scale and bias and rounds once.
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

// Every W4 GEMM once checked: nothing to write, the GEMV, or the dequantize path.
void run_w4(const W4GemmCall& c, const TensorView& x, const TensorView& out, const TensorView* bias, Stream stream,
            const char* op) {
  if (c.m == 0 || c.n == 0) return;
  auto* s = reinterpret_cast<cudaStream_t>(stream);
  if (gemv_fits(c)) {
    run_gemv_any(c, s);
    TGEMM_CUDA_CHECK_LAUNCH(op);
    return;
  }
  run_dequant_gemm(c, x, out, bias, s, op);
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
  run_w4(validate_a16w4(x, w, w_scale, out, bias, kOp), x, out, bias, stream, kOp);
}

void gemm_a8w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias, Stream stream) {
  constexpr const char* kOp = "gemm_a8w4";
  run_w4(validate_a8w4(x, w, x_scale, w_scale, out, bias, kOp), x, out, bias, stream, kOp);
}

void gemm_a4w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias, Stream stream) {
  constexpr const char* kOp = "gemm_a4w4";
  run_w4(validate_a4w4(x, w, x_scale, w_scale, out, bias, kOp), x, out, bias, stream, kOp);
}

}  // namespace tgemm
