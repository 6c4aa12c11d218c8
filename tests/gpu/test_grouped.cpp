// ptgmm/nptgmm, grouped_gemm (expert ids) and m_grouped_gemm_masked against float64 host
// references with the documented device-side rules: random group sizes with zeros, one group
// holding every row, sizes not multiples of 8/16/64, G from 1 to 256, both lhs layouts, bias_grad,
// accumulate, out-of-range expert ids, weighted sums, masked_m of 0, max_m and above; outputs
// poisoned with NaN (so an unwritten element fails, and the masked op's untouched rows must stay
// NaN); CUDA graphs replayed after the device data change.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/error.h"
#include "tgemm/grouped.h"

namespace tgemm {
namespace {

using test::to_host_floats;

struct Buffer {
  DeviceBuffer buf;
  DType dtype = DType::kBFloat16;
  std::int64_t count = 0;
  void* data() const { return buf.data(); }
  std::vector<float> host() const { return to_host_floats(buf.data(), dtype, count); }
};

Buffer random_buffer(DType dtype, std::int64_t count, std::uint64_t seed) {
  Buffer b{DeviceBuffer(std::max<std::size_t>(static_cast<std::size_t>(count) * dtype_size(dtype), 16)), dtype, count};
  fill_uniform(b.data(), dtype, count, seed, -1.0f, 1.0f, nullptr);
  return b;
}

Buffer nan_buffer(DType dtype, std::int64_t count) {
  Buffer b{DeviceBuffer(std::max<std::size_t>(static_cast<std::size_t>(count) * dtype_size(dtype), 16)), dtype, count};
  fill_nan(b.data(), dtype, count, nullptr);
  return b;
}

Buffer int_buffer(const std::vector<std::int32_t>& v) {
  Buffer b{DeviceBuffer(std::max<std::size_t>(v.size() * 4, 16)), DType::kInt32, static_cast<std::int64_t>(v.size())};
  if (!v.empty()) copy_to_device(b.data(), v.data(), v.size() * 4);
  return b;
}

// Elements of out outside tol of ref (NaN fails), with the first one described.
void expect_close(const std::vector<float>& out, const std::vector<double>& ref, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(out.size(), ref.size()) << what;
  std::int64_t bad = 0, first = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double err = std::fabs(static_cast<double>(out[i]) - ref[i]);
    if (!(err <= tol.atol + tol.rtol * std::fabs(ref[i]))) {
      if (first < 0) first = static_cast<std::int64_t>(i);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": first bad element " << first << " out "
                    << (first < 0 ? 0.0f : out[static_cast<std::size_t>(first)]) << " ref "
                    << (first < 0 ? 0.0 : ref[static_cast<std::size_t>(first)]);
}

// Group g's range [begin, end) of a dimension of length m: negative sizes count as 0, prefix sums
// clamped to m (include/tgemm/gmm.h).
std::vector<std::int64_t> clamped_offsets(const std::vector<std::int32_t>& sizes, std::int64_t m) {
  std::vector<std::int64_t> off(sizes.size() + 1, 0);
  for (std::size_t g = 0; g < sizes.size(); ++g) off[g + 1] = std::min(m, off[g] + std::max<std::int32_t>(sizes[g], 0));
  return off;
}

// ---------------------------------------------------------------------------------------------
// ptgmm / nptgmm

struct TgmmCase {
  std::int64_t m = 96, k = 40, n = 72;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool col_major = false;  // lhs stored [M, K] row-major, passed as its [K, M] transpose
  bool bias_grad = false;
  bool accumulate = false;
  bool persistent = true;
  std::vector<std::int32_t> sizes;
  std::string describe() const {
    return "M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n) +
           " G=" + std::to_string(sizes.size()) + " col_major=" + std::to_string(col_major) +
           " bias_grad=" + std::to_string(bias_grad) + " accumulate=" + std::to_string(accumulate) +
           " persistent=" + std::to_string(persistent) + " in=" + std::string(dtype_short_name(in)) +
           " out=" + std::string(dtype_short_name(out));
  }
};

struct TgmmData {
  TgmmCase c;
  Buffer lhs, rhs, sizes, out, bias_grad;
  std::vector<float> out_before;  // what accumulate adds to
  TensorView lv, rv, sv, ov, bv;
};

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

void check_tgmm(const TgmmCase& c, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  TgmmData d = make_tgmm(c, seed);
  run_tgmm(d, nullptr);
  device_synchronize();
  expect_tgmm_matches(d, c.sizes);
}

TEST(Tgmm, RandomSizesBothLayoutsBothGrids) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1;
  for (int g : {1, 5, 32, 256}) {
    for (bool col_major : {false, true}) {
      for (bool persistent : {true, false}) {
        // M = 520, K = 72, N = 64 take the 16-byte loads; M = 517, K = 70, N = 66 the element loads.
        for (bool aligned : {true, false}) {
          TgmmCase c;
          c.m = aligned ? 520 : 517;
          c.k = aligned ? 72 : 70;
          c.n = aligned ? 64 : 66;
          c.col_major = col_major;
          c.persistent = persistent;
          c.bias_grad = seed % 2 == 0;
          c.sizes = test::random_group_sizes(g, c.m, seed);
          check_tgmm(c, seed++);
        }
      }
    }
  }
}

TEST(Tgmm, DtypesAccumulateAndBiasGrad) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 100;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (DType out : {in, DType::kFloat32}) {
      for (bool accumulate : {false, true}) {
        TgmmCase c;
        c.m = 300;
        c.k = 130;
        c.n = 97;
        c.in = in;
        c.out = out;
        c.accumulate = accumulate;
        c.bias_grad = true;
        c.col_major = seed % 2 == 0;
        c.persistent = seed % 3 != 0;
        c.sizes = {7, 0, 129, 1, 0, 163};  // empty groups: zeros, or unchanged with accumulate
        check_tgmm(c, seed++);
      }
    }
  }
}

TEST(Tgmm, OneGroupHoldsEveryRowAndClampedSizes) {
  TGEMM_REQUIRE_GPU();
  TgmmCase c;
  c.m = 333;
  c.k = 65;
  c.n = 129;
  c.bias_grad = true;
  c.sizes = {0, 0, 333, 0};
  check_tgmm(c, 7);
  c.sizes = {-5, 60, -2147483647 - 1, 300, 2147483647};  // group 3 ends at M, group 4 is empty
  c.persistent = false;
  check_tgmm(c, 8);
  c.sizes = {10, 20};  // columns 30.. belong to no group
  c.col_major = true;
  check_tgmm(c, 9);
}

TEST(Tgmm, PersistentAndNonPersistentGridsAgreeBitForBit) {
  TGEMM_REQUIRE_GPU();
  TgmmCase c;
  c.m = 1000;
  c.k = 200;
  c.n = 136;
  c.out = DType::kFloat32;
  c.bias_grad = true;
  c.sizes = test::random_group_sizes(40, c.m, 13);
  TgmmData a = make_tgmm(c, 13);
  c.persistent = false;
  TgmmData b = make_tgmm(c, 13);  // the same inputs (same seed)
  run_tgmm(a, nullptr);
  run_tgmm(b, nullptr);
  device_synchronize();
  for (const auto& [x, y] : {std::pair<const Buffer*, const Buffer*>{&a.out, &b.out}, {&a.bias_grad, &b.bias_grad}}) {
    const std::vector<float> hx = x->host(), hy = y->host();
    ASSERT_EQ(hx.size(), hy.size());
    std::int64_t differ = 0;
    for (std::size_t i = 0; i < hx.size(); ++i) differ += std::memcmp(&hx[i], &hy[i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0);
  }
}

TEST(Tgmm, EmptyDimensions) {
  TGEMM_REQUIRE_GPU();
  TgmmCase c;
  c.m = 0;  // every group empty: zeros and zero bias_grad
  c.k = 24;
  c.n = 40;
  c.bias_grad = true;
  c.sizes = {3, 0};
  check_tgmm(c, 10);
  c.m = 50;
  c.n = 0;  // no output, bias_grad still summed
  c.sizes = {20, 30};
  check_tgmm(c, 11);
}

TEST(Tgmm, CapturedGraphFollowsGroupSizesChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  for (bool persistent : {true, false}) {
    TgmmCase c;
    c.m = 256;
    c.k = 80;
    c.n = 96;
    c.bias_grad = true;
    c.persistent = persistent;
    c.sizes = {64, 64, 64, 64};
    TgmmData d = make_tgmm(c, 12);
    test::GraphReplay graph([&](Stream stream) { run_tgmm(d, stream); });
    ASSERT_TRUE(graph.ok());
    for (const std::vector<std::int32_t>& sizes :
         {std::vector<std::int32_t>{0, 256, 0, 0}, {1, 2, 3, 200}, {100, -3, 17, 500}, {10, 0, 0, 5}}) {
      ASSERT_EQ(cudaMemcpyAsync(d.sizes.data(), sizes.data(), sizes.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
                cudaSuccess);
      fill_nan(d.out.data(), c.out, d.out.count, graph.stream());
      fill_nan(d.bias_grad.data(), DType::kFloat32, d.bias_grad.count, graph.stream());
      graph.replay();
      expect_tgmm_matches(d, sizes);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// grouped_gemm

struct GatherCase {
  std::int64_t t = 40, topk = 2, h = 64, n = 72, e = 8;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool x_per_slot = false;
  bool transpose = false;
  bool weighted = false;
  DType weight_type = DType::kFloat32;
  std::vector<std::int32_t> ids;  // [T * topk]
  std::string describe() const {
    return "T=" + std::to_string(t) + " topk=" + std::to_string(topk) + " H=" + std::to_string(h) +
           " N=" + std::to_string(n) + " E=" + std::to_string(e) + " x_per_slot=" + std::to_string(x_per_slot) +
           " transpose=" + std::to_string(transpose) + " weighted=" + std::to_string(weighted) +
           " in=" + std::string(dtype_short_name(in)) + " out=" + std::string(dtype_short_name(out));
  }
};

struct GatherData {
  GatherCase c;
  Buffer x, w, ids, topk_weights, out;
  TensorView xv, wv, iv, tv, ov;
};

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

std::vector<std::int32_t> random_ids(std::int64_t count, std::int64_t experts, std::uint64_t seed, bool invalid) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(count));
  for (auto& id : ids) {
    id = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(std::max<std::int64_t>(experts, 1)));
    if (invalid && rng() % 7 == 0)
      id = rng() % 2 ? -1 - static_cast<std::int32_t>(rng() % 5) : static_cast<std::int32_t>(experts + rng() % 3);
  }
  return ids;
}

void check_gather(const GatherCase& c, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  GatherData d = make_gather(c, seed);
  run_gather(d, nullptr);
  device_synchronize();
  expect_gather_matches(d, c.ids);
}

TEST(GroupedGemm, LayoutsAndExpertCounts) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 200;
  for (std::int64_t e : {1, 8, 64, 256}) {
    for (bool transpose : {false, true}) {
      for (bool per_slot : {false, true}) {
        for (bool aligned : {true, false}) {  // H = 64, N = 72: 16-byte loads; H = 62, N = 70: element loads
          GatherCase c;
          c.t = 77;
          c.topk = e == 1 ? 1 : 3;
          c.e = e;
          c.h = aligned ? 64 : 62;
          c.n = aligned ? 72 : 70;
          c.transpose = transpose;
          c.x_per_slot = per_slot;
          c.ids = random_ids(c.t * c.topk, e, seed, seed % 2 == 0);
          check_gather(c, seed++);
        }
      }
    }
  }
}

TEST(GroupedGemm, WeightedSumDtypesAndOutOfRangeIds) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 300;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (DType out : {in, DType::kFloat32}) {
      for (DType wt : {DType::kFloat32, in}) {
        GatherCase c;
        c.t = 50;
        c.topk = 4;
        c.e = 6;
        c.h = 96;
        c.n = 130;
        c.in = in;
        c.out = out;
        c.weighted = true;
        c.weight_type = wt;
        c.x_per_slot = seed % 2 == 0;
        c.ids = random_ids(c.t * c.topk, c.e, seed, true);
        check_gather(c, seed++);
      }
    }
  }
}

TEST(GroupedGemm, OneExpertHoldsEverySlotAndEmptyShapes) {
  TGEMM_REQUIRE_GPU();
  GatherCase c;
  c.t = 200;
  c.topk = 2;
  c.e = 16;
  c.ids.assign(static_cast<std::size_t>(c.t * c.topk), 5);
  check_gather(c, 400);
  c.ids.assign(c.ids.size(), 16);  // every id out of range: zeros
  check_gather(c, 401);
  c.h = 0;  // empty reduction: zeros
  c.ids = random_ids(c.t * c.topk, c.e, 402, false);
  check_gather(c, 402);
  c.h = 32;
  c.e = 0;  // no experts: every id is out of range
  c.ids.assign(c.ids.size(), 0);
  check_gather(c, 403);
  c.e = 4;
  c.topk = 0;  // weighted sum over no slots: zeros
  c.weighted = true;
  c.ids.clear();
  check_gather(c, 404);
}

TEST(GroupedGemm, CapturedGraphFollowsExpertIdsChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  for (bool weighted : {false, true}) {
    GatherCase c;
    c.t = 100;
    c.topk = 2;
    c.e = 8;
    c.weighted = weighted;
    c.ids = random_ids(c.t * c.topk, c.e, 500, false);
    GatherData d = make_gather(c, 500);
    test::GraphReplay graph([&](Stream stream) { run_gather(d, stream); });
    ASSERT_TRUE(graph.ok());
    for (std::uint64_t s : {501, 502, 503}) {
      std::vector<std::int32_t> ids = random_ids(c.t * c.topk, c.e, s, s == 502);
      if (s == 503) ids.assign(ids.size(), 3);
      ASSERT_EQ(cudaMemcpyAsync(d.ids.data(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
                cudaSuccess);
      fill_nan(d.out.data(), c.out, d.out.count, graph.stream());
      graph.replay();
      expect_gather_matches(d, ids);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// m_grouped_gemm_masked

struct MaskedCase {
  std::int64_t g = 4, max_m = 128, n = 72, k = 64;
  std::vector<std::int32_t> masked_m;
  std::string describe() const {
    return "G=" + std::to_string(g) + " max_m=" + std::to_string(max_m) + " N=" + std::to_string(n) +
           " K=" + std::to_string(k);
  }
};

struct MaskedData {
  MaskedCase c;
  Buffer x, w, masked_m, out;
  TensorView xv, wv, mv, ov;
};

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

void check_masked(const MaskedCase& c, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  MaskedData d = make_masked(c, seed);
  m_grouped_gemm_masked(d.xv, d.wv, d.ov, d.mv, c.max_m / 2, nullptr);
  device_synchronize();
  expect_masked_matches(d, c.masked_m);
}

TEST(Masked, MasksOfZeroMaxAndBeyond) {
  TGEMM_REQUIRE_GPU();
  MaskedCase c;
  c.g = 6;
  c.max_m = 130;
  c.masked_m = {0, 130, 1, 65, 500, -7};  // 500 clamps to max_m, -7 to 0
  check_masked(c, 600);
  c.k = 62;  // element loads
  c.n = 70;
  c.masked_m = {3, 64, 129, 0, 17, 130};
  check_masked(c, 601);
}

TEST(Masked, ManyGroupsDecodeSizes) {
  TGEMM_REQUIRE_GPU();
  for (std::int64_t g : {1, 32, 256}) {
    MaskedCase c;
    c.g = g;
    c.max_m = 16;
    c.n = 128;
    c.k = 256;
    std::mt19937_64 rng(static_cast<std::uint64_t>(g));
    c.masked_m.resize(static_cast<std::size_t>(g));
    for (auto& m : c.masked_m) m = static_cast<std::int32_t>(rng() % 17);
    check_masked(c, 700 + static_cast<std::uint64_t>(g));
  }
}

TEST(Masked, CapturedGraphFollowsMasksChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  MaskedCase c;
  c.g = 4;
  c.max_m = 96;
  c.masked_m = {96, 96, 96, 96};
  MaskedData d = make_masked(c, 800);
  test::GraphReplay graph([&](Stream stream) { m_grouped_gemm_masked(d.xv, d.wv, d.ov, d.mv, 48, stream); });
  ASSERT_TRUE(graph.ok());
  for (const std::vector<std::int32_t>& masks :
       {std::vector<std::int32_t>{0, 0, 0, 0}, {1, 95, 96, 1000}, {50, -1, 7, 64}}) {
    ASSERT_EQ(
        cudaMemcpyAsync(d.masked_m.data(), masks.data(), masks.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
        cudaSuccess);
    fill_nan(d.out.data(), DType::kBFloat16, d.out.count, graph.stream());
    graph.replay();
    expect_masked_matches(d, masks);
  }
}

// Bad input the host can check: an Error before anything is launched, no sticky CUDA error.
TEST(GroupedErrors, HostChecksThrowAndLeaveNoCudaError) {
  TGEMM_REQUIRE_GPU();
  MaskedCase c;
  c.masked_m = {1, 2, 3, 4};
  MaskedData d = make_masked(c, 900);
  EXPECT_THROW(m_grouped_gemm_masked(d.xv, d.wv, d.ov, d.mv, -1, nullptr), Error);
  TensorView bad_w = d.wv;
  bad_w.sizes[2] = c.k - 1;
  EXPECT_THROW(m_grouped_gemm_masked(d.xv, bad_w, d.ov, d.mv, 8, nullptr), Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tgemm
