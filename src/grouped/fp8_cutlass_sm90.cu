// m_grouped_gemm_fp8_contiguous / _masked on CUTLASS 4.2's sm_90a pointer-array FP8 grouped GEMM
// with blockwise scaling (KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise; mainloop
// sm90_mma_array_tma_gmma_ss_warpspecialized_fp8_blockwise_scaling.hpp), one instance:
//   D_g[M_g, N] = sum_b (A_g[:, block b] @ B_g[block b, :]) * SFA_g[:, b] * SFB_g[n / 128, b]
// A_g = the group's rows of x (K-major), B_g = w[g] ([N, K], K-major), D_g = the group's rows of
// out (bf16), 1x128 x scales and 128x128 w scales, fp32 accumulation promoted once per 128-wide
// K block (the instance's BLK_K), one rounding to bf16. Tile 128x128x128, cooperative (two
// consumer warpgroups of 64 rows), clusters of 1x2 CTAs (A multicast along N), persistent over
// SM-count CTAs walking the groups on the device.
// Per call, on the stream, no host synchronisation (src/grouped/fp8_cutlass.h says why each step):
//  contiguous: memset of the segment counters; segments_kernel (each group's run of rows in
//    m_indices, the "unsorted" flag); prepare_kernel; the CUTLASS kernel; the tile kernel behind
//    the flag;
//  masked: prepare_kernel; the CUTLASS kernel.
// prepare_kernel writes each group's shape (M_g, N, K), pointers, strides and scale layouts,
// repacks x_scale (compact MN-major per group) and w_scale (MN-major per group) into the
// workspace, and writes zeros to the contiguous layout's padding rows.
// Preconditions: fp8_cutlass::can_take and loadable (src/grouped/fp8_cutlass.h).
// Tested by tests/gpu/test_grouped_fp8.cpp (TGEMM_GROUPED_BACKEND=cutlass and auto); benched by
// bench/torch_bench.py --fp8-contiguous and --fp8-masked.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include <cutlass/detail/blockwise_scale_layout.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>

#include "backends/cutlass/cutlass_launch.cuh"
#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "grouped/fp8_cutlass.h"
#include "grouped/fp8_grouped_launch.h"

namespace tgemm::fp8_cutlass {

namespace {

using cute::_1;
using cute::_128;
using cute::_2;

// The types of the one instance.
struct Instance {
  using ElementA = cutlass::float_e4m3_t;
  using ElementB = cutlass::float_e4m3_t;
  using ElementD = cutlass::bfloat16_t;
  using ElementAccumulator = float;
  using LayoutA = cutlass::layout::RowMajor;     // x rows: K-major
  using LayoutB = cutlass::layout::ColumnMajor;  // w [N, K]: B (K x N) K-major
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignmentAB = 16;  // FP8 elements per 16-byte TMA unit
  static constexpr int kAlignmentD = 8;    // bf16 elements per 16-byte TMA unit

  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;  // per group (M, N, K)
  using TileShape = cute::Shape<_128, _128, _128>;                                    // (BLK_M,BLK_N,BLK_K)
  // Pairs of CTAs along N share each A tile by TMA multicast (CUTLASS's own example of this
  // kernel does the same): N, shared by every group, has an even tile count at every DeepGEMM
  // shape, while a group's M often holds one tile, too few to pair along M.
  using ClusterShape = cute::Shape<_1, _2, _1>;
  static_assert(kTileM == 128 && kTileN == 128 && kTileK == 128, "fp8_cutlass.h names this tile");

  // Scale granularity (M, N, K) = (1, 128, 128): one x scale per row and 128-wide K block, one w
  // scale per 128x128 block; MN-major for both, the only majors the sm90 mainloop reads.
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());

  using KernelSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise;
  using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
  // D = acc (alpha 1, no source: ElementC void, no C loads or shared memory).
  using FusionOperation = cutlass::epilogue::fusion::LinearCombination<ElementD, float, void, float>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, float, void, LayoutD*, kAlignmentD, ElementD,
      LayoutD*, kAlignmentD, EpilogueSchedule, FusionOperation>::CollectiveOp;

  // (LayoutX *, LayoutSFX *): the grouped forms, one stride and one scale layout per group.
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, cute::tuple<LayoutA*, LayoutSFA*>, kAlignmentAB,
      ElementB, cute::tuple<LayoutB*, LayoutSFB*>, kAlignmentAB, ElementAccumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KernelSchedule>::CollectiveOp;

  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

  using Shape = ProblemShape::UnderlyingProblemShape;
  using StrideA = typename GemmKernel::InternalStrideA;
  using StrideB = typename GemmKernel::InternalStrideB;
  using StrideD = typename GemmKernel::InternalStrideD;
};

using ElementA = Instance::ElementA;
using ElementB = Instance::ElementB;
using ElementD = Instance::ElementD;

constexpr int kThreads = 256;
constexpr std::size_t kSectionAlign = 128;  // CUTLASS's tensor-map copies want 128-byte alignment
constexpr int kScaleBlock = 128;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::size_t align_up(std::size_t bytes) { return (bytes + kSectionAlign - 1) / kSectionAlign * kSectionAlign; }

// Rows of x_scale the repack covers: M (contiguous) or G * max_m (masked).
std::int64_t scale_rows(const Fp8GroupedProblem& p) { return p.masked ? p.groups * p.rows : p.rows; }

// Workspace sections, each 128-byte aligned.
struct Sections {
  // Contiguous: [0] the unsorted flag, [1, G] runs per group, then run start[G] and end[G].
  std::int32_t* seg;
  Instance::Shape* shapes;
  const ElementA** ptr_a;
  const ElementB** ptr_b;
  ElementD** ptr_d;
  const float** ptr_sfa;
  const float** ptr_sfb;
  Instance::StrideA* stride_a;
  Instance::StrideB* stride_b;
  Instance::StrideD* stride_d;
  Instance::LayoutSFA* layout_sfa;
  Instance::LayoutSFB* layout_sfb;
  float* sfa;  // x scales, group g compact MN-major: (m, b) at base_g + b * M_g + m
  float* sfb;  // w scales [G][L][ceil(N / 128)]
  void* cutlass;
  std::size_t args_bytes;

  static Sections carve(void* base, const Fp8GroupedProblem& p) {
    const auto g = static_cast<std::size_t>(p.groups);
    const auto blocks_k = static_cast<std::size_t>(ceil_div(p.k, kScaleBlock));
    const auto blocks_n = static_cast<std::size_t>(ceil_div(p.n, kScaleBlock));
    Sections s{};
    auto* at = static_cast<char*>(base);
    std::size_t off = 0;
    auto take = [&](std::size_t bytes) -> void* {
      void* ptr = at == nullptr ? nullptr : at + off;
      off += align_up(bytes);
      return ptr;
    };
    s.seg = static_cast<std::int32_t*>(take((1 + 3 * g) * sizeof(std::int32_t)));
    s.shapes = static_cast<Instance::Shape*>(take(g * sizeof(Instance::Shape)));
    s.ptr_a = static_cast<const ElementA**>(take(g * sizeof(void*)));
    s.ptr_b = static_cast<const ElementB**>(take(g * sizeof(void*)));
    s.ptr_d = static_cast<ElementD**>(take(g * sizeof(void*)));
    s.ptr_sfa = static_cast<const float**>(take(g * sizeof(void*)));
    s.ptr_sfb = static_cast<const float**>(take(g * sizeof(void*)));
    s.stride_a = static_cast<Instance::StrideA*>(take(g * sizeof(Instance::StrideA)));
    s.stride_b = static_cast<Instance::StrideB*>(take(g * sizeof(Instance::StrideB)));
    s.stride_d = static_cast<Instance::StrideD*>(take(g * sizeof(Instance::StrideD)));
    s.layout_sfa = static_cast<Instance::LayoutSFA*>(take(g * sizeof(Instance::LayoutSFA)));
    s.layout_sfb = static_cast<Instance::LayoutSFB*>(take(g * sizeof(Instance::LayoutSFB)));
    s.sfa = static_cast<float*>(take(static_cast<std::size_t>(scale_rows(p)) * blocks_k * sizeof(float)));
    s.sfb = static_cast<float*>(take(g * blocks_n * blocks_k * sizeof(float)));
    s.cutlass = at == nullptr ? nullptr : at + off;
    s.args_bytes = off;
    return s;
  }
};

struct PrepareParams {
  Fp8GroupedProblem p;
  Fp8GroupedArgs a;
  std::int64_t blocks_k, blocks_n;
};

// Contiguous layout, one thread per row: where a run of one group's rows starts and ends. A group
// whose rows form one run gets runs[g] = 1, start[g] and end[g]; a second run sets the flag.
// Rows outside [0, G) belong to no run.
__global__ void __launch_bounds__(kThreads)
    segments_kernel(const std::int32_t* __restrict__ index, std::int64_t m, std::int64_t groups, std::int32_t* seg) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= m) return;
  const std::int32_t g = index[r];
  if (g < 0 || g >= groups) return;
  std::int32_t* runs = seg + 1;
  std::int32_t* start = runs + groups;
  std::int32_t* end = start + groups;
  if (r == 0 || index[r - 1] != g) {
    if (atomicAdd(&runs[g], 1) > 0) atomicOr(&seg[0], 1);
    start[g] = static_cast<std::int32_t>(r);
  }
  if (r + 1 == m || index[r + 1] != g) end[g] = static_cast<std::int32_t>(r + 1);
}

// Group g's rows in the layout: first row (contiguous) and count M_g, and whether CUTLASS runs it.
struct GroupRows {
  std::int64_t first = 0, rows = 0;
};

__device__ __forceinline__ GroupRows group_rows(const PrepareParams& q, const std::int32_t* seg, std::int64_t g) {
  GroupRows out;
  if (q.p.masked) {
    out.rows = min(max(static_cast<std::int64_t>(q.a.group_data[g]), std::int64_t{0}), q.p.rows);
    return out;
  }
  const std::int32_t* runs = seg + 1;
  if (runs[g] == 1) {
    out.first = runs[q.p.groups + g];
    out.rows = runs[2 * q.p.groups + g] - out.first;
  }
  return out;
}

// Group g's shape, pointers, strides and scale layouts. Contiguous and unsorted: 0 rows for
// every group (the tile kernel computes the call).
__device__ void write_group_args(const PrepareParams& q, const Sections& w, std::int64_t g) {
  const Fp8GroupedProblem& p = q.p;
  GroupRows gr = group_rows(q, w.seg, g);
  if (!p.masked && w.seg[0] != 0) gr = GroupRows{};
  const auto* x = static_cast<const ElementA*>(q.a.x);
  auto* out = static_cast<ElementD*>(q.a.out);
  const std::int64_t x_off = p.masked ? g * p.x_group_stride : gr.first * p.lda;
  const std::int64_t out_off = p.masked ? g * p.out_group_stride : gr.first * p.ldo;
  const std::int64_t sfa_off = (p.masked ? g * p.rows : gr.first) * q.blocks_k;
  const auto m = static_cast<int>(gr.rows), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  w.shapes[g] = cute::make_shape(m, n, k);
  w.ptr_a[g] = x + x_off;
  w.ptr_b[g] = static_cast<const ElementB*>(q.a.w) + g * p.w_group_stride;
  w.ptr_d[g] = out + out_off;
  w.ptr_sfa[g] = w.sfa + sfa_off;
  w.ptr_sfb[g] = w.sfb + g * q.blocks_n * q.blocks_k;
  Instance::StrideA sa{};
  cute::get<0>(sa) = p.lda;  // (M, K, L): rows at lda, K contiguous
  Instance::StrideB sb{};
  cute::get<0>(sb) = p.ldw;  // (N, K, L): w rows at ldw, K contiguous
  Instance::StrideD sd{};
  cute::get<0>(sd) = p.ldo;
  w.stride_a[g] = sa;
  w.stride_b[g] = sb;
  w.stride_d[g] = sd;
  w.layout_sfa[g] = Instance::ScaleConfig::tile_atom_to_shape_SFA(cute::make_shape(m, n, k, 1));
  w.layout_sfb[g] = Instance::ScaleConfig::tile_atom_to_shape_SFB(cute::make_shape(m, n, k, 1));
}

// Thread (t, blockIdx.y = b): x scale (row t, block b) into its group's compact MN-major plane;
// threads of blockIdx.y = 0 also write group t's arguments, a share of w_scale's transpose and,
// contiguous, zeros to padding row t. segments_kernel ran before (contiguous).
__global__ void __launch_bounds__(kThreads) prepare_kernel(PrepareParams q, Sections w) {
  const Fp8GroupedProblem& p = q.p;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::int64_t b = blockIdx.y;
  if (p.masked) {
    if (t < p.groups * p.rows) {
      const std::int64_t g = t / p.rows, m = t % p.rows;
      const GroupRows gr = group_rows(q, w.seg, g);
      if (m < gr.rows) {
        w.sfa[(g * p.rows) * q.blocks_k + b * gr.rows + m] =
            q.a.x_scale[g * p.xs_group_stride + m * p.xs_row_stride + b * p.xs_col_stride];
      }
    }
  } else if (t < p.rows) {
    const std::int32_t g = q.a.group_data[t];
    if (g >= 0 && g < p.groups) {
      const GroupRows gr = group_rows(q, w.seg, g);
      if (gr.rows > 0) {
        w.sfa[gr.first * q.blocks_k + b * gr.rows + (t - gr.first)] =
            q.a.x_scale[t * p.xs_row_stride + b * p.xs_col_stride];
      }
    } else if (b == 0) {
      // A padding row: 16-byte stores of zeros (N % 8 == 0, ldo % 8 == 0 and out 16-byte aligned
      // by can_take).
      auto* row = reinterpret_cast<uint4*>(static_cast<ElementD*>(q.a.out) + t * p.ldo);
      for (std::int64_t c = 0; c < p.n / 8; ++c) row[c] = make_uint4(0, 0, 0, 0);
    }
  }
  if (b != 0) return;
  if (t < p.groups) write_group_args(q, w, t);
  const std::int64_t plane = q.blocks_n * q.blocks_k;
  for (std::int64_t e = t; e < p.groups * plane; e += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::int64_t g = e / plane, nb = (e % plane) / q.blocks_k, kb = e % q.blocks_k;
    w.sfb[g * plane + kb * q.blocks_n + nb] = q.a.w_scale[g * p.ws_group_stride + nb * p.ws_row_stride + kb];
  }
}

Instance::GemmKernel::Arguments cutlass_arguments(const Fp8GroupedProblem& p, const Sections& w, int device,
                                                  int sm_count) {
  Instance::GemmKernel::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  // Device shapes only (host shapes null): the tile scheduler reads them in the kernel.
  args.problem_shape = {static_cast<int>(p.groups), w.shapes, nullptr};
  args.mainloop.ptr_A = w.ptr_a;
  args.mainloop.dA = w.stride_a;
  args.mainloop.ptr_B = w.ptr_b;
  args.mainloop.dB = w.stride_b;
  args.mainloop.ptr_SFA = w.ptr_sfa;
  args.mainloop.layout_SFA = w.layout_sfa;
  args.mainloop.ptr_SFB = w.ptr_sfb;
  args.mainloop.layout_SFB = w.layout_sfb;
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = w.stride_d;
  args.epilogue.ptr_D = w.ptr_d;
  args.epilogue.dD = w.stride_d;
  args.hw_info.device_id = device;
  args.hw_info.sm_count = sm_count;
  return args;
}

constexpr int kMaxDevices = 64;
constexpr int kUnknown = 0, kLoadable = 1, kAbsent = -1;

}  // namespace

bool loadable(int device) noexcept {
  static std::array<std::atomic<int>, kMaxDevices> state{};
  if (device < 0 || device >= kMaxDevices || !is_sm90a_device(device)) return false;
  std::atomic<int>& st = state[static_cast<std::size_t>(device)];
  int v = st.load(std::memory_order_acquire);
  if (v == kUnknown) {
    using Kernel = Instance::GemmKernel;
    const void* kernel = reinterpret_cast<const void*>(cutlass::device_kernel<Kernel>);
    cudaFuncAttributes attr{};
    bool ok = cudaFuncGetAttributes(&attr, kernel) == cudaSuccess && attr.binaryVersion >= 90 &&
              attr.binaryVersion < 100 &&
              cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(Kernel::SharedStorageSize)) == cudaSuccess;
    if (!ok) cudaGetLastError();  // a failed query (no image for this device) must not leave an error behind
    v = ok ? kLoadable : kAbsent;
    st.store(v, std::memory_order_release);
  }
  return v == kLoadable;
}

std::size_t workspace_bytes(const Fp8GroupedProblem& p, int sm_count) {
  const Sections w = Sections::carve(nullptr, p);
  return w.args_bytes + Instance::GemmKernel::get_workspace_size(cutlass_arguments(p, w, 0, sm_count));
}

void launch(const Fp8GroupedProblem& p, const Fp8GroupedArgs& a, void* workspace, int device, int sm_count,
            Stream stream, const char* where) {
  using Kernel = Instance::GemmKernel;
  const Sections w = Sections::carve(workspace, p);
  const auto s = reinterpret_cast<cudaStream_t>(stream);
  if (!p.masked) {
    TGEMM_CUDA_CHECK(cudaMemsetAsync(w.seg, 0, static_cast<std::size_t>(1 + p.groups) * sizeof(std::int32_t), s),
                     where);
    const auto blocks = static_cast<unsigned>(ceil_div(p.rows, kThreads));
    segments_kernel<<<blocks, kThreads, 0, s>>>(a.group_data, p.rows, p.groups, w.seg);
    TGEMM_CUDA_CHECK_LAUNCH(where);
  }
  PrepareParams q{p, a, ceil_div(p.k, kScaleBlock), ceil_div(p.n, kScaleBlock)};
  const std::int64_t blocks_x = std::max(ceil_div(scale_rows(p), kThreads), ceil_div(p.groups, kThreads));
  prepare_kernel<<<dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(q.blocks_k)), kThreads, 0, s>>>(q, w);
  TGEMM_CUDA_CHECK_LAUNCH(where);

  const auto args = cutlass_arguments(p, w, device, sm_count);
  cutlass::Status st = Kernel::can_implement(args) ? cutlass::Status::kSuccess : cutlass::Status::kErrorInvalidProblem;
  if (st != cutlass::Status::kSuccess) cutlass_sm90::throw_cutlass_error("can_implement", st, where);
  // CUTLASS encodes its TMA descriptors with the driver API: the thread needs a current context.
  cuda_bind_context(device);
  st = Kernel::initialize_workspace(args, w.cutlass, s);
  if (st != cutlass::Status::kSuccess) cutlass_sm90::throw_cutlass_error("initialize_workspace", st, where);
  // Params hold TMA descriptors encoded on the host from placeholder shapes: the kernel rewrites
  // its per-SM copies in the workspace for each group it visits.
  typename Kernel::Params params = Kernel::to_underlying_arguments(args, w.cutlass);
  st = Instance::Gemm::run(params, s);
  if (st != cutlass::Status::kSuccess) cutlass_sm90::throw_cutlass_error("GemmUniversalAdapter::run", st, where);
  TGEMM_CUDA_CHECK_LAUNCH(where);
  if (!p.masked) launch_fp8_grouped_tiled(p, a, stream, w.seg);  // computes the call where seg[0] says unsorted
}

}  // namespace tgemm::fp8_cutlass
