// What the skinny backend's solution families share: the device facts they query, the operand
// checks every skinny kernel needs, and the per-dtype instances of one tile with their cached
// image facts. Host code (CUDA runtime calls, no kernels).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "backends/skinny/skinny_kernels.h"
#include "core/problem.h"

namespace tgemm::skinny {

inline constexpr std::string_view kLibtype = "skinny";

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Device facts, queried once per ordinal (can_implement must stay cheap and noexcept).
// The SM count, or -1 if the device cannot be queried.
int device_sms(int device) noexcept;
// The kernels are built for sm_90a only (-gencode arch=compute_90a,code=sm_90a).
bool is_sm90(int device) noexcept;

// What every skinny kernel requires of a problem, apart from the dtypes it was built for and the
// device: no alpha or beta * c (the bias and the activation are fused), output and bias types,
// 1 <= M <= m_tile, sizes within int32, and 16-byte vector loads of x and w rows (aligned bases,
// row strides a multiple of 8 elements; a single row's stride is never used).
bool accepts_operands(const GemmProblem& p, int m_tile) noexcept;

// A kernel image's facts (PTX arch, co-resident CTAs), queried on first use and cached.
struct CachedInfo {
  std::atomic<int> ptx_arch{0};  // 0: not queried yet, -1: query failed
  std::atomic<int> ctas_per_sm{0};

  template <class Query>
  SkinnyKernelInfo get(Query&& query) noexcept {
    int arch = ptx_arch.load(std::memory_order_acquire);
    if (arch == 0) {
      const SkinnyKernelInfo q = query();
      ctas_per_sm.store(q.ctas_per_sm, std::memory_order_relaxed);
      arch = q.ptx_arch > 0 ? q.ptx_arch : -1;
      ptx_arch.store(arch, std::memory_order_release);
    }
    SkinnyKernelInfo out;
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
  SkinnyKernelInfo info(DType t, Query&& query) const noexcept {
    const Kernel* k = get(t);
    if (k == nullptr) return {};
    CachedInfo& c = t == DType::kBFloat16 ? bf16_info_ : fp16_info_;
    return c.get([&] { return query(*k); });
  }

 private:
  std::optional<Kernel> bf16_, fp16_;
  mutable CachedInfo bf16_info_, fp16_info_;
};

// The instances of a translation-unit list grouped by tile: one entry per tile, in the order of
// first appearance, with its bf16 and fp16 instances.
template <class Kernel>
struct TileInstances {
  decltype(Kernel::tile) tile;
  std::optional<Kernel> bf16, fp16;
};

template <class Kernel>
std::vector<TileInstances<Kernel>> group_by_tile(const std::vector<Kernel>& kernels) {
  std::vector<TileInstances<Kernel>> out;
  std::vector<bool> used(kernels.size(), false);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (used[i]) continue;
    TileInstances<Kernel> g{kernels[i].tile, std::nullopt, std::nullopt};
    for (std::size_t j = i; j < kernels.size(); ++j) {
      if (used[j] || !(kernels[i].tile == kernels[j].tile)) continue;
      used[j] = true;
      (kernels[j].in == DType::kBFloat16 ? g.bf16 : g.fp16) = kernels[j];
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace tgemm::skinny
