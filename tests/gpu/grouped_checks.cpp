#include "tests/gpu/grouped_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cuda/device.h"
#include "grouped/gmm_cutlass.h"
#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/config.h"
#include "tgemm/gmm.h"
#include "tgemm/grouped.h"

namespace tgemm::test {
namespace {

// Group g's range [begin, end) of a dimension of length m: negative sizes count as 0, prefix sums
// clamped to m (include/tgemm/gmm.h).
std::vector<std::int64_t> clamped_offsets(const std::vector<std::int32_t>& sizes, std::int64_t m) {
  std::vector<std::int64_t> off(sizes.size() + 1, 0);
  for (std::size_t g = 0; g < sizes.size(); ++g) off[g + 1] = std::min(m, off[g] + std::max<std::int32_t>(sizes[g], 0));
  return off;
}

// The documented rule: negative sizes count as 0, offsets clamped to M, rows past the sum zero.
std::vector<float> reference(const GmmData& d, const std::vector<std::int32_t>& sizes) {
  const GmmCase& c = d.c;
  const std::int64_t g = static_cast<std::int64_t>(sizes.size());
  const std::vector<float> a = to_host_floats(d.lhs.data(), c.in, c.m * c.k);
  const std::vector<float> b = to_host_floats(d.rhs.data(), c.in, g * c.k * c.n);
  const std::vector<float> bias = to_host_floats(d.bias.data(), c.in, g * c.n);
  std::vector<float> ref(static_cast<std::size_t>(c.m * c.n), 0.0f);
  std::int64_t begin = 0;
  for (std::int64_t grp = 0; grp < g; ++grp) {
    const std::int64_t end = std::min(c.m, begin + std::max<std::int32_t>(sizes[grp], 0));
    for (std::int64_t r = begin; r < end; ++r) {
      for (std::int64_t col = 0; col < c.n; ++col) {
        double s = c.bias ? bias[grp * c.n + col] : 0.0;
        for (std::int64_t kk = 0; kk < c.k; ++kk) {
          const float w = c.transpose_rhs ? b[(grp * c.n + col) * c.k + kk] : b[(grp * c.k + kk) * c.n + col];
          s += static_cast<double>(a[r * c.k + kk]) * w;
        }
        ref[r * c.n + col] = static_cast<float>(s);
      }
    }
    begin = end;
  }
  return ref;
}

}  // namespace

EnvScope::EnvScope(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) {
    had_ = true;
    previous_ = old;
  }
  if (value != nullptr) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
  reload_config();
}

EnvScope::~EnvScope() {
  if (had_) {
    setenv(name_.c_str(), previous_.c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
  reload_config();
}

bool cutlass_takes(const GmmCase& c) {
  grouped_cutlass::GroupedShape s;
  s.rows = c.m;
  s.groups = static_cast<std::int64_t>(c.sizes.size());
  s.n = c.n;
  s.k = c.k;
  s.in = c.in;
  s.b_k_major = c.transpose_rhs;
  // make_gmm's buffers are cudaMalloc'ed (256-byte aligned) and contiguous: the strides are K and N.
  s.tma_compatible = !c.bias && c.out == c.in && c.k % 8 == 0 && c.n % 8 == 0;
  return grouped_cutlass::pick_grouped_kernel(s, cuda_current_device(), GroupedBackend::kCutlass) != nullptr;
}

GmmData make_gmm(const GmmCase& c, std::uint64_t seed) {
  GmmData d;
  d.c = c;
  const std::int64_t g = static_cast<std::int64_t>(c.sizes.size());
  const std::size_t es = dtype_size(c.in);
  d.lhs = DeviceBuffer(std::max<std::size_t>(c.m * c.k * es, 16));
  d.rhs = DeviceBuffer(std::max<std::size_t>(g * c.k * c.n * es, 16));
  d.sizes = DeviceBuffer(std::max<std::size_t>(g * sizeof(std::int32_t), 16));
  d.out = DeviceBuffer(std::max<std::size_t>(c.m * c.n * dtype_size(c.out), 16));
  d.bias = DeviceBuffer(std::max<std::size_t>(g * c.n * es, 16));
  fill_uniform(d.lhs.data(), c.in, c.m * c.k, seed, -1.0f, 1.0f, nullptr);
  fill_uniform(d.rhs.data(), c.in, g * c.k * c.n, seed + 1, -1.0f, 1.0f, nullptr);
  fill_uniform(d.bias.data(), c.in, g * c.n, seed + 2, -1.0f, 1.0f, nullptr);
  fill_nan(d.out.data(), c.out, c.m * c.n, nullptr);
  if (g > 0) copy_to_device(d.sizes.data(), c.sizes.data(), g * sizeof(std::int32_t));
  d.lv = TensorView::contiguous(d.lhs.data(), c.in, {c.m, c.k});
  d.rv = c.transpose_rhs ? TensorView::contiguous(d.rhs.data(), c.in, {g, c.n, c.k})
                         : TensorView::contiguous(d.rhs.data(), c.in, {g, c.k, c.n});
  d.sv = TensorView::contiguous(d.sizes.data(), DType::kInt32, {g});
  d.ov = TensorView::contiguous(d.out.data(), c.out, {c.m, c.n});
  d.bv = TensorView::contiguous(d.bias.data(), c.in, {g, c.n});
  return d;
}

void run_gmm(const GmmData& d, Stream stream) {
  gmm(d.lv, d.rv, d.sv, d.ov, d.c.transpose_rhs, d.c.bias ? &d.bv : nullptr, stream);
}

void expect_gmm_matches(const GmmData& d, const std::vector<std::int32_t>& sizes) {
  const GmmCase& c = d.c;
  const std::vector<float> out = to_host_floats(d.out.data(), c.out, c.m * c.n);
  const std::vector<float> ref = reference(d, sizes);
  const Tolerance tol = gemm_tolerance(c.out, c.k, c.bias);
  std::int64_t bad = 0, first = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double err = std::fabs(static_cast<double>(out[i]) - ref[i]);
    if (!(err <= tol.atol + tol.rtol * std::fabs(ref[i]))) {
      if (first < 0) first = static_cast<std::int64_t>(i);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << c.describe() << ": first bad element row " << (first < 0 ? -1 : first / c.n) << " col "
                    << (first < 0 ? -1 : first % c.n) << " out " << (first < 0 ? 0.0f : out[first]) << " ref "
                    << (first < 0 ? 0.0f : ref[first]);
}

TgmmData make_tgmm(const TgmmCase& c, std::uint64_t seed) {
  TgmmData d;
  d.c = c;
  const auto g = static_cast<std::int64_t>(c.sizes.size());
  d.lhs = random_buffer(c.in, c.k * c.m, seed);
  d.rhs = random_buffer(c.in, c.m * c.n, seed + 1);
  d.sizes = int_buffer(c.sizes);
  d.out = c.accumulate ? random_buffer(c.out, g * c.k * c.n, seed + 2) : nan_buffer(c.out, g * c.k * c.n);
  d.out_before = d.out.host();
  d.bias_grad = nan_buffer(DType::kFloat32, g * c.k);
  d.lv = c.col_major ? TensorView::strided(d.lhs.data(), c.in, {c.k, c.m}, {1, c.k})
                     : TensorView::contiguous(d.lhs.data(), c.in, {c.k, c.m});
  d.rv = TensorView::contiguous(d.rhs.data(), c.in, {c.m, c.n});
  d.sv = TensorView::contiguous(d.sizes.data(), DType::kInt32, {g});
  d.ov = TensorView::contiguous(d.out.data(), c.out, {g, c.k, c.n});
  d.bv = TensorView::contiguous(d.bias_grad.data(), DType::kFloat32, {g, c.k});
  return d;
}

void run_tgmm(const TgmmData& d, Stream stream) {
  const TensorView* bg = d.c.bias_grad ? &d.bv : nullptr;
  if (d.c.persistent) {
    ptgmm(d.lv, d.rv, d.sv, d.ov, bg, d.c.accumulate, stream);
  } else {
    nptgmm(d.lv, d.rv, d.sv, d.ov, bg, d.c.accumulate, stream);
  }
}

void expect_tgmm_matches(const TgmmData& d, const std::vector<std::int32_t>& sizes) {
  const TgmmCase& c = d.c;
  const auto g = static_cast<std::int64_t>(sizes.size());
  const std::vector<float> a = d.lhs.host(), b = d.rhs.host();
  const auto lhs_at = [&](std::int64_t kk, std::int64_t col) {
    return static_cast<double>(c.col_major ? a[col * c.k + kk] : a[kk * c.m + col]);
  };
  const std::vector<std::int64_t> off = clamped_offsets(sizes, c.m);
  std::vector<double> ref(static_cast<std::size_t>(g * c.k * c.n)), bias(static_cast<std::size_t>(g * c.k));
  for (std::int64_t grp = 0; grp < g; ++grp) {
    for (std::int64_t kk = 0; kk < c.k; ++kk) {
      double row_sum = 0.0;
      for (std::int64_t col = off[grp]; col < off[grp + 1]; ++col) row_sum += lhs_at(kk, col);
      bias[grp * c.k + kk] = row_sum;
      for (std::int64_t nn = 0; nn < c.n; ++nn) {
        const std::size_t at = static_cast<std::size_t>((grp * c.k + kk) * c.n + nn);
        double s = c.accumulate ? d.out_before[at] : 0.0;
        for (std::int64_t col = off[grp]; col < off[grp + 1]; ++col) s += lhs_at(kk, col) * b[col * c.n + nn];
        ref[at] = s;
      }
    }
  }
  expect_close(d.out.host(), ref, gemm_tolerance(c.out, c.m, c.accumulate), c.describe() + " out");
  if (c.bias_grad)
    expect_close(d.bias_grad.host(), bias, gemm_tolerance(DType::kFloat32, c.m, false), c.describe() + " bias_grad");
}

GatherData make_gather(const GatherCase& c, std::uint64_t seed) {
  GatherData d;
  d.c = c;
  const std::int64_t rows = c.x_per_slot ? c.t * c.topk : c.t;
  d.x = random_buffer(c.in, rows * c.h, seed);
  d.w = random_buffer(c.in, c.e * c.h * c.n, seed + 1);
  d.ids = int_buffer(c.ids);
  d.topk_weights = random_buffer(c.weight_type, c.t * c.topk, seed + 2);
  d.out = nan_buffer(c.out, c.weighted ? c.t * c.n : c.t * c.topk * c.n);
  d.xv = c.x_per_slot ? TensorView::contiguous(d.x.data(), c.in, {c.t, c.topk, c.h})
                      : TensorView::contiguous(d.x.data(), c.in, {c.t, c.h});
  d.wv = c.transpose ? TensorView::contiguous(d.w.data(), c.in, {c.e, c.n, c.h})
                     : TensorView::contiguous(d.w.data(), c.in, {c.e, c.h, c.n});
  d.iv = TensorView::contiguous(d.ids.data(), DType::kInt32, {c.t, c.topk});
  d.tv = TensorView::contiguous(d.topk_weights.data(), c.weight_type, {c.t, c.topk});
  d.ov = c.weighted ? TensorView::contiguous(d.out.data(), c.out, {c.t, c.n})
                    : TensorView::contiguous(d.out.data(), c.out, {c.t, c.topk, c.n});
  return d;
}

void run_gather(const GatherData& d, Stream stream) {
  grouped_gemm(d.xv, d.wv, d.iv, d.ov, d.c.transpose, d.c.weighted ? &d.tv : nullptr, stream);
}

void expect_gather_matches(const GatherData& d, const std::vector<std::int32_t>& ids) {
  const GatherCase& c = d.c;
  const std::vector<float> x = d.x.host(), w = d.w.host(), tw = d.topk_weights.host();
  std::vector<double> ref(static_cast<std::size_t>(c.weighted ? c.t * c.n : c.t * c.topk * c.n), 0.0);
  for (std::int64_t t = 0; t < c.t; ++t) {
    for (std::int64_t j = 0; j < c.topk; ++j) {
      const std::int64_t e = ids[static_cast<std::size_t>(t * c.topk + j)];
      const std::int64_t row = c.x_per_slot ? t * c.topk + j : t;
      for (std::int64_t nn = 0; nn < c.n; ++nn) {
        double s = 0.0;
        if (e >= 0 && e < c.e) {  // an id out of range gives a zero row
          for (std::int64_t kk = 0; kk < c.h; ++kk) {
            const float wv = c.transpose ? w[(e * c.n + nn) * c.h + kk] : w[(e * c.h + kk) * c.n + nn];
            s += static_cast<double>(x[row * c.h + kk]) * wv;
          }
        }
        if (c.weighted) {
          ref[t * c.n + nn] += tw[t * c.topk + j] * s;
        } else {
          ref[(t * c.topk + j) * c.n + nn] = s;
        }
      }
    }
  }
  Tolerance tol = gemm_tolerance(c.out, c.h, false);
  if (c.weighted) tol.atol *= static_cast<double>(std::max<std::int64_t>(c.topk, 1));
  expect_close(d.out.host(), ref, tol, c.describe());
}

MaskedData make_masked(const MaskedCase& c, std::uint64_t seed) {
  MaskedData d;
  d.c = c;
  d.x = random_buffer(DType::kBFloat16, c.g * c.max_m * c.k, seed);
  d.w = random_buffer(DType::kBFloat16, c.g * c.n * c.k, seed + 1);
  d.masked_m = int_buffer(c.masked_m);
  d.out = nan_buffer(DType::kBFloat16, c.g * c.max_m * c.n);
  d.xv = TensorView::contiguous(d.x.data(), DType::kBFloat16, {c.g, c.max_m, c.k});
  d.wv = TensorView::contiguous(d.w.data(), DType::kBFloat16, {c.g, c.n, c.k});
  d.mv = TensorView::contiguous(d.masked_m.data(), DType::kInt32, {c.g});
  d.ov = TensorView::contiguous(d.out.data(), DType::kBFloat16, {c.g, c.max_m, c.n});
  return d;
}

// Rows below m_g match the reference; rows at or past it are untouched (still the NaN poison).
void expect_masked_matches(const MaskedData& d, const std::vector<std::int32_t>& masked_m) {
  const MaskedCase& c = d.c;
  const std::vector<float> x = d.x.host(), w = d.w.host(), out = d.out.host();
  std::vector<float> valid_out;
  std::vector<double> ref;
  std::int64_t written_past_mask = 0;
  for (std::int64_t g = 0; g < c.g; ++g) {
    const std::int64_t m_g = std::min<std::int64_t>(std::max<std::int32_t>(masked_m[g], 0), c.max_m);
    for (std::int64_t r = 0; r < c.max_m; ++r) {
      for (std::int64_t nn = 0; nn < c.n; ++nn) {
        const float o = out[(g * c.max_m + r) * c.n + nn];
        if (r >= m_g) {
          written_past_mask += std::isnan(o) ? 0 : 1;
          continue;
        }
        double s = 0.0;
        for (std::int64_t kk = 0; kk < c.k; ++kk) {
          s += static_cast<double>(x[(g * c.max_m + r) * c.k + kk]) * w[(g * c.n + nn) * c.k + kk];
        }
        valid_out.push_back(o);
        ref.push_back(s);
      }
    }
  }
  EXPECT_EQ(written_past_mask, 0) << c.describe() << ": rows at or past masked_m were written";
  expect_close(valid_out, ref, gemm_tolerance(DType::kBFloat16, c.k, false), c.describe());
}

}  // namespace tgemm::test
