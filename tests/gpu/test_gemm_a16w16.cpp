// gemm_a16w16 through the public API (tables, walk, default) against the fp32 reference on
// >= 500 random problems: M 1..8192, N and K including non-multiples of 8 and 64, bf16 and fp16
// inputs, every output dtype, bias on and off, padded leading dimensions, NaN-poisoned outputs.
#include <cuda_runtime.h>

#include <cmath>
#include <random>

#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

TEST(GemmA16W16, RandomProblemsMatchReference) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(20261121);
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  int run = 0, failed = 0, odd_nk = 0;
  while (run < 520) {
    A16W16Case c;
    c.m = log_uniform(rng, 1, 8192);
    c.n = log_uniform(rng, 1, 8192);
    c.k = log_uniform(rng, 1, 8192);
    // Keep the reference affordable: at most ~2^36 multiply-adds per problem.
    if (static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k) > 6.9e10) continue;
    if (rng() % 4 == 0) c.n = (c.n / 64 + 1) * 64;  // some aligned problems too
    c.in = rng() % 2 ? DType::kBFloat16 : DType::kFloat16;
    c.out = outs[rng() % 3];
    c.bias = rng() % 2;
    c.bias_type = (c.bias && rng() % 3 == 0) ? c.out : c.in;
    if (rng() % 5 == 0) {
      c.lda_pad = static_cast<std::int64_t>(rng() % 9);
      c.ldo_pad = static_cast<std::int64_t>(rng() % 9);
    }
    odd_nk += (c.n % 8 != 0 || c.k % 8 != 0) ? 1 : 0;
    A16W16Data d = make_a16w16(c, static_cast<std::uint64_t>(run) + 1);
    std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
    if (!err.empty()) {
      ++failed;
      ADD_FAILURE() << err << " [solution " << describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options()).kernel_name << "]";
    }
    ++run;
  }
  EXPECT_EQ(failed, 0) << failed << " of " << run << " problems wrong";
  EXPECT_GE(odd_nk, 100) << "too few problems with N or K not a multiple of 8";
  RecordProperty("problems", run);
}

TEST(GemmA16W16, EdgeShapes) {
  TGEMM_REQUIRE_GPU();
  const std::int64_t shapes[][3] = {{1, 1, 1},    {1, 1, 8192}, {8192, 1, 7}, {1, 8192, 1}, {2, 3, 4097},
                                    {1, 4099, 4104}, {64, 577, 1000}, {33, 7, 8}, {4097, 65, 63}};
  int i = 0;
  for (const auto& s : shapes) {
    for (DType out : {DType::kBFloat16, DType::kFloat32}) {
      A16W16Case c;
      c.m = s[0];
      c.n = s[1];
      c.k = s[2];
      c.out = out;
      c.bias = (i++ % 2) == 0;
      A16W16Data d = make_a16w16(c, 900 + static_cast<std::uint64_t>(i));
      std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
      EXPECT_TRUE(err.empty()) << err;
    }
  }
}

TEST(GemmA16W16, MisalignedOperandsAreComputedCorrectly) {
  TGEMM_REQUIRE_GPU();
  // x, w and out start one element past a 16-byte boundary, with odd leading dimensions.
  // Kernels that need 16-byte alignment must decline these; whatever runs must be right.
  for (std::int64_t k : {15, 64, 1001}) {
    for (bool bias : {false, true}) {
      A16W16Case c;
      c.m = 9;
      c.n = 301;
      c.k = k + 1;
      c.lda_pad = 2;
      c.ldb_pad = 2;
      c.ldo_pad = 4;
      c.bias = bias;
      A16W16Data d = make_a16w16(c, 77 + static_cast<std::uint64_t>(k));
      const std::int64_t es = 2;
      TensorView xv = TensorView::strided(static_cast<char*>(d.x.data()) + es, c.in, {c.m - 1, k}, {c.k + 2, 1});
      TensorView wv = TensorView::strided(static_cast<char*>(d.w.data()) + es, c.in, {c.n - 1, k}, {c.k + 2, 1});
      TensorView ov = TensorView::strided(static_cast<char*>(d.out.data()) + es, c.out, {c.m - 1, c.n - 1},
                                          {c.n + 4, 1});
      TensorView bv = TensorView::contiguous(static_cast<char*>(d.bias.data()) + es, c.in, {c.n - 1});
      GemmOptions o;
      if (bias) o.bias = &bv;
      std::string err = run_and_compare_views(xv, wv, ov, o, [&] { gemm_a16w16(xv, wv, ov, o, nullptr); });
      EXPECT_TRUE(err.empty()) << err << " [" << describe_gemm_a16w16(xv, wv, ov, o).kernel_name << "]";
    }
  }
}

TEST(GemmA16W16, EmptyProblems) {
  TGEMM_REQUIRE_GPU();
  // K = 0: out = bias (or 0). M = 0 / N = 0: nothing to do, nothing launched.
  for (bool bias : {false, true}) {
    A16W16Case c;
    c.m = 5;
    c.n = 9;
    c.k = 0;
    c.bias = bias;
    A16W16Data d = make_a16w16(c, 3);
    std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
    EXPECT_TRUE(err.empty()) << err;
  }
  A16W16Case c;
  c.m = 0;
  c.n = 16;
  c.k = 16;
  A16W16Data d = make_a16w16(c, 4);
  EXPECT_NO_THROW(gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(GemmA16W16, Rank3InputIsFlattenedLikeLinear) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 2 * 3 * 5;
  c.n = 40;
  c.k = 24;
  A16W16Data d = make_a16w16(c, 11);
  TensorView x3 = TensorView::contiguous(d.x.data(), c.in, {2, 3, 5, c.k});
  TensorView o3 = TensorView::contiguous(d.out.data(), c.out, {2, 3, 5, c.n});
  std::string err = run_and_compare(d, [&] { gemm_a16w16(x3, d.wv, o3, {}, nullptr); });
  EXPECT_TRUE(err.empty()) << err;
}

TEST(GemmA16W16, RunsOnTheGivenStreamAndUnderGraphCapture) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 16;
  c.n = 256;
  c.k = 512;
  c.bias = true;
  A16W16Data d = make_a16w16(c, 21);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  auto stream = reinterpret_cast<Stream>(s);
  gemm_a16w16(d.xv, d.wv, d.ov, d.options(), stream);  // warm: resolve the shape
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  gemm_a16w16(d.xv, d.wv, d.ov, d.options(), stream);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  std::string err = run_and_compare(d, [&] {
    cudaGraphLaunch(exec, s);
    cudaStreamSynchronize(s);
  });
  EXPECT_TRUE(err.empty()) << err;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace tgemm::test
