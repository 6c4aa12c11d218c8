// Concurrency on the GPU over every op family of the public API: 8 host threads, each on its own
// non-blocking stream, call a16w16, gemm_a8w8 (FP8 per tensor, FP8 and INT8 per token x per
// channel, INT8 per tensor), gemm_a8w8_blockscale (both x_scale layouts, and a shape cuBLASLt
// refuses), batched_gemm, gmm, ptgmm/nptgmm, grouped_gemm, m_grouped_gemm_masked, topk_softmax,
// grouped_topk, fused_moe and the five quantization ops on mixed shapes (odd M, empty groups,
// experts no slot chooses, masks of 0). The first calls of every shape race: a fresh process, and
// again after reload_config(); threads t and t + 4 visit the problems in the same order, the four
// orders a quarter apart. Outputs are poisoned (NaN, or a code the quantizer never writes) on the
// thread's stream before every call, and every result is compared with its family's reference:
// the library's reference kernel for the GEMMs with one output matrix, the float64 host references
// of grouped_checks.h, moe_checks.h and quant_checks.h for the others. No sticky CUDA error at
// the end. The *Sanitizer* variant (a few small problems) is what scripts/gpu-check runs under
// compute-sanitizer memcheck.
//
// The GEMMs checked against the reference kernel share their inputs and reference across threads
// (read-only), each thread owning its output; the other families' data bundle their outputs, so
// each thread builds its own copy from the same seed (the same values).
// The a16w16 forms alone, with tables and routing to every backend, are test_concurrency.cpp's.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "core/check.h"
#include "core/validate.h"
#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/grouped_test_util.h"
#include "tests/gpu/gemm_race.h"
#include "tests/gpu/grouped_checks.h"
#include "tests/gpu/moe_checks.h"
#include "tests/gpu/quant_checks.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

constexpr DType kBf16 = DType::kBFloat16;
constexpr DType kFp16 = DType::kFloat16;
constexpr DType kFp32 = DType::kFloat32;
constexpr DType kFp8 = DType::kFloat8E4M3;
constexpr DType kInt8 = DType::kInt8;

// One problem as one thread runs it. Failures are gtest failures (thread-safe; the worker's
// SCOPED_TRACE names the thread, round and problem).
class Problem {
 public:
  virtual ~Problem() = default;
  virtual std::string describe() const = 0;
  // Poisons the outputs on `stream`, so an element the call does not write fails the check.
  virtual void poison(Stream stream) = 0;
  virtual void launch(Stream stream) = 0;
  // Compares the outputs with the reference; `stream` has finished.
  virtual void check(Stream stream) = 0;
};

using ProblemMaker = std::function<std::unique_ptr<Problem>()>;

// ---- GEMMs with one output matrix, against the library's reference kernel

// The shared, read-only part: operands, scales and bias, the fp32 reference of out [rows, n]
// (dense), its tolerance and the call.
struct GemmInputs {
  std::string what;
  std::vector<DeviceBuffer> buffers;
  DType out_type = kBf16;
  std::int64_t batch = 0;  // > 0: out is [batch, rows / batch, n]
  std::int64_t rows = 0, n = 0;
  DeviceBuffer ref;
  Tolerance tol{};
  std::function<void(const TensorView& out, Stream stream)> call;
  std::function<DispatchInfo(const TensorView& out)> route;  // where the call is routed, for messages

  TensorView out_view(void* data) const {
    return batch > 0 ? TensorView::contiguous(data, out_type, {batch, rows / batch, n})
                     : TensorView::contiguous(data, out_type, {rows, n});
  }
  void* add(DeviceBuffer b) {
    buffers.push_back(std::move(b));
    return buffers.back().data();
  }
};

std::size_t bytes_of(std::int64_t count, DType t) {
  return static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) * dtype_size(t);
}

class ReferencedGemm : public Problem {
 public:
  explicit ReferencedGemm(std::shared_ptr<const GemmInputs> in)
      : in_(std::move(in)), out_(bytes_of(in_->rows * in_->n, in_->out_type)) {
    out_view_ = in_->out_view(out_.data());
  }
  std::string describe() const override { return in_->what; }
  void poison(Stream stream) override { fill_nan(out_.data(), in_->out_type, in_->rows * in_->n, stream); }
  void launch(Stream stream) override { in_->call(out_view_, stream); }
  void check(Stream stream) override {
    const CompareResult r = compare_with_reference(out_.data(), in_->out_type, in_->n, in_->ref.as<float>(), in_->n,
                                                   in_->rows, in_->n, in_->tol.rtol, in_->tol.atol, stream);
    EXPECT_EQ(r.bad, 0) << in_->what << " [" << in_->route(out_view_).kernel_name << "]: " << r.bad << " of "
                        << r.checked << " elements off (" << r.nonfinite << " non-finite), max |err| " << r.max_abs_err
                        << "; first at (" << r.first_bad / std::max<std::int64_t>(in_->n, 1) << ", "
                        << r.first_bad % std::max<std::int64_t>(in_->n, 1) << "): got " << r.first_bad_out << ", want "
                        << r.first_bad_ref;
  }

 private:
  std::shared_ptr<const GemmInputs> in_;
  DeviceBuffer out_;
  TensorView out_view_;
};

// A probe output for validation (which reads no memory) and the reference run into in.ref.
void reference_of(GemmInputs& in, const std::function<GemmCall(const TensorView&)>& validate, bool a8w8) {
  DeviceBuffer probe(bytes_of(in.rows * in.n, in.out_type));
  GemmCall call = validate(in.out_view(probe.data()));
  in.ref = DeviceBuffer(bytes_of(in.rows * in.n, kFp32));
  call.args.out = in.ref.data();
  if (a8w8) {
    run_reference_gemm_a8w8(call.problem, call.args, kFp32, in.n, nullptr);
    // Operands bounded by 1.5 (test_gemm_a8w8.cpp): atol times 1.5^2, plus the FP8 tensor cores'
    // partial-sum rounding.
    in.tol.atol = in.tol.atol * 2.25 + fp8_accumulation_atol(call.problem, call.args, nullptr);
  } else {
    run_reference_gemm(call.problem, call.args, kFp32, in.n, nullptr);
  }
  device_synchronize();
}

ProblemMaker shared(std::shared_ptr<GemmInputs> in) {
  std::shared_ptr<const GemmInputs> c = std::move(in);
  return [c] { return std::make_unique<ReferencedGemm>(c); };
}

DeviceBuffer uniform(DType t, std::int64_t count, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  DeviceBuffer b(bytes_of(count, t));
  fill_uniform(b.data(), t, count, seed, lo, hi, nullptr);
  return b;
}

// Quantized operand codes (draw_8bit: int8 in [-127, 127], FP8 of magnitude below 2).
DeviceBuffer codes(DType t, std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> h(static_cast<std::size_t>(count));
  for (auto& b : h) b = draw_8bit(rng, t);
  DeviceBuffer d(bytes_of(count, t));
  if (count > 0) copy_to_device(d.data(), h.data(), h.size());
  return d;
}

ProblemMaker a16w16(std::int64_t m, std::int64_t n, std::int64_t k, DType in, DType out, bool bias,
                    std::uint64_t seed) {
  auto g = std::make_shared<GemmInputs>();
  g->what = detail::concat("gemm_a16w16 M=", m, " N=", n, " K=", k, " ", dtype_short_name(in), "->",
                           dtype_short_name(out), bias ? " bias" : "");
  g->out_type = out;
  g->rows = m;
  g->n = n;
  const TensorView x = TensorView::contiguous(g->add(uniform(in, m * k, seed)), in, {m, k});
  const TensorView w = TensorView::contiguous(g->add(uniform(in, n * k, seed + 1)), in, {n, k});
  const TensorView b = TensorView::contiguous(g->add(uniform(in, n, seed + 2)), in, {n});
  GemmOptions o;
  if (bias) o.bias = &b;
  g->call = [x, w, b, bias](const TensorView& y, Stream s) {
    GemmOptions opt;
    if (bias) opt.bias = &b;
    gemm_a16w16(x, w, y, opt, s);
  };
  g->route = [x, w, b, bias](const TensorView& y) {
    GemmOptions opt;
    if (bias) opt.bias = &b;
    return describe_gemm_a16w16(x, w, y, opt);
  };
  g->tol = gemm_tolerance(out, k, bias);
  reference_of(
      *g, [&](const TensorView& y) { return validate_a16w16(x, w, y, o); }, false);
  return shared(std::move(g));
}

// gemm_a8w8: per_row scales x per token and w per channel, else one scale each; bias 0 none, 1
// out's dtype, 2 fp32. Scales uniform in [0.5, 1.5) / 127 (int8) or / 2 (FP8).
ProblemMaker a8w8(std::int64_t m, std::int64_t n, std::int64_t k, DType in, DType out, bool per_row, int bias,
                  std::uint64_t seed) {
  auto g = std::make_shared<GemmInputs>();
  g->what = detail::concat("gemm_a8w8 M=", m, " N=", n, " K=", k, " ", dtype_short_name(in), "->",
                           dtype_short_name(out), per_row ? " per-token x per-channel" : " per-tensor",
                           bias == 0   ? ""
                           : bias == 1 ? " bias"
                                       : " fp32 bias");
  g->out_type = out;
  g->rows = m;
  g->n = n;
  const float unit = in == kInt8 ? 1.0f / 127 : 0.5f;
  const DType bias_type = bias == 2 ? kFp32 : out;
  const TensorView x = TensorView::contiguous(g->add(codes(in, m * k, seed)), in, {m, k});
  const TensorView w = TensorView::contiguous(g->add(codes(in, n * k, seed + 1)), in, {n, k});
  const TensorView xs =
      per_row ? TensorView::contiguous(g->add(uniform(kFp32, m, seed + 2, 0.5f * unit, 1.5f * unit)), kFp32, {m, 1})
              : TensorView::contiguous(g->add(uniform(kFp32, 1, seed + 2, 0.5f * unit, 1.5f * unit)), kFp32, {1});
  const TensorView ws =
      per_row ? TensorView::contiguous(g->add(uniform(kFp32, n, seed + 3, 0.5f * unit, 1.5f * unit)), kFp32, {n, 1})
              : TensorView::contiguous(g->add(uniform(kFp32, 1, seed + 3, 0.5f * unit, 1.5f * unit)), kFp32, {1});
  const TensorView b = TensorView::contiguous(g->add(uniform(bias_type, n, seed + 4)), bias_type, {n});
  const bool has_bias = bias != 0;
  g->call = [=](const TensorView& y, Stream s) { gemm_a8w8(x, w, xs, ws, y, has_bias ? &b : nullptr, s); };
  g->route = [=](const TensorView& y) { return describe_gemm_a8w8(x, w, xs, ws, y, has_bias ? &b : nullptr); };
  g->tol = gemm_tolerance(out, k, has_bias);
  reference_of(
      *g, [&](const TensorView& y) { return validate_a8w8(x, w, xs, ws, y, has_bias ? &b : nullptr); }, true);
  return shared(std::move(g));
}

// gemm_a8w8_blockscale, FP8: x_scale [M, ceil(K/128)] row-major or MN-major TMA-aligned, w_scale
// [ceil(N/128), ceil(K/128)]; scales uniform in [0.25, 0.75).
ProblemMaker blockscale(std::int64_t m, std::int64_t n, std::int64_t k, DType out, bool mn_major, bool bias,
                        std::uint64_t seed) {
  auto g = std::make_shared<GemmInputs>();
  g->what = detail::concat("gemm_a8w8_blockscale M=", m, " N=", n, " K=", k, " ->", dtype_short_name(out),
                           mn_major ? " MN-major x_scale" : " row-major x_scale", bias ? " bias" : "");
  g->out_type = out;
  g->rows = m;
  g->n = n;
  const std::int64_t kb = (k + 127) / 128, nb = (n + 127) / 128, ld = mn_major ? mn_major_tma_aligned_ld(m) : kb;
  const TensorView x = TensorView::contiguous(g->add(codes(kFp8, m * k, seed)), kFp8, {m, k});
  const TensorView w = TensorView::contiguous(g->add(codes(kFp8, n * k, seed + 1)), kFp8, {n, k});
  void* xs_data = g->add(uniform(kFp32, mn_major ? kb * ld : m * ld, seed + 2, 0.25f, 0.75f));
  const TensorView xs = mn_major ? TensorView::strided(xs_data, kFp32, {m, kb}, {1, ld})
                                 : TensorView::strided(xs_data, kFp32, {m, kb}, {ld, 1});
  const TensorView ws =
      TensorView::contiguous(g->add(uniform(kFp32, nb * kb, seed + 3, 0.25f, 0.75f)), kFp32, {nb, kb});
  const TensorView b = TensorView::contiguous(g->add(uniform(kFp32, n, seed + 4)), kFp32, {n});
  g->call = [=](const TensorView& y, Stream s) { gemm_a8w8_blockscale(x, w, xs, ws, y, bias ? &b : nullptr, s); };
  g->route = [=](const TensorView& y) { return describe_gemm_a8w8_blockscale(x, w, xs, ws, y, bias ? &b : nullptr); };
  g->tol = gemm_tolerance(out, k, bias);
  reference_of(
      *g, [&](const TensorView& y) { return validate_a8w8_blockscale(x, w, xs, ws, y, bias ? &b : nullptr); }, true);
  return shared(std::move(g));
}

// batched_gemm, a [B, M, K] (or [B, K, M] with ta), b [B, N, K] with tb (else [B, K, N]); b_stride0:
// one b matrix broadcast to every product.
ProblemMaker batched(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, DType in, DType out, bool ta,
                     bool tb, bool b_stride0, bool bias, std::uint64_t seed) {
  auto g = std::make_shared<GemmInputs>();
  g->what = detail::concat("batched_gemm B=", batch, " M=", m, " N=", n, " K=", k, " ", dtype_short_name(in), "->",
                           dtype_short_name(out), " ta=", ta, " tb=", tb, b_stride0 ? " b broadcast" : "",
                           bias ? " bias" : "");
  g->out_type = out;
  g->batch = batch;
  g->rows = batch * m;
  g->n = n;
  const TensorView a = ta ? TensorView::contiguous(g->add(uniform(in, batch * m * k, seed)), in, {batch, k, m})
                          : TensorView::contiguous(g->add(uniform(in, batch * m * k, seed)), in, {batch, m, k});
  const std::int64_t b_matrices = b_stride0 ? 1 : batch;
  TensorView b = tb ? TensorView::contiguous(g->add(uniform(in, b_matrices * n * k, seed + 1)), in, {batch, n, k})
                    : TensorView::contiguous(g->add(uniform(in, b_matrices * n * k, seed + 1)), in, {batch, k, n});
  if (b_stride0) b.strides[0] = 0;
  const TensorView bv = TensorView::contiguous(g->add(uniform(in, n, seed + 2)), in, {n});
  g->call = [=](const TensorView& y, Stream s) { batched_gemm(a, b, y, ta, tb, bias ? &bv : nullptr, s); };
  g->route = [=](const TensorView& y) { return describe_batched_gemm(a, b, y, ta, tb, bias ? &bv : nullptr); };
  g->tol = gemm_tolerance(out, k, bias);
  reference_of(
      *g, [&](const TensorView& y) { return validate_batched(a, b, y, ta, tb, bias ? &bv : nullptr); }, false);
  return shared(std::move(g));
}

// ---- the other families: each thread's own copy of the shared checks' data

class GmmProblem : public Problem {
 public:
  GmmProblem(const GmmCase& c, std::uint64_t seed) : d_(make_gmm(c, seed)) {}
  std::string describe() const override { return "gmm " + d_.c.describe(); }
  void poison(Stream s) override { fill_nan(d_.out.data(), d_.c.out, d_.c.m * d_.c.n, s); }
  void launch(Stream s) override { run_gmm(d_, s); }
  void check(Stream) override { expect_gmm_matches(d_, d_.c.sizes); }

 private:
  GmmData d_;
};

class TgmmProblem : public Problem {
 public:
  TgmmProblem(const TgmmCase& c, std::uint64_t seed) : d_(make_tgmm(c, seed)) {
    // What accumulate adds to, restored before every call.
    before_ = DeviceBuffer(std::max<std::size_t>(d_.out.buf.bytes(), 16));
    copy_device(before_.data(), d_.out.data(), d_.out.buf.bytes(), nullptr);
  }
  std::string describe() const override {
    return std::string(d_.c.persistent ? "ptgmm " : "nptgmm ") + d_.c.describe();
  }
  void poison(Stream s) override {
    if (d_.c.accumulate) {
      copy_device(d_.out.data(), before_.data(), d_.out.buf.bytes(), s);
    } else {
      fill_nan(d_.out.data(), d_.c.out, d_.out.count, s);
    }
    fill_nan(d_.bias_grad.data(), kFp32, d_.bias_grad.count, s);
  }
  void launch(Stream s) override { run_tgmm(d_, s); }
  void check(Stream) override { expect_tgmm_matches(d_, d_.c.sizes); }

 private:
  static void copy_device(void* dst, const void* src, std::size_t bytes, Stream s) {
    ASSERT_EQ(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), cudaSuccess);
    if (s == nullptr) ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  }
  TgmmData d_;
  DeviceBuffer before_;
};

class GatherProblem : public Problem {
 public:
  GatherProblem(const GatherCase& c, std::uint64_t seed) : d_(make_gather(c, seed)) {}
  std::string describe() const override { return "grouped_gemm " + d_.c.describe(); }
  void poison(Stream s) override { fill_nan(d_.out.data(), d_.c.out, d_.out.count, s); }
  void launch(Stream s) override { run_gather(d_, s); }
  void check(Stream) override { expect_gather_matches(d_, d_.c.ids); }

 private:
  GatherData d_;
};

class MaskedProblem : public Problem {
 public:
  MaskedProblem(const MaskedCase& c, std::uint64_t seed) : d_(make_masked(c, seed)) {}
  std::string describe() const override { return "m_grouped_gemm_masked " + d_.c.describe(); }
  void poison(Stream s) override { fill_nan(d_.out.data(), kBf16, d_.out.count, s); }
  void launch(Stream s) override { m_grouped_gemm_masked(d_.xv, d_.wv, d_.ov, d_.mv, d_.c.max_m / 2, s); }
  void check(Stream) override { expect_masked_matches(d_, d_.c.masked_m); }

 private:
  MaskedData d_;
};

class RouteProblem : public Problem {
 public:
  RouteProblem(const RouteCase& c, std::uint64_t seed) : d_(make_route(c, seed)) {}
  std::string describe() const override { return d_.c.describe(); }
  void poison(Stream s) override {
    fill_nan(d_.weights.data(), kFp32, d_.weights.count, s);
    // 0xff bytes: id -1, outside every expert range.
    ASSERT_EQ(cudaMemsetAsync(d_.ids.data(), 0xff, d_.ids.buf.bytes(), s), cudaSuccess);
  }
  void launch(Stream s) override { run_route(d_, s); }
  void check(Stream) override { expect_route_matches(d_, -1); }

 private:
  RouteData d_;
};

class MoeProblem : public Problem {
 public:
  MoeProblem(const MoeCase& c, std::uint64_t seed) : d_(make_moe(c, seed)), weights_(d_.topk_weights.host()) {}
  std::string describe() const override { return "fused_moe " + d_.c.describe(); }
  void poison(Stream s) override { fill_nan(d_.out.data(), d_.c.out, d_.out.count, s); }
  void launch(Stream s) override { run_moe(d_, s); }
  void check(Stream) override { expect_moe_matches(d_, d_.c.ids, weights_); }

 private:
  MoeData d_;
  std::vector<float> weights_;
};

class QuantProblem : public Problem {
 public:
  QuantProblem(const QuantCase& c, std::uint64_t seed) : d_(make_quant(c, seed)) {}
  std::string describe() const override { return d_.c.describe(); }
  void poison(Stream s) override { poison_quant(d_, s); }
  void launch(Stream s) override { run_quant(d_.c, d_.x, d_.q, d_.scale, s); }
  void check(Stream) override { EXPECT_EQ(quant_mismatch(d_), ""); }

 private:
  QuantData d_;
};

template <class P, class Case>
ProblemMaker own(Case c, std::uint64_t seed) {
  return [c, seed] { return std::make_unique<P>(c, seed); };
}

GmmCase gmm_case(std::int64_t m, std::int64_t n, std::int64_t k, DType in, DType out, bool transpose, bool bias,
                 std::vector<std::int32_t> sizes) {
  GmmCase c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.in = in;
  c.out = out;
  c.transpose_rhs = transpose;
  c.bias = bias;
  c.sizes = std::move(sizes);
  return c;
}

TgmmCase tgmm_case(std::int64_t m, std::int64_t k, std::int64_t n, DType in, DType out, bool persistent, bool col_major,
                   bool bias_grad, bool accumulate, std::vector<std::int32_t> sizes) {
  TgmmCase c;
  c.m = m;
  c.k = k;
  c.n = n;
  c.in = in;
  c.out = out;
  c.persistent = persistent;
  c.col_major = col_major;
  c.bias_grad = bias_grad;
  c.accumulate = accumulate;
  c.sizes = std::move(sizes);
  return c;
}

GatherCase gather_case(std::int64_t t, std::int64_t topk, std::int64_t h, std::int64_t n, std::int64_t e, DType in,
                       DType out, bool per_slot, bool transpose, bool weighted, std::uint64_t seed) {
  GatherCase c;
  c.t = t;
  c.topk = topk;
  c.h = h;
  c.n = n;
  c.e = e;
  c.in = in;
  c.out = out;
  c.x_per_slot = per_slot;
  c.transpose = transpose;
  c.weighted = weighted;
  c.ids = random_ids(t * topk, e, seed, true);  // about one in 7 out of range: a zero row
  return c;
}

MaskedCase masked_case(std::int64_t g, std::int64_t max_m, std::int64_t n, std::int64_t k,
                       std::vector<std::int32_t> masks) {
  MaskedCase c;
  c.g = g;
  c.max_m = max_m;
  c.n = n;
  c.k = k;
  c.masked_m = std::move(masks);
  return c;
}

RouteCase route_case(bool grouped, std::int64_t t, std::int64_t e, std::int64_t k, DType gating) {
  RouteCase c;
  c.grouped = grouped;
  c.t = t;
  c.e = e;
  c.k = k;
  c.gating = gating;
  return c;
}

MoeCase moe_case(std::int64_t t, std::int64_t k, std::int64_t e, std::int64_t h, std::int64_t inter, DType in,
                 DType out, MoeActivation act, Routing routing, std::uint64_t seed) {
  MoeCase c;
  c.t = t;
  c.k = k;
  c.e = e;
  c.h = h;
  c.inter = inter;
  c.in = in;
  c.out = out;
  c.act = act;
  c.ids = routing_ids(routing, t, k, e, seed);
  return c;
}

// Every family on a few mixed shapes.
std::vector<ProblemMaker> every_family() {
  std::vector<ProblemMaker> p;
  std::uint64_t seed = 100;
  // a16w16, in the mix so that families share each stream's workspace and cuBLASLt state.
  p.push_back(a16w16(1, 1000, 520, kBf16, kBf16, false, seed++));
  p.push_back(a16w16(129, 200, 72, kFp16, kFp32, true, seed++));
  // gemm_a8w8: cuBLASLt's fused FP8 (per tensor, and outer-vector scales) and staged INT8.
  p.push_back(a8w8(1, 4096, 1024, kFp8, kBf16, false, 0, seed++));
  p.push_back(a8w8(333, 1000, 528, kFp8, kFp16, true, 2, seed++));
  p.push_back(a8w8(13, 1000, 528, kInt8, kBf16, true, 1, seed++));
  p.push_back(a8w8(64, 512, 256, kInt8, kFp32, false, 2, seed++));
  // gemm_a8w8_blockscale: cuBLASLt (N a multiple of 4, M padded to 4 in the workspace) and the
  // reference kernel (N = 130).
  p.push_back(blockscale(37, 200, 272, kBf16, false, false, seed++));
  p.push_back(blockscale(129, 1000, 528, kFp16, true, true, seed++));
  p.push_back(blockscale(5, 130, 144, kFp32, false, true, seed++));
  // batched_gemm: stacked nn.Linear weights, a transposed a, a broadcast b.
  p.push_back(batched(4, 37, 64, 72, kBf16, kBf16, false, true, false, true, seed++));
  p.push_back(batched(3, 1, 130, 257, kFp16, kFp32, true, false, false, false, seed++));
  p.push_back(batched(8, 65, 33, 40, kBf16, kFp32, false, false, true, true, seed++));
  // gmm: random sizes about a third of them 0; empty groups among fixed ones.
  p.push_back(
      own<GmmProblem>(gmm_case(517, 72, 96, kBf16, kBf16, false, false, random_group_sizes(8, 517, seed)), seed));
  ++seed;
  p.push_back(own<GmmProblem>(gmm_case(301, 130, 257, kFp16, kFp32, true, true, {7, 0, 129, 1, 0, 163}), seed++));
  // ptgmm / nptgmm: empty groups, both lhs layouts, bias_grad, accumulate.
  p.push_back(own<TgmmProblem>(
      tgmm_case(520, 72, 64, kBf16, kBf16, true, false, true, false, random_group_sizes(5, 520, seed)), seed));
  ++seed;
  p.push_back(
      own<TgmmProblem>(tgmm_case(301, 130, 97, kFp16, kFp32, false, true, true, true, {7, 0, 129, 1, 0, 163}), seed++));
  // grouped_gemm: the first GEMM of an MoE layer (x per token, some ids out of range) and the
  // weighted second one (x per slot).
  p.push_back(own<GatherProblem>(gather_case(77, 3, 64, 72, 8, kBf16, kBf16, false, false, false, seed), seed));
  ++seed;
  p.push_back(own<GatherProblem>(gather_case(51, 4, 96, 130, 6, kFp16, kFp32, true, true, true, seed), seed));
  ++seed;
  // 18 slots over 64 experts: most experts' groups are empty.
  p.push_back(own<GatherProblem>(gather_case(9, 2, 64, 48, 64, kBf16, kBf16, false, true, false, seed), seed));
  ++seed;
  // m_grouped_gemm_masked: masks of 0, max_m, beyond it and negative.
  p.push_back(own<MaskedProblem>(masked_case(6, 130, 72, 64, {0, 130, 1, 65, 500, -7}), seed++));
  p.push_back(own<MaskedProblem>(masked_case(4, 16, 128, 256, {3, 0, 16, 9}), seed++));
  // Routing: softmax top-k, and DeepSeek-V3's grouped top-k (sigmoid, correction bias, scaled).
  RouteCase softmax = route_case(false, 33, 64, 4, kFp32);
  p.push_back(own<RouteProblem>(softmax, seed++));
  RouteCase softmax_bf16 = route_case(false, 7, 300, 6, kBf16);
  softmax_bf16.renormalize = true;
  p.push_back(own<RouteProblem>(softmax_bf16, seed++));
  RouteCase v3 = route_case(true, 33, 256, 8, kFp32);
  v3.n_group = 8;
  v3.topk_group = 4;
  v3.sigmoid = true;
  v3.bias = true;
  v3.renormalize = true;
  v3.scaling = 2.5;
  p.push_back(own<RouteProblem>(v3, seed++));
  // fused_moe: a third of the experts chosen by no slot; odd T and I, fp32 out.
  p.push_back(own<MoeProblem>(
      moe_case(37, 2, 8, 128, 96, kBf16, kBf16, MoeActivation::kSilu, Routing::kSomeEmpty, seed), seed));
  ++seed;
  p.push_back(
      own<MoeProblem>(moe_case(29, 3, 4, 64, 33, kFp16, kFp32, MoeActivation::kGelu, Routing::kSkewed, seed), seed));
  ++seed;
  // Quantization: every op, odd M and K, a misaligned x (the element-load path).
  p.push_back(own<QuantProblem>(quant_case(Grouping::kTensor, 33, 129, kBf16), seed++));
  p.push_back(own<QuantProblem>(quant_case(Grouping::kTensorStatic, 7, 4096, kFp16), seed++));
  p.push_back(own<QuantProblem>(quant_case(Grouping::kToken, 257, 384, kBf16), seed++));
  p.push_back(own<QuantProblem>(quant_case(Grouping::kToken, 3, 4095, kFp16, kInt8), seed++));
  p.push_back(own<QuantProblem>(quant_case(Grouping::kBlock1x128, 130, 1000, kBf16), seed++));
  QuantCase odd = quant_case(Grouping::kBlock1x128MnMajor, 19, 1024, kFp16);
  odd.x_offset = 1;
  odd.ldx_pad = 3;
  p.push_back(own<QuantProblem>(odd, seed++));
  p.push_back(own<QuantProblem>(quant_case(Grouping::kBlock128x128, 257, 384, kBf16), seed++));
  return p;
}

// One small problem per family: the compute-sanitizer variant.
std::vector<ProblemMaker> small_every_family() {
  std::vector<ProblemMaker> p;
  std::uint64_t seed = 500;
  p.push_back(a16w16(3, 64, 40, kBf16, kBf16, true, seed++));
  p.push_back(a8w8(5, 64, 64, kFp8, kBf16, true, 1, seed++));
  p.push_back(a8w8(3, 48, 32, kInt8, kFp16, false, 0, seed++));
  p.push_back(blockscale(7, 64, 144, kBf16, true, false, seed++));
  p.push_back(batched(2, 5, 24, 16, kBf16, kBf16, false, true, false, true, seed++));
  p.push_back(own<GmmProblem>(gmm_case(33, 24, 16, kBf16, kBf16, false, true, {10, 0, 23}), seed++));
  p.push_back(own<TgmmProblem>(tgmm_case(33, 16, 24, kBf16, kFp32, true, false, true, false, {0, 20, 13}), seed++));
  p.push_back(own<TgmmProblem>(tgmm_case(33, 16, 24, kFp16, kFp16, false, true, false, true, {5, 0, 28}), seed++));
  p.push_back(own<GatherProblem>(gather_case(9, 2, 32, 24, 4, kBf16, kBf16, false, false, false, seed), seed));
  ++seed;
  p.push_back(own<GatherProblem>(gather_case(9, 2, 32, 24, 4, kBf16, kFp32, true, true, true, seed), seed));
  ++seed;
  p.push_back(own<MaskedProblem>(masked_case(3, 8, 24, 32, {0, 8, 3}), seed++));
  p.push_back(own<RouteProblem>(route_case(false, 5, 16, 2, kBf16), seed++));
  RouteCase grouped = route_case(true, 5, 32, 4, kFp32);
  grouped.n_group = 4;
  grouped.topk_group = 2;
  grouped.sigmoid = true;
  grouped.bias = true;
  p.push_back(own<RouteProblem>(grouped, seed++));
  p.push_back(
      own<MoeProblem>(moe_case(7, 2, 4, 32, 24, kBf16, kBf16, MoeActivation::kSilu, Routing::kSomeEmpty, seed), seed));
  ++seed;
  p.push_back(own<QuantProblem>(quant_case(Grouping::kTensor, 5, 129, kBf16), seed++));
  p.push_back(own<QuantProblem>(quant_case(Grouping::kToken, 5, 130, kFp16, kInt8), seed++));
  p.push_back(own<QuantProblem>(quant_case(Grouping::kBlock1x128, 5, 200, kBf16), seed++));
  p.push_back(own<QuantProblem>(quant_case(Grouping::kBlock128x128, 5, 200, kBf16), seed++));
  return p;
}

struct FamilyRaceOptions {
  int threads = 8;
  int rounds = 4;
  int reload_every = 2;  // reload_config() before round r > 0 with r % reload_every == 0
};

// One thread's round: every problem poisoned and launched on its stream, one synchronisation, then
// every output checked.
std::int64_t run_round(int thread, int round, std::vector<std::unique_ptr<Problem>>& problems,
                       const std::vector<std::size_t>& order, cudaStream_t stream) {
  SCOPED_TRACE(detail::concat("thread ", thread, " round ", round));
  std::int64_t calls = 0;
  for (std::size_t i : order) {
    Problem& p = *problems[i];
    try {
      p.poison(stream);
      p.launch(stream);
      ++calls;
    } catch (const std::exception& e) {
      ADD_FAILURE() << p.describe() << ": " << e.what();
    }
  }
  const cudaError_t err = cudaStreamSynchronize(stream);
  EXPECT_EQ(err, cudaSuccess) << "cudaStreamSynchronize: " << cudaGetErrorString(err);
  if (err != cudaSuccess) return calls;
  for (std::size_t i : order) {
    SCOPED_TRACE(problems[i]->describe());
    problems[i]->check(stream);
  }
  return calls;
}

void race_every_family(const std::vector<ProblemMaker>& makers, const FamilyRaceOptions& o) {
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  const auto threads = static_cast<std::size_t>(o.threads);
  std::vector<std::vector<std::unique_ptr<Problem>>> problems(threads);
  std::vector<cudaStream_t> streams(threads, nullptr);
  for (std::size_t t = 0; t < threads; ++t) {
    for (const ProblemMaker& make : makers) problems[t].push_back(make());
    // Non-blocking: nothing on these streams waits for the legacy default stream or another thread.
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[t], cudaStreamNonBlocking), cudaSuccess);
  }
  device_synchronize();

  std::atomic<std::int64_t> calls{0};
  for (int round = 0; round < o.rounds; ++round) {
    if (round > 0 && o.reload_every > 0 && round % o.reload_every == 0) reload_config();
    std::atomic<int> arrived{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < o.threads; ++t) {
      workers.emplace_back([&, t] {
        cudaSetDevice(device);
        // Spin barrier: every thread makes its first call within microseconds of the others.
        arrived.fetch_add(1);
        while (arrived.load() < o.threads) std::this_thread::yield();
        const auto ti = static_cast<std::size_t>(t);
        calls += run_round(t, round, problems[ti], visit_order(t, o.threads, makers.size()), streams[ti]);
      });
    }
    for (auto& w : workers) w.join();
  }
  EXPECT_EQ(calls.load(), static_cast<std::int64_t>(o.threads) * o.rounds * static_cast<std::int64_t>(makers.size()));
  // No sticky error: a fresh synchronisation and the last-error slot are both clean.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  for (cudaStream_t s : streams) EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(ConcurrencyFamilies, EightStreamsEveryFamilyFirstCallsRace) {
  TGEMM_REQUIRE_GPU();
  FamilyRaceOptions o;
  o.threads = 8;
  o.rounds = 4;
  o.reload_every = 2;  // rounds 0 and 2 start cold
  race_every_family(every_family(), o);
}

TEST(ConcurrencyFamilies, SanitizerEightStreamsSmallEveryFamily) {
  TGEMM_REQUIRE_GPU();
  FamilyRaceOptions o;
  o.threads = 8;
  o.rounds = 2;
  o.reload_every = 1;  // both rounds start cold
  race_every_family(small_every_family(), o);
}

}  // namespace
}  // namespace tgemm::test
