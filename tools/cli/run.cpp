#include "tools/cli/run.h"

#include <cuda_runtime.h>
#include <fmt/core.h>

#include <algorithm>

#include "backends/reference/reference_backend.h"
#include "core/check.h"
#include "core/table.h"
#include "cuda/cuda_check.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "tools/cli/common.h"

namespace tgemm::cli {

namespace {

// --solution as a runnable solution for p, or the dispatcher's choice without it.
SolutionPtr solution_for(const RunOptions& o, const TableKey& key, const GemmProblem& p) {
  Runtime& rt = Runtime::get();
  if (o.solution.empty()) return rt.dispatcher().resolve(p).solution;
  const std::size_t colon = o.solution.find(':');
  const std::string libtype = colon == std::string::npos ? std::string() : o.solution.substr(0, colon);
  const Backend* backend = libtype.empty() ? nullptr : rt.registry().find(libtype);
  TGEMM_CHECK(backend != nullptr, "tgemm run", "--solution must be 'libtype:name' of a backend in this build, got '",
              o.solution, "'");
  TableRow row;
  row.key = key;
  row.m = o.m;
  row.libtype = libtype;
  row.kernel_name = o.solution;
  row.file = "--solution";
  std::string why;
  SolutionPtr sol = backend->from_row(row, p, why);
  TGEMM_CHECK(sol != nullptr, "tgemm run", "--solution '", o.solution, "': ", why);
  return sol;
}

}  // namespace

int run_run(const RunOptions& o) {
  check_dim("tgemm run", "-m", o.m, 1);
  check_dim("tgemm run", "-n", o.n, 1);
  check_dim("tgemm run", "-k", o.k, 1);
  TGEMM_CHECK(o.iters >= 1, "tgemm run", "--iters must be >= 1, got ", o.iters);
  const auto epilogue = parse_epilogue_key(o.epilogue);
  TGEMM_CHECK(epilogue && !epilogue->scaled && !epilogue->use_c, "tgemm run",
              "--epilogue must be none, gelu, gelu_tanh or relu, got '", o.epilogue, "'");
  const DType in = parse_dtype(o.dtype, "--dtype");
  const DType out = o.out_dtype.empty() ? in : parse_dtype(o.out_dtype, "--out-dtype");
  require_gpu("run");

  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  TableKey key;
  key.arch = dev.arch;
  key.sm_count = dev.sm_count;
  key.n = o.n;
  key.k = o.k;
  key.bias = o.bias;
  key.dtype = in;
  key.out_dtype = out;
  key.epilogue = *epilogue;
  const GemmProblem p = problem_of_key(key, o.m, device);

  const SolutionPtr sol = solution_for(o, key, p);
  TGEMM_CHECK(sol->can_implement(p), "tgemm run", sol->name(), " cannot implement ", p.describe());

  // Inputs uniform in [-1, 1) (the tuner's and tests' fills), the output poisoned with NaN.
  DeviceBuffer x(static_cast<std::size_t>(o.m * o.k) * dtype_size(in));
  DeviceBuffer w(static_cast<std::size_t>(o.n * o.k) * dtype_size(in));
  DeviceBuffer b(o.bias ? static_cast<std::size_t>(o.n) * dtype_size(in) : 16);
  DeviceBuffer y(static_cast<std::size_t>(o.m * o.n) * dtype_size(out));
  DeviceBuffer ws(std::max<std::size_t>(sol->workspace_size(p), 256));
  fill_uniform(x.data(), in, o.m * o.k, 1, -1.0f, 1.0f, nullptr);
  fill_uniform(w.data(), in, o.n * o.k, 2, -1.0f, 1.0f, nullptr);
  if (o.bias) fill_uniform(b.data(), in, o.n, 3, -1.0f, 1.0f, nullptr);
  fill_nan(y.data(), out, o.m * o.n, nullptr);
  GemmArgs args;
  args.a = x.data();
  args.b = w.data();
  args.bias = o.bias ? b.data() : nullptr;
  args.out = y.data();

  cudaStream_t stream = nullptr;
  TGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "tgemm run");
  struct Guard {
    cudaStream_t s;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    ~Guard() {
      if (e0) cudaEventDestroy(e0);
      if (e1) cudaEventDestroy(e1);
      cudaStreamDestroy(s);
    }
  } g{stream};
  TGEMM_CUDA_CHECK(cudaEventCreate(&g.e0), "tgemm run");
  TGEMM_CUDA_CHECK(cudaEventCreate(&g.e1), "tgemm run");
  const auto s = reinterpret_cast<Stream>(stream);
  const Workspace wsp{ws.data(), ws.bytes()};
  TGEMM_CUDA_CHECK(cudaEventRecord(g.e0, stream), "tgemm run");
  for (int i = 0; i < o.iters; ++i) sol->run(p, args, wsp, s);
  TGEMM_CUDA_CHECK(cudaEventRecord(g.e1, stream), "tgemm run");
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(stream), "tgemm run");
  float ms = 0;
  TGEMM_CUDA_CHECK(cudaEventElapsedTime(&ms, g.e0, g.e1), "tgemm run");
  // Eager calls on the same inputs (L2-warm after the first): for profilers, not a benchmark.
  fmt::print("{}: {} on {} ({} SMs), {} eager calls, {:.2f} us a call (not a benchmark: use tgemm bench)\n",
             p.describe(), sol->name(), dev.name, dev.sm_count, o.iters, 1000.0 * ms / o.iters);

  if (!o.check) return 0;
  DeviceBuffer ref(static_cast<std::size_t>(o.m * o.n) * sizeof(float));
  GemmArgs ra = args;
  ra.out = ref.data();
  run_reference_gemm(p, ra, DType::kFloat32, o.n, nullptr);
  const Tolerance tol = gemm_tolerance(out, o.k, o.bias);
  const CompareResult cr =
      compare_with_reference(y.data(), out, o.n, ref.as<float>(), o.n, o.m, o.n, tol.rtol, tol.atol, nullptr);
  if (cr.bad == 0) {
    fmt::print("check ok: {} elements within rtol {:.2g}, atol {:.2g} of the fp32 reference\n", cr.checked, tol.rtol,
               tol.atol);
    return 0;
  }
  fmt::print("check FAILED: {} of {} elements outside rtol {:.2g}, atol {:.2g} ({} non-finite; first at {}: {} vs {})\n",
             cr.bad, cr.checked, tol.rtol, tol.atol, cr.nonfinite, cr.first_bad, cr.first_bad_out, cr.first_bad_ref);
  return 1;
}

}  // namespace tgemm::cli
