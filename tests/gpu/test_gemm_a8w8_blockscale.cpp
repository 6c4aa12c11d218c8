// gemm_a8w8_blockscale through the public API (tables, walk, default) against the reference of the
// dequantized operands: both x_scale layouts (row-major and DeepGEMM's MN-major TMA-aligned, with
// padded strides), w_scale rows padded or not, bias off / out's dtype / fp32, every output dtype,
// random M 1..8192, N and K not multiples of 128 (partial blocks) and M, N not multiples of 4
// (cuBLASLt's padded and refused shapes), NaN-poisoned outputs. The reference kernel itself is
// checked against a float64 host product.
//
// Operands are FP8 e4m3 codes of magnitude below 2; scales uniform in [0.25, 0.75), so every
// dequantized operand is bounded by 1.5 in magnitude, as in test_gemm_a8w8.cpp, whose tolerance
// argument applies: gemm_tolerance(out, K, bias) with atol times 1.5^2, plus
// fp8_accumulation_atol (Hopper's FP8 tensor cores keep about 14 bits of a running sum between
// promotions; cuBLASLt's block-scaled kernels promote at least once per 128-element block).
#include <cuda_runtime.h>

#include <array>
#include <cmath>
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

struct BlockCase {
  std::int64_t m = 1, n = 1, k = 16;
  DType out = DType::kBFloat16;
  int bias = 0;             // 0 none, 1 out's dtype, 2 fp32
  bool mn_major = false;    // x_scale layout
  std::int64_t xs_pad = 0;  // extra elements of x_scale's ld (MN-major: a multiple of 4)
  std::int64_t ws_pad = 0;  // extra elements of w_scale's row stride
  std::int64_t kb() const { return (k + 127) / 128; }
  std::int64_t nb() const { return (n + 127) / 128; }
  std::int64_t xs_ld() const { return (mn_major ? mn_major_tma_aligned_ld(m) : kb()) + xs_pad; }
  std::int64_t ws_ld() const { return kb() + ws_pad; }
  std::string describe() const {
    return detail::concat("M=", m, " N=", n, " K=", k, " ->", dtype_name(out), " bias=",
                          bias == 0   ? "none"
                          : bias == 1 ? "out"
                                      : "fp32",
                          " x_scale=", mn_major ? "mn_major" : "row_major", " ld ", xs_ld(), " w_scale ld ", ws_ld());
  }
};

struct BlockData {
  BlockCase c;
  std::vector<std::uint8_t> hx, hw;
  DeviceBuffer x, w, xs, ws, bias, out, ref;
  TensorView xv, wv, xsv, wsv, bv, ov;
  const TensorView* bias_view() const { return c.bias ? &bv : nullptr; }
  // The scales on the host, in their device layouts.
  std::vector<float> host_xs() const {
    std::vector<float> h(xs.bytes() / 4);
    copy_to_host(h.data(), xs.data(), xs.bytes());
    return h;
  }
  std::vector<float> host_ws() const {
    std::vector<float> h(ws.bytes() / 4);
    copy_to_host(h.data(), ws.data(), ws.bytes());
    return h;
  }
  float x_scale_at(const std::vector<float>& h, std::int64_t row, std::int64_t b) const {
    return c.mn_major ? h[b * c.xs_ld() + row] : h[row * c.xs_ld() + b];
  }
};

BlockData make(const BlockCase& c, std::uint64_t seed) {
  BlockData d;
  d.c = c;
  std::mt19937_64 rng(seed);
  d.hx.resize(static_cast<std::size_t>(c.m * c.k));
  d.hw.resize(static_cast<std::size_t>(c.n * c.k));
  for (auto& b : d.hx) b = draw_8bit(rng, DType::kFloat8E4M3);
  for (auto& b : d.hw) b = draw_8bit(rng, DType::kFloat8E4M3);
  d.x = DeviceBuffer(std::max<std::size_t>(d.hx.size(), 16));
  d.w = DeviceBuffer(std::max<std::size_t>(d.hw.size(), 16));
  copy_to_device(d.x.data(), d.hx.data(), d.hx.size());
  copy_to_device(d.w.data(), d.hw.data(), d.hw.size());
  // Every element of the scale buffers (padding included) gets a value: the padding must not
  // matter, and a random value there shows it if it does.
  const std::int64_t xs_n = c.mn_major ? c.kb() * c.xs_ld() : c.m * c.xs_ld();
  const std::int64_t ws_n = c.nb() * c.ws_ld();
  d.xs = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(xs_n, 1)) * 4);
  d.ws = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(ws_n, 1)) * 4);
  fill_uniform(d.xs.data(), DType::kFloat32, xs_n, seed * 3 + 1, 0.25f, 0.75f, nullptr);
  fill_uniform(d.ws.data(), DType::kFloat32, ws_n, seed * 3 + 2, 0.25f, 0.75f, nullptr);
  const DType bias_type = c.bias == 2 ? DType::kFloat32 : c.out;
  if (c.bias) {
    d.bias = DeviceBuffer(static_cast<std::size_t>(c.n) * dtype_size(bias_type));
    fill_uniform(d.bias.data(), bias_type, c.n, seed * 3 + 3, -1.0f, 1.0f, nullptr);
  }
  d.out = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.m * c.n, 1)) * dtype_size(c.out));
  d.ref = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.m * c.n, 1)) * 4);
  d.xv = TensorView::contiguous(d.x.data(), DType::kFloat8E4M3, {c.m, c.k});
  d.wv = TensorView::contiguous(d.w.data(), DType::kFloat8E4M3, {c.n, c.k});
  d.xsv = c.mn_major ? TensorView::strided(d.xs.data(), DType::kFloat32, {c.m, c.kb()}, {1, c.xs_ld()})
                     : TensorView::strided(d.xs.data(), DType::kFloat32, {c.m, c.kb()}, {c.xs_ld(), 1});
  d.wsv = TensorView::strided(d.ws.data(), DType::kFloat32, {c.nb(), c.kb()}, {c.ws_ld(), 1});
  d.bv = TensorView::contiguous(d.bias.data(), bias_type, {c.n});
  d.ov = TensorView::contiguous(d.out.data(), c.out, {c.m, c.n});
  return d;
}

std::string kernel_of(const BlockData& d) {
  return describe_gemm_a8w8_blockscale(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view()).kernel_name;
}

// Poisons out, runs gemm_a8w8_blockscale, runs the reference into fp32, compares. Empty on success.
std::string run_and_compare(BlockData& d) {
  const BlockCase& c = d.c;
  fill_nan(d.out.data(), c.out, c.m * c.n, nullptr);
  gemm_a8w8_blockscale(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view(), nullptr);
  GemmCall call = validate_a8w8_blockscale(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view());
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
                        " [solution ", kernel_of(d), "]");
}

TEST(ReferenceA8W8Blockscale, MatchesFloat64HostProduct) {
  TGEMM_REQUIRE_GPU();
  int i = 0;
  for (bool mn_major : {false, true}) {
    BlockCase c;
    c.m = 37;
    c.n = 200;  // two N blocks, the second partial
    c.k = 272;  // three K blocks, the last partial
    c.out = DType::kFloat32;
    c.bias = 2;
    c.mn_major = mn_major;
    c.xs_pad = mn_major ? 4 : 1;
    c.ws_pad = 2;
    BlockData d = make(c, 77 + static_cast<std::uint64_t>(i++));
    GemmCall call = validate_a8w8_blockscale(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view());
    call.args.out = d.ref.data();
    run_reference_gemm_a8w8(call.problem, call.args, DType::kFloat32, c.n, nullptr);
    std::vector<float> ref(static_cast<std::size_t>(c.m * c.n)), bias(static_cast<std::size_t>(c.n));
    copy_to_host(ref.data(), d.ref.data(), ref.size() * 4);
    copy_to_host(bias.data(), d.bias.data(), bias.size() * 4);
    const std::vector<float> xs = d.host_xs(), ws = d.host_ws();
    int bad = 0;
    for (std::int64_t r = 0; r < c.m; ++r) {
      for (std::int64_t col = 0; col < c.n; ++col) {
        double want = bias[col];
        for (std::int64_t b = 0; b < c.kb(); ++b) {
          double acc = 0;
          for (std::int64_t k = b * 128; k < std::min(c.k, b * 128 + 128); ++k) {
            acc += fp8_e4m3_value(d.hx[r * c.k + k]) * fp8_e4m3_value(d.hw[col * c.k + k]);
          }
          want += acc * d.x_scale_at(xs, r, b) * ws[(col / 128) * c.ws_ld() + b];
        }
        const double got = ref[r * c.n + col];
        bad += std::fabs(got - want) > 1e-5 + 1e-5 * std::fabs(want) ? 1 : 0;
      }
    }
    EXPECT_EQ(bad, 0) << c.describe();
  }
}

TEST(GemmA8W8Blockscale, EveryOutputBiasAndScaleLayout) {
  TGEMM_REQUIRE_GPU();
  int i = 0;
  for (DType out : {DType::kBFloat16, DType::kFloat16, DType::kFloat32}) {
    for (int bias = 0; bias < 3; ++bias) {
      for (bool mn_major : {false, true}) {
        // DeepSeek-V3 shapes (K multiple of 128, M multiple of 4: cuBLASLt fused), M = 1 and 333
        // (padded M), N = 1000 with K = 528 (partial blocks).
        for (auto [m, n, k] :
             {std::array<std::int64_t, 3>{64, 7168, 2048}, {1, 2112, 7168}, {333, 1000, 528}, {128, 1536, 7168}}) {
          BlockCase c;
          c.m = m;
          c.n = n;
          c.k = k;
          c.out = out;
          c.bias = bias;
          c.mn_major = mn_major;
          BlockData d = make(c, 1000 + static_cast<std::uint64_t>(i++));
          const std::string err = run_and_compare(d);
          EXPECT_TRUE(err.empty()) << err;
        }
      }
    }
  }
}

TEST(GemmA8W8Blockscale, RandomProblemsMatchReference) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(20261128);
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  int run = 0, failed = 0, odd_m = 0, partial_n = 0, partial_k = 0, mn_major = 0, large_m = 0;
  while (run < 320) {
    BlockCase c;
    c.m = log_uniform(rng, 1, 8192);
    c.n = log_uniform(rng, 1, 8192);
    c.k = 16 * log_uniform(rng, 1, 512);
    // The reference is a plain SIMT kernel: keep each problem under ~3.4e10 multiply-adds.
    if (static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k) > 3.4e10) continue;
    c.out = outs[rng() % 3];
    c.bias = static_cast<int>(rng() % 3);
    c.mn_major = rng() % 2;
    c.xs_pad = rng() % 4 == 0 ? (c.mn_major ? 4 : 3) : 0;
    c.ws_pad = rng() % 4 == 0 ? static_cast<std::int64_t>(1 + rng() % 4) : 0;
    odd_m += c.m % 4 != 0 ? 1 : 0;
    partial_n += c.n % 128 != 0 ? 1 : 0;
    partial_k += c.k % 128 != 0 ? 1 : 0;
    mn_major += c.mn_major ? 1 : 0;
    large_m += c.m >= 2048 ? 1 : 0;
    BlockData d = make(c, static_cast<std::uint64_t>(run) + 1);
    const std::string err = run_and_compare(d);
    if (!err.empty()) {
      ++failed;
      ADD_FAILURE() << err;
    }
    ++run;
  }
  EXPECT_EQ(failed, 0) << failed << " of " << run << " problems wrong";
  EXPECT_GE(odd_m, 100) << "too few problems with M not a multiple of 4";
  EXPECT_GE(partial_n, 200) << "too few problems with N not a multiple of 128";
  EXPECT_GE(partial_k, 100) << "too few problems with K not a multiple of 128";
  EXPECT_GE(mn_major, 100) << "too few problems with MN-major x_scale";
  EXPECT_GE(large_m, 10) << "too few problems with M >= 2048";
}

TEST(GemmA8W8Blockscale, DefaultsByShape) {
  TGEMM_REQUIRE_GPU();
  // cuBLASLt writes out directly where M and N are multiples of 4; pads M through the staged form
  // otherwise; has no solution for N not a multiple of 4, where the reference runs.
  auto kernel = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    BlockCase c;
    c.m = m;
    c.n = n;
    c.k = k;
    return kernel_of(make(c, 5));
  };
  EXPECT_EQ(kernel(64, 7168, 2048), "cublaslt:heuristic");
  EXPECT_EQ(kernel(1, 7168, 2048), "cublaslt:heuristic_staged");
  EXPECT_EQ(kernel(64, 1002, 2048), "reference:simt_f32acc");
}

TEST(GemmA8W8Blockscale, BothScaleLayoutsGiveTheSameBits) {
  TGEMM_REQUIRE_GPU();
  for (std::int64_t m : {64, 61}) {
    BlockCase c;
    c.m = m;
    c.n = 2112;
    c.k = 7168;
    BlockData row = make(c, 21);
    // The same scales, MN-major: the GEMM runs on the same values, so the outputs are identical.
    BlockCase cm = c;
    cm.mn_major = true;
    BlockData col = make(cm, 21);
    const std::vector<float> xs = row.host_xs();
    std::vector<float> xs_col(col.xs.bytes() / 4, 0.0f);
    for (std::int64_t r = 0; r < c.m; ++r) {
      for (std::int64_t b = 0; b < c.kb(); ++b) xs_col[b * cm.xs_ld() + r] = row.x_scale_at(xs, r, b);
    }
    copy_to_device(col.xs.data(), xs_col.data(), col.xs.bytes());
    gemm_a8w8_blockscale(row.xv, row.wv, row.xsv, row.wsv, row.ov, nullptr, nullptr);
    gemm_a8w8_blockscale(col.xv, col.wv, col.xsv, col.wsv, col.ov, nullptr, nullptr);
    std::vector<std::uint16_t> a(static_cast<std::size_t>(c.m * c.n)), b(a.size());
    copy_to_host(a.data(), row.out.data(), a.size() * 2);
    copy_to_host(b.data(), col.out.data(), b.size() * 2);
    EXPECT_EQ(a, b) << c.describe() << " [" << kernel_of(row) << " / " << kernel_of(col) << "]";
  }
}

TEST(GemmA8W8Blockscale, EmptyProblemsAndKZero) {
  TGEMM_REQUIRE_GPU();
  BlockCase c;
  c.m = 0;
  c.n = 64;
  c.k = 256;
  BlockData empty = make(c, 9);
  EXPECT_NO_THROW(gemm_a8w8_blockscale(empty.xv, empty.wv, empty.xsv, empty.wsv, empty.ov, nullptr, nullptr));
  // K = 0: no blocks, out = bias.
  BlockCase k0;
  k0.m = 3;
  k0.n = 40;
  k0.k = 0;
  k0.out = DType::kFloat32;
  k0.bias = 2;
  BlockData d = make(k0, 10);
  fill_nan(d.out.data(), DType::kFloat32, 3 * 40, nullptr);
  gemm_a8w8_blockscale(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view(), nullptr);
  expect_rows_equal(d.out.data(), d.bias.data(), 3, 40);
}

TEST(GemmA8W8Blockscale, BadInputThrowsAndLeavesNoStickyError) {
  TGEMM_REQUIRE_GPU();
  BlockCase c;
  c.m = 8;
  c.n = 256;
  c.k = 256;
  BlockData d = make(c, 11);
  TensorView per_token = TensorView::contiguous(d.xs.data(), DType::kFloat32, {8, 1});
  EXPECT_THROW(gemm_a8w8_blockscale(d.xv, d.wv, per_token, d.wsv, d.ov, nullptr, nullptr), Error);
  TensorView int8_x = d.xv, int8_w = d.wv;
  int8_x.dtype = int8_w.dtype = DType::kInt8;
  EXPECT_THROW(gemm_a8w8_blockscale(int8_x, int8_w, d.xsv, d.wsv, d.ov, nullptr, nullptr), Error);
  TensorView e5m2_x = d.xv, e5m2_w = d.wv;
  e5m2_x.dtype = e5m2_w.dtype = DType::kFloat8E5M2;
  EXPECT_THROW(gemm_a8w8_blockscale(e5m2_x, e5m2_w, d.xsv, d.wsv, d.ov, nullptr, nullptr), Error);
  TensorView short_w = TensorView::contiguous(d.w.data(), DType::kFloat8E4M3, {256, 128});
  EXPECT_THROW(gemm_a8w8_blockscale(d.xv, short_w, d.xsv, d.wsv, d.ov, nullptr, nullptr), Error);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_TRUE(run_and_compare(d).empty());
}

TEST(GemmA8W8Blockscale, ZeroAndNonFiniteScales) {
  TGEMM_REQUIRE_GPU();
  // Documented: a zero scale zeroes its block's contribution; a NaN scale makes every output its
  // block touches NaN. Both on cuBLASLt's path (M, N multiples of 4) and the reference's (N odd).
  for (std::int64_t n : {256, 255}) {
    BlockCase c;
    c.m = 4;
    c.n = n;
    c.k = 256;
    c.out = DType::kFloat32;
    BlockData d = make(c, 12);
    // x_scale row-major [4, 2]: row 0 all zero, row 1 NaN in block 1, rows 2-3 finite.
    std::vector<float> xs = {0.0f, 0.0f, 0.5f, std::nanf(""), 0.5f, 0.5f, 0.25f, 0.75f};
    copy_to_device(d.xs.data(), xs.data(), xs.size() * 4);
    // w_scale [2, 2]: N block 1's K block 0 is zero.
    std::vector<float> ws = {0.5f, 0.5f, 0.0f, 0.5f};
    copy_to_device(d.ws.data(), ws.data(), ws.size() * 4);
    gemm_a8w8_blockscale(d.xv, d.wv, d.xsv, d.wsv, d.ov, nullptr, nullptr);
    std::vector<float> out(static_cast<std::size_t>(4 * n));
    copy_to_host(out.data(), d.out.data(), out.size() * 4);
    for (std::int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(out[j], 0.0f) << "row 0 col " << j << " [" << kernel_of(d) << "]";
      EXPECT_TRUE(std::isnan(out[n + j])) << "row 1 col " << j;
      EXPECT_TRUE(std::isfinite(out[2 * n + j])) << "row 2 col " << j;
    }
    // Column block 1 keeps only K block 1: compare row 3 there with the host sum over K block 1.
    for (std::int64_t j = 128; j < n; ++j) {
      double acc = 0;
      for (std::int64_t k = 128; k < 256; ++k)
        acc += fp8_e4m3_value(d.hx[3 * 256 + k]) * fp8_e4m3_value(d.hw[j * 256 + k]);
      const double want = acc * 0.75 * 0.5;
      EXPECT_NEAR(out[3 * n + j], want, 1e-3 + 1e-3 * std::fabs(want)) << "row 3 col " << j;
    }
  }
}

}  // namespace
}  // namespace tgemm::test
