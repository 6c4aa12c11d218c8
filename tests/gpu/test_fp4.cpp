// MXFP4 (include/tgemm/fp4.h) on the GPU.
//  - quant_mxfp4 against the host reference (tests/common/mxfp4_ref.h), byte for byte: random
//    rows of different magnitudes, zero rows, subnormal, tie, saturating and non-finite values,
//    padded rows; outputs poisoned first (0xee codes and scales the quantizer never writes for
//    these inputs).
//  - gemm_a16w4 on 300+ random problems, every path (the GEMV at M <= 4, the tensor-core kernel
//    at M 5..32, dequantize + a16w16 above, and the unaligned-x form of small M), against the fp32
//    reference GEMM of x and the host-dequantized weight (exact in x's dtype for these
//    magnitudes), outputs NaN-poisoned.
//  - the tensor-core kernel (Mxfp4Mma): one and two token tiles, K tails inside a 128-wide k-step,
//    split-K clusters, scales outside its 16-bit fast range (decoded through fp32), bit-identical
//    reruns.
//  - gemm_a8w4 (FP8 x, per-tensor or per-token fp32 x_scale) and gemm_a4w4 (MXFP4 x) on 320
//    random problems each, every path, against the fp32 reference GEMM of the dequantized operands
//    (bf16-exact: e4m3 values, e2m1 codes times E8M0 scales), x_scale and bias applied to its fp32
//    sums on the host; outputs NaN-poisoned; NaN scales.
//  - the several-rows-a-warp GEMV (TGEMM_FP4_PATH=gemv_rows, forced through src/fp4/fp4_forced.h):
//    every GEMV check above again, for each activation format (the random problems at M <= 4,
//    M = 1..4, N not a multiple of 128 and below or not a multiple of its 2, 4 or 8 rows a warp,
//    K tails inside its passes, bias, every output dtype, wide scales, NaN scales), and
//    bit-identical reruns.
//  - the errors of bad arguments, nothing launched.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "core/validate.h"
#include "fp4/fp4_forced.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/mxfp4_ref.h"
#include "tgemm/error.h"
#include "tgemm/fp4.h"

namespace tgemm::test {
namespace {

// Exact conversions of values representable in the 16-bit type (the dequantized weights, the
// quantizer's chosen inputs); a bf16 is the top half of the float's bits.
std::uint16_t to_bits16(float v, DType t) {
  std::uint32_t u = 0;
  std::memcpy(&u, &v, 4);
  if (t == DType::kBFloat16) return static_cast<std::uint16_t>(u >> 16);
  // fp16: sign, then the exponent rebased (normal range) or the subnormal mantissa.
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(v);
  if (a == 0.0f) return sign;
  if (std::isnan(v)) return 0x7e00;
  if (std::isinf(v)) return static_cast<std::uint16_t>(sign | 0x7c00);
  int e = 0;
  const float f = std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1)
  if (e - 1 < -14) return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::ldexp(a, 24)));
  const auto mant = static_cast<std::uint16_t>(std::ldexp(f * 2.0f - 1.0f, 10));
  return static_cast<std::uint16_t>(sign | ((e - 1 + 15) << 10) | mant);
}

template <typename T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b(std::max<std::size_t>(v.size() * sizeof(T), 16));
  if (!v.empty()) copy_to_device(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

std::vector<std::uint16_t> to_bits(const std::vector<float>& v, DType t) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_bits16(v[i], t);
  return out;
}

// Values exactly representable in both bf16 and fp16 where in fp16's range: 8 significant bits.
float round8(float v) {
  if (v == 0.0f || !std::isfinite(v)) return v;
  int e = 0;
  const float f = std::frexp(v, &e);
  return std::ldexp(std::nearbyint(f * 256.0f) / 256.0f, e);
}

// ---- quant_mxfp4 ------------------------------------------------------------------------------

struct QuantShape {
  std::int64_t m, k, ldx_pad, ldq_pad;
};

std::string check_quant(const QuantShape& s, DType in, std::uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(s.m * s.k));
  const float big = in == DType::kBFloat16 ? 1e30f : 3e4f;
  for (std::int64_t r = 0; r < s.m; ++r) {
    // Row magnitudes from 2^-20 to 2^12 (2^-40 to bf16's range where allowed), a zero row.
    const int e = static_cast<int>(rng() % 33) - 20;
    for (std::int64_t i = 0; i < s.k; ++i) {
      float v = r == 2 ? 0.0f : round8(std::ldexp(u(rng), e));
      if (in == DType::kFloat16) v = std::clamp(v, -6e4f, 6e4f);
      x[static_cast<std::size_t>(r * s.k + i)] = v;
    }
  }
  if (specials && s.k >= 64 && s.m >= 6) {
    float* row = x.data() + 3 * s.k;
    std::fill(row, row + 32, 0.0f);
    // Ties at the scale 2^0 (amax 6 in the block): 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5 and negatives.
    const float ties[] = {6.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -0.25f, -5.0f, -2.5f, 7.5f, -7.75f};
    for (std::size_t i = 0; i < std::size(ties); ++i) row[i] = ties[i];
    row = x.data() + 4 * s.k;
    row[0] = std::numeric_limits<float>::quiet_NaN();
    row[40] = in == DType::kBFloat16 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    row = x.data() + 5 * s.k;
    for (std::int64_t i = 0; i < 32; ++i) {
      // bf16 subnormals (2^-133..2^-127) or fp16 subnormals (2^-24..2^-15), and a large block.
      row[i] = in == DType::kBFloat16 ? std::ldexp(static_cast<float>(i % 7) - 3.0f, -130)
                                      : std::ldexp(static_cast<float>(i % 7) - 3.0f, -22);
      row[32 + i] = static_cast<float>(i) * big / 32.0f;
    }
  }
  const std::int64_t ldx = s.k + s.ldx_pad, ldq = s.k / 2 + s.ldq_pad, lds = s.k / 32;
  std::vector<std::uint16_t> xb(static_cast<std::size_t>(std::max<std::int64_t>(s.m * ldx, 1)), 0);
  for (std::int64_t r = 0; r < s.m; ++r)
    for (std::int64_t i = 0; i < s.k; ++i)
      xb[static_cast<std::size_t>(r * ldx + i)] = to_bits16(x[static_cast<std::size_t>(r * s.k + i)], in);
  // What the device sees: the host reference quantizes the values of the 16-bit inputs.
  std::vector<float> seen(x.size());
  {
    DeviceBuffer tmp = upload(xb);
    const std::vector<float> all = to_host_floats(tmp.data(), in, s.m * ldx);
    for (std::int64_t r = 0; r < s.m; ++r)
      for (std::int64_t i = 0; i < s.k; ++i)
        seen[static_cast<std::size_t>(r * s.k + i)] = all[static_cast<std::size_t>(r * ldx + i)];
  }
  std::vector<std::uint8_t> q_ref, s_ref;
  quant_mxfp4_ref(seen, s.m, s.k, q_ref, s_ref);

  DeviceBuffer xd = upload(xb);
  std::vector<std::uint8_t> poison_q(static_cast<std::size_t>(std::max<std::int64_t>(s.m * ldq, 1)), 0xee);
  std::vector<std::uint8_t> poison_s(static_cast<std::size_t>(std::max<std::int64_t>(s.m * lds, 1)), 0xee);
  DeviceBuffer qd = upload(poison_q), sd = upload(poison_s);
  quant_mxfp4(TensorView::strided(xd.data(), in, {s.m, s.k}, {ldx, 1}),
              TensorView::strided(qd.data(), DType::kUInt8, {s.m, s.k / 2}, {ldq, 1}),
              TensorView::contiguous(sd.data(), DType::kUInt8, {s.m, s.k / 32}), nullptr);
  if (cudaDeviceSynchronize() != cudaSuccess) return "CUDA error";
  std::vector<std::uint8_t> q(poison_q.size()), sc(poison_s.size());
  copy_to_host(q.data(), qd.data(), q.size());
  copy_to_host(sc.data(), sd.data(), sc.size());
  std::ostringstream os;
  os << "m=" << s.m << " k=" << s.k << " " << dtype_name(in) << ": ";
  for (std::int64_t r = 0; r < s.m; ++r) {
    for (std::int64_t b = 0; b < s.k / 32; ++b) {
      const auto got = sc[static_cast<std::size_t>(r * lds + b)], want = s_ref[static_cast<std::size_t>(r * lds + b)];
      if (got != want)
        return os.str() + "scale (" + std::to_string(r) + ", " + std::to_string(b) + ") " + std::to_string(got) +
               " != " + std::to_string(want);
    }
    for (std::int64_t i = 0; i < ldq; ++i) {
      const auto got = q[static_cast<std::size_t>(r * ldq + i)];
      const std::uint8_t want = i < s.k / 2 ? q_ref[static_cast<std::size_t>(r * (s.k / 2) + i)] : 0xee;
      if (got != want)
        return os.str() + "q (" + std::to_string(r) + ", " + std::to_string(i) + ") " + std::to_string(got) +
               " != " + std::to_string(want);
    }
  }
  return "";
}

TEST(Mxfp4Quant, MatchesHostReferenceByteForByte) {
  TGEMM_REQUIRE_GPU();
  const QuantShape shapes[] = {{1, 32, 0, 0},    {6, 64, 0, 0},     {7, 96, 3, 5},    {33, 4096, 0, 0},
                               {130, 320, 8, 0}, {16, 7168, 0, 16}, {257, 2880, 0, 0}};
  std::uint64_t seed = 11;
  int failed = 0;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (const QuantShape& s : shapes) {
      const std::string err = check_quant(s, in, seed++, true);
      if (!err.empty()) {
        ++failed;
        ADD_FAILURE() << err;
      }
    }
  }
  EXPECT_EQ(failed, 0);
}

// ---- gemm_a16w4 -------------------------------------------------------------------------------

struct A16W4Case {
  std::int64_t m, n, k;
  DType in, out;
  bool bias;
  std::int64_t x_offset;  // elements: an odd offset makes x's rows unaligned (the dequantize path)
  // Row magnitudes 2^-20 .. 2^13 (scales about 105..138) instead of 2^-6 .. 2^0: scales outside the
  // tensor-core kernel's 16-bit fast range. fp32 out keeps the sums in range.
  bool wide_scales = false;
};

using fp4_route::W4Force;

// gemm_a16w4 as the public op runs it (kAuto), or on the path `force` where it can run.
void run_a16w4(W4Force force, const TensorView& x, const TensorView& w, const TensorView& w_scale,
               const TensorView& out, const TensorView* bias) {
  if (force == W4Force::kAuto) {
    gemm_a16w4(x, w, w_scale, out, bias, nullptr);
  } else {
    fp4_route::gemm_a16w4_forced(force, x, w, w_scale, out, bias, nullptr);
  }
}

std::string check_gemm(const A16W4Case& c, std::uint64_t seed, W4Force force = W4Force::kAuto) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.9f, 0.9f);
  // Weights of per-row magnitude 2^0 .. 2^-6: dequantized magnitudes at most 0.75, exact in bf16
  // and fp16 (scales >= 2^-12).
  std::vector<float> w(static_cast<std::size_t>(c.n * c.k));
  for (std::int64_t r = 0; r < c.n; ++r) {
    const int e = c.wide_scales ? static_cast<int>(rng() % 34) - 20 : -static_cast<int>(rng() % 7);
    for (std::int64_t i = 0; i < c.k; ++i) w[static_cast<std::size_t>(r * c.k + i)] = std::ldexp(u(rng), e);
  }
  std::vector<std::uint8_t> q, s;
  quant_mxfp4_ref(w, c.n, c.k, q, s);
  const std::vector<float> wd = dequant_mxfp4_ref(q, s, c.n, c.k);
  DeviceBuffer qd = upload(q), sd = upload(s), w16 = upload(to_bits(wd, c.in));

  DeviceBuffer xd(static_cast<std::size_t>(std::max<std::int64_t>(c.m * c.k + c.x_offset, 1)) * 2);
  fill_uniform(xd.data(), c.in, c.m * c.k + c.x_offset, seed * 7 + 1, -1.0f, 1.0f, nullptr);
  DeviceBuffer od(static_cast<std::size_t>(std::max<std::int64_t>(c.m * c.n, 1)) * dtype_size(c.out));
  DeviceBuffer bd(static_cast<std::size_t>(std::max<std::int64_t>(c.n, 1)) * 4);
  const DType bias_type = c.out == DType::kFloat32 ? DType::kFloat32 : c.in;
  fill_uniform(bd.data(), bias_type, c.n, seed * 7 + 2, -1.0f, 1.0f, nullptr);

  void* xp = static_cast<std::uint16_t*>(xd.data()) + c.x_offset;
  const TensorView x = TensorView::contiguous(xp, c.in, {c.m, c.k});
  const TensorView wq = TensorView::contiguous(qd.data(), DType::kUInt8, {c.n, c.k / 2});
  const TensorView ws = TensorView::contiguous(sd.data(), DType::kUInt8, {c.n, c.k / 32});
  const TensorView wv = TensorView::contiguous(w16.data(), c.in, {c.n, c.k});
  const TensorView out = TensorView::contiguous(od.data(), c.out, {c.m, c.n});
  const TensorView bias = TensorView::contiguous(bd.data(), bias_type, {c.n});
  GemmOptions options;
  if (c.bias) options.bias = &bias;
  // Wide scales put weights up to 2^13 in a row: the sums (rms ~2e4 where unit-scale data give
  // ~1e2) round in fp32, in the kernel and in the fp32 reference alike, about 2^7 times coarser.
  const double magnitude = c.wide_scales ? 0x1p7 : 1.0;
  const std::string err = run_and_compare_views(
      x, wv, out, options, [&] { run_a16w4(force, x, wq, ws, out, c.bias ? &bias : nullptr); }, magnitude);
  if (err.empty()) return "";
  std::ostringstream os;
  os << "gemm_a16w4 m=" << c.m << " n=" << c.n << " k=" << c.k << " " << dtype_name(c.in) << "->" << dtype_name(c.out)
     << (c.bias ? " bias" : "") << " x_offset=" << c.x_offset << (c.wide_scales ? " wide scales" : "")
     << (force == W4Force::kGemvRows ? " (gemv_rows)" : "") << ": " << err;
  return os.str();
}

std::vector<A16W4Case> random_a16w4_cases() {
  std::mt19937_64 rng(4242);
  std::vector<A16W4Case> cases;
  // Fixed: M = 1 and 16 at N not a multiple of 128, K = 32 (one block), a large decode shape.
  cases.push_back({1, 1, 32, DType::kBFloat16, DType::kBFloat16, false, 0});
  cases.push_back({1, 1000, 2880, DType::kBFloat16, DType::kBFloat16, true, 0});
  cases.push_back({16, 4097, 4096, DType::kFloat16, DType::kFloat16, false, 0});
  cases.push_back({17, 129, 4096, DType::kBFloat16, DType::kFloat32, true, 0});
  cases.push_back({1, 300, 64, DType::kBFloat16, DType::kBFloat16, false, 1});  // unaligned x: dequantize path
  cases.push_back({5, 1, 32, DType::kBFloat16, DType::kBFloat16, true, 0});     // tensor-core kernel, one block
  cases.push_back({9, 1001, 7168, DType::kBFloat16, DType::kBFloat16, false, 0});
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  while (cases.size() < 320) {
    A16W4Case c{};
    const bool small = cases.size() % 3 != 0;  // two thirds at M <= 16: the GEMV at M <= 4, then tensor cores
    c.m = small ? log_uniform(rng, 1, 16) : log_uniform(rng, 17, 300);
    if (cases.size() % 10 == 1) c.m = 1;
    c.n = log_uniform(rng, 1, 3000);
    if (c.n % 128 == 0) c.n += 1 + static_cast<std::int64_t>(rng() % 127);
    c.k = 32 * log_uniform(rng, 1, small ? 160 : 64);
    c.in = rng() % 2 ? DType::kBFloat16 : DType::kFloat16;
    c.out = rng() % 3 == 0 ? outs[rng() % 3] : c.in;
    c.bias = rng() % 2 == 0;
    c.x_offset = small && rng() % 8 == 0 ? 1 : 0;
    cases.push_back(c);
  }
  return cases;
}

// Every case of `cases` on `force`'s path (seeds `seed`, `seed` + 1, ... in order), at most 10 failures
// shown.
void run_a16w4_cases(const std::vector<A16W4Case>& cases, W4Force force, std::uint64_t seed = 1) {
  int failed = 0;
  for (const A16W4Case& c : cases) {
    const std::string err = check_gemm(c, seed++, force);
    if (!err.empty()) {
      ++failed;
      if (failed <= 10) ADD_FAILURE() << err;
    }
  }
  EXPECT_EQ(failed, 0) << "of " << cases.size() << " problems";
}

TEST(Mxfp4Gemm, RandomProblemsMatchTheReferenceOfTheDequantizedWeight) {
  TGEMM_REQUIRE_GPU();
  run_a16w4_cases(random_a16w4_cases(), W4Force::kAuto);
}

TEST(Mxfp4Gemm, NaNScaleGivesNaNRows) {
  TGEMM_REQUIRE_GPU();
  // Weight row 2's second block has scale 255: output column 2 is NaN for every token, the others
  // are finite (written over the NaN poison), on every path.
  const std::int64_t m = 40, n = 5, k = 64;
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k / 2), 0x22), s(static_cast<std::size_t>(n * 2), 120);
  s[2 * 2 + 1] = 255;
  DeviceBuffer qd = upload(q), sd = upload(s), xd(m * k * 2), od(m * n * 4);
  fill_uniform(xd.data(), DType::kBFloat16, m * k, 3, -1.0f, 1.0f, nullptr);
  for (W4Force force : {W4Force::kAuto, W4Force::kGemvRows}) {
    for (std::int64_t mm : {std::int64_t{1}, std::int64_t{3}, std::int64_t{8}, std::int64_t{16}, std::int64_t{20}, m}) {
      // GEMV, GEMV, tensor-core kernel (one token tile, one, two), dequantize; gemv_rows: the
      // several-rows GEMV at M = 1 and 3 (its 2 rows a warp past N = 5 unwritten).
      if (force == W4Force::kGemvRows && mm > 4) continue;
      fill_nan(od.data(), DType::kFloat32, mm * n, nullptr);
      run_a16w4(force, TensorView::contiguous(xd.data(), DType::kBFloat16, {mm, k}),
                TensorView::contiguous(qd.data(), DType::kUInt8, {n, k / 2}),
                TensorView::contiguous(sd.data(), DType::kUInt8, {n, k / 32}),
                TensorView::contiguous(od.data(), DType::kFloat32, {mm, n}), nullptr);
      const std::vector<float> out = to_host_floats(od.data(), DType::kFloat32, mm * n);
      for (std::int64_t r = 0; r < mm; ++r)
        for (std::int64_t j = 0; j < n; ++j)
          EXPECT_EQ(std::isnan(out[static_cast<std::size_t>(r * n + j)]), j == 2)
              << (force == W4Force::kGemvRows ? "gemv_rows " : "") << "m=" << mm << " at " << r << ", " << j;
    }
  }
}

// The tensor-core kernel (M 5..32, aligned rows) where its code branches: one and two token tiles,
// K = 32 (three lanes of each quad past K), K tails inside a 128-wide k-step, a split-K cluster of
// 8 (K = 16416: 129 k-steps) and of 2, N tails, scales outside the 16-bit fast range (bf16 above
// 128, fp16 outside 99..128: decoded through fp32). Small enough for compute-sanitizer.
TEST(Mxfp4Mma, KTailsSplitKAndWideScalesMatchTheReference) {
  TGEMM_REQUIRE_GPU();
  const std::vector<A16W4Case> cases = {
      {5, 1, 32, DType::kBFloat16, DType::kBFloat16, true, 0},
      {16, 17, 96, DType::kFloat16, DType::kFloat32, false, 0},
      {8, 129, 160, DType::kBFloat16, DType::kFloat16, true, 0},
      {12, 40, 16416, DType::kBFloat16, DType::kFloat32, true, 0},
      {16, 40, 4128, DType::kFloat16, DType::kFloat16, true, 0},
      {7, 300, 7168, DType::kBFloat16, DType::kBFloat16, false, 0},
      {16, 77, 1024, DType::kBFloat16, DType::kFloat32, true, 0, true},
      {6, 77, 1024, DType::kFloat16, DType::kFloat32, false, 0, true},
      {17, 1, 32, DType::kBFloat16, DType::kBFloat16, true, 0},
      {24, 129, 160, DType::kFloat16, DType::kFloat16, false, 0},
      {32, 40, 16416, DType::kBFloat16, DType::kFloat32, true, 0},
      {29, 77, 1024, DType::kBFloat16, DType::kFloat32, false, 0, true},
  };
  run_a16w4_cases(cases, W4Force::kAuto, 900);
}

// The split-K sums are added in a fixed order (warps, then cluster ranks): two runs write the same
// bytes (two token tiles, a cluster of 8).
TEST(Mxfp4Mma, ResultsAreBitIdenticalRunToRun) {
  TGEMM_REQUIRE_GPU();
  const std::int64_t m = 32, n = 40, k = 16416;
  std::mt19937_64 rng(77);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k / 2)), s(static_cast<std::size_t>(n * k / 32));
  for (auto& b : q) b = static_cast<std::uint8_t>(rng());
  for (auto& b : s) b = static_cast<std::uint8_t>(118 + rng() % 8);
  DeviceBuffer qd = upload(q), sd = upload(s), xd(m * k * 2), o1(m * n * 4), o2(m * n * 4);
  fill_uniform(xd.data(), DType::kBFloat16, m * k, 5, -1.0f, 1.0f, nullptr);
  const TensorView x = TensorView::contiguous(xd.data(), DType::kBFloat16, {m, k});
  const TensorView w = TensorView::contiguous(qd.data(), DType::kUInt8, {n, k / 2});
  const TensorView ws = TensorView::contiguous(sd.data(), DType::kUInt8, {n, k / 32});
  gemm_a16w4(x, w, ws, TensorView::contiguous(o1.data(), DType::kFloat32, {m, n}), nullptr, nullptr);
  gemm_a16w4(x, w, ws, TensorView::contiguous(o2.data(), DType::kFloat32, {m, n}), nullptr, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> a(static_cast<std::size_t>(m * n)), b(a.size());
  copy_to_host(a.data(), o1.data(), a.size() * 4);
  copy_to_host(b.data(), o2.data(), b.size() * 4);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](float v) { return std::isfinite(v); }));
}

// The several-rows-a-warp GEMV (TGEMM_FP4_PATH=gemv_rows) on the random problems the GEMV takes
// (M <= 4, aligned x rows).
TEST(Mxfp4GemvRows, RandomProblemsMatchTheReferenceOfTheDequantizedWeight) {
  TGEMM_REQUIRE_GPU();
  std::vector<A16W4Case> cases;
  for (const A16W4Case& c : random_a16w4_cases())
    if (c.m <= 4 && c.x_offset == 0) cases.push_back(c);
  ASSERT_GE(cases.size(), 100u);
  run_a16w4_cases(cases, W4Force::kGemvRows);
}

// Where the several-rows GEMV's code branches: M = 1..4 (instances of 1, 2 and 4 tokens; 3 runs
// as 4 with a token past M), 2, 4 and 8 rows a warp (N up to 2108, 2109..4216 and, at M <= 2, from
// 4217 on 132 SMs) with N below, or not a multiple of, the rows a warp, K = 32 (one chunk: 31 lanes idle),
// K tails inside a pass of its 16-byte loads and several passes, bias, every output dtype, both
// 16-bit x, scales 2^-20 .. 2^13.
TEST(Mxfp4GemvRows, TailsTokenCountsAndWideScalesMatchTheReference) {
  TGEMM_REQUIRE_GPU();
  const std::vector<A16W4Case> cases = {
      {1, 1, 32, DType::kBFloat16, DType::kBFloat16, true, 0},
      {2, 3, 64, DType::kFloat16, DType::kFloat32, false, 0},
      {3, 7, 96, DType::kBFloat16, DType::kFloat16, true, 0},
      {4, 9, 4128, DType::kBFloat16, DType::kFloat32, true, 0},
      {1, 301, 8192, DType::kFloat16, DType::kFloat16, true, 0},
      {2, 2113, 1056, DType::kBFloat16, DType::kBFloat16, false, 0},
      {4, 3001, 544, DType::kFloat16, DType::kFloat32, true, 0},
      {1, 4097, 14336, DType::kBFloat16, DType::kBFloat16, false, 0},
      {1, 4229, 1024, DType::kBFloat16, DType::kFloat32, true, 0},
      {2, 9001, 288, DType::kFloat16, DType::kFloat16, true, 0},
      {4, 4300, 2080, DType::kBFloat16, DType::kBFloat16, true, 0},
      {1, 77, 1024, DType::kBFloat16, DType::kFloat32, true, 0, true},
      {2, 77, 1024, DType::kFloat16, DType::kFloat32, false, 0, true},
      {4, 2500, 2048, DType::kBFloat16, DType::kFloat32, true, 0, true},
      {3, 4500, 1056, DType::kFloat16, DType::kFloat32, false, 0, true},
  };
  run_a16w4_cases(cases, W4Force::kGemvRows, 1300);
}

// Its sums are reduced in a fixed shuffle order: two runs write the same bytes (M = 4 with 2 rows a
// warp, M = 1 with 8 on 132 SMs; several passes over K).
TEST(Mxfp4GemvRows, ResultsAreBitIdenticalRunToRun) {
  TGEMM_REQUIRE_GPU();
  for (const auto& [m, n] :
       {std::pair<std::int64_t, std::int64_t>{4, 40}, std::pair<std::int64_t, std::int64_t>{1, 5000}}) {
    const std::int64_t k = 16416;
    std::mt19937_64 rng(78);
    std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k / 2)), s(static_cast<std::size_t>(n * k / 32));
    for (auto& b : q) b = static_cast<std::uint8_t>(rng());
    for (auto& b : s) b = static_cast<std::uint8_t>(118 + rng() % 8);
    DeviceBuffer qd = upload(q), sd = upload(s), xd(m * k * 2), o1(m * n * 4), o2(m * n * 4);
    fill_uniform(xd.data(), DType::kBFloat16, m * k, 5, -1.0f, 1.0f, nullptr);
    const TensorView x = TensorView::contiguous(xd.data(), DType::kBFloat16, {m, k});
    const TensorView w = TensorView::contiguous(qd.data(), DType::kUInt8, {n, k / 2});
    const TensorView ws = TensorView::contiguous(sd.data(), DType::kUInt8, {n, k / 32});
    run_a16w4(W4Force::kGemvRows, x, w, ws, TensorView::contiguous(o1.data(), DType::kFloat32, {m, n}), nullptr);
    run_a16w4(W4Force::kGemvRows, x, w, ws, TensorView::contiguous(o2.data(), DType::kFloat32, {m, n}), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> a(static_cast<std::size_t>(m * n)), b(a.size());
    copy_to_host(a.data(), o1.data(), a.size() * 4);
    copy_to_host(b.data(), o2.data(), b.size() * 4);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "n=" << n;
    EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](float v) { return std::isfinite(v); })) << "n=" << n;
  }
}

TEST(Mxfp4Gemm, BadArgumentsThrowBeforeLaunching) {
  TGEMM_REQUIRE_GPU();
  DeviceBuffer xd(4096), qd(4096), sd(256), od(4096);
  const TensorView x = TensorView::contiguous(xd.data(), DType::kBFloat16, {2, 48});
  const TensorView w = TensorView::contiguous(qd.data(), DType::kUInt8, {4, 24});
  const TensorView s = TensorView::contiguous(sd.data(), DType::kUInt8, {4, 1});
  const TensorView out = TensorView::contiguous(od.data(), DType::kBFloat16, {2, 4});
  try {
    gemm_a16w4(x, w, s, out, nullptr, nullptr);
    ADD_FAILURE() << "K = 48 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
  }
  try {
    quant_mxfp4(x, w, s, nullptr);
    ADD_FAILURE() << "K = 48 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- gemm_a8w4 and gemm_a4w4 ------------------------------------------------------------------

struct W4Case {
  bool fp4_x;  // gemm_a4w4 (x MXFP4) or gemm_a8w4 (x FP8)
  std::int64_t m, n, k;
  DType out;
  bool bias;
  DType bias_type;       // out's or fp32
  bool per_token;        // gemm_a8w4's x_scale: [M, 1] or one element
  std::int64_t x_pad;    // bytes appended to each x row: 16 keeps the GEMV, 4 or 8 unaligns it
  std::int64_t out_pad;  // elements appended to each out row
  std::string describe() const {
    std::ostringstream os;
    os << (fp4_x ? "gemm_a4w4" : "gemm_a8w4") << " m=" << m << " n=" << n << " k=" << k << " ->" << dtype_name(out)
       << (bias ? " bias " + std::string(dtype_name(bias_type)) : "")
       << (fp4_x       ? ""
           : per_token ? " per-token"
                       : " per-tensor")
       << " x_pad=" << x_pad << " out_pad=" << out_pad;
    return os.str();
  }
};

// A random MXFP4 matrix [rows, k] of row magnitudes 2^0 .. 2^-6 (dequantized magnitudes at most
// 0.75): its codes, scales and the bf16 bits of its dequantized values (exact).
struct Mxfp4Matrix {
  std::vector<std::uint8_t> q, s;
  std::vector<std::uint16_t> bf16;
};

Mxfp4Matrix random_mxfp4(std::int64_t rows, std::int64_t k, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-0.9f, 0.9f);
  std::vector<float> v(static_cast<std::size_t>(rows * k));
  for (std::int64_t r = 0; r < rows; ++r) {
    const int e = -static_cast<int>(rng() % 7);
    for (std::int64_t i = 0; i < k; ++i) v[static_cast<std::size_t>(r * k + i)] = std::ldexp(u(rng), e);
  }
  Mxfp4Matrix mat;
  quant_mxfp4_ref(v, rows, k, mat.q, mat.s);
  mat.bf16 = to_bits(dequant_mxfp4_ref(mat.q, mat.s, rows, k), DType::kBFloat16);
  return mat;
}

// Rows of `cols` bytes copied into rows of `ld` bytes (pad bytes 0).
std::vector<std::uint8_t> pad_rows(const std::vector<std::uint8_t>& v, std::int64_t rows, std::int64_t cols,
                                   std::int64_t ld) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(std::max<std::int64_t>(rows * ld, 1)), 0);
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(v.begin() + r * cols, cols, out.begin() + r * ld);
  return out;
}

// fp32 [m, n] = a16 [m, k] @ b16 [n, k]^T by the reference kernel (bf16 operands, fp32 sums).
std::vector<float> reference_sums(const TensorView& a16, const TensorView& b16, std::int64_t m, std::int64_t n) {
  DeviceBuffer ref(static_cast<std::size_t>(std::max<std::int64_t>(m * n, 1)) * 4);
  const TensorView rv = TensorView::contiguous(ref.data(), DType::kFloat32, {m, n});
  GemmCall call = validate_a16w16(a16, b16, rv, {});
  int device = 0;
  cudaGetDevice(&device);
  call.problem.device = device;
  run_reference_gemm(call.problem, call.args, DType::kFloat32, n, nullptr);
  return to_host_floats(ref.data(), DType::kFloat32, m * n);
}

// gemm_a4w4 (fp4_x) or gemm_a8w4 as the public op runs it (kAuto), or on the path `force` where it
// can run.
void run_scaled(W4Force force, bool fp4_x, const TensorView& x, const TensorView& w, const TensorView& x_scale,
                const TensorView& w_scale, const TensorView& out, const TensorView* bias) {
  if (force == W4Force::kAuto) {
    if (fp4_x) {
      gemm_a4w4(x, w, x_scale, w_scale, out, bias, nullptr);
    } else {
      gemm_a8w4(x, w, x_scale, w_scale, out, bias, nullptr);
    }
  } else if (fp4_x) {
    fp4_route::gemm_a4w4_forced(force, x, w, x_scale, w_scale, out, bias, nullptr);
  } else {
    fp4_route::gemm_a8w4_forced(force, x, w, x_scale, w_scale, out, bias, nullptr);
  }
}

std::string check_w4(const W4Case& c, std::uint64_t seed, W4Force force = W4Force::kAuto) {
  std::mt19937_64 rng(seed);
  const Mxfp4Matrix w = random_mxfp4(c.n, c.k, rng);
  // x: the operand the op reads (codes, padded rows) and its bf16 dequantized values.
  std::vector<std::uint8_t> xbytes, xscale;
  std::vector<std::uint16_t> x16;
  std::vector<float> row_scale(static_cast<std::size_t>(c.m), 1.0f);
  std::int64_t x_cols = c.k;
  if (c.fp4_x) {
    const Mxfp4Matrix x = random_mxfp4(c.m, c.k, rng);
    xbytes = x.q;
    xscale = x.s;
    x16 = x.bf16;
    x_cols = c.k / 2;
  } else {
    xbytes.resize(static_cast<std::size_t>(c.m * c.k));
    x16.resize(xbytes.size());
    for (std::size_t i = 0; i < xbytes.size(); ++i) {
      xbytes[i] = draw_8bit(rng, DType::kFloat8E4M3);
      x16[i] = to_bits16(static_cast<float>(fp8_e4m3_value(xbytes[i])), DType::kBFloat16);
    }
    // Scales of any fp32 mantissa; with |x| < 2 they keep |x * x_scale| below 1.
    std::uniform_real_distribution<float> us(0.05f, 0.5f);
    for (float& v : row_scale) v = us(rng);
    if (!c.per_token) std::fill(row_scale.begin(), row_scale.end(), row_scale.empty() ? 0.3f : row_scale[0]);
  }
  const std::int64_t ldx = x_cols + c.x_pad, ldo = c.n + c.out_pad;
  DeviceBuffer xd = upload(pad_rows(xbytes, c.m, x_cols, ldx));
  DeviceBuffer xsd = c.fp4_x ? upload(xscale) : upload(c.per_token ? row_scale : std::vector<float>{row_scale[0]});
  DeviceBuffer wq = upload(w.q), ws = upload(w.s), x16d = upload(x16), w16d = upload(w.bf16);
  DeviceBuffer od(static_cast<std::size_t>(std::max<std::int64_t>(c.m * ldo, 1)) * dtype_size(c.out));
  DeviceBuffer bd(static_cast<std::size_t>(std::max<std::int64_t>(c.n, 1)) * 4);
  fill_uniform(bd.data(), c.bias_type, c.n, seed * 7 + 2, -1.0f, 1.0f, nullptr);
  fill_nan(od.data(), c.out, c.m * ldo, nullptr);

  const TensorView x =
      TensorView::strided(xd.data(), c.fp4_x ? DType::kUInt8 : DType::kFloat8E4M3, {c.m, x_cols}, {ldx, 1});
  const TensorView xs = c.fp4_x       ? TensorView::contiguous(xsd.data(), DType::kUInt8, {c.m, c.k / 32})
                        : c.per_token ? TensorView::contiguous(xsd.data(), DType::kFloat32, {c.m, 1})
                                      : TensorView::contiguous(xsd.data(), DType::kFloat32, {1});
  const TensorView wv = TensorView::contiguous(wq.data(), DType::kUInt8, {c.n, c.k / 2});
  const TensorView wsv = TensorView::contiguous(ws.data(), DType::kUInt8, {c.n, c.k / 32});
  const TensorView out = TensorView::strided(od.data(), c.out, {c.m, c.n}, {ldo, 1});
  const TensorView bias = TensorView::contiguous(bd.data(), c.bias_type, {c.n});
  run_scaled(force, c.fp4_x, x, wv, xs, wsv, out, c.bias ? &bias : nullptr);
  const std::string where = c.describe() + (force == W4Force::kGemvRows ? " (gemv_rows)" : "");
  if (cudaDeviceSynchronize() != cudaSuccess) return where + ": CUDA error";

  std::vector<float> ref = reference_sums(TensorView::contiguous(x16d.data(), DType::kBFloat16, {c.m, c.k}),
                                          TensorView::contiguous(w16d.data(), DType::kBFloat16, {c.n, c.k}), c.m, c.n);
  const std::vector<float> b = to_host_floats(bd.data(), c.bias_type, c.n);
  for (std::int64_t r = 0; r < c.m; ++r)
    for (std::int64_t j = 0; j < c.n; ++j) {
      float& v = ref[static_cast<std::size_t>(r * c.n + j)];
      v = v * row_scale[static_cast<std::size_t>(r)] + (c.bias ? b[static_cast<std::size_t>(j)] : 0.0f);
    }
  DeviceBuffer refd = upload(ref);
  const Tolerance tol = gemm_tolerance(c.out, c.k, c.bias);
  const CompareResult r =
      compare_with_reference(od.data(), c.out, ldo, refd.as<float>(), c.n, c.m, c.n, tol.rtol, tol.atol, nullptr);
  if (r.bad == 0) return "";
  std::ostringstream os;
  os << where << ": " << r.bad << " of " << r.checked << " elements off (" << r.nonfinite << " non-finite), max |err| "
     << r.max_abs_err << "; first at (" << r.first_bad / c.n << ", " << r.first_bad % c.n << "): got "
     << r.first_bad_out << ", want " << r.first_bad_ref;
  return os.str();
}

std::vector<W4Case> random_w4_cases(bool fp4_x, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<W4Case> cases;
  // Fixed: M = 1 at N not a multiple of 128, K = 32 (one block), M = 4 and 16 on a decode shape
  // (the GEMV's largest M; the tensor-core kernel, a4w4's dequantize path), M = 17, fp32 out with
  // padded rows (summed in place on the dequantize path), unaligned x rows.
  cases.push_back({fp4_x, 1, 1, 32, DType::kBFloat16, false, DType::kBFloat16, true, 0, 0});
  cases.push_back({fp4_x, 1, 1000, 2880, DType::kBFloat16, true, DType::kFloat32, true, 0, 0});
  cases.push_back({fp4_x, 4, 4097, 4096, DType::kBFloat16, true, DType::kFloat32, true, 0, 0});
  cases.push_back({fp4_x, 16, 4097, 4096, DType::kFloat16, false, DType::kFloat16, false, 0, 0});
  cases.push_back({fp4_x, 17, 129, 4096, DType::kBFloat16, true, DType::kBFloat16, true, 0, 0});
  cases.push_back({fp4_x, 40, 300, 256, DType::kFloat32, true, DType::kFloat32, true, 0, 5});
  cases.push_back({fp4_x, 3, 300, 64, DType::kBFloat16, true, DType::kFloat32, false, 4, 0});  // unaligned x rows
  cases.push_back({fp4_x, 5, 1, 32, DType::kFloat16, true, DType::kFloat16, true, 16, 0});     // a8w4: tensor-core
  cases.push_back({fp4_x, 16, 1001, 7168, DType::kFloat32, false, DType::kFloat32, false, 0, 3});
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  while (cases.size() < 320) {
    W4Case c{};
    c.fp4_x = fp4_x;
    const bool small = cases.size() % 3 != 0;  // two thirds at M <= 16: the GEMV at M <= 4, then tensor cores
    c.m = small ? log_uniform(rng, 1, 16) : log_uniform(rng, 17, 300);
    if (cases.size() % 10 == 1) c.m = 1;
    c.n = log_uniform(rng, 1, 3000);
    if (c.n % 128 == 0) c.n += 1 + static_cast<std::int64_t>(rng() % 127);
    c.k = 32 * log_uniform(rng, 1, small ? 160 : 64);
    c.out = outs[rng() % 3];
    c.bias = rng() % 2 == 0;
    c.bias_type = rng() % 2 == 0 ? c.out : DType::kFloat32;
    c.per_token = rng() % 2 == 0;
    const std::int64_t pads[] = {0, 0, 0, 16, 8, 4};
    c.x_pad = pads[rng() % 6];
    if (!fp4_x && c.x_pad == 4) c.x_pad = 8;
    c.out_pad = rng() % 5 == 0 ? 3 : 0;
    cases.push_back(c);
  }
  return cases;
}

// The random problems of random_w4_cases on `force`'s path; gemv_rows: those the GEMV takes (M <= 4,
// x rows 16-byte aligned: x_pad 0 or 16).
void run_w4_cases(bool fp4_x, std::uint64_t seed, W4Force force = W4Force::kAuto) {
  std::vector<W4Case> cases = random_w4_cases(fp4_x, seed);
  if (force == W4Force::kGemvRows) {
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [](const W4Case& c) { return c.m > 4 || (c.x_pad != 0 && c.x_pad != 16); }),
                cases.end());
    EXPECT_GE(cases.size(), 60u);
  }
  int failed = 0;
  std::uint64_t s = seed;
  for (const W4Case& c : cases) {
    const std::string err = check_w4(c, s++, force);
    if (!err.empty()) {
      ++failed;
      if (failed <= 10) ADD_FAILURE() << err;
    }
  }
  EXPECT_EQ(failed, 0) << "of " << cases.size() << " problems";
}

TEST(Mxfp4GemmA8W4, RandomProblemsMatchTheReferenceOfTheDequantizedOperands) {
  TGEMM_REQUIRE_GPU();
  run_w4_cases(false, 9001);
}

TEST(Mxfp4GemmA4W4, RandomProblemsMatchTheReferenceOfTheDequantizedOperands) {
  TGEMM_REQUIRE_GPU();
  run_w4_cases(true, 7001);
}

TEST(Mxfp4GemvRows, A8W4RandomProblemsMatchTheReferenceOfTheDequantizedOperands) {
  TGEMM_REQUIRE_GPU();
  run_w4_cases(false, 9001, W4Force::kGemvRows);
}

TEST(Mxfp4GemvRows, A4W4RandomProblemsMatchTheReferenceOfTheDequantizedOperands) {
  TGEMM_REQUIRE_GPU();
  run_w4_cases(true, 7001, W4Force::kGemvRows);
}

// A few small problems, one per path and epilogue form (sized for compute-sanitizer): the GEMV at
// M = 1 and 4 (and the several-rows GEMV forced there), unaligned x rows at small M (dequantize
// path), fp32 out with padded rows (summed in place), bf16 out with an fp32 bias (fp32 scratch,
// then the epilogue pass).
TEST(Mxfp4ScaledGemm, EdgeProblemsOfEachPathMatchTheReference) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 500;
  for (bool fp4_x : {false, true}) {
    const W4Case rows_cases[] = {
        {fp4_x, 1, 129, 256, DType::kBFloat16, true, DType::kFloat32, true, 0, 0},
        {fp4_x, 4, 67, 128, DType::kFloat16, false, DType::kFloat16, false, 0, 0},
        {fp4_x, 2, 5, 4128, DType::kFloat32, true, DType::kFloat32, true, 16, 3},
        {fp4_x, 3, 4229, 1024, DType::kBFloat16, true, DType::kFloat32, false, 0, 0},
    };
    for (const W4Case& c : rows_cases) EXPECT_EQ(check_w4(c, seed++, W4Force::kGemvRows), "");
    const W4Case cases[] = {
        {fp4_x, 1, 129, 256, DType::kBFloat16, true, DType::kFloat32, true, 0, 0},
        {fp4_x, 4, 67, 128, DType::kFloat16, false, DType::kFloat16, false, 0, 0},
        {fp4_x, 3, 300, 64, DType::kBFloat16, true, DType::kBFloat16, true, 8, 0},
        {fp4_x, 40, 300, 256, DType::kFloat32, true, DType::kFloat32, true, 16, 5},
        {fp4_x, 33, 65, 96, DType::kBFloat16, true, DType::kFloat32, false, 0, 0},
    };
    for (const W4Case& c : cases) EXPECT_EQ(check_w4(c, seed++), "");
  }
}

// Token 1's x_scale is NaN (gemm_a8w4: the fp32 scale; gemm_a4w4: the E8M0 scale 255 of its first
// block) and weight row 2's second block has scale 255: out row 1 and column 2 are NaN, every
// other output finite, on every path (the several-rows GEMV forced at M = 3).
TEST(Mxfp4ScaledGemm, NaNScalesGiveNaNRowsAndColumns) {
  TGEMM_REQUIRE_GPU();
  const std::int64_t m = 40, n = 5, k = 64;
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k / 2), 0x22), s(static_cast<std::size_t>(n * 2), 120);
  s[2 * 2 + 1] = 255;
  std::vector<std::uint8_t> x8(static_cast<std::size_t>(m * k), 0x38);  // e4m3 1.0
  std::vector<std::uint8_t> x4(static_cast<std::size_t>(m * k / 2), 0x22), xs4(static_cast<std::size_t>(m * 2), 127);
  std::vector<float> xs8(static_cast<std::size_t>(m), 0.5f);
  xs8[1] = std::numeric_limits<float>::quiet_NaN();
  xs4[1 * 2] = 255;
  DeviceBuffer qd = upload(q), sd = upload(s), x8d = upload(x8), x4d = upload(x4), xs4d = upload(xs4),
               xs8d = upload(xs8), od(m * n * 4);
  for (const auto& [fp4_x, force] : {std::pair{false, W4Force::kAuto}, std::pair{true, W4Force::kAuto},
                                     std::pair{false, W4Force::kGemvRows}, std::pair{true, W4Force::kGemvRows}}) {
    for (std::int64_t mm : {std::int64_t{3}, std::int64_t{8}, std::int64_t{20}, m}) {
      // GEMV, tensor-core (a8w4; a4w4: dequantize) x2, dequantize; gemv_rows: M = 3 only
      if (force == W4Force::kGemvRows && mm > 4) continue;
      const TensorView wv = TensorView::contiguous(qd.data(), DType::kUInt8, {n, k / 2});
      const TensorView wsv = TensorView::contiguous(sd.data(), DType::kUInt8, {n, k / 32});
      const TensorView out = TensorView::contiguous(od.data(), DType::kFloat32, {mm, n});
      fill_nan(od.data(), DType::kFloat32, mm * n, nullptr);
      if (fp4_x) {
        run_scaled(force, true, TensorView::contiguous(x4d.data(), DType::kUInt8, {mm, k / 2}), wv,
                   TensorView::contiguous(xs4d.data(), DType::kUInt8, {mm, k / 32}), wsv, out, nullptr);
      } else {
        run_scaled(force, false, TensorView::contiguous(x8d.data(), DType::kFloat8E4M3, {mm, k}), wv,
                   TensorView::contiguous(xs8d.data(), DType::kFloat32, {mm, 1}), wsv, out, nullptr);
      }
      const std::vector<float> o = to_host_floats(od.data(), DType::kFloat32, mm * n);
      for (std::int64_t r = 0; r < mm; ++r)
        for (std::int64_t j = 0; j < n; ++j)
          EXPECT_EQ(std::isnan(o[static_cast<std::size_t>(r * n + j)]), r == 1 || j == 2)
              << (fp4_x ? "gemm_a4w4" : "gemm_a8w4") << (force == W4Force::kGemvRows ? " (gemv_rows)" : "")
              << " m=" << mm << " at " << r << ", " << j;
    }
  }
}

TEST(Mxfp4ScaledGemm, BadArgumentsThrowBeforeLaunching) {
  TGEMM_REQUIRE_GPU();
  DeviceBuffer xd(4096), qd(4096), sd(256), xsd(256), od(4096);
  const TensorView w = TensorView::contiguous(qd.data(), DType::kUInt8, {4, 32});
  const TensorView s = TensorView::contiguous(sd.data(), DType::kUInt8, {4, 2});
  const TensorView out = TensorView::contiguous(od.data(), DType::kBFloat16, {2, 4});
  try {  // packed e2m1 activations with E8M0 scales handed to the FP8 op
    gemm_a8w4(TensorView::contiguous(xd.data(), DType::kUInt8, {2, 32}), w,
              TensorView::contiguous(xsd.data(), DType::kUInt8, {2, 2}), s, out, nullptr, nullptr);
    ADD_FAILURE() << "uint8 x accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("torch.float8_e4m3fn"), std::string::npos) << e.what();
  }
  try {
    gemm_a4w4(TensorView::contiguous(xd.data(), DType::kUInt8, {2, 24}), w,
              TensorView::contiguous(xsd.data(), DType::kUInt8, {2, 2}), s, out, nullptr, nullptr);
    ADD_FAILURE() << "K / 2 = 24 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 16"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tgemm::test
