// Elementwise passes over a GEMM output. epilogue_rows: out = act(alpha * src + beta * c + bias) in
// fp32, cast to the output type; with src null it is the whole result of a GEMM with K = 0.
// Two kernels, the same arithmetic element by element (bit-identical results):
//  - epilogue_rows_vec8_kernel, the fast path: each thread takes 8 consecutive columns of one row
//    (16-byte loads/stores of 16-bit types, two of fp32), one 64-bit division per 8 elements,
//    grid-stride over the m * n / 8 vectors. Taken when every buffer it reads or writes allows
//    it: n and each used leading dimension multiples of 8 elements, each used pointer 16-byte
//    aligned (vectorizable() below).
//  - epilogue_rows_kernel, the general fallback: one element per thread, grid-stride.
// In both, the thread that writes an element of out reads the same element of c (and src) first,
// so c may be out itself.
// Tested by tests/gpu/test_epilogue.cpp (both paths, directly) and tests/gpu/test_gemm_a16w16.cpp
// (K = 0, mixed input/output dtypes, epilogues).
#include <algorithm>
#include <cstdint>

#include "kernels/common/activation.cuh"
#include "kernels/common/numeric.cuh"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"

namespace tgemm {
namespace {

constexpr int kThreads = 256;  // per block, both kernels

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

// 8 consecutive elements, 16-byte aligned: 16 bytes of a 16-bit type, 32 of fp32. Moved as
// uint4 (128-bit ld/st.global.v4).
template <typename T>
struct alignas(16) Vec8 {
  T v[8];
};
static_assert(sizeof(Vec8<bf16>) == 16 && sizeof(Vec8<fp16>) == 16 && sizeof(Vec8<float>) == 32,
              "Vec8 must be a whole number of 16-byte accesses");

template <typename T>
__device__ __forceinline__ Vec8<T> load8(const T* p) {
  constexpr int kWords = static_cast<int>(sizeof(Vec8<T>) / sizeof(uint4));
  union {
    uint4 u[kWords];
    Vec8<T> v;
  } r;
  const auto* s = reinterpret_cast<const uint4*>(p);
#pragma unroll
  for (int k = 0; k < kWords; ++k) r.u[k] = s[k];
  return r.v;
}

template <typename T>
__device__ __forceinline__ void store8(T* p, const Vec8<T>& v) {
  constexpr int kWords = static_cast<int>(sizeof(Vec8<T>) / sizeof(uint4));
  union {
    uint4 u[kWords];
    Vec8<T> v;
  } r;
  r.v = v;
  auto* d = reinterpret_cast<uint4*>(p);
#pragma unroll
  for (int k = 0; k < kWords; ++k) d[k] = r.u[k];
}

// The fast path (see the top of the file). The per-element arithmetic is written exactly as in
// epilogue_rows_kernel (same operations in the same order) so that both give the same bits.
template <typename Out, typename Bias>
__global__ void __launch_bounds__(kThreads) epilogue_rows_vec8_kernel(EpilogueParams p) {
  auto* out = static_cast<Out*>(p.out);
  const auto* c = static_cast<const Out*>(p.c);
  const auto* bias = static_cast<const Bias*>(p.bias);
  const int act = static_cast<int>(p.activation);
  const std::int64_t vectors_per_row = p.n / 8;
  const std::int64_t total = p.m * vectors_per_row;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / vectors_per_row;
    const std::int64_t col = (i - r * vectors_per_row) * 8;
    float v[8];
    if (p.src) {
      const Vec8<float> s = load8(p.src + r * p.ld_src + col);
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = p.alpha * s.v[k];
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = 0.0f;
    }
    if (p.beta != 0.0f) {
      // Read before out is written below: c may be out itself.
      const Vec8<Out> cv = load8(c + r * p.ldc + col);
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] += p.beta * to_float(cv.v[k]);
    }
    if (bias) {
      const Vec8<Bias> b = load8(bias + col);
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] += to_float(b.v[k]);
    }
    Vec8<Out> o;
#pragma unroll
    for (int k = 0; k < 8; ++k) o.v[k] = from_float<Out>(kernels::activate(act, v[k]));
    store8(out + r * p.ldo + col, o);
  }
}

// Grid cap of the fast path: 16 blocks per SM of a 132-SM H100/H200, two waves at full occupancy
// (8 blocks of 256 threads resident per SM); larger problems loop (grid-stride).
constexpr std::int64_t kMaxVec8Blocks = 132 * 16;

bool aligned16(const void* ptr) { return (reinterpret_cast<std::uintptr_t>(ptr) & 15u) == 0; }

// Whether epilogue_rows_vec8_kernel may run p: every 8-column vector it touches is 16-byte
// aligned in every buffer it reads or writes (c only when beta != 0, src and bias only when given).
bool vectorizable(const EpilogueParams& p) {
  if (p.n % 8 != 0 || p.ldo % 8 != 0 || !aligned16(p.out)) return false;
  if (p.beta != 0.0f && (p.ldc % 8 != 0 || !aligned16(p.c))) return false;
  if (p.src && (p.ld_src % 8 != 0 || !aligned16(p.src))) return false;
  if (p.bias && !aligned16(p.bias)) return false;
  return true;
}

template <typename Out, typename Bias>
void launch(const EpilogueParams& p, cudaStream_t stream) {
  if (vectorizable(p)) {
    const std::int64_t vectors = p.m * (p.n / 8);
    const int blocks = static_cast<int>(std::min<std::int64_t>((vectors + kThreads - 1) / kThreads, kMaxVec8Blocks));
    epilogue_rows_vec8_kernel<Out, Bias><<<blocks, kThreads, 0, stream>>>(p);
  } else {
    const std::int64_t total = p.m * p.n;
    const int blocks = static_cast<int>(std::min<std::int64_t>((total + kThreads - 1) / kThreads, 65535));
    epilogue_rows_kernel<Out, Bias><<<blocks, kThreads, 0, stream>>>(p);
  }
}

template <typename Out>
void launch_for_out(const EpilogueParams& p, cudaStream_t stream) {
  switch (p.bias_type) {
    case DType::kBFloat16:
      launch<Out, bf16>(p, stream);
      break;
    case DType::kFloat16:
      launch<Out, fp16>(p, stream);
      break;
    default:
      launch<Out, float>(p, stream);
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
