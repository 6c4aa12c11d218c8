// gemm_epilogue (cuda/elementwise.h): the epilogue pass each path of a GEMM runs, built from the
// problem and its arguments. Host-only: the builder is inline and touches no device.
#include <gtest/gtest.h>

#include "cuda/elementwise.h"

namespace tgemm {
namespace {

// A 48 x 96 problem with out's row stride 128 and c's 112, as validate_a16w16 would describe it.
GemmProblem problem(bool bias, bool use_c, Activation act) {
  GemmProblem p;
  p.m = 48;
  p.n = 96;
  p.k = 64;
  p.out_type = DType::kFloat16;
  p.ldo = 128;
  p.ldc = 112;
  p.epilogue = bias ? Epilogue::kBias : Epilogue::kNone;
  p.bias_type = DType::kFloat32;
  p.use_c = use_c;
  p.activation = act;
  return p;
}

struct Buffers {
  char out[16], c[16], bias[16];
  float staging[4];
  GemmArgs args(float beta) {
    GemmArgs a;
    a.out = out;
    a.c = c;
    a.bias = bias;
    a.alpha = 3.0f;
    a.beta = beta;
    return a;
  }
};

TEST(GemmEpilogue, EmptySumAddsBetaCAndBias) {
  Buffers b;
  const EpilogueParams e = gemm_epilogue(problem(true, true, Activation::kRelu), b.args(0.5f), ProductAt::kNowhere);
  EXPECT_EQ(e.out, b.out);
  EXPECT_EQ(e.out_type, DType::kFloat16);
  EXPECT_EQ(e.ldo, 128);
  EXPECT_EQ(e.src, nullptr);  // the product of K = 0 is 0
  EXPECT_EQ(e.c, b.c);
  EXPECT_EQ(e.ldc, 112);
  EXPECT_EQ(e.beta, 0.5f);
  EXPECT_EQ(e.bias, b.bias);
  EXPECT_EQ(e.bias_type, DType::kFloat32);
  EXPECT_EQ(e.activation, Activation::kRelu);
  EXPECT_EQ(e.m, 48);
  EXPECT_EQ(e.n, 96);
}

TEST(GemmEpilogue, StagedProductIsReadWithRowStrideNAndAlphaOne) {
  Buffers b;
  const EpilogueParams e =
      gemm_epilogue(problem(false, true, Activation::kGelu), b.args(2.0f), ProductAt::kStaging, b.staging);
  EXPECT_EQ(e.src, b.staging);
  EXPECT_EQ(e.ld_src, 96);
  EXPECT_EQ(e.alpha, 1.0f);  // the staged product has alpha applied already
  EXPECT_EQ(e.c, b.c);
  EXPECT_EQ(e.beta, 2.0f);
  EXPECT_EQ(e.bias, nullptr);  // no bias epilogue: the pointer is not read even if set
  EXPECT_EQ(e.activation, Activation::kGelu);
}

TEST(GemmEpilogue, BetaIsZeroWithoutC) {
  Buffers b;
  EXPECT_EQ(gemm_epilogue(problem(true, false, Activation::kNone), b.args(0.5f), ProductAt::kNowhere).beta, 0.0f);
  EXPECT_EQ(gemm_epilogue(problem(true, false, Activation::kNone), b.args(0.5f), ProductAt::kStaging, b.staging).beta,
            0.0f);
}

TEST(GemmEpilogue, ProductInOutIsFinishedInPlace) {
  Buffers b;
  const EpilogueParams e = gemm_epilogue(problem(true, false, Activation::kGeluTanh), b.args(0.0f), ProductAt::kOut);
  EXPECT_EQ(e.src, nullptr);
  EXPECT_EQ(e.c, b.out);  // out = act(1 * out + bias), element by element
  EXPECT_EQ(e.ldc, 128);
  EXPECT_EQ(e.beta, 1.0f);
  EXPECT_EQ(e.bias, b.bias);
  EXPECT_EQ(e.activation, Activation::kGeluTanh);
}

}  // namespace
}  // namespace tgemm
