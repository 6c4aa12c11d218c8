// Host side of one CUTLASS kernel instance: problem + run-time settings -> CUTLASS arguments
// (pointers, strides, alpha/beta, bias, activation, scheduler), the instance's own checks, its
// workspace size, the launch, and the image queries. Included only by the generated instance
// translation units (build/.../generated/cutlass/<instance>.cu, tools/generate_cutlass_instances.py).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/cutlass/cutlass_kernels.h"
#include "cuda/cuda_check.h"
#include "kernels/sm90/sm90_gemm_cutlass.cuh"

namespace tgemm::cutlass_sm90 {

// A row stride the TMA descriptor accepts for a matrix with a single row: that row's stride is
// never used (validate reports max(stride, 1)), but the descriptor still needs a multiple of
// 16 bytes, so any multiple of `align` >= cols does.
inline std::int64_t tma_row_stride(std::int64_t rows, std::int64_t ld, std::int64_t cols, std::int64_t align) {
  if (rows > 1) return ld;
  return (std::max<std::int64_t>(cols, 1) + align - 1) / align * align;
}

template <class Instance>
typename Instance::GemmKernel::Arguments make_arguments(const GemmProblem& p, const GemmArgs& a,
                                                        const CutlassRuntime& rt, const CutlassDevice& device) {
  using Kernel = typename Instance::GemmKernel;
  using ElementA = typename Instance::ElementA;
  using ElementB = typename Instance::ElementB;
  using ElementC = typename Instance::ElementC;
  using ElementD = typename Instance::ElementD;
  using StrideA = typename Kernel::StrideA;
  using StrideB = typename Kernel::StrideB;
  using StrideC = typename Kernel::StrideC;
  using StrideD = typename Kernel::StrideD;
  namespace sched = cutlass::gemm::kernel::detail;

  const std::int64_t lda = tma_row_stride(p.m, p.lda, p.k, Instance::kAlignmentA);
  const std::int64_t ldb = tma_row_stride(p.n, p.ldb, p.k, Instance::kAlignmentB);
  const std::int64_t ldo = tma_row_stride(p.m, p.ldo, p.n, Instance::kAlignmentD);
  // Without c the epilogue never reads C (beta = 0 skips its loads), but its TMA descriptor is
  // still built: point it at out.
  const std::int64_t ldc = p.use_c ? tma_row_stride(p.m, p.ldc, p.n, Instance::kAlignmentC) : ldo;

  typename Kernel::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), 1};
  // Strides (rows, 1, batch); the batch stride of the single batch is the matrix size, a
  // multiple of 16 bytes as the descriptor requires.
  args.mainloop.ptr_A = static_cast<const ElementA*>(a.a);
  args.mainloop.dA = StrideA{lda, cute::Int<1>{}, lda * p.m};
  args.mainloop.ptr_B = static_cast<const ElementB*>(a.b);
  args.mainloop.dB = StrideB{ldb, cute::Int<1>{}, ldb * p.n};
  args.epilogue.ptr_C = static_cast<const ElementC*>(p.use_c ? a.c : a.out);
  args.epilogue.dC = StrideC{ldc, cute::Int<1>{}, ldc * p.m};
  args.epilogue.ptr_D = static_cast<ElementD*>(a.out);
  args.epilogue.dD = StrideD{ldo, cute::Int<1>{}, ldo * p.m};
  auto& thread = args.epilogue.thread;
  thread.alpha = a.alpha;
  thread.beta = p.use_c ? a.beta : 0.0f;
  if constexpr (Instance::kEpilogue == EpilogueKind::kBiasAct) {
    thread.bias_ptr = p.has_bias() ? static_cast<const typename Instance::ElementBias*>(a.bias) : nullptr;
    thread.activation.activation = static_cast<int>(p.activation);
  }
  args.hw_info.device_id = p.device;
  args.hw_info.sm_count = device.sm_count;
  args.hw_info.max_active_clusters = device.max_active_clusters;
  args.scheduler.raster_order =
      rt.raster == Raster::kAlongN ? sched::RasterOrderOptions::AlongN : sched::RasterOrderOptions::AlongM;
  args.scheduler.max_swizzle_size = rt.swizzle;
  if constexpr (Instance::kScheduler == TileScheduler::kStreamK) {
    // Turnstile reduction in K order: bit-identical results run to run.
    args.scheduler.reduction_mode = sched::ReductionMode::Deterministic;
    switch (rt.decomposition) {
      case Decomposition::kStreamK:
        args.scheduler.decomposition_mode = sched::DecompositionMode::StreamK;
        args.scheduler.splits = 1;
        break;
      case Decomposition::kSplitK:
        args.scheduler.decomposition_mode = sched::DecompositionMode::SplitK;
        args.scheduler.splits = rt.splits;
        break;
      default:
        args.scheduler.decomposition_mode = sched::DecompositionMode::DataParallel;
        args.scheduler.splits = 1;
        break;
    }
  }
  return args;
}

// CUTLASS's own checks of the instance (TMA alignment of the contiguous extents, the scheduler's
// arguments); shapes and strides only: the pointers are placeholders.
template <class Instance>
bool cutlass_can_implement(const GemmProblem& p, const CutlassRuntime& rt) noexcept {
  try {
    GemmArgs placeholder;
    CutlassDevice device{1, 0};
    return Instance::GemmKernel::can_implement(make_arguments<Instance>(p, placeholder, rt, device));
  } catch (...) {
    return false;
  }
}

template <class Instance>
std::size_t cutlass_workspace_size(const GemmProblem& p, const CutlassRuntime& rt, const CutlassDevice& device) {
  return Instance::GemmKernel::get_workspace_size(make_arguments<Instance>(p, GemmArgs{}, rt, device));
}

// A CUTLASS status as tgemm::Error naming the kernel; a CUDA error the call left behind is named
// too, and cleared so it does not stick to the next call.
[[noreturn]] inline void throw_cutlass_error(const char* call, cutlass::Status status, const char* where) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    detail::throw_error(where, call, " failed: ", cutlass::cutlassGetStatusString(status), " (",
                        cudaGetErrorName(err), ": ", cudaGetErrorString(err), ")");
  detail::throw_error(where, call, " failed: ", cutlass::cutlassGetStatusString(status));
}

template <class Instance>
void cutlass_run(const GemmProblem& p, const GemmArgs& a, const CutlassRuntime& rt, const CutlassDevice& device,
                 const Workspace& ws, Stream stream, const char* where) {
  using Kernel = typename Instance::GemmKernel;
  const auto args = make_arguments<Instance>(p, a, rt, device);
  const std::size_t need = Kernel::get_workspace_size(args);
  TGEMM_CHECK(ws.bytes >= need && (need == 0 || ws.data != nullptr), where, "workspace of ", ws.bytes,
              " bytes given, ", need, " needed");
  const auto s = reinterpret_cast<cudaStream_t>(stream);
  cutlass::Status st = Kernel::initialize_workspace(args, ws.data, s);
  if (st != cutlass::Status::kSuccess) throw_cutlass_error("initialize_workspace", st, where);
  // Params hold the TMA descriptors, encoded on the host: a few microseconds, no device calls.
  typename Kernel::Params params = Kernel::to_underlying_arguments(args, ws.data);
  st = Instance::Gemm::run(params, s);
  if (st != cutlass::Status::kSuccess) throw_cutlass_error("GemmUniversalAdapter::run", st, where);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <class Instance>
CutlassKernelInfo cutlass_query() noexcept {
  using Kernel = typename Instance::GemmKernel;
  CutlassKernelInfo info;
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, cutlass::device_kernel<Kernel>) != cudaSuccess) {
    cudaGetLastError();  // a failed query (no image for this device) must not leave an error behind
    return info;
  }
  info.binary_version = attr.binaryVersion;
  info.ptx_version = attr.ptxVersion;
  info.registers = attr.numRegs;
  info.local_bytes = static_cast<int>(attr.localSizeBytes);
  info.smem_bytes = static_cast<int>(Kernel::SharedStorageSize);
  info.threads = static_cast<int>(Kernel::MaxThreadsPerBlock);
  return info;
}

template <class Instance>
int cutlass_prepare() noexcept {
  using Kernel = typename Instance::GemmKernel;
  const void* kernel = reinterpret_cast<const void*>(cutlass::device_kernel<Kernel>);
  const int smem = static_cast<int>(Kernel::SharedStorageSize);
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  // Clusters that fit at once with this shared memory (the persistent grid's size).
  cudaLaunchConfig_t config{};
  const unsigned cm = Instance::kClusterM, cn = Instance::kClusterN;
  config.gridDim = dim3(cm, cn, 1);
  config.blockDim = dim3(Kernel::MaxThreadsPerBlock, 1, 1);
  config.dynamicSmemBytes = static_cast<std::size_t>(smem);
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = cm;
  cluster.val.clusterDim.y = cn;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    cudaGetLastError();
    return 0;  // unknown: CUTLASS sizes the grid from the SM count
  }
  return clusters;
}

template <class Instance>
CutlassKernel make_cutlass_kernel(const char* generated_name) {
  CutlassKernel k;
  k.config = Instance::config();
  k.generated_name = generated_name;
  k.can_implement = &cutlass_can_implement<Instance>;
  k.workspace_size = &cutlass_workspace_size<Instance>;
  k.run = &cutlass_run<Instance>;
  k.query = &cutlass_query<Instance>;
  k.prepare = &cutlass_prepare<Instance>;
  return k;
}

}  // namespace tgemm::cutlass_sm90
