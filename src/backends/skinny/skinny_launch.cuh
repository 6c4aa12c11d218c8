// Host side of the skinny kernel instances: problem -> kernel parameters, the (cluster) launch,
// the image/occupancy query, and the appenders each instance translation unit calls for its share
// of the tile lists in skinny_kernels.h. Included only by skinny_<dtype>_<group>.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "backends/skinny/skinny_kernels.h"
#include "cuda/cuda_check.h"
#include "kernels/sm90/sm90_skinny_gemv.cuh"
#include "kernels/sm90/sm90_skinny_mma_weight_a.cuh"
#include "kernels/sm90/sm90_skinny_mma_weight_b.cuh"

namespace tgemm::skinny {

inline int skinny_elem(DType t) {
  switch (t) {
    case DType::kBFloat16: return kernels::kSkinnyBf16;
    case DType::kFloat16: return kernels::kSkinnyFp16;
    default: return kernels::kSkinnyF32;
  }
}

template <typename In>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<In, bf16>)
    return DType::kBFloat16;
  else if constexpr (std::is_same_v<In, fp16>)
    return DType::kFloat16;
  else if constexpr (std::is_same_v<In, kernels::fp8e4m3>)
    return DType::kFloat8E4M3;
  else
    return DType::kInt8;
}

// Lets `Kernel` take up to `bytes` of dynamic shared memory on the current device (the default
// limit is 48 KB); done once per device and kernel (one state per instantiation). False if the
// device cannot be queried or refuses the size.
template <auto Kernel>
bool allow_dynamic_smem(int bytes) {
  if (bytes <= 48 * 1024) return true;
  static std::array<std::atomic<int>, 64> state{};  // per device: 0 not yet, 1 done, -1 refused
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) {
    cudaGetLastError();
    return false;
  }
  int s = state[device].load(std::memory_order_acquire);
  if (s == 0) {
    s = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess
            ? 1
            : -1;
    if (s < 0) cudaGetLastError();  // a refusal must not leave an error behind
    state[device].store(s, std::memory_order_release);
  }
  return s > 0;
}

// Facts about Kernel's image on the current device: PTX arch, registers, and co-resident CTAs of
// `threads` threads with `smem` bytes of dynamic shared memory, after allowing `allow` bytes
// (>= smem). All 0 if a query fails; no error is left behind.
template <auto Kernel>
SkinnyKernelInfo query_image(int threads, int smem, int allow) {
  SkinnyKernelInfo info;
  cudaFuncAttributes attr{};
  int ctas = 0;
  if (!allow_dynamic_smem<Kernel>(allow) || cudaFuncGetAttributes(&attr, Kernel) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, Kernel, threads, static_cast<std::size_t>(smem)) !=
          cudaSuccess) {
    cudaGetLastError();  // a failed query must not leave an error behind
    return info;
  }
  info.ptx_arch = attr.ptxVersion;
  info.ctas_per_sm = ctas;
  info.registers = attr.numRegs;
  return info;
}

inline kernels::SkinnyParams skinny_params(const GemmProblem& p, const GemmArgs& args) {
  kernels::SkinnyParams kp;
  kp.x = args.a;
  kp.w = args.b;
  kp.out = args.out;
  kp.bias = p.has_bias() ? args.bias : nullptr;
  kp.m = static_cast<int>(p.m);
  kp.n = static_cast<int>(p.n);
  kp.k = static_cast<int>(p.k);
  kp.lda = p.lda;
  kp.ldb = p.ldb;
  kp.ldo = p.ldo;
  kp.out_type = skinny_elem(p.out_type);
  kp.bias_type = p.has_bias() ? skinny_elem(p.bias_type) : kernels::kSkinnyNone;
  kp.activation = static_cast<int>(p.activation);
  if (p.family == OpFamily::kA8W8) {
    kp.x_scale = args.a_scale;
    kp.w_scale = args.b_scale;
    kp.x_scale_rows = p.a_scale == ScaleGranularity::kRow ? 1 : 0;
    kp.w_scale_rows = p.b_scale == ScaleGranularity::kRow ? 1 : 0;
  }
  return kp;
}

// The launch of a split-K kernel (both MMA families): grid (ceil(N / rows), split_k), `threads`
// threads, `smem` bytes of dynamic shared memory, as a (1, split_k, 1) cluster when split_k > 1.
// The cluster attribute, if any, is written to attrs[0] and counted in n_attrs.
inline cudaLaunchConfig_t split_k_config(std::int64_t n, int rows, int split_k, int threads, int smem, Stream stream,
                                         cudaLaunchAttribute* attrs, unsigned& n_attrs) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>((n + rows - 1) / rows), static_cast<unsigned>(split_k), 1);
  config.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  config.dynamicSmemBytes = static_cast<std::size_t>(smem);
  config.stream = reinterpret_cast<cudaStream_t>(stream);
  n_attrs = 0;
  if (split_k > 1) {
    attrs[n_attrs].id = cudaLaunchAttributeClusterDimension;
    attrs[n_attrs].val.clusterDim.x = 1;
    attrs[n_attrs].val.clusterDim.y = static_cast<unsigned>(split_k);
    attrs[n_attrs].val.clusterDim.z = 1;
    ++n_attrs;
  }
  config.attrs = n_attrs > 0 ? attrs : nullptr;
  config.numAttrs = n_attrs;
  return config;
}

template <typename In, int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int STAGES>
void launch_mma_weight_a(const GemmProblem& p, const GemmArgs& args, int split_k, Stream stream, const char* where) {
  using Shape = kernels::MmaWeightAShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>;
  constexpr auto kernel =
      &kernels::sm90_skinny_mma_weight_a<In, M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>;
  allow_dynamic_smem<kernel>(Shape::kMaxSmemBytes);  // a refusal shows as the launch's error
  cudaLaunchAttribute attr{};
  unsigned n_attrs = 0;
  const cudaLaunchConfig_t config = split_k_config(p.n, Shape::kBlockN, split_k, Shape::kThreads,
                                                   Shape::smem_bytes(split_k), stream, &attr, n_attrs);
  TGEMM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, skinny_params(p, args)), where);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int STAGES>
SkinnyKernelInfo mma_weight_a_query(int split_k) {
  using Shape = kernels::MmaWeightAShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>;
  return query_image<&kernels::sm90_skinny_mma_weight_a<In, M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>>(
      Shape::kThreads, Shape::smem_bytes(split_k), Shape::kMaxSmemBytes);
}

// Appends the weight-as-A tiles with MIN_M_TILE <= m_tile <= MAX_M_TILE; the others are discarded
// statements, so this translation unit instantiates only its share.
template <typename In, int MIN_M_TILE, int MAX_M_TILE>
void append_mma_weight_a_kernels(std::vector<MmaWeightAKernel>& out) {
#define TGEMM_SKINNY_APPEND(MT, RW, WN, WK, U, S)                 \
  if constexpr (MT >= MIN_M_TILE && MT <= MAX_M_TILE) {           \
    MmaWeightAKernel k;                                           \
    k.tile = MmaWeightATile{MT, RW, WN, WK, U, S};                \
    k.in = dtype_of<In>();                                        \
    k.launch = &launch_mma_weight_a<In, MT, RW, WN, WK, U, S>;    \
    k.query = &mma_weight_a_query<In, MT, RW, WN, WK, U, S>;      \
    out.push_back(k);                                             \
  }
  TGEMM_SKINNY_MMA_WEIGHT_A_TILES(TGEMM_SKINNY_APPEND)
#undef TGEMM_SKINNY_APPEND
}

// --- GEMV ----------------------------------------------------------------------------------------

// segs: the solution's GemvTile::segs (a power of two <= WARPS by construction).
template <typename In, int M_MAX, int WARPS, int CHUNKS>
void launch_gemv(const GemmProblem& p, const GemmArgs& args, int segs, Stream stream, const char* where) {
  const std::int64_t rows_per_cta = WARPS / segs;
  const std::int64_t grid = (p.n + rows_per_cta - 1) / rows_per_cta;
  kernels::sm90_skinny_gemv<In, M_MAX, WARPS, CHUNKS>
      <<<static_cast<unsigned>(grid), 32 * WARPS, 0, reinterpret_cast<cudaStream_t>(stream)>>>(skinny_params(p, args),
                                                                                               segs);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int M_MAX, int WARPS, int CHUNKS>
SkinnyKernelInfo gemv_query() {
  return query_image<&kernels::sm90_skinny_gemv<In, M_MAX, WARPS, CHUNKS>>(32 * WARPS, 0, 0);
}

template <typename In>
void append_gemv_kernels(std::vector<GemvKernel>& out) {
#define TGEMM_SKINNY_GEMV_APPEND(MM, W, C)      \
  {                                             \
    GemvKernel k;                               \
    k.tile = GemvTile{MM, W, C};                \
    k.in = dtype_of<In>();                      \
    k.launch = &launch_gemv<In, MM, W, C>;      \
    k.query = &gemv_query<In, MM, W, C>;        \
    out.push_back(k);                           \
  }
  TGEMM_SKINNY_GEMV_TILES(TGEMM_SKINNY_GEMV_APPEND)
#undef TGEMM_SKINNY_GEMV_APPEND
}

// --- Weight-as-B MMA ----------------------------------------------------------------------------

template <typename In, int RB, int C, int W, int U>
void launch_mma_weight_b(const GemmProblem& p, const GemmArgs& args, int split_k, Stream stream, const char* where) {
  using Shape = kernels::MmaWeightBShape<RB, C, W, U, kernels::kChunkElems<In>>;
  constexpr auto kernel = &kernels::sm90_skinny_mma_weight_b<In, RB, C, W, U>;
  allow_dynamic_smem<kernel>(Shape::kMaxSmemBytes);  // a refusal shows as the launch's error
  cudaLaunchAttribute attr{};
  unsigned n_attrs = 0;
  const cudaLaunchConfig_t config = split_k_config(p.n, Shape::kRows, split_k, Shape::kThreads, Shape::smem_bytes(split_k),
                                                   stream, &attr, n_attrs);
  TGEMM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, skinny_params(p, args)), where);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int RB, int C, int W, int U>
SkinnyKernelInfo mma_weight_b_query(int split_k) {
  using Shape = kernels::MmaWeightBShape<RB, C, W, U, kernels::kChunkElems<In>>;
  return query_image<&kernels::sm90_skinny_mma_weight_b<In, RB, C, W, U>>(Shape::kThreads, Shape::smem_bytes(split_k),
                                                                           Shape::kMaxSmemBytes);
}

template <typename In>
void append_mma_weight_b_kernels(std::vector<MmaWeightBKernel>& out) {
#define TGEMM_SKINNY_MMA_WEIGHT_B_APPEND(RB, C, W, U)   \
  {                                                     \
    MmaWeightBKernel k;                                 \
    k.tile = MmaWeightBTile{RB, C, W, U};               \
    k.in = dtype_of<In>();                              \
    k.launch = &launch_mma_weight_b<In, RB, C, W, U>;   \
    k.query = &mma_weight_b_query<In, RB, C, W, U>;     \
    out.push_back(k);                                   \
  }
  TGEMM_SKINNY_MMA_WEIGHT_B_TILES(TGEMM_SKINNY_MMA_WEIGHT_B_APPEND)
#undef TGEMM_SKINNY_MMA_WEIGHT_B_APPEND
}

}  // namespace tgemm::skinny
