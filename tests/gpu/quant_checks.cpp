#include "tests/gpu/quant_checks.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

namespace tgemm::test {
namespace {

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

}  // namespace

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

QuantCase quant_case(Grouping g, std::int64_t m, std::int64_t k, DType in, DType q_type) {
  QuantCase c;
  c.grouping = g;
  c.m = m;
  c.k = k;
  c.in = in;
  c.q_type = q_type;
  c.static_scale = 0.0078125f;
  return c;
}

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

std::int64_t scale_index(std::int64_t group, const ScaleLayout& s) {
  return (group / s.cols) * s.s0 + (group % s.cols) * s.s1;
}

void run_quant(const QuantCase& c, const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream) {
  switch (c.grouping) {
    case Grouping::kTensor: quant_fp8_per_tensor(x, q, scale, stream); return;
    case Grouping::kTensorStatic: quant_fp8_per_tensor_static(x, q, scale, stream); return;
    case Grouping::kToken: quant_per_token(x, q, scale, stream); return;
    case Grouping::kBlock1x128:
    case Grouping::kBlock1x128MnMajor: quant_fp8_per_block_1x128(x, q, scale, stream); return;
    case Grouping::kBlock128x128: quant_fp8_per_block_128x128(x, q, scale, stream); return;
  }
}

QuantData make_quant(const QuantCase& c, std::uint64_t seed) {
  QuantData d;
  d.c = c;
  d.ldx = c.k + c.ldx_pad;
  d.ldq = c.k + c.ldq_pad;
  d.x_elems = c.x_offset + std::max<std::int64_t>(c.m * d.ldx, 1);
  d.xbuf = DeviceBuffer(static_cast<std::size_t>(d.x_elems) * 2);
  cudaMemset(d.xbuf.data(), 0, d.xbuf.bytes());
  auto* x0 = static_cast<std::uint16_t*>(d.xbuf.data()) + c.x_offset;
  for (std::int64_t r = 0; r < c.m; ++r) {
    if (c.zero_rows && r % 5 == 2) continue;
    // Magnitudes 2^-12 .. 2^6 across rows, so rows (and their blocks) get different scales.
    const float mag = std::ldexp(1.0f, static_cast<int>((r * 7 + static_cast<std::int64_t>(seed)) % 19) - 12);
    fill_uniform(x0 + r * d.ldx, c.in, c.k, seed * 1000 + static_cast<std::uint64_t>(r), -mag, mag, nullptr);
  }
  d.q_elems = std::max<std::int64_t>(c.m * d.ldq, 1);
  d.qbuf = DeviceBuffer(static_cast<std::size_t>(d.q_elems));
  d.poison = c.q_type == DType::kInt8 ? 0x80 : 0xff;
  d.sl = scale_layout(c);
  d.sbuf = DeviceBuffer(static_cast<std::size_t>(d.sl.elements) * sizeof(float));
  if (c.grouping == Grouping::kTensorStatic) {
    cudaMemcpy(d.sbuf.data(), &c.static_scale, sizeof(float), cudaMemcpyHostToDevice);
  }
  poison_quant(d, nullptr);
  cudaStreamSynchronize(nullptr);

  d.x = TensorView::strided(x0, c.in, {c.m, c.k}, {d.ldx, 1});
  d.q = TensorView::strided(d.qbuf.data(), c.q_type, {c.m, c.k}, {d.ldq, 1});
  if (c.grouping == Grouping::kTensor || c.grouping == Grouping::kTensorStatic) {
    d.scale = TensorView::contiguous(d.sbuf.data(), DType::kFloat32, {1});
  } else if (c.grouping == Grouping::kToken) {
    d.scale = TensorView::contiguous(d.sbuf.data(), DType::kFloat32, {c.m, 1});
  } else {
    d.scale = TensorView::strided(d.sbuf.data(), DType::kFloat32, {d.sl.rows, d.sl.cols}, {d.sl.s0, d.sl.s1});
  }
  return d;
}

void poison_quant(const QuantData& d, Stream stream) {
  cudaMemsetAsync(d.qbuf.data(), d.poison, d.qbuf.bytes(), stream);
  // The static scale is an input; every other scale is written by the call (0xff bytes: NaN).
  if (d.c.grouping != Grouping::kTensorStatic) cudaMemsetAsync(d.sbuf.data(), 0xff, d.sbuf.bytes(), stream);
}

std::string check_case(const QuantCase& c, std::uint64_t seed) {
  QuantData d = make_quant(c, seed);
  try {
    run_quant(c, d.x, d.q, d.scale, nullptr);
  } catch (const std::exception& e) {
    return c.describe() + ": threw " + e.what();
  }
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return c.describe() + ": CUDA error " + cudaGetErrorString(err);
  return quant_mismatch(d);
}

std::string quant_mismatch(const QuantData& d) {
  const QuantCase& c = d.c;
  const std::int64_t ldq = d.ldq;
  const ScaleLayout& sl = d.sl;
  const int poison = d.poison;
  std::vector<std::uint16_t> hx(static_cast<std::size_t>(d.x_elems));
  std::vector<std::uint8_t> hq(static_cast<std::size_t>(d.q_elems));
  std::vector<float> hs(static_cast<std::size_t>(sl.elements));
  copy_to_host(hx.data(), d.xbuf.data(), d.xbuf.bytes());
  copy_to_host(hq.data(), d.qbuf.data(), d.qbuf.bytes());
  copy_to_host(hs.data(), d.sbuf.data(), d.sbuf.bytes());

  const bool int8 = c.q_type == DType::kInt8;
  const float qmax = int8 ? kInt8Max : kFp8E4M3Max;
  const std::int64_t groups =
      c.grouping == Grouping::kTensor || c.grouping == Grouping::kTensorStatic ? 1 : sl.rows * sl.cols;
  std::vector<float> amax(static_cast<std::size_t>(groups), 0.0f);
  auto xval = [&](std::int64_t r, std::int64_t col) {
    return decode_input(hx[static_cast<std::size_t>(c.x_offset + r * d.ldx + col)], c.in);
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

}  // namespace tgemm::test
