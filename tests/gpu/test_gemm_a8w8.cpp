// gemm_a8w8 through the public API (tables, walk, default) against the reference of the
// dequantized operands: float8_e4m3fn and int8, the four scale recipes, bias off / out's dtype /
// fp32, every output dtype, random M 1..2048 (odd M included), N and K not multiples of 128,
// NaN-poisoned outputs. The reference kernel itself is checked against a float64 host product.
//
// Operands are drawn as quantized values: int8 in [-127, 127], FP8 e4m3 codes of magnitude below
// 2 (exponent field <= 7); scales uniform in [0.5, 1.5) / 127 (int8) or / 2 (FP8), so every
// dequantized operand is bounded by 1.5 in magnitude.
//
// Tolerance: gemm_tolerance(out, K, bias) (output rounding 2 ulps; fp32 accumulation of K products
// ~8e-8 K^1.5 for operands bounded by 1), its atol times 1.5^2 = 2.25 for the operand bound here.
// Int8 products accumulate exactly in int32 on every path, so int8 differs from the reference only
// by the fp32 scaling and the output rounding. FP8 products are exact, but Hopper's FP8 tensor
// cores keep only about 14 significant bits of the running sum between promotions to fp32: FP8
// adds fp8_accumulation_atol (runtime/device_utils.h).
#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "core/check.h"
#include "core/validate.h"
#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

struct A8W8Case {
  std::int64_t m = 1, n = 1, k = 16;
  DType in = DType::kFloat8E4M3;
  DType out = DType::kBFloat16;
  bool x_per_token = true;
  bool w_per_channel = true;
  int bias = 0;  // 0 none, 1 out's dtype, 2 fp32
  std::string describe() const {
    return detail::concat("M=", m, " N=", n, " K=", k, " ", dtype_name(in), "->", dtype_name(out), " scales=",
                          format_scale_recipe(x_per_token ? ScaleGranularity::kRow : ScaleGranularity::kTensor,
                                              w_per_channel ? ScaleGranularity::kRow : ScaleGranularity::kTensor),
                          " bias=",
                          bias == 0   ? "none"
                          : bias == 1 ? "out"
                                      : "fp32");
  }
};

struct A8W8Data {
  A8W8Case c;
  std::vector<std::uint8_t> hx, hw;  // host copies of the operands' bytes
  DeviceBuffer x, w, xs, ws, bias, out, ref;
  TensorView xv, wv, xsv, wsv, bv, ov;
  const TensorView* bias_view() const { return c.bias ? &bv : nullptr; }
};

A8W8Data make(const A8W8Case& c, std::uint64_t seed) {
  A8W8Data d;
  d.c = c;
  std::mt19937_64 rng(seed);
  d.hx.resize(static_cast<std::size_t>(c.m * c.k));
  d.hw.resize(static_cast<std::size_t>(c.n * c.k));
  for (auto& b : d.hx) b = draw_8bit(rng, c.in);
  for (auto& b : d.hw) b = draw_8bit(rng, c.in);
  d.x = DeviceBuffer(std::max<std::size_t>(d.hx.size(), 16));
  d.w = DeviceBuffer(std::max<std::size_t>(d.hw.size(), 16));
  copy_to_device(d.x.data(), d.hx.data(), d.hx.size());
  copy_to_device(d.w.data(), d.hw.data(), d.hw.size());
  const float unit = c.in == DType::kInt8 ? 1.0f / 127 : 0.5f;
  const std::int64_t xs_n = c.x_per_token ? c.m : 1, ws_n = c.w_per_channel ? c.n : 1;
  d.xs = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(xs_n, 1)) * 4);
  d.ws = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(ws_n, 1)) * 4);
  fill_uniform(d.xs.data(), DType::kFloat32, xs_n, seed * 3 + 1, 0.5f * unit, 1.5f * unit, nullptr);
  fill_uniform(d.ws.data(), DType::kFloat32, ws_n, seed * 3 + 2, 0.5f * unit, 1.5f * unit, nullptr);
  const DType bias_type = c.bias == 2 ? DType::kFloat32 : c.out;
  if (c.bias) {
    d.bias = DeviceBuffer(static_cast<std::size_t>(c.n) * dtype_size(bias_type));
    fill_uniform(d.bias.data(), bias_type, c.n, seed * 3 + 3, -1.0f, 1.0f, nullptr);
  }
  d.out = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.m * c.n, 1)) * dtype_size(c.out));
  d.ref = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.m * c.n, 1)) * 4);
  d.xv = TensorView::contiguous(d.x.data(), c.in, {c.m, c.k});
  d.wv = TensorView::contiguous(d.w.data(), c.in, {c.n, c.k});
  d.xsv = c.x_per_token ? TensorView::contiguous(d.xs.data(), DType::kFloat32, {c.m, 1})
                        : TensorView::contiguous(d.xs.data(), DType::kFloat32, {1});
  d.wsv = c.w_per_channel ? TensorView::contiguous(d.ws.data(), DType::kFloat32, {c.n, 1})
                          : TensorView::contiguous(d.ws.data(), DType::kFloat32, {1});
  d.bv = TensorView::contiguous(d.bias.data(), bias_type, {c.n});
  d.ov = TensorView::contiguous(d.out.data(), c.out, {c.m, c.n});
  return d;
}

// Poisons out, runs gemm_a8w8, runs the reference into fp32, compares. Empty on success.
std::string run_and_compare(A8W8Data& d) {
  const A8W8Case& c = d.c;
  fill_nan(d.out.data(), c.out, c.m * c.n, nullptr);
  gemm_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view(), nullptr);
  GemmCall call = validate_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view());
  call.args.out = d.ref.data();
  run_reference_gemm_a8w8(call.problem, call.args, DType::kFloat32, c.n, nullptr);
  Tolerance tol = gemm_tolerance(c.out, c.k, c.bias != 0);
  tol.atol *= 2.25;
  tol.atol += fp8_accumulation_atol(call.problem, call.args, nullptr);
  const CompareResult r =
      compare_with_reference(d.out.data(), c.out, c.n, d.ref.as<float>(), c.n, c.m, c.n, tol.rtol, tol.atol, nullptr);
  if (r.bad == 0) return "";
  return detail::concat(c.describe(), ": ", r.bad, " of ", r.checked, " elements wrong (", r.nonfinite,
                        " non-finite), first at ", r.first_bad, ": ", r.first_bad_out, " vs ", r.first_bad_ref,
                        " [solution ", describe_gemm_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view()).kernel_name,
                        "]");
}

TEST(ReferenceA8W8, MatchesFloat64HostProduct) {
  TGEMM_REQUIRE_GPU();
  int i = 0;
  for (DType in : {DType::kFloat8E4M3, DType::kInt8}) {
    for (bool tok : {false, true}) {
      for (bool chan : {false, true}) {
        A8W8Case c;
        c.m = 37;
        c.n = 45;
        c.k = 272;
        c.in = in;
        c.out = DType::kFloat32;
        c.x_per_token = tok;
        c.w_per_channel = chan;
        c.bias = 2;
        A8W8Data d = make(c, 77 + static_cast<std::uint64_t>(i++));
        GemmCall call = validate_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view());
        call.args.out = d.ref.data();
        run_reference_gemm_a8w8(call.problem, call.args, DType::kFloat32, c.n, nullptr);
        std::vector<float> ref(static_cast<std::size_t>(c.m * c.n)), xs(static_cast<std::size_t>(c.m)),
            ws(static_cast<std::size_t>(c.n)), bias(static_cast<std::size_t>(c.n));
        copy_to_host(ref.data(), d.ref.data(), ref.size() * 4);
        copy_to_host(xs.data(), d.xs.data(), (tok ? c.m : 1) * 4);
        copy_to_host(ws.data(), d.ws.data(), (chan ? c.n : 1) * 4);
        copy_to_host(bias.data(), d.bias.data(), bias.size() * 4);
        auto value = [&](std::uint8_t b) {
          return in == DType::kInt8 ? static_cast<double>(static_cast<std::int8_t>(b)) : fp8_e4m3_value(b);
        };
        int bad = 0;
        for (std::int64_t r = 0; r < c.m; ++r) {
          for (std::int64_t col = 0; col < c.n; ++col) {
            double acc = 0;
            for (std::int64_t k = 0; k < c.k; ++k) acc += value(d.hx[r * c.k + k]) * value(d.hw[col * c.k + k]);
            const double want = acc * xs[tok ? r : 0] * ws[chan ? col : 0] + bias[col];
            const double got = ref[r * c.n + col];
            bad += std::fabs(got - want) > 1e-5 + 1e-5 * std::fabs(want) ? 1 : 0;
          }
        }
        EXPECT_EQ(bad, 0) << c.describe();
      }
    }
  }
}

TEST(GemmA8W8, EveryDtypeRecipeBiasAndOutput) {
  TGEMM_REQUIRE_GPU();
  int i = 0;
  for (DType in : {DType::kFloat8E4M3, DType::kInt8}) {
    for (DType out : {DType::kBFloat16, DType::kFloat16, DType::kFloat32}) {
      for (int recipe = 0; recipe < 4; ++recipe) {
        for (int bias = 0; bias < 3; ++bias) {
          for (auto [m, n, k] : {std::array<std::int64_t, 3>{1, 4096, 4096}, {333, 1000, 528}}) {
            A8W8Case c;
            c.m = m;
            c.n = n;
            c.k = k;
            c.in = in;
            c.out = out;
            c.x_per_token = recipe & 1;
            c.w_per_channel = recipe & 2;
            c.bias = bias;
            A8W8Data d = make(c, 1000 + static_cast<std::uint64_t>(i++));
            const std::string err = run_and_compare(d);
            EXPECT_TRUE(err.empty()) << err;
          }
        }
      }
    }
  }
}

TEST(GemmA8W8, RandomProblemsMatchReference) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(20261127);
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  int run = 0, failed = 0, odd_m = 0, odd_n = 0;
  while (run < 320) {
    A8W8Case c;
    c.m = log_uniform(rng, 1, 2048);
    c.n = log_uniform(rng, 1, 8192);
    c.k = 16 * log_uniform(rng, 1, 512);
    if (static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k) > 3.4e10) continue;
    c.in = rng() % 2 ? DType::kFloat8E4M3 : DType::kInt8;
    c.out = outs[rng() % 3];
    c.x_per_token = rng() % 2;
    c.w_per_channel = rng() % 2;
    c.bias = static_cast<int>(rng() % 3);
    odd_m += c.m % 2;
    odd_n += c.n % 128 != 0 ? 1 : 0;
    A8W8Data d = make(c, static_cast<std::uint64_t>(run) + 1);
    const std::string err = run_and_compare(d);
    if (!err.empty()) {
      ++failed;
      ADD_FAILURE() << err;
    }
    ++run;
  }
  EXPECT_EQ(failed, 0) << failed << " of " << run << " problems wrong";
  EXPECT_GE(odd_m, 60) << "too few problems with odd M";
  EXPECT_GE(odd_n, 200) << "too few problems with N not a multiple of 128";
}

TEST(GemmA8W8, DefaultsAreCublasLtForAlignedShapes) {
  TGEMM_REQUIRE_GPU();
  // FP8 per tensor (scalar scales) and per token x per channel (OUTER_VEC_32F scales): the fused
  // heuristic. int8: IMMA then the scaling pass.
  for (bool tok : {false, true}) {
    A8W8Case c;
    c.m = 64;
    c.n = 4096;
    c.k = 4096;
    c.x_per_token = c.w_per_channel = tok;
    A8W8Data d = make(c, 5);
    const DispatchInfo info = describe_gemm_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, nullptr);
    EXPECT_EQ(info.kernel_name, "cublaslt:heuristic") << c.describe();
  }
  A8W8Case c;
  c.m = 64;
  c.n = 4096;
  c.k = 4096;
  c.in = DType::kInt8;
  A8W8Data d = make(c, 6);
  EXPECT_EQ(describe_gemm_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, nullptr).kernel_name, "cublaslt:heuristic_staged");
}

TEST(GemmA8W8, EmptyProblemsAndKZero) {
  TGEMM_REQUIRE_GPU();
  A8W8Case c;
  c.m = 0;
  c.n = 64;
  c.k = 32;
  A8W8Data empty = make(c, 9);
  empty.xsv = TensorView::contiguous(empty.xs.data(), DType::kFloat32, {1});
  EXPECT_NO_THROW(gemm_a8w8(empty.xv, empty.wv, empty.xsv, empty.wsv, empty.ov, nullptr, nullptr));
  // K = 0: out = bias.
  A8W8Case k0;
  k0.m = 3;
  k0.n = 40;
  k0.k = 0;
  k0.out = DType::kFloat32;
  k0.bias = 2;
  A8W8Data d = make(k0, 10);
  fill_nan(d.out.data(), DType::kFloat32, 3 * 40, nullptr);
  gemm_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view(), nullptr);
  expect_rows_equal(d.out.data(), d.bias.data(), 3, 40);
}

TEST(GemmA8W8, BadInputThrowsAndLeavesNoStickyError) {
  TGEMM_REQUIRE_GPU();
  A8W8Case c;
  c.m = 8;
  c.n = 64;
  c.k = 64;
  A8W8Data d = make(c, 11);
  TensorView bad_x = TensorView::contiguous(d.x.data(), DType::kFloat8E4M3, {8, 40});
  TensorView bad_w = TensorView::contiguous(d.w.data(), DType::kFloat8E4M3, {64, 40});
  EXPECT_THROW(gemm_a8w8(bad_x, bad_w, d.xsv, d.wsv, d.ov, nullptr, nullptr), Error);
  TensorView int8_w = d.wv;
  int8_w.dtype = DType::kInt8;
  EXPECT_THROW(gemm_a8w8(d.xv, int8_w, d.xsv, d.wsv, d.ov, nullptr, nullptr), Error);
  TensorView wrong_scale = TensorView::contiguous(d.xs.data(), DType::kFloat32, {3, 1});
  EXPECT_THROW(gemm_a8w8(d.xv, d.wv, wrong_scale, d.wsv, d.ov, nullptr, nullptr), Error);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_TRUE(run_and_compare(d).empty());
}

TEST(GemmA8W8, ZeroAndNonFiniteScales) {
  TGEMM_REQUIRE_GPU();
  // Documented: a zero scale gives zeros (plus bias); a NaN scale gives NaN in its row.
  A8W8Case c;
  c.m = 4;
  c.n = 64;
  c.k = 64;
  c.out = DType::kFloat32;
  A8W8Data d = make(c, 12);
  std::vector<float> xs = {0.0f, std::nanf(""), 1.0f, 0.5f};
  copy_to_device(d.xs.data(), xs.data(), 16);
  gemm_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, nullptr, nullptr);
  std::vector<float> out(4 * 64);
  copy_to_host(out.data(), d.out.data(), out.size() * 4);
  for (int j = 0; j < 64; ++j) {
    EXPECT_EQ(out[j], 0.0f) << j;
    EXPECT_TRUE(std::isnan(out[64 + j])) << j;
    EXPECT_TRUE(std::isfinite(out[128 + j])) << j;
  }
}

}  // namespace
}  // namespace tgemm::test
