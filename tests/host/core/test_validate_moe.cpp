// validate_topk_softmax, validate_grouped_topk and validate_fused_moe never dereference the tensors,
// so fake, never-mapped addresses stand in for device pointers (inputs at 0x10000.., outputs at
// 0x800000..).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/validate_moe.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

// ---------------------------------------------------------------------------------------------
// Routing: gating [5, 256] bf16 -> topk_weights / topk_ids [5, 8]; grouped: 8 groups, 4 kept.

struct RoutingArgsFake {
  TensorView gating = view(addr(0x10000), DType::kBFloat16, {5, 256});
  TensorView bias = view(addr(0x20000), DType::kFloat32, {256});
  TensorView weights = view(addr(0x800000), DType::kFloat32, {5, 8});
  TensorView ids = view(addr(0x900000), DType::kInt32, {5, 8});
  std::int64_t n_group = 8, topk_group = 4;
  double scaling = 2.5;
  bool grouped = true;

  RoutingCall validate() const {
    if (!grouped) return validate_topk_softmax(gating, weights, ids, true, "topk_softmax");
    return validate_grouped_topk(gating, &bias, n_group, topk_group, MoeScoring::kSigmoid, true, scaling, weights, ids,
                                 "grouped_topk");
  }
};

const std::vector<test::BadInputCase<RoutingArgsFake>>& routing_cases() {
  static const std::vector<test::BadInputCase<RoutingArgsFake>> cases = {
      {"gating_rank",
       [](RoutingArgsFake& a) {
         a.gating = view(a.gating.data, a.gating.dtype, {5, 256, 1});
       },
       {"gating must have rank 2", "got 3"}},
      {"gating_int",
       [](RoutingArgsFake& a) { a.gating.dtype = DType::kInt32; },
       {"gating.dtype must be torch.bfloat16, torch.float16 or torch.float32", "got torch.int32"}},
      {"bias_dtype",
       [](RoutingArgsFake& a) { a.bias.dtype = DType::kBFloat16; },
       {"correction_bias.dtype must be torch.float32", "got torch.bfloat16"}},
      {"weights_dtype",
       [](RoutingArgsFake& a) { a.weights.dtype = DType::kBFloat16; },
       {"topk_weights.dtype must be torch.float32", "got torch.bfloat16"}},
      {"ids_dtype",
       [](RoutingArgsFake& a) { a.ids.dtype = DType::kFloat32; },
       {"topk_ids.dtype must be torch.int32", "got torch.float32"}},
      {"ids_rows",
       [](RoutingArgsFake& a) {
         a.ids = view(a.ids.data, DType::kInt32, {4, 8});
       },
       {"topk_ids.size(0) must equal gating.size(0) (T)", "got 4 vs 5"}},
      {"weights_shape",
       [](RoutingArgsFake& a) {
         a.weights = view(a.weights.data, DType::kFloat32, {5, 7});
       },
       {"topk_weights must have topk_ids's shape [T, k] = [5, 8]", "got [5, 7]"}},
      {"bias_size",
       [](RoutingArgsFake& a) { a.bias = view(a.bias.data, DType::kFloat32, {255}); },
       {"correction_bias.size(0) must equal gating.size(1) (E)", "got 255 vs 256"}},
      {"too_many_experts",
       [](RoutingArgsFake& a) {
         a.gating = view(a.gating.data, a.gating.dtype, {5, 4096});
         a.bias = view(a.bias.data, DType::kFloat32, {4096});
       },
       {"gating.size(1) (E) must be <= 2048", "got 4096"}},
      {"k_above_e",
       [](RoutingArgsFake& a) {
         a.gating = view(a.gating.data, a.gating.dtype, {5, 6});
         a.grouped = false;
       },
       {"k (topk_ids.size(1)) must be <= E", "k=8 E=6"}},
      {"gating_strided",
       [](RoutingArgsFake& a) {
         a.gating = view(a.gating.data, a.gating.dtype, {5, 256}, {512, 2});
       },
       {"gating.stride(1) must be 1", "(512, 2)"}},
      {"ids_not_contiguous",
       [](RoutingArgsFake& a) {
         a.ids = view(a.ids.data, DType::kInt32, {5, 8}, {16, 1});
       },
       {"topk_ids must be contiguous", "strides (16, 1)"}},
      {"ids_overlap_weights",
       [](RoutingArgsFake& a) { a.ids.data = addr(0x800010); },
       {"topk_ids must not overlap topk_weights"}},
      {"weights_overlap_gating",
       [](RoutingArgsFake& a) { a.weights.data = addr(0x10040); },
       {"topk_weights must not overlap gating"}},
      {"n_group_not_divisor",
       [](RoutingArgsFake& a) { a.n_group = 6; },
       {"n_group must be >= 1 and divide E", "n_group=6 E=256"}},
      {"n_group_zero", [](RoutingArgsFake& a) { a.n_group = 0; }, {"n_group must be >= 1", "n_group=0"}},
      {"topk_group_above_n_group",
       [](RoutingArgsFake& a) { a.topk_group = 9; },
       {"topk_group must be in [1, n_group] = [1, 8]", "got 9"}},
      {"k_above_chosen_groups",
       [](RoutingArgsFake& a) {
         a.n_group = 64;  // groups of 4 experts, 1 kept: 4 < k = 8
         a.topk_group = 1;
       },
       {"k (topk_ids.size(1)) must be <= topk_group * E / n_group (4", "got 8"}},
      {"scaling_nan",
       [](RoutingArgsFake& a) { a.scaling = std::numeric_limits<double>::quiet_NaN(); },
       {"routed_scaling must be finite", "nan"}},
  };
  return cases;
}

class RoutingBadInput : public ::testing::TestWithParam<test::BadInputCase<RoutingArgsFake>> {};

TEST_P(RoutingBadInput, ThrowsNamingArgumentAndValue) {
  RoutingArgsFake a;
  GetParam().mutate(a);
  test::expect_bad_input_error(GetParam(), a.grouped ? "grouped_topk" : "topk_softmax");
}
INSTANTIATE_TEST_SUITE_P(Validate, RoutingBadInput, ::testing::ValuesIn(routing_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateRouting, ProblemFields) {
  RoutingArgsFake a;
  RoutingProblem p = a.validate().problem;
  EXPECT_EQ(p.tokens, 5);
  EXPECT_EQ(p.experts, 256);
  EXPECT_EQ(p.topk, 8);
  EXPECT_EQ(p.ld_gating, 256);
  EXPECT_EQ(p.n_group, 8);
  EXPECT_EQ(p.topk_group, 4);
  EXPECT_EQ(p.scoring, MoeScoring::kSigmoid);
  EXPECT_TRUE(p.has_bias);
  EXPECT_TRUE(p.renormalize);
  EXPECT_DOUBLE_EQ(p.routed_scaling, 2.5);
  a.grouped = false;  // topk_softmax: one group holding every expert, no bias, scale 1
  a.gating = view(a.gating.data, DType::kFloat32, {5, 256}, {300, 1});
  p = a.validate().problem;
  EXPECT_EQ(p.ld_gating, 300);
  EXPECT_EQ(p.n_group, 1);
  EXPECT_EQ(p.topk_group, 1);
  EXPECT_FALSE(p.has_bias);
  EXPECT_DOUBLE_EQ(p.routed_scaling, 1.0);
  a.ids = view(a.ids.data, DType::kInt32, {5, 0});  // k = 0 and T = 0 are valid (nothing to write)
  a.weights = view(a.weights.data, DType::kFloat32, {5, 0});
  EXPECT_EQ(a.validate().problem.topk, 0);
}

// ---------------------------------------------------------------------------------------------
// fused_moe: hidden [6, 64] bf16, w1 [4, 96, 64], w2 [4, 64, 48], topk [6, 2], out [6, 64],
// expert_map [16].

struct MoeArgsFake {
  TensorView hidden = view(addr(0x10000), DType::kBFloat16, {6, 64});
  TensorView w1 = view(addr(0x20000), DType::kBFloat16, {4, 96, 64});
  TensorView w2 = view(addr(0x80000), DType::kBFloat16, {4, 64, 48});
  TensorView weights = view(addr(0xc0000), DType::kFloat32, {6, 2});
  TensorView ids = view(addr(0xd0000), DType::kInt32, {6, 2});
  TensorView map = view(addr(0xe0000), DType::kInt32, {16});
  TensorView out = view(addr(0x800000), DType::kBFloat16, {6, 64});
  bool with_map = true;
  MoeActivation act = MoeActivation::kSilu;

  MoeCall validate() const {
    return validate_fused_moe(hidden, w1, w2, weights, ids, out, act, with_map ? &map : nullptr, "fused_moe");
  }
};

const std::vector<test::BadInputCase<MoeArgsFake>>& moe_cases() {
  static const std::vector<test::BadInputCase<MoeArgsFake>> cases = {
      {"hidden_rank",
       [](MoeArgsFake& a) {
         a.hidden = view(a.hidden.data, a.hidden.dtype, {6, 64, 1});
       },
       {"hidden must have rank 2", "got 3"}},
      {"w1_rank",
       [](MoeArgsFake& a) {
         a.w1 = view(a.w1.data, a.w1.dtype, {384, 64});
       },
       {"w1 must have rank 3", "got 2"}},
      {"map_rank",
       [](MoeArgsFake& a) {
         a.map = view(a.map.data, DType::kInt32, {4, 4});
       },
       {"expert_map must have rank 1", "got 2"}},
      {"w2_null", [](MoeArgsFake& a) { a.w2.data = nullptr; }, {"w2.data must not be null", "12288 elements"}},
      {"hidden_fp32",
       [](MoeArgsFake& a) { a.hidden.dtype = DType::kFloat32; },
       {"hidden.dtype must be torch.bfloat16 or torch.float16", "got torch.float32"}},
      {"w1_dtype",
       [](MoeArgsFake& a) { a.w1.dtype = DType::kFloat16; },
       {"w1.dtype must equal hidden.dtype (torch.bfloat16)", "got torch.float16"}},
      {"w2_fp8",
       [](MoeArgsFake& a) { a.w2.dtype = DType::kFloat8E4M3; },
       {"w2.dtype must equal hidden.dtype (torch.bfloat16)", "got torch.float8_e4m3fn"}},
      {"weights_dtype",
       [](MoeArgsFake& a) { a.weights.dtype = DType::kFloat16; },
       {"topk_weights.dtype must be torch.float32 or hidden.dtype (torch.bfloat16)", "got torch.float16"}},
      {"ids_int8",
       [](MoeArgsFake& a) { a.ids.dtype = DType::kInt8; },
       {"topk_ids.dtype must be torch.int32", "got torch.int8"}},
      {"out_dtype",
       [](MoeArgsFake& a) { a.out.dtype = DType::kFloat16; },
       {"out.dtype must be hidden.dtype (torch.bfloat16) or torch.float32", "got torch.float16"}},
      {"map_dtype",
       [](MoeArgsFake& a) { a.map.dtype = DType::kFloat32; },
       {"expert_map.dtype must be torch.int32", "got torch.float32"}},
      {"experts_mismatch",
       [](MoeArgsFake& a) {
         a.w2 = view(a.w2.data, a.w2.dtype, {5, 64, 48});
       },
       {"w2.size(0) must equal w1.size(0) (E, the experts)", "got 5 vs 4"}},
      {"w1_odd_rows",
       [](MoeArgsFake& a) {
         a.w1 = view(a.w1.data, a.w1.dtype, {4, 95, 64});
       },
       {"w1.size(1) must be even (2 * I", "got 95"}},
      {"w1_hidden",
       [](MoeArgsFake& a) {
         a.w1 = view(a.w1.data, a.w1.dtype, {4, 96, 63});
       },
       {"w1.size(2) must equal hidden.size(1) (H)", "got 63 vs 64"}},
      {"w2_shape",
       [](MoeArgsFake& a) {
         a.w2 = view(a.w2.data, a.w2.dtype, {4, 64, 47});
       },
       {"w2 must have shape [E, H, I] = [4, 64, 48]", "got [4, 64, 47]"}},
      {"ids_rows",
       [](MoeArgsFake& a) {
         a.ids = view(a.ids.data, DType::kInt32, {5, 2});
       },
       {"topk_ids.size(0) must equal hidden.size(0) (T)", "got 5 vs 6"}},
      {"weights_shape",
       [](MoeArgsFake& a) {
         a.weights = view(a.weights.data, DType::kFloat32, {6, 3});
       },
       {"topk_weights must have topk_ids's shape [T, k] = [6, 2]", "got [6, 3]"}},
      {"out_shape",
       [](MoeArgsFake& a) {
         a.out = view(a.out.data, a.out.dtype, {6, 48});
       },
       {"out must have shape [T, H] = [6, 64]", "got [6, 48]"}},
      {"hidden_strided",
       [](MoeArgsFake& a) {
         a.hidden = view(a.hidden.data, a.hidden.dtype, {6, 64}, {128, 2});
       },
       {"hidden.stride(1) must be 1", "(128, 2)"}},
      {"w1_experts_overlap",
       [](MoeArgsFake& a) {
         a.w1 = view(a.w1.data, a.w1.dtype, {4, 96, 64}, {64, 64, 1});
       },
       {"w1.stride(0) must be >= w1.size(1) * w1.stride(1) (6144)", "strides (64, 64, 1)"}},
      {"w2_rows_overlap",
       [](MoeArgsFake& a) {
         a.w2 = view(a.w2.data, a.w2.dtype, {4, 64, 48}, {3072, 40, 1});
       },
       {"w2.stride(1) must be >= w2.size(2) (48)", "(3072, 40, 1)"}},
      {"ids_not_contiguous",
       [](MoeArgsFake& a) {
         a.ids = view(a.ids.data, DType::kInt32, {6, 2}, {1, 6});
       },
       {"topk_ids must be contiguous", "strides (1, 6)"}},
      {"map_not_contiguous",
       [](MoeArgsFake& a) { a.map = view(a.map.data, DType::kInt32, {16}, {2}); },
       {"expert_map must be contiguous", "strides (2)"}},
      {"out_overlaps_hidden", [](MoeArgsFake& a) { a.out.data = addr(0x10080); }, {"out must not overlap hidden"}},
      {"out_overlaps_weights",
       [](MoeArgsFake& a) { a.out.data = addr(0xc0000); },
       {"out must not overlap topk_weights"}},
      {"out_misaligned", [](MoeArgsFake& a) { a.out.data = addr(0x800001); }, {"out", "aligned"}},
      {"activation_value",
       [](MoeArgsFake& a) { a.act = static_cast<MoeActivation>(7); },
       {"activation must be silu or gelu", "got enum value 7"}},
  };
  return cases;
}

class MoeBadInput : public ::testing::TestWithParam<test::BadInputCase<MoeArgsFake>> {};

TEST_P(MoeBadInput, ThrowsNamingArgumentAndValue) { test::expect_bad_input_error(GetParam(), "fused_moe"); }
INSTANTIATE_TEST_SUITE_P(Validate, MoeBadInput, ::testing::ValuesIn(moe_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateFusedMoe, DerivedGroupedGemmProblems) {
  MoeArgsFake a;
  a.hidden = view(a.hidden.data, a.hidden.dtype, {6, 64}, {80, 1});  // padded rows
  a.out = view(a.out.data, DType::kFloat32, {6, 64}, {72, 1});
  const MoeProblem p = a.validate().problem;
  EXPECT_EQ(p.tokens, 6);
  EXPECT_EQ(p.topk, 2);
  EXPECT_EQ(p.experts, 4);
  EXPECT_EQ(p.global_experts, 16);
  EXPECT_EQ(p.hidden, 64);
  EXPECT_EQ(p.inter, 48);
  EXPECT_TRUE(p.has_expert_map);
  // gate/up: hidden [T, H] (row stride 80) x w1[e]^T -> [T, k, 2I] contiguous, one row per slot.
  const GatherProblem& g = p.gate_up;
  EXPECT_EQ(g.tokens, 6);
  EXPECT_EQ(g.topk, 2);
  EXPECT_EQ(g.n, 96);
  EXPECT_EQ(g.k, 64);
  EXPECT_EQ(g.experts, 4);
  EXPECT_TRUE(g.transpose_weights);
  EXPECT_FALSE(g.x_per_slot);
  EXPECT_FALSE(g.weighted);
  EXPECT_EQ(g.x_token_stride, 80);
  EXPECT_EQ(g.w_row_stride, 64);
  EXPECT_EQ(g.w_expert_stride, 96 * 64);
  EXPECT_EQ(g.out_slot_stride, 96);
  EXPECT_EQ(g.out_token_stride, 2 * 96);
  EXPECT_EQ(g.out_type, DType::kBFloat16);
  // down: act [T, k, I] contiguous x w2[e]^T, weighted -> out [T, H] (row stride 72, fp32).
  const GatherProblem& d = p.down;
  EXPECT_EQ(d.n, 64);
  EXPECT_EQ(d.k, 48);
  EXPECT_TRUE(d.x_per_slot);
  EXPECT_TRUE(d.weighted);
  EXPECT_TRUE(d.transpose_weights);
  EXPECT_EQ(d.x_slot_stride, 48);
  EXPECT_EQ(d.x_token_stride, 2 * 48);
  EXPECT_EQ(d.w_row_stride, 48);
  EXPECT_EQ(d.w_expert_stride, 64 * 48);
  EXPECT_EQ(d.out_token_stride, 72);
  EXPECT_EQ(d.out_type, DType::kFloat32);
  EXPECT_EQ(d.topk_weights_type, DType::kFloat32);
}

TEST(ValidateFusedMoe, EmptyShapesAndNoMapAccepted) {
  MoeArgsFake a;
  a.with_map = false;
  a.weights.dtype = DType::kBFloat16;  // routing weights of hidden's dtype
  EXPECT_EQ(a.validate().problem.global_experts, 4);
  EXPECT_FALSE(a.validate().problem.has_expert_map);
  a.hidden = view(nullptr, DType::kBFloat16, {0, 64});  // T = 0
  a.ids = view(nullptr, DType::kInt32, {0, 2});
  a.weights = view(nullptr, DType::kBFloat16, {0, 2});
  a.out = view(nullptr, DType::kBFloat16, {0, 64});
  EXPECT_EQ(a.validate().problem.tokens, 0);
  a.w1 = view(nullptr, DType::kBFloat16, {0, 96, 64});  // E = 0
  a.w2 = view(nullptr, DType::kBFloat16, {0, 64, 48});
  EXPECT_EQ(a.validate().problem.experts, 0);
}

}  // namespace
}  // namespace tgemm
