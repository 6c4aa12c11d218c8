// Host side of the skinny kernel instances: problem -> kernel parameters, the (cluster) launch,
// the image/occupancy query, and the appender each instance translation unit calls for its subset
// of TGEMM_SKINNY_TILES. Included only by skinny_<dtype>_<group>.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "backends/skinny/skinny_kernels.h"
#include "kernels/sm90/sm90_gemm_skinny.cuh"
#include "kernels/sm90/sm90_gemm_skinny_bop.cuh"
#include "kernels/sm90/sm90_gemm_skinny_stream.cuh"
#include "kernels/sm90/sm90_gemv_bulk.cuh"
#include "kernels/sm90/sm90_gemv_skinny.cuh"
#include "cuda/cuda_check.h"

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
  return std::is_same_v<In, bf16> ? DType::kBFloat16 : DType::kFloat16;
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
  return kp;
}

// Bytes of each warp's (row, k-range) that a programmatic dependent launch of versions 1-2 asks
// L2 for before its grid dependency resolves: the whole range when every resident CTA's ranges fit
// in half of L2, else an equal share of that half (session 9: prefetching whole ranges of
// 16-50 MiB weights evicted the lines before their loads and slowed those problems by 15-75%).
// Residency is bounded from above by the threads per SM, which only makes the share smaller.
// 0 when the device cannot be queried (the kernel then waits without a prefetch).
// TGEMM_SKINNY_V2_PDL_PREFETCH=0 turns the prefetch off (PDL then only waits): an A/B switch for
// the benches, read once.
inline int pdl_prefetch_cap(int device, std::int64_t ctas, int threads_per_cta, int ranges_per_cta) {
  static const bool prefetch_off = [] {
    const char* env = std::getenv("TGEMM_SKINNY_V2_PDL_PREFETCH");
    return env != nullptr && env[0] == '0' && env[1] == '\0';
  }();
  if (prefetch_off) return 0;
  static std::array<std::atomic<std::int64_t>, 64> cache{};  // (L2 bytes << 20) | SMs, 0 unknown
  std::int64_t facts = device >= 0 && device < 64 ? cache[device].load(std::memory_order_relaxed) : 0;
  if (facts == 0) {
    int l2 = 0, sms = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || l2 <= 0 || sms <= 0) {
      cudaGetLastError();
      return 0;
    }
    facts = (static_cast<std::int64_t>(l2) << 20) | sms;
    if (device >= 0 && device < 64) cache[device].store(facts, std::memory_order_relaxed);
  }
  const std::int64_t l2 = facts >> 20, sms = facts & ((1 << 20) - 1);
  const std::int64_t resident = std::min<std::int64_t>(ctas, sms * std::max(1, 2048 / threads_per_cta));
  const std::int64_t share = l2 / 2 / std::max<std::int64_t>(1, resident * ranges_per_cta);
  return static_cast<int>(std::min<std::int64_t>(share, std::int64_t{1} << 30)) & ~15;
}

// The launch of a split-K kernel (versions 1-2 and 7): grid (ceil(N / rows), split_k), `threads`
// threads, `smem` bytes of dynamic shared memory, as a (1, split_k, 1) cluster when split_k > 1.
// The cluster attribute, if any, is written to attrs[0] and counted in n_attrs (from 0); the
// caller may append more attributes after it.
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
void launch_skinny(const GemmProblem& p, const GemmArgs& args, int split_k, Stream stream,
                   const char* where) {
  using Shape = kernels::SkinnyShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>;
  const kernels::SkinnyParams kp = skinny_params(p, args);

  constexpr auto kernel = &kernels::sm90_gemm_skinny<In, M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>;
  allow_dynamic_smem<kernel>(Shape::kMaxSmemBytes);  // a refusal shows as the launch's error
  cudaLaunchAttribute attrs[2]{};
  unsigned n_attrs = 0;
  cudaLaunchConfig_t config = split_k_config(p.n, Shape::kBlockN, split_k, Shape::kThreads, Shape::smem_bytes(split_k),
                                             stream, attrs, n_attrs);
  if (skinny_v2_pdl_enabled()) {
    attrs[n_attrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n_attrs].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attrs;
    config.numAttrs = n_attrs + 1;
    kernels::SkinnyParams pdl_kp = kp;
    pdl_kp.pdl = 1;
    pdl_kp.pdl_prefetch_bytes = pdl_prefetch_cap(p.device, std::int64_t{config.gridDim.x} * config.gridDim.y,
                                                 Shape::kThreads, Shape::kBlockN * WARPS_K);
    if (cudaLaunchKernelEx(&config, kernel, pdl_kp) == cudaSuccess) {
      TGEMM_CUDA_CHECK_LAUNCH(where);
      return;
    }
    // Refused: clear the error and launch plainly from now on.
    cudaGetLastError();
    set_skinny_v2_pdl(false);
    config.attrs = n_attrs > 0 ? attrs : nullptr;
    config.numAttrs = n_attrs;
  }
  TGEMM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, kp), where);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int STAGES>
SkinnyKernelInfo skinny_query(int split_k) {
  using Shape = kernels::SkinnyShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>;
  return query_image<&kernels::sm90_gemm_skinny<In, M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, STAGES>>(
      Shape::kThreads, Shape::smem_bytes(split_k), Shape::kMaxSmemBytes);
}

// --- Version 3: persistent stream-K ---------------------------------------------------------

// Programmatic dependent launch of the version-3 kernels: on unless the environment sets
// TGEMM_SKINNY_PDL=0 (for A/B timing), off for the rest of the process once a launch with it is
// refused. One state for the process (inline: shared by every instance translation unit).
inline std::atomic<int>& skinny_pdl_state() {
  static std::atomic<int> state{-1};  // -1 not read yet, 0 off, 1 on
  return state;
}
inline bool skinny_pdl_enabled() {
  int s = skinny_pdl_state().load(std::memory_order_relaxed);
  if (s < 0) {
    const char* env = std::getenv("TGEMM_SKINNY_PDL");
    s = env != nullptr && env[0] == '0' && env[1] == '\0' ? 0 : 1;
    int expected = -1;
    skinny_pdl_state().compare_exchange_strong(expected, s, std::memory_order_relaxed);
    s = skinny_pdl_state().load(std::memory_order_relaxed);
  }
  return s == 1;
}
inline void skinny_pdl_disable() { skinny_pdl_state().store(0, std::memory_order_relaxed); }

template <typename In, int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int XKB>
void launch_skinny_stream(const GemmProblem& p, const GemmArgs& args, const SkinnyStreamPlan& plan,
                          void* partials, unsigned* counters, Stream stream, const char* where) {
  using Shape = kernels::SkinnyStreamShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, XKB>;
  constexpr auto kernel = &kernels::sm90_gemm_skinny_stream<In, M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, XKB>;
  const kernels::SkinnyParams kp = skinny_params(p, args);
  kernels::SkinnyStreamArgs sa;
  sa.partials = static_cast<float4*>(partials);
  sa.counters = counters;
  sa.units = static_cast<int>(plan.units);
  sa.per_cta = static_cast<int>(plan.per_cta);
  sa.kb_total = plan.kb_total;
  sa.prefetch_units = plan.prefetch_units;
  allow_dynamic_smem<kernel>(Shape::kSmemBytes);  // a refusal shows as the launch's error
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(plan.grid), 1, 1);
  config.blockDim = dim3(Shape::kThreads, 1, 1);
  config.dynamicSmemBytes = static_cast<std::size_t>(Shape::kSmemBytes);
  config.stream = reinterpret_cast<cudaStream_t>(stream);
  cudaLaunchAttribute pdl{};
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  if (skinny_pdl_enabled()) {
    config.attrs = &pdl;
    config.numAttrs = 1;
    if (cudaLaunchKernelEx(&config, kernel, kp, sa) == cudaSuccess) return;
    // Refused (a driver or stream that cannot take it): clear the error, launch plainly from now
    // on. The kernel is the same either way (its dependency wait returns at once).
    cudaGetLastError();
    skinny_pdl_disable();
    config.attrs = nullptr;
    config.numAttrs = 0;
  }
  TGEMM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, kp, sa), where);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int M_TILE, int ROWS_PER_WARP, int WARPS_N, int WARPS_K, int UNROLL, int XKB>
SkinnyKernelInfo skinny_stream_query() {
  using Shape = kernels::SkinnyStreamShape<M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, XKB>;
  return query_image<&kernels::sm90_gemm_skinny_stream<In, M_TILE, ROWS_PER_WARP, WARPS_N, WARPS_K, UNROLL, XKB>>(
      Shape::kThreads, Shape::kSmemBytes, Shape::kSmemBytes);
}

// Appends the TGEMM_SKINNY_STREAM_TILES entries with MIN_M_TILE <= m_tile <= MAX_M_TILE.
template <typename In, int MIN_M_TILE, int MAX_M_TILE>
void append_skinny_stream_kernels(std::vector<SkinnyStreamKernel>& out) {
#define TGEMM_SKINNY_STREAM_APPEND(MT, RW, WN, WK, U, XKB)                                   \
  if constexpr (MT >= MIN_M_TILE && MT <= MAX_M_TILE) {                                      \
    SkinnyStreamKernel k;                                                                    \
    k.tile = SkinnyStreamTile{MT, RW, WN, WK, U, XKB};                                       \
    k.in = dtype_of<In>();                                                                   \
    k.launch = &launch_skinny_stream<In, MT, RW, WN, WK, U, XKB>;                            \
    k.query = &skinny_stream_query<In, MT, RW, WN, WK, U, XKB>;                              \
    out.push_back(k);                                                                        \
  }
  TGEMM_SKINNY_STREAM_TILES(TGEMM_SKINNY_STREAM_APPEND)
#undef TGEMM_SKINNY_STREAM_APPEND
}

// --- Version 4: GEMV ----------------------------------------------------------------------------

template <typename In, int M_MAX, int WARPS, int CHUNKS>
// segs: the solution's SkinnyGemvTile::segs (a power of two <= WARPS by construction).
void launch_skinny_gemv(const GemmProblem& p, const GemmArgs& args, int segs, Stream stream, const char* where) {
  const std::int64_t rows_per_cta = WARPS / segs;
  const std::int64_t grid = (p.n + rows_per_cta - 1) / rows_per_cta;
  kernels::sm90_gemv_skinny<In, M_MAX, WARPS, CHUNKS>
      <<<static_cast<unsigned>(grid), 32 * WARPS, 0, reinterpret_cast<cudaStream_t>(stream)>>>(skinny_params(p, args),
                                                                                               segs);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int M_MAX, int WARPS, int CHUNKS>
SkinnyKernelInfo skinny_gemv_query() {
  return query_image<&kernels::sm90_gemv_skinny<In, M_MAX, WARPS, CHUNKS>>(32 * WARPS, 0, 0);
}

template <typename In>
void append_skinny_gemv_kernels(std::vector<SkinnyGemvKernel>& out) {
#define TGEMM_SKINNY_GEMV_APPEND(MM, W, C)                  \
  {                                                         \
    SkinnyGemvKernel k;                                     \
    k.tile = SkinnyGemvTile{MM, W, C};                      \
    k.in = dtype_of<In>();                                  \
    k.launch = &launch_skinny_gemv<In, MM, W, C>;           \
    k.query = &skinny_gemv_query<In, MM, W, C>;             \
    out.push_back(k);                                       \
  }
  TGEMM_SKINNY_GEMV_TILES(TGEMM_SKINNY_GEMV_APPEND)
#undef TGEMM_SKINNY_GEMV_APPEND
}

// --- Version 5: bulk-copy GEMV --------------------------------------------------------------

template <typename In, int M_MAX, int CONSUMERS>
void launch_skinny_bulk(const GemmProblem& p, const GemmArgs& args, int grid, Stream stream, const char* where) {
  constexpr auto kernel = &kernels::sm90_gemv_bulk<In, M_MAX, CONSUMERS>;
  const kernels::GemvBulkPlan plan = kernels::gemv_bulk_plan(p.n, p.k, CONSUMERS, kSkinnyBulkRingBytes);
  allow_dynamic_smem<kernel>(static_cast<int>(kSkinnyBulkRingBytes));  // a refusal shows as the launch's error
  kernel<<<static_cast<unsigned>(grid), 32 * (CONSUMERS + 1),
           static_cast<std::size_t>(kernels::gemv_bulk_smem_bytes(plan, CONSUMERS)),
           reinterpret_cast<cudaStream_t>(stream)>>>(skinny_params(p, args), plan);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int M_MAX, int CONSUMERS>
SkinnyKernelInfo skinny_bulk_query() {
  constexpr int kRing = static_cast<int>(kSkinnyBulkRingBytes);
  return query_image<&kernels::sm90_gemv_bulk<In, M_MAX, CONSUMERS>>(32 * (CONSUMERS + 1), kRing, kRing);
}

template <typename In>
void append_skinny_bulk_kernels(std::vector<SkinnyBulkKernel>& out) {
#define TGEMM_SKINNY_BULK_APPEND(MM, CW)                \
  {                                                     \
    SkinnyBulkKernel k;                                 \
    k.tile = SkinnyBulkTile{MM, CW};                    \
    k.in = dtype_of<In>();                              \
    k.launch = &launch_skinny_bulk<In, MM, CW>;         \
    k.query = &skinny_bulk_query<In, MM, CW>;           \
    out.push_back(k);                                   \
  }
  TGEMM_SKINNY_BULK_TILES(TGEMM_SKINNY_BULK_APPEND)
#undef TGEMM_SKINNY_BULK_APPEND
}

// --- Version 7: the weight as the MMA's B operand ------------------------------------------------

template <typename In, int RB, int C, int W, int U>
void launch_skinny_bop(const GemmProblem& p, const GemmArgs& args, int split_k, Stream stream, const char* where) {
  using Shape = kernels::SkinnyBopShape<RB, C, W, U>;
  constexpr auto kernel = &kernels::sm90_gemm_skinny_bop<In, RB, C, W, U>;
  allow_dynamic_smem<kernel>(Shape::kMaxSmemBytes);  // a refusal shows as the launch's error
  cudaLaunchAttribute attr{};
  unsigned n_attrs = 0;
  const cudaLaunchConfig_t config = split_k_config(p.n, Shape::kRows, split_k, Shape::kThreads, Shape::smem_bytes(split_k),
                                                   stream, &attr, n_attrs);
  TGEMM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, skinny_params(p, args)), where);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <typename In, int RB, int C, int W, int U>
SkinnyKernelInfo skinny_bop_query(int split_k) {
  using Shape = kernels::SkinnyBopShape<RB, C, W, U>;
  return query_image<&kernels::sm90_gemm_skinny_bop<In, RB, C, W, U>>(Shape::kThreads, Shape::smem_bytes(split_k),
                                                                       Shape::kMaxSmemBytes);
}

// Appends the TGEMM_SKINNY_TILES entries with MIN_M_TILE <= m_tile <= MAX_M_TILE (and the
// TGEMM_SKINNY_BOP_TILES, M tile 16, when it is in range); the others are discarded statements,
// so this translation unit instantiates only its share.
template <typename In, int MIN_M_TILE, int MAX_M_TILE>
void append_skinny_kernels(std::vector<SkinnyKernel>& out) {
#define TGEMM_SKINNY_APPEND(MT, RW, WN, WK, U, S)                                            \
  if constexpr (MT >= MIN_M_TILE && MT <= MAX_M_TILE) {                                      \
    SkinnyKernel k;                                                                          \
    k.tile = SkinnyTile{MT, RW, WN, WK, U, S};                                               \
    k.in = dtype_of<In>();                                                                   \
    k.launch = &launch_skinny<In, MT, RW, WN, WK, U, S>;                                     \
    k.query = &skinny_query<In, MT, RW, WN, WK, U, S>;                                       \
    out.push_back(k);                                                                        \
  }
  TGEMM_SKINNY_TILES(TGEMM_SKINNY_APPEND)
#undef TGEMM_SKINNY_APPEND
#define TGEMM_SKINNY_BOP_APPEND(RB, C, W, U)                                                 \
  if constexpr (16 >= MIN_M_TILE && 16 <= MAX_M_TILE) {                                      \
    SkinnyKernel k;                                                                          \
    k.tile = SkinnyTile{16, 8 * RB, 1, W, U, 0, C};                                          \
    k.in = dtype_of<In>();                                                                   \
    k.launch = &launch_skinny_bop<In, RB, C, W, U>;                                          \
    k.query = &skinny_bop_query<In, RB, C, W, U>;                                            \
    out.push_back(k);                                                                        \
  }
  TGEMM_SKINNY_BOP_TILES(TGEMM_SKINNY_BOP_APPEND)
#undef TGEMM_SKINNY_BOP_APPEND
}

}  // namespace tgemm::skinny
