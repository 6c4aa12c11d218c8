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
#include "tests/gpu/grouped_checks.h"
#include "tgemm/gmm.h"

namespace tgemm {
namespace {

using test::GmmCase;
using test::GmmData;

void run_case(const GmmCase& c, std::uint64_t seed) {
  GmmData d = make_gmm(c, seed);
  run_gmm(d, nullptr);
  device_synchronize();
  expect_gmm_matches(d, c.sizes);
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
  GmmData d = make_gmm(c, 15);
  test::GraphReplay graph([&](Stream stream) { gmm(d.lv, d.rv, d.sv, d.ov, true, &d.bv, stream); });
  ASSERT_TRUE(graph.ok());
  for (const std::vector<std::int32_t>& sizes :
       {std::vector<std::int32_t>{0, 256, 0, 0}, {1, 2, 3, 200}, {100, -3, 17, 500}, {10, 0, 0, 5}}) {
    ASSERT_EQ(cudaMemcpyAsync(d.sizes.data(), sizes.data(), sizes.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
              cudaSuccess);
    fill_nan(d.out.data(), c.out, c.m * c.n, graph.stream());
    graph.replay();
    expect_gmm_matches(d, sizes);
  }
}

}  // namespace
}  // namespace tgemm
