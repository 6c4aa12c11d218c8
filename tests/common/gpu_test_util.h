// Shared helpers of the GPU tests: device presence, random a16w16 problems with NaN-poisoned
// outputs, and the comparison of any runner's output with the fp32 reference kernel.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "runtime/device_utils.h"
#include "tgemm/gemm.h"

namespace tgemm::test {

bool has_gpu();

// Host copy of a device buffer of `count` elements of dtype (bf16, fp16 or fp32), as floats.
std::vector<float> to_host_floats(const void* data, DType dtype, std::int64_t count);

#define TGEMM_REQUIRE_GPU()                                     \
  do {                                                          \
    if (!::tgemm::test::has_gpu()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

struct A16W16Case {
  std::int64_t m = 1, n = 1, k = 1;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool bias = false;
  DType bias_type = DType::kBFloat16;  // only with bias; usually `in`
  std::int64_t lda_pad = 0;   // extra elements per x row
  std::int64_t ldb_pad = 0;   // extra elements per w row
  std::int64_t ldo_pad = 0;   // extra elements per out row
  // Epilogue: out = act(alpha * x @ w^T + beta * c + bias).
  Activation activation = Activation::kNone;
  float alpha = 1.0f;
  float beta = 0.0f;
  bool c_in_place = false;    // with beta != 0: c is out itself (else a separate [M, N] buffer, ld N + ldo_pad)
  std::string describe() const;
};

// Device buffers of one case, filled with uniform(-1, 1) values; out poisoned with NaN.
struct A16W16Data {
  A16W16Case c;
  DeviceBuffer x, w, out, bias, ref, cbuf;
  TensorView xv, wv, ov, bv, cv;
  GemmOptions options() const {
    GemmOptions o;
    if (c.bias) o.bias = &bv;
    o.activation = c.activation;
    o.alpha = c.alpha;
    o.beta = c.beta;
    if (c.beta != 0.0f) o.c = c.c_in_place ? &ov : &cv;
    return o;
  }
  // The problem as validate_a16w16 builds it (device 0 filled in).
  GemmProblem problem() const;
  GemmArgs args() const;
};

A16W16Data make_a16w16(const A16W16Case& c, std::uint64_t seed);

// The activation in float64 on the host (the exact erf GELU, the tanh form, ReLU, identity):
// the reference side of the epilogue tests.
double activate_host(Activation a, double v);

// Poisons out, runs `run`, runs the reference into an fp32 buffer, compares with the tolerance
// of gemm_tolerance(). Returns a non-empty failure description on mismatch. With an in-place c
// (c is out), out is filled with fresh random c values instead of NaN and the reference reads a
// copy of them.
std::string run_and_compare(A16W16Data& d, const std::function<void()>& run);
// The same for arbitrary views (offset pointers, odd strides, rank > 2).
std::string run_and_compare_views(const TensorView& x, const TensorView& w, const TensorView& out,
                                  const GemmOptions& options, const std::function<void()>& run);

}  // namespace tgemm::test
