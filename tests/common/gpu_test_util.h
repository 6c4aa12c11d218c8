// Shared helpers of the GPU tests: device presence, random a16w16 problems with NaN-poisoned
// outputs, and the comparison of any runner's output with the fp32 reference kernel.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/problem.h"
#include "runtime/device_utils.h"
#include "tgemm/gemm.h"

namespace tgemm::test {

bool has_gpu();

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
// `magnitude` scales the absolute tolerance for operands far from unit size (the fp32 sums'
// rounding, in the kernel and in the fp32 reference alike, grows with the products).
std::string run_and_compare_views(const TensorView& x, const TensorView& w, const TensorView& out,
                                  const GemmOptions& options, const std::function<void()>& run, double magnitude = 1.0);

// G group sizes summing to `total`, about a third of them 0 (seeded).
std::vector<std::int32_t> random_group_sizes(int g, std::int64_t total, std::uint64_t seed);

// A CUDA graph of run(stream) on a stream of its own: run once eagerly (the first call sizes the
// stream's workspace), then captured. replay() launches it and waits; the caller changes the
// device data on stream() in between. Capture failures are reported as test failures (ok()).
class GraphReplay {
 public:
  explicit GraphReplay(const std::function<void(Stream)>& run);
  ~GraphReplay();
  GraphReplay(const GraphReplay&) = delete;
  GraphReplay& operator=(const GraphReplay&) = delete;
  bool ok() const { return ok_; }
  Stream stream() const { return stream_; }
  void replay();

 private:
  Stream stream_ = nullptr;
  void* graph_ = nullptr;
  void* exec_ = nullptr;
  bool ok_ = false;
};

// Host copy of a device buffer of `count` elements of dtype (bf16, fp16 or fp32), as floats.
std::vector<float> to_host_floats(const void* data, DType dtype, std::int64_t count);

// 8-bit operands drawn as quantized values (the a8w8 tests): int8 codes in [-127, 127], FP8 e4m3
// codes of magnitude below 2 (exponent field <= 7), never NaN.
std::uint8_t draw_8bit(std::mt19937_64& rng, DType in);
// The value of an e4m3 (fn) code: 1 sign, 4 exponent (bias 7), 3 mantissa bits; subnormal at
// exponent 0. NaN codes (0x7f, 0xff) are not handled (draw_8bit never draws them).
double fp8_e4m3_value(std::uint8_t code);
// Expects every row of the fp32 device matrix out [m, n] (ld n) to equal the fp32 device vector
// row [n] exactly (a GEMM whose product is empty, K = 0, writes its bias).
void expect_rows_equal(const void* out, const void* row, std::int64_t m, std::int64_t n);
// Log-uniform integer in [lo, hi]: random problem sizes that cover small and large dims alike.
std::int64_t log_uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi);

}  // namespace tgemm::test
