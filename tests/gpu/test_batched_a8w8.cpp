// batched_gemm_a8w8 against a float64 host product of the dequantized operands: 320 random
// problems (FP8 and INT8, every scale mix: one scale for every product, per product, per-token and
// per-channel; batch strides 0 (broadcast), dense and padded, padded rows, B from 1 to 512, odd M
// and N, K an odd multiple of 16 in most draws, bias on and off, bf16/fp16/fp32 out), each through
// the public entry point (its dispatched solution) and through the reference kernel directly, into
// NaN-poisoned outputs whose padding must stay NaN; K = 0, empty problems, the default solution,
// bad input, and a CUDA-graph replay with new inputs and scales.
// Tolerance: test_gemm_a8w8.cpp's (gemm_tolerance's atol times 2.25 for operands bounded by 1.5
// after scaling, plus fp8_accumulation_atol for FP8).
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

// A scale's shape: one element for every product, [B] (per product), or [B, rows, 1] (per row).
enum class ScaleShape { kShared, kPerProduct, kPerRow };

const char* scale_name(ScaleShape s) {
  return s == ScaleShape::kShared ? "shared" : s == ScaleShape::kPerProduct ? "product" : "row";
}

struct Case {
  std::int64_t batch = 4, m = 24, n = 16, k = 32;
  DType in = DType::kFloat8E4M3;
  DType out = DType::kBFloat16;
  bool bias = false;
  DType bias_type = DType::kBFloat16;
  ScaleShape a_scale = ScaleShape::kPerRow, b_scale = ScaleShape::kPerRow;
  std::int64_t a_row_pad = 0, b_row_pad = 0, out_row_pad = 0;
  BatchLayout a_batch = BatchLayout::kDense, b_batch = BatchLayout::kDense;
  std::int64_t out_batch_pad = 0;

  std::string describe() const {
    std::ostringstream os;
    os << "B=" << batch << " M=" << m << " N=" << n << " K=" << k << " in=" << dtype_short_name(in)
       << " out=" << dtype_short_name(out) << " bias=" << (bias ? dtype_short_name(bias_type) : "none")
       << " scales=" << scale_name(a_scale) << "/" << scale_name(b_scale) << " a=" << layout_name(a_batch) << "+"
       << a_row_pad << " b=" << layout_name(b_batch) << "+" << b_row_pad << " out_pad=" << out_row_pad << "/"
       << out_batch_pad;
    return os.str();
  }
};

// Padded batches 40 elements past the matrix: 8-byte aligned 8-bit products.
BatchOperand operand(std::int64_t batch, std::int64_t rows, std::int64_t cols, std::int64_t row_pad, BatchLayout l) {
  return test::batch_operand(batch, rows, cols, row_pad, l, 40);
}

struct Data {
  Case c;
  BatchOperand a, b, out;
  std::vector<std::uint8_t> a_codes, b_codes;
  std::vector<float> a_scales, b_scales, bias;
  std::int64_t a_scale_stride = 0, b_scale_stride = 0;  // floats between products' scales
  DeviceBuffer abuf, bbuf, asbuf, bsbuf, obuf, biasbuf;
  TensorView av, bv, asv, bsv, ov, biasv;
};

TensorView scale_view(void* data, ScaleShape s, std::int64_t batch, std::int64_t rows) {
  switch (s) {
    case ScaleShape::kShared: return TensorView::contiguous(data, DType::kFloat32, {});
    case ScaleShape::kPerProduct: return TensorView::contiguous(data, DType::kFloat32, {batch});
    case ScaleShape::kPerRow: break;
  }
  return TensorView::contiguous(data, DType::kFloat32, {batch, rows, 1});
}

std::int64_t scale_stride(ScaleShape s, std::int64_t rows) {
  return s == ScaleShape::kShared ? 0 : s == ScaleShape::kPerProduct ? 1 : rows;
}

// New random codes and scales into d's buffers (the views stay).
void fill(Data& d, std::uint64_t seed) {
  const Case& c = d.c;
  std::mt19937_64 rng(seed);
  for (auto& v : d.a_codes) v = test::draw_8bit(rng, c.in);
  for (auto& v : d.b_codes) v = test::draw_8bit(rng, c.in);
  // Scales about 1 / (typical |code|): dequantized operands bounded by 1.5.
  const float unit = c.in == DType::kInt8 ? 1.0f / 127 : 0.5f;
  std::uniform_real_distribution<float> scale(0.5f * unit, 1.5f * unit);
  for (auto& v : d.a_scales) v = scale(rng);
  for (auto& v : d.b_scales) v = scale(rng);
  copy_to_device(d.abuf.data(), d.a_codes.data(), d.a_codes.size());
  copy_to_device(d.bbuf.data(), d.b_codes.data(), d.b_codes.size());
  copy_to_device(d.asbuf.data(), d.a_scales.data(), d.a_scales.size() * sizeof(float));
  copy_to_device(d.bsbuf.data(), d.b_scales.data(), d.b_scales.size() * sizeof(float));
  // The bias drawn on the device in its dtype and read back: the host adds the values the GPU reads.
  const auto n = static_cast<std::int64_t>(d.bias.size());
  fill_uniform(d.biasbuf.data(), c.bias_type, n, seed * 7 + 5, -1.0f, 1.0f, nullptr);
  d.bias = to_host_floats(d.biasbuf.data(), c.bias_type, n);
}

Data make_data(const Case& c, std::uint64_t seed) {
  Data d;
  d.c = c;
  d.a = operand(c.batch, c.m, c.k, c.a_row_pad, c.a_batch);
  d.b = operand(c.batch, c.n, c.k, c.b_row_pad, c.b_batch);
  d.out = operand(c.batch, c.m, c.n, c.out_row_pad, BatchLayout::kDense);
  d.out.batch_stride += c.out_batch_pad;
  d.out.elems = std::max<std::int64_t>((c.batch - 1) * d.out.batch_stride + c.m * d.out.ld, 1);
  d.a_scale_stride = scale_stride(c.a_scale, c.m);
  d.b_scale_stride = scale_stride(c.b_scale, c.n);
  const std::int64_t a_scales =
      c.a_scale == ScaleShape::kShared ? 1 : std::max<std::int64_t>(c.batch, 1) * d.a_scale_stride;
  const std::int64_t b_scales =
      c.b_scale == ScaleShape::kShared ? 1 : std::max<std::int64_t>(c.batch, 1) * d.b_scale_stride;
  d.a_codes.resize(static_cast<std::size_t>(d.a.elems));
  d.b_codes.resize(static_cast<std::size_t>(d.b.elems));
  d.a_scales.resize(static_cast<std::size_t>(std::max<std::int64_t>(a_scales, 1)));
  d.b_scales.resize(static_cast<std::size_t>(std::max<std::int64_t>(b_scales, 1)));
  d.bias.resize(static_cast<std::size_t>(std::max<std::int64_t>(c.n, 1)));
  d.abuf = DeviceBuffer(d.a_codes.size());
  d.bbuf = DeviceBuffer(d.b_codes.size());
  d.asbuf = DeviceBuffer(d.a_scales.size() * sizeof(float));
  d.bsbuf = DeviceBuffer(d.b_scales.size() * sizeof(float));
  d.obuf = DeviceBuffer(static_cast<std::size_t>(d.out.elems) * dtype_size(c.out));
  d.biasbuf = DeviceBuffer(d.bias.size() * dtype_size(c.bias_type));
  fill(d, seed);
  d.av = test::batch_view(d.abuf.data(), c.in, c.batch, d.a);
  d.bv = test::batch_view(d.bbuf.data(), c.in, c.batch, d.b);
  d.asv = scale_view(d.asbuf.data(), c.a_scale, c.batch, c.m);
  d.bsv = scale_view(d.bsbuf.data(), c.b_scale, c.batch, c.n);
  d.ov = test::batch_view(d.obuf.data(), c.out, c.batch, d.out);
  d.biasv = TensorView::contiguous(d.biasbuf.data(), c.bias_type, {c.n});
  return d;
}

double code_value(std::uint8_t code, DType in) {
  return in == DType::kInt8 ? static_cast<double>(static_cast<std::int8_t>(code)) : test::fp8_e4m3_value(code);
}

// [B, M, N] in float64: each product of the dequantized operands, plus the bias.
std::vector<double> host_product(const Data& d) {
  const Case& c = d.c;
  std::vector<double> ref(static_cast<std::size_t>(c.batch * c.m * c.n));
  for (std::int64_t i = 0; i < c.batch; ++i) {
    const std::uint8_t* ai = d.a_codes.data() + i * d.a.batch_stride;
    const std::uint8_t* bi = d.b_codes.data() + i * d.b.batch_stride;
    const float* as = d.a_scales.data() + i * d.a_scale_stride;
    const float* bs = d.b_scales.data() + i * d.b_scale_stride;
    for (std::int64_t r = 0; r < c.m; ++r) {
      for (std::int64_t col = 0; col < c.n; ++col) {
        double s = 0.0;
        for (std::int64_t kk = 0; kk < c.k; ++kk) {
          s += code_value(ai[r * d.a.ld + kk], c.in) * code_value(bi[col * d.b.ld + kk], c.in);
        }
        s *= static_cast<double>(as[c.a_scale == ScaleShape::kPerRow ? r : 0]) *
             static_cast<double>(bs[c.b_scale == ScaleShape::kPerRow ? col : 0]);
        ref[(i * c.m + r) * c.n + col] = s + (c.bias ? d.bias[col] : 0.0);
      }
    }
  }
  return ref;
}

// Every product's [M, N] within tolerance of ref, and out's padding still NaN.
void expect_matches(const Data& d, const std::vector<double>& ref, const char* what) {
  const Case& c = d.c;
  const GemmCall call = validate_batched_a8w8(d.av, d.bv, d.asv, d.bsv, d.ov, c.bias ? &d.biasv : nullptr);
  Tolerance tol = gemm_tolerance(c.out, c.k, c.bias);
  const bool empty = c.batch == 0 || c.m == 0 || c.n == 0;
  tol.atol = tol.atol * 2.25 + (empty ? 0.0 : fp8_accumulation_atol(call.problem, call.args, nullptr));
  test::expect_batched_out(to_host_floats(d.obuf.data(), c.out, d.out.elems), d.out, c.batch, c.m, c.n, ref, tol,
                           std::string(what) + " " + c.describe());
}

void run_case(const Case& c, std::uint64_t seed) {
  Data d = make_data(c, seed);
  const std::vector<double> ref = host_product(d);
  const TensorView* bias = c.bias ? &d.biasv : nullptr;
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  batched_gemm_a8w8(d.av, d.bv, d.asv, d.bsv, d.ov, bias, nullptr);
  device_synchronize();
  expect_matches(d, ref, "batched_gemm_a8w8");
  // The reference kernel on the same views: the fallback of every problem cuBLASLt does not take.
  const GemmCall call = validate_batched_a8w8(d.av, d.bv, d.asv, d.bsv, d.ov, bias);
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  run_reference_gemm_a8w8(call.problem, call.args, c.out, call.problem.ldo, nullptr, call.problem.batch_stride_out);
  device_synchronize();
  expect_matches(d, ref, "reference");
}

Case random_case(std::mt19937_64& rng, int index) {
  Case c;
  c.batch = test::log_uniform(rng, 1, 512);
  c.m = test::log_uniform(rng, 1, 300);
  c.n = test::log_uniform(rng, 1, 300);
  // K in 16-byte rows; an odd count of them in most draws.
  c.k = 16 * test::log_uniform(rng, 1, 24);
  if (rng() % 4 != 0) c.m |= 1;
  if (rng() % 4 != 0) c.n |= 1;
  if (rng() % 4 != 0) c.k = (c.k / 16 | 1) * 16;
  // At most 2^22 multiply-adds, to keep the host product quick: shrink B first.
  while (c.batch * c.m * c.n * c.k > (1 << 22)) {
    if (c.batch > 1) {
      c.batch = (c.batch + 1) / 2;
    } else {
      c.m = std::max<std::int64_t>(c.m / 2, 1) | 1;
      c.n = std::max<std::int64_t>(c.n / 2, 1) | 1;
    }
  }
  c.in = (index & 1) ? DType::kInt8 : DType::kFloat8E4M3;
  const int out_pick = static_cast<int>(rng() % 3);
  c.out = out_pick == 0 ? DType::kBFloat16 : out_pick == 1 ? DType::kFloat16 : DType::kFloat32;
  c.bias = rng() % 2 == 0;
  c.bias_type = rng() % 2 == 0 ? c.out : DType::kFloat32;
  const ScaleShape shapes[] = {ScaleShape::kShared, ScaleShape::kPerProduct, ScaleShape::kPerRow};
  c.a_scale = shapes[(index >> 1) % 3];
  c.b_scale = shapes[rng() % 3];
  const BatchLayout layouts[] = {BatchLayout::kDense, BatchLayout::kBroadcast, BatchLayout::kPadded};
  c.a_batch = layouts[rng() % 3];
  c.b_batch = layouts[rng() % 3];
  // Row pads keep 16-byte rows (validate_batched_a8w8's rule); out's may be odd (2-byte aligned).
  const std::int64_t pads[] = {0, 0, 16, 48};
  c.a_row_pad = pads[rng() % 4];
  c.b_row_pad = pads[rng() % 4];
  const std::int64_t out_pads[] = {0, 0, 8, 3};
  c.out_row_pad = out_pads[rng() % 4];
  c.out_batch_pad = rng() % 3 == 0 ? 40 : 0;
  return c;
}

TEST(BatchedGemmA8W8, RandomProblemsMatchTheHostProduct) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(20251128);
  int max_batch = 0;
  for (int i = 0; i < 320; ++i) {
    const Case c = random_case(rng, i);
    max_batch = std::max<int>(max_batch, static_cast<int>(c.batch));
    SCOPED_TRACE(c.describe());
    run_case(c, static_cast<std::uint64_t>(i));
    if (HasFailure()) break;  // one failing problem is enough to read; the rest would repeat it
  }
  EXPECT_GE(max_batch, 256);  // the draw reaches the large batches it is meant to cover
}

TEST(BatchedGemmA8W8, SuiteShapesAtFullSize) {
  TGEMM_REQUIRE_GPU();
  // DeepSeek MLA's absorbed projections (bench/shapes/batched_shapes.csv) in both 8-bit types.
  struct Shape {
    std::int64_t batch, m, n, k;
  };
  const Shape shapes[] = {{16, 1, 512, 128},  {16, 64, 512, 128}, {16, 64, 128, 512},
                          {128, 1, 512, 128}, {8, 64, 4096, 16},  {4, 128, 128, 128}};
  std::uint64_t seed = 1000;
  for (const Shape& s : shapes) {
    for (DType in : {DType::kFloat8E4M3, DType::kInt8}) {
      Case c;
      c.batch = s.batch;
      c.m = s.m;
      c.n = s.n;
      c.k = s.k;
      c.in = in;
      SCOPED_TRACE(c.describe());
      run_case(c, seed++);
    }
  }
}

TEST(BatchedGemmA8W8, DefaultIsCublasLtStaged) {
  TGEMM_REQUIRE_GPU();
  for (DType in : {DType::kFloat8E4M3, DType::kInt8}) {
    Case c;
    c.batch = 16;
    c.m = 64;
    c.n = 512;
    c.k = 128;
    c.in = in;
    const Data d = make_data(c, 3);
    const DispatchInfo info = describe_batched_gemm_a8w8(d.av, d.bv, d.asv, d.bsv, d.ov);
    EXPECT_EQ(info.libtype, "cublaslt") << c.describe();
    EXPECT_EQ(info.kernel_name, "cublaslt:heuristic_staged") << c.describe();
  }
}

TEST(BatchedGemmA8W8, EmptySumWritesTheBias) {
  TGEMM_REQUIRE_GPU();
  for (bool bias : {false, true}) {
    Case c;
    c.k = 0;
    c.bias = bias;
    c.out_batch_pad = 8;
    SCOPED_TRACE(c.describe());
    run_case(c, 7);
  }
}

TEST(BatchedGemmA8W8, EmptyProblemsWriteNothing) {
  TGEMM_REQUIRE_GPU();
  for (std::int64_t batch : {0, 3}) {
    Case c;
    c.batch = batch;
    c.m = batch == 0 ? 24 : 0;
    c.a_scale = ScaleShape::kShared;
    Data d = make_data(c, 9);
    fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
    batched_gemm_a8w8(d.av, d.bv, d.asv, d.bsv, d.ov, nullptr, nullptr);
    device_synchronize();
    const std::vector<float> out = to_host_floats(d.obuf.data(), c.out, d.out.elems);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); })) << c.describe();
  }
}

TEST(BatchedGemmA8W8, BadInputThrowsBeforeAnyLaunch) {
  TGEMM_REQUIRE_GPU();
  Case c;
  c.a_batch = BatchLayout::kBroadcast;
  Data d = make_data(c, 11);
  fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
  TensorView zero_stride = d.ov;
  zero_stride.strides[0] = 0;
  EXPECT_THROW(batched_gemm_a8w8(d.av, d.bv, d.asv, d.bsv, zero_stride, nullptr, nullptr), Error);
  TensorView int8_b = d.bv;
  int8_b.dtype = DType::kInt8;
  EXPECT_THROW(batched_gemm_a8w8(d.av, int8_b, d.asv, d.bsv, d.ov, nullptr, nullptr), Error);
  TensorView short_scale = TensorView::contiguous(d.asbuf.data(), DType::kFloat32, {c.batch - 1});
  EXPECT_THROW(batched_gemm_a8w8(d.av, d.bv, short_scale, d.bsv, d.ov, nullptr, nullptr), Error);
  device_synchronize();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<float> out = to_host_floats(d.obuf.data(), c.out, d.out.elems);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isnan(v); }));
}

TEST(BatchedGemmA8W8, CapturedGraphReplaysWithNewInputsAndScales) {
  TGEMM_REQUIRE_GPU();
  for (DType in : {DType::kFloat8E4M3, DType::kInt8}) {
    Case c;
    c.batch = 16;
    c.m = 64;
    c.n = 512;
    c.k = 128;
    c.in = in;
    c.bias = true;
    c.b_scale = ScaleShape::kPerProduct;
    Data d = make_data(c, 21);
    test::GraphReplay graph([&](Stream s) { batched_gemm_a8w8(d.av, d.bv, d.asv, d.bsv, d.ov, &d.biasv, s); });
    ASSERT_TRUE(graph.ok());
    // New operands and scales in the captured buffers, a poisoned output, one replay.
    fill(d, 777);
    fill_nan(d.obuf.data(), c.out, d.out.elems, nullptr);
    device_synchronize();
    graph.replay();
    device_synchronize();
    expect_matches(d, host_product(d), "graph replay");
  }
}

}  // namespace
}  // namespace tgemm
