// batched_gemm against a float64 host product of the same bf16/fp16 inputs: 320 random problems
// (every transpose combination, batch strides 0 (broadcast), dense and padded, padded rows, B from
// 1 to 512, odd M, N and K, bias on and off, fp16/bf16 in, 16-bit and fp32 out), each through the
// public entry point (its dispatched solution) and through the reference solution directly, into
// NaN-poisoned outputs whose padding must stay NaN; K = 0, empty problems, and a CUDA-graph replay
// with new inputs.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "core/validate.h"
#include "runtime/device_utils.h"
#include "tests/common/batched_test_util.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/batched.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::BatchLayout;
using test::BatchOperand;
using test::layout_name;
using test::to_host_floats;

struct BatchedCase {
  std::int64_t batch = 4, m = 24, n = 16, k = 32;
  bool transpose_a = false, transpose_b = false;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool bias = false;
  DType bias_type = DType::kBFloat16;
  std::int64_t a_row_pad = 0, b_row_pad = 0, out_row_pad = 0;
  BatchLayout a_batch = BatchLayout::kDense, b_batch = BatchLayout::kDense;
  std::int64_t out_batch_pad = 0;

  std::string describe() const {
    std::ostringstream os;
    os << "B=" << batch << " M=" << m << " N=" << n << " K=" << k << " ta=" << transpose_a << " tb=" << transpose_b
       << " in=" << dtype_short_name(in) << " out=" << dtype_short_name(out)
       << " bias=" << (bias ? dtype_short_name(bias_type) : "none") << " a=" << layout_name(a_batch) << "+" << a_row_pad
       << " b=" << layout_name(b_batch) << "+" << b_row_pad << " out_pad=" << out_row_pad << "/" << out_batch_pad;
    return os.str();
  }
};

// Padded batches 24 elements past the matrix.
BatchOperand operand(std::int64_t batch, std::int64_t rows, std::int64_t cols, std::int64_t row_pad, BatchLayout l) {
  return test::batch_operand(batch, rows, cols, row_pad, l, 24);
}

struct BatchedData {
  BatchedCase c;
  BatchOperand a, b, out;
  DeviceBuffer abuf, bbuf, obuf, biasbuf;
  TensorView av, bv, ov, biasv;
};

BatchedData make_data(const BatchedCase& c, std::uint64_t seed) {
  BatchedData d;
  d.c = c;
  d.a = c.transpose_a ? operand(c.batch, c.k, c.m, c.a_row_pad, c.a_batch)
                      : operand(c.batch, c.m, c.k, c.a_row_pad, c.a_batch);
  d.b = c.transpose_b ? operand(c.batch, c.n, c.k, c.b_row_pad, c.b_batch)
                      : operand(c.batch, c.k, c.n, c.b_row_pad, c.b_batch);
  d.out = operand(c.batch, c.m, c.n, c.out_row_pad, BatchLayout::kDense);
  d.out.batch_stride += c.out_batch_pad;
  d.out.elems = std::max<std::int64_t>((c.batch - 1) * d.out.batch_stride + c.m * d.out.ld, 1);
  const std::size_t es = dtype_size(c.in);
  d.abuf = DeviceBuffer(static_cast<std::size_t>(d.a.elems) * es);
  d.bbuf = DeviceBuffer(static_cast<std::size_t>(d.b.elems) * es);
  d.obuf = DeviceBuffer(static_cast<std::size_t>(d.out.elems) * dtype_size(c.out));
  d.biasbuf = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.n, 1)) * dtype_size(c.bias_type));
  fill_uniform(d.abuf.data(), c.in, d.a.elems, seed * 3 + 1, -1.0f, 1.0f, nullptr);
  fill_uniform(d.bbuf.data(), c.in, d.b.elems, seed * 3 + 2, -1.0f, 1.0f, nullptr);
  fill_uniform(d.biasbuf.data(), c.bias_type, c.n, seed * 3 + 3, -1.0f, 1.0f, nullptr);
  d.av = test::batch_view(d.abuf.data(), c.in, c.batch, d.a);
  d.bv = test::batch_view(d.bbuf.data(), c.in, c.batch, d.b);
  d.ov = test::batch_view(d.obuf.data(), c.out, c.batch, d.out);
  d.biasv = TensorView::contiguous(d.biasbuf.data(), c.bias_type, {c.n});
  return d;
}

// [B, M, N] in float64 from the inputs as stored (the same rounded values the GPU reads).
std::vector<double> host_product(const BatchedData& d) {
  const BatchedCase& c = d.c;
  const std::vector<float> a = to_host_floats(d.abuf.data(), c.in, d.a.elems);
  const std::vector<float> b = to_host_floats(d.bbuf.data(), c.in, d.b.elems);
  const std::vector<float> bias = to_host_floats(d.biasbuf.data(), c.bias_type, c.n);
  std::vector<double> ref(static_cast<std::size_t>(c.batch * c.m * c.n));
  for (std::int64_t i = 0; i < c.batch; ++i) {
    const float* ai = a.data() + i * d.a.batch_stride;
    const float* bi = b.data() + i * d.b.batch_stride;
    for (std::int64_t r = 0; r < c.m; ++r) {
      for (std::int64_t col = 0; col < c.n; ++col) {
        double s = c.bias ? bias[col] : 0.0;
        for (std::int64_t kk = 0; kk < c.k; ++kk) {
          const float av = c.transpose_a ? ai[kk * d.a.ld + r] : ai[r * d.a.ld + kk];
          const float bv = c.transpose_b ? bi[col * d.b.ld + kk] : bi[kk * d.b.ld + col];
          s += static_cast<double>(av) * bv;
        }
        ref[(i * c.m + r) * c.n + col] = s;
      }
    }
  }
  return ref;
}

// Every product's [M, N] within tolerance of ref, and out's padding still NaN.
void expect_matches(const BatchedData& d, const std::vector<double>& ref, const char* what) {
  const BatchedCase& c = d.c;
  test::expect_batched_out(to_host_floats(d.obuf.data(), c.out, d.out.elems), d.out, c.batch, c.m, c.n, ref,
                           gemm_tolerance(c.out, c.k, c.bias), std::string(what) + " " + c.describe());
}

void run_case(const BatchedCase& c, std::uint64_t seed) {
  BatchedData d = make_data(c, seed);
  const std::vector<double> ref = host_product(d);
  const TensorView* bias = c.bias ? &d.biasv : nullptr;
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  batched_gemm(d.av, d.bv, d.ov, c.transpose_a, c.transpose_b, bias, nullptr);
  device_synchronize();
  expect_matches(d, ref, "batched_gemm");
  // The reference solution on the same views: the fallback of every problem no fast solution takes.
  const GemmCall call = validate_batched(d.av, d.bv, d.ov, c.transpose_a, c.transpose_b, bias);
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  run_reference_gemm(call.problem, call.args, c.out, call.problem.ldo, nullptr, call.problem.batch_stride_out);
  device_synchronize();
  expect_matches(d, ref, "reference");
}

// Log-uniform in [lo, hi].
std::int64_t log_uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  std::uniform_real_distribution<double> u(std::log(static_cast<double>(lo)), std::log(static_cast<double>(hi) + 1));
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::exp(u(rng))), lo, hi);
}

BatchedCase random_case(std::mt19937_64& rng, int index) {
  BatchedCase c;
  c.batch = log_uniform(rng, 1, 512);
  c.m = log_uniform(rng, 1, 300);
  c.n = log_uniform(rng, 1, 300);
  c.k = log_uniform(rng, 1, 300);
  // Odd sizes in most cases: tails of every tile shape.
  if (rng() % 4 != 0) c.m |= 1;
  if (rng() % 4 != 0) c.n |= 1;
  if (rng() % 4 != 0) c.k |= 1;
  // At most 2^22 multiply-adds, to keep the host product quick: shrink B first.
  while (c.batch * c.m * c.n * c.k > (1 << 22)) {
    if (c.batch > 1) {
      c.batch = (c.batch + 1) / 2;
    } else {
      c.m = std::max<std::int64_t>(c.m / 2, 1) | 1;
      c.k = std::max<std::int64_t>(c.k / 2, 1) | 1;
    }
  }
  c.transpose_a = (index & 1) != 0;
  c.transpose_b = (index & 2) != 0;
  c.in = (index & 4) ? DType::kFloat16 : DType::kBFloat16;
  const int out_pick = static_cast<int>(rng() % 10);
  const DType other = c.in == DType::kBFloat16 ? DType::kFloat16 : DType::kBFloat16;
  c.out = out_pick < 6 ? c.in : out_pick < 9 ? DType::kFloat32 : other;
  c.bias = rng() % 2 == 0;
  c.bias_type = rng() % 2 == 0 ? c.in : c.out;
  const BatchLayout layouts[] = {BatchLayout::kDense, BatchLayout::kBroadcast, BatchLayout::kPadded};
  c.a_batch = layouts[rng() % 3];
  c.b_batch = layouts[rng() % 3];
  // Row pads of 0, a multiple of 8 (16-byte rows kept) or odd (2-byte aligned rows).
  const std::int64_t pads[] = {0, 0, 8, 3};
  c.a_row_pad = pads[rng() % 4];
  c.b_row_pad = pads[rng() % 4];
  c.out_row_pad = pads[rng() % 4];
  c.out_batch_pad = rng() % 3 == 0 ? 40 : 0;
  return c;
}

TEST(BatchedGemm, RandomProblemsMatchTheHostProduct) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(20240611);
  int max_batch = 0;
  for (int i = 0; i < 320; ++i) {
    const BatchedCase c = random_case(rng, i);
    max_batch = std::max<int>(max_batch, static_cast<int>(c.batch));
    SCOPED_TRACE(c.describe());
    run_case(c, static_cast<std::uint64_t>(i));
    if (HasFailure()) break;  // one failing problem is enough to read; the rest would repeat it
  }
  EXPECT_GE(max_batch, 256);  // the draw reaches the large batches it is meant to cover
}

TEST(BatchedGemm, SuiteShapesAtFullSize) {
  TGEMM_REQUIRE_GPU();
  // The shape suite's problems whose host product stays small (../shared/shapes/batched_shapes.csv).
  struct Shape {
    std::int64_t batch, m, n, k;
    bool ta, tb;
  };
  const Shape shapes[] = {{16, 1, 512, 128, false, false},  {16, 64, 512, 128, false, false},
                          {16, 64, 128, 512, false, false}, {128, 1, 512, 128, false, false},
                          {8, 256, 16, 4096, false, true},  {8, 256, 4096, 16, false, true},
                          {4, 128, 128, 128, false, true},  {2, 256, 256, 256, true, false}};
  std::uint64_t seed = 1000;
  for (const Shape& s : shapes) {
    BatchedCase c;
    c.batch = s.batch;
    c.m = s.m;
    c.n = s.n;
    c.k = s.k;
    c.transpose_a = s.ta;
    c.transpose_b = s.tb;
    SCOPED_TRACE(c.describe());
    run_case(c, seed++);
  }
}

TEST(BatchedGemm, EmptySumWritesTheBias) {
  TGEMM_REQUIRE_GPU();
  for (bool bias : {false, true}) {
    BatchedCase c;
    c.k = 0;
    c.bias = bias;
    c.out_batch_pad = 8;
    SCOPED_TRACE(c.describe());
    run_case(c, 7);
  }
}

TEST(BatchedGemm, EmptyProblemsWriteNothing) {
  TGEMM_REQUIRE_GPU();
  for (std::int64_t batch : {0, 3}) {
    BatchedCase c;
    c.batch = batch;
    c.m = batch == 0 ? 24 : 0;
    BatchedData d = make_data(c, 9);
    fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
    batched_gemm(d.av, d.bv, d.ov, false, false, nullptr, nullptr);
    device_synchronize();
    const std::vector<float> out = to_host_floats(d.obuf.data(), c.out, d.out.elems);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); })) << c.describe();
  }
}

TEST(BatchedGemm, BadInputThrowsBeforeAnyLaunch) {
  TGEMM_REQUIRE_GPU();
  BatchedCase c;
  c.a_batch = BatchLayout::kBroadcast;
  BatchedData d = make_data(c, 11);
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  // out laid over a's one (broadcast) matrix: an aliasing broadcast.
  TensorView aliased = d.ov;
  aliased.data = d.abuf.data();
  aliased.dtype = c.in;
  EXPECT_THROW(batched_gemm(d.av, d.bv, aliased, false, false, nullptr, nullptr), Error);
  TensorView zero_stride = d.ov;
  zero_stride.strides[0] = 0;
  EXPECT_THROW(batched_gemm(d.av, d.bv, zero_stride, false, false, nullptr, nullptr), Error);
  device_synchronize();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<float> out = to_host_floats(d.obuf.data(), c.out, d.out.elems);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); }));
}

TEST(BatchedGemm, CapturedGraphReplaysWithNewInputs) {
  TGEMM_REQUIRE_GPU();
  BatchedCase c;
  c.batch = 16;
  c.m = 64;
  c.n = 512;
  c.k = 128;
  c.bias = true;
  BatchedData d = make_data(c, 21);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // Warm the shape on the capture stream: the first call resolves it (tables, heuristic query).
  batched_gemm(d.av, d.bv, d.ov, false, false, &d.biasv, stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  batched_gemm(d.av, d.bv, d.ov, false, false, &d.biasv, stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  // New inputs in the captured buffers, a poisoned output, one replay.
  fill_uniform(d.abuf.data(), c.in, d.a.elems, 777, -1.0f, 1.0f, nullptr);
  fill_uniform(d.bbuf.data(), c.in, d.b.elems, 778, -1.0f, 1.0f, nullptr);
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  device_synchronize();
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_matches(d, host_product(d), "graph replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace tgemm
