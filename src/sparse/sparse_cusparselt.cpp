// cuSPARSELt backend of sparse_gemm (2:4 weights). Layouts: out[M,N] = x[M,K] @ W[N,K]^T is run
// as D = A @ B with A = W (structured, row-major N x K), B = x^T (column-major K x M, ld = x's row
// stride) and D = out^T (column-major N x M, ld = out's row stride): no operand is copied.
// cuSPARSELt wants the dense dimensions and leading dimensions in multiples of 16 elements (32 for
// 8-bit types) and 16-byte aligned pointers; other problems (odd M, M = 1, padded rows) run
// through a padded copy of x and out in the workspace. FP8 (e4m3 operands) writes an fp32 D in the
// workspace, which the caller's epilogue scales. The library is loaded with dlopen on first use.
#include "sparse/sparse_backends.h"

#if defined(TGEMM_HAVE_CUSPARSELT)

#include <cuda_runtime.h>
#include <cusparseLt.h>
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "runtime/runtime.h"

namespace tgemm::sparse {
namespace {

// The entry points used, resolved once from libcusparseLt.so.0.
struct CusparseltApi {
#define TGEMM_CSLT_FN(name) decltype(&::name) name = nullptr;
  TGEMM_CSLT_FN(cusparseLtInit)
  TGEMM_CSLT_FN(cusparseLtGetErrorString)
  TGEMM_CSLT_FN(cusparseLtDenseDescriptorInit)
  TGEMM_CSLT_FN(cusparseLtStructuredDescriptorInit)
  TGEMM_CSLT_FN(cusparseLtMatmulDescriptorInit)
  TGEMM_CSLT_FN(cusparseLtMatmulAlgSelectionInit)
  TGEMM_CSLT_FN(cusparseLtMatmulAlgSetAttribute)
  TGEMM_CSLT_FN(cusparseLtMatmulAlgGetAttribute)
  TGEMM_CSLT_FN(cusparseLtMatmulPlanInit)
  TGEMM_CSLT_FN(cusparseLtMatmulGetWorkspace)
  TGEMM_CSLT_FN(cusparseLtMatmul)
  TGEMM_CSLT_FN(cusparseLtSpMMACompressedSize2)
  TGEMM_CSLT_FN(cusparseLtSpMMACompress2)
#undef TGEMM_CSLT_FN
  std::string error;  // why loading failed; empty on success
};

const CusparseltApi& api() {
  static const CusparseltApi loaded = [] {
    CusparseltApi a;
    // The soname first: in a PyTorch process torch has usually loaded it already; then the copy
    // CMake found for this build.
    void* lib = dlopen("libcusparseLt.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = dlopen(TGEMM_CUSPARSELT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      a.error =
          std::string("libcusparseLt.so.0 could not be loaded (nor ") + TGEMM_CUSPARSELT_LIBRARY + "): " + dlerror();
      return a;
    }
#define TGEMM_CSLT_LOAD(name)                                     \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(lib, #name)); \
  if (a.name == nullptr && a.error.empty()) a.error = "libcusparseLt.so.0 lacks " #name;
    TGEMM_CSLT_LOAD(cusparseLtInit)
    TGEMM_CSLT_LOAD(cusparseLtGetErrorString)
    TGEMM_CSLT_LOAD(cusparseLtDenseDescriptorInit)
    TGEMM_CSLT_LOAD(cusparseLtStructuredDescriptorInit)
    TGEMM_CSLT_LOAD(cusparseLtMatmulDescriptorInit)
    TGEMM_CSLT_LOAD(cusparseLtMatmulAlgSelectionInit)
    TGEMM_CSLT_LOAD(cusparseLtMatmulAlgSetAttribute)
    TGEMM_CSLT_LOAD(cusparseLtMatmulAlgGetAttribute)
    TGEMM_CSLT_LOAD(cusparseLtMatmulPlanInit)
    TGEMM_CSLT_LOAD(cusparseLtMatmulGetWorkspace)
    TGEMM_CSLT_LOAD(cusparseLtMatmul)
    TGEMM_CSLT_LOAD(cusparseLtSpMMACompressedSize2)
    TGEMM_CSLT_LOAD(cusparseLtSpMMACompress2)
#undef TGEMM_CSLT_LOAD
    return a;
  }();
  return loaded;
}

const CusparseltApi& checked_api(const char* op) {
  const CusparseltApi& a = api();
  TGEMM_CHECK(a.error.empty(), op, "cuSPARSELt is not available: ", a.error);
  return a;
}

#define TGEMM_CSLT_CHECK(call, where)                                                      \
  do {                                                                                     \
    cusparseStatus_t tgemm_st_ = (call);                                                   \
    TGEMM_CHECK(tgemm_st_ == CUSPARSE_STATUS_SUCCESS, (where),                             \
                #call " failed: ", api().cusparseLtGetErrorString(tgemm_st_), " (status ", \
                static_cast<int>(tgemm_st_), ")");                                         \
  } while (0)

// 16-byte alignment: the largest cuSPARSELt accepts, what its tensor-core loads need.
constexpr std::uint32_t kAlignment = 16;
constexpr std::int64_t kDenseMultiple = 16;

cudaDataType cuda_type(DType t) {
  switch (t) {
    case DType::kBFloat16: return CUDA_R_16BF;
    case DType::kFloat8E4M3: return CUDA_R_8F_E4M3;
    case DType::kFloat32: return CUDA_R_32F;
    default: return CUDA_R_16F;
  }
}

// One handle per device (cuSPARSELt binds a handle to the device current at cusparseLtInit), kept
// for the life of the process; cusparseLtMatmul takes its stream per call, so threads share it.
const cusparseLtHandle_t* handle_for(int device, const char* op) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<cusparseLtHandle_t>> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto& h = handles[device];
  if (!h) {
    auto created = std::make_unique<cusparseLtHandle_t>();
    TGEMM_CSLT_CHECK(checked_api(op).cusparseLtInit(created.get()), op);
    h = std::move(created);
  }
  return h.get();
}

void init_weight_descriptor(const cusparseLtHandle_t* h, cusparseLtMatDescriptor_t* d, std::int64_t n, std::int64_t k,
                            DType dtype, const char* op) {
  TGEMM_CSLT_CHECK(api().cusparseLtStructuredDescriptorInit(h, d, n, k, k, kAlignment, cuda_type(dtype),
                                                            CUSPARSE_ORDER_ROW, CUSPARSELT_SPARSITY_50_PERCENT),
                   op);
}

// A matmul plan for one (device, shape, layout, algorithm, split-K), built once and kept: plan
// initialisation costs host time (descriptor checks, kernel selection) no call should repeat.
struct Plan {
  cusparseLtMatDescriptor_t a, b, d;
  cusparseLtMatmulDescriptor_t matmul;
  cusparseLtMatmulAlgSelection_t alg;
  cusparseLtMatmulPlan_t plan;
  std::size_t workspace = 0;
};

using PlanKey =
    std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, int, int, int>;

// The plan's output type: the input's for 16-bit types, fp32 for e4m3 (its fp32 product is
// scaled by the caller's epilogue).
DType out_type_for(DType in) { return in == DType::kFloat8E4M3 ? DType::kFloat32 : in; }

const Plan& plan_for(int device, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t ldx, std::int64_t ldo,
                     DType dtype, int algorithm, int split_k) {
  constexpr const char* op = "sparse_gemm (cuSPARSELt)";
  static std::mutex mutex;
  static std::map<PlanKey, std::unique_ptr<Plan>> plans;
  const DType out_dtype = out_type_for(dtype);
  const PlanKey key{device,    m,      n, k, ldx, ldo, static_cast<int>(dtype), static_cast<int>(out_dtype),
                    algorithm, split_k};
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = plans[key];
  if (slot) return *slot;
  const cusparseLtHandle_t* h = handle_for(device, op);
  const CusparseltApi& a = checked_api(op);
  auto p = std::make_unique<Plan>();
  init_weight_descriptor(h, &p->a, n, k, dtype, op);
  TGEMM_CSLT_CHECK(
      a.cusparseLtDenseDescriptorInit(h, &p->b, k, m, ldx, kAlignment, cuda_type(dtype), CUSPARSE_ORDER_COL), op);
  TGEMM_CSLT_CHECK(
      a.cusparseLtDenseDescriptorInit(h, &p->d, n, m, ldo, kAlignment, cuda_type(out_dtype), CUSPARSE_ORDER_COL), op);
  TGEMM_CSLT_CHECK(a.cusparseLtMatmulDescriptorInit(h, &p->matmul, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                    CUSPARSE_OPERATION_NON_TRANSPOSE, &p->a, &p->b, &p->d, &p->d,
                                                    CUSPARSE_COMPUTE_32F),
                   op);
  TGEMM_CSLT_CHECK(a.cusparseLtMatmulAlgSelectionInit(h, &p->alg, &p->matmul, CUSPARSELT_MATMUL_ALG_DEFAULT), op);
  if (algorithm >= 0) {
    int max_id = 0;
    TGEMM_CSLT_CHECK(
        a.cusparseLtMatmulAlgGetAttribute(h, &p->alg, CUSPARSELT_MATMUL_ALG_CONFIG_MAX_ID, &max_id, sizeof(max_id)),
        op);
    TGEMM_CHECK(algorithm < max_id, op, "options.algorithm must be below cuSPARSELt's ", max_id,
                " configurations for this problem, got ", algorithm);
    TGEMM_CSLT_CHECK(
        a.cusparseLtMatmulAlgSetAttribute(h, &p->alg, CUSPARSELT_MATMUL_ALG_CONFIG_ID, &algorithm, sizeof(algorithm)),
        op);
  }
  if (split_k > 0) {
    // cuSPARSELt decides per problem which split-K values it takes (0.8.0 refuses 2 on 256 x 256 x
    // 512): a refusal is the caller's argument, named as such.
    const cusparseStatus_t st =
        a.cusparseLtMatmulAlgSetAttribute(h, &p->alg, CUSPARSELT_MATMUL_SPLIT_K, &split_k, sizeof(split_k));
    TGEMM_CHECK(st == CUSPARSE_STATUS_SUCCESS, op, "options.split_k must be a split-K cuSPARSELt accepts for ", m, "x",
                n, "x", k, " (CUSPARSELT_MATMUL_SPLIT_K), got ", split_k, ": ", a.cusparseLtGetErrorString(st),
                " (status ", static_cast<int>(st), ")");
  }
  TGEMM_CSLT_CHECK(a.cusparseLtMatmulPlanInit(h, &p->plan, &p->matmul, &p->alg), op);
  TGEMM_CSLT_CHECK(a.cusparseLtMatmulGetWorkspace(h, &p->plan, &p->workspace), op);
  slot = std::move(p);
  return *slot;
}

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }
bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

std::string cusparselt_unavailable_reason() { return api().error; }

std::size_t cusparselt_compressed_bytes(std::int64_t n, std::int64_t k, DType dtype) {
  constexpr const char* op = "sparse_compressed_bytes_2_4";
  check_2_4_shape(n, k, dtype, op);
  const cusparseLtHandle_t* h = handle_for(cuda_current_device(), op);
  cusparseLtMatDescriptor_t d;
  init_weight_descriptor(h, &d, n, k, dtype, op);
  std::size_t bytes = 0, buffer = 0;
  TGEMM_CSLT_CHECK(api().cusparseLtSpMMACompressedSize2(h, &d, &bytes, &buffer), op);
  return bytes;
}

void cusparselt_compress(const void* w, std::int64_t n, std::int64_t k, DType dtype, void* compressed, Stream stream) {
  constexpr const char* op = "SparseWeight::compress_2_4";
  const int device = cuda_current_device();
  const cusparseLtHandle_t* h = handle_for(device, op);
  cusparseLtMatDescriptor_t d;
  init_weight_descriptor(h, &d, n, k, dtype, op);
  std::size_t bytes = 0, buffer_bytes = 0;
  TGEMM_CSLT_CHECK(api().cusparseLtSpMMACompressedSize2(h, &d, &bytes, &buffer_bytes), op);
  Workspace ws = Runtime::get().workspaces().get(device, stream, buffer_bytes);
  TGEMM_CSLT_CHECK(
      api().cusparseLtSpMMACompress2(h, &d, 1, CUSPARSE_OPERATION_NON_TRANSPOSE, w, compressed, ws.data, stream), op);
}

namespace {

// Runs D = W @ B for the problem `call` with B = x (padded into the workspace where cuSPARSELt
// cannot read it in place), D either `out` (16-bit, direct problems), a padded copy copied back to
// `out`, or (fp32_out) an fp32 [m, n] buffer in the workspace handed to `finish`.
void run_matmul(const SparseGemmCall& call, const SparseWeight& w, const void* x, void* out, int algorithm, int split_k,
                Stream stream, const std::function<void(const float*)>* finish) {
  constexpr const char* op = "sparse_gemm (cuSPARSELt)";
  const int device = cuda_current_device();
  const std::size_t esize = dtype_size(w.dtype());
  const std::int64_t multiple = sparse_2_4_multiple(w.dtype());
  const bool fp32_out = finish != nullptr;
  const bool direct_x = call.m % multiple == 0 && call.ldx % multiple == 0 && aligned16(x);
  const bool direct_out = fp32_out || (call.ldo % multiple == 0 && aligned16(out));
  const bool direct = direct_x && direct_out;
  const std::int64_t m = direct ? call.m : round_up(call.m, multiple);
  const std::int64_t ldx = direct ? call.ldx : call.k;
  const std::int64_t ldo = direct && !fp32_out ? call.ldo : call.n;
  const Plan& plan = plan_for(device, m, call.n, call.k, ldx, ldo, w.dtype(), algorithm, split_k);
  // Workspace: cuSPARSELt's, then x padded to m rows, then D (padded or fp32), each 256-byte aligned.
  const std::size_t out_esize = fp32_out ? 4 : esize;
  const std::size_t lib_bytes = static_cast<std::size_t>(round_up(static_cast<std::int64_t>(plan.workspace), 256));
  const std::size_t x_bytes = direct ? 0 : static_cast<std::size_t>(round_up(m * call.k * esize, 256));
  const std::size_t d_bytes = direct && !fp32_out ? 0 : static_cast<std::size_t>(m * call.n * out_esize);
  Workspace ws = Runtime::get().workspaces().get(device, stream, lib_bytes + x_bytes + d_bytes);
  auto* base = static_cast<char*>(ws.data);
  const void* b = x;
  void* d = direct && !fp32_out ? out : base + lib_bytes + x_bytes;
  if (!direct) {
    void* x_pad = base + lib_bytes;
    TGEMM_CUDA_CHECK(cudaMemcpy2DAsync(x_pad, call.k * esize, x, call.ldx * esize, call.k * esize, call.m,
                                       cudaMemcpyDeviceToDevice, stream),
                     op);
    // Padding rows are zero so no NaN from stale memory reaches the product's padding columns.
    TGEMM_CUDA_CHECK(
        cudaMemsetAsync(static_cast<char*>(x_pad) + call.m * call.k * esize, 0, (m - call.m) * call.k * esize, stream),
        op);
    b = x_pad;
  }
  const float alpha = 1.0f, beta = 0.0f;
  cudaStream_t streams[1] = {stream};
  TGEMM_CSLT_CHECK(api().cusparseLtMatmul(handle_for(device, op), &plan.plan, &alpha, w.compressed().data, b, &beta, d,
                                          d, plan.workspace > 0 ? ws.data : nullptr, streams, 1),
                   op);
  if (fp32_out) {
    (*finish)(static_cast<const float*>(d));
  } else if (!direct) {
    TGEMM_CUDA_CHECK(cudaMemcpy2DAsync(out, call.ldo * esize, d, call.n * esize, call.n * esize, call.m,
                                       cudaMemcpyDeviceToDevice, stream),
                     op);
  }
}

}  // namespace

void cusparselt_matmul(const SparseGemmCall& call, const SparseWeight& w, const void* x, void* out, int algorithm,
                       int split_k, Stream stream) {
  run_matmul(call, w, x, out, algorithm, split_k, stream, nullptr);
}

void cusparselt_matmul_fp8(const SparseGemmCall& call, const SparseWeight& w, const void* x, int algorithm, int split_k,
                           Stream stream, const std::function<void(const float*)>& finish) {
  run_matmul(call, w, x, nullptr, algorithm, split_k, stream, &finish);
}

int cusparselt_algorithm_count(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) {
  constexpr const char* op = "sparse_gemm (cuSPARSELt)";
  const std::int64_t multiple = sparse_2_4_multiple(dtype);
  const std::int64_t mp = round_up(std::max<std::int64_t>(m, 1), multiple);
  const cusparseLtHandle_t* h = handle_for(cuda_current_device(), op);
  const Plan& plan = plan_for(cuda_current_device(), mp, n, k, k, n, dtype, -1, 0);
  int max_id = 0;
  TGEMM_CSLT_CHECK(
      api().cusparseLtMatmulAlgGetAttribute(h, &plan.alg, CUSPARSELT_MATMUL_ALG_CONFIG_MAX_ID, &max_id, sizeof(max_id)),
      op);
  return max_id;
}

}  // namespace tgemm::sparse

#else  // no cuSPARSELt header at configure time

#include "tgemm/error.h"

namespace tgemm::sparse {

std::string cusparselt_unavailable_reason() {
  return "this build of tgemm has no cuSPARSELt (CMake found no cusparseLt.h: set TGEMM_CUSPARSELT_DIR, run "
         "scripts/fetch-cusparselt, or install nvidia-cusparselt-cu13 in the build's python)";
}

std::size_t cusparselt_compressed_bytes(std::int64_t, std::int64_t, DType) {
  throw Error("sparse_compressed_bytes_2_4: " + cusparselt_unavailable_reason());
}

void cusparselt_compress(const void*, std::int64_t, std::int64_t, DType, void*, Stream) {
  throw Error("SparseWeight::compress_2_4: " + cusparselt_unavailable_reason());
}

void cusparselt_matmul(const SparseGemmCall&, const SparseWeight&, const void*, void*, int, int, Stream) {
  throw Error("sparse_gemm: " + cusparselt_unavailable_reason());
}

void cusparselt_matmul_fp8(const SparseGemmCall&, const SparseWeight&, const void*, int, int, Stream,
                           const std::function<void(const float*)>&) {
  throw Error("sparse_gemm_a8w8: " + cusparselt_unavailable_reason());
}

int cusparselt_algorithm_count(std::int64_t, std::int64_t, std::int64_t, DType) {
  throw Error("sparse_gemm: " + cusparselt_unavailable_reason());
}

}  // namespace tgemm::sparse

#endif
