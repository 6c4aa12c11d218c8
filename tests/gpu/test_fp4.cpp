// MXFP4 (include/tgemm/fp4.h) on the GPU.
//  - quant_mxfp4 against the host reference (tests/common/mxfp4_ref.h), byte for byte: random
//    rows of different magnitudes, zero rows, subnormal, tie, saturating and non-finite values,
//    padded rows; outputs poisoned first (0xee codes and scales the quantizer never writes for
//    these inputs).
//  - gemm_a16w4 on 300+ random problems, both paths (the GEMV at M <= 16, dequantize + a16w16
//    above, and the unaligned-x form of small M), against the fp32 reference GEMM of x and the
//    host-dequantized weight (exact in x's dtype for these magnitudes), outputs NaN-poisoned.
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
#include <vector>

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
};

std::string check_gemm(const A16W4Case& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.9f, 0.9f);
  // Weights of per-row magnitude 2^0 .. 2^-6: dequantized magnitudes at most 0.75, exact in bf16
  // and fp16 (scales >= 2^-12).
  std::vector<float> w(static_cast<std::size_t>(c.n * c.k));
  for (std::int64_t r = 0; r < c.n; ++r) {
    const int e = -static_cast<int>(rng() % 7);
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
  const std::string err = run_and_compare_views(x, wv, out, options,
                                                [&] { gemm_a16w4(x, wq, ws, out, c.bias ? &bias : nullptr, nullptr); });
  if (err.empty()) return "";
  std::ostringstream os;
  os << "gemm_a16w4 m=" << c.m << " n=" << c.n << " k=" << c.k << " " << dtype_name(c.in) << "->" << dtype_name(c.out)
     << (c.bias ? " bias" : "") << " x_offset=" << c.x_offset << ": " << err;
  return os.str();
}

TEST(Mxfp4Gemm, RandomProblemsMatchTheReferenceOfTheDequantizedWeight) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(4242);
  std::vector<A16W4Case> cases;
  // Fixed: M = 1 and 16 at N not a multiple of 128, K = 32 (one block), a large decode shape.
  cases.push_back({1, 1, 32, DType::kBFloat16, DType::kBFloat16, false, 0});
  cases.push_back({1, 1000, 2880, DType::kBFloat16, DType::kBFloat16, true, 0});
  cases.push_back({16, 4097, 4096, DType::kFloat16, DType::kFloat16, false, 0});
  cases.push_back({17, 129, 4096, DType::kBFloat16, DType::kFloat32, true, 0});
  cases.push_back({1, 300, 64, DType::kBFloat16, DType::kBFloat16, false, 1});  // unaligned x: dequantize path
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  while (cases.size() < 320) {
    A16W4Case c{};
    const bool small = cases.size() % 3 != 0;  // two thirds on the GEMV
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
  int failed = 0;
  std::uint64_t seed = 1;
  for (const A16W4Case& c : cases) {
    const std::string err = check_gemm(c, seed++);
    if (!err.empty()) {
      ++failed;
      if (failed <= 10) ADD_FAILURE() << err;
    }
  }
  EXPECT_EQ(failed, 0) << "of " << cases.size() << " problems";
}

TEST(Mxfp4Gemm, NaNScaleGivesNaNRows) {
  TGEMM_REQUIRE_GPU();
  // Weight row 2's second block has scale 255: output column 2 is NaN for every token, the others
  // are finite, on both paths.
  const std::int64_t m = 20, n = 5, k = 64;
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n * k / 2), 0x22), s(static_cast<std::size_t>(n * 2), 120);
  s[2 * 2 + 1] = 255;
  DeviceBuffer qd = upload(q), sd = upload(s), xd(m * k * 2), od(m * n * 4);
  fill_uniform(xd.data(), DType::kBFloat16, m * k, 3, -1.0f, 1.0f, nullptr);
  for (std::int64_t mm : {std::int64_t{1}, std::int64_t{3}, m}) {  // GEMV, GEMV, dequantize
    gemm_a16w4(TensorView::contiguous(xd.data(), DType::kBFloat16, {mm, k}),
               TensorView::contiguous(qd.data(), DType::kUInt8, {n, k / 2}),
               TensorView::contiguous(sd.data(), DType::kUInt8, {n, k / 32}),
               TensorView::contiguous(od.data(), DType::kFloat32, {mm, n}), nullptr, nullptr);
    const std::vector<float> out = to_host_floats(od.data(), DType::kFloat32, mm * n);
    for (std::int64_t r = 0; r < mm; ++r)
      for (std::int64_t j = 0; j < n; ++j)
        EXPECT_EQ(std::isnan(out[static_cast<std::size_t>(r * n + j)]), j == 2) << r << ", " << j;
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

}  // namespace
}  // namespace tgemm::test
