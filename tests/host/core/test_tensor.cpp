// include/tgemm/tensor.h, implemented in src/core/tensor.cpp.
#include <gtest/gtest.h>

#include <string>

#include "tgemm/error.h"
#include "tgemm/tensor.h"

namespace tgemm {
namespace {

constexpr DType kAll[] = {DType::kBFloat16,   DType::kFloat16, DType::kFloat32, DType::kFloat8E4M3,
                          DType::kFloat8E5M2, DType::kInt8,    DType::kInt32,   DType::kUInt8};

TEST(DTypeNames, TorchAndShortNames) {
  EXPECT_EQ(dtype_name(DType::kBFloat16), "torch.bfloat16");
  EXPECT_EQ(dtype_name(DType::kFloat16), "torch.float16");
  EXPECT_EQ(dtype_name(DType::kFloat32), "torch.float32");
  EXPECT_EQ(dtype_name(DType::kFloat8E4M3), "torch.float8_e4m3fn");
  EXPECT_EQ(dtype_name(DType::kFloat8E5M2), "torch.float8_e5m2");
  EXPECT_EQ(dtype_name(DType::kInt8), "torch.int8");
  EXPECT_EQ(dtype_name(DType::kInt32), "torch.int32");
  EXPECT_EQ(dtype_name(DType::kUInt8), "torch.uint8");
  EXPECT_EQ(dtype_short_name(DType::kBFloat16), "bf16");
  EXPECT_EQ(dtype_short_name(DType::kFloat16), "fp16");
  EXPECT_EQ(dtype_short_name(DType::kFloat32), "fp32");
}

TEST(DTypeNames, EveryNameRoundTrips) {
  for (DType t : kAll) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
    EXPECT_EQ(dtype_from_name(dtype_short_name(t)), t) << dtype_short_name(t);
    std::string bare(dtype_name(t).substr(6));  // without "torch."
    EXPECT_EQ(dtype_from_name(bare), t) << bare;
  }
}

TEST(DTypeNames, Aliases) {
  EXPECT_EQ(dtype_from_name("torch.half"), DType::kFloat16);
  EXPECT_EQ(dtype_from_name("half"), DType::kFloat16);
  EXPECT_EQ(dtype_from_name("torch.float"), DType::kFloat32);
  EXPECT_EQ(dtype_from_name("float"), DType::kFloat32);
  EXPECT_EQ(dtype_from_name("bfloat16"), DType::kBFloat16);
}

TEST(DTypeNames, UnknownNames) {
  for (const char* bad : {"", "torch.", "torch.float64", "double", "bfloat", "BF16", "torch.bf16",
                          "torch.bfloat16 "}) {
    EXPECT_EQ(dtype_from_name(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(DTypeSize, Bytes) {
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kFloat8E4M3), 1u);
  EXPECT_EQ(dtype_size(DType::kFloat8E5M2), 1u);
  EXPECT_EQ(dtype_size(DType::kInt8), 1u);
  EXPECT_EQ(dtype_size(DType::kInt32), 4u);
}

TEST(TensorView, ContiguousStridesAreRowMajor) {
  int dummy = 0;
  TensorView t = TensorView::contiguous(&dummy, DType::kFloat16, {2, 3, 4});
  EXPECT_EQ(t.data, &dummy);
  EXPECT_EQ(t.dtype, DType::kFloat16);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.sizes[0], 2);
  EXPECT_EQ(t.sizes[1], 3);
  EXPECT_EQ(t.sizes[2], 4);
  EXPECT_EQ(t.strides[0], 12);
  EXPECT_EQ(t.strides[1], 4);
  EXPECT_EQ(t.strides[2], 1);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.size(-3), 2);
  EXPECT_EQ(t.stride(-2), 4);
  EXPECT_EQ(t.numel(), 24);
}

TEST(TensorView, ContiguousWithZeroSizeKeepsUsableStrides) {
  // As torch does: a zero-size dimension counts as 1 for the strides of the dims before it.
  TensorView t = TensorView::contiguous(nullptr, DType::kBFloat16, {2, 0, 4});
  EXPECT_EQ(t.strides[0], 4);
  EXPECT_EQ(t.strides[1], 4);
  EXPECT_EQ(t.strides[2], 1);
  EXPECT_EQ(t.numel(), 0);
}

TEST(TensorView, NumelOfScalarAndVectors) {
  EXPECT_EQ(TensorView::contiguous(nullptr, DType::kBFloat16, {}).numel(), 1);
  EXPECT_EQ(TensorView::contiguous(nullptr, DType::kBFloat16, {7}).numel(), 7);
  EXPECT_EQ(TensorView::contiguous(nullptr, DType::kBFloat16, {1, 1, 1, 1, 1, 5}).numel(), 5);
  EXPECT_EQ(TensorView::contiguous(nullptr, DType::kBFloat16, {1 << 20, 1 << 20}).numel(),
            std::int64_t{1} << 40);
}

TEST(TensorView, StridedKeepsTheGivenStrides) {
  TensorView t = TensorView::strided(nullptr, DType::kBFloat16, {4, 8}, {16, 1});
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.stride(0), 16);
  EXPECT_EQ(t.stride(1), 1);
  EXPECT_EQ(t.numel(), 32);
}

TEST(TensorView, BadConstructionThrows) {
  EXPECT_THROW(TensorView::contiguous(nullptr, DType::kBFloat16, {1, 1, 1, 1, 1, 1, 1}), Error);
  EXPECT_THROW(TensorView::strided(nullptr, DType::kBFloat16, {4, 8}, {8}), Error);
}

}  // namespace
}  // namespace tgemm
