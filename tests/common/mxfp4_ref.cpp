#include "tests/common/mxfp4_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tgemm::test {
namespace {

constexpr float kGrid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
constexpr int kBlock = 32;

}  // namespace

float e2m1_value(std::uint8_t code) {
  const float mag = kGrid[code & 7];
  return (code & 8) != 0 ? -mag : mag;
}

float e8m0_value(std::uint8_t s) {
  if (s == 255) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(s) - 127);
}

std::uint8_t e2m1_encode(float v) {
  const float a = std::fabs(v);
  int best = 7;  // past 6: saturated
  if (a <= kGrid[7]) {
    float best_d = std::numeric_limits<float>::infinity();
    for (int c = 0; c < 8; ++c) {
      const float d = std::fabs(a - kGrid[c]);
      // Equal distance: the even code (mantissa bit 0) wins.
      if (d < best_d || (d == best_d && c % 2 == 0)) {
        best = c;
        best_d = d;
      }
    }
  }
  return static_cast<std::uint8_t>(best | (std::signbit(v) ? 8 : 0));
}

std::uint8_t e8m0_block_scale(const float* v, int count) {
  float amax = 0.0f;
  for (int i = 0; i < count; ++i) {
    if (!std::isfinite(v[i])) return 255;
    amax = std::max(amax, std::fabs(v[i]));
  }
  if (amax == 0.0f) return 0;
  int e = 0;
  std::frexp(amax, &e);  // amax = f * 2^e, f in [0.5, 1): floor(log2(amax)) = e - 1
  const int shared = std::clamp(e - 1 - 2, -127, 127);
  return static_cast<std::uint8_t>(shared + 127);
}

void quant_mxfp4_ref(const std::vector<float>& x, std::int64_t m, std::int64_t k, std::vector<std::uint8_t>& q,
                     std::vector<std::uint8_t>& scale) {
  q.assign(static_cast<std::size_t>(m * k / 2), 0);
  scale.assign(static_cast<std::size_t>(m * k / kBlock), 0);
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t b = 0; b < k / kBlock; ++b) {
      const float* v = x.data() + r * k + b * kBlock;
      const std::uint8_t s = e8m0_block_scale(v, kBlock);
      scale[static_cast<std::size_t>(r * (k / kBlock) + b)] = s;
      if (s == 255) continue;  // codes 0: the NaN scale carries the block
      for (int i = 0; i < kBlock; ++i) {
        // Dividing by a power of two is exact in double for every float and every scale.
        const double u = static_cast<double>(v[i]) / std::ldexp(1.0, static_cast<int>(s) - 127);
        const std::uint8_t c = e2m1_encode(static_cast<float>(u));
        auto& byte = q[static_cast<std::size_t>(r * (k / 2) + b * kBlock / 2 + i / 2)];
        byte = static_cast<std::uint8_t>(byte | (i % 2 == 0 ? c : c << 4));
      }
    }
  }
}

std::vector<float> dequant_mxfp4_ref(const std::vector<std::uint8_t>& q, const std::vector<std::uint8_t>& scale,
                                     std::int64_t rows, std::int64_t k) {
  std::vector<float> w(static_cast<std::size_t>(rows * k));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < k; ++i) {
      const std::uint8_t byte = q[static_cast<std::size_t>(r * (k / 2) + i / 2)];
      const std::uint8_t code = i % 2 == 0 ? (byte & 15) : (byte >> 4);
      const float s = e8m0_value(scale[static_cast<std::size_t>(r * (k / kBlock) + i / kBlock)]);
      w[static_cast<std::size_t>(r * k + i)] = e2m1_value(code) * s;
    }
  }
  return w;
}

}  // namespace tgemm::test
