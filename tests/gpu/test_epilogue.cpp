// Fused epilogues through the public API: out = act(alpha * x @ w^T + beta * c + bias) for every
// activation, alpha, beta with a separate c and in place (c = out), bias on and off, every output
// dtype; the named forms (gemm_bias, gemm_gelu, gemm_relu, gemm_alpha_beta); K = 0; and the
// errors of bad epilogue arguments. Compared with the fp32 reference (itself checked against
// float64 in test_reference.cu).
// Then the separate epilogue pass, tgemm::epilogue_rows (cuda/elementwise.h), called directly:
// its vectorized path (8 columns a thread) and its scalar fallback (odd n, misaligned pointers, odd
// leading dimensions), each against a float64 host reference, and the two paths against each
// other bit for bit on the same data.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "cuda/elementwise.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

TEST(Epilogue, RandomProblemsMatchReference) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(777);
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  int failed = 0;
  for (int i = 0; i < 160; ++i) {
    A16W16Case c;
    c.m = 1 + static_cast<std::int64_t>(rng() % 700);
    c.n = 1 + static_cast<std::int64_t>(rng() % 900);
    c.k = 1 + static_cast<std::int64_t>(rng() % 1500);
    if (rng() % 3 == 0) c.n = (c.n / 64 + 1) * 64;
    c.in = rng() % 2 ? DType::kBFloat16 : DType::kFloat16;
    c.out = outs[rng() % 3];
    c.bias = rng() % 2;
    c.bias_type = c.in;  // the default is bf16; fp16 inputs take an fp16 (or out-typed) bias
    c.activation = static_cast<Activation>(rng() % 4);
    if (rng() % 3 == 0) c.alpha = 0.5f + static_cast<float>(rng() % 100) / 100.0f;
    if (rng() % 3 == 0) {
      c.beta = (rng() % 2 ? 1.0f : -0.75f);
      c.c_in_place = rng() % 2;
    }
    if (rng() % 4 == 0) c.ldo_pad = static_cast<std::int64_t>(rng() % 5);
    A16W16Data d = make_a16w16(c, 5000 + static_cast<std::uint64_t>(i));
    std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
    if (!err.empty()) {
      ++failed;
      ADD_FAILURE() << err << " [" << describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options()).kernel_name << "]";
    }
  }
  EXPECT_EQ(failed, 0);
}

TEST(Epilogue, NamedFormsEqualTheirOptions) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 33;
  c.n = 200;
  c.k = 96;
  c.bias = true;
  {
    A16W16Data d = make_a16w16(c, 1);
    EXPECT_EQ(run_and_compare(d, [&] { gemm_bias(d.xv, d.wv, d.bv, d.ov, nullptr); }), "");
  }
  for (bool tanh : {false, true}) {
    A16W16Case g = c;
    g.activation = tanh ? Activation::kGeluTanh : Activation::kGelu;
    A16W16Data d = make_a16w16(g, 2);
    EXPECT_EQ(run_and_compare(d, [&] { gemm_gelu(d.xv, d.wv, &d.bv, d.ov, tanh, nullptr); }), "");
  }
  {
    A16W16Case r = c;
    r.activation = Activation::kRelu;
    r.bias = false;
    A16W16Data d = make_a16w16(r, 3);
    EXPECT_EQ(run_and_compare(d, [&] { gemm_relu(d.xv, d.wv, nullptr, d.ov, nullptr); }), "");
  }
  for (bool in_place : {false, true}) {
    A16W16Case ab = c;
    ab.bias = false;
    ab.alpha = 0.25f;
    ab.beta = 2.0f;
    ab.c_in_place = in_place;
    A16W16Data d = make_a16w16(ab, 4);
    const TensorView& cv = in_place ? d.ov : d.cv;
    EXPECT_EQ(run_and_compare(d, [&] { gemm_alpha_beta(d.xv, d.wv, cv, 0.25f, 2.0f, d.ov, nullptr); }), "");
  }
}

TEST(Epilogue, EmptySumAppliesTheEpilogue) {
  TGEMM_REQUIRE_GPU();
  // K = 0: out = act(beta * c + bias).
  A16W16Case c;
  c.m = 7;
  c.n = 19;
  c.k = 0;
  c.bias = true;
  c.beta = 0.5f;
  c.activation = Activation::kGelu;
  A16W16Data d = make_a16w16(c, 9);
  EXPECT_EQ(run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); }), "");
}

TEST(Epilogue, BadArgumentsRaiseClearErrors) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 4;
  c.n = 32;
  c.k = 64;
  c.beta = 1.0f;
  A16W16Data d = make_a16w16(c, 11);
  auto expect_error = [&](GemmOptions o, const std::string& needle) {
    try {
      gemm_a16w16(d.xv, d.wv, d.ov, o, nullptr);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  GemmOptions o = d.options();
  o.c = nullptr;
  expect_error(o, "c must be given when beta != 0");
  o = d.options();
  o.alpha = std::nanf("");
  expect_error(o, "alpha must be finite");
  o = d.options();
  TensorView wrong = d.cv;
  wrong.dtype = DType::kFloat32;
  o.c = &wrong;
  expect_error(o, "c.dtype must equal out.dtype");
  o = d.options();
  TensorView shifted = d.ov;
  shifted.data = static_cast<char*>(d.ov.data) + 2;
  o.c = &shifted;
  expect_error(o, "c must be out itself or not overlap it");
  o = d.options();
  o.activation = static_cast<Activation>(9);
  expect_error(o, "options.activation");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- epilogue_rows ----

// One call of epilogue_rows: out[m, n] = act(alpha * src + beta * c + bias). Leading dimensions
// are n + pad; offsets shift a pointer by whole elements from a cudaMalloc'd (256-byte aligned)
// base, so an odd offset of a 16-bit or fp32 buffer breaks the 16-byte alignment.
struct RowsCase {
  std::int64_t m = 1, n = 8;
  DType out = DType::kBFloat16;
  std::int64_t ldo_pad = 0, out_offset = 0;
  bool src = false;  // fp32 src
  std::int64_t ld_src_pad = 0, src_offset = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  bool c_in_place = false;  // with beta != 0: c is out itself (else a separate buffer, ld ldo)
  bool bias = false;
  DType bias_type = DType::kBFloat16;
  std::int64_t bias_offset = 0;
  Activation activation = Activation::kNone;
  std::string describe() const {
    std::ostringstream os;
    os << "M=" << m << " N=" << n << " out=" << dtype_short_name(out) << " ldo_pad=" << ldo_pad
       << " out_offset=" << out_offset;
    if (src) os << " src ld_pad=" << ld_src_pad << " offset=" << src_offset << " alpha=" << alpha;
    if (beta != 0.0f) os << " beta=" << beta << (c_in_place ? " c=out" : " c=separate");
    if (bias) os << " bias=" << dtype_short_name(bias_type) << " offset=" << bias_offset;
    os << " act=" << static_cast<int>(activation);
    return os.str();
  }
};

// The split backend's pass: out = act(out + bias) in place (c = out, beta = 1), bf16 bias.
RowsCase in_place_case(std::int64_t m, std::int64_t n, Activation act) {
  RowsCase rc;
  rc.m = m;
  rc.n = n;
  rc.beta = 1.0f;
  rc.c_in_place = true;
  rc.bias = true;
  rc.activation = act;
  return rc;
}

float bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Round to nearest even (finite values only).
std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float bf16_bits_to_float(std::uint16_t b) { return bits_to_float(static_cast<std::uint32_t>(b) << 16); }

// Random values of magnitude in [0.05, 2), rounded to `type` (bf16 or fp32) so that the host
// reference sees exactly what the device reads.
std::vector<float> random_values(std::int64_t count, DType type, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> mag(0.05f, 2.0f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) {
    x = rng() % 2 ? mag(rng) : -mag(rng);
    if (type == DType::kBFloat16) x = bf16_bits_to_float(float_to_bf16_bits(x));
  }
  return v;
}

// Host image of a [rows, cols] matrix with leading dimension ld, `offset` elements in: values
// where the matrix is, NaN everywhere else (padding, the offset, the slack at the end).
std::vector<unsigned char> host_image(const std::vector<float>& values, DType type, std::int64_t rows,
                                      std::int64_t cols, std::int64_t ld, std::int64_t offset,
                                      std::int64_t elements) {
  const std::size_t es = dtype_size(type);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(elements) * es);
  auto put = [&](std::int64_t i, float x) {
    unsigned char* dst = bytes.data() + static_cast<std::size_t>(i) * es;
    if (type == DType::kBFloat16) {
      const std::uint16_t b = float_to_bf16_bits(x);
      std::memcpy(dst, &b, sizeof(b));
    } else {
      std::memcpy(dst, &x, sizeof(x));
    }
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (type == DType::kBFloat16) {
    const std::uint16_t b = 0x7fc0;  // quiet NaN
    for (std::int64_t i = 0; i < elements; ++i) std::memcpy(bytes.data() + i * es, &b, sizeof(b));
  } else {
    for (std::int64_t i = 0; i < elements; ++i) put(i, nan);
  }
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) put(offset + r * ld + j, values[static_cast<std::size_t>(r * cols + j)]);
  return bytes;
}

float element_as_float(const unsigned char* bytes, DType type, std::int64_t i) {
  if (type == DType::kBFloat16) {
    std::uint16_t b;
    std::memcpy(&b, bytes + i * 2, sizeof(b));
    return bf16_bits_to_float(b);
  }
  float f;
  std::memcpy(&f, bytes + i * 4, sizeof(f));
  return f;
}

struct RowsResult {
  std::string error;       // empty when out matches the reference and nothing else was written
  std::vector<float> out;  // out[m, n] as read back (row-major, ld n)
};

// Runs one case on data drawn from `seed` (the same seed gives the same logical matrices whatever
// the pads and offsets), checks out against a float64 reference (bf16 out: rtol 1e-2; fp32 out:
// rtol 1e-4) and that no element outside out[m, n] changed (it starts as NaN).
RowsResult run_rows(const RowsCase& rc, std::uint64_t seed) {
  RowsResult res;
  std::mt19937_64 rng(seed);
  const std::int64_t m = rc.m, n = rc.n;
  const std::int64_t ldo = n + rc.ldo_pad, ld_src = n + rc.ld_src_pad;
  const bool use_c = rc.beta != 0.0f;
  const std::vector<float> src = rc.src ? random_values(m * n, DType::kFloat32, rng) : std::vector<float>();
  const std::vector<float> c = use_c ? random_values(m * n, rc.out, rng) : std::vector<float>();
  const std::vector<float> bias = rc.bias ? random_values(n, rc.bias_type, rng) : std::vector<float>();

  std::vector<float> ref(static_cast<std::size_t>(m * n));
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::size_t i = static_cast<std::size_t>(r * n + j);
      double v = rc.src ? static_cast<double>(rc.alpha) * src[i] : 0.0;
      if (use_c) v += static_cast<double>(rc.beta) * c[i];
      if (rc.bias) v += bias[static_cast<std::size_t>(j)];
      ref[i] = static_cast<float>(activate_host(rc.activation, v));
    }
  }

  // out: c itself when in place, else NaN; 8 elements of slack after the last row.
  const std::int64_t out_elems = rc.out_offset + (m - 1) * ldo + n + 8;
  const std::vector<unsigned char> out_image =
      rc.c_in_place && use_c ? host_image(c, rc.out, m, n, ldo, rc.out_offset, out_elems)
                             : host_image({}, rc.out, 0, 0, ldo, 0, out_elems);
  DeviceBuffer out_buf(out_image.size());
  copy_to_device(out_buf.data(), out_image.data(), out_image.size());
  void* out_ptr = static_cast<char*>(out_buf.data()) + rc.out_offset * dtype_size(rc.out);

  DeviceBuffer src_buf, c_buf, bias_buf, ref_buf;
  EpilogueParams e;
  e.out = out_ptr;
  e.out_type = rc.out;
  e.ldo = ldo;
  if (rc.src) {
    const std::int64_t elems = rc.src_offset + (m - 1) * ld_src + n;
    const auto image = host_image(src, DType::kFloat32, m, n, ld_src, rc.src_offset, elems);
    src_buf = DeviceBuffer(image.size());
    copy_to_device(src_buf.data(), image.data(), image.size());
    e.src = src_buf.as<float>() + rc.src_offset;
    e.ld_src = ld_src;
  }
  e.alpha = rc.alpha;
  if (use_c) {
    if (rc.c_in_place) {
      e.c = out_ptr;
    } else {
      const std::int64_t elems = (m - 1) * ldo + n;
      const auto image = host_image(c, rc.out, m, n, ldo, 0, elems);
      c_buf = DeviceBuffer(image.size());
      copy_to_device(c_buf.data(), image.data(), image.size());
      e.c = c_buf.data();
    }
    e.ldc = ldo;
    e.beta = rc.beta;
  }
  if (rc.bias) {
    const auto image = host_image(bias, rc.bias_type, 1, n, n, rc.bias_offset, rc.bias_offset + n);
    bias_buf = DeviceBuffer(image.size());
    copy_to_device(bias_buf.data(), image.data(), image.size());
    e.bias = static_cast<const char*>(bias_buf.data()) + rc.bias_offset * dtype_size(rc.bias_type);
    e.bias_type = rc.bias_type;
  }
  e.activation = rc.activation;
  e.m = m;
  e.n = n;
  epilogue_rows(e, nullptr);
  device_synchronize();

  ref_buf = DeviceBuffer(ref.size() * sizeof(float));
  copy_to_device(ref_buf.data(), ref.data(), ref.size() * sizeof(float));
  const bool bf16_out = rc.out == DType::kBFloat16;
  const double rtol = bf16_out ? 1e-2 : 1e-4, atol = bf16_out ? 1e-5 : 5e-6;
  const CompareResult cmp =
      compare_with_reference(out_ptr, rc.out, ldo, ref_buf.as<float>(), n, m, n, rtol, atol, nullptr);
  std::ostringstream err;
  if (cmp.bad != 0) {
    err << rc.describe() << ": " << cmp.bad << " of " << cmp.checked << " elements wrong (" << cmp.nonfinite
        << " not finite), first at " << cmp.first_bad << ": " << cmp.first_bad_out << " vs " << cmp.first_bad_ref
        << ", max abs err " << cmp.max_abs_err << "; ";
  }

  std::vector<unsigned char> after(out_image.size());
  copy_to_host(after.data(), out_buf.data(), after.size());
  res.out.resize(static_cast<std::size_t>(m * n));
  std::int64_t outside_changed = 0;
  for (std::int64_t i = 0; i < out_elems; ++i) {
    const std::int64_t k = i - rc.out_offset;
    const bool inside = k >= 0 && k / ldo < m && k % ldo < n;
    if (inside) {
      res.out[static_cast<std::size_t>((k / ldo) * n + k % ldo)] = element_as_float(after.data(), rc.out, i);
    } else if (!std::isnan(element_as_float(after.data(), rc.out, i))) {
      ++outside_changed;
    }
  }
  if (outside_changed != 0) err << rc.describe() << ": " << outside_changed << " elements outside out written; ";
  res.error = err.str();
  return res;
}

// Bitwise equality of two results (element by element, float bits).
std::int64_t bitwise_differences(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return -1;
  std::int64_t diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return diff;
}

TEST(EpilogueRows, VectorPathInPlaceBiasActivation) {
  TGEMM_REQUIRE_GPU();
  // The split backend's pass: out = act(out + bias) in place, bf16, n a multiple of 8.
  const Activation acts[] = {Activation::kGelu, Activation::kGeluTanh, Activation::kRelu, Activation::kNone};
  for (Activation act : acts) EXPECT_EQ(run_rows(in_place_case(48, 4096, act), 1).error, "");
  // More vectors than the fast path's grid has threads: the grid-stride loop goes round.
  EXPECT_EQ(run_rows(in_place_case(1100, 4096, Activation::kGelu), 2).error, "");
  // fp32 bias, padded rows (ld a multiple of 8), a separate c with beta != 1.
  RowsCase sep;
  sep.m = 33;
  sep.n = 520;
  sep.ldo_pad = 8;
  sep.beta = -0.75f;
  sep.bias = true;
  sep.bias_type = DType::kFloat32;
  sep.activation = Activation::kGelu;
  EXPECT_EQ(run_rows(sep, 3).error, "");
}

TEST(EpilogueRows, VectorPathFp32SourceBf16Out) {
  TGEMM_REQUIRE_GPU();
  // The cuBLASLt mixed-type pass: out = act(alpha * src + bias), src fp32 staging.
  RowsCase rc;
  rc.m = 37;
  rc.n = 1024;
  rc.src = true;
  rc.alpha = 1.75f;
  EXPECT_EQ(run_rows(rc, 4).error, "");
  rc.bias = true;
  rc.activation = Activation::kGeluTanh;
  rc.ld_src_pad = 16;
  EXPECT_EQ(run_rows(rc, 5).error, "");
  rc.beta = 0.5f;  // and a separate c
  rc.bias_type = DType::kFloat32;
  rc.activation = Activation::kRelu;
  EXPECT_EQ(run_rows(rc, 6).error, "");
}

TEST(EpilogueRows, VectorPathFp32Out) {
  TGEMM_REQUIRE_GPU();
  RowsCase rc;
  rc.out = DType::kFloat32;
  rc.m = 29;
  rc.n = 776;
  rc.ldo_pad = 8;
  rc.src = true;
  rc.alpha = 0.5f;
  rc.beta = -1.25f;
  rc.bias = true;
  rc.bias_type = DType::kFloat32;
  rc.activation = Activation::kGelu;
  EXPECT_EQ(run_rows(rc, 7).error, "");
  rc.c_in_place = true;
  rc.bias_type = DType::kBFloat16;
  rc.activation = Activation::kGeluTanh;
  EXPECT_EQ(run_rows(rc, 8).error, "");
}

TEST(EpilogueRows, ScalarFallback) {
  TGEMM_REQUIRE_GPU();
  // Each case breaks one condition of the vectorized path.
  const RowsCase base = in_place_case(19, 4096, Activation::kGelu);
  std::vector<RowsCase> cases;
  RowsCase rc = base;
  rc.n = 4099;  // n % 8 != 0
  cases.push_back(rc);
  rc = base;
  rc.out_offset = 1;  // out (and c) 2 bytes off 16-byte alignment
  cases.push_back(rc);
  rc = base;
  rc.ldo_pad = 3;  // ldo % 8 != 0
  cases.push_back(rc);
  rc = base;
  rc.bias_offset = 1;  // bias misaligned
  cases.push_back(rc);
  rc = base;
  rc.c_in_place = false;
  rc.src = true;
  rc.alpha = 0.75f;
  rc.ld_src_pad = 4;  // ld_src % 8 != 0
  cases.push_back(rc);
  rc.ld_src_pad = 0;
  rc.src_offset = 2;  // src 8 bytes off 16-byte alignment
  cases.push_back(rc);
  rc = base;
  rc.out = DType::kFloat32;
  rc.n = 1001;
  rc.src = true;
  rc.alpha = 1.5f;
  cases.push_back(rc);
  for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(run_rows(cases[i], 20 + i).error, "");
}

TEST(EpilogueRows, BothPathsGiveTheSameBits) {
  TGEMM_REQUIRE_GPU();
  // The same data through the vectorized path (aligned) and the scalar one (out shifted by one
  // element): the same arithmetic, so the same bits.
  std::vector<RowsCase> cases;
  RowsCase rc = in_place_case(24, 2048, Activation::kGelu);
  cases.push_back(rc);
  rc.c_in_place = false;
  rc.beta = 0.5f;
  rc.src = true;
  rc.alpha = 1.75f;
  rc.bias_type = DType::kFloat32;
  rc.activation = Activation::kGeluTanh;
  cases.push_back(rc);
  rc.out = DType::kFloat32;
  rc.bias = false;
  rc.beta = 0.0f;
  rc.activation = Activation::kRelu;
  cases.push_back(rc);
  rc.beta = -1.0f;
  rc.c_in_place = true;
  rc.bias = true;
  rc.bias_type = DType::kBFloat16;
  rc.activation = Activation::kGelu;
  cases.push_back(rc);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    RowsCase scalar = cases[i];
    scalar.out_offset = 1;
    const RowsResult fast = run_rows(cases[i], 40 + i);
    const RowsResult slow = run_rows(scalar, 40 + i);
    EXPECT_EQ(fast.error, "");
    EXPECT_EQ(slow.error, "");
    EXPECT_EQ(bitwise_differences(fast.out, slow.out), 0) << cases[i].describe();
  }
}

}  // namespace
}  // namespace tgemm::test
