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
#include "tests/common/grouped_test_util.h"
#include "tests/gpu/grouped_checks.h"
#include "tgemm/error.h"
#include "tgemm/grouped.h"

namespace tgemm {
namespace {

using test::Buffer;
using test::GatherCase;
using test::GatherData;
using test::MaskedCase;
using test::MaskedData;
using test::random_ids;
using test::TgmmCase;
using test::TgmmData;

// ---------------------------------------------------------------------------------------------
// ptgmm / nptgmm

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
