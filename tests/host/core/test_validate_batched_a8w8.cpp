// validate_batched_a8w8 never dereferences the tensors, so fake, never-mapped addresses stand in
// for device pointers: a at 0x100000, b at 0x200000, out at 0x300000, bias at 0x400000, a_scale at
// 0x500000, b_scale at 0x600000.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/validate.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

// out[4,24,16] = (a[4,24,32] @ b[4,16,32]^T) * a_scale[4,24,1] * b_scale[4] (+ bias[16]), FP8 in,
// bf16 out: per-token x per-tensor-per-product.
struct Args {
  TensorView a = view(addr(0x100000), DType::kFloat8E4M3, {4, 24, 32});
  TensorView b = view(addr(0x200000), DType::kFloat8E4M3, {4, 16, 32});
  TensorView a_scale = view(addr(0x500000), DType::kFloat32, {4, 24, 1});
  TensorView b_scale = view(addr(0x600000), DType::kFloat32, {4});
  TensorView out = view(addr(0x300000), DType::kBFloat16, {4, 24, 16});
  TensorView bias = view(addr(0x400000), DType::kBFloat16, {16});
  bool with_bias = true;

  GemmCall validate() const { return validate_batched_a8w8(a, b, a_scale, b_scale, out, with_bias ? &bias : nullptr); }
};

using BadCase = test::BadInputCase<Args>;

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"a_rank",
       [](Args& x) {
         x.a = view(x.a.data, x.a.dtype, {24, 32});
       },
       {"a must have rank 3", "got 2"}},
      {"b_rank",
       [](Args& x) {
         x.b = view(x.b.data, x.b.dtype, {16, 32});
       },
       {"b must have rank 3", "got 2"}},
      {"bias_rank",
       [](Args& x) {
         x.bias = view(x.bias.data, x.bias.dtype, {1, 16});
       },
       {"bias must have rank 1"}},
      {"a_null", [](Args& x) { x.a.data = nullptr; }, {"a.data must not be null", "[4, 24, 32]"}},
      {"a_scale_null", [](Args& x) { x.a_scale.data = nullptr; }, {"a_scale.data must not be null"}},
      {"a_e5m2",
       [](Args& x) { x.a.dtype = x.b.dtype = DType::kFloat8E5M2; },
       {"a.dtype torch.float8_e5m2 is not supported"}},
      {"a_bf16",
       [](Args& x) { x.a.dtype = x.b.dtype = DType::kBFloat16; },
       {"a.dtype must be torch.float8_e4m3fn or torch.int8", "got torch.bfloat16"}},
      {"mixed_fp8_int8",
       [](Args& x) { x.b.dtype = DType::kInt8; },
       {"b.dtype must equal a.dtype (torch.float8_e4m3fn)", "fp8 and int8 operands do not mix", "got torch.int8"}},
      {"out_int8",
       [](Args& x) { x.out.dtype = DType::kInt8; },
       {"out.dtype must be torch.bfloat16, torch.float16 or torch.float32", "got torch.int8"}},
      {"bias_fp16",
       [](Args& x) { x.bias.dtype = DType::kFloat16; },
       {"bias.dtype must equal out.dtype (torch.bfloat16) or be torch.float32", "got torch.float16"}},
      {"a_scale_bf16",
       [](Args& x) { x.a_scale.dtype = DType::kBFloat16; },
       {"a_scale.dtype must be torch.float32", "got torch.bfloat16"}},
      {"b_scale_fp16",
       [](Args& x) { x.b_scale.dtype = DType::kFloat16; },
       {"b_scale.dtype must be torch.float32", "got torch.float16"}},
      {"batch_mismatch",
       [](Args& x) {
         x.b = view(x.b.data, x.b.dtype, {3, 16, 32});
       },
       {"b.size(0) must equal a.size(0) (B)", "got 3 vs 4"}},
      {"k_mismatch",
       [](Args& x) {
         x.b = view(x.b.data, x.b.dtype, {4, 16, 48});
       },
       {"K of b [B, N, K] (transpose_b=true) must equal K of a [B, M, K] (transpose_a=false)", "got 48 vs 32"}},
      {"out_shape",
       [](Args& x) {
         x.out = view(x.out.data, x.out.dtype, {4, 16, 24});
       },
       {"out must have shape [B, M, N] = [4, 24, 16]", "got [4, 16, 24]"}},
      {"bias_size",
       [](Args& x) { x.bias = view(x.bias.data, x.bias.dtype, {24}); },
       {"bias.size(0) must equal N (16)"}},
      {"k_not_16",
       [](Args& x) {
         x.a = view(x.a.data, x.a.dtype, {4, 24, 40});
         x.b = view(x.b.data, x.b.dtype, {4, 16, 40});
       },
       {"K (a.size(2)) must be a multiple of 16 for torch.float8_e4m3fn", "got 40"}},
      {"a_row_stride_not_16",
       [](Args& x) {
         x.a = view(x.a.data, x.a.dtype, {4, 24, 32}, {1000, 40, 1});
       },
       {"a.stride(1) must be a multiple of 16", "got 40"}},
      {"b_transposed_view",
       [](Args& x) {
         x.b = view(x.b.data, x.b.dtype, {4, 16, 32}, {512, 1, 16});
       },
       {"b.stride(2) must be 1", "[B, N, K] (transpose_b=true)", "(512, 1, 16)"}},
      {"a_scale_per_token_wrong_m",
       [](Args& x) {
         x.a_scale = view(x.a_scale.data, DType::kFloat32, {4, 23, 1});
       },
       {"a_scale must have 1 element (one scale for every product)", "[B, M, 1] (per-token) with B = 4",
        "got shape [4, 23, 1]"}},
      {"a_scale_flat_per_token",
       // [B * M] is neither per-tensor per product nor [B, M, 1]: refused rather than guessed.
       [](Args& x) { x.a_scale = view(x.a_scale.data, DType::kFloat32, {96}); },
       {"a_scale must have 1 element", "got shape [96]"}},
      {"b_scale_wrong_batch",
       [](Args& x) { x.b_scale = view(x.b_scale.data, DType::kFloat32, {3}); },
       {"b_scale must have 1 element", "[B, N, 1] (per-channel) with B = 4", "got shape [3]"}},
      {"b_scale_per_token_shape",
       // M rows where N are expected.
       [](Args& x) {
         x.b_scale = view(x.b_scale.data, DType::kFloat32, {4, 24, 1});
       },
       {"b_scale must have 1 element", "got shape [4, 24, 1]"}},
      {"a_scale_rows_strided",
       [](Args& x) {
         x.a_scale = view(x.a_scale.data, DType::kFloat32, {4, 24, 1}, {48, 2, 1});
       },
       {"a_scale must be contiguous along dim 1", "(48, 2, 1)"}},
      {"out_batch_stride_zero",
       [](Args& x) {
         x.out = view(x.out.data, x.out.dtype, {4, 24, 16}, {0, 16, 1});
       },
       {"out.stride(0) must not be 0", "B = 4"}},
      {"out_batches_overlap",
       [](Args& x) {
         x.out = view(x.out.data, x.out.dtype, {4, 24, 16}, {200, 16, 1});
       },
       {"out's elements must not overlap each other", "(200, 16, 1)"}},
      {"broadcast_a_aliases_out",
       [](Args& x) {
         x.a = view(addr(0x300000), x.a.dtype, {4, 24, 32}, {0, 32, 1});
       },
       {"out must not overlap a"}},
      {"a_scale_aliases_out", [](Args& x) { x.a_scale.data = addr(0x300000 + 64); }, {"out must not overlap a_scale"}},
      {"b_scale_aliases_out", [](Args& x) { x.b_scale.data = addr(0x300000 + 64); }, {"out must not overlap b_scale"}},
      {"scale_misaligned", [](Args& x) { x.b_scale.data = addr(0x600002); }, {"b_scale.data must be aligned"}},
  };
  return cases;
}

class BatchedA8W8BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BatchedA8W8BadInput, ThrowsNamingArgumentAndValue) {
  test::expect_bad_input_error(GetParam(), "batched_gemm_a8w8");
}

INSTANTIATE_TEST_SUITE_P(Validate, BatchedA8W8BadInput, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(ValidateBatchedA8W8, ProblemOfDenseOperands) {
  const GemmCall call = Args{}.validate();
  const GemmProblem& p = call.problem;
  EXPECT_EQ(p.family, OpFamily::kA8W8Batched);
  EXPECT_EQ(p.batch, 4);
  EXPECT_EQ(p.m, 24);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 32);
  EXPECT_FALSE(p.transpose_a);
  EXPECT_TRUE(p.transpose_b);
  EXPECT_EQ(p.lda, 32);
  EXPECT_EQ(p.ldb, 32);
  EXPECT_EQ(p.ldo, 16);
  EXPECT_EQ(p.batch_stride_a, 24 * 32);
  EXPECT_EQ(p.batch_stride_b, 16 * 32);
  EXPECT_EQ(p.batch_stride_out, 24 * 16);
  EXPECT_EQ(p.a_scale, ScaleGranularity::kRow);
  EXPECT_EQ(p.b_scale, ScaleGranularity::kTensor);
  EXPECT_EQ(p.batch_stride_a_scale, 24);
  EXPECT_EQ(p.batch_stride_b_scale, 1);
  EXPECT_EQ(p.bias_type, DType::kBFloat16);
  EXPECT_EQ(call.args.a_scale, addr(0x500000));
  EXPECT_EQ(call.args.b_scale, addr(0x600000));
}

TEST(ValidateBatchedA8W8, ScaleShapesAndTheirBatchStrides) {
  struct Case {
    std::vector<std::int64_t> sizes, strides;
    bool is_a;
    ScaleGranularity granularity;
    std::int64_t batch_stride;
  };
  const std::vector<Case> cases = {
      {{}, {}, true, ScaleGranularity::kTensor, 0},                // one scalar for every product
      {{1}, {}, false, ScaleGranularity::kTensor, 0},              // [1]
      {{1, 1, 1}, {}, true, ScaleGranularity::kTensor, 0},         // [1, 1, 1]
      {{4, 1, 1}, {}, true, ScaleGranularity::kTensor, 1},         // per product
      {{4}, {2}, false, ScaleGranularity::kTensor, 2},             // strided per product
      {{4}, {0}, false, ScaleGranularity::kTensor, 0},             // expanded scalar
      {{4, 16, 1}, {}, false, ScaleGranularity::kRow, 16},         // per-channel
      {{4, 16, 1}, {0, 1, 1}, false, ScaleGranularity::kRow, 0},   // one vector for every product
      {{4, 24, 1}, {32, 1, 1}, true, ScaleGranularity::kRow, 32},  // padded per-token
  };
  for (const Case& c : cases) {
    Args x;
    TensorView& s = c.is_a ? x.a_scale : x.b_scale;
    s = view(s.data, DType::kFloat32, c.sizes, c.strides);
    const GemmProblem p = x.validate().problem;
    EXPECT_EQ(c.is_a ? p.a_scale : p.b_scale, c.granularity) << shape_str(s);
    EXPECT_EQ(c.is_a ? p.batch_stride_a_scale : p.batch_stride_b_scale, c.batch_stride) << shape_str(s);
  }
}

TEST(ValidateBatchedA8W8, BroadcastAndPaddedOperandsAccepted) {
  Args x;
  x.a = view(x.a.data, x.a.dtype, {4, 24, 32}, {0, 48, 1});    // one padded a for every product
  x.b = view(x.b.data, x.b.dtype, {4, 16, 32}, {600, 32, 1});  // padded batches
  x.out = view(x.out.data, x.out.dtype, {4, 24, 16}, {400, 16, 1});
  const GemmProblem p = x.validate().problem;
  EXPECT_EQ(p.batch_stride_a, 0);
  EXPECT_EQ(p.lda, 48);
  EXPECT_EQ(p.batch_stride_b, 600);
  EXPECT_EQ(p.align_b, 8);  // 600 one-byte elements: 8-byte aligned products
  EXPECT_EQ(p.batch_stride_out, 400);
}

TEST(ValidateBatchedA8W8, Int8Fp32OutAndEmptyProblemsAccepted) {
  Args x;
  x.a.dtype = x.b.dtype = DType::kInt8;
  x.out.dtype = x.bias.dtype = DType::kFloat32;
  const GemmProblem p = x.validate().problem;
  EXPECT_EQ(p.a_type, DType::kInt8);
  EXPECT_EQ(p.out_type, DType::kFloat32);
  Args empty;
  empty.with_bias = false;
  empty.a = view(nullptr, DType::kFloat8E4M3, {0, 24, 32});
  empty.b = view(nullptr, DType::kFloat8E4M3, {0, 16, 32});
  empty.out = view(nullptr, DType::kBFloat16, {0, 24, 16});
  empty.a_scale = view(addr(0x500000), DType::kFloat32, {0, 24, 1});
  empty.b_scale = view(addr(0x600000), DType::kFloat32, {1});
  EXPECT_EQ(empty.validate().problem.batch, 0);
  Args no_k;
  no_k.a = view(nullptr, DType::kFloat8E4M3, {4, 24, 0});
  no_k.b = view(nullptr, DType::kFloat8E4M3, {4, 16, 0});
  EXPECT_EQ(no_k.validate().problem.k, 0);
}

TEST(ValidateBatchedA8W8, OneProductHasDenseStrides) {
  // With B = 1 no batch stride is stepped: any value gives the problem of dense operands.
  Args x;
  x.a = view(x.a.data, x.a.dtype, {1, 24, 32}, {7, 32, 1});
  x.b = view(x.b.data, x.b.dtype, {1, 16, 32}, {0, 32, 1});
  x.out = view(x.out.data, x.out.dtype, {1, 24, 16}, {0, 16, 1});
  x.a_scale = view(x.a_scale.data, DType::kFloat32, {1, 24, 1}, {5, 1, 1});
  x.b_scale = view(x.b_scale.data, DType::kFloat32, {1, 16, 1}, {0, 1, 1});
  const GemmProblem p = x.validate().problem;
  EXPECT_EQ(p.batch_stride_a, 24 * 32);
  EXPECT_EQ(p.batch_stride_b, 16 * 32);
  EXPECT_EQ(p.batch_stride_out, 24 * 16);
  EXPECT_EQ(p.batch_stride_a_scale, 24);
  EXPECT_EQ(p.batch_stride_b_scale, 16);
}

}  // namespace
}  // namespace tgemm
