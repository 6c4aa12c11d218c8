// What the skinny backend's solution families share: the device facts they query, the operand
// checks every skinny kernel needs, and the per-dtype instances of one tile with their cached
// image facts. Host code (CUDA runtime calls, no kernels).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "backends/skinny/skinny_kernels.h"
#include "backends/skinny/skinny_names.h"
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
// row strides a multiple of 16 bytes; a single row's stride is never used). a16w16 problems of
// 16-bit inputs without scales; a8w8 problems of 8-bit inputs with per-tensor or per-row scales,
// K a multiple of 16 (whole 16-byte chunks) and no activation (gemm_a8w8 has none).
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

// Slots of the input dtypes a skinny kernel is instantiated for; -1 for any other dtype.
inline constexpr int kDtypeSlots = 4;
inline int dtype_slot(DType t) noexcept {
  switch (t) {
    case DType::kBFloat16: return 0;
    case DType::kFloat16: return 1;
    case DType::kFloat8E4M3: return 2;
    case DType::kInt8: return 3;
    default: return -1;
  }
}

// The operand class a solution serves, one per solution (its name's tag, skinny_names.h): the
// 16-bit floats together (a16w16, one solution runs bf16 and fp16), FP8 e4m3 or INT8 (a8w8).
inline SkinnyOperands operands_of(DType t) noexcept {
  if (t == DType::kFloat8E4M3) return SkinnyOperands::kFp8;
  if (t == DType::kInt8) return SkinnyOperands::kInt8;
  return SkinnyOperands::k16Bit;
}

// One tile's instances per input dtype, indexed by dtype_slot (a 16-bit solution holds bf16 and
// fp16, a build may carry only one; an a8w8 solution its one 8-bit dtype), and the loaded images'
// facts, queried on first use. A build whose CUDA architectures lack compute_90 holds trap-only
// kernels (ptx_arch < 90): the solutions' can_implement then refuses.
template <class Kernel>
class DtypeKernels {
 public:
  using Slots = std::array<std::optional<Kernel>, kDtypeSlots>;
  explicit DtypeKernels(const Slots& kernels) : kernels_(kernels) {}

  const Kernel* get(DType t) const noexcept {
    const int s = dtype_slot(t);
    return s >= 0 && kernels_[s] ? &*kernels_[s] : nullptr;
  }
  // A dtype this solution has an instance for (the first slot: bf16 first).
  DType any() const noexcept {
    for (const auto& k : kernels_)
      if (k) return k->in;
    return DType::kBFloat16;
  }

  // query(kernel) -> SkinnyKernelInfo, run once per dtype; all 0 without an instance.
  template <class Query>
  SkinnyKernelInfo info(DType t, Query&& query) const noexcept {
    const Kernel* k = get(t);
    if (k == nullptr) return {};
    return info_[dtype_slot(t)].get([&] { return query(*k); });
  }

 private:
  Slots kernels_;
  mutable std::array<CachedInfo, kDtypeSlots> info_;
};

// The instances of a translation-unit list grouped by tile and operand class: one entry per
// (tile, class), in the order of first appearance, with its instances by dtype slot.
template <class Kernel>
struct TileInstances {
  decltype(Kernel::tile) tile;
  SkinnyOperands operands = SkinnyOperands::k16Bit;
  typename DtypeKernels<Kernel>::Slots kernels;
};

template <class Kernel>
std::vector<TileInstances<Kernel>> group_by_tile(const std::vector<Kernel>& kernels) {
  std::vector<TileInstances<Kernel>> out;
  std::vector<bool> used(kernels.size(), false);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (used[i]) continue;
    TileInstances<Kernel> g{kernels[i].tile, operands_of(kernels[i].in), {}};
    for (std::size_t j = i; j < kernels.size(); ++j) {
      if (used[j] || !(kernels[i].tile == kernels[j].tile) || operands_of(kernels[j].in) != g.operands) continue;
      const int slot = dtype_slot(kernels[j].in);
      if (slot < 0) continue;
      used[j] = true;
      g.kernels[slot] = kernels[j];
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace tgemm::skinny
