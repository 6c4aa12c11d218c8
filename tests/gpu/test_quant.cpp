// The quantization entry points (include/tgemm/quant.h) against a host reference of the same
// arithmetic, code for code and scale for scale (bit-exact: amax is exact, the scale one fp32
// division, q one fp32 multiply and one round-to-nearest-even conversion on both sides). Random
// bf16/fp16 data with a different magnitude per row, zero rows and blocks (scale 1), odd shapes
// (M = 1, K = 1, 129, 4095, rows longer than the per-token kernel's register cache), padded and
// misaligned rows (the element-load paths), both 1x128 scale layouts; q poisoned (0xff, a NaN in
// e4m3fn; 0x80 in int8, a code the quantizer never writes) and scales NaN-poisoned first, row
// padding checked untouched. Then the errors of bad arguments.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/gpu_test_util.h"
#include "tgemm/error.h"
#include "tgemm/quant.h"

namespace tgemm::test {
namespace {

enum class Grouping { kTensor, kTensorStatic, kToken, kBlock1x128, kBlock1x128MnMajor, kBlock128x128 };

const char* grouping_name(Grouping g) {
  switch (g) {
    case Grouping::kTensor: return "per_tensor";
    case Grouping::kTensorStatic: return "per_tensor_static";
    case Grouping::kToken: return "per_token";
    case Grouping::kBlock1x128: return "1x128";
    case Grouping::kBlock1x128MnMajor: return "1x128_mn_major";
    case Grouping::kBlock128x128: return "128x128";
  }
  return "?";
}

// ---- host reference ----

float bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

float decode_input(std::uint16_t h, DType t) {
  if (t == DType::kBFloat16) return bits_to_float(static_cast<std::uint32_t>(h) << 16);
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

// float8_e4m3fn, round to nearest even, saturating to +-448; NaN to 0x7f (with the sign).
std::uint8_t encode_e4m3(float v) {
  const std::uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  if (std::isnan(v)) return sign | 0x7f;
  const float a = std::fabs(v);
  if (a >= 448.0f) return sign | 0x7e;
  if (a < std::ldexp(1.0f, -6)) {
    // Subnormals (and zero): multiples of 2^-9; the scaling is exact, nearbyint rounds to even.
    const int r = static_cast<int>(std::nearbyint(std::ldexp(a, 9)));
    return sign | static_cast<std::uint8_t>(r);  // r = 8 is the smallest normal, code 0x08
  }
  int e2 = 0;
  std::frexp(a, &e2);                                              // a = f 2^e2, f in [0.5, 1)
  int e = e2 - 1;                                                  // a in [2^e, 2^(e+1))
  int r = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - e)));  // [8, 16]
  if (r == 16) {
    r = 8;
    ++e;
  }
  const int code = ((e + 7) << 3) | (r - 8);
  return sign | static_cast<std::uint8_t>(std::min(code, 0x7e));
}

std::uint8_t encode_int8(float v) {
  if (std::isnan(v)) return 0;
  const float r = std::nearbyint(v);
  return static_cast<std::uint8_t>(static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f)));
}

float host_scale(float amax, float qmax) {
  if (amax == 0.0f) return 1.0f;
  return std::max(amax / qmax, FLT_MIN);
}

// ---- one case ----

struct QuantCase {
  Grouping grouping = Grouping::kToken;
  std::int64_t m = 1, k = 1;
  DType in = DType::kBFloat16;
  DType q_type = DType::kFloat8E4M3;
  std::int64_t ldx_pad = 0, ldq_pad = 0;
  std::int64_t x_offset = 0;  // elements: an odd offset breaks the 16-byte alignment
  bool zero_rows = false;     // every fifth row all zeros
  float static_scale = 0.0f;  // kTensorStatic
  std::string describe() const {
    std::ostringstream os;
    os << grouping_name(grouping) << " M=" << m << " K=" << k << " " << dtype_short_name(in) << "->"
       << dtype_short_name(q_type);
    if (ldx_pad || ldq_pad || x_offset)
      os << " ldx_pad=" << ldx_pad << " ldq_pad=" << ldq_pad << " x_offset=" << x_offset;
    if (zero_rows) os << " zero_rows";
    return os.str();
  }
};

struct ScaleLayout {
  std::int64_t rows = 1, cols = 1, s0 = 1, s1 = 1, elements = 1;
};

ScaleLayout scale_layout(const QuantCase& c) {
  const std::int64_t kb = (c.k + 127) / 128;
  switch (c.grouping) {
    case Grouping::kTensor:
    case Grouping::kTensorStatic: return {1, 1, 1, 1, 1};
    case Grouping::kToken: return {c.m, 1, 1, 1, std::max<std::int64_t>(c.m, 1)};
    case Grouping::kBlock1x128: return {c.m, kb, kb + 1, 1, std::max<std::int64_t>(c.m * (kb + 1), 1)};
    case Grouping::kBlock1x128MnMajor: {
      const std::int64_t ld = mn_major_tma_aligned_ld(c.m);
      return {c.m, kb, 1, ld, std::max<std::int64_t>(ld * kb, 1)};
    }
    case Grouping::kBlock128x128: {
      const std::int64_t nb = (c.m + 127) / 128;
      return {nb, kb, kb, 1, std::max<std::int64_t>(nb * kb, 1)};
    }
  }
  return {};
}

// The group (index into the scales) of element (r, col) and the number of groups.
std::int64_t group_of(const QuantCase& c, std::int64_t r, std::int64_t col, const ScaleLayout& s) {
  switch (c.grouping) {
    case Grouping::kTensor:
    case Grouping::kTensorStatic: return 0;
    case Grouping::kToken: return r;
    case Grouping::kBlock1x128:
    case Grouping::kBlock1x128MnMajor: return r * s.cols + col / 128;
    case Grouping::kBlock128x128: return (r / 128) * s.cols + col / 128;
  }
  return 0;
}

std::int64_t scale_index(std::int64_t group, const ScaleLayout& s) {
  return (group / s.cols) * s.s0 + (group % s.cols) * s.s1;
}

void run_api(const QuantCase& c, const TensorView& x, const TensorView& q, const TensorView& scale) {
  switch (c.grouping) {
    case Grouping::kTensor: quant_fp8_per_tensor(x, q, scale, nullptr); return;
    case Grouping::kTensorStatic: quant_fp8_per_tensor_static(x, q, scale, nullptr); return;
    case Grouping::kToken: quant_per_token(x, q, scale, nullptr); return;
    case Grouping::kBlock1x128:
    case Grouping::kBlock1x128MnMajor: quant_fp8_per_block_1x128(x, q, scale, nullptr); return;
    case Grouping::kBlock128x128: quant_fp8_per_block_128x128(x, q, scale, nullptr); return;
  }
}

// Runs the case and compares with the host reference; "" when every code and scale matches.
std::string check_case(const QuantCase& c, std::uint64_t seed) {
  const std::int64_t ldx = c.k + c.ldx_pad, ldq = c.k + c.ldq_pad;
  const std::int64_t x_elems = c.x_offset + std::max<std::int64_t>(c.m * ldx, 1);
  DeviceBuffer xbuf(static_cast<std::size_t>(x_elems) * 2);
  cudaMemset(xbuf.data(), 0, xbuf.bytes());
  auto* x0 = static_cast<std::uint16_t*>(xbuf.data()) + c.x_offset;
  for (std::int64_t r = 0; r < c.m; ++r) {
    if (c.zero_rows && r % 5 == 2) continue;
    // Magnitudes 2^-12 .. 2^6 across rows, so rows (and their blocks) get different scales.
    const float mag = std::ldexp(1.0f, static_cast<int>((r * 7 + static_cast<std::int64_t>(seed)) % 19) - 12);
    fill_uniform(x0 + r * ldx, c.in, c.k, seed * 1000 + static_cast<std::uint64_t>(r), -mag, mag, nullptr);
  }
  const std::int64_t q_elems = std::max<std::int64_t>(c.m * ldq, 1);
  DeviceBuffer qbuf(static_cast<std::size_t>(q_elems));
  const int poison = c.q_type == DType::kInt8 ? 0x80 : 0xff;
  cudaMemset(qbuf.data(), poison, qbuf.bytes());
  const ScaleLayout sl = scale_layout(c);
  DeviceBuffer sbuf(static_cast<std::size_t>(sl.elements) * sizeof(float));
  cudaMemset(sbuf.data(), 0xff, sbuf.bytes());  // NaN
  if (c.grouping == Grouping::kTensorStatic) {
    cudaMemcpy(sbuf.data(), &c.static_scale, sizeof(float), cudaMemcpyHostToDevice);
  }

  TensorView x = TensorView::strided(x0, c.in, {c.m, c.k}, {ldx, 1});
  TensorView q = TensorView::strided(qbuf.data(), c.q_type, {c.m, c.k}, {ldq, 1});
  TensorView scale;
  if (c.grouping == Grouping::kTensor || c.grouping == Grouping::kTensorStatic) {
    scale = TensorView::contiguous(sbuf.data(), DType::kFloat32, {1});
  } else if (c.grouping == Grouping::kToken) {
    scale = TensorView::contiguous(sbuf.data(), DType::kFloat32, {c.m, 1});
  } else {
    scale = TensorView::strided(sbuf.data(), DType::kFloat32, {sl.rows, sl.cols}, {sl.s0, sl.s1});
  }
  try {
    run_api(c, x, q, scale);
  } catch (const std::exception& e) {
    return c.describe() + ": threw " + e.what();
  }
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return c.describe() + ": CUDA error " + cudaGetErrorString(err);

  std::vector<std::uint16_t> hx(static_cast<std::size_t>(x_elems));
  std::vector<std::uint8_t> hq(static_cast<std::size_t>(q_elems));
  std::vector<float> hs(static_cast<std::size_t>(sl.elements));
  copy_to_host(hx.data(), xbuf.data(), xbuf.bytes());
  copy_to_host(hq.data(), qbuf.data(), qbuf.bytes());
  copy_to_host(hs.data(), sbuf.data(), sbuf.bytes());

  const bool int8 = c.q_type == DType::kInt8;
  const float qmax = int8 ? kInt8Max : kFp8E4M3Max;
  const std::int64_t groups =
      c.grouping == Grouping::kTensor || c.grouping == Grouping::kTensorStatic ? 1 : sl.rows * sl.cols;
  std::vector<float> amax(static_cast<std::size_t>(groups), 0.0f);
  auto xval = [&](std::int64_t r, std::int64_t col) {
    return decode_input(hx[static_cast<std::size_t>(c.x_offset + r * ldx + col)], c.in);
  };
  for (std::int64_t r = 0; r < c.m; ++r)
    for (std::int64_t col = 0; col < c.k; ++col) {
      float& a = amax[static_cast<std::size_t>(group_of(c, r, col, sl))];
      a = std::max(a, std::fabs(xval(r, col)));
    }
  std::vector<float> want_scale(static_cast<std::size_t>(groups));
  for (std::int64_t g = 0; g < groups; ++g) {
    want_scale[static_cast<std::size_t>(g)] =
        c.grouping == Grouping::kTensorStatic ? c.static_scale : host_scale(amax[static_cast<std::size_t>(g)], qmax);
  }
  std::ostringstream os;
  // Every scale of the view, bit for bit (an empty tensor's per-tensor scale is 1).
  const bool empty = c.m == 0 || c.k == 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    if (empty && c.grouping != Grouping::kTensor && c.grouping != Grouping::kToken) break;
    const float got = hs[static_cast<std::size_t>(scale_index(g, sl))];
    const float want = want_scale[static_cast<std::size_t>(g)];
    if (std::memcmp(&got, &want, sizeof(float)) != 0) {
      os << c.describe() << ": scale of group " << g << " is " << got << ", want " << want << " (amax "
         << amax[static_cast<std::size_t>(g)] << ")";
      return os.str();
    }
  }
  for (std::int64_t r = 0; r < c.m; ++r) {
    for (std::int64_t col = 0; col < ldq; ++col) {
      const std::uint8_t got = hq[static_cast<std::size_t>(r * ldq + col)];
      if (col >= c.k) {
        if (got != poison) {
          os << c.describe() << ": padding q[" << r << ", " << col << "] was written (" << int{got} << ")";
          return os.str();
        }
        continue;
      }
      const float s = want_scale[static_cast<std::size_t>(group_of(c, r, col, sl))];
      const float v = xval(r, col) * (1.0f / s);
      const std::uint8_t want = int8 ? encode_int8(v) : encode_e4m3(v);
      if (got != want) {
        os << c.describe() << ": q[" << r << ", " << col << "] = 0x" << std::hex << int{got} << ", want 0x" << int{want}
           << std::dec << " (x " << xval(r, col) << ", scale " << s << ")";
        return os.str();
      }
    }
  }
  return "";
}

QuantCase qc(Grouping g, std::int64_t m, std::int64_t k, DType in = DType::kBFloat16,
             DType q_type = DType::kFloat8E4M3) {
  QuantCase c;
  c.grouping = g;
  c.m = m;
  c.k = k;
  c.in = in;
  c.q_type = q_type;
  c.static_scale = 0.0078125f;
  return c;
}

// Shapes every grouping runs: M = 1, K = 1, K = 129 and 4095 (partial vectors and blocks), K a
// multiple of 128 and of 8, M past a 128-row block.
const std::int64_t kShapes[][2] = {{1, 1},     {1, 128},  {1, 129},    {3, 4095},  {7, 4096},
                                   {16, 7168}, {33, 129}, {130, 1000}, {257, 384}, {1, 16384}};

void expect_all_match(const std::vector<QuantCase>& cases) {
  int failed = 0;
  std::uint64_t seed = 1;
  for (const QuantCase& c : cases) {
    const std::string err = check_case(c, seed++);
    if (!err.empty()) {
      ++failed;
      ADD_FAILURE() << err;
    }
  }
  EXPECT_EQ(failed, 0) << "of " << cases.size() << " cases";
}

std::vector<QuantCase> cases_for(Grouping g, DType q_type = DType::kFloat8E4M3) {
  std::vector<QuantCase> cases;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (const auto& s : kShapes) cases.push_back(qc(g, s[0], s[1], in, q_type));
    // Padded rows of x and q (element paths where misaligned), an odd x offset, zero rows.
    QuantCase padded = qc(g, 37, 520, in, q_type);
    padded.ldx_pad = 8;
    padded.ldq_pad = 5;
    cases.push_back(padded);
    QuantCase odd = qc(g, 19, 1024, in, q_type);
    odd.x_offset = 1;
    odd.ldx_pad = 3;
    cases.push_back(odd);
    QuantCase zeros = qc(g, 140, 300, in, q_type);
    zeros.zero_rows = true;
    cases.push_back(zeros);
  }
  return cases;
}

TEST(Quant, PerTensorMatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kTensor));
}

TEST(Quant, PerTensorStaticMatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kTensorStatic));
}

TEST(Quant, PerTokenFp8MatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  std::vector<QuantCase> cases = cases_for(Grouping::kToken);
  // Rows longer than the register cache (256 threads x 4 vectors x 8): the re-read path.
  cases.push_back(qc(Grouping::kToken, 2, 20000));
  expect_all_match(cases);
}

TEST(Quant, PerTokenInt8MatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  std::vector<QuantCase> cases = cases_for(Grouping::kToken, DType::kInt8);
  cases.push_back(qc(Grouping::kToken, 2, 20000, DType::kFloat16, DType::kInt8));
  expect_all_match(cases);
}

TEST(Quant, Block1x128RowMajorMatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kBlock1x128));
}

TEST(Quant, Block1x128MnMajorMatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kBlock1x128MnMajor));
}

TEST(Quant, Block128x128MatchesHostReference) {
  TGEMM_REQUIRE_GPU();
  expect_all_match(cases_for(Grouping::kBlock128x128));
}

TEST(Quant, ZeroInputGivesScaleOneAndZeroCodes) {
  TGEMM_REQUIRE_GPU();
  for (Grouping g : {Grouping::kTensor, Grouping::kToken, Grouping::kBlock1x128, Grouping::kBlock128x128}) {
    QuantCase c = qc(g, 130, 260);
    DeviceBuffer x(static_cast<std::size_t>(c.m * c.k) * 2), q(static_cast<std::size_t>(c.m * c.k));
    const ScaleLayout sl = scale_layout(c);
    DeviceBuffer s(static_cast<std::size_t>(sl.elements) * sizeof(float));
    cudaMemset(x.data(), 0, x.bytes());
    cudaMemset(q.data(), 0xff, q.bytes());
    cudaMemset(s.data(), 0xff, s.bytes());
    TensorView xv = TensorView::contiguous(x.data(), DType::kBFloat16, {c.m, c.k});
    TensorView qv = TensorView::contiguous(q.data(), DType::kFloat8E4M3, {c.m, c.k});
    TensorView sv = g == Grouping::kTensor ? TensorView::contiguous(s.data(), DType::kFloat32, {1})
                    : g == Grouping::kToken
                        ? TensorView::contiguous(s.data(), DType::kFloat32, {c.m, 1})
                        : TensorView::strided(s.data(), DType::kFloat32, {sl.rows, sl.cols}, {sl.s0, sl.s1});
    run_api(c, xv, qv, sv);
    std::vector<std::uint8_t> hq(q.bytes());
    std::vector<float> hs(static_cast<std::size_t>(sl.elements));
    copy_to_host(hq.data(), q.data(), q.bytes());
    copy_to_host(hs.data(), s.data(), s.bytes());
    EXPECT_TRUE(std::all_of(hq.begin(), hq.end(), [](std::uint8_t b) { return b == 0; })) << grouping_name(g);
    for (std::int64_t i = 0; i < sl.rows * sl.cols; ++i) {
      EXPECT_EQ(hs[static_cast<std::size_t>(scale_index(i, sl))], 1.0f) << grouping_name(g) << " scale " << i;
    }
  }
}

TEST(Quant, EmptyInputs) {
  TGEMM_REQUIRE_GPU();
  // M = 0 launches nothing; an empty tensor's per-tensor scale is 1; K = 0 rows get scale 1.
  expect_all_match({qc(Grouping::kTensor, 0, 64), qc(Grouping::kToken, 0, 64), qc(Grouping::kBlock1x128, 0, 64),
                    qc(Grouping::kBlock128x128, 0, 64), qc(Grouping::kToken, 5, 0), qc(Grouping::kTensor, 4, 0)});
}

TEST(Quant, BadArgumentsRaiseClearErrorsAndLaunchNothing) {
  TGEMM_REQUIRE_GPU();
  DeviceBuffer x(64 * 256 * 2), q(64 * 256), s(64 * 2 * sizeof(float));
  const TensorView xv = TensorView::contiguous(x.data(), DType::kBFloat16, {64, 256});
  const TensorView qv = TensorView::contiguous(q.data(), DType::kFloat8E4M3, {64, 256});
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const TensorView s_tok = TensorView::contiguous(s.data(), DType::kFloat32, {64, 1});
  const TensorView q_e5m2 = TensorView::contiguous(q.data(), DType::kFloat8E5M2, {64, 256});
  expect_error([&] { quant_per_token(xv, q_e5m2, s_tok); }, "quant_per_token: q.dtype torch.float8_e5m2");
  const TensorView q_int8 = TensorView::contiguous(q.data(), DType::kInt8, {64, 256});
  const TensorView s_blk = TensorView::contiguous(s.data(), DType::kFloat32, {64, 2});
  expect_error([&] { quant_fp8_per_block_1x128(xv, q_int8, s_blk); },
               "quant_fp8_per_block_1x128: q.dtype must be torch.float8_e4m3fn, got torch.int8");
  const TensorView s_wrong = TensorView::contiguous(s.data(), DType::kFloat32, {64, 3});
  expect_error([&] { quant_fp8_per_block_1x128(xv, qv, s_wrong); }, "scale must be [M, ceil(K / 128)] = [64, 2]");
  const TensorView s_col = TensorView::strided(s.data(), DType::kFloat32, {64, 2}, {1, 66});
  expect_error([&] { quant_fp8_per_block_1x128(xv, qv, s_col); }, "MN-major TMA-aligned");
  expect_error([&] { quant_fp8_per_tensor(xv, qv, s_tok); }, "quant_fp8_per_tensor: scale must hold one element");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tgemm::test
