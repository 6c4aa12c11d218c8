// validate_quant (src/quant/quant_validate.h) never dereferences the tensors: fake, never-mapped
// addresses stand in for device pointers (x at 0x100000, q at 0x200000, scale at 0x300000).
// What each grouping accepts (shapes, both 1x128 scale layouts, padded rows, empties) and the
// message of each refusal, naming the op, the argument, the expectation and the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "quant/quant_validate.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"
#include "tgemm/quant.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

TensorView x_of(std::vector<std::int64_t> sizes, DType t = DType::kBFloat16) { return view(addr(0x100000), t, sizes); }
TensorView q_of(std::vector<std::int64_t> sizes, DType t = DType::kFloat8E4M3) {
  return view(addr(0x200000), t, sizes);
}
TensorView s_of(std::vector<std::int64_t> sizes, std::vector<std::int64_t> strides = {}) {
  return view(addr(0x300000), DType::kFloat32, sizes, strides);
}

std::string error_of(const TensorView& x, const TensorView& q, const TensorView& s, QuantGrouping g,
                     const char* op = "quant_op") {
  try {
    validate_quant(x, q, s, g, op);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ValidateQuant, PerTokenFlattensLeadingDims) {
  QuantCall c = validate_quant(x_of({2, 3, 200}), q_of({2, 3, 200}), s_of({2, 3, 1}), QuantGrouping::kPerToken, "op");
  EXPECT_EQ(c.m, 6);
  EXPECT_EQ(c.k, 200);
  EXPECT_EQ(c.ldx, 200);
  EXPECT_EQ(c.ldq, 200);
  EXPECT_EQ(c.scale_row_stride, 1);
  EXPECT_EQ(c.q_type, DType::kFloat8E4M3);
  // int8 codes, a [M] scale.
  c = validate_quant(x_of({6, 200}), q_of({6, 200}, DType::kInt8), s_of({6}), QuantGrouping::kPerToken, "op");
  EXPECT_EQ(c.q_type, DType::kInt8);
}

TEST(ValidateQuant, PaddedRowsKeepTheirStrides) {
  const TensorView x = view(addr(0x100000), DType::kFloat16, {5, 129}, {136, 1});
  const TensorView q = view(addr(0x200000), DType::kFloat8E4M3, {5, 129}, {130, 1});
  const QuantCall c = validate_quant(x, q, s_of({1}), QuantGrouping::kPerTensor, "op");
  EXPECT_EQ(c.ldx, 136);
  EXPECT_EQ(c.ldq, 130);
}

TEST(ValidateQuant, Block1x128AcceptsBothLayouts) {
  // K = 300: 3 blocks, the last one partial.
  QuantCall c = validate_quant(x_of({10, 300}), q_of({10, 300}), s_of({10, 3}), QuantGrouping::kBlock1x128, "op");
  EXPECT_EQ(c.scale_row_stride, 3);
  EXPECT_EQ(c.scale_col_stride, 1);
  const std::int64_t ld = mn_major_tma_aligned_ld(10);
  EXPECT_EQ(ld, 12);
  c = validate_quant(x_of({10, 300}), q_of({10, 300}), s_of({10, 3}, {1, ld}), QuantGrouping::kBlock1x128, "op");
  EXPECT_EQ(c.scale_row_stride, 1);
  EXPECT_EQ(c.scale_col_stride, 12);
}

TEST(ValidateQuant, Block1x128RefusesOtherLayouts) {
  // Column stride below M: columns overlap.
  EXPECT_EQ(error_of(x_of({10, 300}), q_of({10, 300}), s_of({10, 3}, {1, 9}), QuantGrouping::kBlock1x128),
            "quant_op: scale must be row-major (strides (ld, 1), ld >= 3) or MN-major (strides (1, ld), "
            "ld >= 10), got strides (1, 9)");
  EXPECT_EQ(error_of(x_of({10, 300}), q_of({10, 300}), s_of({10, 2}), QuantGrouping::kBlock1x128),
            "quant_op: scale must be [M, ceil(K / 128)] = [10, 3], got [10, 2]");
}

TEST(ValidateQuant, Block128x128ScaleIsRowMajorOverBlocks) {
  const QuantCall c =
      validate_quant(x_of({257, 129}), q_of({257, 129}), s_of({3, 2}), QuantGrouping::kBlock128x128, "op");
  EXPECT_EQ(c.m, 257);
  EXPECT_EQ(c.scale_row_stride, 2);
  EXPECT_EQ(error_of(x_of({257, 129}), q_of({257, 129}), s_of({3, 2}, {1, 4}), QuantGrouping::kBlock128x128),
            "quant_op: scale must be row-major (strides (ld, 1), ld >= 2), got strides (1, 4)");
  EXPECT_EQ(error_of(x_of({2, 257, 129}), q_of({2, 257, 129}), s_of({3, 2}), QuantGrouping::kBlock128x128),
            "quant_op: w must be 2-D [N, K], got rank 3");
}

TEST(ValidateQuant, DtypesAreNamed) {
  EXPECT_EQ(error_of(x_of({4, 8}, DType::kFloat32), q_of({4, 8}), s_of({4, 1}), QuantGrouping::kPerToken),
            "quant_op: x.dtype must be torch.bfloat16 or torch.float16, got torch.float32");
  EXPECT_EQ(error_of(x_of({4, 8}), q_of({4, 8}, DType::kFloat8E5M2), s_of({4, 1}), QuantGrouping::kPerToken),
            "quant_op: q.dtype torch.float8_e5m2 is not supported: quantization writes torch.float8_e4m3fn or "
            "torch.int8");
  EXPECT_EQ(error_of(x_of({4, 8}), q_of({4, 8}, DType::kInt8), s_of({1}), QuantGrouping::kPerTensor),
            "quant_op: q.dtype must be torch.float8_e4m3fn, got torch.int8");
  const TensorView s_bf16 = view(addr(0x300000), DType::kBFloat16, {4, 1});
  EXPECT_EQ(error_of(x_of({4, 8}), q_of({4, 8}), s_bf16, QuantGrouping::kPerToken),
            "quant_op: scale.dtype must be torch.float32, got torch.bfloat16");
}

TEST(ValidateQuant, ShapesAndLayoutsAreNamed) {
  EXPECT_EQ(error_of(x_of({8}), q_of({8}), s_of({1}), QuantGrouping::kPerTensor),
            "quant_op: x must be of rank 2 or more ([..., K]), got rank 1");
  EXPECT_EQ(error_of(x_of({4, 8}), q_of({4, 9}), s_of({1}), QuantGrouping::kPerTensor),
            "quant_op: q must have x's sizes [4, 8], got [4, 9]");
  EXPECT_EQ(error_of(x_of({4, 8}), q_of({4, 8}), s_of({2}), QuantGrouping::kPerTensor),
            "quant_op: scale must hold one element, got [2]");
  EXPECT_EQ(error_of(x_of({4, 8}), q_of({4, 8}), s_of({5, 1}), QuantGrouping::kPerToken),
            "quant_op: scale must hold one element per row (M = 4), got [5, 1]");
  EXPECT_EQ(error_of(x_of({4, 8}), q_of({4, 8}), s_of({4, 1}, {2, 1}), QuantGrouping::kPerToken),
            "quant_op: scale must be contiguous, got sizes [4, 1] strides (2, 1)");
  const TensorView x_cols = view(addr(0x100000), DType::kBFloat16, {4, 8}, {1, 4});
  EXPECT_EQ(error_of(x_cols, q_of({4, 8}), s_of({1}), QuantGrouping::kPerTensor),
            "quant_op: x must have contiguous rows (stride(-1) == 1), got strides (1, 4)");
  const TensorView x_overlap = view(addr(0x100000), DType::kBFloat16, {4, 8}, {4, 1});
  EXPECT_EQ(error_of(x_overlap, q_of({4, 8}), s_of({1}), QuantGrouping::kPerTensor),
            "quant_op: x rows overlap: the row stride 4 is below K = 8 (strides (4, 1))");
}

TEST(ValidateQuant, PointersAlignmentAndOverlap) {
  const TensorView x_null = view(nullptr, DType::kBFloat16, {4, 8});
  EXPECT_EQ(error_of(x_null, q_of({4, 8}), s_of({1}), QuantGrouping::kPerTensor),
            "quant_op: x.data must not be null (x is [4, 8])");
  const TensorView x_odd = view(addr(0x100001), DType::kBFloat16, {4, 8});
  EXPECT_EQ(error_of(x_odd, q_of({4, 8}), s_of({1}), QuantGrouping::kPerTensor),
            "quant_op: x.data must be aligned to its element size (2 bytes), got address 0x100001");
  // q inside x's bytes.
  const TensorView q_in_x = view(addr(0x100010), DType::kFloat8E4M3, {4, 8});
  const std::string e = error_of(x_of({4, 8}), q_in_x, s_of({1}), QuantGrouping::kPerTensor);
  EXPECT_EQ(e.rfind("quant_op: x and q must not overlap: x spans [0x100000, +64 bytes), q spans [0x100010", 0), 0u)
      << e;
}

TEST(ValidateQuant, EmptyInputsAreAccepted) {
  QuantCall c = validate_quant(x_of({0, 64}), q_of({0, 64}), s_of({0, 1}), QuantGrouping::kPerToken, "op");
  EXPECT_EQ(c.m, 0);
  c = validate_quant(x_of({0, 64}), q_of({0, 64}), s_of({0, 1}), QuantGrouping::kBlock1x128, "op");
  EXPECT_EQ(c.m, 0);
  c = validate_quant(x_of({5, 0}), q_of({5, 0}), s_of({5, 0}), QuantGrouping::kBlock1x128, "op");
  EXPECT_EQ(c.k, 0);
  c = validate_quant(x_of({5, 0}), q_of({5, 0}), s_of({1}), QuantGrouping::kPerTensor, "op");
  EXPECT_EQ(c.k, 0);
}

}  // namespace
}  // namespace tgemm
