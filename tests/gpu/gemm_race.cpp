#include "tests/gpu/gemm_race.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <sstream>
#include <thread>

#include "backends/reference/reference_backend.h"
#include "core/capture.h"
#include "core/validate.h"
#include "runtime/device_utils.h"
#include "tgemm/config.h"
#include "tgemm/error.h"

namespace tgemm::test {
namespace {

constexpr DType kBf16 = DType::kBFloat16;
constexpr DType kFp16 = DType::kFloat16;
constexpr DType kFp32 = DType::kFloat32;

// A failure list that stays readable when everything breaks at once.
constexpr std::size_t kMaxFailures = 40;

const char* form_name(RaceForm f) {
  switch (f) {
    case RaceForm::kA16W16: return "gemm_a16w16";
    case RaceForm::kBias: return "gemm_bias";
    case RaceForm::kGelu: return "gemm_gelu";
    case RaceForm::kGeluTanh: return "gemm_gelu(tanh)";
    case RaceForm::kRelu: return "gemm_relu";
    case RaceForm::kAlphaBeta: return "gemm_alpha_beta";
    case RaceForm::kAlphaBetaInPlace: return "gemm_alpha_beta(c=out)";
    case RaceForm::kAllOptions: return "gemm_a16w16(bias,gelu_tanh,alpha,beta)";
  }
  return "?";
}

// The epilogue a form computes: out = act(alpha * x @ w^T + beta * c + bias).
struct FormEpilogue {
  Activation activation = Activation::kNone;
  float alpha = 1.0f;
  float beta = 0.0f;
  bool bias = false;
};

FormEpilogue epilogue_of(const RaceCase& c) {
  FormEpilogue e;
  e.bias = c.bias;
  switch (c.form) {
    case RaceForm::kA16W16: break;
    case RaceForm::kBias: e.bias = true; break;
    case RaceForm::kGelu: e.activation = Activation::kGelu; break;
    case RaceForm::kGeluTanh: e.activation = Activation::kGeluTanh; break;
    case RaceForm::kRelu: e.activation = Activation::kRelu; break;
    case RaceForm::kAlphaBeta:
      e.bias = false;  // gemm_alpha_beta takes no bias
      e.alpha = 0.5f;
      e.beta = -0.75f;
      break;
    case RaceForm::kAlphaBetaInPlace:
      e.bias = false;
      e.alpha = 1.25f;
      e.beta = 1.0f;
      break;
    case RaceForm::kAllOptions:
      e.bias = true;
      e.activation = Activation::kGeluTanh;
      e.alpha = 0.75f;
      e.beta = 0.5f;
      break;
  }
  return e;
}

// One case's shared, read-only device data.
struct CaseData {
  RaceCase c;
  FormEpilogue e;
  DeviceBuffer x, w, bias, cbuf, ref;
  TensorView xv, wv, bv, cv;
  Tolerance tol{};

  // The options of the call itself (c is `out` for the in-place form).
  GemmOptions options(const TensorView& out) const {
    GemmOptions o;
    if (e.bias) o.bias = &bv;
    o.activation = e.activation;
    o.alpha = e.alpha;
    o.beta = e.beta;
    if (e.beta != 0.0f) o.c = c.form == RaceForm::kAlphaBetaInPlace ? &out : &cv;
    return o;
  }
};

std::size_t bytes_of(std::int64_t count, DType t) {
  return static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) * dtype_size(t);
}

void build_inputs(CaseData& d, std::uint64_t seed) {
  const RaceCase& c = d.c;
  d.e = epilogue_of(c);
  d.x = DeviceBuffer(bytes_of(c.m * c.k, c.in));
  d.w = DeviceBuffer(bytes_of(c.n * c.k, c.in));
  fill_uniform(d.x.data(), c.in, c.m * c.k, seed * 8 + 1, -1.0f, 1.0f, nullptr);
  fill_uniform(d.w.data(), c.in, c.n * c.k, seed * 8 + 2, -1.0f, 1.0f, nullptr);
  d.xv = TensorView::contiguous(d.x.data(), c.in, {c.m, c.k});
  d.wv = TensorView::contiguous(d.w.data(), c.in, {c.n, c.k});
  if (d.e.bias) {
    d.bias = DeviceBuffer(bytes_of(c.n, c.in));
    fill_uniform(d.bias.data(), c.in, c.n, seed * 8 + 3, -1.0f, 1.0f, nullptr);
    d.bv = TensorView::contiguous(d.bias.data(), c.in, {c.n});
  }
  if (d.e.beta != 0.0f) {
    // The separate c, and for the in-place form the values copied into out before each call.
    d.cbuf = DeviceBuffer(bytes_of(c.m * c.n, c.out));
    fill_uniform(d.cbuf.data(), c.out, c.m * c.n, seed * 8 + 4, -1.0f, 1.0f, nullptr);
    d.cv = TensorView::contiguous(d.cbuf.data(), c.out, {c.m, c.n});
  }
}

// The fp32 reference of a case, with `out` (any output buffer of the case) standing in for the
// output view the validation needs. The in-place form's c is the separate copy of its values.
void build_reference(CaseData& d, const TensorView& out) {
  GemmOptions o = d.options(out);
  if (d.e.beta != 0.0f) o.c = &d.cv;
  GemmCall call = validate_a16w16(d.xv, d.wv, out, o);
  int device = 0;
  cudaGetDevice(&device);
  call.problem.device = device;
  d.ref = DeviceBuffer(bytes_of(d.c.m * d.c.n, kFp32));
  GemmArgs args = call.args;
  args.out = d.ref.data();
  run_reference_gemm(call.problem, args, kFp32, d.c.n, nullptr);
  const GemmProblem& p = call.problem;
  d.tol = gemm_tolerance(p.out_type, p.k, p.has_bias() || p.use_c || p.activation != Activation::kNone);
  d.tol.atol *= std::max(1.0f, std::abs(d.e.alpha));
}

void call_form(const CaseData& d, const TensorView& out, Stream stream) {
  const TensorView* bias = d.e.bias ? &d.bv : nullptr;
  switch (d.c.form) {
    case RaceForm::kA16W16:
    case RaceForm::kAllOptions: gemm_a16w16(d.xv, d.wv, out, d.options(out), stream); return;
    case RaceForm::kBias: gemm_bias(d.xv, d.wv, d.bv, out, stream); return;
    case RaceForm::kGelu:
    case RaceForm::kGeluTanh: gemm_gelu(d.xv, d.wv, bias, out, d.c.form == RaceForm::kGeluTanh, stream); return;
    case RaceForm::kRelu: gemm_relu(d.xv, d.wv, bias, out, stream); return;
    case RaceForm::kAlphaBeta: gemm_alpha_beta(d.xv, d.wv, d.cv, d.e.alpha, d.e.beta, out, stream); return;
    case RaceForm::kAlphaBetaInPlace: gemm_alpha_beta(d.xv, d.wv, out, d.e.alpha, d.e.beta, out, stream); return;
  }
}

struct ThreadState {
  cudaStream_t stream = nullptr;
  std::vector<DeviceBuffer> outs;  // one per case
  std::vector<TensorView> out_views;
  std::vector<std::size_t> order;  // the order this thread visits the cases in
};

class Failures {
 public:
  void add(std::string line) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++count_;
    if (lines_.size() < kMaxFailures) lines_.push_back(std::move(line));
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (count_ > lines_.size()) lines_.push_back(std::to_string(count_ - lines_.size()) + " more failures");
    return std::move(lines_);
  }

 private:
  std::mutex mutex_;
  std::size_t count_ = 0;
  std::vector<std::string> lines_;
};

std::string where(int thread, int round, const CaseData& d) {
  std::ostringstream os;
  os << "thread " << thread << " round " << round << " " << d.c.describe();
  return os.str();
}

// One thread's round: every case poisoned and launched on its stream, one synchronisation, then
// every output compared with the reference.
std::int64_t run_round(int thread, int round, const std::vector<CaseData>& data, ThreadState& ts, Failures& failures) {
  std::int64_t calls = 0;
  for (std::size_t i : ts.order) {
    const CaseData& d = data[i];
    const TensorView& out = ts.out_views[i];
    try {
      if (d.c.form == RaceForm::kAlphaBetaInPlace) {
        cudaError_t err = cudaMemcpyAsync(out.data, d.cbuf.data(), bytes_of(d.c.m * d.c.n, d.c.out),
                                          cudaMemcpyDeviceToDevice, ts.stream);
        if (err != cudaSuccess) throw Error(std::string("cudaMemcpyAsync: ") + cudaGetErrorString(err));
      } else {
        fill_nan(out.data, d.c.out, d.c.m * d.c.n, ts.stream);
      }
      call_form(d, out, ts.stream);
      ++calls;
    } catch (const std::exception& e) {
      failures.add(where(thread, round, d) + ": " + e.what());
    }
  }
  cudaError_t err = cudaStreamSynchronize(ts.stream);
  if (err != cudaSuccess) {
    failures.add("thread " + std::to_string(thread) + " round " + std::to_string(round) +
                 ": cudaStreamSynchronize: " + cudaGetErrorString(err));
    return calls;
  }
  for (std::size_t i : ts.order) {
    const CaseData& d = data[i];
    try {
      CompareResult r = compare_with_reference(ts.out_views[i].data, d.c.out, d.c.n, d.ref.as<float>(), d.c.n, d.c.m,
                                               d.c.n, d.tol.rtol, d.tol.atol, ts.stream);
      if (r.bad == 0) continue;
      std::ostringstream os;
      os << where(thread, round, d) << " ["
         << describe_gemm_a16w16(d.xv, d.wv, ts.out_views[i], d.options(ts.out_views[i])).kernel_name << "]: " << r.bad
         << " of " << r.checked << " elements off (" << r.nonfinite << " non-finite), max |err| " << r.max_abs_err
         << "; first at (" << r.first_bad / d.c.n << ", " << r.first_bad % d.c.n << "): got " << r.first_bad_out
         << ", want " << r.first_bad_ref;
      failures.add(os.str());
    } catch (const std::exception& e) {
      failures.add(where(thread, round, d) + ": compare: " + e.what());
    }
  }
  return calls;
}

RaceCase rc(std::int64_t m, std::int64_t n, std::int64_t k, RaceForm form, DType in = kBf16, DType out = kBf16,
            bool bias = false) {
  RaceCase c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.form = form;
  c.in = in;
  c.out = out;
  c.bias = bias;
  return c;
}

// Fake, distinct, 256-byte aligned addresses: validation reads no memory.
void* fake_pointer(int i) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(i + 1) << 36); }

}  // namespace

std::vector<std::size_t> visit_order(int thread, int threads, std::size_t n) {
  const int groups = std::max(1, threads / 2);
  std::vector<std::size_t> order(n);
  const std::size_t start = static_cast<std::size_t>(thread % groups) * n / static_cast<std::size_t>(groups);
  for (std::size_t i = 0; i < n; ++i) order[i] = (start + i) % n;
  return order;
}

std::string RaceCase::describe() const {
  std::ostringstream os;
  os << form_name(form) << " M=" << m << " N=" << n << " K=" << k << " " << dtype_short_name(in) << "->"
     << dtype_short_name(out) << (epilogue_of(*this).bias ? " bias" : "");
  return os.str();
}

std::vector<RaceCase> full_race_cases() {
  using F = RaceForm;
  return {
      // 576x7168 and 1536x7168: exact rows of the shipped table at M = 1, 16, 64, 128 (skinny GEMV,
      // skinny weight-as-B, explicit cuBLASLt configurations), defaults at other M.
      rc(1, 576, 7168, F::kA16W16),
      rc(16, 576, 7168, F::kA16W16),
      rc(64, 576, 7168, F::kA16W16),
      rc(16, 576, 7168, F::kGelu),
      rc(37, 576, 7168, F::kBias),
      rc(3, 576, 7168, F::kRelu, kFp16, kFp16, true),
      rc(1, 1536, 7168, F::kA16W16),
      rc(16, 1536, 7168, F::kA16W16),
      rc(128, 1536, 7168, F::kA16W16),
      rc(13, 1536, 7168, F::kA16W16),  // skinny weight-as-B default (M = 9-16)
      rc(13, 1536, 7168, F::kGeluTanh, kBf16, kBf16, true),
      rc(300, 1536, 7168, F::kAllOptions),
      rc(9, 1536, 7168, F::kA16W16, kFp16, kFp32),
      // 2304x1536: the skinny weight-as-A default at M <= 8.
      rc(5, 2304, 1536, F::kA16W16),
      rc(7, 2304, 1536, F::kBias, kFp16, kFp16),
      rc(3, 2304, 1536, F::kRelu, kBf16, kBf16, true),
      rc(1, 2304, 1536, F::kA16W16, kBf16, kFp32),
      rc(77, 2304, 1536, F::kAlphaBeta),
      rc(211, 2304, 1536, F::kA16W16, kBf16, kFp32),
      rc(8, 2304, 1536, F::kAlphaBetaInPlace),
      // 1000x520: odd N; the GEMV default at M = 1, the staged GELU + bias (split) above M = 16.
      rc(1, 1000, 520, F::kA16W16),
      rc(1, 1000, 520, F::kGelu, kFp16, kFp16, true),
      rc(9, 1000, 520, F::kAlphaBetaInPlace, kFp16, kFp16),
      rc(100, 1000, 520, F::kGelu, kBf16, kBf16, true),
      rc(255, 1000, 520, F::kRelu, kBf16, kFp32),
      rc(31, 1000, 520, F::kAllOptions, kFp16, kFp32),
      // 5632x1024: 3 x 44 tiles of 128x128 fill 132 SMs at M = 257-384 (the fused CUTLASS GELU
      // default); at M = 65 the grid is too small and GELU + bias is staged.
      rc(299, 5632, 1024, F::kGelu, kBf16, kBf16, true),
      rc(257, 5632, 1024, F::kGelu),
      rc(65, 5632, 1024, F::kGelu, kBf16, kBf16, true),
      rc(2, 5632, 1024, F::kA16W16),
      rc(150, 5632, 1024, F::kAlphaBeta, kFp16, kFp16),
      // 200x72: a weight too small for any skinny default.
      rc(1, 200, 72, F::kA16W16, kFp16, kFp16),
      rc(2, 200, 72, F::kGeluTanh),
      rc(33, 200, 72, F::kBias, kBf16, kFp32),
      rc(300, 200, 72, F::kAlphaBetaInPlace),
      rc(171, 200, 72, F::kRelu, kFp16, kFp16),
      // 4096x4096: an exact row at M = 16, the weight-as-A default at M = 8 (32 MiB).
      rc(16, 4096, 4096, F::kA16W16),
      rc(8, 4096, 4096, F::kA16W16),
      rc(4, 4096, 4096, F::kBias),
      rc(129, 4096, 4096, F::kGelu, kFp16, kFp16),
  };
}

std::vector<RaceCase> small_race_cases() {
  using F = RaceForm;
  return {
      rc(1, 1000, 520, F::kA16W16),                         // skinny GEMV
      rc(5, 1024, 768, F::kBias),                           // skinny weight-as-A
      rc(13, 640, 4096, F::kA16W16, kFp16, kFp16),          // skinny weight-as-B
      rc(100, 1000, 520, F::kGelu, kBf16, kBf16, true),     // split
      rc(200, 8448, 64, F::kGelu),                          // CUTLASS: 2 x 66 tiles of 128x128
      rc(64, 576, 7168, F::kA16W16),                        // the shipped table's cuBLASLt row
      rc(33, 200, 72, F::kAlphaBetaInPlace, kFp16, kFp16),  // cuBLASLt
      rc(7, 200, 72, F::kAllOptions, kBf16, kFp32),
  };
}

std::vector<RaceCase> capture_cases(int set, int nsets) {
  using F = RaceForm;
  std::vector<RaceCase> pool = small_race_cases();
  pool.push_back(rc(16, 576, 7168, F::kA16W16));
  pool.push_back(rc(250, 1000, 520, F::kRelu, kFp16, kFp32, true));
  pool.push_back(rc(2, 2304, 1536, F::kGeluTanh));
  pool.push_back(rc(90, 200, 72, F::kA16W16, kBf16, kFp32));
  std::vector<RaceCase> cases;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(nsets)) != set) cases.push_back(pool[i]);
  }
  cases.push_back(rc(40 + set, 448, 320, F::kA16W16));
  cases.push_back(rc(3, 320 + 64 * set, 448, F::kBias, kFp16, kFp16));
  return cases;
}

RaceReport race(const std::vector<RaceCase>& cases, const RaceOptions& options) {
  RaceReport report;
  Failures failures;
  int device = 0;
  cudaGetDevice(&device);

  std::vector<CaseData> data(cases.size());
  std::vector<ThreadState> threads(static_cast<std::size_t>(options.threads));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    data[i].c = cases[i];
    build_inputs(data[i], 1000 + i);
  }
  for (std::size_t t = 0; t < threads.size(); ++t) {
    ThreadState& ts = threads[t];
    // Non-blocking: nothing on these streams waits for the legacy default stream or another
    // thread's work.
    if (cudaStreamCreateWithFlags(&ts.stream, cudaStreamNonBlocking) != cudaSuccess) {
      throw Error("race: cudaStreamCreateWithFlags failed");
    }
    ts.order = visit_order(static_cast<int>(t), options.threads, cases.size());
    for (const CaseData& d : data) {
      ts.outs.emplace_back(bytes_of(d.c.m * d.c.n, d.c.out));
      ts.out_views.push_back(TensorView::contiguous(ts.outs.back().data(), d.c.out, {d.c.m, d.c.n}));
    }
  }
  for (std::size_t i = 0; i < data.size(); ++i) build_reference(data[i], threads[0].out_views[i]);
  device_synchronize();
  if (options.before_first_round) options.before_first_round();

  std::atomic<std::int64_t> calls{0};
  std::atomic<bool> rounds_done{false};
  std::atomic<int> reloads{0};
  std::thread reloader;
  if (options.reload_concurrently) {
    reloader = std::thread([&] {
      while (!rounds_done.load()) {
        reload_config();
        ++reloads;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  for (int round = 0; round < options.rounds; ++round) {
    if (round > 0 && options.reload_every > 0 && round % options.reload_every == 0) reload_config();
    std::atomic<int> arrived{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < options.threads; ++t) {
      workers.emplace_back([&, t] {
        cudaSetDevice(device);
        // Spin barrier: every thread makes its first call within microseconds of the others.
        arrived.fetch_add(1);
        while (arrived.load() < options.threads) std::this_thread::yield();
        calls += run_round(t, round, data, threads[static_cast<std::size_t>(t)], failures);
      });
    }
    for (auto& w : workers) w.join();
  }
  rounds_done = true;
  if (reloader.joinable()) reloader.join();
  report.reloads = reloads.load();

  for (std::size_t i = 0; i < data.size(); ++i) {
    const TensorView& out = threads[0].out_views[i];
    DispatchInfo info = describe_gemm_a16w16(data[i].xv, data[i].wv, out, data[i].options(out));
    report.kernels.push_back(info.kernel_name);
    ++report.libtypes[info.libtype];
  }
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) failures.add(std::string("cudaDeviceSynchronize: ") + cudaGetErrorString(err));
  err = cudaGetLastError();
  if (err != cudaSuccess) failures.add(std::string("sticky CUDA error: ") + cudaGetErrorString(err));
  for (ThreadState& ts : threads) cudaStreamDestroy(ts.stream);
  report.calls = calls.load();
  report.failures = failures.take();
  return report;
}

std::string untuned_row(const RaceCase& c) {
  const FormEpilogue e = epilogue_of(c);
  TensorView x = TensorView::contiguous(fake_pointer(0), c.in, {c.m, c.k});
  TensorView w = TensorView::contiguous(fake_pointer(1), c.in, {c.n, c.k});
  TensorView out = TensorView::contiguous(fake_pointer(2), c.out, {c.m, c.n});
  TensorView bias = TensorView::contiguous(fake_pointer(3), c.in, {c.n});
  TensorView cv = TensorView::contiguous(fake_pointer(4), c.out, {c.m, c.n});
  GemmOptions o;
  if (e.bias) o.bias = &bias;
  o.activation = e.activation;
  o.alpha = e.alpha;
  o.beta = e.beta;
  if (e.beta != 0.0f) o.c = c.form == RaceForm::kAlphaBetaInPlace ? &out : &cv;
  return format_untuned_row(validate_a16w16(x, w, out, o).problem);
}

}  // namespace tgemm::test
