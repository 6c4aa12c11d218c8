// The reference kernel against a float64 CPU product: it is the yardstick of every other test,
// so it is checked first, on odd shapes, strides, bias types and every output dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "tests/common/gpu_test_util.h"

namespace tgemm::test {
namespace {

double host_value(const void* base, DType t, std::int64_t i) {
  switch (t) {
    case DType::kBFloat16: return static_cast<double>(__bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]));
    case DType::kFloat16: return static_cast<double>(__half2float(static_cast<const __half*>(base)[i]));
    case DType::kFloat32: return static_cast<const float*>(base)[i];
    default: return NAN;
  }
}

std::vector<char> to_host(const DeviceBuffer& b) {
  std::vector<char> h(b.bytes());
  copy_to_host(h.data(), b.data(), b.bytes());
  return h;
}

class ReferenceVsCpu : public ::testing::TestWithParam<A16W16Case> {};

TEST_P(ReferenceVsCpu, MatchesFloat64) {
  TGEMM_REQUIRE_GPU();
  const A16W16Case c = GetParam();
  A16W16Data d = make_a16w16(c, 42);
  fill_nan(d.out.data(), c.out, c.m * (c.n + c.ldo_pad), nullptr);
  GemmProblem p = d.problem();
  run_reference_gemm(p, d.args(), c.out, c.n + c.ldo_pad, nullptr);
  device_synchronize();
  auto hx = to_host(d.x), hw = to_host(d.w), ho = to_host(d.out);
  std::vector<char> hb = c.bias ? to_host(d.bias) : std::vector<char>();
  std::vector<char> hc = c.beta != 0.0f ? to_host(d.cbuf) : std::vector<char>();
  const std::int64_t lda = c.k + c.lda_pad, ldb = c.k + c.ldb_pad, ldo = c.n + c.ldo_pad;
  double rtol = c.out == DType::kBFloat16 ? 1.0 / 128 : c.out == DType::kFloat16 ? 1.0 / 1024 : 1e-5;
  int bad = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      double acc = 0.0;
      for (std::int64_t kk = 0; kk < c.k; ++kk) {
        acc += host_value(hx.data(), c.in, i * lda + kk) * host_value(hw.data(), c.in, j * ldb + kk);
      }
      double want = static_cast<double>(c.alpha) * acc;
      if (c.beta != 0.0f) want += static_cast<double>(c.beta) * host_value(hc.data(), c.out, i * ldo + j);
      if (c.bias) want += host_value(hb.data(), c.bias_type, j);
      want = activate_host(c.activation, want);
      double got = host_value(ho.data(), c.out, i * ldo + j);
      double tol = 1e-5 * static_cast<double>(c.k) + rtol * std::abs(want) + 1e-6;
      if (!(std::abs(got - want) <= tol)) {
        if (++bad <= 3) ADD_FAILURE() << c.describe() << " at (" << i << ", " << j << "): got " << got
                                      << ", want " << want;
      }
    }
  }
  EXPECT_EQ(bad, 0) << c.describe();
}

std::vector<A16W16Case> reference_cases() {
  std::vector<A16W16Case> cases;
  const std::int64_t shapes[][3] = {{1, 1, 1}, {1, 7, 13}, {3, 5, 1000}, {17, 33, 65}, {64, 64, 64},
                                    {100, 257, 31}, {5, 1000, 8}, {130, 3, 517}};
  int i = 0;
  for (const auto& s : shapes) {
    for (DType in : {DType::kBFloat16, DType::kFloat16}) {
      A16W16Case c;
      c.m = s[0];
      c.n = s[1];
      c.k = s[2];
      c.in = in;
      c.out = (i % 3 == 0) ? DType::kFloat32 : (i % 3 == 1 ? in : DType::kBFloat16);
      c.bias = i % 2 == 0;
      c.bias_type = (c.bias && i % 4 == 0) ? c.out : in;
      c.lda_pad = i % 3;
      c.ldb_pad = (i + 1) % 4;
      c.ldo_pad = i % 5;
      // Epilogues: every activation, alpha != 1 and beta * c on some of the cases.
      c.activation = static_cast<Activation>(i % 4);
      if (i % 3 == 1) c.alpha = 0.75f;
      if (i % 5 == 2) c.beta = -0.5f;
      cases.push_back(c);
      ++i;
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReferenceVsCpu, ::testing::ValuesIn(reference_cases()));

}  // namespace
}  // namespace tgemm::test
