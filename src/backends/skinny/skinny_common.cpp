#include "backends/skinny/skinny_common.h"

#include <cuda_runtime.h>

#include <array>
#include <limits>

namespace tgemm::skinny {
namespace {

constexpr int kMaxDevices = 64;
constexpr int kUnknown = std::numeric_limits<int>::min();
// The kernel indexes k-blocks and element offsets within a row with int32.
constexpr std::int64_t kMaxK = std::int64_t{1} << 30;

int cached_attribute(std::array<std::atomic<int>, kMaxDevices>& cache, cudaDeviceAttr attr, int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return -1;
  int v = cache[device].load(std::memory_order_relaxed);
  if (v != kUnknown) return v;
  if (cudaDeviceGetAttribute(&v, attr, device) != cudaSuccess) {
    cudaGetLastError();  // a failed query must not leave an error behind
    v = -1;
  }
  cache[device].store(v, std::memory_order_relaxed);
  return v;
}

int device_attribute(cudaDeviceAttr attr, int device) noexcept {
  static std::array<std::atomic<int>, kMaxDevices> major, minor, sms;
  static const bool init = [] {
    for (auto* c : {&major, &minor, &sms})
      for (auto& a : *c) a.store(kUnknown);
    return true;
  }();
  (void)init;
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: return cached_attribute(major, attr, device);
    case cudaDevAttrComputeCapabilityMinor: return cached_attribute(minor, attr, device);
    case cudaDevAttrMultiProcessorCount: return cached_attribute(sms, attr, device);
    default: return -1;
  }
}

bool is_out_type(DType t) { return t == DType::kBFloat16 || t == DType::kFloat16 || t == DType::kFloat32; }

// The product and its epilogue: a16w16 without scales or a pre-shuffled weight; act(product +
// bias), the activation in the kernels' stores, no alpha or beta * c; output and bias types.
bool accepts_epilogue(const GemmProblem& p) noexcept {
  if (p.family != OpFamily::kA16W16 || p.scale_ab || p.bpreshuffle) return false;
  if (!p.unit_alpha || p.use_c) return false;
  if (!is_out_type(p.out_type) || p.align_out < dtype_size(p.out_type)) return false;
  return !p.has_bias() || (is_out_type(p.bias_type) && p.align_bias >= dtype_size(p.bias_type));
}

// Sizes and strides: one CTA covers every token, int32 sizes, 16-byte loads of x and w rows.
bool accepts_layout(const GemmProblem& p, int m_tile) noexcept {
  if (p.m < 1 || p.m > m_tile) return false;
  if (p.n < 1 || p.n > std::numeric_limits<std::int32_t>::max()) return false;
  if (p.k < 1 || p.k > kMaxK) return false;
  if (p.align_a < 16 || p.align_b < 16) return false;
  if (p.m > 1 && p.lda % 8 != 0) return false;
  if (p.n > 1 && p.ldb % 8 != 0) return false;
  return p.m == 1 || p.ldo >= p.n;
}

}  // namespace

int device_sms(int device) noexcept { return device_attribute(cudaDevAttrMultiProcessorCount, device); }

bool is_sm90(int device) noexcept {
  return device_attribute(cudaDevAttrComputeCapabilityMajor, device) == 9 &&
         device_attribute(cudaDevAttrComputeCapabilityMinor, device) == 0;
}

bool accepts_operands(const GemmProblem& p, int m_tile) noexcept { return accepts_epilogue(p) && accepts_layout(p, m_tile); }

}  // namespace tgemm::skinny
