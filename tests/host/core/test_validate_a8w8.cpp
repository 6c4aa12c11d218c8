// validate_a8w8 never dereferences the tensors, so fake, never-mapped addresses stand in for
// device pointers: x at 0x10000, w at 0x20000, out at 0x30000, bias at 0x40000, x_scale at
// 0x50000, w_scale at 0x60000.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/validate.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

// out[4,16] = x[4,32] @ w[16,32]^T * x_scale[4,1] * w_scale[16,1] (+ bias[16]), fp8 -> bf16.
struct Args {
  TensorView x = view(addr(0x10000), DType::kFloat8E4M3, {4, 32});
  TensorView w = view(addr(0x20000), DType::kFloat8E4M3, {16, 32});
  TensorView out = view(addr(0x30000), DType::kBFloat16, {4, 16});
  TensorView bias = view(addr(0x40000), DType::kBFloat16, {16});
  TensorView x_scale = view(addr(0x50000), DType::kFloat32, {4, 1});
  TensorView w_scale = view(addr(0x60000), DType::kFloat32, {16, 1});
  bool with_bias = false;

  GemmCall validate() const { return validate_a8w8(x, w, x_scale, w_scale, out, with_bias ? &bias : nullptr); }
};

using BadCase = test::BadInputCase<Args>;

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"x_rank_0", [](Args& a) { a.x.rank = 0; }, {"x.rank must be in [1, 6]", "got 0"}},
      {"x_scale_rank_7", [](Args& a) { a.x_scale.rank = 7; }, {"x_scale.rank must be in [0, 6]", "got 7"}},
      {"null_x", [](Args& a) { a.x.data = nullptr; }, {"x.data", "null", "[4, 32]"}},
      {"null_w", [](Args& a) { a.w.data = nullptr; }, {"w.data", "null", "[16, 32]"}},
      {"null_x_scale", [](Args& a) { a.x_scale.data = nullptr; }, {"x_scale.data", "null", "[4, 1]"}},
      {"null_w_scale", [](Args& a) { a.w_scale.data = nullptr; }, {"w_scale.data", "null", "[16, 1]"}},
      {"null_out", [](Args& a) { a.out.data = nullptr; }, {"out.data", "null", "[4, 16]"}},
      {"null_bias",
       [](Args& a) {
         a.with_bias = true;
         a.bias.data = nullptr;
       },
       {"bias.data", "null"}},
      {"e5m2",
       [](Args& a) { a.x.dtype = a.w.dtype = DType::kFloat8E5M2; },
       {"torch.float8_e5m2 is not supported", "torch.float8_e4m3fn"}},
      {"x_bf16",
       [](Args& a) { a.x.dtype = a.w.dtype = DType::kBFloat16; },
       {"x.dtype must be torch.float8_e4m3fn or torch.int8", "torch.bfloat16"}},
      {"mixed_fp8_int8",
       [](Args& a) { a.w.dtype = DType::kInt8; },
       {"w.dtype must equal x.dtype (torch.float8_e4m3fn)", "do not mix", "torch.int8"}},
      {"mixed_int8_fp8",
       [](Args& a) { a.x.dtype = DType::kInt8; },
       {"w.dtype must equal x.dtype (torch.int8)", "torch.float8_e4m3fn"}},
      {"out_int32", [](Args& a) { a.out.dtype = DType::kInt32; }, {"out.dtype", "torch.int32"}},
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
         a.w = view(addr(0x20000), DType::kFloat8E4M3, {16, 48});
       },
       {"w.size(1) must equal x.size(-1) (K)", "48 vs 32"}},
      {"bias_shape",
       [](Args& a) {
         a.with_bias = true;
         a.bias = view(addr(0x40000), DType::kBFloat16, {15});
       },
       {"bias.size(0) must equal N (16)", "got 15"}},
      {"w_inner_stride",
       [](Args& a) {
         a.w = view(addr(0x20000), DType::kFloat8E4M3, {16, 32}, {64, 2});
       },
       {"w.stride(1) must be 1", "got 2"}},
      {"k_not_multiple_of_16",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kFloat8E4M3, {4, 40});
         a.w = view(addr(0x20000), DType::kFloat8E4M3, {16, 40});
       },
       {"K (x.size(-1)) must be a multiple of 16", "torch.float8_e4m3fn", "got 40"}},
      {"k_not_multiple_of_16_int8",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kInt8, {4, 24});
         a.w = view(addr(0x20000), DType::kInt8, {16, 24});
       },
       {"K (x.size(-1)) must be a multiple of 16", "torch.int8", "got 24"}},
      {"x_row_stride",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kFloat8E4M3, {4, 32}, {40, 1});
       },
       {"x row stride must be a multiple of 16", "got 40"}},
      {"w_row_stride",
       [](Args& a) {
         a.w = view(addr(0x20000), DType::kFloat8E4M3, {16, 32}, {36, 1});
       },
       {"w.stride(0) must be a multiple of 16", "got 36"}},
      {"x_scale_shape",
       [](Args& a) {
         a.x_scale = view(addr(0x50000), DType::kFloat32, {3, 1});
       },
       {"x_scale must have 1 element (per-tensor) or M = 4 elements", "per-token", "[3, 1]"}},
      {"x_scale_is_per_channel",
       [](Args& a) {
         a.x_scale = view(addr(0x50000), DType::kFloat32, {16, 1});
       },
       {"x_scale must have 1 element (per-tensor) or M = 4", "[16, 1]"}},
      {"w_scale_shape",
       [](Args& a) { a.w_scale = view(addr(0x60000), DType::kFloat32, {4}); },
       {"w_scale must have 1 element (per-tensor) or N = 16 elements", "per-channel", "[4]"}},
      {"w_scale_strided",
       [](Args& a) {
         a.w_scale = view(addr(0x60000), DType::kFloat32, {16, 1}, {2, 1});
       },
       {"w_scale must be contiguous", "[16, 1]", "(2, 1)"}},
      {"w_scale_misaligned",
       [](Args& a) { a.w_scale.data = addr(0x60002); },
       {"w_scale.data must be aligned to its element size (4 bytes)", "0x60002"}},
      {"out_overlaps_x_scale",
       [](Args& a) { a.x_scale.data = addr(0x30010); },
       {"out must not overlap x_scale", "0x30010"}},
      {"out_overlaps_x", [](Args& a) { a.out.data = addr(0x10010); }, {"out must not overlap x", "0x10010"}},
  };
  return cases;
}

class ValidateA8W8BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(ValidateA8W8BadInput, ThrowsErrorNamingOpArgumentAndValue) {
  test::expect_bad_input_error(GetParam(), "gemm_a8w8");
}

INSTANTIATE_TEST_SUITE_P(A8W8, ValidateA8W8BadInput, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(ValidateA8W8, GoodCallDescribesTheProblem) {
  Args a;
  a.with_bias = true;
  a.bias.dtype = DType::kFloat32;
  const GemmCall call = a.validate();
  const GemmProblem& p = call.problem;
  EXPECT_EQ(p.family, OpFamily::kA8W8);
  EXPECT_EQ(p.m, 4);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 32);
  EXPECT_EQ(p.a_type, DType::kFloat8E4M3);
  EXPECT_EQ(p.out_type, DType::kBFloat16);
  EXPECT_EQ(p.bias_type, DType::kFloat32);
  EXPECT_TRUE(p.has_bias());
  EXPECT_EQ(p.a_scale, ScaleGranularity::kRow);
  EXPECT_EQ(p.b_scale, ScaleGranularity::kRow);
  EXPECT_EQ(call.args.a_scale, addr(0x50000));
  EXPECT_EQ(call.args.b_scale, addr(0x60000));
  EXPECT_NE(p.describe().find("scales=token_channel"), std::string::npos) << p.describe();
}

TEST(ValidateA8W8, ScaleShapesGiveEachRecipe) {
  struct Case {
    std::vector<std::int64_t> xs, ws;
    ScaleGranularity x, w;
    const char* recipe;
  };
  const std::vector<Case> cases = {
      {{}, {1}, ScaleGranularity::kTensor, ScaleGranularity::kTensor, "tensor"},
      {{1, 1}, {1, 1}, ScaleGranularity::kTensor, ScaleGranularity::kTensor, "tensor"},
      {{4, 1}, {1}, ScaleGranularity::kRow, ScaleGranularity::kTensor, "token"},
      {{4}, {1, 16}, ScaleGranularity::kRow, ScaleGranularity::kRow, "token_channel"},
      {{1}, {16, 1}, ScaleGranularity::kTensor, ScaleGranularity::kRow, "channel"},
  };
  for (const Case& c : cases) {
    Args a;
    a.x_scale = view(addr(0x50000), DType::kFloat32, c.xs);
    a.w_scale = view(addr(0x60000), DType::kFloat32, c.ws);
    const GemmProblem p = a.validate().problem;
    EXPECT_EQ(p.a_scale, c.x) << c.recipe;
    EXPECT_EQ(p.b_scale, c.w) << c.recipe;
    EXPECT_EQ(format_scale_recipe(p.a_scale, p.b_scale), c.recipe);
  }
}

TEST(ValidateA8W8, PerTokenScaleFollowsLeadingDimsOfX) {
  Args a;
  a.x = view(addr(0x10000), DType::kInt8, {2, 3, 32});
  a.w.dtype = DType::kInt8;
  a.out = view(addr(0x30000), DType::kFloat16, {2, 3, 16});
  a.x_scale = view(addr(0x50000), DType::kFloat32, {2, 3, 1});
  const GemmProblem p = a.validate().problem;
  EXPECT_EQ(p.m, 6);
  EXPECT_EQ(p.a_type, DType::kInt8);
  EXPECT_EQ(p.a_scale, ScaleGranularity::kRow);
}

TEST(ValidateA8W8, EmptyProblemsAreAccepted) {
  Args a;
  a.x = view(addr(0x10000), DType::kFloat8E4M3, {0, 32});
  a.out = view(addr(0x30000), DType::kBFloat16, {0, 16});
  a.x_scale = view(addr(0x50000), DType::kFloat32, {1});
  EXPECT_EQ(a.validate().problem.m, 0);
  Args k0;
  k0.x = view(addr(0x10000), DType::kFloat8E4M3, {4, 0});
  k0.w = view(addr(0x20000), DType::kFloat8E4M3, {16, 0});
  EXPECT_EQ(k0.validate().problem.k, 0);
}

TEST(ScaleRecipe, FormatsAndParsesEveryRecipe) {
  using G = ScaleGranularity;
  for (G x : {G::kTensor, G::kRow}) {
    for (G w : {G::kTensor, G::kRow}) {
      auto back = parse_scale_recipe(format_scale_recipe(x, w));
      ASSERT_TRUE(back.has_value()) << format_scale_recipe(x, w);
      EXPECT_EQ(back->first, x);
      EXPECT_EQ(back->second, w);
    }
  }
  EXPECT_EQ(format_scale_recipe(G::kNone, G::kNone), "none");
  EXPECT_EQ(format_scale_recipe(G::kNone, G::kRow), "?");
  EXPECT_FALSE(parse_scale_recipe("?").has_value());
  EXPECT_FALSE(parse_scale_recipe("row").has_value());
  EXPECT_FALSE(parse_scale_recipe("").has_value());
}

}  // namespace
}  // namespace tgemm
