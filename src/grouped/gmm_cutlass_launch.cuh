// Host side of one CUTLASS grouped GEMM instance (kernels/sm90/sm90_grouped_gemm_cutlass.cuh):
// the workspace layout, the kernel that writes the per-group arguments on the device from the row
// offsets (so no group size ever reaches the host and a captured graph follows sizes that change
// between replays), the CUTLASS arguments with device-only problem shapes, and the launch.
// Included only by the generated instance translation units (tools/generate_cutlass_instances.py).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "backends/cutlass/cutlass_launch.cuh"
#include "cuda/cuda_check.h"
#include "grouped/gmm_cutlass.h"
#include "kernels/sm90/sm90_grouped_gemm_cutlass.cuh"

namespace tgemm::grouped_cutlass {

constexpr int kArgsThreads = 128;
// CUTLASS's tensor maps are 128-byte objects and want their workspace 128-byte aligned.
constexpr std::size_t kSectionAlign = 128;

inline std::size_t align_up(std::size_t bytes) { return (bytes + kSectionAlign - 1) / kSectionAlign * kSectionAlign; }

// Workspace sections, each 128-byte aligned: shapes (G x (M, N, K) int32), pointers to A, B and
// D (G each), strides of A, B and D (G each), then CUTLASS's own workspace.
template <class Instance>
struct GroupedArgsLayout {
  using Shape = typename Instance::ProblemShape::UnderlyingProblemShape;
  Shape* shapes;
  const typename Instance::ElementA** ptr_a;
  const typename Instance::ElementB** ptr_b;
  typename Instance::ElementD** ptr_d;
  typename Instance::StrideA* stride_a;
  typename Instance::StrideB* stride_b;
  typename Instance::StrideD* stride_d;
  void* cutlass;
  std::size_t args_bytes;

  static GroupedArgsLayout carve(void* base, std::int64_t groups) {
    const auto g = static_cast<std::size_t>(groups);
    GroupedArgsLayout w{};
    auto* at = static_cast<char*>(base);
    std::size_t off = 0;
    auto take = [&](std::size_t bytes) -> void* {
      void* ptr = at == nullptr ? nullptr : at + off;
      off += align_up(bytes);
      return ptr;
    };
    w.shapes = static_cast<Shape*>(take(g * sizeof(Shape)));
    w.ptr_a = static_cast<const typename Instance::ElementA**>(take(g * sizeof(void*)));
    w.ptr_b = static_cast<const typename Instance::ElementB**>(take(g * sizeof(void*)));
    w.ptr_d = static_cast<typename Instance::ElementD**>(take(g * sizeof(void*)));
    w.stride_a = static_cast<typename Instance::StrideA*>(take(g * sizeof(typename Instance::StrideA)));
    w.stride_b = static_cast<typename Instance::StrideB*>(take(g * sizeof(typename Instance::StrideB)));
    w.stride_d = static_cast<typename Instance::StrideD*>(take(g * sizeof(typename Instance::StrideD)));
    w.cutlass = at == nullptr ? nullptr : at + off;
    w.args_bytes = off;
    return w;
  }
};

// Group g's problem (rows, N, K), its A, B and D pointers and strides. A group of 0 rows gets 0
// tiles from the tile scheduler, so its pointers are never dereferenced.
template <class Instance>
__global__ void __launch_bounds__(kArgsThreads) grouped_args_kernel(GroupedLaunch l, GroupedArgsLayout<Instance> w) {
  const std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * kArgsThreads + threadIdx.x;
  if (g >= l.groups) return;
  const std::int64_t row0 = l.row_off[g];
  const std::int64_t rows = max(l.row_off[g + 1] - row0, std::int64_t{0});
  w.shapes[g] = cute::make_shape(static_cast<int>(rows), static_cast<int>(l.n), static_cast<int>(l.k));
  w.ptr_a[g] = static_cast<const typename Instance::ElementA*>(l.a) + row0 * l.lda;
  w.ptr_b[g] = static_cast<const typename Instance::ElementB*>(l.b) + g * l.b_group_stride;
  w.ptr_d[g] = static_cast<typename Instance::ElementD*>(l.d) + row0 * l.ldd;
  typename Instance::StrideA sa{};
  cute::get<0>(sa) = l.lda;  // (M, K, L): rows at lda, K contiguous
  typename Instance::StrideB sb{};
  if constexpr (Instance::kBKMajor) {
    cute::get<0>(sb) = l.ldb;  // (N, K, L): [N, K] rows at ldb
  } else {
    cute::get<1>(sb) = l.ldb;  // (N, K, L): [K, N] rows at ldb, N contiguous
  }
  typename Instance::StrideD sd{};
  cute::get<0>(sd) = l.ldd;
  w.stride_a[g] = sa;
  w.stride_b[g] = sb;
  w.stride_d[g] = sd;
}

template <class Instance>
typename Instance::GemmKernel::Arguments grouped_arguments(const GroupedLaunch& l,
                                                           const GroupedArgsLayout<Instance>& w) {
  typename Instance::GemmKernel::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  // Device shapes only (host shapes null): the tile scheduler reads them in the kernel.
  args.problem_shape = {static_cast<int>(l.groups), w.shapes, nullptr};
  args.mainloop.ptr_A = w.ptr_a;
  args.mainloop.dA = w.stride_a;
  args.mainloop.ptr_B = w.ptr_b;
  args.mainloop.dB = w.stride_b;
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  args.epilogue.ptr_C = nullptr;  // ElementC = void: no source
  args.epilogue.dC = w.stride_d;
  args.epilogue.ptr_D = w.ptr_d;
  args.epilogue.dD = w.stride_d;
  args.hw_info.device_id = l.device;
  args.hw_info.sm_count = l.sm_count;
  return args;
}

template <class Instance>
std::size_t grouped_workspace_size(std::int64_t groups, int sm_count) {
  GroupedLaunch l;
  l.groups = groups;
  l.sm_count = sm_count;
  const auto w = GroupedArgsLayout<Instance>::carve(nullptr, groups);
  return w.args_bytes + Instance::GemmKernel::get_workspace_size(grouped_arguments<Instance>(l, w));
}

template <class Instance>
void grouped_run(const GroupedLaunch& l, void* workspace, Stream stream, const char* where) {
  using Kernel = typename Instance::GemmKernel;
  const auto w = GroupedArgsLayout<Instance>::carve(workspace, l.groups);
  const auto s = reinterpret_cast<cudaStream_t>(stream);
  const auto blocks = static_cast<unsigned>((l.groups + kArgsThreads - 1) / kArgsThreads);
  grouped_args_kernel<Instance><<<blocks, kArgsThreads, 0, s>>>(l, w);
  TGEMM_CUDA_CHECK_LAUNCH(where);
  const auto args = grouped_arguments<Instance>(l, w);
  cutlass::Status st = Kernel::can_implement(args) ? cutlass::Status::kSuccess : cutlass::Status::kErrorInvalidProblem;
  if (st != cutlass::Status::kSuccess) cutlass_sm90::throw_cutlass_error("can_implement", st, where);
  // The tensor-map copies need no initial contents (each CTA writes its own from Params); the
  // call costs nothing and keeps the adapter's contract.
  st = Kernel::initialize_workspace(args, w.cutlass, s);
  if (st != cutlass::Status::kSuccess) cutlass_sm90::throw_cutlass_error("initialize_workspace", st, where);
  // Params hold the TMA descriptors, encoded on the host from placeholder shapes: the kernel
  // rewrites its per-SM copies in the workspace for each group it visits.
  typename Kernel::Params params = Kernel::to_underlying_arguments(args, w.cutlass);
  st = Instance::Gemm::run(params, s);
  if (st != cutlass::Status::kSuccess) cutlass_sm90::throw_cutlass_error("GemmUniversalAdapter::run", st, where);
  TGEMM_CUDA_CHECK_LAUNCH(where);
}

template <class Instance>
int grouped_binary_version() noexcept {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, cutlass::device_kernel<typename Instance::GemmKernel>) != cudaSuccess) {
    cudaGetLastError();  // a failed query (no image for this device) must not leave an error behind
    return 0;
  }
  return attr.binaryVersion;
}

template <class Instance>
bool grouped_prepare() noexcept {
  using Kernel = typename Instance::GemmKernel;
  const void* kernel = reinterpret_cast<const void*>(cutlass::device_kernel<Kernel>);
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(Kernel::SharedStorageSize)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

template <class Instance>
GroupedKernel make_grouped_kernel(const char* generated_name) {
  GroupedKernel k;
  k.config = Instance::config();
  k.generated_name = generated_name;
  k.workspace_size = &grouped_workspace_size<Instance>;
  k.run = &grouped_run<Instance>;
  k.binary_version = &grouped_binary_version<Instance>;
  k.prepare = &grouped_prepare<Instance>;
  return k;
}

}  // namespace tgemm::grouped_cutlass
