// validate_fp8_contiguous and validate_fp8_masked never dereference the tensors, so fake,
// never-mapped addresses stand in for device pointers (inputs below 0x800000, outputs above).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/validate_grouped_fp8.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

// out[100, 192] = contiguous(x[100, 256], w[3, 192, 256]): L = 2 scale blocks along K, 2 along N.
struct ContiguousArgsFake {
  TensorView x = view(addr(0x10000), DType::kFloat8E4M3, {100, 256});
  TensorView x_scale = view(addr(0x20000), DType::kFloat32, {100, 2});
  TensorView w = view(addr(0x100000), DType::kFloat8E4M3, {3, 192, 256});
  TensorView w_scale = view(addr(0x40000), DType::kFloat32, {3, 2, 2});
  TensorView out = view(addr(0x800000), DType::kBFloat16, {100, 192});
  TensorView m_indices = view(addr(0x50000), DType::kInt32, {100});

  Fp8GroupedCall validate() const {
    return validate_fp8_contiguous(x, x_scale, w, w_scale, out, m_indices, "m_grouped_gemm_fp8_contiguous");
  }
};

const std::vector<test::BadInputCase<ContiguousArgsFake>>& contiguous_cases() {
  using A = ContiguousArgsFake;
  static const std::vector<test::BadInputCase<A>> cases = {
      {"x_rank",
       [](A& a) {
         a.x = view(a.x.data, a.x.dtype, {100, 256, 1});
       },
       {"x must have rank 2", "got 3"}},
      {"x_bf16",
       [](A& a) { a.x.dtype = DType::kBFloat16; },
       {"x.dtype must be torch.float8_e4m3fn", "got torch.bfloat16"}},
      {"w_e5m2",
       [](A& a) { a.w.dtype = DType::kFloat8E5M2; },
       {"w.dtype must be torch.float8_e4m3fn", "got torch.float8_e5m2"}},
      {"x_scale_dtype",
       [](A& a) { a.x_scale.dtype = DType::kBFloat16; },
       {"x_scale.dtype must be torch.float32", "got torch.bfloat16"}},
      {"out_fp16",
       [](A& a) { a.out.dtype = DType::kFloat16; },
       {"out.dtype must be torch.bfloat16", "got torch.float16"}},
      {"index_dtype",
       [](A& a) { a.m_indices.dtype = DType::kUInt8; },
       {"m_indices.dtype must be torch.int32", "got torch.uint8"}},
      {"w_k",
       [](A& a) {
         a.w = view(a.w.data, a.w.dtype, {3, 192, 240});
       },
       {"w must have shape [G, N, K]", "K = 256"}},
      {"w_scale_groups",
       [](A& a) {
         a.w_scale = view(a.w_scale.data, DType::kFloat32, {2, 2, 2});
       },
       {"w_scale must have shape [G, ceil(N / 128), ceil(K / 128)] = [3, 2, 2]", "got [2, 2, 2]"}},
      {"w_scale_blocks",
       [](A& a) {
         a.w_scale = view(a.w_scale.data, DType::kFloat32, {3, 1, 2});
       },
       {"w_scale must be", "[2, 2]", "got [1, 2]"}},
      {"w_scale_mn_major",
       [](A& a) {
         a.w_scale = view(a.w_scale.data, DType::kFloat32, {3, 2, 2}, {4, 1, 2});
       },
       {"w_scale must be row-major"}},
      {"x_scale_shape",
       [](A& a) {
         a.x_scale = view(a.x_scale.data, DType::kFloat32, {100, 3});
       },
       {"x_scale must be [M, ceil(K / 128)] = [100, 2]", "got [100, 3]"}},
      {"x_scale_strides",
       [](A& a) {
         a.x_scale = view(a.x_scale.data, DType::kFloat32, {100, 2}, {1, 50});
       },
       {"x_scale must be row-major", "or MN-major", "got strides"}},
      {"out_shape",
       [](A& a) {
         a.out = view(a.out.data, a.out.dtype, {100, 191});
       },
       {"out must have shape [M, N] = [100, 192]", "got [100, 191]"}},
      {"index_rows",
       [](A& a) { a.m_indices = view(a.m_indices.data, DType::kInt32, {99}); },
       {"m_indices.size(0) must equal x.size(0) (M)", "got 99 vs 100"}},
      {"index_stride", [](A& a) { a.m_indices.strides[0] = 2; }, {"m_indices must be contiguous", "got stride 2"}},
      {"k_not_16",
       [](A& a) {
         a.x = view(a.x.data, a.x.dtype, {100, 136});
         a.w = view(a.w.data, a.w.dtype, {3, 192, 136});
       },
       {"K (x.size(-1)) must be a multiple of 16", "got 136"}},
      {"x_row_stride",
       [](A& a) {
         a.x = view(a.x.data, a.x.dtype, {100, 256}, {264, 1});
       },
       {"x.stride(0) must be a multiple of 16", "got 264"}},
      {"w_row_stride",
       [](A& a) {
         a.w = view(a.w.data, a.w.dtype, {3, 192, 256}, {192 * 264, 264, 1});
       },
       {"w.stride(1) must be a multiple of 16", "got 264"}},
      {"out_overlaps_w", [](A& a) { a.out.data = addr(0x100000 + 64); }, {"out must not overlap w"}},
      {"out_overlaps_x_scale", [](A& a) { a.out.data = addr(0x20000); }, {"out must not overlap x_scale"}},
  };
  return cases;
}

class Fp8ContiguousBadInput : public ::testing::TestWithParam<test::BadInputCase<ContiguousArgsFake>> {};
TEST_P(Fp8ContiguousBadInput, ThrowsNamingArgumentAndValue) {
  test::expect_bad_input_error(GetParam(), "m_grouped_gemm_fp8_contiguous");
}
INSTANTIATE_TEST_SUITE_P(Validate, Fp8ContiguousBadInput, ::testing::ValuesIn(contiguous_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateFp8Contiguous, RowMajorScales) {
  const Fp8GroupedProblem p = ContiguousArgsFake{}.validate().problem;
  EXPECT_FALSE(p.masked);
  EXPECT_EQ(p.groups, 3);
  EXPECT_EQ(p.rows, 100);
  EXPECT_EQ(p.n, 192);
  EXPECT_EQ(p.k, 256);
  EXPECT_EQ(p.lda, 256);
  EXPECT_EQ(p.xs_row_stride, 2);
  EXPECT_EQ(p.xs_col_stride, 1);
  EXPECT_EQ(p.w_group_stride, 192 * 256);
  EXPECT_EQ(p.ldw, 256);
  EXPECT_EQ(p.ws_group_stride, 4);
  EXPECT_EQ(p.ws_row_stride, 2);
  EXPECT_EQ(p.ldo, 192);
}

TEST(ValidateFp8Contiguous, MnMajorScalesAndPartialBlocks) {
  ContiguousArgsFake a;
  // DeepGEMM's TMA-aligned MN-major x_scale: column stride 104 >= M (M rounded up to 4 fp32).
  a.x_scale = view(a.x_scale.data, DType::kFloat32, {100, 2}, {1, 104});
  const Fp8GroupedProblem p = a.validate().problem;
  EXPECT_EQ(p.xs_row_stride, 1);
  EXPECT_EQ(p.xs_col_stride, 104);

  // K = 144 and N = 130: partial last blocks, ceil(144 / 128) = 2 and ceil(130 / 128) = 2.
  ContiguousArgsFake b;
  b.x = view(b.x.data, b.x.dtype, {100, 144});
  b.w = view(b.w.data, b.w.dtype, {3, 130, 144});
  b.out = view(b.out.data, b.out.dtype, {100, 130});
  EXPECT_EQ(b.validate().problem.k, 144);
}

TEST(ValidateFp8Contiguous, EmptyProblemsAccepted) {
  ContiguousArgsFake a;
  a.x = view(a.x.data, a.x.dtype, {0, 256});
  a.x_scale = view(a.x_scale.data, DType::kFloat32, {0, 2});
  a.out = view(a.out.data, a.out.dtype, {0, 192});
  a.m_indices = view(a.m_indices.data, DType::kInt32, {0});
  EXPECT_EQ(a.validate().problem.rows, 0);

  // G = 0: every row is a padding row (zeros), still a valid call.
  ContiguousArgsFake b;
  b.w = view(nullptr, b.w.dtype, {0, 192, 256});
  b.w_scale = view(nullptr, DType::kFloat32, {0, 2, 2});
  EXPECT_EQ(b.validate().problem.groups, 0);
}

// out[4, 64, 256] = masked(x[4, 64, 128], w[4, 256, 128], masked_m[4]): L = 1, 2 blocks along N.
struct MaskedFp8ArgsFake {
  TensorView x = view(addr(0x10000), DType::kFloat8E4M3, {4, 64, 128});
  TensorView x_scale = view(addr(0x30000), DType::kFloat32, {4, 64, 1});
  TensorView w = view(addr(0x100000), DType::kFloat8E4M3, {4, 256, 128});
  TensorView w_scale = view(addr(0x40000), DType::kFloat32, {4, 2, 1});
  TensorView out = view(addr(0x800000), DType::kBFloat16, {4, 64, 256});
  TensorView masked_m = view(addr(0x50000), DType::kInt32, {4});
  std::int64_t expected_m = 16;

  Fp8GroupedCall validate() const {
    return validate_fp8_masked(x, x_scale, w, w_scale, out, masked_m, expected_m, "m_grouped_gemm_fp8_masked");
  }
};

const std::vector<test::BadInputCase<MaskedFp8ArgsFake>>& masked_cases() {
  using A = MaskedFp8ArgsFake;
  static const std::vector<test::BadInputCase<A>> cases = {
      {"x_rank",
       [](A& a) {
         a.x = view(a.x.data, a.x.dtype, {256, 128});
       },
       {"x must have rank 3", "got 2"}},
      {"x_scale_rank",
       [](A& a) {
         a.x_scale = view(a.x_scale.data, DType::kFloat32, {256, 1});
       },
       {"x_scale must have rank 3", "got 2"}},
      {"mask_dtype",
       [](A& a) { a.masked_m.dtype = DType::kFloat32; },
       {"masked_m.dtype must be torch.int32", "got torch.float32"}},
      {"w_groups",
       [](A& a) {
         a.w = view(a.w.data, a.w.dtype, {3, 256, 128});
       },
       {"w must have shape [G, N, K] with G = 4", "got [3, 256, 128]"}},
      {"x_scale_groups",
       [](A& a) {
         a.x_scale = view(a.x_scale.data, DType::kFloat32, {3, 64, 1});
       },
       {"x_scale must have shape [G, max_m, ceil(K / 128)] = [4, 64, 1]", "got [3, 64, 1]"}},
      {"x_scale_rows",
       [](A& a) {
         a.x_scale = view(a.x_scale.data, DType::kFloat32, {4, 32, 1});
       },
       {"x_scale must be [max_m, ceil(K / 128)] per group = [64, 1]", "got [32, 1]"}},
      {"out_shape",
       [](A& a) {
         a.out = view(a.out.data, a.out.dtype, {4, 63, 256});
       },
       {"out must have shape [G, max_m, N] = [4, 64, 256]", "got [4, 63, 256]"}},
      {"out_planes_overlap",
       [](A& a) {
         a.out = view(a.out.data, a.out.dtype, {4, 64, 256}, {256, 256, 1});
       },
       {"out.stride(0) must be >=", "so its planes do not overlap"}},
      {"mask_groups",
       [](A& a) { a.masked_m = view(a.masked_m.data, DType::kInt32, {5}); },
       {"masked_m.size(0) must equal x.size(0) (G)", "got 5 vs 4"}},
      {"expected_m", [](A& a) { a.expected_m = -3; }, {"expected_m must be >= 0", "got -3"}},
      {"x_row_stride",
       [](A& a) {
         a.x = view(a.x.data, a.x.dtype, {4, 64, 128}, {64 * 136, 136, 1});
       },
       {"x.stride(1) must be a multiple of 16", "got 136"}},
      {"out_overlaps_masked_m", [](A& a) { a.out.data = addr(0x50000); }, {"out must not overlap masked_m"}},
  };
  return cases;
}

class Fp8MaskedBadInput : public ::testing::TestWithParam<test::BadInputCase<MaskedFp8ArgsFake>> {};
TEST_P(Fp8MaskedBadInput, ThrowsNamingArgumentAndValue) {
  test::expect_bad_input_error(GetParam(), "m_grouped_gemm_fp8_masked");
}
INSTANTIATE_TEST_SUITE_P(Validate, Fp8MaskedBadInput, ::testing::ValuesIn(masked_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateFp8Masked, Strides) {
  const Fp8GroupedProblem p = MaskedFp8ArgsFake{}.validate().problem;
  EXPECT_TRUE(p.masked);
  EXPECT_EQ(p.groups, 4);
  EXPECT_EQ(p.rows, 64);
  EXPECT_EQ(p.n, 256);
  EXPECT_EQ(p.k, 128);
  EXPECT_EQ(p.expected_m, 16);
  EXPECT_EQ(p.x_group_stride, 64 * 128);
  EXPECT_EQ(p.xs_group_stride, 64);
  EXPECT_EQ(p.w_group_stride, 256 * 128);
  EXPECT_EQ(p.ws_group_stride, 2);
  EXPECT_EQ(p.out_group_stride, 64 * 256);
  EXPECT_EQ(p.ldo, 256);

  // MN-major x_scale planes, DeepGEMM's masked layout: [G, max_m, L] with strides (L * ld, 1, ld).
  MaskedFp8ArgsFake a;
  a.x = view(a.x.data, a.x.dtype, {4, 64, 256});
  a.w = view(a.w.data, a.w.dtype, {4, 256, 256});
  a.w_scale = view(a.w_scale.data, DType::kFloat32, {4, 2, 2});
  a.x_scale = view(a.x_scale.data, DType::kFloat32, {4, 64, 2}, {128, 1, 64});
  const Fp8GroupedProblem q = a.validate().problem;
  EXPECT_EQ(q.xs_row_stride, 1);
  EXPECT_EQ(q.xs_col_stride, 64);
  EXPECT_EQ(q.xs_group_stride, 128);
}

}  // namespace
}  // namespace tgemm
