// validate_tgmm, validate_grouped_gemm and validate_masked never dereference the tensors, so fake,
// never-mapped addresses stand in for device pointers (inputs at 0x10000.., outputs at 0x80000..).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/validate_grouped.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

// out[4, 24, 16] = tgmm(lhs[24, 32], rhs[32, 16], group_sizes[4]), bias_grad[4, 24], bf16.
struct TgmmArgsFake {
  TensorView lhs = view(addr(0x10000), DType::kBFloat16, {24, 32});
  TensorView rhs = view(addr(0x20000), DType::kBFloat16, {32, 16});
  TensorView sizes = view(addr(0x30000), DType::kInt32, {4});
  TensorView out = view(addr(0x80000), DType::kBFloat16, {4, 24, 16});
  TensorView bias_grad = view(addr(0x90000), DType::kFloat32, {4, 24});
  bool with_bias_grad = true;

  TgmmCall validate() const {
    return validate_tgmm(lhs, rhs, sizes, out, with_bias_grad ? &bias_grad : nullptr, false, true, "ptgmm");
  }
};

const std::vector<test::BadInputCase<TgmmArgsFake>>& tgmm_cases() {
  static const std::vector<test::BadInputCase<TgmmArgsFake>> cases = {
      {"lhs_rank",
       [](TgmmArgsFake& a) {
         a.lhs = view(a.lhs.data, a.lhs.dtype, {24, 32, 1});
       },
       {"lhs must have rank 2", "got 3"}},
      {"out_rank",
       [](TgmmArgsFake& a) {
         a.out = view(a.out.data, a.out.dtype, {96, 16});
       },
       {"out must have rank 3", "got 2"}},
      {"lhs_null", [](TgmmArgsFake& a) { a.lhs.data = nullptr; }, {"lhs.data must not be null", "768 elements"}},
      {"lhs_fp32",
       [](TgmmArgsFake& a) { a.lhs.dtype = DType::kFloat32; },
       {"lhs.dtype must be torch.bfloat16 or torch.float16", "got torch.float32"}},
      {"rhs_dtype",
       [](TgmmArgsFake& a) { a.rhs.dtype = DType::kFloat16; },
       {"rhs.dtype must equal lhs.dtype (torch.bfloat16)", "got torch.float16"}},
      {"sizes_dtype",
       [](TgmmArgsFake& a) { a.sizes.dtype = DType::kFloat32; },
       {"group_sizes.dtype must be torch.int32", "got torch.float32"}},
      {"out_dtype",
       [](TgmmArgsFake& a) { a.out.dtype = DType::kFloat16; },
       {"out.dtype must be lhs.dtype (torch.bfloat16) or torch.float32", "got torch.float16"}},
      {"bias_grad_dtype",
       [](TgmmArgsFake& a) { a.bias_grad.dtype = DType::kBFloat16; },
       {"bias_grad.dtype must be torch.float32", "got torch.bfloat16"}},
      {"m_mismatch",
       [](TgmmArgsFake& a) {
         a.rhs = view(a.rhs.data, a.rhs.dtype, {31, 16});
       },
       {"rhs.size(0) must equal lhs.size(1) (M)", "got 31 vs 32"}},
      {"out_shape",
       [](TgmmArgsFake& a) {
         a.out = view(a.out.data, a.out.dtype, {3, 24, 16});
       },
       {"out must have shape [G, K, N] = [4, 24, 16]", "got [3, 24, 16]"}},
      {"bias_grad_shape",
       [](TgmmArgsFake& a) {
         a.bias_grad = view(a.bias_grad.data, DType::kFloat32, {4, 23});
       },
       {"bias_grad must have shape [G, K] = [4, 24]", "got [4, 23]"}},
      {"lhs_strided_both_ways",
       [](TgmmArgsFake& a) {
         a.lhs = view(a.lhs.data, a.lhs.dtype, {24, 32}, {64, 2});
       },
       {"lhs [K, M] must be row-major", "column-major", "strides (64, 2)"}},
      {"out_planes_overlap",
       [](TgmmArgsFake& a) { a.out.strides[0] = 16; },
       {"out.stride(0) must be >= out.size(1) * out.stride(1) (384)", "(16, 16, 1)"}},
      {"sizes_strided",
       [](TgmmArgsFake& a) { a.sizes.strides[0] = 2; },
       {"group_sizes must be contiguous", "got stride 2"}},
      {"out_overlaps_rhs", [](TgmmArgsFake& a) { a.out.data = addr(0x20000 + 64); }, {"out must not overlap rhs"}},
      {"bias_grad_overlaps_lhs",
       [](TgmmArgsFake& a) { a.bias_grad.data = addr(0x10000); },
       {"bias_grad must not overlap lhs"}},
      {"bias_grad_misaligned",
       [](TgmmArgsFake& a) { a.bias_grad.data = addr(0x90002); },
       {"bias_grad.data must be aligned to its element size (4 bytes)"}},
  };
  return cases;
}

class TgmmBadInput : public ::testing::TestWithParam<test::BadInputCase<TgmmArgsFake>> {};
TEST_P(TgmmBadInput, ThrowsNamingArgumentAndValue) { test::expect_bad_input_error(GetParam(), "ptgmm"); }
INSTANTIATE_TEST_SUITE_P(Validate, TgmmBadInput, ::testing::ValuesIn(tgmm_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateTgmm, BothLhsLayouts) {
  TgmmArgsFake a;
  TgmmProblem p = a.validate().problem;
  EXPECT_FALSE(p.lhs_col_major);
  EXPECT_EQ(p.lda, 32);
  EXPECT_EQ(p.m, 32);
  EXPECT_EQ(p.k, 24);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.groups, 4);
  EXPECT_EQ(p.out_group_stride, 24 * 16);
  EXPECT_TRUE(p.has_bias_grad);
  a.lhs = view(a.lhs.data, a.lhs.dtype, {24, 32}, {1, 24});  // an [M, K] tensor's transpose
  p = a.validate().problem;
  EXPECT_TRUE(p.lhs_col_major);
  EXPECT_EQ(p.lda, 24);
  a.lhs = view(a.lhs.data, a.lhs.dtype, {24, 32}, {1, 40});  // padded rows of the [M, K] storage
  EXPECT_EQ(a.validate().problem.lda, 40);
}

TEST(ValidateTgmm, EmptyAndFp32OutAccepted) {
  TgmmArgsFake a;
  a.out.dtype = DType::kFloat32;
  a.with_bias_grad = false;
  EXPECT_EQ(a.validate().problem.out_type, DType::kFloat32);
  a.lhs = view(nullptr, DType::kBFloat16, {24, 0});
  a.rhs = view(nullptr, DType::kBFloat16, {0, 16});
  EXPECT_EQ(a.validate().problem.m, 0);
}

// out[6, 2, 16] = grouped_gemm(x[6, 32], weights[8, 32, 16], expert_ids[6, 2]), bf16.
struct GatherArgsFake {
  TensorView x = view(addr(0x10000), DType::kBFloat16, {6, 32});
  TensorView weights = view(addr(0x20000), DType::kBFloat16, {8, 32, 16});
  TensorView ids = view(addr(0x30000), DType::kInt32, {6, 2});
  TensorView topk_weights = view(addr(0x40000), DType::kFloat32, {6, 2});
  TensorView out = view(addr(0x80000), DType::kBFloat16, {6, 2, 16});
  bool transpose = false;
  bool weighted = false;

  GatherCall validate() const {
    return validate_grouped_gemm(x, weights, ids, out, transpose, weighted ? &topk_weights : nullptr, "grouped_gemm");
  }
};

const std::vector<test::BadInputCase<GatherArgsFake>>& gather_cases() {
  static const std::vector<test::BadInputCase<GatherArgsFake>> cases = {
      {"x_rank",
       [](GatherArgsFake& a) { a.x = view(a.x.data, a.x.dtype, {192}); },
       {"x must have rank 2 or 3", "got 1"}},
      {"ids_rank",
       [](GatherArgsFake& a) { a.ids = view(a.ids.data, DType::kInt32, {12}); },
       {"expert_ids must have rank 2", "got 1"}},
      {"out_rank_weighted", [](GatherArgsFake& a) { a.weighted = true; }, {"out must have rank 2", "got 3"}},
      {"weights_dtype",
       [](GatherArgsFake& a) { a.weights.dtype = DType::kFloat16; },
       {"weights.dtype must equal x.dtype (torch.bfloat16)", "got torch.float16"}},
      {"ids_dtype",
       [](GatherArgsFake& a) { a.ids.dtype = DType::kFloat32; },
       {"expert_ids.dtype must be torch.int32", "got torch.float32"}},
      {"topk_weights_dtype",
       [](GatherArgsFake& a) {
         a.weighted = true;
         a.out = view(a.out.data, a.out.dtype, {6, 16});
         a.topk_weights.dtype = DType::kInt8;
       },
       {"topk_weights.dtype must be x.dtype (torch.bfloat16) or torch.float32", "got torch.int8"}},
      {"tokens",
       [](GatherArgsFake& a) {
         a.x = view(a.x.data, a.x.dtype, {5, 32});
       },
       {"x.size(0) must equal expert_ids.size(0) (T)", "got 5 vs 6"}},
      {"slots",
       [](GatherArgsFake& a) {
         a.x = view(a.x.data, a.x.dtype, {6, 3, 32});
       },
       {"x [T, topk, H] must have x.size(1) == expert_ids.size(1) (topk)", "got 3 vs 2"}},
      {"hidden",
       [](GatherArgsFake& a) { a.transpose = true; },
       {"weights.size(2) must equal x.size(-1) (H)", "transpose_weights=true", "got 16 vs 32"}},
      {"out_shape",
       [](GatherArgsFake& a) {
         a.out = view(a.out.data, a.out.dtype, {6, 2, 15});
       },
       {"out must have shape [T, topk, N] = [6, 2, 16]", "got [6, 2, 15]"}},
      {"topk_weights_shape",
       [](GatherArgsFake& a) {
         a.weighted = true;
         a.out = view(a.out.data, a.out.dtype, {6, 16});
         a.topk_weights = view(a.topk_weights.data, DType::kFloat32, {6, 3});
       },
       {"topk_weights must have shape [T, topk] = [6, 2]", "got [6, 3]"}},
      {"ids_not_contiguous",
       [](GatherArgsFake& a) {
         a.ids = view(a.ids.data, DType::kInt32, {6, 2}, {4, 1});
       },
       {"expert_ids must be contiguous", "strides (4, 1)"}},
      {"x_inner_stride",
       [](GatherArgsFake& a) {
         a.x = view(a.x.data, a.x.dtype, {6, 32}, {64, 2});
       },
       {"x.stride(1) must be 1"}},
      {"out_overlaps_weights", [](GatherArgsFake& a) { a.out.data = addr(0x20000); }, {"out must not overlap weights"}},
  };
  return cases;
}

class GatherBadInput : public ::testing::TestWithParam<test::BadInputCase<GatherArgsFake>> {};
TEST_P(GatherBadInput, ThrowsNamingArgumentAndValue) { test::expect_bad_input_error(GetParam(), "grouped_gemm"); }
INSTANTIATE_TEST_SUITE_P(Validate, GatherBadInput, ::testing::ValuesIn(gather_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateGroupedGemm, LayoutsAndStrides) {
  GatherArgsFake a;
  GatherProblem p = a.validate().problem;
  EXPECT_EQ(p.tokens, 6);
  EXPECT_EQ(p.topk, 2);
  EXPECT_EQ(p.k, 32);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.experts, 8);
  EXPECT_FALSE(p.x_per_slot);
  EXPECT_EQ(p.x_slot_stride, 0);
  EXPECT_EQ(p.out_token_stride, 32);
  EXPECT_EQ(p.out_slot_stride, 16);
  a.x = view(a.x.data, a.x.dtype, {6, 2, 32});
  a.weights = view(a.weights.data, a.weights.dtype, {8, 16, 32});  // [E, N, H]
  a.transpose = true;
  a.weighted = true;
  a.out = view(a.out.data, a.out.dtype, {6, 16});
  p = a.validate().problem;
  EXPECT_TRUE(p.x_per_slot);
  EXPECT_EQ(p.x_slot_stride, 32);
  EXPECT_EQ(p.x_token_stride, 64);
  EXPECT_TRUE(p.transpose_weights);
  EXPECT_EQ(p.w_row_stride, 32);
  EXPECT_TRUE(p.weighted);
  EXPECT_EQ(p.out_token_stride, 16);
}

// out[4, 64, 16] = masked(x[4, 64, 32], w[4, 16, 32], masked_m[4]), bf16.
struct MaskedArgsFake {
  TensorView x = view(addr(0x10000), DType::kBFloat16, {4, 64, 32});
  TensorView w = view(addr(0x20000), DType::kBFloat16, {4, 16, 32});
  TensorView out = view(addr(0x80000), DType::kBFloat16, {4, 64, 16});
  TensorView masked_m = view(addr(0x30000), DType::kInt32, {4});
  std::int64_t expected_m = 16;

  MaskedCall validate() const { return validate_masked(x, w, out, masked_m, expected_m, "m_grouped_gemm_masked"); }
};

const std::vector<test::BadInputCase<MaskedArgsFake>>& masked_cases() {
  static const std::vector<test::BadInputCase<MaskedArgsFake>> cases = {
      {"x_rank",
       [](MaskedArgsFake& a) {
         a.x = view(a.x.data, a.x.dtype, {256, 32});
       },
       {"x must have rank 3", "got 2"}},
      {"x_fp16",
       [](MaskedArgsFake& a) { a.x.dtype = DType::kFloat16; },
       {"x.dtype must be torch.bfloat16", "got torch.float16"}},
      {"mask_dtype",
       [](MaskedArgsFake& a) { a.masked_m.dtype = DType::kFloat32; },
       {"masked_m.dtype must be torch.int32", "got torch.float32"}},
      {"w_shape",
       [](MaskedArgsFake& a) {
         a.w = view(a.w.data, a.w.dtype, {4, 16, 31});
       },
       {"w must have shape [G, N, K] with G = 4 and K = 32", "got [4, 16, 31]"}},
      {"out_shape",
       [](MaskedArgsFake& a) {
         a.out = view(a.out.data, a.out.dtype, {4, 63, 16});
       },
       {"out must have shape [G, max_m, N] = [4, 64, 16]", "got [4, 63, 16]"}},
      {"mask_groups",
       [](MaskedArgsFake& a) { a.masked_m = view(a.masked_m.data, DType::kInt32, {3}); },
       {"masked_m.size(0) must equal x.size(0) (G)", "got 3 vs 4"}},
      {"expected_m", [](MaskedArgsFake& a) { a.expected_m = -1; }, {"expected_m must be >= 0", "got -1"}},
      {"w_inner_stride", [](MaskedArgsFake& a) { a.w.strides[2] = 2; }, {"w.stride(2) must be 1"}},
      {"out_overlaps_x", [](MaskedArgsFake& a) { a.out.data = addr(0x10000 + 2); }, {"out must not overlap x"}},
  };
  return cases;
}

class MaskedBadInput : public ::testing::TestWithParam<test::BadInputCase<MaskedArgsFake>> {};
TEST_P(MaskedBadInput, ThrowsNamingArgumentAndValue) {
  test::expect_bad_input_error(GetParam(), "m_grouped_gemm_masked");
}
INSTANTIATE_TEST_SUITE_P(Validate, MaskedBadInput, ::testing::ValuesIn(masked_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateMasked, Strides) {
  const MaskedProblem p = MaskedArgsFake{}.validate().problem;
  EXPECT_EQ(p.groups, 4);
  EXPECT_EQ(p.max_m, 64);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 32);
  EXPECT_EQ(p.x_group_stride, 64 * 32);
  EXPECT_EQ(p.w_group_stride, 16 * 32);
  EXPECT_EQ(p.out_group_stride, 64 * 16);
  EXPECT_EQ(p.ldo, 16);
}

}  // namespace
}  // namespace tgemm
