// validate_gmm never dereferences the tensors, so fake, never-mapped addresses stand in for device
// pointers: lhs at 0x10000, rhs at 0x20000, group_sizes at 0x30000, out at 0x40000, bias at 0x50000.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/validate.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

// out[24,16] = gmm(lhs[24,32], rhs[4,32,16], group_sizes[4]) (+ bias[4,16]), bf16.
struct Args {
  TensorView lhs = view(addr(0x10000), DType::kBFloat16, {24, 32});
  TensorView rhs = view(addr(0x20000), DType::kBFloat16, {4, 32, 16});
  TensorView sizes = view(addr(0x30000), DType::kInt32, {4});
  TensorView out = view(addr(0x40000), DType::kBFloat16, {24, 16});
  TensorView bias = view(addr(0x50000), DType::kBFloat16, {4, 16});
  bool transpose_rhs = false;
  bool with_bias = true;

  GmmCall validate() const { return validate_gmm(lhs, rhs, sizes, out, transpose_rhs, with_bias ? &bias : nullptr); }
};

using BadCase = test::BadInputCase<Args>;

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"lhs_rank",
       [](Args& a) {
         a.lhs = view(a.lhs.data, a.lhs.dtype, {24, 32, 1});
       },
       {"lhs must have rank 2", "got 3"}},
      {"rhs_rank",
       [](Args& a) {
         a.rhs = view(a.rhs.data, a.rhs.dtype, {32, 16});
       },
       {"rhs must have rank 3", "got 2"}},
      {"sizes_rank",
       [](Args& a) {
         a.sizes = view(a.sizes.data, DType::kInt32, {4, 1});
       },
       {"group_sizes must have rank 1", "got 2"}},
      {"bias_rank",
       [](Args& a) { a.bias = view(a.bias.data, a.bias.dtype, {16}); },
       {"bias must have rank 2", "got 1"}},
      {"lhs_null", [](Args& a) { a.lhs.data = nullptr; }, {"lhs.data must not be null", "768 elements"}},
      {"sizes_null", [](Args& a) { a.sizes.data = nullptr; }, {"group_sizes.data must not be null"}},
      {"lhs_fp32",
       [](Args& a) { a.lhs.dtype = DType::kFloat32; },
       {"lhs.dtype must be torch.bfloat16 or torch.float16", "got torch.float32"}},
      {"rhs_dtype",
       [](Args& a) { a.rhs.dtype = DType::kFloat16; },
       {"rhs.dtype must equal lhs.dtype (torch.bfloat16)", "got torch.float16"}},
      {"sizes_int64_stand_in",
       [](Args& a) { a.sizes.dtype = DType::kFloat32; },
       {"group_sizes.dtype must be torch.int32", "got torch.float32"}},
      {"out_dtype",
       [](Args& a) { a.out.dtype = DType::kFloat16; },
       {"out.dtype must be lhs.dtype (torch.bfloat16) or torch.float32", "got torch.float16"}},
      {"bias_dtype",
       [](Args& a) { a.bias.dtype = DType::kInt8; },
       {"bias.dtype must be lhs.dtype (torch.bfloat16) or torch.float32", "got torch.int8"}},
      {"k_mismatch",
       [](Args& a) {
         a.lhs = view(a.lhs.data, a.lhs.dtype, {24, 31});
       },
       {"rhs.size(1) must equal lhs.size(1) (K)", "transpose_rhs=false", "got 32 vs 31"}},
      {"k_mismatch_transposed",
       [](Args& a) { a.transpose_rhs = true; },
       {"rhs.size(2) must equal lhs.size(1) (K)", "transpose_rhs=true", "got 16 vs 32"}},
      {"g_mismatch",
       [](Args& a) { a.sizes = view(a.sizes.data, DType::kInt32, {5}); },
       {"group_sizes.size(0) must equal rhs.size(0) (G)", "got 5 vs 4"}},
      {"bias_g",
       [](Args& a) {
         a.bias = view(a.bias.data, a.bias.dtype, {3, 16});
       },
       {"bias must have shape [G, N] = [4, 16]", "got [3, 16]"}},
      {"bias_n",
       [](Args& a) {
         a.bias = view(a.bias.data, a.bias.dtype, {4, 15});
       },
       {"bias must have shape [G, N] = [4, 16]", "got [4, 15]"}},
      {"out_shape",
       [](Args& a) {
         a.out = view(a.out.data, a.out.dtype, {23, 16});
       },
       {"out must have shape [M, N] = [24, 16]", "got [23, 16]"}},
      {"lhs_column_stride",
       [](Args& a) {
         a.lhs.strides[1] = 2;
         a.lhs.strides[0] = 64;
       },
       {"lhs.stride(1) must be 1", "(64, 2)"}},
      {"out_row_stride",
       [](Args& a) { a.out.strides[0] = 8; },
       {"out.stride(0) must be >= out.size(1) (16)", "(8, 1)"}},
      {"rhs_inner_stride",
       [](Args& a) {
         a.rhs.strides[2] = 32;
         a.rhs.strides[1] = 1;
       },
       {"rhs.stride(2) must be 1", "(512, 1, 32)"}},
      {"rhs_group_overlap",
       [](Args& a) { a.rhs.strides[0] = 16; },
       {"rhs.stride(0) must be >= rhs.size(1) * rhs.stride(1) (512)", "(16, 16, 1)"}},
      {"sizes_strided", [](Args& a) { a.sizes.strides[0] = 2; }, {"group_sizes must be contiguous", "got stride 2"}},
      {"bias_row_stride",
       [](Args& a) { a.bias.strides[0] = 4; },
       {"bias.stride(0) must be >= bias.size(1) (16)", "(4, 1)"}},
      {"lhs_misaligned",
       [](Args& a) { a.lhs.data = addr(0x10001); },
       {"lhs.data must be aligned to its element size (2 bytes)"}},
      {"sizes_misaligned",
       [](Args& a) { a.sizes.data = addr(0x30002); },
       {"group_sizes.data must be aligned to its element size (4 bytes)"}},
      {"out_overlaps_lhs", [](Args& a) { a.out.data = addr(0x10000 + 64); }, {"out must not overlap lhs"}},
      {"out_overlaps_sizes", [](Args& a) { a.out.data = addr(0x30000 - 64); }, {"out must not overlap group_sizes"}},
      {"negative_size", [](Args& a) { a.lhs.sizes[0] = -1; }, {"lhs.size(0) must be >= 0", "got -1"}},
  };
  return cases;
}

class GmmBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(GmmBadInput, ThrowsNamingArgumentAndValue) { test::expect_bad_input_error(GetParam(), "gmm"); }

INSTANTIATE_TEST_SUITE_P(Validate, GmmBadInput, ::testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateGmm, ProblemOfRowMajorKN) {
  const GmmCall call = Args{}.validate();
  const GmmProblem& p = call.problem;
  EXPECT_EQ(p.m, 24);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 32);
  EXPECT_EQ(p.groups, 4);
  EXPECT_FALSE(p.transpose_rhs);
  EXPECT_TRUE(p.has_bias);
  EXPECT_EQ(p.lda, 32);
  EXPECT_EQ(p.ldo, 16);
  EXPECT_EQ(p.rhs_group_stride, 512);
  EXPECT_EQ(p.rhs_row_stride, 16);
  EXPECT_EQ(p.bias_stride, 16);
  EXPECT_EQ(call.args.group_sizes, addr(0x30000));
}

TEST(ValidateGmm, TransposedRhsTakesNFromSize1) {
  Args a;
  a.transpose_rhs = true;
  a.rhs = view(a.rhs.data, a.rhs.dtype, {4, 16, 32});  // [G, N, K]
  const GmmProblem p = a.validate().problem;
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 32);
  EXPECT_EQ(p.rhs_row_stride, 32);
  EXPECT_TRUE(p.transpose_rhs);
}

TEST(ValidateGmm, Fp32OutAndBiasAndEmptyShapesAccepted) {
  Args a;
  a.out.dtype = DType::kFloat32;
  a.bias.dtype = DType::kFloat32;
  EXPECT_EQ(a.validate().problem.out_type, DType::kFloat32);
  Args empty;
  empty.with_bias = false;
  empty.lhs = view(nullptr, DType::kBFloat16, {0, 32});
  empty.out = view(nullptr, DType::kBFloat16, {0, 16});
  EXPECT_EQ(empty.validate().problem.m, 0);
  Args no_groups;
  no_groups.with_bias = false;
  no_groups.rhs = view(nullptr, DType::kBFloat16, {0, 32, 16});
  no_groups.sizes = view(nullptr, DType::kInt32, {0});
  EXPECT_EQ(no_groups.validate().problem.groups, 0);
}

}  // namespace
}  // namespace tgemm
