#include "backends/skinny/skinny_common.h"

#include <limits>

#include "cuda/device.h"

namespace tgemm::skinny {
namespace {

// The kernel indexes k-blocks and element offsets within a row with int32.
constexpr std::int64_t kMaxK = std::int64_t{1} << 30;

bool is_out_type(DType t) { return t == DType::kBFloat16 || t == DType::kFloat16 || t == DType::kFloat32; }

bool is_scale(ScaleGranularity g) { return g == ScaleGranularity::kTensor || g == ScaleGranularity::kRow; }

// The product and its epilogue: a16w16 of 16-bit inputs without scales, or a8w8 of 8-bit inputs
// with per-tensor or per-row scales (read by the kernels' stores); no pre-shuffled weight;
// act(product + bias), the activation in the kernels' stores (none for a8w8), no alpha or beta *
// c; output and bias types.
bool accepts_epilogue(const GemmProblem& p) noexcept {
  if (p.scale_ab || p.bpreshuffle || p.a_type != p.b_type) return false;
  if (p.family == OpFamily::kA16W16) {
    if (dtype_size(p.a_type) != 2 || p.a_scale != ScaleGranularity::kNone || p.b_scale != ScaleGranularity::kNone)
      return false;
  } else if (p.family == OpFamily::kA8W8) {
    if (dtype_size(p.a_type) != 1 || !is_scale(p.a_scale) || !is_scale(p.b_scale) || p.align_scales < 4) return false;
    if (p.activation != Activation::kNone || p.k % 16 != 0) return false;
  } else {
    return false;
  }
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
  // Row strides of whole 16-byte chunks.
  const std::int64_t ce = 16 / static_cast<std::int64_t>(dtype_size(p.a_type));
  if (p.m > 1 && p.lda % ce != 0) return false;
  if (p.n > 1 && p.ldb % ce != 0) return false;
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
