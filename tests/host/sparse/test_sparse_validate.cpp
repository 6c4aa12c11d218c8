// Host tests of the sparse weights' structure checks (2:4 groups, CSR arrays) and of
// sparse_gemm's argument checks. The device views are fake, never-mapped addresses: nothing here
// dereferences them; the structure checks run on host arrays, as the weight builders pass them.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sparse/sparse_validate.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

// Runs f, expects a tgemm::Error whose message holds every part.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "no tgemm::Error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' in: " << msg;
  }
}

constexpr std::uint16_t kOne = 0x3f80;      // bf16 1.0
constexpr std::uint16_t kNegZero = 0x8000;  // -0.0: a zero

TEST(Sparse24Check, AcceptsTwoOfFourWithPaddedRows) {
  // 2 rows of K = 8 with a row stride of 12: the padding holds nonzeros that must be ignored.
  std::vector<std::uint16_t> w = {kOne, 0,    kOne,     0,    0,    0,    0, kOne, kOne, kOne, kOne, kOne,
                                  0,    kOne, kNegZero, kOne, kOne, kOne, 0, 0,    kOne, kOne, kOne, kOne};
  EXPECT_NO_THROW(check_2_4_host(w.data(), 2, 8, 12, "op"));
}

TEST(Sparse24Check, RejectsThreeNonzerosNamingRowAndGroup) {
  std::vector<std::uint16_t> w(2 * 8, 0);
  w[8 + 4] = w[8 + 5] = w[8 + 7] = kOne;  // row 1, columns [4, 8): 3 nonzeros
  expect_error([&] { check_2_4_host(w.data(), 2, 8, 8, "SparseWeight::compress_2_4"); },
               {"SparseWeight::compress_2_4: ", "not 2:4", "row 1", "[4, 8)", "3 nonzeros"});
}

TEST(Sparse24Check, ShapeRulesNameTheValue) {
  EXPECT_NO_THROW(check_2_4_shape(32, 64, DType::kFloat16, "op"));
  expect_error([] { check_2_4_shape(32, 72, DType::kBFloat16, "op"); }, {"K (columns)", "multiple of 16", "72"});
  expect_error([] { check_2_4_shape(24, 64, DType::kBFloat16, "op"); }, {"N (rows)", "24"});
  expect_error([] { check_2_4_shape(32, 64, DType::kFloat32, "op"); }, {"bf16, fp16 or float8_e4m3fn", "float32"});
}

TEST(CsrCheck, AcceptsEmptyRows) {
  // [4, 10]: rows 0 and 2 empty.
  std::vector<std::int32_t> offsets = {0, 0, 3, 3, 5}, cols = {0, 4, 9, 1, 2};
  EXPECT_NO_THROW(check_csr_host(offsets.data(), 4, cols.data(), 5, 10, "op"));
  std::vector<std::int32_t> none = {0, 0, 0};
  EXPECT_NO_THROW(check_csr_host(none.data(), 2, nullptr, 0, 10, "op"));
}

TEST(CsrCheck, RejectsUnsortedDuplicateAndOutOfRangeIndices) {
  std::vector<std::int32_t> offsets = {0, 2, 4};
  std::vector<std::int32_t> unsorted = {3, 1, 0, 1};
  expect_error([&] { check_csr_host(offsets.data(), 2, unsorted.data(), 4, 8, "SparseWeight::csr"); },
               {"SparseWeight::csr: ", "row 0", "sorted and distinct", "= 3", "= 1"});
  std::vector<std::int32_t> duplicate = {0, 1, 5, 5};
  expect_error([&] { check_csr_host(offsets.data(), 2, duplicate.data(), 4, 8, "op"); },
               {"row 1", "sorted and distinct", "col_indices[3] = 5"});
  std::vector<std::int32_t> high = {0, 8, 1, 2};
  expect_error([&] { check_csr_host(offsets.data(), 2, high.data(), 4, 8, "op"); },
               {"col_indices[1]", "[0, K = 8)", "got 8"});
  std::vector<std::int32_t> negative = {0, 1, -1, 2};
  expect_error([&] { check_csr_host(offsets.data(), 2, negative.data(), 4, 8, "op"); }, {"col_indices[2]", "-1"});
}

TEST(CsrCheck, RejectsBadOffsets) {
  std::vector<std::int32_t> cols = {0, 1, 2, 3};
  std::vector<std::int32_t> start = {1, 2, 4};
  expect_error([&] { check_csr_host(start.data(), 2, cols.data(), 4, 8, "op"); }, {"row_offsets[0] must be 0", "1"});
  std::vector<std::int32_t> end = {0, 2, 3};
  expect_error([&] { check_csr_host(end.data(), 2, cols.data(), 4, 8, "op"); }, {"must equal nnz", "got 3"});
  std::vector<std::int32_t> decreasing = {0, 3, 2, 4};
  expect_error([&] { check_csr_host(decreasing.data(), 3, cols.data(), 4, 8, "op"); },
               {"must not decrease", "row_offsets[1] = 3", "row_offsets[2] = 2"});
}

TEST(CsrCheck, ViewsNeedInt32IndicesAndMatchingSizes) {
  const TensorView offsets = view(addr(0x1000), DType::kInt32, {5});
  const TensorView cols = view(addr(0x2000), DType::kInt32, {7});
  const TensorView values = view(addr(0x3000), DType::kBFloat16, {7});
  EXPECT_EQ(check_csr_views(offsets, cols, values, 4, 16, "op"), 7);
  TensorView wide = cols;
  wide.dtype = DType::kFloat32;  // no int64 in DType: any other dtype is the same error
  expect_error([&] { check_csr_views(offsets, wide, values, 4, 16, "SparseWeight::csr"); },
               {"SparseWeight::csr: ", "col_indices must be torch.int32", "torch.float32"});
  expect_error([&] { check_csr_views(view(addr(0x1000), DType::kInt32, {4}), cols, values, 4, 16, "op"); },
               {"row_offsets.size(0) must be 5", "got 4"});
  expect_error([&] { check_csr_views(offsets, cols, view(addr(0x3000), DType::kBFloat16, {6}), 4, 16, "op"); },
               {"values.size(0) must be 7", "got 6"});
  expect_error([&] { check_csr_views(offsets, cols, view(addr(0x3000), DType::kFloat32, {7}), 4, 16, "op"); },
               {"values must be bf16 or fp16"});
}

TEST(Sparse24Check, Fp8GroupsAndShapes) {
  // e4m3 bits: 0x38 is 1.0, 0x80 is -0 (a zero), 0x7f is NaN (a nonzero).
  std::vector<std::uint8_t> w = {0x38, 0x80, 0x38, 0x00, 0x7f, 0x00, 0x00, 0x38};
  EXPECT_NO_THROW(check_2_4_host(w.data(), 1, 8, 8, "op"));
  w[5] = 0x7f;  // columns [4, 8) now hold 3 nonzeros
  expect_error([&] { check_2_4_host(w.data(), 1, 8, 8, "op"); }, {"not 2:4", "row 0", "[4, 8)", "3 nonzeros"});
  EXPECT_NO_THROW(check_2_4_shape(32, 64, DType::kFloat8E4M3, "op"));
  expect_error([] { check_2_4_shape(32, 48, DType::kFloat8E4M3, "op"); },
               {"K (columns)", "multiple of 32", "8-bit types", "48"});
  expect_error([] { check_2_4_shape(16, 64, DType::kFloat8E4M3, "op"); }, {"N (rows)", "multiple of 32", "16"});
  expect_error([] { check_2_4_shape(32, 64, DType::kInt8, "op"); }, {"bf16, fp16 or float8_e4m3fn", "int8"});
  EXPECT_EQ(sparse_2_4_multiple(DType::kFloat8E4M3), 32);
  EXPECT_EQ(sparse_2_4_multiple(DType::kBFloat16), 16);
}

TEST(BsrCheck, ViewsNeedDividingBlocksAndMatchingSizes) {
  // [64, 128] with 32 x 32 blocks: 2 block rows, 4 block columns, 3 blocks stored.
  const TensorView offsets = view(addr(0x1000), DType::kInt32, {3});
  const TensorView cols = view(addr(0x2000), DType::kInt32, {3});
  const TensorView values = view(addr(0x10000), DType::kBFloat16, {3, 32, 32});
  EXPECT_EQ(check_bsr_views(offsets, cols, values, 64, 128, 32, "op"), 3);
  expect_error([&] { check_bsr_views(offsets, cols, values, 64, 120, 32, "SparseWeight::bsr"); },
               {"SparseWeight::bsr: ", "block_size 32 must divide", "[64, 120]"});
  expect_error([&] { check_bsr_views(offsets, cols, values, 64, 128, 0, "op"); }, {"block_size must be positive"});
  expect_error([&] { check_bsr_views(view(addr(0x1000), DType::kInt32, {5}), cols, values, 64, 128, 32, "op"); },
               {"crow_indices.size(0) must be 3", "got 5"});
  expect_error(
      [&] {
        check_bsr_views(offsets, cols, view(addr(0x10000), DType::kBFloat16, {3, 16, 16}), 64, 128, 32, "op");
      },
      {"values must be [nnzb = 3, 32, 32]", "[3, 16, 16]"});
  expect_error(
      [&] {
        check_bsr_views(offsets, cols, view(addr(0x10000), DType::kBFloat16, {3, 32, 32}, {1024, 1, 32}), 64, 128, 32,
                        "op");
      },
      {"values must be contiguous"});
  TensorView wide = cols;
  wide.dtype = DType::kFloat32;
  expect_error([&] { check_bsr_views(offsets, wide, values, 64, 128, 32, "op"); }, {"col_indices must be torch.int32"});
  const SparseWeight w = SparseWeight::bsr_prechecked(offsets, cols, values, 64, 128, 32);
  EXPECT_EQ(w.pattern(), SparsePattern::kBlock);
  EXPECT_EQ(w.block_size(), 32);
  EXPECT_EQ(w.nnz(), 3 * 32 * 32);
  EXPECT_DOUBLE_EQ(w.density(), 3.0 / 8.0);
}

TEST(BsrCheck, BlockStructureIsCsrOverBlocks) {
  // 3 block rows (the middle one empty) over 4 block columns.
  std::vector<std::int32_t> offsets = {0, 2, 2, 3}, cols = {0, 3, 1};
  EXPECT_NO_THROW(check_csr_host(offsets.data(), 3, cols.data(), 3, 4, "SparseWeight::bsr"));
  std::vector<std::int32_t> out_of_range = {0, 4, 1};
  expect_error([&] { check_csr_host(offsets.data(), 3, out_of_range.data(), 3, 4, "SparseWeight::bsr"); },
               {"col_indices[1]", "got 4"});
  std::vector<std::int32_t> duplicate = {3, 3, 1};
  expect_error([&] { check_csr_host(offsets.data(), 3, duplicate.data(), 3, 4, "SparseWeight::bsr"); },
               {"sorted and distinct"});
}

TEST(SparseWeight, FromCompressedChecksTheBufferSize) {
  // [32, 64] bf16: the kept values alone are 32 * 32 * 2 = 2048 bytes.
  expect_error(
      [] { SparseWeight::from_compressed_2_4(view(addr(0x1000), DType::kInt8, {2047}), 32, 64, DType::kBFloat16); },
      {"SparseWeight::from_compressed_2_4: ", "2047 bytes", "2048"});
  const SparseWeight w =
      SparseWeight::from_compressed_2_4(view(addr(0x1000), DType::kInt8, {4096}), 32, 64, DType::kBFloat16);
  EXPECT_EQ(w.pattern(), SparsePattern::k2of4);
  // A uint8 buffer is a byte buffer too; a 16-bit one is not.
  EXPECT_EQ(SparseWeight::from_compressed_2_4(view(addr(0x1000), DType::kUInt8, {4096}), 32, 64, DType::kBFloat16).n(),
            32);
  expect_error(
      [] { SparseWeight::from_compressed_2_4(view(addr(0x1000), DType::kBFloat16, {2048}), 32, 64, DType::kBFloat16); },
      {"compressed must be a byte buffer", "torch.bfloat16"});
  EXPECT_EQ(w.n(), 32);
  EXPECT_EQ(w.k(), 64);
  EXPECT_FALSE(w.has_dense());
  SparseWeight d = w;
  expect_error(
      [&] {
        d.with_dense(view(addr(0x9000), DType::kBFloat16, {64, 32}));
      },
      {"SparseWeight::with_dense: ", "dense must be [32, 64]", "[64, 32]"});
  d.with_dense(view(addr(0x9000), DType::kBFloat16, {32, 64}));
  EXPECT_TRUE(d.has_dense());
}

// sparse_gemm's checks over a 2:4 [32, 64] bf16 weight: x [3, 5, 64] -> out [3, 5, 32].
struct GemmArgs {
  SparseWeight w =
      SparseWeight::from_compressed_2_4(view(addr(0x100000), DType::kInt8, {8192}), 32, 64, DType::kBFloat16);
  TensorView x = view(addr(0x200000), DType::kBFloat16, {3, 5, 64});
  TensorView out = view(addr(0x300000), DType::kBFloat16, {3, 5, 32});
  TensorView bias = view(addr(0x400000), DType::kBFloat16, {32});
  SparseGemmOptions options;
  bool cusparselt_built = true;
  SparseGemmCall validate() const { return validate_sparse_gemm(x, w, out, options, cusparselt_built); }
};

TEST(SparseGemmValidate, FlattensLeadingDimsAndResolvesTheDefault) {
  GemmArgs a;
  a.options.bias = &a.bias;
  const SparseGemmCall c = a.validate();
  EXPECT_EQ(c.m, 15);
  EXPECT_EQ(c.n, 32);
  EXPECT_EQ(c.k, 64);
  EXPECT_EQ(c.ldx, 64);
  EXPECT_EQ(c.ldo, 32);
  EXPECT_EQ(c.backend, SparseBackend::kCusparselt);
}

TEST(SparseGemmValidate, PaddedRowsKeepTheirStride) {
  GemmArgs a;
  a.x = view(addr(0x200000), DType::kBFloat16, {7, 64}, {80, 1});
  a.out = view(addr(0x300000), DType::kBFloat16, {7, 32}, {40, 1});
  const SparseGemmCall c = a.validate();
  EXPECT_EQ(c.ldx, 80);
  EXPECT_EQ(c.ldo, 40);
}

TEST(SparseGemmValidate, BadInputNamesArgumentAndValue) {
  struct Case {
    const char* name;
    std::function<void(GemmArgs&)> mutate;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"k",
       [](GemmArgs& a) {
         a.x = view(a.x.data, DType::kBFloat16, {15, 48});
       },
       {"x.size(-1)", "K (64)", "48"}},
      {"n",
       [](GemmArgs& a) {
         a.out = view(a.out.data, DType::kBFloat16, {3, 5, 16});
       },
       {"out.size(-1)", "16"}},
      {"lead",
       [](GemmArgs& a) {
         a.out = view(a.out.data, DType::kBFloat16, {5, 3, 32});
       },
       {"out.size(0)", "3"}},
      {"dtype", [](GemmArgs& a) { a.x.dtype = DType::kFloat16; }, {"x must have the weight's dtype", "float16"}},
      {"cols",
       [](GemmArgs& a) {
         a.x = view(a.x.data, DType::kBFloat16, {15, 64}, {1, 15});
         a.out = view(a.out.data, DType::kBFloat16, {15, 32});
       },
       {"x's rows must be contiguous", "(1, 15)"}},
      {"bias_dtype",
       [](GemmArgs& a) {
         a.bias.dtype = DType::kFloat32;
         a.options.bias = &a.bias;
       },
       {"bias must be torch.bfloat16", "torch.float32"}},
      {"bias_size",
       [](GemmArgs& a) {
         a.bias = view(a.bias.data, DType::kBFloat16, {31});
         a.options.bias = &a.bias;
       },
       {"bias.size(0) must be 32", "31"}},
      {"overlap", [](GemmArgs& a) { a.out.data = a.x.data; }, {"out must not overlap", "x"}},
      {"dense_missing", [](GemmArgs& a) { a.options.backend = SparseBackend::kDense; }, {"with_dense"}},
      {"fp8_weight",
       [](GemmArgs& a) {
         a.w =
             SparseWeight::from_compressed_2_4(view(addr(0x100000), DType::kInt8, {8192}), 32, 64, DType::kFloat8E4M3);
         a.x.dtype = DType::kFloat8E4M3;
         a.out.dtype = DType::kFloat8E4M3;
       },
       {"float8_e4m3fn", "sparse_gemm_a8w8"}},
      {"cusparse_on_24", [](GemmArgs& a) { a.options.backend = SparseBackend::kCusparse; }, {"CSR and block weights"}},
      {"not_built", [](GemmArgs& a) { a.cusparselt_built = false; }, {"no cuSPARSELt"}},
      {"split_k", [](GemmArgs& a) { a.options.split_k = -2; }, {"split_k", "-2"}},
      {"algorithm", [](GemmArgs& a) { a.options.algorithm = -5; }, {"options.algorithm", "-5"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GemmArgs a;
    c.mutate(a);
    expect_error([&] { a.validate(); },
                 [&] {
                   std::vector<std::string> parts = {"sparse_gemm: "};
                   parts.insert(parts.end(), c.parts.begin(), c.parts.end());
                   return parts;
                 }());
  }
}

TEST(SparseGemmValidate, DenseBackendRunsWithTheDenseCopy) {
  GemmArgs a;
  a.w.with_dense(view(addr(0x500000), DType::kBFloat16, {32, 64}));
  a.options.backend = SparseBackend::kDense;
  a.cusparselt_built = false;  // the dense path needs no cuSPARSELt
  EXPECT_EQ(a.validate().backend, SparseBackend::kDense);
}

}  // namespace
}  // namespace tgemm
