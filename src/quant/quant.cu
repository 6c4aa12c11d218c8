// Public quantization entry points (include/tgemm/quant.h): validate, return early where nothing
// is to be written, pick the 16-byte or the element-load variant of the kernel
// (kernels/common/quant.cuh), launch on the caller's stream.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "kernels/common/quant.cuh"
#include "quant/quant_validate.h"
#include "tgemm/quant.h"

namespace tgemm {
namespace {

using fp8 = __nv_fp8_storage_t;

// Rows of 16-bit elements that 16-byte loads can read: the base and the row stride aligned.
bool rows_aligned16(const void* p, std::int64_t ld) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && (ld * 2) % 16 == 0;
}
// Rows of 1-byte codes that 8-byte stores can write.
bool rows_aligned8(const void* p, std::int64_t ld) {
  return reinterpret_cast<std::uintptr_t>(p) % 8 == 0 && ld % 8 == 0;
}

// f(T{}, std::bool_constant<kVec>{}) for x's element type and alignment.
template <typename F>
void with_input(const QuantCall& c, F&& f) {
  const bool vec = rows_aligned16(c.x, c.ldx);
  if (c.x_type == DType::kBFloat16) {
    vec ? f(bf16{}, std::true_type{}) : f(bf16{}, std::false_type{});
  } else {
    vec ? f(fp16{}, std::true_type{}) : f(fp16{}, std::false_type{});
  }
}

// Grid of the per-tensor kernels: enough CTAs to cover the vectors, at most 4 a SM (each
// grid-strides; more only adds atomics and launch work).
unsigned tensor_grid(const QuantCall& c) {
  const std::int64_t vecs = c.m * ((c.k + quant::kVecElems - 1) / quant::kVecElems);
  const std::int64_t sms = std::max(1, cuda_sm_count(cuda_current_device()));
  const std::int64_t blocks = (vecs + quant::kTensorThreads - 1) / quant::kTensorThreads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 4 * sms));
}

void run_per_tensor(const QuantCall& c, bool given, cudaStream_t stream, const char* op) {
  const unsigned grid = tensor_grid(c);
  const bool vec_store = rows_aligned8(c.q, c.ldq);
  auto* q = static_cast<fp8*>(c.q);
  with_input(c, [&](auto t, auto vec) {
    using T = decltype(t);
    constexpr bool kVec = decltype(vec)::value;
    const T* x = static_cast<const T*>(c.x);
    if (given) {
      quant::tensor_quant_kernel<T, kVec, true>
          <<<grid, quant::kTensorThreads, 0, stream>>>(x, c.ldx, q, c.ldq, c.m, c.k, c.scale, vec_store);
    } else {
      quant::tensor_amax_kernel<T, kVec><<<grid, quant::kTensorThreads, 0, stream>>>(x, c.ldx, c.m, c.k, c.scale);
      quant::tensor_quant_kernel<T, kVec, false>
          <<<grid, quant::kTensorThreads, 0, stream>>>(x, c.ldx, q, c.ldq, c.m, c.k, c.scale, vec_store);
    }
  });
  TGEMM_CUDA_CHECK_LAUNCH(op);
}

}  // namespace

void quant_fp8_per_tensor(const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream) {
  constexpr const char* kOp = "quant_fp8_per_tensor";
  const QuantCall c = validate_quant(x, q, scale, QuantGrouping::kPerTensor, kOp);
  // The slot both kernels share starts at 0 (no amax yet); an empty x ends as scale 1.
  TGEMM_CUDA_CHECK(cudaMemsetAsync(c.scale, 0, sizeof(float), stream), kOp);
  run_per_tensor(c, false, stream, kOp);
}

void quant_fp8_per_tensor_static(const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream) {
  constexpr const char* kOp = "quant_fp8_per_tensor_static";
  const QuantCall c = validate_quant(x, q, scale, QuantGrouping::kPerTensor, kOp);
  if (c.m == 0 || c.k == 0) return;
  run_per_tensor(c, true, stream, kOp);
}

void quant_per_token(const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream) {
  constexpr const char* kOp = "quant_per_token";
  const QuantCall c = validate_quant(x, q, scale, QuantGrouping::kPerToken, kOp);
  if (c.m == 0) return;
  // A thread per 16-byte vector of the row, in whole warps, at most 256: short rows do not leave
  // most of a CTA idle.
  const std::int64_t vecs = (c.k + quant::kVecElems - 1) / quant::kVecElems;
  const unsigned threads =
      static_cast<unsigned>(std::clamp<std::int64_t>((vecs + 31) / 32 * 32, 32, quant::kRowThreads));
  const bool vec_store = rows_aligned8(c.q, c.ldq);
  with_input(c, [&](auto t, auto vec) {
    using T = decltype(t);
    constexpr bool kVec = decltype(vec)::value;
    const T* xp = static_cast<const T*>(c.x);
    const auto grid = static_cast<unsigned>(c.m);
    if (c.q_type == DType::kInt8) {
      quant::quant_rows_kernel<T, std::int8_t, kVec>
          <<<grid, threads, 0, stream>>>(xp, c.ldx, static_cast<std::int8_t*>(c.q), c.ldq, c.k, c.scale, vec_store);
    } else {
      quant::quant_rows_kernel<T, fp8, kVec>
          <<<grid, threads, 0, stream>>>(xp, c.ldx, static_cast<fp8*>(c.q), c.ldq, c.k, c.scale, vec_store);
    }
  });
  TGEMM_CUDA_CHECK_LAUNCH(kOp);
}

void quant_fp8_per_block_1x128(const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream) {
  constexpr const char* kOp = "quant_fp8_per_block_1x128";
  const QuantCall c = validate_quant(x, q, scale, QuantGrouping::kBlock1x128, kOp);
  if (c.m == 0 || c.k == 0) return;
  const std::int64_t groups = c.m * quant_blocks(c.k);
  const std::int64_t blocks = (groups + quant::kBlockRowThreads / 16 - 1) / (quant::kBlockRowThreads / 16);
  TGEMM_CHECK(blocks <= std::numeric_limits<std::int32_t>::max(), kOp, "x has ", groups,
              " blocks of 128, more than one launch covers (",
              std::int64_t{std::numeric_limits<std::int32_t>::max()} * 16, ")");
  const bool vec_store = rows_aligned8(c.q, c.ldq);
  with_input(c, [&](auto t, auto vec) {
    using T = decltype(t);
    constexpr bool kVec = decltype(vec)::value;
    quant::quant_1x128_kernel<T, kVec><<<static_cast<unsigned>(blocks), quant::kBlockRowThreads, 0, stream>>>(
        static_cast<const T*>(c.x), c.ldx, static_cast<fp8*>(c.q), c.ldq, c.m, c.k, c.scale, c.scale_row_stride,
        c.scale_col_stride, vec_store);
  });
  TGEMM_CUDA_CHECK_LAUNCH(kOp);
}

void quant_fp8_per_block_128x128(const TensorView& w, const TensorView& q, const TensorView& scale, Stream stream) {
  constexpr const char* kOp = "quant_fp8_per_block_128x128";
  const QuantCall c = validate_quant(w, q, scale, QuantGrouping::kBlock128x128, kOp);
  if (c.m == 0 || c.k == 0) return;
  const std::int64_t nb = quant_blocks(c.m), kb = quant_blocks(c.k);
  // gridDim.y is at most 65535.
  TGEMM_CHECK(nb <= 65535, kOp, "w has ", c.m, " rows (", nb, " blocks of 128), more than 65535 blocks");
  const bool vec_store = rows_aligned8(c.q, c.ldq);
  with_input(c, [&](auto t, auto vec) {
    using T = decltype(t);
    constexpr bool kVec = decltype(vec)::value;
    quant::quant_128x128_kernel<T, kVec>
        <<<dim3(static_cast<unsigned>(kb), static_cast<unsigned>(nb)), quant::kTileThreads, 0, stream>>>(
            static_cast<const T*>(c.x), c.ldx, static_cast<fp8*>(c.q), c.ldq, c.m, c.k, c.scale, c.scale_row_stride,
            vec_store);
  });
  TGEMM_CUDA_CHECK_LAUNCH(kOp);
}

}  // namespace tgemm
