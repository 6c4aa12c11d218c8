// The quantization entry points (include/tgemm/quant.h) against a host reference of the same
// arithmetic, code for code and scale for scale (bit-exact: amax is exact, the scale one fp32
// division, q one fp32 multiply and one round-to-nearest-even conversion on both sides). Random
// bf16/fp16 data with a different magnitude per row, zero rows and blocks (scale 1), odd shapes
// (M = 1, K = 1, 129, 4095, rows longer than the per-token kernel's register cache), padded and
// misaligned rows (the element-load paths), both 1x128 scale layouts; q poisoned (0xff, a NaN in
// e4m3fn; 0x80 in int8, a code the quantizer never writes) and scales NaN-poisoned first, row
// padding checked untouched. Then the errors of bad arguments.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/gpu_test_util.h"
#include "tests/gpu/quant_checks.h"
#include "tgemm/error.h"
#include "tgemm/quant.h"

namespace tgemm::test {
namespace {

// Shapes every grouping runs: M = 1, K = 1, K = 129 and 4095 (partial vectors and blocks), K a
// multiple of 128 and of 8, M past a 128-row block.
const std::int64_t kShapes[][2] = {{1, 1},     {1, 128},  {1, 129},    {3, 4095},  {7, 4096},
                                   {16, 7168}, {33, 129}, {130, 1000}, {257, 384}, {1, 16384}};

void expect_all_match(const std::vector<QuantCase>& cases) {
  int failed = 0;
  std::uint64_t seed = 1;
  for (const QuantCase& c : cases) {
    const std::string err = check_case(c, seed++);
    if (!err.empty()) {
      ++failed;
      ADD_FAILURE() << err;
    }
  }
  EXPECT_EQ(failed, 0) << "of " << cases.size() << " cases";
}

std::vector<QuantCase> cases_for(Grouping g, DType q_type = DType::kFloat8E4M3) {
  std::vector<QuantCase> cases;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (const auto& s : kShapes) cases.push_back(quant_case(g, s[0], s[1], in, q_type));
    // Padded rows of x and q (element paths where misaligned), an odd x offset, zero rows.
    QuantCase padded = quant_case(g, 37, 520, in, q_type);
    padded.ldx_pad = 8;
    padded.ldq_pad = 5;
    cases.push_back(padded);
    QuantCase odd = quant_case(g, 19, 1024, in, q_type);
    odd.x_offset = 1;
    odd.ldx_pad = 3;
    cases.push_back(odd);
    QuantCase zeros = quant_case(g, 140, 300, in, q_type);
    zeros.zero_rows = true;
    cases.push_back(zeros);
  }
  return cases;
}

TEST(Quant, PerTensorMatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kTensor));
}

TEST(Quant, PerTensorStaticMatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kTensorStatic));
}

TEST(Quant, PerTokenFp8MatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  std::vector<QuantCase> cases = cases_for(Grouping::kToken);
  // Rows longer than the register cache (256 threads x 4 vectors x 8): the re-read path.
  cases.push_back(quant_case(Grouping::kToken, 2, 20000));
  expect_all_match(cases);
}

TEST(Quant, PerTokenInt8MatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  std::vector<QuantCase> cases = cases_for(Grouping::kToken, DType::kInt8);
  cases.push_back(quant_case(Grouping::kToken, 2, 20000, DType::kFloat16, DType::kInt8));
  expect_all_match(cases);
}

TEST(Quant, Block1x128RowMajorMatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kBlock1x128));
}

TEST(Quant, Block1x128MnMajorMatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kBlock1x128MnMajor));
}

TEST(Quant, Block128x128MatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kBlock128x128));
}

TEST(Quant, ZeroInputGivesScaleOneAndZeroCodes) {
  TGEMM_REQUIRE_GPU();
  for (Grouping g : {Grouping::kTensor, Grouping::kToken, Grouping::kBlock1x128, Grouping::kBlock128x128}) {
    QuantCase c = quant_case(g, 130, 260);
    DeviceBuffer x(static_cast<std::size_t>(c.m * c.k) * 2), q(static_cast<std::size_t>(c.m * c.k));
    const ScaleLayout sl = scale_layout(c);
    DeviceBuffer s(static_cast<std::size_t>(sl.elements) * sizeof(float));
    cudaMemset(x.data(), 0, x.bytes());
    cudaMemset(q.data(), 0xff, q.bytes());
    cudaMemset(s.data(), 0xff, s.bytes());
    TensorView xv = TensorView::contiguous(x.data(), DType::kBFloat16, {c.m, c.k});
    TensorView qv = TensorView::contiguous(q.data(), DType::kFloat8E4M3, {c.m, c.k});
    TensorView sv = g == Grouping::kTensor ? TensorView::contiguous(s.data(), DType::kFloat32, {1})
                    : g == Grouping::kToken
                        ? TensorView::contiguous(s.data(), DType::kFloat32, {c.m, 1})
                        : TensorView::strided(s.data(), DType::kFloat32, {sl.rows, sl.cols}, {sl.s0, sl.s1});
    run_quant(c, xv, qv, sv, nullptr);
    std::vector<std::uint8_t> hq(q.bytes());
    std::vector<float> hs(static_cast<std::size_t>(sl.elements));
    copy_to_host(hq.data(), q.data(), q.bytes());
    copy_to_host(hs.data(), s.data(), s.bytes());
    EXPECT_TRUE(std::all_of(hq.begin(), hq.end(), [](std::uint8_t b) { return b == 0; })) << grouping_name(g);
    for (std::int64_t i = 0; i < sl.rows * sl.cols; ++i) {
      EXPECT_EQ(hs[static_cast<std::size_t>(scale_index(i, sl))], 1.0f) << grouping_name(g) << " scale " << i;
    }
  }
}

TEST(Quant, EmptyInputs) {
  TGEMM_REQUIRE_GPU();
  // M = 0 launches nothing; an empty tensor's per-tensor scale is 1; K = 0 rows get scale 1.
  expect_all_match({quant_case(Grouping::kTensor, 0, 64), quant_case(Grouping::kToken, 0, 64),
                    quant_case(Grouping::kBlock1x128, 0, 64), quant_case(Grouping::kBlock128x128, 0, 64),
                    quant_case(Grouping::kToken, 5, 0), quant_case(Grouping::kTensor, 4, 0)});
}

TEST(Quant, BadArgumentsRaiseClearErrorsAndLaunchNothing) {
  TGEMM_REQUIRE_GPU();
  DeviceBuffer x(64 * 256 * 2), q(64 * 256), s(64 * 2 * sizeof(float));
  const TensorView xv = TensorView::contiguous(x.data(), DType::kBFloat16, {64, 256});
  const TensorView qv = TensorView::contiguous(q.data(), DType::kFloat8E4M3, {64, 256});
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const TensorView s_tok = TensorView::contiguous(s.data(), DType::kFloat32, {64, 1});
  const TensorView q_e5m2 = TensorView::contiguous(q.data(), DType::kFloat8E5M2, {64, 256});
  expect_error([&] { quant_per_token(xv, q_e5m2, s_tok); }, "quant_per_token: q.dtype torch.float8_e5m2");
  const TensorView q_int8 = TensorView::contiguous(q.data(), DType::kInt8, {64, 256});
  const TensorView s_blk = TensorView::contiguous(s.data(), DType::kFloat32, {64, 2});
  expect_error([&] { quant_fp8_per_block_1x128(xv, q_int8, s_blk); },
               "quant_fp8_per_block_1x128: q.dtype must be torch.float8_e4m3fn, got torch.int8");
  const TensorView s_wrong = TensorView::contiguous(s.data(), DType::kFloat32, {64, 3});
  expect_error([&] { quant_fp8_per_block_1x128(xv, qv, s_wrong); }, "scale must be [M, ceil(K / 128)] = [64, 2]");
  const TensorView s_col = TensorView::strided(s.data(), DType::kFloat32, {64, 2}, {1, 60});  // ld < M
  expect_error([&] { quant_fp8_per_block_1x128(xv, qv, s_col); }, "MN-major (strides (1, ld), ld >= 64)");
  expect_error([&] { quant_fp8_per_tensor(xv, qv, s_tok); }, "quant_fp8_per_tensor: scale must hold one element");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tgemm::test
