#include "backends/skinny/skinny_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "backends/skinny/skinny_kernels.h"
#include "core/check.h"
#include "core/table.h"
#include "cuda/cuda_check.h"
#include "cuda/device.h"

namespace tgemm {
namespace {

using skinny::SkinnyKernel;
using skinny::SkinnyTile;

constexpr std::string_view kLibtype = "skinny";
// Cluster split-K factors registered for every tile; 8 is the portable cluster-size limit.
constexpr int kSplitKs[] = {1, 2, 4, 8};
// The kernel indexes k-blocks and element offsets within a row with int32.
constexpr std::int64_t kMaxK = std::int64_t{1} << 30;

// --- Device facts, from the one cache of cuda/device.h (can_implement stays cheap and noexcept).

// SMs or L2 bytes of `device`; -1 where it cannot be queried.
int device_attribute(cudaDeviceAttr attr, int device) noexcept {
  const DeviceInfo* d = find_cuda_device_info(device);
  if (d == nullptr) return -1;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: return d->sm_count;
    case cudaDevAttrL2CacheSize: return static_cast<int>(d->l2_bytes);
    default: return -1;
  }
}

// The kernels are built for sm_90a only (-gencode arch=compute_90a,code=sm_90a).
bool is_sm90(int device) noexcept { return is_sm90a_device(device); }

bool is_out_type(DType t) {
  return t == DType::kBFloat16 || t == DType::kFloat16 || t == DType::kFloat32;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// What every skinny kernel requires of a problem, apart from the dtypes it was built for and the
// device: no alpha or beta * c (bias and activation are fused), output and bias types,
// 1 <= M <= m_tile, sizes within int32, and 16-byte vector loads of x and w rows (aligned bases,
// row strides a multiple of 8 elements; a single row's stride is never used).
bool accepts_operands(const GemmProblem& p, int m_tile) noexcept {
  if (p.family != OpFamily::kA16W16 || p.scale_ab || p.bpreshuffle) return false;
  // act(product + bias) (session 25: the activation in the kernels' stores); no alpha or beta * c.
  if (!p.unit_alpha || p.use_c) return false;
  if (!is_out_type(p.out_type) || p.align_out < dtype_size(p.out_type)) return false;
  if (p.has_bias() && (!is_out_type(p.bias_type) || p.align_bias < dtype_size(p.bias_type)))
    return false;
  if (p.m < 1 || p.m > m_tile) return false;  // one CTA covers every token
  if (p.n < 1 || p.n > std::numeric_limits<std::int32_t>::max()) return false;
  if (p.k < 1 || p.k > kMaxK) return false;
  if (p.align_a < 16 || p.align_b < 16) return false;
  if (p.m > 1 && p.lda % 8 != 0) return false;
  if (p.n > 1 && p.ldb % 8 != 0) return false;
  if (p.m > 1 && p.ldo < p.n) return false;
  return true;
}

std::string variant_name(const SkinnyTile& t, int split_k) {
  // Version-1 names (register batches) stay as they were; ring variants add _p<stages>.
  // Version 7 (the weight as the B operand) adds _b<chunks>.
  return "skinny:sm90_m" + std::to_string(t.m_tile) + "_n" + std::to_string(t.block_n()) + "_wn" +
         std::to_string(t.warps_n) + "_wk" + std::to_string(t.warps_k) + "_u" +
         std::to_string(t.unroll) + (t.stages > 0 ? "_p" + std::to_string(t.stages) : "") +
         (t.bop > 0 ? "_b" + std::to_string(t.bop) : "") + "_sk" + std::to_string(split_k) + "_v16";
}

// A kernel image's facts (PTX arch, co-resident CTAs), queried on first use and cached: the
// solutions' can_implement must stay cheap and noexcept.
struct CachedInfo {
  std::atomic<int> ptx_arch{0};  // 0: not queried yet, -1: query failed
  std::atomic<int> ctas_per_sm{0};

  template <class Query>
  skinny::SkinnyKernelInfo get(Query&& query) noexcept {
    int arch = ptx_arch.load(std::memory_order_acquire);
    if (arch == 0) {
      const skinny::SkinnyKernelInfo q = query();
      ctas_per_sm.store(q.ctas_per_sm, std::memory_order_relaxed);
      arch = q.ptx_arch > 0 ? q.ptx_arch : -1;
      ptx_arch.store(arch, std::memory_order_release);
    }
    skinny::SkinnyKernelInfo out;
    out.ptx_arch = arch;
    out.ctas_per_sm = ctas_per_sm.load(std::memory_order_relaxed);
    return out;
  }
};

// One tile's instances per input dtype (bf16, fp16; a build may carry only one) and the loaded
// images' facts, queried on first use. A build whose CUDA architectures lack compute_90 holds
// trap-only kernels (ptx_arch < 90): the solutions' can_implement then refuses.
template <class Kernel>
class DtypeKernels {
 public:
  DtypeKernels(std::optional<Kernel> bf16, std::optional<Kernel> fp16) : bf16_(bf16), fp16_(fp16) {}

  const Kernel* get(DType t) const noexcept {
    if (t == DType::kBFloat16 && bf16_) return &*bf16_;
    if (t == DType::kFloat16 && fp16_) return &*fp16_;
    return nullptr;
  }
  // A dtype this build has an instance for (bf16 first).
  DType any() const noexcept { return bf16_ ? DType::kBFloat16 : DType::kFloat16; }

  // query(kernel) -> SkinnyKernelInfo, run once per dtype; all 0 without an instance.
  template <class Query>
  skinny::SkinnyKernelInfo info(DType t, Query&& query) const noexcept {
    const Kernel* k = get(t);
    if (k == nullptr) return {};
    CachedInfo& c = t == DType::kBFloat16 ? bf16_info_ : fp16_info_;
    return c.get([&] { return query(*k); });
  }

 private:
  std::optional<Kernel> bf16_, fp16_;
  mutable CachedInfo bf16_info_, fp16_info_;
};

// The instances of a translation-unit list grouped by tile (`same` says two tiles are equal): one
// entry per tile, in the order of first appearance, with its bf16 and fp16 instances.
template <class Kernel>
struct TileInstances {
  decltype(Kernel::tile) tile;
  std::optional<Kernel> bf16, fp16;
};

template <class Kernel, class Same>
std::vector<TileInstances<Kernel>> group_by_tile(const std::vector<Kernel>& kernels, Same same) {
  std::vector<TileInstances<Kernel>> out;
  std::vector<bool> used(kernels.size(), false);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (used[i]) continue;
    TileInstances<Kernel> g{kernels[i].tile, std::nullopt, std::nullopt};
    for (std::size_t j = i; j < kernels.size(); ++j) {
      if (used[j] || !same(kernels[i].tile, kernels[j].tile)) continue;
      used[j] = true;
      (kernels[j].in == DType::kBFloat16 ? g.bf16 : g.fp16) = kernels[j];
    }
    out.push_back(std::move(g));
  }
  return out;
}

// One solution per tile (families without per-solution split-K: versions 4 and 5).
template <class Sol, class Kernel, class Same>
std::vector<std::shared_ptr<const Sol>> one_solution_per_tile(const std::vector<Kernel>& kernels, Same same) {
  std::vector<std::shared_ptr<const Sol>> out;
  for (const auto& g : group_by_tile(kernels, same)) out.push_back(std::make_shared<Sol>(g.tile, g.bf16, g.fp16));
  return out;
}

// Appends the solutions with the smallest token count (tile().m_max) that can implement p: a
// larger one reads more x for the same weight stream.
template <class Sol>
void append_smallest_fitting_m(const std::vector<std::shared_ptr<const Sol>>& solutions, const GemmProblem& p,
                               std::vector<SolutionPtr>& out) {
  int m_max = std::numeric_limits<int>::max();
  for (const auto& s : solutions)
    if (s->tile().m_max < m_max && s->can_implement(p)) m_max = s->tile().m_max;
  for (const auto& s : solutions)
    if (s->tile().m_max == m_max && s->can_implement(p)) out.push_back(s);
}

class SkinnySolution final : public Solution {
 public:
  SkinnySolution(const SkinnyTile& tile, int split_k, std::optional<SkinnyKernel> bf16,
                 std::optional<SkinnyKernel> fp16)
      : tile_(tile),
        split_k_(split_k),
        kernels_(bf16, fp16),
        name_(variant_name(tile, split_k)) {}

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kLibtype; }
  int split_k() const override { return split_k_; }

  bool can_implement(const GemmProblem& p) const noexcept override {
    if (p.a_type != p.b_type || kernel_for(p.a_type) == nullptr) return false;  // built dtypes
    if (!accepts_operands(p, tile_.m_tile)) return false;
    return is_sm90(p.device) && info(p.a_type).ptx_arch >= 90;
  }

  std::size_t workspace_size(const GemmProblem&) const override { return 0; }

  void run(const GemmProblem& p, const GemmArgs& args, const Workspace&,
           Stream stream) const override {
    TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
    kernel_for(p.a_type)->launch(p, args, split_k_, stream, name_.c_str());
  }

  const SkinnyTile& tile() const { return tile_; }

  // Resident CTAs per SM of the bf16 kernel (the fp16 one has the same resources), >= 1.
  int ctas_per_sm() const {
    return std::max(1, info(kernels_.any()).ctas_per_sm);
  }

 private:
  const SkinnyKernel* kernel_for(DType t) const noexcept { return kernels_.get(t); }
  skinny::SkinnyKernelInfo info(DType t) const noexcept {
    return kernels_.info(t, [&](const SkinnyKernel& k) { return k.query(split_k_); });
  }

  SkinnyTile tile_;
  int split_k_;
  DtypeKernels<SkinnyKernel> kernels_;
  std::string name_;
};

// --- Version 3: persistent stream-K solutions ------------------------------------------------

using skinny::SkinnyStreamKernel;
using skinny::SkinnyStreamPlan;
using skinny::SkinnyStreamTile;

// Length of a counter buffer, so the most CTAs a version-3 launch may have.
constexpr int kMaxStreamCtas = 16384;

// The split-tile counters of the version-3 kernels: one buffer of kMaxStreamCtas zeroed words per
// (device, stream), owned here and written by nothing else, so no other solution's use of the
// per-stream workspace between two calls can disturb them (the kernels leave them at zero).
// Allocated on the first call for a stream, with the capture mode relaxed (like the runtime's
// workspaces), so that the first call may happen inside CUDA-graph capture; zeroed through a
// private non-blocking stream (an operation on the legacy stream would invalidate the capture of a
// blocking stream). The handle cudaStreamPerThread names a different stream in every thread, so
// its buffers are per thread. Kept until exit: work queued on a stream may still use its buffer.
class StreamCounters {
 public:
  static unsigned* get(Stream stream) {
    int device = -1;
    TGEMM_CUDA_CHECK(cudaGetDevice(&device), "skinny stream-K counters");
    const std::thread::id thread =
        stream == reinterpret_cast<Stream>(cudaStreamPerThread) ? std::this_thread::get_id() : std::thread::id();
    thread_local Key last{-1, nullptr, std::thread::id()};
    thread_local unsigned* last_ptr = nullptr;
    const Key key{device, stream, thread};
    if (last_ptr != nullptr && last == key) return last_ptr;
    StreamCounters& self = instance();
    std::lock_guard<std::mutex> lock(self.mutex_);
    unsigned*& ptr = self.buffers_[key];
    if (ptr == nullptr) ptr = allocate();
    last = key;
    last_ptr = ptr;
    return ptr;
  }

  ~StreamCounters() {
    // At exit, if the driver is still up; errors are ignored on purpose.
    for (auto& [key, ptr] : buffers_) cudaFree(ptr);
    cudaGetLastError();
  }

 private:
  struct Key {
    int device;
    Stream stream;
    std::thread::id thread;
    bool operator==(const Key& o) const { return device == o.device && stream == o.stream && thread == o.thread; }
    bool operator<(const Key& o) const {
      return std::tie(device, stream, thread) < std::tie(o.device, o.stream, o.thread);
    }
  };

  static StreamCounters& instance() {
    static StreamCounters counters;
    return counters;
  }

  static unsigned* allocate() {
    constexpr std::size_t kBytes = sizeof(unsigned) * kMaxStreamCtas;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    void* p = nullptr;
    cudaStream_t zeroing = nullptr;
    cudaError_t err = cudaMalloc(&p, kBytes);
    if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&zeroing, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = cudaMemsetAsync(p, 0, kBytes, zeroing);
    if (err == cudaSuccess) err = cudaStreamSynchronize(zeroing);
    if (zeroing != nullptr) cudaStreamDestroy(zeroing);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (err != cudaSuccess && p != nullptr) cudaFree(p);
    TGEMM_CUDA_CHECK(err, "skinny stream-K counters");
    return static_cast<unsigned*>(p);
  }

  std::mutex mutex_;
  std::map<Key, unsigned*> buffers_;
};

std::string stream_variant_name(const SkinnyStreamTile& t, int ctas_per_sm) {
  return "skinny:sm90_m" + std::to_string(t.m_tile) + "_n" + std::to_string(t.block_n()) + "_wn" +
         std::to_string(t.warps_n) + "_wk" + std::to_string(t.warps_k) + "_u" + std::to_string(t.unroll) +
         "_x" + std::to_string(t.xkb) + "_pk" + std::to_string(ctas_per_sm) + "_v16";
}

// One version-3 tile with a CTAs-per-SM target: the persistent grid is SMs x min(target,
// occupancy) CTAs (fewer when the problem is small, more, in waves, when the x stage's capacity
// caps the units per CTA).
class SkinnyStreamSolution final : public Solution {
 public:
  SkinnyStreamSolution(const SkinnyStreamTile& tile, int ctas_per_sm, std::optional<SkinnyStreamKernel> bf16,
                       std::optional<SkinnyStreamKernel> fp16)
      : tile_(tile),
        ctas_per_sm_(ctas_per_sm),
        kernels_(bf16, fp16),
        name_(stream_variant_name(tile, ctas_per_sm)) {}

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kLibtype; }
  int split_k() const override { return 0; }  // stream-K: decided per launch

  bool can_implement(const GemmProblem& p) const noexcept override {
    if (p.a_type != p.b_type || kernel_for(p.a_type) == nullptr) return false;
    if (!accepts_operands(p, tile_.m_tile)) return false;
    // Units (row tiles x k-blocks) in int32, and a grid within the counter buffer even when the
    // x stage caps every CTA at xkb units.
    const std::int64_t units = ceil_div(p.n, tile_.block_n()) * ceil_div(p.k, 32);
    if (units >= std::numeric_limits<std::int32_t>::max() || ceil_div(units, tile_.xkb) > kMaxStreamCtas)
      return false;
    if (!is_sm90(p.device) || info(p.a_type).ptx_arch < 90) return false;
    return plan(p).grid > 0;
  }

  std::size_t workspace_size(const GemmProblem& p) const override {
    const SkinnyStreamPlan g = plan(p);
    return g.grid > 0 ? 2 * static_cast<std::size_t>(g.grid) * static_cast<std::size_t>(tile_.partial_bytes()) : 0;
  }

  void run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws, Stream stream) const override {
    TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
    const SkinnyStreamPlan g = plan(p);
    const std::size_t need = 2 * static_cast<std::size_t>(g.grid) * static_cast<std::size_t>(tile_.partial_bytes());
    TGEMM_CHECK(ws.bytes >= need && reinterpret_cast<std::uintptr_t>(ws.data) % 16 == 0, name_,
                "needs a 16-byte aligned workspace of ", need, " bytes, got ", ws.bytes);
    kernel_for(p.a_type)->launch(p, args, g, ws.data, StreamCounters::get(stream), stream, name_.c_str());
  }

  const SkinnyStreamTile& tile() const { return tile_; }

  // The launch geometry for p (grid 0 if the device cannot be queried): slots = SMs x
  // min(target, occupancy) resident CTAs; waves = ceil(units / (slots x xkb)) (one, unless the x
  // stage's capacity caps the units per CTA); units per CTA = ceil(units / (waves x slots)), so
  // that every wave is full (a few CTAs left for a last wave would each take as long as a whole
  // wave); grid = ceil(units / units per CTA) <= kMaxStreamCtas.
  SkinnyStreamPlan plan(const GemmProblem& p) const noexcept {
    SkinnyStreamPlan g;
    const int sms = device_attribute(cudaDevAttrMultiProcessorCount, p.device);
    const int occupancy = info(p.a_type).ctas_per_sm;
    if (sms <= 0 || occupancy <= 0) return g;
    const std::int64_t slots = static_cast<std::int64_t>(sms) * std::min(ctas_per_sm_, occupancy);
    g.kb_total = static_cast<int>(ceil_div(p.k, 32));
    g.units = ceil_div(p.n, tile_.block_n()) * g.kb_total;
    const std::int64_t waves = ceil_div(g.units, slots * tile_.xkb);
    g.per_cta = ceil_div(g.units, waves * slots);  // <= xkb
    const std::int64_t grid = ceil_div(g.units, g.per_cta);
    g.grid = grid <= kMaxStreamCtas ? static_cast<int>(grid) : 0;
    // L2 prefetch at kernel start: every CTA's whole range when the grid's first wave fits in half
    // of L2 (all small weights), else as much of each range as fits there (prefetched lines must
    // not be evicted before their loads).
    const int l2 = device_attribute(cudaDevAttrL2CacheSize, p.device);
    if (g.grid > 0 && l2 > 0) {
      const std::int64_t unit_bytes = 64 * std::int64_t{tile_.block_n()};
      const std::int64_t resident = std::min<std::int64_t>(g.grid, slots);
      g.prefetch_units = static_cast<int>(std::min<std::int64_t>(g.per_cta, l2 / 2 / (resident * unit_bytes)));
    }
    return g;
  }

  // Resident CTAs per SM the launches use (>= 1 where the device answers).
  int ctas_per_sm(const GemmProblem& p) const noexcept {
    return std::min(ctas_per_sm_, std::max(1, info(p.a_type).ctas_per_sm));
  }

 private:
  const SkinnyStreamKernel* kernel_for(DType t) const noexcept { return kernels_.get(t); }
  skinny::SkinnyKernelInfo info(DType t) const noexcept {
    return kernels_.info(t, [](const SkinnyStreamKernel& k) { return k.query(); });
  }

  SkinnyStreamTile tile_;
  int ctas_per_sm_;
  DtypeKernels<SkinnyStreamKernel> kernels_;
  std::string name_;
};

std::vector<std::shared_ptr<const SkinnyStreamSolution>> make_stream_solutions() {
  std::vector<SkinnyStreamKernel> kernels;
  skinny::append_skinny_stream_kernels_bf16_small(kernels);
#ifndef TGEMM_SKINNY_CI_SUBSET
  skinny::append_skinny_stream_kernels_bf16_large(kernels);
  skinny::append_skinny_stream_kernels_fp16_small(kernels);
  skinny::append_skinny_stream_kernels_fp16_large(kernels);
#endif
  auto same_tile = [](const SkinnyStreamTile& a, const SkinnyStreamTile& b) {
    return a.m_tile == b.m_tile && a.rows_per_warp == b.rows_per_warp && a.warps_n == b.warps_n &&
           a.warps_k == b.warps_k && a.unroll == b.unroll && a.xkb == b.xkb;
  };
  std::vector<std::shared_ptr<const SkinnyStreamSolution>> out;
  for (const auto& g : group_by_tile(kernels, same_tile)) {
    const int most = g.tile.max_ctas_per_sm();
    for (int pk : {most, most / 2})
      if (pk >= 1) out.push_back(std::make_shared<SkinnyStreamSolution>(g.tile, pk, g.bf16, g.fp16));
  }
  return out;
}

std::vector<std::shared_ptr<const SkinnySolution>> make_solutions() {
  std::vector<SkinnyKernel> kernels;
  skinny::append_skinny_kernels_bf16_small(kernels);
#ifndef TGEMM_SKINNY_CI_SUBSET
  skinny::append_skinny_kernels_bf16_large(kernels);
  skinny::append_skinny_kernels_fp16_small(kernels);
  skinny::append_skinny_kernels_fp16_large(kernels);
#endif
  std::vector<std::shared_ptr<const SkinnySolution>> out;
  for (const auto& g : group_by_tile(kernels, std::equal_to<SkinnyTile>()))
    for (int sk : kSplitKs) out.push_back(std::make_shared<SkinnySolution>(g.tile, sk, g.bf16, g.fp16));
  return out;
}

// --- Version 4: GEMV solutions ----------------------------------------------------------------

using skinny::SkinnyGemvKernel;
using skinny::SkinnyGemvTile;

std::string gemv_variant_name(const SkinnyGemvTile& t) {
  return "skinny:sm90_m" + std::to_string(t.m_max) + "_gemv_w" + std::to_string(t.warps) + "_c" +
         std::to_string(t.chunks) + (t.whole ? "_wp" : "") + "_v16";
}

class SkinnyGemvSolution final : public Solution {
 public:
  SkinnyGemvSolution(const SkinnyGemvTile& tile, std::optional<SkinnyGemvKernel> bf16,
                     std::optional<SkinnyGemvKernel> fp16)
      : tile_(tile), kernels_(bf16, fp16), name_(gemv_variant_name(tile)) {}

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kLibtype; }
  int split_k() const override { return 1; }

  bool can_implement(const GemmProblem& p) const noexcept override {
    if (p.a_type != p.b_type || kernel_for(p.a_type) == nullptr) return false;
    if (!accepts_operands(p, tile_.m_max)) return false;
    if (ceil_div(p.n, tile_.rows_per_cta(p.k)) > std::numeric_limits<std::int32_t>::max()) return false;
    return is_sm90(p.device) && info(p.a_type).ptx_arch >= 90;
  }

  std::size_t workspace_size(const GemmProblem&) const override { return 0; }

  void run(const GemmProblem& p, const GemmArgs& args, const Workspace&, Stream stream) const override {
    TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
    kernel_for(p.a_type)->launch(p, args, tile_.segs(p.k), stream, name_.c_str());
  }

  const SkinnyGemvTile& tile() const { return tile_; }

 private:
  const SkinnyGemvKernel* kernel_for(DType t) const noexcept { return kernels_.get(t); }
  skinny::SkinnyKernelInfo info(DType t) const noexcept {
    return kernels_.info(t, [](const SkinnyGemvKernel& k) { return k.query(); });
  }

  SkinnyGemvTile tile_;
  DtypeKernels<SkinnyGemvKernel> kernels_;
  std::string name_;
};

std::vector<std::shared_ptr<const SkinnyGemvSolution>> make_gemv_solutions() {
  std::vector<SkinnyGemvKernel> kernels;
  skinny::append_skinny_gemv_kernels_bf16(kernels);
#ifndef TGEMM_SKINNY_CI_SUBSET
  skinny::append_skinny_gemv_kernels_fp16(kernels);
#endif
  // Each kernel twice: the default split and whole passes (`_wp`, SkinnyGemvTile::whole): the
  // split is a launch argument, so no more instances.
  std::vector<SkinnyGemvKernel> whole = kernels;
  for (SkinnyGemvKernel& k : whole) k.tile.whole = true;
  kernels.insert(kernels.end(), whole.begin(), whole.end());
  return one_solution_per_tile<SkinnyGemvSolution>(kernels, [](const SkinnyGemvTile& a, const SkinnyGemvTile& b) {
    return a.m_max == b.m_max && a.warps == b.warps && a.chunks == b.chunks && a.whole == b.whole;
  });
}

// --- Version 5 (bulk-copy GEMV): solutions ---------------------------------------------------

using skinny::SkinnyBulkKernel;
using skinny::SkinnyBulkTile;

std::string bulk_variant_name(const SkinnyBulkTile& t) {
  return "skinny:sm90_m" + std::to_string(t.m_max) + "_bulk_w" + std::to_string(t.consumers) + "_v16";
}

class SkinnyBulkSolution final : public Solution {
 public:
  SkinnyBulkSolution(const SkinnyBulkTile& tile, std::optional<SkinnyBulkKernel> bf16,
                     std::optional<SkinnyBulkKernel> fp16)
      : tile_(tile), kernels_(bf16, fp16), name_(bulk_variant_name(tile)) {}

  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return kLibtype; }
  int split_k() const override { return 1; }

  bool can_implement(const GemmProblem& p) const noexcept override {
    if (p.a_type != p.b_type || kernel_for(p.a_type) == nullptr) return false;
    if (!accepts_operands(p, tile_.m_max)) return false;
    return is_sm90(p.device) && info(p.a_type).ptx_arch >= 90 && info(p.a_type).ctas_per_sm >= 1 &&
           device_attribute(cudaDevAttrMultiProcessorCount, p.device) > 0;
  }

  std::size_t workspace_size(const GemmProblem&) const override { return 0; }

  void run(const GemmProblem& p, const GemmArgs& args, const Workspace&, Stream stream) const override {
    TGEMM_CHECK(can_implement(p), name_, "cannot implement ", p.describe());
    kernel_for(p.a_type)->launch(p, args, grid(p), stream, name_.c_str());
  }

  // Persistent: every row tile, at most as many CTAs as the SMs hold with the whole ring.
  int grid(const GemmProblem& p) const noexcept {
    const std::int64_t tiles = ceil_div(p.n, std::int64_t{tile_.rows_per_tile()});
    const std::int64_t slots = static_cast<std::int64_t>(device_attribute(cudaDevAttrMultiProcessorCount, p.device)) *
                               info(p.a_type).ctas_per_sm;
    return static_cast<int>(std::max<std::int64_t>(1, std::min(tiles, slots)));
  }

  const SkinnyBulkTile& tile() const { return tile_; }

 private:
  const SkinnyBulkKernel* kernel_for(DType t) const noexcept { return kernels_.get(t); }
  skinny::SkinnyKernelInfo info(DType t) const noexcept {
    return kernels_.info(t, [](const SkinnyBulkKernel& k) { return k.query(); });
  }

  SkinnyBulkTile tile_;
  DtypeKernels<SkinnyBulkKernel> kernels_;
  std::string name_;
};

std::vector<std::shared_ptr<const SkinnyBulkSolution>> make_bulk_solutions() {
  std::vector<SkinnyBulkKernel> kernels;
  skinny::append_skinny_bulk_kernels_bf16(kernels);
#ifndef TGEMM_SKINNY_CI_SUBSET
  skinny::append_skinny_bulk_kernels_fp16(kernels);
#endif
  return one_solution_per_tile<SkinnyBulkSolution>(kernels, [](const SkinnyBulkTile& a, const SkinnyBulkTile& b) {
    return a.m_max == b.m_max && a.consumers == b.consumers;
  });
}

// --- Default rule --------------------------------------------------------------------------
// Each condition with its hardware reason; the variant is then chosen by a streaming-time
// model whose constants were fitted (scratch/skinny/fit_default_rule.py) on the first H200 run
// (scratch/run2: every candidate's time at M = 1 and 16 over the 16 suite weights). Runs once
// per shape (the dispatcher caches the resolution).

// Measured (run2): at M = 1 the best-modelled register-batch variant beats cuBLASLt's default on
// every suite weight up to 80 MiB (0.84-0.98x, 56 MiB at 1.01x), but not reliably above 96 MiB
// (0.91-1.19x) where cuBLASLt is at 1.05-1.13x of the floor; at M = 16 it loses on 8 of 16
// (x re-read from L2 and 2x the MMA tiles: up to 1.38x). Until the ring variants (stages > 0)
// are measured, the default takes only M <= 8 and weights up to 96 MiB.
constexpr std::int64_t kDefaultMaxM = 8;
constexpr double kDefaultMaxWeightBytes = 96.0 * (1 << 20);
// Under 1 MiB the whole read takes ~1 us at the small-read rate: launch latency dominates both
// libraries, nothing to win.
constexpr double kDefaultMinWeightBytes = 1 << 20;
// Under 256 (8 k-blocks per row) a warp's load batch is its whole job, and the output
// (M * N elements) becomes a sizeable share of the bytes: a tiled GEMM's coalesced epilogue wins.
constexpr std::int64_t kDefaultMinK = 256;
// Short rows, many of them (session 10, untuned 5120x2048 and 6144x1024 at M = 4 and 8): the
// model's pick (wk4_u8, one 16-row tile a CTA: 320-384 CTAs, more than a wave of short CTAs) ran at
// 0.93-0.98x of cuBLASLt's default and no skinny variant beat it by more than 1%; at 4096x1024
// (256 CTAs) the pick won 1.03-1.08x. At M = 1 the same picks are 1.01-1.02x, so M = 1 keeps them.
constexpr std::int64_t kDefaultShortMaxK = 2048;
constexpr std::int64_t kDefaultShortMaxN = 4096;

// M = 9-16 (session 10, H200: every variant of 33 M = 16 problems tuned, `bench/results/runs/
// s10_calls.md`): the model above picks badly there (0.68-0.97x on 12 of 14 untuned shapes with
// the rule widened to 16: it takes 32-64-row tiles with u2 and split-K 8). One tile shape is at
// 1.07-1.27x of cuBLASLt's default on every K >= 4096 problem of 2-32 MiB, and on K >= 2048 with
// N <= 1024: 16 rows a CTA, 4 warps splitting k, 4 k-steps a batch. Outside that (K <= 2560 with
// N >= 1536, >= 48 MiB) cuBLASLt's default was within 2% of the best, or the variant lost.
// Session 18: the same shape as version 7 (the weight as the MMA's B operand, two n8 blocks,
// m16_n16_wn1_wk4_u4_b1) replaces version 1's m16_n16_wn1_wk4_u4: in the M = 16 retune's screen
// (bench/results/studies/s18/c/prof_m16.csv.gz) it was 3.5-12% faster than version 1 at the same
// split on the four suite problems in this region (576x7168, 1280x8192, 1536x7168, 4096x4096)
// and on all the larger ones. Split-K is doubled while the doubled grid stays within 4 CTAs an
// SM, at most 4: the same screen put 4096x4096 at split 2 (12.03 us against 12.65 at split 1),
// the K-heavy three at split 4.
constexpr std::int64_t kM16DefaultMinM = 9;
constexpr std::int64_t kM16DefaultMaxM = 16;
constexpr double kM16DefaultMinWeightBytes = 2.0 * (1 << 20);
constexpr double kM16DefaultMaxWeightBytes = 32.0 * (1 << 20);
constexpr SkinnyTile kM16DefaultTile{16, 16, 1, 4, 4, 0, 1};
constexpr std::int64_t kM16DefaultCtasPerSm = 4;
constexpr int kM16DefaultMaxSplit = 4;

// Version 4 (GEMV) as the default at M = 1 for short weights: rows N <= 1024, K >= 64, at least
// 64 KiB. Measured (session 9, H200, tune profiles `prof_fixed`/`prof_dec1`): at N = 576 its
// 8-warp, 2-chunk tile took 2.07 / 2.41 / 3.39 / 4.83 us at K = 64 / 512 / 2048 / 7168, where
// cuBLASLt's default took 2.75 / 3.68 / 6.89 / 7.10 us and the best version 1-2 variant 2.44 /
// 2.63 / 3.71 / 5.92 us; the other GEMV tiles were 6-22% slower. At N = 1280-1536 it is within
// 4% of version 1; at N >= 4096 slower than version 1 (a CTA's rows are one load batch there),
// so longer weights keep the model's pick. M = 2-4 are not measured yet.
constexpr std::int64_t kGemvDefaultMaxN = 1024;
constexpr std::int64_t kGemvDefaultMinK = 64;
constexpr double kGemvDefaultMinWeightBytes = 64 << 10;
constexpr SkinnyGemvTile kGemvDefaultTile{1, 8, 2};

// Model constants (H200, fitted on run2: the picked variant is 1.038x the best skinny variant
// in geomean over the 32 problems, was 1.111x with the first guesses).
constexpr double kHbmBytesPerUs = 4.3e6;  // large-copy rate, bytes per microsecond
// What one SM's warps can draw from HBM: ~1.5x its fair share of 4.3 TB/s over 132 SMs. Below
// one CTA per SM the unused SMs' share is lost.
constexpr double kSmBytesPerUs = 0.05e6;
// HBM latency near full bandwidth: a warp's load batch takes at least this long, and the bytes
// in flight over it bound the bandwidth (Little's law). Fitted: 1.6 us (guess was 1.0).
constexpr double kLatencyUs = 1.6;
// x re-read from L2 per CTA, charged as this fraction of a DRAM byte (fitted 0.25).
constexpr double kXReadCost = 0.25;
// Fixed costs of the two reductions: one CTA barrier + shared-memory pass; the cluster
// barrier(s) + distributed-shared-memory traffic.
constexpr double kCtaReduceUs = 0.05;
constexpr double kClusterReduceUs = 0.2;
// Per wave of resident CTAs: CTA launch, first-load latency and epilogue chain; clusters add
// more (run2: 8192x1024 at split_k 1, 2, 4, 8 = 1, 2, 4, 8 waves costs ~3 us per extra wave).
constexpr double kWaveUs = 1.0;
constexpr double kClusterWaveUs = 3.0;

double estimate_us(const SkinnySolution& s, const GemmProblem& p, int sms) {
  const SkinnyTile& t = s.tile();
  const std::int64_t ctas = ceil_div(p.n, t.block_n()) * s.split_k();
  const std::int64_t slots = static_cast<std::int64_t>(sms) * s.ctas_per_sm();
  const std::int64_t kb_warp = ceil_div(ceil_div(p.k, 32), std::int64_t{s.split_k()} * t.warps_k);
  const std::int64_t batches = ceil_div(kb_warp, t.unroll);
  // One batch: 64 bytes of each of the warp's rows per k-block.
  const double warp_inflight =
      64.0 * t.rows_per_warp * static_cast<double>(std::min<std::int64_t>(t.unroll, kb_warp));
  const double bytes = static_cast<double>(p.n) * static_cast<double>(p.k) *
                       static_cast<double>(dtype_size(p.b_type)) *
                       (1.0 + kXReadCost * static_cast<double>(p.m) / t.block_n());
  const double cta_bytes = bytes / static_cast<double>(ctas);
  auto wave_us = [&](std::int64_t c) {
    const double inflight = static_cast<double>(c) * t.warps_n * t.warps_k * warp_inflight;
    const double bw = std::min({kHbmBytesPerUs,
                                static_cast<double>(std::min<std::int64_t>(c, sms)) * kSmBytesPerUs,
                                inflight / kLatencyUs});
    // The SM holding the most CTAs of the wave streams them at its own limit.
    const double per_sm = static_cast<double>(ceil_div(c, sms)) * cta_bytes / kSmBytesPerUs;
    return std::max({static_cast<double>(c) * cta_bytes / bw, per_sm,
                     static_cast<double>(batches) * kLatencyUs});
  };
  const std::int64_t full = ctas / slots, rest = ctas % slots;
  const std::int64_t waves = full + (rest > 0 ? 1 : 0);
  double us = static_cast<double>(full) * wave_us(slots) + (rest > 0 ? wave_us(rest) : 0.0);
  us += static_cast<double>(waves) * (kWaveUs + (s.split_k() > 1 ? kClusterWaveUs : 0.0));
  if (t.warps_k > 1) us += kCtaReduceUs;
  if (s.split_k() > 1) us += kClusterReduceUs;
  return us;
}

class SkinnyBackend final : public Backend {
 public:
  SkinnyBackend()
      : solutions_(make_solutions()),
        stream_solutions_(make_stream_solutions()),
        gemv_solutions_(make_gemv_solutions()),
        bulk_solutions_(make_bulk_solutions()) {
    for (const auto& s : solutions_) by_name_.emplace(s->name(), s);
    for (const auto& s : stream_solutions_) by_name_.emplace(s->name(), s);
    for (const auto& s : gemv_solutions_) by_name_.emplace(s->name(), s);
    for (const auto& s : bulk_solutions_) by_name_.emplace(s->name(), s);
  }

  std::string_view libtype() const override { return kLibtype; }

  SolutionPtr from_row(const TableRow& row, const GemmProblem&, std::string& why) const override {
    auto it = by_name_.find(row.kernel_name);
    if (it == by_name_.end()) {
      why = "unknown kernelName '" + row.kernel_name + "' for libtype skinny (no such variant in this build)";
      return nullptr;
    }
    return it->second;
  }

  std::vector<SolutionPtr> candidates(const GemmProblem& p) const override {
    std::vector<SolutionPtr> out = legacy_candidates(p);
    // Version 3, also its smallest fitting M tile only; a plan of more than two waves (the x
    // stage's capacity caps every CTA's units) gives up what the persistent grid is for.
    int m_tile = std::numeric_limits<int>::max();
    for (const auto& s : stream_solutions_)
      if (s->tile().m_tile < m_tile && s->can_implement(p)) m_tile = s->tile().m_tile;
    const int sms = device_attribute(cudaDevAttrMultiProcessorCount, p.device);
    for (const auto& s : stream_solutions_) {
      if (s->tile().m_tile != m_tile || !s->can_implement(p)) continue;
      if (static_cast<std::int64_t>(s->plan(p).grid) > 2 * static_cast<std::int64_t>(sms) * s->ctas_per_sm(p)) continue;
      out.push_back(s);
    }
    // Versions 4 (GEMV) and 5 (bulk-copy GEMV), M <= 4: their smallest fitting token count only.
    append_smallest_fitting_m(gemv_solutions_, p, out);
    append_smallest_fitting_m(bulk_solutions_, p, out);
    return out;
  }

  SolutionPtr default_solution(const GemmProblem& p) const override {
    if (p.plain_epilogue()) return plain_default(p);
    // An activation after the optional bias: the plain problem's variant, which applies it in its
    // stores (can_implement refuses alpha != 1 and beta * c). Session 26 (H200, M = 1 and 16, the
    // suite's 32 decode problems with gelu + bias): the tuner's fused skinny picks ran 1.17x the
    // cuBLASLt default GEMM plus the separate pass, the staged and fused cuBLASLt/CUTLASS paths
    // were the slower candidates.
    GemmProblem plain = p;
    plain.activation = Activation::kNone;
    SolutionPtr s = plain_default(plain);
    return s != nullptr && s->can_implement(p) ? s : nullptr;
  }

 private:
  // The default rule for the plain epilogue (no activation, alpha 1, no c).
  SolutionPtr plain_default(const GemmProblem& p) const {
    const double weight_bytes = static_cast<double>(p.n) * static_cast<double>(p.k) * dtype_size(p.b_type);
    if (SolutionPtr gemv = gemv_default(p, weight_bytes)) return gemv;
    if (p.m >= kM16DefaultMinM && p.m <= kM16DefaultMaxM) return m16_default(p, weight_bytes);
    if (p.m > kDefaultMaxM || p.k < kDefaultMinK) return nullptr;
    if (p.m >= 2 && p.k <= kDefaultShortMaxK && p.n > kDefaultShortMaxN) return nullptr;
    if (weight_bytes < kDefaultMinWeightBytes || weight_bytes > kDefaultMaxWeightBytes) return nullptr;
    const int sms = device_attribute(cudaDevAttrMultiProcessorCount, p.device);
    if (sms <= 0) return nullptr;
    const SkinnySolution* best = nullptr;
    double best_us = std::numeric_limits<double>::infinity();
    SolutionPtr chosen;
    // Versions 1-2 only: the model was fitted on the register-batch variants; ring variants
    // (stages > 0) and the version-3 stream-K ones stay tuner candidates until measured.
    for (const SolutionPtr& c : legacy_candidates(p)) {
      const auto* s = static_cast<const SkinnySolution*>(c.get());
      if (s->tile().stages > 0 || s->tile().bop > 0) continue;
      const double us = estimate_us(*s, p, sms);
      if (us < best_us) {  // ties keep the earlier (registration order: fewer splits)
        best_us = us;
        best = s;
        chosen = c;
      }
    }
    if (best == nullptr) return nullptr;
    // Fewer CTAs than half the SMs even at split-K 8 (N tiny for its K): most of HBM's
    // bandwidth stays unclaimed, cuBLASLt's deeper split-K spreads further.
    if (2 * ceil_div(p.n, best->tile().block_n()) * best->split_k() < sms) return nullptr;
    return chosen;
  }

  // The GEMV default (kGemvDefault*), or nullptr outside its region or where it cannot run p.
  SolutionPtr gemv_default(const GemmProblem& p, double weight_bytes) const {
    if (p.m != 1 || p.n > kGemvDefaultMaxN || p.k < kGemvDefaultMinK || weight_bytes < kGemvDefaultMinWeightBytes)
      return nullptr;
    for (const auto& s : gemv_solutions_) {
      const SkinnyGemvTile& t = s->tile();
      if (t.m_max == kGemvDefaultTile.m_max && t.warps == kGemvDefaultTile.warps &&
          t.chunks == kGemvDefaultTile.chunks && t.whole == kGemvDefaultTile.whole && s->can_implement(p))
        return s;
    }
    return nullptr;
  }

  // The M = 9-16 default (kM16Default*), or nullptr outside its region or where it cannot run p.
  SolutionPtr m16_default(const GemmProblem& p, double weight_bytes) const {
    if (p.k < 2048 || (p.k < 4096 && p.n > 1024)) return nullptr;
    if (weight_bytes < kM16DefaultMinWeightBytes || weight_bytes > kM16DefaultMaxWeightBytes) return nullptr;
    const SkinnyTile& want = kM16DefaultTile;
    const std::int64_t tiles = ceil_div(p.n, std::int64_t{want.block_n()});
    const int sms = device_attribute(cudaDevAttrMultiProcessorCount, p.device);
    if (sms <= 0) return nullptr;
    int split = 1;
    while (split < kM16DefaultMaxSplit && tiles * split * 2 <= kM16DefaultCtasPerSm * sms) split *= 2;
    for (const auto& s : solutions_)
      if (s->tile() == want && s->split_k() == split && s->can_implement(p)) return s;
    return nullptr;
  }

  // Versions 1-2 (SkinnySolution): only the smallest M tile that fits (a larger one reads more x
  // and holds more registers for the same weight stream, so it never wins), and split-K only
  // while each k-part has a k-block (version 7: a k-step). Version 7's tiles are M tile 16, so
  // they are candidates for M = 9..16.
  std::vector<SolutionPtr> legacy_candidates(const GemmProblem& p) const {
    int m_tile = std::numeric_limits<int>::max();
    for (const auto& s : solutions_)
      if (s->tile().m_tile < m_tile && s->can_implement(p)) m_tile = s->tile().m_tile;
    std::vector<SolutionPtr> out;
    for (const auto& s : solutions_) {
      if (s->tile().m_tile != m_tile || !s->can_implement(p)) continue;
      const std::int64_t kb = ceil_div(p.k, s->tile().k_step());
      if (s->split_k() > 1 && std::int64_t{s->split_k()} * s->tile().warps_k > kb) continue;
      out.push_back(s);
    }
    return out;
  }

  std::vector<std::shared_ptr<const SkinnySolution>> solutions_;
  std::vector<std::shared_ptr<const SkinnyStreamSolution>> stream_solutions_;
  std::vector<std::shared_ptr<const SkinnyGemvSolution>> gemv_solutions_;
  std::vector<std::shared_ptr<const SkinnyBulkSolution>> bulk_solutions_;
  std::unordered_map<std::string, SolutionPtr> by_name_;
};

}  // namespace

std::vector<SolutionPtr> skinny_solutions() {
  auto made = make_solutions();
  auto stream = make_stream_solutions();
  auto gemv = make_gemv_solutions();
  auto bulk = make_bulk_solutions();
  std::vector<SolutionPtr> out(made.begin(), made.end());
  out.insert(out.end(), stream.begin(), stream.end());
  out.insert(out.end(), gemv.begin(), gemv.end());
  out.insert(out.end(), bulk.begin(), bulk.end());
  return out;
}

void register_skinny_solutions(Registry& registry) {
  registry.add(std::make_unique<SkinnyBackend>());
}

}  // namespace tgemm
