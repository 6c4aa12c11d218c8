#include "tests/common/gpu_test_util.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "core/validate.h"

namespace tgemm::test {

bool has_gpu() {
  int count = 0;
  bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

std::string A16W16Case::describe() const {
  std::ostringstream os;
  os << "M=" << m << " N=" << n << " K=" << k << " in=" << dtype_short_name(in)
     << " out=" << dtype_short_name(out) << " bias=" << (bias ? dtype_short_name(bias_type) : "none");
  if (lda_pad || ldb_pad || ldo_pad) os << " pads=" << lda_pad << "/" << ldb_pad << "/" << ldo_pad;
  if (activation != Activation::kNone) os << " act=" << activation_name(activation);
  if (alpha != 1.0f) os << " alpha=" << alpha;
  if (beta != 0.0f) os << " beta=" << beta << (c_in_place ? " c=out" : " c=separate");
  return os.str();
}

A16W16Data make_a16w16(const A16W16Case& c, std::uint64_t seed) {
  A16W16Data d;
  d.c = c;
  const std::int64_t lda = c.k + c.lda_pad, ldb = c.k + c.ldb_pad, ldo = c.n + c.ldo_pad;
  const std::size_t es_in = dtype_size(c.in), es_out = dtype_size(c.out);
  d.x = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.m * lda, 1)) * es_in);
  d.w = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.n * ldb, 1)) * es_in);
  d.out = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.m * ldo, 1)) * es_out);
  d.ref = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.m * c.n, 1)) * sizeof(float));
  fill_uniform(d.x.data(), c.in, c.m * lda, seed * 4 + 1, -1.0f, 1.0f, nullptr);
  fill_uniform(d.w.data(), c.in, c.n * ldb, seed * 4 + 2, -1.0f, 1.0f, nullptr);
  d.xv = TensorView::strided(d.x.data(), c.in, {c.m, c.k}, {lda, 1});
  d.wv = TensorView::strided(d.w.data(), c.in, {c.n, c.k}, {ldb, 1});
  d.ov = TensorView::strided(d.out.data(), c.out, {c.m, c.n}, {ldo, 1});
  if (c.bias) {
    d.bias = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.n, 1)) * dtype_size(c.bias_type));
    fill_uniform(d.bias.data(), c.bias_type, c.n, seed * 4 + 3, -1.0f, 1.0f, nullptr);
    d.bv = TensorView::contiguous(d.bias.data(), c.bias_type, {c.n});
  }
  if (c.beta != 0.0f && !c.c_in_place) {
    d.cbuf = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(c.m * ldo, 1)) * es_out);
    fill_uniform(d.cbuf.data(), c.out, c.m * ldo, seed * 4 + 5, -1.0f, 1.0f, nullptr);
    d.cv = TensorView::strided(d.cbuf.data(), c.out, {c.m, c.n}, {ldo, 1});
  }
  return d;
}

GemmProblem A16W16Data::problem() const {
  GemmProblem p = validate_a16w16(xv, wv, ov, options()).problem;
  int device = 0;
  cudaGetDevice(&device);
  p.device = device;
  return p;
}

GemmArgs A16W16Data::args() const { return validate_a16w16(xv, wv, ov, options()).args; }

std::string run_and_compare_views(const TensorView& x, const TensorView& w, const TensorView& out,
                                  const GemmOptions& options, const std::function<void()>& run, double magnitude) {
  GemmCall call = validate_a16w16(x, w, out, options);
  GemmProblem p = call.problem;
  int device = 0;
  cudaGetDevice(&device);
  p.device = device;
  const std::int64_t extent = p.m == 0 ? 0 : (p.m - 1) * p.ldo + p.n;
  const bool in_place = p.use_c && call.args.c == out.data;
  DeviceBuffer saved_c;
  GemmArgs ref_args = call.args;
  if (in_place) {
    // out holds c: fresh random values, copied for the reference before the run overwrites them.
    fill_uniform(out.data, out.dtype, extent, 0x5eed, -1.0f, 1.0f, nullptr);
    saved_c = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(extent, 1)) * dtype_size(out.dtype));
    cudaMemcpy(saved_c.data(), out.data, saved_c.bytes(), cudaMemcpyDeviceToDevice);
    ref_args.c = saved_c.data();
  } else {
    fill_nan(out.data, out.dtype, extent, nullptr);
  }
  run();
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return std::string("CUDA error after run: ") + cudaGetErrorString(err);
  DeviceBuffer ref(static_cast<std::size_t>(std::max<std::int64_t>(p.m * p.n, 1)) * sizeof(float));
  ref_args.out = ref.data();
  run_reference_gemm(p, ref_args, DType::kFloat32, p.n, nullptr);
  Tolerance tol = gemm_tolerance(p.out_type, p.k, p.has_bias() || p.use_c || p.activation != Activation::kNone);
  tol.atol *= std::max(1.0f, std::abs(options.alpha)) * magnitude;
  CompareResult r = compare_with_reference(out.data, p.out_type, p.ldo, ref.as<float>(), p.n, p.m, p.n,
                                           tol.rtol, tol.atol, nullptr);
  if (r.bad == 0) return "";
  std::ostringstream os;
  os << p.describe() << " lda=" << p.lda << " ldb=" << p.ldb << " ldo=" << p.ldo << ": " << r.bad << " of "
     << r.checked << " elements off (" << r.nonfinite << " non-finite), max |err| " << r.max_abs_err
     << ", ref rms " << r.ref_rms << "; first at (" << r.first_bad / p.n << ", " << r.first_bad % p.n
     << "): got " << r.first_bad_out << ", want " << r.first_bad_ref << " (rtol " << tol.rtol << ", atol "
     << tol.atol << ")";
  return os.str();
}

std::string run_and_compare(A16W16Data& d, const std::function<void()>& run) {
  std::string err = run_and_compare_views(d.xv, d.wv, d.ov, d.options(), run);
  return err.empty() ? err : d.c.describe() + ": " + err;
}

double activate_host(Activation a, double v) {
  switch (a) {
    case Activation::kGelu:
      return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case Activation::kRelu:
      return v > 0.0 ? v : 0.0;
    default:
      return v;
  }
}

namespace {

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

}  // namespace

std::vector<float> to_host_floats(const void* data, DType dtype, std::int64_t count) {
  std::vector<float> v(static_cast<std::size_t>(count));
  if (count == 0) return v;
  if (dtype == DType::kFloat32) {
    copy_to_host(v.data(), data, v.size() * sizeof(float));
    return v;
  }
  std::vector<std::uint16_t> bits(v.size());
  copy_to_host(bits.data(), data, bits.size() * 2);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kBFloat16) {
      const std::uint32_t w = static_cast<std::uint32_t>(bits[i]) << 16;
      std::memcpy(&v[i], &w, 4);
    } else {
      v[i] = half_bits_to_float(bits[i]);
    }
  }
  return v;
}

std::vector<std::int32_t> random_group_sizes(int g, std::int64_t total, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> s(static_cast<std::size_t>(g), 0);
  std::vector<int> live;
  for (int i = 0; i < g; ++i) {
    if (rng() % 3 != 0 || g == 1) live.push_back(i);
  }
  if (live.empty()) live.push_back(0);
  for (std::int64_t r = 0; r < total; ++r) ++s[static_cast<std::size_t>(live[rng() % live.size()])];
  return s;
}

GraphReplay::GraphReplay(const std::function<void(Stream)>& run) {
  cudaStream_t s = nullptr;
  ok_ = cudaStreamCreate(&s) == cudaSuccess;
  stream_ = s;
  if (ok_) {
    run(stream_);
    ok_ = cudaStreamSynchronize(s) == cudaSuccess &&
          cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess;
  }
  if (ok_) {
    run(stream_);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ok_ = cudaStreamEndCapture(s, &graph) == cudaSuccess;
    graph_ = graph;
    ok_ = ok_ && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    exec_ = exec;
  }
  EXPECT_TRUE(ok_) << "capturing the CUDA graph failed: " << cudaGetErrorString(cudaGetLastError());
}

GraphReplay::~GraphReplay() {
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_ != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void GraphReplay::replay() {
  EXPECT_EQ(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), stream_), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

std::uint8_t draw_8bit(std::mt19937_64& rng, DType in) {
  if (in == DType::kInt8)
    return static_cast<std::uint8_t>(static_cast<std::int8_t>(static_cast<int>(rng() % 255) - 127));
  const std::uint8_t exp = static_cast<std::uint8_t>(rng() % 8);  // |v| < 2
  return static_cast<std::uint8_t>(((rng() & 1) << 7) | (exp << 3) | (rng() & 7));
}

double fp8_e4m3_value(std::uint8_t code) {
  const int sign = code >> 7, exp = (code >> 3) & 0xf, mant = code & 7;
  const double mag = exp == 0 ? std::ldexp(mant / 8.0, -6) : std::ldexp(1.0 + mant / 8.0, exp - 7);
  return sign ? -mag : mag;
}

void expect_rows_equal(const void* out, const void* row, std::int64_t m, std::int64_t n) {
  std::vector<float> o(static_cast<std::size_t>(m * n)), r(static_cast<std::size_t>(n));
  copy_to_host(o.data(), out, o.size() * sizeof(float));
  copy_to_host(r.data(), row, r.size() * sizeof(float));
  for (std::int64_t i = 0; i < m * n; ++i) EXPECT_EQ(o[i], r[i % n]) << "element " << i;
}

std::int64_t log_uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  std::uniform_real_distribution<double> u(std::log(static_cast<double>(lo)), std::log(static_cast<double>(hi) + 1));
  return std::min<std::int64_t>(hi, static_cast<std::int64_t>(std::exp(u(rng))));
}

}  // namespace tgemm::test
