// gmm against an fp32 host reference, every test under both backends (TGEMM_GROUPED_BACKEND=tile
// and =cutlass: the CUTLASS grouped kernel takes the cases without bias whose K and N are
// multiples of 8 and whose output has the operands' dtype, the tile kernels the rest),: random group sizes with zeros,
// one group holding every row, sizes that are not multiples of 8/16/64/128, G from 1 to 1000, both rhs layouts, bias on
// and off, fp16/bf16 in, 16-bit and fp32 out, sums below M (tail zeroed) and above M (clamped), negative sizes,
// NaN-poisoned outputs, and a captured CUDA graph replayed after group_sizes change on the device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "grouped/gmm_cutlass.h"
#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tests/gpu/grouped_checks.h"
#include "tgemm/gmm.h"

namespace tgemm {
namespace {

using test::GmmCase;
using test::GmmData;

// Each test runs once per backend; the parameter is the TGEMM_GROUPED_BACKEND value.
class Gmm : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { backend_ = std::make_unique<test::GroupedBackendScope>(GetParam()); }
  void TearDown() override { backend_.reset(); }

 private:
  std::unique_ptr<test::GroupedBackendScope> backend_;
};

void run_case(const GmmCase& c, std::uint64_t seed) {
  GmmData d = make_gmm(c, seed);
  run_gmm(d, nullptr);
  device_synchronize();
  expect_gmm_matches(d, c.sizes);
}

TEST_P(Gmm, RandomSizesWithZerosAcrossGroupCounts) {
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

TEST_P(Gmm, DtypesAndFp32Output) {
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

TEST_P(Gmm, OneGroupHoldsEveryRow) {
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

TEST_P(Gmm, SumBelowMZeroesTheTail) {
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

TEST_P(Gmm, SumAboveMIsClampedAndNegativeSizesCountAsZero) {
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

TEST_P(Gmm, KZeroWritesBiasAndGZeroWritesZeros) {
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

TEST_P(Gmm, CapturedGraphFollowsGroupSizesChangedOnTheDevice) {
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

INSTANTIATE_TEST_SUITE_P(Backends, Gmm, ::testing::Values("tile", "cutlass"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- the CUTLASS grouped kernel, forced: cases it takes (K, N multiples of 8, no bias, 16-bit
// out). Each first checks that the kernel does take the case (skipped where no instance of the
// dtype and layout is built: the ci subset builds bf16 with rhs [G, N, K] only).

class GmmCutlass : public ::testing::Test {
 protected:
  void SetUp() override { backend_ = std::make_unique<test::GroupedBackendScope>("cutlass"); }
  void TearDown() override { backend_.reset(); }

  static GmmCase aligned_case(std::int64_t m, std::int64_t n, std::int64_t k, std::vector<std::int32_t> sizes) {
    GmmCase c;
    c.m = m;
    c.n = n;
    c.k = k;
    c.transpose_rhs = true;
    c.sizes = std::move(sizes);
    return c;
  }

  // Runs c on the CUTLASS kernel (skips the test where no instance takes it) and checks it.
  static void run_cutlass(const GmmCase& c, std::uint64_t seed) {
    SCOPED_TRACE(c.describe());
    if (!test::cutlass_takes(c)) GTEST_SKIP() << "no CUTLASS grouped instance takes " << c.describe();
    run_case(c, seed);
  }

 private:
  std::unique_ptr<test::GroupedBackendScope> backend_;
};

TEST(GmmCutlassInstances, NamesMatchTheGeneratorAndImagesAreSm90a) {
  const auto kernels = grouped_cutlass::grouped_kernels();
  for (const auto& k : kernels) EXPECT_EQ(grouped_cutlass::instance_name(k.config), k.generated_name);
  TGEMM_REQUIRE_GPU();
  for (const auto& k : kernels) EXPECT_EQ(k.binary_version() / 10, 9) << k.generated_name;
}

TEST_F(GmmCutlass, EmptyGroupsAndTheTailPastTheSum) {
  TGEMM_REQUIRE_GPU();
  // Empty groups at the start, the middle and the end; rows 250..299 are past the sum (zeros).
  run_cutlass(aligned_case(300, 136, 64, {0, 0, 120, 0, 130, 0}), 3000);
  run_cutlass(aligned_case(64, 64, 32, {0, 0, 0}), 3001);  // every group empty: all zeros
}

TEST_F(GmmCutlass, SkewedGroupsAndOneGroupHoldingEveryRow) {
  TGEMM_REQUIRE_GPU();
  std::vector<std::int32_t> skewed(32, 3);
  skewed[5] = 1000 - 31 * 3;  // 90 % of the rows in one group
  run_cutlass(aligned_case(1000, 256, 128, skewed), 3100);
  run_cutlass(aligned_case(777, 192, 96, {0, 0, 777, 0}), 3101);
}

TEST_F(GmmCutlass, OddSizesAndManyGroups) {
  TGEMM_REQUIRE_GPU();
  run_cutlass(aligned_case(1 + 3 + 7 + 65 + 129 + 255, 72, 200, {1, 3, 7, 65, 129, 255}), 3200);
  GmmCase c = aligned_case(4099, 128, 64, test::random_group_sizes(256, 4099, 3201));
  run_cutlass(c, 3201);
}

TEST_F(GmmCutlass, BothLayoutsAndDtypes) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 3300;
  int ran = 0;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (bool transpose : {true, false}) {
      GmmCase c = aligned_case(520, 264, 136, {200, 0, 17, 303});
      c.in = c.out = in;
      c.transpose_rhs = transpose;
      SCOPED_TRACE(c.describe());
      if (!test::cutlass_takes(c)) continue;  // instance not built in this subset
      run_case(c, seed++);
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << "no CUTLASS grouped instance built";
}

TEST_F(GmmCutlass, CapturedGraphFollowsGroupSizesChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  GmmCase c = aligned_case(512, 128, 96, {128, 128, 128, 128});
  if (!test::cutlass_takes(c)) GTEST_SKIP() << "no CUTLASS grouped instance takes " << c.describe();
  GmmData d = make_gmm(c, 3400);
  test::GraphReplay graph([&](Stream stream) { gmm(d.lv, d.rv, d.sv, d.ov, true, nullptr, stream); });
  ASSERT_TRUE(graph.ok());
  for (const std::vector<std::int32_t>& sizes :
       {std::vector<std::int32_t>{0, 512, 0, 0}, {1, 2, 3, 400}, {100, -3, 17, 900}, {10, 0, 0, 5}, {0, 0, 0, 0}}) {
    ASSERT_EQ(cudaMemcpyAsync(d.sizes.data(), sizes.data(), sizes.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
              cudaSuccess);
    fill_nan(d.out.data(), c.out, c.m * c.n, graph.stream());
    graph.replay();
    expect_gmm_matches(d, sizes);
  }
}

}  // namespace
}  // namespace tgemm
