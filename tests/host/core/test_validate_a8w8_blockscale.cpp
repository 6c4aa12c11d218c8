// validate_a8w8_blockscale never dereferences the tensors, so fake, never-mapped addresses stand in
// for device pointers: x at 0x10000, w at 0x20000, out at 0x30000, bias at 0x40000, x_scale at
// 0x50000, w_scale at 0x60000.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/problem.h"
#include "core/validate.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"
#include "tgemm/quant.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

// out[6,200] = x[6,272] @ w[200,272]^T with 1x128 / 128x128 block scales, fp8 -> bf16: K = 272 has
// three 128-blocks (the last partial), N = 200 two.
struct Args {
  TensorView x = view(addr(0x10000), DType::kFloat8E4M3, {6, 272});
  TensorView w = view(addr(0x20000), DType::kFloat8E4M3, {200, 272});
  TensorView out = view(addr(0x30000), DType::kBFloat16, {6, 200});
  TensorView bias = view(addr(0x40000), DType::kBFloat16, {200});
  TensorView x_scale = view(addr(0x50000), DType::kFloat32, {6, 3});
  TensorView w_scale = view(addr(0x60000), DType::kFloat32, {2, 3});
  bool with_bias = false;

  GemmCall validate() const {
    return validate_a8w8_blockscale(x, w, x_scale, w_scale, out, with_bias ? &bias : nullptr);
  }
};

using BadCase = test::BadInputCase<Args>;

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"x_rank_0", [](Args& a) { a.x.rank = 0; }, {"x.rank must be in [1, 6]", "got 0"}},
      {"null_x", [](Args& a) { a.x.data = nullptr; }, {"x.data", "null", "[6, 272]"}},
      {"null_x_scale", [](Args& a) { a.x_scale.data = nullptr; }, {"x_scale.data", "null", "[6, 3]"}},
      {"null_w_scale", [](Args& a) { a.w_scale.data = nullptr; }, {"w_scale.data", "null", "[2, 3]"}},
      {"e5m2",
       [](Args& a) { a.x.dtype = a.w.dtype = DType::kFloat8E5M2; },
       {"torch.float8_e5m2 is not supported", "torch.float8_e4m3fn"}},
      {"int8",
       [](Args& a) { a.x.dtype = a.w.dtype = DType::kInt8; },
       {"x.dtype must be torch.float8_e4m3fn (block scales are an FP8 recipe)", "torch.int8"}},
      {"x_bf16",
       [](Args& a) { a.x.dtype = a.w.dtype = DType::kBFloat16; },
       {"x.dtype must be torch.float8_e4m3fn", "torch.bfloat16"}},
      {"mixed_fp8_int8",
       [](Args& a) { a.w.dtype = DType::kInt8; },
       {"w.dtype must equal x.dtype (torch.float8_e4m3fn)", "torch.int8"}},
      {"out_fp8", [](Args& a) { a.out.dtype = DType::kFloat8E4M3; }, {"out.dtype", "torch.float8_e4m3fn"}},
      {"bias_fp16_with_bf16_out",
       [](Args& a) {
         a.with_bias = true;
         a.bias.dtype = DType::kFloat16;
       },
       {"bias.dtype must equal out.dtype (torch.bfloat16) or be torch.float32", "torch.float16"}},
      {"x_scale_bf16",
       [](Args& a) { a.x_scale.dtype = DType::kBFloat16; },
       {"x_scale.dtype must be torch.float32", "torch.bfloat16"}},
      {"w_scale_fp16",
       [](Args& a) { a.w_scale.dtype = DType::kFloat16; },
       {"w_scale.dtype must be torch.float32", "torch.float16"}},
      {"k_mismatch",
       [](Args& a) {
         a.w = view(addr(0x20000), DType::kFloat8E4M3, {200, 256});
       },
       {"w.size(1) must equal x.size(-1) (K)", "256 vs 272"}},
      {"n_mismatch",
       [](Args& a) {
         a.out = view(addr(0x30000), DType::kBFloat16, {6, 199});
       },
       {"out.size(-1) must equal w.size(0) (N)", "199 vs 200"}},
      {"m_mismatch",
       [](Args& a) {
         a.out = view(addr(0x30000), DType::kBFloat16, {5, 200});
       },
       {"out.size(0) must equal x.size(0)", "5 vs 6"}},
      {"k_not_multiple_of_16",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kFloat8E4M3, {6, 264});
         a.w = view(addr(0x20000), DType::kFloat8E4M3, {200, 264});
       },
       {"K (x.size(-1)) must be a multiple of 16", "got 264"}},
      {"x_scale_per_token",
       [](Args& a) {
         a.x_scale = view(addr(0x50000), DType::kFloat32, {6, 1});
       },
       {"x_scale must be [M, ceil(K / 128)] = [6, 3]", "got [6, 1]"}},
      {"x_scale_per_tensor",
       [](Args& a) { a.x_scale = view(addr(0x50000), DType::kFloat32, {1}); },
       {"x_scale must be [M, ceil(K / 128)] = [6, 3]", "got [1]"}},
      {"x_scale_floor_blocks",
       [](Args& a) {
         a.x_scale = view(addr(0x50000), DType::kFloat32, {6, 2});
       },
       {"x_scale must be [M, ceil(K / 128)] = [6, 3]", "got [6, 2]"}},
      {"w_scale_per_channel",
       [](Args& a) {
         a.w_scale = view(addr(0x60000), DType::kFloat32, {200, 3});
       },
       {"w_scale must be [ceil(N / 128), ceil(K / 128)] = [2, 3]", "got [200, 3]"}},
      {"x_scale_mn_major_overlapping",
       [](Args& a) {
         a.x_scale = view(addr(0x50000), DType::kFloat32, {6, 3}, {1, 5});
       },
       {"x_scale must be row-major (strides (ld, 1), ld >= 3) or MN-major (strides (1, ld), ld >= 6)", "(1, 5)"}},
      {"x_scale_rows_overlap",
       [](Args& a) {
         a.x_scale = view(addr(0x50000), DType::kFloat32, {6, 3}, {2, 1});
       },
       {"x_scale must be row-major", "(2, 1)"}},
      {"w_scale_mn_major",
       [](Args& a) {
         a.w_scale = view(addr(0x60000), DType::kFloat32, {2, 3}, {1, 4});
       },
       {"w_scale must be row-major (strides (ld, 1), ld >= 3)", "(1, 4)"}},
      {"w_scale_misaligned",
       [](Args& a) { a.w_scale.data = addr(0x60002); },
       {"w_scale.data must be aligned to its element size (4 bytes)", "0x60002"}},
      {"out_overlaps_w_scale",
       [](Args& a) { a.w_scale.data = addr(0x30010); },
       {"out must not overlap w_scale", "0x30010"}},
      {"out_overlaps_w", [](Args& a) { a.out.data = addr(0x20010); }, {"out must not overlap w", "0x20010"}},
  };
  return cases;
}

class ValidateBlockscaleBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(ValidateBlockscaleBadInput, ThrowsErrorNamingOpArgumentAndValue) {
  test::expect_bad_input_error(GetParam(), "gemm_a8w8_blockscale");
}

INSTANTIATE_TEST_SUITE_P(A8W8Blockscale, ValidateBlockscaleBadInput, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(ValidateA8W8Blockscale, RowMajorScalesDescribeTheProblem) {
  Args a;
  a.with_bias = true;
  a.bias.dtype = DType::kFloat32;
  a.x_scale = view(addr(0x50000), DType::kFloat32, {6, 3}, {5, 1});
  a.w_scale = view(addr(0x60000), DType::kFloat32, {2, 3}, {4, 1});
  const GemmCall call = a.validate();
  const GemmProblem& p = call.problem;
  EXPECT_EQ(p.family, OpFamily::kA8W8Blockscale);
  EXPECT_EQ(p.m, 6);
  EXPECT_EQ(p.n, 200);
  EXPECT_EQ(p.k, 272);
  EXPECT_EQ(p.bias_type, DType::kFloat32);
  EXPECT_EQ(p.a_scale, ScaleGranularity::kBlock);
  EXPECT_EQ(p.b_scale, ScaleGranularity::kBlock);
  EXPECT_FALSE(p.a_scale_mn_major);
  EXPECT_EQ(p.ld_a_scale, 5);
  EXPECT_EQ(p.ld_b_scale, 4);
  EXPECT_EQ(call.args.a_scale, addr(0x50000));
  EXPECT_EQ(call.args.b_scale, addr(0x60000));
  EXPECT_NE(p.describe().find("scales=block"), std::string::npos) << p.describe();
}

TEST(ValidateA8W8Blockscale, MnMajorScalesFromTheirStrides) {
  Args a;
  const std::int64_t ld = mn_major_tma_aligned_ld(6);
  ASSERT_EQ(ld, 8);
  a.x_scale = view(addr(0x50000), DType::kFloat32, {6, 3}, {1, ld});
  const GemmProblem p = a.validate().problem;
  EXPECT_TRUE(p.a_scale_mn_major);
  EXPECT_EQ(p.ld_a_scale, ld);
  // A column stride that is not TMA-aligned (a clone of a padded view has ld = M) is MN-major too.
  a.x_scale = view(addr(0x50000), DType::kFloat32, {6, 3}, {1, 6});
  const GemmProblem unaligned = a.validate().problem;
  EXPECT_TRUE(unaligned.a_scale_mn_major);
  EXPECT_EQ(unaligned.ld_a_scale, 6);
  // One row: the stride along M is free, the one along the blocks decides (quant's MN-major scale
  // of one row has strides (1, 4); a contiguous one (3, 1)).
  for (auto [s0, s1, mn] : {std::tuple<std::int64_t, std::int64_t, bool>{1, 4, true}, {3, 1, false}}) {
    Args one;
    one.x = view(addr(0x10000), DType::kFloat8E4M3, {1, 272});
    one.out = view(addr(0x30000), DType::kBFloat16, {1, 200});
    one.x_scale = view(addr(0x50000), DType::kFloat32, {1, 3}, {s0, s1});
    const GemmProblem q = one.validate().problem;
    EXPECT_EQ(q.a_scale_mn_major, mn) << s0 << "," << s1;
    EXPECT_EQ(q.ld_a_scale, mn ? 4 : 3) << s0 << "," << s1;
  }
}

TEST(ValidateA8W8Blockscale, LeadingDimsOfXFlattenIntoM) {
  Args a;
  a.x = view(addr(0x10000), DType::kFloat8E4M3, {2, 3, 272});
  a.out = view(addr(0x30000), DType::kFloat32, {2, 3, 200});
  EXPECT_EQ(a.validate().problem.m, 6);
}

TEST(ValidateA8W8Blockscale, EmptyProblemsAreAccepted) {
  Args m0;
  m0.x = view(addr(0x10000), DType::kFloat8E4M3, {0, 272});
  m0.out = view(addr(0x30000), DType::kBFloat16, {0, 200});
  m0.x_scale = view(addr(0x50000), DType::kFloat32, {0, 3});
  EXPECT_EQ(m0.validate().problem.m, 0);
  // K = 0: no blocks, so the scales have no elements and may have no data.
  Args k0;
  k0.x = view(addr(0x10000), DType::kFloat8E4M3, {6, 0});
  k0.w = view(addr(0x20000), DType::kFloat8E4M3, {200, 0});
  k0.x_scale = view(nullptr, DType::kFloat32, {6, 0});
  k0.w_scale = view(nullptr, DType::kFloat32, {2, 0});
  EXPECT_EQ(k0.validate().problem.k, 0);
}

TEST(ValidateA8W8Blockscale, ScaleRecipeBlockRoundTrips) {
  EXPECT_EQ(format_scale_recipe(ScaleGranularity::kBlock, ScaleGranularity::kBlock), "block");
  const auto r = parse_scale_recipe("block");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, ScaleGranularity::kBlock);
  EXPECT_EQ(r->second, ScaleGranularity::kBlock);
  EXPECT_EQ(format_scale_recipe(ScaleGranularity::kBlock, ScaleGranularity::kRow), "?");
}

}  // namespace
}  // namespace tgemm
