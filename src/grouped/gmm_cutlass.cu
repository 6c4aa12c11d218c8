// gmm on the CUTLASS grouped kernel (src/grouped/gmm_cutlass.h), with no host synchronisation:
//  1. the offsets scan of the tile path (launch_group_offsets): group g's rows are
//     [row_off[g], row_off[g + 1]), clamped to M; row_off[G] is the sum, clamped;
//  2. the instance's argument kernel writes each group's shape (rows, N, K), pointers and strides
//     into the workspace, and the CUTLASS grouped GEMM runs over them (host shapes null);
//  3. zero_tail_kernel writes zeros to the rows past the groups, [row_off[G], M).
// Also the registry of the grouped instances: which are loadable on a device, and the pick of one
// for a call (choose_grouped_config, TGEMM_GROUPED_BACKEND).
// Preconditions: a validated GmmProblem with M > 0, N > 0 whose GroupedShape the instance can take
// (route_gmm, src/grouped/gmm_dispatch.h, hands it only such calls).
// Tested by tests/gpu/test_gmm.cpp (GmmBackends.*); benched by bench/torch_bench.py --gmm.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "grouped/gmm_cutlass.h"
#include "grouped/gmm_launch.h"
#include "kernels/common/numeric.cuh"

namespace tgemm {

namespace grouped_cutlass {

#define TGEMM_CUTLASS_GROUPED_INSTANCE(name) void append_##name(std::vector<GroupedKernel>& out);
#include "cutlass_instances/grouped_instances.inc"
#undef TGEMM_CUTLASS_GROUPED_INSTANCE

std::vector<GroupedKernel> grouped_kernels() {
  std::vector<GroupedKernel> out;
#define TGEMM_CUTLASS_GROUPED_INSTANCE(name) append_##name(out);
#include "cutlass_instances/grouped_instances.inc"
#undef TGEMM_CUTLASS_GROUPED_INSTANCE
  return out;
}

namespace {

constexpr int kMaxDevices = 64;
constexpr int kUnknown = 0, kLoadable = 1, kAbsent = -1;

// The instances and, per device, whether each runs there (sm_90a SASS, shared memory granted).
class GroupedRegistry {
 public:
  static GroupedRegistry& get() {
    static GroupedRegistry r;
    return r;
  }

  const std::vector<GroupedKernel>& kernels() const { return kernels_; }

  // The configurations of the instances loadable on `device` (the current device), their
  // indices into kernels() beside them.
  void loadable(int device, std::vector<GroupedConfig>& configs, std::vector<int>& index) {
    configs.clear();
    index.clear();
    if (device < 0 || device >= kMaxDevices || !is_sm90a_device(device)) return;
    for (std::size_t i = 0; i < kernels_.size(); ++i) {
      std::atomic<int>& st = state_[i][static_cast<std::size_t>(device)];
      int v = st.load(std::memory_order_acquire);
      if (v == kUnknown) {
        const int version = kernels_[i].binary_version();
        v = version >= 90 && version < 100 && kernels_[i].prepare() ? kLoadable : kAbsent;
        st.store(v, std::memory_order_release);
      }
      if (v == kLoadable) {
        configs.push_back(kernels_[i].config);
        index.push_back(static_cast<int>(i));
      }
    }
  }

 private:
  GroupedRegistry() : kernels_(grouped_kernels()), state_(kernels_.size()) {
    for (auto& per_device : state_)
      for (auto& s : per_device) s.store(kUnknown, std::memory_order_relaxed);
  }

  std::vector<GroupedKernel> kernels_;
  std::vector<std::array<std::atomic<int>, kMaxDevices>> state_;
};

}  // namespace

std::vector<const GroupedKernel*> loadable_grouped_kernels(int device) {
  GroupedRegistry& r = GroupedRegistry::get();
  std::vector<GroupedConfig> configs;
  std::vector<int> index;
  r.loadable(device, configs, index);
  std::vector<const GroupedKernel*> out;
  for (int i : index) out.push_back(&r.kernels()[static_cast<std::size_t>(i)]);
  return out;
}

const GroupedKernel* pick_grouped_kernel(const GroupedShape& s, int device, GroupedBackend backend) {
  if (backend == GroupedBackend::kTile || !cutlass_can_take(s)) return nullptr;
  GroupedRegistry& r = GroupedRegistry::get();
  if (r.kernels().empty()) return nullptr;
  std::vector<GroupedConfig> configs;
  std::vector<int> index;
  r.loadable(device, configs, index);
  if (configs.empty()) return nullptr;  // no sm_90a device, or no instance loadable on it
  const int pick = choose_grouped_config(configs, s, backend, cuda_device_info(device).sm_count);
  return pick < 0 ? nullptr : &r.kernels()[static_cast<std::size_t>(index[static_cast<std::size_t>(pick)])];
}

}  // namespace grouped_cutlass

namespace {

constexpr int kZeroThreads = 256;
constexpr int kZeroBlocks = 264;  // two waves of CTAs on 132 SMs; the loop strides over the rest

// out[r, c] = 0 for rows r in [*used, m), c < n. The start is device data (the scan's sum).
template <typename Out>
__global__ void __launch_bounds__(kZeroThreads)
    zero_tail_kernel(Out* __restrict__ out, std::int64_t ldo, std::int64_t n, const std::int64_t* __restrict__ used,
                     std::int64_t m) {
  const std::int64_t first = *used;
  const std::int64_t elems = (m - first) * n;
  const Out zero = from_float<Out>(0.0f);
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kZeroThreads + threadIdx.x; i < elems;
       i += static_cast<std::int64_t>(gridDim.x) * kZeroThreads) {
    out[(first + i / n) * ldo + i % n] = zero;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Offsets section of the workspace (launch_group_offsets: row and tile offsets, int64 [G + 2]
// each), padded so the instance's section starts 128-byte aligned.
std::size_t offsets_bytes(const GmmProblem& p) { return (gmm_workspace_bytes(p) + 127) / 128 * 128; }

}  // namespace

grouped_cutlass::GroupedShape gmm_grouped_shape(const GmmProblem& p, const GmmArgs& args) {
  grouped_cutlass::GroupedShape s;
  s.rows = p.m;
  s.groups = p.groups;
  s.n = p.n;
  s.k = p.k;
  s.in = p.in_type;
  s.b_k_major = p.transpose_rhs;
  s.tma_compatible = !p.has_bias && p.out_type == p.in_type && p.lda % 8 == 0 && p.ldo % 8 == 0 &&
                     p.rhs_row_stride % 8 == 0 && p.rhs_group_stride % 8 == 0 && aligned16(args.lhs) &&
                     aligned16(args.rhs) && aligned16(args.out);
  return s;
}

std::size_t gmm_cutlass_workspace_bytes(const GmmProblem& p, const grouped_cutlass::GroupedKernel& k, int device) {
  return offsets_bytes(p) + k.workspace_size(p.groups, cuda_device_info(device).sm_count);
}

void launch_gmm_cutlass(const GmmProblem& p, const GmmArgs& args, const grouped_cutlass::GroupedKernel& k,
                        void* workspace, int device, Stream stream) {
  auto* row_off = static_cast<std::int64_t*>(workspace);
  std::int64_t* tile_off = row_off + p.groups + 2;
  launch_group_offsets(args.group_sizes, p.groups, p.m, row_off, tile_off, stream, "gmm: gmm_offsets_kernel");
  grouped_cutlass::GroupedLaunch l;
  l.groups = p.groups;
  l.n = p.n;
  l.k = p.k;
  l.a = args.lhs;
  l.lda = p.lda;
  l.b = args.rhs;
  l.b_group_stride = p.rhs_group_stride;
  l.ldb = p.rhs_row_stride;
  l.d = args.out;
  l.ldd = p.ldo;
  l.row_off = row_off;
  l.device = device;
  l.sm_count = cuda_device_info(device).sm_count;
  // CUTLASS encodes its TMA descriptors with the driver API: the thread needs a current context.
  cuda_bind_context(device);
  k.run(l, static_cast<char*>(workspace) + offsets_bytes(p), stream, "gmm: CUTLASS grouped GEMM");
  const auto s = reinterpret_cast<cudaStream_t>(stream);
  const std::int64_t most = (p.m * p.n + kZeroThreads - 1) / kZeroThreads;  // the tail is at most M rows
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(most, kZeroBlocks));
  if (p.in_type == DType::kFloat16) {
    zero_tail_kernel<fp16>
        <<<blocks, kZeroThreads, 0, s>>>(static_cast<fp16*>(args.out), p.ldo, p.n, row_off + p.groups, p.m);
  } else {
    zero_tail_kernel<bf16>
        <<<blocks, kZeroThreads, 0, s>>>(static_cast<bf16*>(args.out), p.ldo, p.n, row_off + p.groups, p.m);
  }
  TGEMM_CUDA_CHECK_LAUNCH("gmm: zero_tail_kernel");
}

}  // namespace tgemm
