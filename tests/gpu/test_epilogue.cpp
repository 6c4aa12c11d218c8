// Fused epilogues through the public API: out = act(alpha * x @ w^T + beta * c + bias) for every
// activation, alpha, beta with a separate c and in place (c = out), bias on and off, every output
// dtype; the named forms (gemm_bias, gemm_gelu, gemm_relu, gemm_alpha_beta); K = 0; and the
// errors of bad epilogue arguments. Compared with the fp32 reference (itself checked against
// float64 in test_reference.cu).
#include <cuda_runtime.h>

#include <random>

#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

TEST(Epilogue, RandomProblemsMatchReference) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(777);
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  int failed = 0;
  for (int i = 0; i < 160; ++i) {
    A16W16Case c;
    c.m = 1 + static_cast<std::int64_t>(rng() % 700);
    c.n = 1 + static_cast<std::int64_t>(rng() % 900);
    c.k = 1 + static_cast<std::int64_t>(rng() % 1500);
    if (rng() % 3 == 0) c.n = (c.n / 64 + 1) * 64;
    c.in = rng() % 2 ? DType::kBFloat16 : DType::kFloat16;
    c.out = outs[rng() % 3];
    c.bias = rng() % 2;
    c.bias_type = c.in;  // the default is bf16; fp16 inputs take an fp16 (or out-typed) bias
    c.activation = static_cast<Activation>(rng() % 4);
    if (rng() % 3 == 0) c.alpha = 0.5f + static_cast<float>(rng() % 100) / 100.0f;
    if (rng() % 3 == 0) {
      c.beta = (rng() % 2 ? 1.0f : -0.75f);
      c.c_in_place = rng() % 2;
    }
    if (rng() % 4 == 0) c.ldo_pad = static_cast<std::int64_t>(rng() % 5);
    A16W16Data d = make_a16w16(c, 5000 + static_cast<std::uint64_t>(i));
    std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
    if (!err.empty()) {
      ++failed;
      ADD_FAILURE() << err << " [" << describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options()).kernel_name << "]";
    }
  }
  EXPECT_EQ(failed, 0);
}

TEST(Epilogue, NamedFormsEqualTheirOptions) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 33;
  c.n = 200;
  c.k = 96;
  c.bias = true;
  {
    A16W16Data d = make_a16w16(c, 1);
    EXPECT_EQ(run_and_compare(d, [&] { gemm_bias(d.xv, d.wv, d.bv, d.ov, nullptr); }), "");
  }
  for (bool tanh : {false, true}) {
    A16W16Case g = c;
    g.activation = tanh ? Activation::kGeluTanh : Activation::kGelu;
    A16W16Data d = make_a16w16(g, 2);
    EXPECT_EQ(run_and_compare(d, [&] { gemm_gelu(d.xv, d.wv, &d.bv, d.ov, tanh, nullptr); }), "");
  }
  {
    A16W16Case r = c;
    r.activation = Activation::kRelu;
    r.bias = false;
    A16W16Data d = make_a16w16(r, 3);
    EXPECT_EQ(run_and_compare(d, [&] { gemm_relu(d.xv, d.wv, nullptr, d.ov, nullptr); }), "");
  }
  for (bool in_place : {false, true}) {
    A16W16Case ab = c;
    ab.bias = false;
    ab.alpha = 0.25f;
    ab.beta = 2.0f;
    ab.c_in_place = in_place;
    A16W16Data d = make_a16w16(ab, 4);
    const TensorView& cv = in_place ? d.ov : d.cv;
    EXPECT_EQ(run_and_compare(d, [&] { gemm_alpha_beta(d.xv, d.wv, cv, 0.25f, 2.0f, d.ov, nullptr); }), "");
  }
}

TEST(Epilogue, EmptySumAppliesTheEpilogue) {
  TGEMM_REQUIRE_GPU();
  // K = 0: out = act(beta * c + bias).
  A16W16Case c;
  c.m = 7;
  c.n = 19;
  c.k = 0;
  c.bias = true;
  c.beta = 0.5f;
  c.activation = Activation::kGelu;
  A16W16Data d = make_a16w16(c, 9);
  EXPECT_EQ(run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); }), "");
}

TEST(Epilogue, BadArgumentsRaiseClearErrors) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 4;
  c.n = 32;
  c.k = 64;
  c.beta = 1.0f;
  A16W16Data d = make_a16w16(c, 11);
  auto expect_error = [&](GemmOptions o, const std::string& needle) {
    try {
      gemm_a16w16(d.xv, d.wv, d.ov, o, nullptr);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  GemmOptions o = d.options();
  o.c = nullptr;
  expect_error(o, "c must be given when beta != 0");
  o = d.options();
  o.alpha = std::nanf("");
  expect_error(o, "alpha must be finite");
  o = d.options();
  TensorView wrong = d.cv;
  wrong.dtype = DType::kFloat32;
  o.c = &wrong;
  expect_error(o, "c.dtype must equal out.dtype");
  o = d.options();
  TensorView shifted = d.ov;
  shifted.data = static_cast<char*>(d.ov.data) + 2;
  o.c = &shifted;
  expect_error(o, "c must be out itself or not overlap it");
  o = d.options();
  o.activation = static_cast<Activation>(9);
  expect_error(o, "options.activation");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tgemm::test
