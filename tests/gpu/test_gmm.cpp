// gmm against an fp32 host reference: random group sizes with zeros, one group holding every row,
// sizes that are not multiples of 8/16/64/128, G from 1 to 1000, both rhs layouts, bias on and off,
// fp16/bf16 in, 16-bit and fp32 out, sums below M (tail zeroed) and above M (clamped), negative
// sizes, NaN-poisoned outputs, and a captured CUDA graph replayed after group_sizes change on the
// device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/gmm.h"

namespace tgemm {
namespace {

using test::to_host_floats;

struct GmmCase {
  std::int64_t m = 64, n = 48, k = 40;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool transpose_rhs = false;
  bool bias = false;
  std::vector<std::int32_t> sizes;
  std::string describe() const {
    return "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
           " G=" + std::to_string(sizes.size()) + " transpose_rhs=" + (transpose_rhs ? "1" : "0") +
           " bias=" + (bias ? "1" : "0") + " in=" + std::string(dtype_short_name(in)) +
           " out=" + std::string(dtype_short_name(out));
  }
};

struct GmmData {
  GmmCase c;
  DeviceBuffer lhs, rhs, sizes, out, bias;
  TensorView lv, rv, sv, ov, bv;
};

GmmData make_data(const GmmCase& c, std::uint64_t seed) {
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

void expect_matches(const GmmData& d, const std::vector<std::int32_t>& sizes) {
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

void run_case(const GmmCase& c, std::uint64_t seed) {
  GmmData d = make_data(c, seed);
  gmm(d.lv, d.rv, d.sv, d.ov, c.transpose_rhs, c.bias ? &d.bv : nullptr, nullptr);
  device_synchronize();
  expect_matches(d, c.sizes);
}

TEST(Gmm, RandomSizesWithZerosAcrossGroupCounts) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1;
  for (int g : {1, 3, 8, 32, 256, 1000}) {  // 1000: the offsets scan runs in chunks of 256
    for (bool transpose : {false, true}) {
      for (bool bias : {false, true}) {
        // K = 96 (N = 72 too) takes the 16-byte loads, K = 100 the element loads.
        for (std::int64_t k : {96, 100}) {
          GmmCase c;
          c.m = 517;
          c.n = 72;
          c.k = k;
          c.transpose_rhs = transpose;
          c.bias = bias;
          c.sizes = test::random_group_sizes(g, c.m, seed);
          SCOPED_TRACE(c.describe());
          run_case(c, seed++);
        }
      }
    }
  }
}

TEST(Gmm, DtypesAndFp32Output) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 100;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (DType out : {in, DType::kFloat32}) {
      GmmCase c;
      c.m = 300;
      c.n = 130;
      c.k = 257;
      c.in = in;
      c.out = out;
      c.bias = true;
      c.transpose_rhs = seed % 2 == 0;
      c.sizes = {7, 0, 129, 1, 0, 163};
      run_case(c, seed++);
    }
  }
}

TEST(Gmm, OneGroupHoldsEveryRow) {
  TGEMM_REQUIRE_GPU();
  GmmCase c;
  c.m = 333;
  c.n = 65;
  c.k = 129;
  c.bias = true;
  c.sizes = {0, 0, 333, 0};
  run_case(c, 7);
  c.transpose_rhs = true;
  run_case(c, 8);
}

TEST(Gmm, SumBelowMZeroesTheTail) {
  TGEMM_REQUIRE_GPU();
  GmmCase c;
  c.m = 200;
  c.n = 40;
  c.k = 24;
  c.bias = true;
  c.sizes = {13, 0, 50};  // rows 63..199 are zero, without bias
  run_case(c, 9);
  c.sizes = {0, 0, 0};
  run_case(c, 10);
}

TEST(Gmm, SumAboveMIsClampedAndNegativeSizesCountAsZero) {
  TGEMM_REQUIRE_GPU();
  GmmCase c;
  c.m = 100;
  c.n = 33;
  c.k = 17;
  c.bias = true;
  c.sizes = {-5, 60, -2147483647 - 1, 70, 2147483647};  // group 3 ends at row 100, group 4 is empty
  run_case(c, 11);
  c.sizes = {2147483647, 2147483647};  // the int32 sum overflows; offsets are summed in int64
  run_case(c, 12);
}

TEST(Gmm, KZeroWritesBiasAndGZeroWritesZeros) {
  TGEMM_REQUIRE_GPU();
  GmmCase c;
  c.m = 70;
  c.n = 20;
  c.k = 0;
  c.bias = true;
  c.sizes = {30, 30};
  run_case(c, 13);
  c.k = 16;
  c.bias = false;
  c.sizes = {};
  run_case(c, 14);
}

TEST(Gmm, CapturedGraphFollowsGroupSizesChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  GmmCase c;
  c.m = 256;
  c.n = 96;
  c.k = 80;
  c.bias = true;
  c.transpose_rhs = true;
  c.sizes = {64, 64, 64, 64};
  GmmData d = make_data(c, 15);
  test::GraphReplay graph([&](Stream stream) { gmm(d.lv, d.rv, d.sv, d.ov, true, &d.bv, stream); });
  ASSERT_TRUE(graph.ok());
  for (const std::vector<std::int32_t>& sizes :
       {std::vector<std::int32_t>{0, 256, 0, 0}, {1, 2, 3, 200}, {100, -3, 17, 500}, {10, 0, 0, 5}}) {
    ASSERT_EQ(cudaMemcpyAsync(d.sizes.data(), sizes.data(), sizes.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
              cudaSuccess);
    fill_nan(d.out.data(), c.out, c.m * c.n, graph.stream());
    graph.replay();
    expect_matches(d, sizes);
  }
}

}  // namespace
}  // namespace tgemm
