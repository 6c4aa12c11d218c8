// topk_softmax, grouped_topk and fused_moe against float64/float32 host references with the
// documented device rules: random routings (uniform, skewed, some experts empty, every token on one
// expert), expert_map with experts on other ranks and out-of-range ids, both dtypes and
// activations, aligned and unaligned H and I, fp32 and 16-bit outputs and routing weights, empty
// shapes; outputs poisoned with NaN (an unwritten element fails); CUDA graphs replayed after the
// routing changes on the device. The fused_moe tests run under both backends
// (TGEMM_GROUPED_BACKEND=tile and =cutlass: the CUTLASS path takes H and I multiples of 8), and
// FusedMoeCutlass forces the CUTLASS path on prefill-sized cases.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/grouped_test_util.h"
#include "tests/gpu/grouped_checks.h"
#include "tests/gpu/moe_checks.h"
#include "tgemm/moe.h"

namespace tgemm {
namespace {

using test::MoeCase;
using test::MoeData;
using test::random_ids;
using test::RouteCase;
using test::RouteData;
using test::Routing;

// ---------------------------------------------------------------------------------------------
// fused_moe

// Each fused_moe test runs once per backend; the parameter is the TGEMM_GROUPED_BACKEND value.
class FusedMoe : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { backend_ = std::make_unique<test::GroupedBackendScope>(GetParam()); }
  void TearDown() override { backend_.reset(); }

 private:
  std::unique_ptr<test::GroupedBackendScope> backend_;
};

void check_moe(const MoeCase& c, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  MoeData d = make_moe(c, seed);
  run_moe(d, nullptr);
  device_synchronize();
  expect_moe_matches(d, c.ids, d.topk_weights.host());
}

TEST_P(FusedMoe, RandomRoutingsDtypesAndActivations) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1000;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (Routing r : {Routing::kUniform, Routing::kSkewed, Routing::kSomeEmpty, Routing::kOneExpert}) {
      for (MoeActivation act : {MoeActivation::kSilu, MoeActivation::kGelu}) {
        MoeCase c;
        c.in = c.out = in;
        c.act = act;
        c.ids = routing_ids(r, c.t, c.k, c.e, seed);
        check_moe(c, seed++);
      }
    }
  }
}

TEST_P(FusedMoe, UnalignedSizesTopkAndExpertCounts) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1100;
  // H = 100: element loads in the gate/up GEMM; I = 60: scalar activation and element loads in
  // the down GEMM; I = 33 odd; E = 1 and 64; k = 1 and 6.
  for (auto [h, inter, e, k] :
       {std::tuple<int, int, int, int>{100, 60, 8, 2}, {64, 33, 4, 3}, {128, 64, 1, 1}, {96, 40, 64, 6}}) {
    MoeCase c;
    c.t = 29;
    c.h = h;
    c.inter = inter;
    c.e = e;
    c.k = k;
    c.ids = routing_ids(Routing::kUniform, c.t, c.k, c.e, seed);
    check_moe(c, seed++);
  }
}

TEST_P(FusedMoe, Fp32OutAnd16BitRoutingWeights) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1200;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (DType out : {in, DType::kFloat32}) {
      for (DType wt : {DType::kFloat32, in}) {
        MoeCase c;
        c.in = in;
        c.out = out;
        c.weight_type = wt;
        c.ids = routing_ids(Routing::kSkewed, c.t, c.k, c.e, seed);
        check_moe(c, seed++);
      }
    }
  }
}

TEST_P(FusedMoe, ExpertMapAndOutOfRangeIdsContributeZero) {
  TGEMM_REQUIRE_GPU();
  MoeCase c;
  c.e = 6;
  c.k = 4;
  c.global_experts = 16;
  // Global experts 2, 5, 7, 8, 11 and 13 live here (local 0..5); 9 maps to local 6 (>= E) and 14
  // to -7: both contribute 0, as the experts on other ranks (-1) do.
  c.map.assign(16, -1);
  c.map[2] = 0;
  c.map[5] = 1;
  c.map[7] = 2;
  c.map[8] = 3;
  c.map[11] = 4;
  c.map[13] = 5;
  c.map[9] = 6;
  c.map[14] = -7;
  c.ids = random_ids(c.t * c.k, c.global_experts, 1300, true);  // some ids outside [0, 16)
  check_moe(c, 1300);
  // Without a map the same ids index the 6 local experts directly: ids 6.. and negatives give 0.
  c.global_experts = 0;
  c.map.clear();
  check_moe(c, 1301);
}

TEST_P(FusedMoe, EmptyShapesWriteZerosOrNothing) {
  TGEMM_REQUIRE_GPU();
  MoeCase c;
  c.k = 0;  // no slot: zeros
  c.ids.clear();
  check_moe(c, 1400);
  c.k = 2;
  c.inter = 0;  // no intermediate: zeros
  c.ids = routing_ids(Routing::kUniform, c.t, c.k, c.e, 1401);
  check_moe(c, 1401);
  c.inter = 32;
  c.e = 0;  // no local expert: every slot contributes 0
  c.ids.assign(static_cast<std::size_t>(c.t * c.k), 0);
  check_moe(c, 1402);
  c.e = 4;
  c.t = 0;  // nothing to write
  c.ids.clear();
  check_moe(c, 1403);
}

TEST_P(FusedMoe, CapturedGraphFollowsRoutingChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  for (bool with_map : {false, true}) {
    MoeCase c;
    c.t = 64;
    c.k = 2;
    c.e = 8;
    if (with_map) {
      c.global_experts = 16;
      c.map.assign(16, -1);
      for (int g = 0; g < 8; ++g) c.map[static_cast<std::size_t>(2 * g + 1)] = g;  // odd experts live here
    }
    const std::int64_t id_range = with_map ? 16 : 8;
    c.ids = random_ids(c.t * c.k, id_range, 1500, false);
    MoeData d = make_moe(c, 1500);
    test::GraphReplay graph([&](Stream stream) { run_moe(d, stream); });
    ASSERT_TRUE(graph.ok());
    for (std::uint64_t s : {1501, 1502, 1503}) {
      std::vector<std::int32_t> ids = random_ids(c.t * c.k, id_range, s, s == 1502);
      if (s == 1503) ids.assign(ids.size(), with_map ? 3 : 7);
      ASSERT_EQ(cudaMemcpyAsync(d.ids.data(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
                cudaSuccess);
      fill_uniform(d.topk_weights.data(), c.weight_type, c.t * c.k, s, 0.0f, 1.0f, graph.stream());
      fill_nan(d.out.data(), c.out, d.out.count, graph.stream());
      graph.replay();
      SCOPED_TRACE(c.describe() + " replay seed " + std::to_string(s));
      expect_moe_matches(d, ids, d.topk_weights.host());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, FusedMoe, ::testing::Values("tile", "cutlass"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The CUTLASS path forced on prefill-sized layers; each case first checks that the path takes it
// (skipped where the instances are not built: the ci subset has bf16 only).
class FusedMoeCutlass : public ::testing::Test {
 protected:
  void SetUp() override { backend_ = std::make_unique<test::GroupedBackendScope>("cutlass"); }
  void TearDown() override { backend_.reset(); }

  static MoeCase prefill_case(Routing r, std::uint64_t seed) {
    MoeCase c;
    c.t = 300;
    c.k = 4;
    c.e = 16;
    c.h = 256;
    c.inter = 136;
    c.ids = routing_ids(r, c.t, c.k, c.e, seed);
    return c;
  }

  static void run_cutlass(const MoeCase& c, std::uint64_t seed) {
    if (!test::moe_cutlass_takes(c)) GTEST_SKIP() << "no CUTLASS grouped instance takes " << c.describe();
    check_moe(c, seed);
  }

 private:
  std::unique_ptr<test::GroupedBackendScope> backend_;
};

TEST_F(FusedMoeCutlass, RoutingsUniformSkewedEmptyExpertsAndOneExpert) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1600;
  for (Routing r : {Routing::kUniform, Routing::kSkewed, Routing::kSomeEmpty, Routing::kOneExpert}) {
    run_cutlass(prefill_case(r, seed), seed);
    ++seed;
  }
}

TEST_F(FusedMoeCutlass, DtypesActivationsAndFp32Out) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1700;
  int ran = 0;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (DType out : {in, DType::kFloat32}) {
      MoeCase c = prefill_case(Routing::kUniform, seed);
      c.in = in;
      c.out = out;
      c.weight_type = out == DType::kFloat32 ? in : DType::kFloat32;
      c.act = seed % 2 == 0 ? MoeActivation::kGelu : MoeActivation::kSilu;
      SCOPED_TRACE(c.describe());
      if (test::moe_cutlass_takes(c)) {
        check_moe(c, seed);
        ++ran;
      }
      ++seed;
    }
  }
  if (ran == 0) GTEST_SKIP() << "no CUTLASS grouped instance built";
}

TEST_F(FusedMoeCutlass, ExpertMapWithExpertsOnOtherRanks) {
  TGEMM_REQUIRE_GPU();
  MoeCase c = prefill_case(Routing::kUniform, 1800);
  c.global_experts = 64;
  c.map.assign(64, -1);
  for (int g = 0; g < 16; ++g) c.map[static_cast<std::size_t>(4 * g + 2)] = g;  // a quarter live here
  c.ids = random_ids(c.t * c.k, c.global_experts, 1800, true);
  run_cutlass(c, 1800);
}

TEST_F(FusedMoeCutlass, CapturedGraphFollowsRoutingChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  MoeCase c = prefill_case(Routing::kUniform, 1900);
  if (!test::moe_cutlass_takes(c)) GTEST_SKIP() << "no CUTLASS grouped instance takes " << c.describe();
  MoeData d = make_moe(c, 1900);
  test::GraphReplay graph([&](Stream stream) { run_moe(d, stream); });
  ASSERT_TRUE(graph.ok());
  for (std::uint64_t s : {1901, 1902, 1903}) {
    std::vector<std::int32_t> ids = routing_ids(s == 1902 ? Routing::kSkewed : Routing::kSomeEmpty, c.t, c.k, c.e, s);
    if (s == 1903) ids.assign(ids.size(), 9);  // every slot on one expert
    ASSERT_EQ(cudaMemcpyAsync(d.ids.data(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
              cudaSuccess);
    fill_uniform(d.topk_weights.data(), c.weight_type, c.t * c.k, s, 0.0f, 1.0f, graph.stream());
    fill_nan(d.out.data(), c.out, d.out.count, graph.stream());
    graph.replay();
    SCOPED_TRACE(c.describe() + " replay seed " + std::to_string(s));
    expect_moe_matches(d, ids, d.topk_weights.host());
  }
}

// ---------------------------------------------------------------------------------------------
// topk_softmax and grouped_topk

void check_route(const RouteCase& c, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  RouteData d = make_route(c, seed);
  run_route(d, nullptr);
  device_synchronize();
  expect_route_matches(d, -1);
}

TEST(Routing, TopkSoftmaxExpertCountsDtypesAndRenormalize) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 2000;
  for (auto [e, k] : {std::pair<int, int>{8, 2}, {60, 4}, {128, 8}, {300, 6}, {2048, 1}, {5, 5}}) {
    for (DType g : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      RouteCase c;
      c.e = e;
      c.k = k;
      c.gating = g;
      c.renormalize = seed % 2 == 0;
      check_route(c, seed++);
    }
  }
}

TEST(Routing, GroupedTopkDeepSeekV3AndVariants) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 2100;
  RouteCase c;
  c.grouped = true;
  c.e = 256;  // DeepSeek-V3: 8 groups of 32, 4 groups kept, 8 experts, sigmoid with bias, scaled
  c.n_group = 8;
  c.topk_group = 4;
  c.k = 8;
  c.sigmoid = true;
  c.bias = true;
  c.renormalize = true;
  c.scaling = 2.5;
  check_route(c, seed++);
  c.gating = DType::kBFloat16;
  check_route(c, seed++);
  c.bias = false;  // group score: the group's best
  c.sigmoid = false;
  c.renormalize = false;
  c.scaling = 1.0;
  check_route(c, seed++);
  c.e = 64;  // groups of one expert: the top-2 sum is the expert itself
  c.n_group = 64;
  c.topk_group = 6;
  c.k = 6;
  c.bias = true;
  check_route(c, seed++);
  c.e = 96;  // every group kept: plain top-k
  c.n_group = 3;
  c.topk_group = 3;
  c.k = 7;
  check_route(c, seed++);
}

TEST(Routing, NanLogitsStillGiveDistinctIdsInRange) {
  TGEMM_REQUIRE_GPU();
  for (bool grouped : {false, true}) {
    RouteCase c;
    c.t = 4;
    c.e = 32;
    c.k = 4;
    c.grouped = grouped;
    c.sigmoid = grouped;
    c.n_group = grouped ? 4 : 1;
    c.topk_group = grouped ? 2 : 1;
    RouteData d = make_route(c, 2200);
    const float nan = std::nanf("");
    std::vector<float> row(static_cast<std::size_t>(c.e), nan);  // row 1: NaN everywhere but expert 9
    row[9] = 0.5f;
    copy_to_device(static_cast<float*>(d.gating.data()) + c.e, row.data(), row.size() * 4);
    run_route(d, nullptr);
    device_synchronize();
    SCOPED_TRACE(c.describe());
    expect_route_matches(d, 1);
  }
}

TEST(Routing, CapturedGraphOfRoutingAndFusedMoeFollowsNewLogits) {
  TGEMM_REQUIRE_GPU();
  RouteCase rc;
  rc.t = 48;
  rc.e = 8;
  rc.k = 2;
  rc.renormalize = true;
  RouteData r = make_route(rc, 2300);
  MoeCase mc;
  mc.t = rc.t;
  mc.k = rc.k;
  mc.e = rc.e;
  mc.ids.assign(static_cast<std::size_t>(mc.t * mc.k), 0);
  MoeData m = make_moe(mc, 2301);
  const TensorView ids = r.iv, weights = r.wv;  // the routing's outputs feed the layer
  test::GraphReplay graph([&](Stream stream) {
    run_route(r, stream);
    fused_moe(m.hv, m.w1v, m.w2v, weights, ids, m.ov, mc.act, nullptr, stream);
  });
  ASSERT_TRUE(graph.ok());
  for (std::uint64_t s : {2302, 2303}) {
    fill_uniform(r.gating.data(), rc.gating, rc.t * rc.e, s, -4.0f, 4.0f, graph.stream());
    fill_nan(m.out.data(), mc.out, m.out.count, graph.stream());
    graph.replay();
    SCOPED_TRACE("replay seed " + std::to_string(s));
    expect_route_matches(r, -1);
    std::vector<std::int32_t> routed(static_cast<std::size_t>(rc.t * rc.k));
    copy_to_host(routed.data(), r.ids.data(), routed.size() * 4);
    expect_moe_matches(m, routed, r.weights.host());
  }
}

}  // namespace
}  // namespace tgemm
