#include "backends/cutlass/cutlass_backend.h"

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/check.h"
#include "core/table.h"
#include "cuda/device.h"
#include "cuda/workspace_pool.h"

namespace tgemm {

namespace cutlass_sm90 {

// The instances of this build: one append_<name> per generated translation unit.
#define TGEMM_CUTLASS_INSTANCE(name) void append_##name(std::vector<CutlassKernel>& out);
#include "cutlass_instances/instances.inc"
#undef TGEMM_CUTLASS_INSTANCE

std::vector<CutlassKernel> cutlass_kernels() {
  std::vector<CutlassKernel> out;
#define TGEMM_CUTLASS_INSTANCE(name) append_##name(out);
#include "cutlass_instances/instances.inc"
#undef TGEMM_CUTLASS_INSTANCE
  return out;
}

namespace {
const char* dtype_token(DType t) {
  switch (t) {
    case DType::kBFloat16: return "bf16";
    case DType::kFloat16: return "fp16";
    case DType::kFloat32: return "fp32";
    default: return "unsupported";
  }
}
}  // namespace

std::string instance_name(const CutlassConfig& c) {
  return std::string("sm90_") + dtype_token(c.in) + "_" + dtype_token(c.out) + "out_" + std::to_string(c.tile_m) +
         "x" + std::to_string(c.tile_n) + "x" + std::to_string(c.tile_k) + "_c" + std::to_string(c.cluster_m) + "x" +
         std::to_string(c.cluster_n) + (c.schedule == Schedule::kCooperative ? "_coop" : "_pingpong") +
         (c.scheduler == TileScheduler::kStreamK ? "_streamk" : "_persistent") +
         (c.epilogue == EpilogueKind::kLinComb ? "_lincomb" : "_bias_act");
}

}  // namespace cutlass_sm90

namespace {

using cutlass_sm90::CutlassConfig;
using cutlass_sm90::CutlassDevice;
using cutlass_sm90::CutlassKernel;
using cutlass_sm90::CutlassKernelInfo;
using cutlass_sm90::CutlassRuntime;
using cutlass_sm90::Decomposition;
using cutlass_sm90::EpilogueKind;
using cutlass_sm90::Raster;
using cutlass_sm90::Schedule;
using cutlass_sm90::TileScheduler;

constexpr std::string_view kLibtype = "cutlass";
// Per-kernel caches (cluster occupancy) are kept per ordinal; the device facts are cuda/device.h's.
constexpr int kMaxDevices = 64;
constexpr int kUnknown = std::numeric_limits<int>::min();
// CUTLASS's problem shape is int32 (M, N, K).
constexpr std::int64_t kMaxExtent = std::numeric_limits<std::int32_t>::max();
// TMA descriptors take strides below 2^40 bytes; the batch stride (rows x leading dimension) is
// the largest one passed.
constexpr std::int64_t kMaxTmaStrideBytes = std::int64_t{1} << 40;
// Workspace a solution may ask for: what the pool keeps per stream anyway. Split-K partials of a
// large grid would need far more and never pay there.
constexpr std::size_t kMaxWorkspace = kMinWorkspaceBytes;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// One kernel instance and what is known about it at run time; shared by its solutions.
class KernelState {
 public:
  explicit KernelState(const CutlassKernel& k) : kernel_(k), instance_(cutlass_sm90::instance_name(k.config)) {
    for (auto& d : clusters_) d.store(kUnknown, std::memory_order_relaxed);
  }

  const CutlassKernel& kernel() const { return kernel_; }
  const CutlassConfig& config() const { return kernel_.config; }
  const std::string& instance() const { return instance_; }

  // The image facts, queried on first use. An image without sm_90a SASS for this device (the
  // build's TGEMM_CUDA_GENCODE lacks it, or another GPU) fails the query or reports another
  // binary version: can_implement refuses.
  CutlassKernelInfo info() const noexcept {
    int v = binary_version_.load(std::memory_order_acquire);
    if (v == 0) {
      const CutlassKernelInfo q = kernel_.query();
      registers_.store(q.registers, std::memory_order_relaxed);
      local_.store(q.local_bytes, std::memory_order_relaxed);
      smem_.store(q.smem_bytes, std::memory_order_relaxed);
      threads_.store(q.threads, std::memory_order_relaxed);
      ptx_version_.store(q.ptx_version, std::memory_order_relaxed);
      v = q.binary_version > 0 ? q.binary_version : -1;
      binary_version_.store(v, std::memory_order_release);
    }
    CutlassKernelInfo out;
    out.binary_version = v > 0 ? v : 0;
    out.ptx_version = ptx_version_.load(std::memory_order_relaxed);
    out.registers = registers_.load(std::memory_order_relaxed);
    out.local_bytes = local_.load(std::memory_order_relaxed);
    out.smem_bytes = smem_.load(std::memory_order_relaxed);
    out.threads = threads_.load(std::memory_order_relaxed);
    return out;
  }

  // SASS for compute capability 9.x (the CMake guard and the #error in sm90_gemm_cutlass.cuh
  // make it sm_90a; is_sm90a_device pins the device to 9.0).
  bool loadable() const noexcept {
    const int v = info().binary_version;
    return v >= 90 && v < 100;
  }

  // Once per device: the kernel's shared-memory limit raised there and its co-resident cluster
  // count (>= 0); -1 when the device refuses the shared memory.
  int clusters(int device) const noexcept {
    if (device < 0 || device >= kMaxDevices) return -1;
    int v = clusters_[device].load(std::memory_order_acquire);
    if (v != kUnknown) return v;
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) {
      cudaGetLastError();
      return -1;  // not cached: a later call may succeed
    }
    if (current != device && cudaSetDevice(device) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    v = kernel_.prepare();
    if (current != device && cudaSetDevice(current) != cudaSuccess) cudaGetLastError();
    clusters_[device].store(v, std::memory_order_release);
    return v;
  }

 private:
  CutlassKernel kernel_;
  std::string instance_;
  mutable std::atomic<int> binary_version_{0};  // 0 not queried, -1 failed
  mutable std::atomic<int> ptx_version_{0}, registers_{0}, local_{0}, smem_{0}, threads_{0};
  mutable std::array<std::atomic<int>, kMaxDevices> clusters_;
};

std::string epilogue_token(bool bias, Activation act) {
  if (!bias && act == Activation::kNone) return "lincomb";
  std::string s = bias ? "bias" : "";
  if (act != Activation::kNone) {
    if (!s.empty()) s += "_";
    s += std::string(activation_name(act));
  }
  return s;
}

std::string decomposition_token(const CutlassConfig& c, const CutlassRuntime& rt) {
  if (c.scheduler != TileScheduler::kStreamK) return "persistent";
  switch (rt.decomposition) {
    case Decomposition::kStreamK: return "streamk_sk";
    case Decomposition::kSplitK: return "streamk_splitk" + std::to_string(rt.splits);
    default: return "streamk_dp";
  }
}

std::string solution_name(const CutlassConfig& c, const CutlassRuntime& rt, bool bias, Activation act) {
  const char* in = c.in == DType::kBFloat16 ? "bf16" : "fp16";
  const char* out = c.out == DType::kFloat32 ? "fp32" : in;
  return std::string("cutlass:sm90_") + in + "_" + out + "out_" + std::to_string(c.tile_m) + "x" +
         std::to_string(c.tile_n) + "x" + std::to_string(c.tile_k) + "_c" + std::to_string(c.cluster_m) + "x" +
         std::to_string(c.cluster_n) + (c.schedule == Schedule::kCooperative ? "_coop_" : "_pingpong_") +
         decomposition_token(c, rt) + "_" + epilogue_token(bias, act) +
         (rt.raster == Raster::kAlongM ? "_rM" : "_rN") + "_sw" + std::to_string(rt.swizzle);
}

// CTAs of the output tiling along M and N, rounded up to whole clusters (CUTLASS's problem_blocks).
std::int64_t ctas_m(const CutlassConfig& c, const GemmProblem& p) {
  return ceil_div(ceil_div(p.m, c.tile_m), c.cluster_m) * c.cluster_m;
}
std::int64_t ctas_n(const CutlassConfig& c, const GemmProblem& p) {
  return ceil_div(ceil_div(p.n, c.tile_n), c.cluster_n) * c.cluster_n;
}

// The swizzle CUTLASS applies for max_swizzle_size `sw` (PersistentTileSchedulerSm90Params::
// get_log_swizzle_size): a swizzle wider than the grid's short side is cut back.
int effective_swizzle(const CutlassConfig& c, const GemmProblem& p, int sw) {
  const std::int64_t d = std::min(ctas_m(c, p), ctas_n(c, p));
  if (sw >= 8 && d >= 6) return 8;
  if (sw >= 4 && d >= 3) return 4;
  if (sw >= 2 && d >= 2) return 2;
  return 1;
}

// A row-major matrix of `rows` rows of `cols` elements of `size` bytes, rows `ld` apart, as a TMA
// descriptor takes it: row stride a multiple of 16 bytes, and the batch stride (rows * ld, the
// largest stride passed) below 2^40 bytes.
bool tma_rows_ok(std::int64_t ld, std::int64_t cols, std::int64_t rows, std::int64_t size) {
  return ld >= cols && (ld * size) % 16 == 0 && ld <= (kMaxTmaStrideBytes - 1) / (rows * size);
}

class CutlassSolution final : public Solution {
 public:
  CutlassSolution(std::shared_ptr<const KernelState> state, const CutlassRuntime& rt, bool bias, Activation act)
      : state_(std::move(state)) {
    info_.config = state_->config();
    info_.instance = state_->instance();
    info_.runtime = rt;
    info_.bias = bias;
    info_.activation = act;
    name_ = solution_name(info_.config, rt, bias, act);
  }

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kLibtype; }
  // splitK column: the fixed split count of split-K, 1 without split, 0 for stream-K (the split
  // of K between CTAs depends on the problem and the SM count).
  int split_k() const override {
    if (info_.runtime.decomposition == Decomposition::kSplitK) return info_.runtime.splits;
    return info_.runtime.decomposition == Decomposition::kStreamK ? 0 : 1;
  }

  bool can_implement(const GemmProblem& p) const noexcept override {
    const CutlassConfig& c = info_.config;
    if (p.family != OpFamily::kA16W16 || p.scale_ab || p.bpreshuffle) return false;
    if (p.a_type != c.in || p.b_type != c.in || p.out_type != c.out) return false;
    // The epilogue this solution computes, exactly (alpha and beta * c are always fused).
    if (p.has_bias() != info_.bias || p.activation != info_.activation) return false;
    if (p.has_bias() && p.bias_type != c.in) return false;  // ElementBias is the input type
    if (p.m < 1 || p.n < 1 || p.k < 1 || p.m > kMaxExtent || p.n > kMaxExtent || p.k > kMaxExtent) return false;
    // TMA: 16-byte aligned base addresses, row strides multiples of 16 bytes (a single row's
    // stride is never used), contiguous extents K and N multiples of 16 bytes (CUTLASS's
    // check_alignment); the bias is read in 16-byte vectors too.
    const auto in_size = static_cast<std::int64_t>(dtype_size(c.in));
    const auto out_size = static_cast<std::int64_t>(dtype_size(c.out));
    const std::int64_t a_elems = 16 / in_size, o_elems = 16 / out_size;
    if (p.align_a < 16 || p.align_b < 16 || p.align_out < 16) return false;
    if (p.use_c && p.align_c < 16) return false;
    if (p.has_bias() && (p.align_bias < 16 || p.n % (16 / in_size) != 0)) return false;
    if (p.k % a_elems != 0 || p.n % o_elems != 0) return false;
    if (p.m > 1 && !tma_rows_ok(p.lda, p.k, p.m, in_size)) return false;
    if (p.n > 1 && !tma_rows_ok(p.ldb, p.k, p.n, in_size)) return false;
    if (p.m > 1 && !tma_rows_ok(p.ldo, p.n, p.m, out_size)) return false;
    if (p.use_c && p.m > 1 && !tma_rows_ok(p.ldc, p.n, p.m, out_size)) return false;
    if (!state_->kernel().can_implement(p, info_.runtime)) return false;
    if (!is_sm90a_device(p.device) || !state_->loadable()) return false;
    const CutlassDevice d = device_facts(p.device);
    if (d.sm_count <= 0 || d.max_active_clusters < 0) return false;
    if (c.scheduler == TileScheduler::kStreamK) {
      try {
        if (state_->kernel().workspace_size(p, info_.runtime, d) > kMaxWorkspace) return false;
      } catch (...) {
        return false;
      }
    }
    return true;
  }

  std::size_t workspace_size(const GemmProblem& p) const override {
    return state_->kernel().workspace_size(p, info_.runtime, device_facts(p.device));
  }

  void run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws, Stream stream) const override {
    TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
    cuda_bind_context(p.device);  // the TMA descriptors are encoded through the driver API
    state_->kernel().run(p, args, info_.runtime, device_facts(p.device), ws, stream, name_.c_str());
  }

  const CutlassSolutionInfo& info() const { return info_; }
  const KernelState& state() const { return *state_; }

 private:
  CutlassDevice device_facts(int device) const noexcept {
    CutlassDevice d;
    d.sm_count = cuda_sm_count(device);
    d.max_active_clusters = state_->clusters(device);
    return d;
  }

  std::shared_ptr<const KernelState> state_;
  CutlassSolutionInfo info_;
  std::string name_;
};

// --- Registration -----------------------------------------------------------------------------

constexpr Raster kRasters[] = {Raster::kAlongM, Raster::kAlongN};
constexpr int kSwizzles[] = {1, 2, 4, 8};
constexpr int kSplits[] = {2, 4, 8};
constexpr Activation kActivations[] = {Activation::kNone, Activation::kGelu, Activation::kGeluTanh,
                                       Activation::kRelu};

// Run-time settings registered per instance: every raster x swizzle; stream-K instances add the
// split-K decompositions (for grids too small to need a swizzle: raster only).
std::vector<CutlassRuntime> runtimes_for(const CutlassConfig& c) {
  std::vector<CutlassRuntime> out;
  const Decomposition base =
      c.scheduler == TileScheduler::kStreamK ? Decomposition::kStreamK : Decomposition::kDataParallel;
  for (Raster r : kRasters)
    for (int sw : kSwizzles) out.push_back({r, sw, base, 1});
  if (c.scheduler == TileScheduler::kStreamK)
    for (int s : kSplits)
      for (Raster r : kRasters) out.push_back({r, 1, Decomposition::kSplitK, s});
  return out;
}

std::vector<std::shared_ptr<const CutlassSolution>> make_solutions() {
  std::vector<std::shared_ptr<const CutlassSolution>> out;
  for (const CutlassKernel& k : cutlass_sm90::cutlass_kernels()) {
    auto state = std::make_shared<const KernelState>(k);
    for (const CutlassRuntime& rt : runtimes_for(k.config)) {
      if (k.config.epilogue == EpilogueKind::kLinComb) {
        out.push_back(std::make_shared<CutlassSolution>(state, rt, false, Activation::kNone));
        continue;
      }
      for (bool bias : {true, false})
        for (Activation act : kActivations)
          if (bias || act != Activation::kNone)  // no bias, no activation: the lincomb instance's
            out.push_back(std::make_shared<CutlassSolution>(state, rt, bias, act));
    }
  }
  return out;
}

// --- Default rule -----------------------------------------------------------------------------
// Only where cuBLASLt cannot fuse the epilogue: the erf GELU (its GELU epilogue is the tanh
// approximation, so tgemm runs cuBLASLt into an fp32 staging buffer and a second elementwise
// pass; a fused CUTLASS epilogue writes the output once). Elsewhere cuBLASLt's heuristic stays
// the default until tuned tables say otherwise. The rule, each cut measured against cuBLASLt's
// default GEMM followed by the GELU pass (the staged path):
//   M <= 64: no default (a fused 64x128 pick ran 1.3-2.7x the staged path's time on the suite's
//     decode problems); the skinny kernels or the split backend take them;
//   fewer 128x128 tiles than half the SMs: no default (stream-K ran 0.55-0.83x of the staged
//     path there);
//   else 128x256 with a 2x1 cluster when its tiles fill every SM with a last wave at least 80%
//     full (N padding counted), else whichever of it and 128x128 wastes less of the last wave;
//     no default when that pick's last wave is under 80% full, or when K > 4096.
struct Pick {
  Schedule schedule;
  int tile_m, tile_n, cluster_m, cluster_n;
  TileScheduler scheduler;
};

class CutlassBackend final : public Backend {
 public:
  CutlassBackend() : solutions_(make_solutions()) {
    for (const auto& s : solutions_) by_name_.emplace(s->name(), s);
  }

  std::string_view libtype() const override { return kLibtype; }

  SolutionPtr from_row(const TableRow& row, const GemmProblem&, std::string& why) const override {
    auto it = by_name_.find(row.kernel_name);
    if (it == by_name_.end()) {
      why = "unknown kernelName '" + row.kernel_name + "' for libtype cutlass (no such solution in this build" +
            (solutions_.empty() ? ": it has no CUTLASS instances" : "") + ")";
      return nullptr;
    }
    return it->second;
  }

  // Every solution that implements p, less the ones that would run the same schedule as an
  // earlier candidate: a swizzle CUTLASS cuts back to a smaller one, AlongN when the grid is
  // one tile wide or tall, a split count beyond the problem's k-tiles.
  std::vector<SolutionPtr> candidates(const GemmProblem& p) const override {
    std::vector<SolutionPtr> out;
    for (const auto& s : solutions_) {
      const CutlassSolutionInfo& i = s->info();
      if (!s->can_implement(p)) continue;
      if (effective_swizzle(i.config, p, i.runtime.swizzle) < i.runtime.swizzle) continue;
      if (i.runtime.raster == Raster::kAlongN && std::min(ctas_m(i.config, p), ctas_n(i.config, p)) == 1) continue;
      if (i.runtime.decomposition == Decomposition::kSplitK && i.runtime.splits > ceil_div(p.k, i.config.tile_k))
        continue;
      out.push_back(s);
    }
    return out;
  }

  SolutionPtr default_solution(const GemmProblem& p) const override {
    if (p.activation != Activation::kGelu) return nullptr;
    const int sms = cuda_sm_count(p.device);
    if (sms <= 0) return nullptr;
    auto tiles = [&](int tm, int tn) { return ceil_div(p.m, tm) * ceil_div(p.n, tn); };
    // Useful share of the grid's work: the last wave's fill times the N padding of the tile.
    auto efficiency = [&](int tm, int tn) {
      const std::int64_t t = tiles(tm, tn);
      const double waves = static_cast<double>(ceil_div(t, sms));
      const double fill = static_cast<double>(t) / (waves * sms);
      return fill * static_cast<double>(p.n) / static_cast<double>(ceil_div(p.n, tn) * tn);
    };
    // No fused default for M <= 64: a pingpong 64x128 pick there ran 1.3-2.7x the staged path's
    // time on the suite's 32 decode problems (M = 1, 16, gelu + bias, an H200); the skinny
    // kernels' fused stores take that region where their rule applies, the staged path the rest
    // (split backend).
    if (p.m <= 64) return nullptr;
    if (2 * tiles(128, 128) < sms) return nullptr;
    Pick pick{Schedule::kCooperative, 128, 128, 1, 1, TileScheduler::kPersistent};
    const bool wide = tiles(128, 256) >= sms;
    const double wide_eff = wide ? efficiency(128, 256) : 0.0;
    if (wide && (wide_eff >= 0.8 || wide_eff >= efficiency(128, 128)))
      pick = {Schedule::kCooperative, 128, 256, 2, 1, TileScheduler::kPersistent};
    // Below 80% wave efficiency the staged path (cuBLASLt's default GEMM, then the vectorized
    // bias + GELU pass) is faster: on the gelu profile of the suite the cut turns 1.043x / 8
    // losses into 1.091x / 2 against it.
    if (efficiency(pick.tile_m, pick.tile_n) < 0.8) return nullptr;
    // Fusion saves the pass (4·M·N bytes), a share of ~400/K of the GEMM (2·M·N·K flops at
    // ~600 TFLOP/s against ~3 TB/s); the untuned instances give up 5-15% of the GEMM to
    // cuBLASLt's kernel, so above K = 4096 the staged path wins: at M = 512/2048 fused picks
    // run 1.029x for K <= 4096, 0.933x above.
    // For M <= 64 the share is smaller still (the pass against the weight's 2·N·K bytes: 2·M/K).
    if (p.k > 4096) return nullptr;
    // CUTLASS's heuristic raster: along M when the grid is wider than tall.
    const Raster raster = ceil_div(p.n, pick.tile_n) > ceil_div(p.m, pick.tile_m) ? Raster::kAlongM : Raster::kAlongN;
    SolutionPtr fallback;
    for (const auto& s : solutions_) {
      const CutlassSolutionInfo& i = s->info();
      const CutlassConfig& c = i.config;
      const bool picked = c.schedule == pick.schedule && c.tile_m == pick.tile_m && c.tile_n == pick.tile_n &&
                          c.cluster_m == pick.cluster_m && c.cluster_n == pick.cluster_n &&
                          c.scheduler == pick.scheduler && i.runtime.raster == raster &&
                          i.runtime.swizzle == 1 && i.runtime.decomposition != Decomposition::kSplitK;
      if (!picked && fallback != nullptr) continue;
      if (!s->can_implement(p)) continue;
      if (picked) return s;
      // The first instance of the catalog that implements p (it lacks the picked configuration
      // for these dtypes): still fused, still better than the staged pass.
      if (i.runtime.swizzle == 1 && i.runtime.decomposition != Decomposition::kSplitK) fallback = s;
    }
    return fallback;
  }

  const std::vector<std::shared_ptr<const CutlassSolution>>& solutions() const { return solutions_; }

 private:
  std::vector<std::shared_ptr<const CutlassSolution>> solutions_;
  std::unordered_map<std::string, std::shared_ptr<const CutlassSolution>> by_name_;
};

}  // namespace

std::vector<SolutionPtr> cutlass_solutions() {
  auto made = make_solutions();
  return std::vector<SolutionPtr>(made.begin(), made.end());
}

const CutlassSolutionInfo* cutlass_solution_info(const Solution& s) {
  const auto* c = dynamic_cast<const CutlassSolution*>(&s);
  return c != nullptr ? &c->info() : nullptr;
}

cutlass_sm90::CutlassKernelInfo cutlass_kernel_info(const Solution& s) {
  const auto* c = dynamic_cast<const CutlassSolution*>(&s);
  return c != nullptr ? c->state().info() : cutlass_sm90::CutlassKernelInfo{};
}

void register_cutlass_solutions(Registry& registry) {
  registry.add(std::make_unique<CutlassBackend>());
}

}  // namespace tgemm
