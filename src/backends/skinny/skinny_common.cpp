#include "backends/skinny/skinny_common.h"

#include <limits>

#include "cuda/device.h"

namespace tgemm::skinny {
namespace {

// The kernel indexes k-blocks and element offsets within a row with int32.
constexpr std::int64_t kMaxK = std::int64_t{1} << 30;

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

// Device facts from the one cache of cuda/device.h: can_implement stays cheap and noexcept.
int device_sms(int device) noexcept {
  const DeviceInfo* d = find_cuda_device_info(device);
  return d == nullptr ? -1 : d->sm_count;
}

// The kernels are built for sm_90a only (-gencode arch=compute_90a,code=sm_90a).
bool is_sm90(int device) noexcept { return is_sm90a_device(device); }

bool accepts_operands(const GemmProblem& p, int m_tile) noexcept { return accepts_epilogue(p) && accepts_layout(p, m_tile); }

}  // namespace tgemm::skinny
