// validate_a16w16 never dereferences the tensors, so fake, never-mapped addresses stand in for
// device pointers: x at 0x10000, w at 0x20000, out at 0x30000, bias at 0x40000.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <functional>
#include <limits>
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

constexpr std::int64_t k2Pow31 = std::int64_t{1} << 31;
constexpr std::int64_t k2Pow40 = std::int64_t{1} << 40;

// out[4,16] = x[4,8] @ w[16,8]^T (+ bias[16]), bf16, contiguous.
struct Args {
  TensorView x = view(addr(0x10000), DType::kBFloat16, {4, 8});
  TensorView w = view(addr(0x20000), DType::kBFloat16, {16, 8});
  TensorView out = view(addr(0x30000), DType::kBFloat16, {4, 16});
  TensorView bias = view(addr(0x40000), DType::kBFloat16, {16});
  TensorView c = view(addr(0x50000), DType::kBFloat16, {4, 16});
  bool with_bias = false;
  bool with_c = false;
  Activation activation = Activation::kNone;
  float alpha = 1.0f;
  float beta = 0.0f;

  GemmCall validate(std::string_view op = "gemm_a16w16") const {
    GemmOptions o;
    if (with_bias) o.bias = &bias;
    if (with_c) o.c = &c;
    o.activation = activation;
    o.alpha = alpha;
    o.beta = beta;
    return validate_a16w16(x, w, out, o, op);
  }
};

using BadCase = test::BadInputCase<Args>;

void x_rank3(Args& a) {
  a.x = view(addr(0x10000), DType::kBFloat16, {2, 3, 8});
  a.out = view(addr(0x30000), DType::kBFloat16, {2, 3, 16});
}

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      // Epilogue arguments.
      {"beta_without_c", [](Args& a) { a.beta = 0.5f; }, {"c must be given when beta != 0", "0.5"}},
      {"alpha_nan", [](Args& a) { a.alpha = std::nanf(""); }, {"alpha must be finite", "nan"}},
      {"beta_inf", [](Args& a) { a.beta = std::numeric_limits<float>::infinity(); }, {"beta must be finite", "inf"}},
      {"activation_out_of_range", [](Args& a) { a.activation = static_cast<Activation>(7); },
       {"options.activation", "got value 7"}},
      {"c_dtype", [](Args& a) { a.with_c = true; a.beta = 1.0f; a.c.dtype = DType::kFloat16; },
       {"c.dtype must equal out.dtype", "torch.float16"}},
      {"c_shape", [](Args& a) { a.with_c = true; a.beta = 1.0f; a.c = view(addr(0x50000), DType::kBFloat16, {4, 15}); },
       {"c.size(1) must equal out.size(1)", "15 vs 16"}},
      {"c_rank", [](Args& a) { a.with_c = true; a.beta = 1.0f; a.c = view(addr(0x50000), DType::kBFloat16, {64}); },
       {"c.rank must equal out.rank", "got 1"}},
      {"c_inner_stride", [](Args& a) { a.with_c = true; a.beta = 1.0f; a.c = view(addr(0x50000), DType::kBFloat16, {4, 16}, {64, 2}); },
       {"c.stride(-1) must be 1", "got 2"}},
      {"c_partly_overlaps_out", [](Args& a) { a.with_c = true; a.beta = 1.0f; a.c.data = addr(0x30002); },
       {"c must be out itself or not overlap it", "0x30002"}},
      // Null pointers with non-empty shapes.
      {"null_x", [](Args& a) { a.x.data = nullptr; }, {"x.data", "null", "[4, 8]"}},
      {"null_w", [](Args& a) { a.w.data = nullptr; }, {"w.data", "null", "[16, 8]"}},
      {"null_out", [](Args& a) { a.out.data = nullptr; }, {"out.data", "null", "[4, 16]"}},
      {"null_bias",
       [](Args& a) {
         a.with_bias = true;
         a.bias.data = nullptr;
       },
       {"bias.data", "null"}},
      // Dtypes.
      {"x_fp32",
       [](Args& a) { a.x.dtype = a.w.dtype = DType::kFloat32; },
       {"x.dtype", "torch.float32"}},
      {"x_int8", [](Args& a) { a.x.dtype = a.w.dtype = DType::kInt8; }, {"x.dtype", "torch.int8"}},
      {"x_fp8",
       [](Args& a) { a.x.dtype = DType::kFloat8E4M3; },
       {"x.dtype", "torch.float8_e4m3fn"}},
      {"w_dtype_differs",
       [](Args& a) { a.w.dtype = DType::kFloat16; },
       {"w.dtype", "torch.float16", "torch.bfloat16"}},
      {"out_int8", [](Args& a) { a.out.dtype = DType::kInt8; }, {"out.dtype", "torch.int8"}},
      {"out_int32", [](Args& a) { a.out.dtype = DType::kInt32; }, {"out.dtype", "torch.int32"}},
      {"bias_int32",
       [](Args& a) {
         a.with_bias = true;
         a.bias.dtype = DType::kInt32;
       },
       {"bias.dtype", "torch.int32"}},
      {"bias_fp32_with_bf16_x_and_out",
       [](Args& a) {
         a.with_bias = true;
         a.bias.dtype = DType::kFloat32;
       },
       {"bias.dtype", "torch.float32"}},
      // Ranks.
      {"x_rank0", [](Args& a) { a.x.rank = 0; }, {"x.rank", "got 0"}},
      {"x_rank7", [](Args& a) { a.x.rank = 7; }, {"x.rank", "got 7"}},
      {"w_rank3",
       [](Args& a) {
         a.w = view(addr(0x20000), DType::kBFloat16, {16, 8, 1});
       },
       {"w must be 2-D", "rank 3", "[16, 8, 1]"}},
      {"w_rank1",
       [](Args& a) { a.w = view(addr(0x20000), DType::kBFloat16, {16}); },
       {"w must be 2-D", "rank 1", "[16]"}},
      {"out_rank_differs",
       [](Args& a) {
         a.out = view(addr(0x30000), DType::kBFloat16, {1, 4, 16});
       },
       {"out.rank", "got 3"}},
      {"bias_rank2",
       [](Args& a) {
         a.with_bias = true;
         a.bias = view(addr(0x40000), DType::kBFloat16, {1, 16});
       },
       {"bias must be 1-D", "rank 2", "[1, 16]"}},
      // Negative sizes and strides.
      {"x_negative_size", [](Args& a) { a.x.sizes[0] = -4; }, {"x.size(0)", "got -4"}},
      {"out_negative_size", [](Args& a) { a.out.sizes[1] = -16; }, {"out.size(1)", "got -16"}},
      {"w_negative_stride", [](Args& a) { a.w.strides[0] = -8; }, {"w.stride(0)", "got -8"}},
      {"x_negative_stride", [](Args& a) { a.x.strides[1] = -1; }, {"x.stride(1)", "got -1"}},
      // Shape agreement.
      {"k_mismatch",
       [](Args& a) {
         a.w = view(addr(0x20000), DType::kBFloat16, {16, 9});
       },
       {"w.size(1)", "got 9 vs 8"}},
      {"n_mismatch",
       [](Args& a) {
         a.out = view(addr(0x30000), DType::kBFloat16, {4, 17});
       },
       {"out.size(-1)", "got 17 vs 16"}},
      {"leading_dim_mismatch_rank3",
       [](Args& a) {
         x_rank3(a);
         a.out = view(addr(0x30000), DType::kBFloat16, {2, 4, 16});
       },
       {"out.size(1)", "x.size(1)", "got 4 vs 3"}},
      {"bias_length",
       [](Args& a) {
         a.with_bias = true;
         a.bias = view(addr(0x40000), DType::kBFloat16, {15});
       },
       {"bias.size(0)", "got 15"}},
      // Sizes beyond what the kernels index.
      {"m_2pow40",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kBFloat16, {k2Pow40, 8});
         a.out = view(addr(0x30000), DType::kBFloat16, {k2Pow40, 16});
       },
       {"x", "1099511627776"}},
      {"m_product_2pow40_rank3",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kBFloat16, {1 << 20, 1 << 20, 8});
         a.out = view(addr(0x30000), DType::kBFloat16, {1 << 20, 1 << 20, 16});
       },
       {"x", "[1048576, 1048576, 8]"}},
      {"m_2pow31",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kBFloat16, {k2Pow31, 8});
         a.out = view(addr(0x30000), DType::kBFloat16, {k2Pow31, 16});
       },
       {"x", "2147483648"}},
      {"n_2pow31",
       [](Args& a) {
         a.w = view(addr(0x20000), DType::kBFloat16, {k2Pow31, 8});
         a.out = view(addr(0x30000), DType::kBFloat16, {4, k2Pow31});
       },
       {"N (w.size(0))", "2147483648"}},
      {"k_2pow31",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kBFloat16, {4, k2Pow31});
         a.w = view(addr(0x20000), DType::kBFloat16, {16, k2Pow31});
       },
       {"K (x.size(-1))", "2147483648"}},
      {"x_extent_overflows",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kBFloat16, {4, 8}, {std::int64_t{1} << 62, 1});
       },
       {"x spans", "4611686018427387904"}},
      // Strides and layout.
      {"x_stride_last_2",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kBFloat16, {4, 8}, {16, 2});
       },
       {"x.stride(-1)", "got 2"}},
      {"w_stride1_2",
       [](Args& a) {
         a.w = view(addr(0x20000), DType::kBFloat16, {16, 8}, {16, 2});
       },
       {"w.stride(1)", "got 2"}},
      {"out_stride_last_2",
       [](Args& a) {
         a.out = view(addr(0x30000), DType::kBFloat16, {4, 16}, {32, 2});
       },
       {"out.stride(-1)", "got 2"}},
      {"bias_stride_2",
       [](Args& a) {
         a.with_bias = true;
         a.bias = view(addr(0x40000), DType::kBFloat16, {16}, {2});
       },
       {"bias.stride(0)", "got 2"}},
      {"lda_less_than_k",
       [](Args& a) {
         a.x = view(addr(0x10000), DType::kBFloat16, {4, 8}, {4, 1});
       },
       {"x row stride", "got 4"}},
      {"ldb_less_than_k",
       [](Args& a) {
         a.w = view(addr(0x20000), DType::kBFloat16, {16, 8}, {4, 1});
       },
       {"w.stride(0)", "got 4"}},
      {"ldo_less_than_n",
       [](Args& a) {
         a.out = view(addr(0x30000), DType::kBFloat16, {4, 16}, {8, 1});
       },
       {"out row stride", "got 8"}},
      {"x_not_flattenable",
       [](Args& a) {
         x_rank3(a);
         a.x = view(addr(0x10000), DType::kBFloat16, {2, 3, 8}, {100, 8, 1});
       },
       {"x cannot be flattened", "stride(0) = 100", "(100, 8, 1)"}},
      {"out_not_flattenable",
       [](Args& a) {
         x_rank3(a);
         a.out = view(addr(0x30000), DType::kBFloat16, {2, 3, 16}, {64, 16, 1});
       },
       {"out cannot be flattened", "stride(0) = 64"}},
      // Alignment: bf16 needs 2-byte, fp32 4-byte addresses.
      {"x_misaligned", [](Args& a) { a.x.data = addr(0x10001); }, {"x.data", "aligned", "0x10001"}},
      {"w_misaligned", [](Args& a) { a.w.data = addr(0x20001); }, {"w.data", "aligned", "0x20001"}},
      {"out_misaligned",
       [](Args& a) { a.out.data = addr(0x30003); },
       {"out.data", "aligned", "0x30003"}},
      {"bias_misaligned",
       [](Args& a) {
         a.with_bias = true;
         a.bias.data = addr(0x40001);
       },
       {"bias.data", "aligned", "0x40001"}},
      {"fp32_out_misaligned",
       [](Args& a) {
         a.out.dtype = DType::kFloat32;
         a.out.data = addr(0x30002);
       },
       {"out.data", "4 bytes", "0x30002"}},
      // Aliasing: the message names both byte ranges.
      {"out_overlaps_x",
       [](Args& a) { a.out.data = addr(0x10010); },
       {"out must not overlap x", "0x10010", "0x10000"}},
      {"out_overlaps_w",
       [](Args& a) { a.out.data = addr(0x20080); },
       {"out must not overlap w", "0x20080", "0x20000"}},
      {"out_overlaps_bias",
       [](Args& a) {
         a.with_bias = true;
         a.bias.data = addr(0x30010);
       },
       {"out must not overlap bias", "0x30000", "0x30010"}},
  };
  return cases;
}

class ValidateBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(ValidateBadInput, ThrowsErrorNamingOpArgumentAndValue) {
  test::expect_bad_input_error(GetParam(), "gemm_a16w16");
}

INSTANTIATE_TEST_SUITE_P(A16W16, ValidateBadInput, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(ValidateA16W16, BadCasesAreDistinct) {
  // Guard against copy-paste: each case mutates the arguments differently.
  EXPECT_GE(bad_cases().size(), 30u);
  std::vector<std::string> names;
  for (const auto& c : bad_cases()) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
}

std::string error_of(const Args& a, std::string_view op = "gemm_a16w16") {
  try {
    a.validate(op);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ValidateA16W16, CheckOrderFollowsDesign) {
  // Null pointer before dtype.
  Args a;
  a.x.data = nullptr;
  a.x.dtype = DType::kFloat32;
  EXPECT_NE(error_of(a).find("x.data"), std::string::npos) << error_of(a);
  // Dtype before rank.
  Args b;
  b.out.dtype = DType::kInt8;
  b.out.rank = 3;
  EXPECT_NE(error_of(b).find("out.dtype"), std::string::npos) << error_of(b);
  // Rank before shape agreement.
  Args c;
  c.w = view(addr(0x20000), DType::kBFloat16, {16, 9, 1});
  EXPECT_NE(error_of(c).find("w must be 2-D"), std::string::npos) << error_of(c);
  // Shape agreement before alignment.
  Args d;
  d.w = view(addr(0x20001), DType::kBFloat16, {16, 9});
  EXPECT_NE(error_of(d).find("w.size(1)"), std::string::npos) << error_of(d);
}

// The rank bound is checked before anything indexes sizes: a rank-7 view with a null pointer
// must not read sizes[6] (past the end of TensorView::sizes) to describe its shape.
TEST(ValidateA16W16, RankAboveMaxWithNullDataIsARankError) {
  Args a;
  a.x = view(nullptr, DType::kBFloat16, {2, 2, 2, 2, 2, 2});
  a.x.rank = 7;
  const std::string msg = error_of(a);
  EXPECT_NE(msg.find("x.rank"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got 7"), std::string::npos) << msg;
}

TEST(ValidateA16W16, OpNameIsTheOneGiven) {
  Args a;
  a.x.data = nullptr;
  EXPECT_EQ(error_of(a, "gemm_bias").rfind("gemm_bias: x.data", 0), 0u) << error_of(a, "gemm_bias");
}

TEST(ValidateA16W16, ContiguousProblem) {
  Args a;
  GemmCall call = a.validate();
  const GemmProblem& p = call.problem;
  EXPECT_EQ(p.family, OpFamily::kA16W16);
  EXPECT_EQ(p.m, 4);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 8);
  EXPECT_EQ(p.a_type, DType::kBFloat16);
  EXPECT_EQ(p.b_type, DType::kBFloat16);
  EXPECT_EQ(p.out_type, DType::kBFloat16);
  EXPECT_EQ(p.epilogue, Epilogue::kNone);
  EXPECT_FALSE(p.has_bias());
  EXPECT_EQ(p.lda, 8);
  EXPECT_EQ(p.ldb, 8);
  EXPECT_EQ(p.ldo, 16);
  EXPECT_EQ(p.align_a, 16);
  EXPECT_EQ(p.align_b, 16);
  EXPECT_EQ(p.align_out, 16);
  EXPECT_EQ(p.device, 0);
  EXPECT_EQ(call.args.a, a.x.data);
  EXPECT_EQ(call.args.b, a.w.data);
  EXPECT_EQ(call.args.out, a.out.data);
  EXPECT_EQ(call.args.bias, nullptr);
}

TEST(ValidateA16W16, PaddedLeadingDimensions) {
  Args a;
  a.x = view(addr(0x10000), DType::kBFloat16, {4, 8}, {24, 1});
  a.w = view(addr(0x20000), DType::kBFloat16, {16, 8}, {10, 1});
  a.out = view(addr(0x30000), DType::kBFloat16, {4, 16}, {40, 1});
  GemmProblem p = a.validate().problem;
  EXPECT_EQ(p.lda, 24);
  EXPECT_EQ(p.ldb, 10);
  EXPECT_EQ(p.ldo, 40);
}

TEST(ValidateA16W16, BiasEpilogueAndTypes) {
  Args a;
  a.x.dtype = a.w.dtype = DType::kFloat16;
  a.out.dtype = DType::kFloat32;
  a.bias.dtype = DType::kFloat32;  // out's dtype is accepted as well as x's
  a.with_bias = true;
  GemmCall call = a.validate();
  EXPECT_EQ(call.problem.epilogue, Epilogue::kBias);
  EXPECT_TRUE(call.problem.has_bias());
  EXPECT_EQ(call.problem.a_type, DType::kFloat16);
  EXPECT_EQ(call.problem.out_type, DType::kFloat32);
  EXPECT_EQ(call.problem.bias_type, DType::kFloat32);
  EXPECT_EQ(call.args.bias, a.bias.data);

  a.bias.dtype = DType::kFloat16;
  EXPECT_EQ(a.validate().problem.bias_type, DType::kFloat16);
}

TEST(ValidateA16W16, Rank3IsFlattenedWithLdFromStrideMinus2) {
  Args a;
  // x [2, 3, 8] with rows 12 elements apart: a slice x_big[:, :, :8] of a [2, 3, 12] tensor.
  a.x = view(addr(0x10000), DType::kBFloat16, {2, 3, 8}, {36, 12, 1});
  a.out = view(addr(0x30000), DType::kBFloat16, {2, 3, 16});
  GemmProblem p = a.validate().problem;
  EXPECT_EQ(p.m, 6);
  EXPECT_EQ(p.lda, 12);
  EXPECT_EQ(p.ldo, 16);
}

TEST(ValidateA16W16, Rank5IsFlattenedToTheProductOfLeadingDims) {
  Args a;
  a.x = view(addr(0x10000), DType::kBFloat16, {2, 3, 5, 7, 8});
  a.out = view(addr(0x100000), DType::kBFloat16, {2, 3, 5, 7, 16});
  GemmProblem p = a.validate().problem;
  EXPECT_EQ(p.m, 2 * 3 * 5 * 7);
  EXPECT_EQ(p.lda, 8);
  EXPECT_EQ(p.ldo, 16);
}

TEST(ValidateA16W16, SizeOneLeadingDimsMayHaveAnyStride) {
  Args a;
  a.x = view(addr(0x10000), DType::kBFloat16, {1, 4, 8}, {12345, 8, 1});
  a.out = view(addr(0x30000), DType::kBFloat16, {1, 4, 16}, {7, 16, 1});
  GemmProblem p = a.validate().problem;
  EXPECT_EQ(p.m, 4);
  EXPECT_EQ(p.lda, 8);
  EXPECT_EQ(p.ldo, 16);

  Args b;
  b.x = view(addr(0x10000), DType::kBFloat16, {4, 1, 8}, {8, 999, 1});
  b.out = view(addr(0x30000), DType::kBFloat16, {4, 1, 16}, {16, 0, 1});
  GemmProblem q = b.validate().problem;
  EXPECT_EQ(q.m, 4);
  EXPECT_EQ(q.lda, 8);
  EXPECT_EQ(q.ldo, 16);

  // One row: its stride does not matter at all.
  Args c;
  c.x = view(addr(0x10000), DType::kBFloat16, {1, 8}, {3, 1});
  c.out = view(addr(0x30000), DType::kBFloat16, {1, 16}, {0, 1});
  GemmProblem r = c.validate().problem;
  EXPECT_EQ(r.m, 1);
  EXPECT_GE(r.lda, 8);
  EXPECT_GE(r.ldo, 16);
}

TEST(ValidateA16W16, MZeroIsValid) {
  Args a;
  a.x = view(addr(0x10000), DType::kBFloat16, {0, 8});
  a.out = view(addr(0x30000), DType::kBFloat16, {0, 16});
  EXPECT_EQ(a.validate().problem.m, 0);
  // Empty tensors may have no storage at all.
  a.x.data = nullptr;
  a.out.data = nullptr;
  GemmCall call = a.validate();
  EXPECT_EQ(call.problem.m, 0);
  EXPECT_EQ(call.problem.n, 16);
  EXPECT_GE(call.problem.lda, 1);
  EXPECT_GE(call.problem.ldo, 1);
  // Rank 3 with a zero batch.
  Args b;
  b.x = view(nullptr, DType::kBFloat16, {0, 3, 8});
  b.out = view(nullptr, DType::kBFloat16, {0, 3, 16});
  EXPECT_EQ(b.validate().problem.m, 0);
}

TEST(ValidateA16W16, KZeroIsValid) {
  Args a;
  a.x = view(nullptr, DType::kBFloat16, {4, 0});
  a.w = view(nullptr, DType::kBFloat16, {16, 0});
  a.with_bias = true;
  GemmCall call = a.validate();
  EXPECT_EQ(call.problem.m, 4);
  EXPECT_EQ(call.problem.n, 16);
  EXPECT_EQ(call.problem.k, 0);
  EXPECT_GE(call.problem.lda, 1);
  EXPECT_GE(call.problem.ldb, 1);
}

TEST(ValidateA16W16, NZeroIsValid) {
  Args a;
  a.w = view(nullptr, DType::kBFloat16, {0, 8});
  a.out = view(nullptr, DType::kBFloat16, {4, 0});
  GemmCall call = a.validate();
  EXPECT_EQ(call.problem.n, 0);
  EXPECT_EQ(call.problem.m, 4);
}

TEST(ValidateA16W16, XRank1IsOneRow) {
  Args a;
  a.x = view(addr(0x10000), DType::kBFloat16, {8});
  a.out = view(addr(0x30000), DType::kBFloat16, {16});
  GemmProblem p = a.validate().problem;
  EXPECT_EQ(p.m, 1);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 8);
  EXPECT_GE(p.lda, 8);
  EXPECT_GE(p.ldo, 16);
}

TEST(ValidateA16W16, AlignmentFieldsComeFromTheAddresses) {
  Args a;
  a.x.data = addr(0x10008);
  a.w.data = addr(0x20002);
  a.out.data = addr(0x30004);
  a.bias.data = addr(0x40010);
  a.with_bias = true;
  GemmProblem p = a.validate().problem;
  EXPECT_EQ(p.align_a, 8);
  EXPECT_EQ(p.align_b, 2);
  EXPECT_EQ(p.align_out, 4);
  EXPECT_EQ(p.align_bias, 16);

  a.bias.data = addr(0x40006);
  EXPECT_EQ(a.validate().problem.align_bias, 2);
  a.x.data = addr(0x10100);  // any multiple of 16 is 16
  EXPECT_EQ(a.validate().problem.align_a, 16);
}

TEST(AddressAlignment, LargestPowerOfTwoUpTo16) {
  EXPECT_EQ(address_alignment(nullptr), 16);
  EXPECT_EQ(address_alignment(addr(0x1000)), 16);
  EXPECT_EQ(address_alignment(addr(0x1010)), 16);
  EXPECT_EQ(address_alignment(addr(0x1008)), 8);
  EXPECT_EQ(address_alignment(addr(0x100c)), 4);
  EXPECT_EQ(address_alignment(addr(0x1006)), 2);
  EXPECT_EQ(address_alignment(addr(0x1003)), 1);
}

TEST(ValidateA16W16, EpilogueFieldsOfTheProblem) {
  Args a;
  a.activation = Activation::kGeluTanh;
  a.alpha = 0.5f;
  a.beta = 2.0f;
  a.with_c = true;
  a.c = view(addr(0x50010), DType::kBFloat16, {4, 16}, {20, 1});
  GemmCall call = a.validate();
  EXPECT_EQ(call.problem.activation, Activation::kGeluTanh);
  EXPECT_FALSE(call.problem.unit_alpha);
  EXPECT_TRUE(call.problem.use_c);
  EXPECT_EQ(call.problem.ldc, 20);
  EXPECT_EQ(call.problem.align_c, 16);
  EXPECT_EQ(call.args.c, addr(0x50010));
  EXPECT_EQ(call.args.alpha, 0.5f);
  EXPECT_EQ(call.args.beta, 2.0f);
  EXPECT_FALSE(call.problem.plain_epilogue());
  EXPECT_EQ(format_epilogue_key(call.problem.epilogue_key()), "gelu_tanh+alpha+c");
}

TEST(ValidateA16W16, CMayBeOutItselfAndIsIgnoredWithBetaZero) {
  Args a;
  a.with_c = true;
  a.beta = 1.0f;
  a.c = a.out;  // in-place accumulation
  EXPECT_TRUE(a.validate().problem.use_c);
  Args b;
  b.with_c = true;  // beta 0: c is not read
  EXPECT_FALSE(b.validate().problem.use_c);
  EXPECT_TRUE(b.validate().problem.plain_epilogue());
}

TEST(EpilogueKey, FormatsAndParsesEveryCombination) {
  for (Activation act : {Activation::kNone, Activation::kGelu, Activation::kGeluTanh, Activation::kRelu}) {
    for (bool scaled : {false, true}) {
      for (bool use_c : {false, true}) {
        EpilogueKey e{act, scaled, use_c};
        auto back = parse_epilogue_key(format_epilogue_key(e));
        ASSERT_TRUE(back.has_value()) << format_epilogue_key(e);
        EXPECT_TRUE(*back == e) << format_epilogue_key(e);
      }
    }
  }
  EXPECT_EQ(format_epilogue_key(EpilogueKey{}), "none");
  EXPECT_FALSE(parse_epilogue_key("silu").has_value());
  EXPECT_FALSE(parse_epilogue_key("gelu+beta").has_value());
  EXPECT_FALSE(parse_epilogue_key("").has_value());
}

TEST(ValidateA16W16, AdjacentOutputIsNotAnOverlap) {
  Args a;
  a.out.data = addr(0x10000 + 4 * 8 * 2);  // right after x's last byte
  EXPECT_NO_THROW(a.validate());
  a.out.data = addr(0x10000 + 4 * 8 * 2 - 2);  // last element of x
  EXPECT_THROW(a.validate(), Error);
}

}  // namespace
}  // namespace tgemm
