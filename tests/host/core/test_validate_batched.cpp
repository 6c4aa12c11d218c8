// validate_batched never dereferences the tensors, so fake, never-mapped addresses stand in for
// device pointers: a at 0x100000, b at 0x200000, out at 0x300000, bias at 0x400000.
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

// out[4,24,16] = a[4,24,32] @ b[4,32,16] (+ bias[16]), bf16, no transposes.
struct Args {
  TensorView a = view(addr(0x100000), DType::kBFloat16, {4, 24, 32});
  TensorView b = view(addr(0x200000), DType::kBFloat16, {4, 32, 16});
  TensorView out = view(addr(0x300000), DType::kBFloat16, {4, 24, 16});
  TensorView bias = view(addr(0x400000), DType::kBFloat16, {16});
  bool transpose_a = false;
  bool transpose_b = false;
  bool with_bias = true;

  GemmCall validate() const {
    return validate_batched(a, b, out, transpose_a, transpose_b, with_bias ? &bias : nullptr);
  }
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
         x.b = view(x.b.data, x.b.dtype, {1, 4, 32, 16});
       },
       {"b must have rank 3", "got 4"}},
      {"out_rank",
       [](Args& x) {
         x.out = view(x.out.data, x.out.dtype, {96, 16});
       },
       {"out must have rank 3", "got 2"}},
      {"bias_rank",
       [](Args& x) {
         x.bias = view(x.bias.data, x.bias.dtype, {1, 16});
       },
       {"bias must have rank 1"}},
      {"a_null", [](Args& x) { x.a.data = nullptr; }, {"a.data must not be null", "[4, 24, 32]"}},
      {"b_null", [](Args& x) { x.b.data = nullptr; }, {"b.data must not be null"}},
      {"a_fp32",
       [](Args& x) { x.a.dtype = DType::kFloat32; },
       {"a.dtype must be torch.bfloat16 or torch.float16", "got torch.float32"}},
      {"a_fp8",
       [](Args& x) { x.a.dtype = x.b.dtype = DType::kFloat8E4M3; },
       {"a.dtype must be torch.bfloat16 or torch.float16", "got torch.float8_e4m3fn"}},
      {"b_dtype",
       [](Args& x) { x.b.dtype = DType::kFloat16; },
       {"b.dtype must equal a.dtype (torch.bfloat16)", "got torch.float16"}},
      {"out_int8",
       [](Args& x) { x.out.dtype = DType::kInt8; },
       {"out.dtype must be torch.bfloat16, torch.float16 or torch.float32", "got torch.int8"}},
      {"bias_dtype",
       [](Args& x) { x.bias.dtype = DType::kFloat16; },
       {"bias.dtype must equal a.dtype (torch.bfloat16) or out.dtype", "got torch.float16"}},
      {"batch_mismatch",
       [](Args& x) {
         x.b = view(x.b.data, x.b.dtype, {3, 32, 16});
       },
       {"b.size(0) must equal a.size(0) (B)", "got 3 vs 4"}},
      {"k_mismatch",
       [](Args& x) {
         x.b = view(x.b.data, x.b.dtype, {4, 31, 16});
       },
       {"K of b [B, K, N] (transpose_b=false) must equal K of a [B, M, K] (transpose_a=false)", "got 31 vs 32"}},
      {"k_mismatch_transposed_b",
       [](Args& x) { x.transpose_b = true; },
       {"K of b [B, N, K] (transpose_b=true)", "got 16 vs 32"}},
      {"k_mismatch_transposed_a",
       [](Args& x) { x.transpose_a = true; },
       {"K of a [B, K, M] (transpose_a=true)", "got 32 vs 24"}},
      {"out_shape",
       [](Args& x) {
         x.out = view(x.out.data, x.out.dtype, {4, 16, 24});
       },
       {"out must have shape [B, M, N] = [4, 24, 16]", "got [4, 16, 24]"}},
      {"bias_size",
       [](Args& x) { x.bias = view(x.bias.data, x.bias.dtype, {24}); },
       {"bias.size(0) must equal N (16)", "got 24"}},
      {"a_transposed_view",
       // a [4, 24, 32] contiguous passed as its transpose [4, 32, 24] with transpose_a: stride(2) is 32.
       [](Args& x) {
         x.transpose_a = true;
         x.a = view(x.a.data, x.a.dtype, {4, 32, 24}, {768, 1, 32});
       },
       {"a.stride(2) must be 1", "[B, K, M] (transpose_a=true)", "not a transposed view", "(768, 1, 32)"}},
      {"b_transposed_view",
       [](Args& x) {
         x.transpose_b = true;
         x.b = view(x.b.data, x.b.dtype, {4, 16, 32}, {512, 1, 16});
       },
       {"b.stride(2) must be 1", "[B, N, K] (transpose_b=true)", "(512, 1, 16)"}},
      {"a_rows_overlap",
       [](Args& x) {
         x.a = view(x.a.data, x.a.dtype, {4, 24, 32}, {768, 16, 1});
       },
       {"a.stride(1) must be >= a.size(2) (32)", "(768, 16, 1)"}},
      {"b_rows_overlap_transposed",
       [](Args& x) {
         x.transpose_b = true;
         x.b = view(x.b.data, x.b.dtype, {4, 16, 32}, {512, 31, 1});
       },
       {"b.stride(1) must be >= b.size(2) (32)", "transpose_b=true"}},
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
      {"out_column_stride",
       [](Args& x) {
         x.out = view(x.out.data, x.out.dtype, {4, 24, 16}, {768, 32, 2});
       },
       {"out.stride(2) must be 1", "(768, 32, 2)"}},
      {"negative_stride",
       [](Args& x) {
         x.a = view(x.a.data, x.a.dtype, {4, 24, 32}, {-768, 32, 1});
       },
       {"a.stride(0) must be >= 0", "got -768"}},
      {"broadcast_a_aliases_out",
       // a broadcast over the batch (stride 0) whose one matrix lies inside out's first product.
       [](Args& x) {
         x.a = view(x.out.data, x.a.dtype, {4, 24, 32}, {0, 32, 1});
         x.out = view(addr(0x300000 + 2 * 16), x.out.dtype, {4, 24, 16}, {384, 16, 1});
       },
       {"out must not overlap a"}},
      {"b_aliases_out", [](Args& x) { x.b.data = addr(0x300000 + 4 * 24 * 16 * 2 - 2); }, {"out must not overlap b"}},
      {"bias_aliases_out", [](Args& x) { x.bias.data = addr(0x300000 + 64); }, {"out must not overlap bias"}},
      {"a_misaligned", [](Args& x) { x.a.data = addr(0x100001); }, {"a.data must be aligned to its element size"}},
  };
  return cases;
}

class BatchedBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BatchedBadInput, ThrowsNamingArgumentAndValue) { test::expect_bad_input_error(GetParam(), "batched_gemm"); }

INSTANTIATE_TEST_SUITE_P(Validate, BatchedBadInput, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(ValidateBatched, ProblemOfDenseOperands) {
  const GemmCall call = Args{}.validate();
  const GemmProblem& p = call.problem;
  EXPECT_EQ(p.family, OpFamily::kBatched);
  EXPECT_EQ(p.batch, 4);
  EXPECT_EQ(p.m, 24);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 32);
  EXPECT_FALSE(p.transpose_a);
  EXPECT_FALSE(p.transpose_b);
  EXPECT_EQ(p.lda, 32);
  EXPECT_EQ(p.ldb, 16);
  EXPECT_EQ(p.ldo, 16);
  EXPECT_EQ(p.batch_stride_a, 24 * 32);
  EXPECT_EQ(p.batch_stride_b, 32 * 16);
  EXPECT_EQ(p.batch_stride_out, 24 * 16);
  EXPECT_TRUE(p.has_bias());
  EXPECT_EQ(call.args.a, addr(0x100000));
  EXPECT_EQ(call.args.b, addr(0x200000));
  EXPECT_EQ(call.args.bias, addr(0x400000));
}

TEST(ValidateBatched, TransposedLayoutsTakeTheirDimsAndRowStrides) {
  Args x;
  x.transpose_a = x.transpose_b = true;
  x.a = view(x.a.data, x.a.dtype, {4, 32, 24});  // [B, K, M]
  x.b = view(x.b.data, x.b.dtype, {4, 16, 32});  // [B, N, K]
  const GemmProblem p = x.validate().problem;
  EXPECT_EQ(p.m, 24);
  EXPECT_EQ(p.n, 16);
  EXPECT_EQ(p.k, 32);
  EXPECT_TRUE(p.transpose_a);
  EXPECT_TRUE(p.transpose_b);
  EXPECT_EQ(p.lda, 24);
  EXPECT_EQ(p.ldb, 32);
}

TEST(ValidateBatched, BroadcastPaddedAndInterleavedStridesAccepted) {
  Args x;
  x.a = view(x.a.data, x.a.dtype, {4, 24, 32}, {0, 40, 1});    // one padded a for every product
  x.b = view(x.b.data, x.b.dtype, {4, 32, 16}, {600, 16, 1});  // padded batches
  // out [4, 24, 16] viewed from a [24, 4, 16] buffer: batches interleave row by row.
  x.out = view(x.out.data, x.out.dtype, {4, 24, 16}, {16, 64, 1});
  const GemmProblem p = x.validate().problem;
  EXPECT_EQ(p.batch_stride_a, 0);
  EXPECT_EQ(p.lda, 40);
  EXPECT_EQ(p.batch_stride_b, 600);
  EXPECT_EQ(p.batch_stride_out, 16);
  EXPECT_EQ(p.ldo, 64);
}

TEST(ValidateBatched, AlignmentHoldsForEveryProduct) {
  // 16-byte aligned bases; a's batch stride of 24 * 33 = 792 elements (1584 bytes) keeps 16 bytes,
  // b's of 33 * 16 + 1 = 529 elements (1058 bytes) only 2, out's of 24 * 16 + 4 (776 bytes) 8.
  Args x;
  x.a = view(x.a.data, x.a.dtype, {4, 24, 33});
  x.b = view(x.b.data, x.b.dtype, {4, 33, 16}, {529, 16, 1});
  x.out = view(x.out.data, x.out.dtype, {4, 24, 16}, {388, 16, 1});
  const GemmProblem p = x.validate().problem;
  EXPECT_EQ(p.align_a, 16);
  EXPECT_EQ(p.align_b, 2);
  EXPECT_EQ(p.align_out, 8);
  // One product: the stride is never stepped, so only the base counts.
  Args one;
  one.with_bias = false;
  one.a = view(one.a.data, one.a.dtype, {1, 24, 33});
  one.b = view(one.b.data, one.b.dtype, {1, 33, 16}, {529, 16, 1});
  one.out = view(one.out.data, one.out.dtype, {1, 24, 16});
  const GemmProblem q = one.validate().problem;
  EXPECT_EQ(q.align_b, 16);
}

TEST(ValidateBatched, OneProductHasDenseBatchStrides) {
  // With B = 1 the batch stride is never stepped: any value gives the same problem (one cached
  // resolution, one table key).
  Args x;
  x.with_bias = false;
  x.a = view(x.a.data, x.a.dtype, {1, 24, 32}, {7, 32, 1});
  x.b = view(x.b.data, x.b.dtype, {1, 32, 16}, {0, 16, 1});
  x.out = view(x.out.data, x.out.dtype, {1, 24, 16}, {0, 16, 1});
  const GemmProblem p = x.validate().problem;
  EXPECT_EQ(p.batch_stride_a, 24 * 32);
  EXPECT_EQ(p.batch_stride_b, 32 * 16);
  EXPECT_EQ(p.batch_stride_out, 24 * 16);
}

TEST(ValidateBatched, Fp32OutFp16InputsAndEmptyProblemsAccepted) {
  Args x;
  x.out.dtype = DType::kFloat32;
  x.bias.dtype = DType::kFloat32;
  EXPECT_EQ(x.validate().problem.out_type, DType::kFloat32);
  Args half;
  half.a.dtype = half.b.dtype = half.out.dtype = half.bias.dtype = DType::kFloat16;
  EXPECT_EQ(half.validate().problem.a_type, DType::kFloat16);
  Args empty;
  empty.with_bias = false;
  empty.a = view(nullptr, DType::kBFloat16, {0, 24, 32});
  empty.b = view(nullptr, DType::kBFloat16, {0, 32, 16});
  empty.out = view(nullptr, DType::kBFloat16, {0, 24, 16});
  EXPECT_EQ(empty.validate().problem.batch, 0);
  Args no_k;
  no_k.a = view(nullptr, DType::kBFloat16, {4, 24, 0});
  no_k.b = view(nullptr, DType::kBFloat16, {4, 0, 16});
  EXPECT_EQ(no_k.validate().problem.k, 0);
  // M = 0 with torch's strides for [3, 0, 16], (0, 16, 1): no element, so none overlaps.
  Args no_m;
  no_m.a = view(nullptr, DType::kBFloat16, {3, 0, 32}, {0, 32, 1});
  no_m.b = view(addr(0x200000), DType::kBFloat16, {3, 32, 16});
  no_m.out = view(nullptr, DType::kBFloat16, {3, 0, 16}, {0, 16, 1});
  EXPECT_EQ(no_m.validate().problem.m, 0);
}

}  // namespace
}  // namespace tgemm
