#include "backends/cublaslt/cublaslt_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <unordered_set>

#include "backends/cublaslt/cublaslt_a8w8.h"
#include "core/log.h"
#include "core/table.h"
#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "cuda/elementwise.h"

namespace tgemm {
namespace {

// cuBLASLt's own top choices that the tuner races as explicit configurations, and how many of
// the first of them refine() expands whatever their screen time (their bases beyond the screen's
// fastest: ~4 a problem on the suite, 2-3x more at 16, most of them pre-Hopper algorithms).
constexpr int kHeuristicCandidates = 16;
constexpr std::size_t kHeuristicRefineBases = 8;

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::kBFloat16: return CUDA_R_16BF;
    case DType::kFloat16: return CUDA_R_16F;
    case DType::kFloat32: return CUDA_R_32F;
    case DType::kFloat8E4M3: return CUDA_R_8F_E4M3;
    case DType::kFloat8E5M2: return CUDA_R_8F_E5M2;
    case DType::kInt8: return CUDA_R_8I;
    case DType::kInt32: return CUDA_R_32I;
    case DType::kUInt8: return CUDA_R_8U;
  }
  return CUDA_R_32F;
}

// One handle per device, created on first use and kept for the process.
cublasLtHandle_t handle_for(int device) {
  static std::mutex mutex;
  static std::array<cublasLtHandle_t, 64> handles{};
  TGEMM_CHECK(device >= 0 && device < 64, "cublaslt", "device ordinal out of range: ", device);
  std::lock_guard<std::mutex> lock(mutex);
  if (handles[device] == nullptr) {
    int current = 0;
    TGEMM_CUDA_CHECK(cudaGetDevice(&current), "cublaslt");
    TGEMM_CUDA_CHECK(cudaSetDevice(device), "cublaslt");
    cublasStatus_t st = cublasLtCreate(&handles[device]);
    TGEMM_CUDA_CHECK(cudaSetDevice(current), "cublaslt");
    TGEMM_CUBLAS_CHECK(st, "cublaslt");
  }
  return handles[device];
}

// A bias pointer value with exactly the problem's bias alignment, for queries that read only
// its alignment (cuBLASLt documents that the heuristic does).
// Problems cuBLASLt cannot write directly: mixed 16-bit types (no bf16 x bf16 -> fp16 kernels or
// the reverse) and the erf GELU (its GELU epilogue is the tanh approximation).
bool needs_staging(const GemmProblem& p) {
  return (dtype_size(p.out_type) == 2 && p.out_type != p.a_type) || p.activation == Activation::kGelu;
}

const void* fake_pointer(std::uint8_t alignment) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(0x100000) + alignment);
}

template <typename T>
bool get_cap(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr, T& out) {
  std::size_t written = 0;
  return cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &out, sizeof(out), &written) ==
         CUBLAS_STATUS_SUCCESS;
}

template <typename T>
T get_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  std::size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written);
  return value;
}

template <typename T>
bool set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T value) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &value, sizeof(value)) ==
         CUBLAS_STATUS_SUCCESS;
}

LtConfig config_of(const cublasLtMatmulAlgo_t& algo) {
  LtConfig c;
  c.algo = get_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  c.tile = static_cast<int>(get_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
  c.stages = static_cast<int>(get_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID));
  c.split_k = get_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  c.reduction = static_cast<int>(get_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME));
  c.swizzle = static_cast<int>(get_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
  c.custom = static_cast<int>(get_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION));
  c.inner_shape = get_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
  c.cluster_shape = get_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  if (c.split_k < 1) c.split_k = 1;
  c.version = cublaslt_runtime_version();
  return c;
}

// A row's configuration brought to this process's cuBLASLt: another major version is stale
// (false, why set); another minor or patch is used, re-checked by AlgoCheck, with one warning a file.
bool to_running_version(LtConfig& config, const TableRow& row, std::string& why) {
  const std::size_t running = cublaslt_runtime_version();
  if (config.version / 10000 != running / 10000) {
    why = "stale row: tuned with cuBLASLt " + format_lt_version(config.version) + ", this process runs " +
          format_lt_version(running) + " (retune)";
    return false;
  }
  if (config.version != running) {
    log_warning_once("lt-version:" + row.file,
                     row.file + ": rows were tuned with cuBLASLt " + format_lt_version(config.version) +
                         ", this process runs " + format_lt_version(running) +
                         "; each row is re-checked with cublasLtMatmulAlgoCheck, retune for best speed");
  }
  config.version = running;
  return true;
}

// The a8w8 families' rows, default, candidates and refinement (cublaslt_a8w8.h): the two heuristic
// solutions, and explicit configurations in the problem's form (LtA8W8Solution::explicit_form).
SolutionPtr a8w8_from_row(const TableRow& row, const GemmProblem& p, std::string& why) {
  if (row.kernel_name == kCublasLtHeuristicName) return LtA8W8Solution::heuristic(p, LtA8W8Solution::Mode::kFused, why);
  if (row.kernel_name == kCublasLtA8W8StagedName) {
    return LtA8W8Solution::heuristic(p, LtA8W8Solution::Mode::kStaged, why);
  }
  auto named = parse_lt_a8w8_name(row.kernel_name, why);
  if (!named) {
    why = "unknown kernelName '" + row.kernel_name + "' for an a8w8 cublaslt row (expected " +
          std::string(kCublasLtHeuristicName) + ", " + std::string(kCublasLtA8W8StagedName) +
          " or a configuration: " + why + ")";
    return nullptr;
  }
  if (!to_running_version(named->config, row, why)) return nullptr;
  return LtA8W8Solution::configured(p, named->form, named->config, why);
}

SolutionPtr a8w8_default(const GemmProblem& p) {
  std::string why;
  if (auto s = LtA8W8Solution::heuristic(p, LtA8W8Solution::Mode::kFused, why)) return s;
  return LtA8W8Solution::heuristic(p, LtA8W8Solution::Mode::kStaged, why);
}

// The two heuristic solutions, the heuristic's top choices in the explicit form, and every base of
// that form's configuration space.
std::vector<SolutionPtr> a8w8_candidates(const GemmProblem& p, int heuristic_candidates) {
  std::vector<SolutionPtr> out;
  std::unordered_set<std::string> names;
  auto add = [&](SolutionPtr s) {
    if (s && names.insert(s->name()).second) out.push_back(std::move(s));
  };
  std::string why;
  for (auto mode : {LtA8W8Solution::Mode::kFused, LtA8W8Solution::Mode::kStaged}) {
    add(LtA8W8Solution::heuristic(p, mode, why));
  }
  const LtA8W8Solution::Mode form = LtA8W8Solution::explicit_form(p);
  std::vector<LtConfig> configs = LtA8W8Solution::heuristic_configs(p, form, heuristic_candidates);
  for (const LtConfig& c : enumerate_lt_bases(p, LtSpaceOptions{}, nullptr)) configs.push_back(c);
  for (const LtConfig& c : configs) {
    if (names.count(format_lt_a8w8_name(form, c))) continue;
    add(LtA8W8Solution::configured(p, form, c, why));
  }
  return out;
}

// As the a16w16 refine (CublasLtBackend::refine): the expansions of the fastest screened bases and
// of the heuristic's first distinct bases, in the explicit form.
std::vector<SolutionPtr> a8w8_refine(const GemmProblem& p, const std::vector<ScreenedCandidate>& screened,
                                     std::size_t max_bases, int heuristic_candidates, std::size_t heuristic_bases) {
  const LtA8W8Solution::Mode form = LtA8W8Solution::explicit_form(p);
  const LtSpaceOptions opts;
  std::unordered_set<std::string> seen_names;
  std::vector<std::string> names;
  for (const auto& c : screened) {
    seen_names.insert(c.name);
    std::string why;
    auto named = parse_lt_a8w8_name(c.name, why);
    if (named && named->form == form) names.push_back(format_lt_name(named->config));
  }
  std::vector<LtConfig> bases = lt_refine_bases(names, max_bases > 0 ? max_bases : opts.refine_bases);
  const std::size_t first_suggested = bases.size();
  std::vector<std::string> suggested;
  for (const LtConfig& c : LtA8W8Solution::heuristic_configs(p, form, heuristic_candidates)) {
    suggested.push_back(format_lt_name(c));
  }
  for (const LtConfig& c : lt_refine_bases(suggested, heuristic_bases)) {
    if (std::find(bases.begin(), bases.end(), c) == bases.end()) bases.push_back(c);
  }
  std::vector<SolutionPtr> out;
  auto add = [&](const LtConfig& c) {
    if (!seen_names.insert(format_lt_a8w8_name(form, c)).second) return;
    std::string why;
    if (auto s = LtA8W8Solution::configured(p, form, c, why)) out.push_back(std::move(s));
  };
  for (std::size_t i = first_suggested; i < bases.size(); ++i) add(bases[i]);
  for (const LtConfig& c : expand_lt_configs(p, bases, opts, nullptr)) add(c);
  return out;
}

class CublasLtBackend final : public Backend {
 public:
  std::string_view libtype() const override { return "cublaslt"; }

  SolutionPtr from_row(const TableRow& row, const GemmProblem& p, std::string& why) const override {
    if (quantized_family(p.family)) return a8w8_from_row(row, p, why);
    if (row.kernel_name == kCublasLtHeuristicName) return LtSolution::heuristic(p, why);
    if (row.kernel_name == kCublasLtTorchDefaultName) {
      // Rows running the heuristic's printed configuration measure 0.94-0.97x of the bench's
      // baseline (PyTorch's query of the same heuristic) at M = 8192; this row runs the
      // baseline's own algorithm, where its numerics are tgemm's.
      std::shared_ptr<LtSolution> s = LtSolution::heuristic(p, why, /*torch_default=*/true);
      if (!s) return nullptr;
      const LtConfig c = s->chosen_config();
      if (dtype_size(p.out_type) < 4 && c.split_k > 1 &&
          c.reduction != static_cast<int>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)) {
        why = std::string(kCublasLtTorchDefaultName) + " for " + p.describe() + " is " + format_lt_name(c) +
              ", which reduces split-K partial sums in the 16-bit output type; tgemm reduces in fp32 only";
        return nullptr;
      }
      return s;
    }
    auto config = parse_lt_name(row.kernel_name, why);
    if (!config || !to_running_version(*config, row, why)) return nullptr;
    return LtSolution::configured(p, *config, why);
  }

  SolutionPtr default_solution(const GemmProblem& p) const override {
    if (quantized_family(p.family)) return a8w8_default(p);
    std::string why;
    return LtSolution::heuristic(p, why);
  }

  // The heuristic's own choice, its top 16 as explicit configurations, and every base of the
  // configuration space.
  std::vector<SolutionPtr> candidates(const GemmProblem& p) const override {
    if (quantized_family(p.family)) return a8w8_candidates(p, kHeuristicCandidates);
    std::vector<SolutionPtr> out;
    std::unordered_set<std::string> names;
    auto add = [&](SolutionPtr s) {
      if (s && names.insert(s->name()).second) out.push_back(std::move(s));
    };
    std::string why;
    add(LtSolution::heuristic(p, why));
    for (auto& s : LtSolution::heuristic_top(p, kHeuristicCandidates)) add(std::move(s));
    for (const LtConfig& c : enumerate_lt_bases(p, LtSpaceOptions{}, nullptr)) {
      if (names.count(format_lt_name(c))) continue;
      add(LtSolution::configured(p, c, why));
    }
    return out;
  }

  // Expansions (custom options, split-K x reduction, swizzle) of the fastest screened
  // configurations, and of the first kHeuristicRefineBases distinct bases of cuBLASLt's own top
  // choices (heuristic_top) whatever their screen time: one screen launch can read 4-7x slow
  // (a problem's first four candidates, while the GPU is still at idle clocks), and the
  // heuristic's choices are the configurations the base enumeration may not hold (tile448 and
  // tile393 at M = 1): a tune that screened such a seed slow never expanded its base and missed a
  // row 7.8-7.9% faster than the one it kept.
  std::vector<SolutionPtr> refine(const GemmProblem& p, const std::vector<ScreenedCandidate>& screened,
                                  const RefineOptions& options) const override {
    if (quantized_family(p.family)) {
      return a8w8_refine(p, screened, options.max_bases, kHeuristicCandidates, kHeuristicRefineBases);
    }
    LtSpaceOptions opts;
    std::unordered_set<std::string> seen_names;
    std::vector<std::string> names;
    for (const auto& c : screened) {
      seen_names.insert(c.name);
      names.push_back(c.name);
    }
    std::vector<LtConfig> bases =
        lt_refine_bases(names, options.max_bases > 0 ? options.max_bases : opts.refine_bases);
    const std::size_t first_suggested = bases.size();
    std::vector<std::string> suggested;
    for (const auto& s : LtSolution::heuristic_top(p, kHeuristicCandidates)) suggested.push_back(s->name());
    for (const LtConfig& c : lt_refine_bases(suggested, kHeuristicRefineBases)) {
      if (std::find(bases.begin(), bases.end(), c) == bases.end()) bases.push_back(c);
    }
    std::vector<SolutionPtr> out;
    auto add = [&](const LtConfig& c) {
      std::string name = format_lt_name(c);
      if (!seen_names.insert(name).second) return;
      std::string why;
      if (auto s = LtSolution::configured(p, c, why)) out.push_back(std::move(s));
    };
    // A heuristic base may not be in the enumeration (only its split-K form was a candidate): the
    // base itself too, where it was not screened.
    for (std::size_t i = first_suggested; i < bases.size(); ++i) add(bases[i]);
    for (const LtConfig& c : expand_lt_configs(p, bases, opts, nullptr)) add(c);
    return out;
  }
};

}  // namespace

std::size_t cublaslt_runtime_version() {
  static const std::size_t version = cublasLtGetVersion();
  return version;
}

cublasLtHandle_t cublaslt_handle(int device) { return handle_for(device); }

void destroy_lt_descriptors(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                            cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) {
  for (cublasLtMatrixLayout_t l : {a, b, c, d}) {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  if (desc) cublasLtMatmulDescDestroy(desc);
}

cudaDataType_t cublaslt_data_type(DType t) { return cuda_type(t); }

void register_cublaslt_solutions(Registry& registry) {
  registry.add(std::make_unique<CublasLtBackend>());
}

LtSolution::LtSolution(const GemmProblem& p) : problem_(p) {}

LtSolution::~LtSolution() { destroy_lt_descriptors(desc_, layout_a_, layout_b_, layout_c_, layout_d_); }

// Layout `l` repeated over p's batch (batched_gemm, batched_gemm_a8w8): batch count and the
// stride between matrices.
void set_batch(cublasLtMatrixLayout_t l, const GemmProblem& p, std::int64_t stride, const char* where) {
  const std::int32_t count = static_cast<std::int32_t>(p.batch);
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                     where);
  TGEMM_CUBLAS_CHECK(
      cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)), where);
}

bool LtSolution::make_descriptors(std::string& why) {
  const GemmProblem& p = problem_;
  const bool batched = p.family == OpFamily::kBatched;
  if ((p.family != OpFamily::kA16W16 && !batched) || p.scale_ab || p.bpreshuffle) {
    why = "cuBLASLt solutions cover plain a16w16 and batched problems only";
    return false;
  }
  const bool staged = needs_staging(p);
  if (batched && staged) {
    // The fp32 staging buffer would hold all B products ([B, M, N] floats: 1 GiB at B = 256,
    // M = N = 1024), so mixed 16-bit types are left to the reference solution.
    why = "cuBLASLt solutions of batched_gemm need out.dtype equal to the inputs' or fp32";
    return false;
  }
  handle_ = handle_for(p.device);
  const DType d_type = staged ? DType::kFloat32 : p.out_type;
  if (staged) staging_bytes_ = (static_cast<std::size_t>(p.m * p.n) * sizeof(float) + 255) / 256 * 256;
  // Row-major out[M,N] = x[M,K] w[N,K]^T is, column-major, out^T[N,M] = (w^T)^T[N,K] x^T[K,M]:
  // A = w viewed as K x N (ld ldb) transposed, B = x viewed as K x M (ld lda), D = N x M (ld ldo).
  // batched_gemm's other stored layouts flip an operation: b [K, N] row-major is N x K
  // column-major (A not transposed), a [K, M] row-major is M x K column-major (B transposed).
  const char* where = "cublaslt";
  TGEMM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), where);
  cublasOperation_t ta = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  TGEMM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), where);
  TGEMM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), where);
  if (!staged) {
    const bool bias = p.has_bias();
    switch (p.activation) {
      case Activation::kRelu:
        epilogue_ = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
        break;
      case Activation::kGeluTanh:
        epilogue_ = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
        break;
      default:
        epilogue_ = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
        break;
    }
    TGEMM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue_, sizeof(epilogue_)), where);
    if (bias) {
      cudaDataType_t bias_type = cuda_type(p.bias_type);
      const void* bias_ptr = fake_pointer(p.align_bias);
      TGEMM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)), where);
      TGEMM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)), where);
      if (batched) {
        // One bias [N] for every product.
        const std::int64_t bias_stride = 0;
        TGEMM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                                                          sizeof(bias_stride)),
                           where);
      }
    }
  }
  TGEMM_CUBLAS_CHECK(p.transpose_b ? cublasLtMatrixLayoutCreate(&layout_a_, cuda_type(p.b_type), p.k, p.n, p.ldb)
                                   : cublasLtMatrixLayoutCreate(&layout_a_, cuda_type(p.b_type), p.n, p.k, p.ldb),
                     where);
  TGEMM_CUBLAS_CHECK(p.transpose_a ? cublasLtMatrixLayoutCreate(&layout_b_, cuda_type(p.a_type), p.m, p.k, p.lda)
                                   : cublasLtMatrixLayoutCreate(&layout_b_, cuda_type(p.a_type), p.k, p.m, p.lda),
                     where);
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_d_, cuda_type(d_type), p.n, p.m, staged ? p.n : p.ldo), where);
  // C is read (beta != 0) only when cuBLASLt writes out directly; it has out's layout rules.
  const bool lt_reads_c = p.use_c && !staged;
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_c_, cuda_type(d_type), p.n, p.m,
                                                lt_reads_c ? p.ldc : (staged ? p.n : p.ldo)),
                     where);
  if (batched) {
    set_batch(layout_a_, p, p.batch_stride_b, where);
    set_batch(layout_b_, p, p.batch_stride_a, where);
    set_batch(layout_c_, p, p.batch_stride_out, where);
    set_batch(layout_d_, p, p.batch_stride_out, where);
  }
  return true;
}

namespace {

struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  Preference(const GemmProblem& p, bool allow_output_type_reduction) {
    const char* where = "cublaslt";
    TGEMM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref), where);
    std::uint64_t ws = kCublasLtMaxWorkspace;
    // A = w, B = x, C = c (or D), D = out (or the 256-byte aligned staging buffer).
    const bool staged = needs_staging(p);
    std::uint32_t aa = p.align_b, ab = p.align_a;
    std::uint32_t ad = staged ? 16 : p.align_out;
    std::uint32_t ac = (p.use_c && !staged) ? std::min(p.align_c, p.align_out) : ad;
    TGEMM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)), where);
    TGEMM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof(aa)), where);
    TGEMM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof(ab)), where);
    TGEMM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof(ac)), where);
    TGEMM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad, sizeof(ad)), where);
    if (!allow_output_type_reduction && dtype_size(p.out_type) < 4) {
      std::uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      TGEMM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask)), where);
    }
  }
  ~Preference() { cublasLtMatmulPreferenceDestroy(pref); }
};

std::vector<cublasLtMatmulHeuristicResult_t> query_heuristic(const LtSolution& s, const GemmProblem& p, int count,
                                                             bool allow_output_type_reduction = false) {
  Preference pref(p, allow_output_type_reduction);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(count));
  int returned = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(s.handle(), s.desc(), s.layout_a(), s.layout_b(),
                                                     s.layout_c(), s.layout_d(), pref.pref, count,
                                                     results.data(), &returned);
  if (st != CUBLAS_STATUS_SUCCESS) returned = 0;
  results.resize(static_cast<std::size_t>(returned));
  return results;
}

}  // namespace

std::shared_ptr<LtSolution> LtSolution::heuristic(const GemmProblem& p, std::string& why, bool torch_default) {
  std::shared_ptr<LtSolution> s(new LtSolution(p));
  if (!s->make_descriptors(why)) return nullptr;
  auto results = query_heuristic(*s, p, 1, torch_default);
  if (results.empty() || results[0].state != CUBLAS_STATUS_SUCCESS) {
    why = "cuBLASLt heuristic returned no algorithm for " + p.describe();
    return nullptr;
  }
  s->algo_ = results[0].algo;
  s->workspace_ = results[0].workspaceSize;
  s->name_ = std::string(torch_default ? kCublasLtTorchDefaultName : kCublasLtHeuristicName);
  return s;
}

std::vector<std::shared_ptr<LtSolution>> LtSolution::heuristic_top(const GemmProblem& p, int count) {
  std::vector<std::shared_ptr<LtSolution>> out;
  std::string why;
  std::shared_ptr<LtSolution> probe(new LtSolution(p));
  if (!probe->make_descriptors(why)) return out;
  for (const auto& r : query_heuristic(*probe, p, count)) {
    if (r.state != CUBLAS_STATUS_SUCCESS) continue;
    LtConfig c = config_of(r.algo);
    bool seen = false;
    for (const auto& s : out) seen = seen || *s->config_ == c;
    if (seen) continue;
    if (auto s = configured(p, c, why)) out.push_back(std::move(s));
  }
  return out;
}

bool lt_check_config(const LtCheckTarget& t, const LtConfig& c, cublasLtMatmulAlgo_t& algo, std::size_t& workspace,
                     std::string* why) {
  auto name = [&] { return t.a8w8_form ? format_lt_a8w8_name(*t.a8w8_form, c) : format_lt_name(c); };
  cublasStatus_t st =
      cublasLtMatmulAlgoInit(t.handle, t.compute, t.scale_type, t.type_a, t.type_b, t.type_c, t.type_d, c.algo, &algo);
  if (st != CUBLAS_STATUS_SUCCESS) {
    if (why) {
      *why = "cuBLASLt has no algorithm id " + std::to_string(c.algo) + " for these types (" +
             detail::cublas_status_name(st) + ")";
    }
    return false;
  }
  bool ok = set_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, static_cast<std::uint32_t>(c.tile)) &&
            set_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, static_cast<std::uint32_t>(c.stages)) &&
            set_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c.split_k) &&
            set_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, static_cast<std::uint32_t>(c.reduction)) &&
            set_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, static_cast<std::uint32_t>(c.swizzle)) &&
            set_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, static_cast<std::uint32_t>(c.custom)) &&
            set_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, static_cast<std::uint16_t>(c.inner_shape)) &&
            set_config<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, static_cast<std::uint16_t>(c.cluster_shape));
  if (!ok) {
    if (why) *why = "cuBLASLt rejected a configuration attribute of " + name();
    return false;
  }
  std::uint32_t need_a = 0, need_b = 0, need_c = 0, need_d = 0;
  get_cap(algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, need_a);
  get_cap(algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES, need_b);
  get_cap(algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, need_c);
  get_cap(algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES, need_d);
  if (need_a > t.align_a || need_b > t.align_b || need_c > t.align_c || need_d > t.align_d) {
    if (why)
      *why = name() + " needs " + std::to_string(std::max({need_a, need_b, need_c, need_d})) + "-byte aligned operands";
    return false;
  }
  cublasLtMatmulHeuristicResult_t result{};
  st = cublasLtMatmulAlgoCheck(t.handle, t.desc, t.layout_a, t.layout_b, t.layout_c, t.layout_d, &algo, &result);
  if (st != CUBLAS_STATUS_SUCCESS || result.state != CUBLAS_STATUS_SUCCESS) {
    if (why) {
      *why = "cublasLtMatmulAlgoCheck rejects " + name() + " for " +
             (t.problem ? t.problem->describe() : std::string()) + " (" +
             detail::cublas_status_name(st != CUBLAS_STATUS_SUCCESS ? st : result.state) + ")";
    }
    return false;
  }
  if (result.workspaceSize > kCublasLtMaxWorkspace) {
    if (why) {
      *why = name() + " needs " + std::to_string(result.workspaceSize) + " bytes of workspace, more than the " +
             std::to_string(kCublasLtMaxWorkspace) + " allowed";
    }
    return false;
  }
  workspace = result.workspaceSize;
  return true;
}

LtConfig lt_config_of(const cublasLtMatmulAlgo_t& algo) { return config_of(algo); }

bool LtSolution::check_config(const LtConfig& c, cublasLtMatmulAlgo_t& algo, std::size_t& workspace,
                              std::string* why) const {
  const GemmProblem& p = problem_;
  const DType d_type = staging_bytes_ ? DType::kFloat32 : p.out_type;
  // A = w (b_type), B = x (a_type), C = D = out (or the fp32 staging buffer, 256-byte aligned).
  LtCheckTarget t;
  t.handle = handle_;
  t.desc = desc_;
  t.layout_a = layout_a_;
  t.layout_b = layout_b_;
  t.layout_c = layout_c_;
  t.layout_d = layout_d_;
  t.type_a = cuda_type(p.b_type);
  t.type_b = cuda_type(p.a_type);
  t.type_c = t.type_d = cuda_type(d_type);
  t.align_a = p.align_b;
  t.align_b = p.align_a;
  t.align_d = staging_bytes_ ? 16 : p.align_out;
  t.align_c = (p.use_c && !staging_bytes_) ? p.align_c : t.align_d;
  t.problem = &p;
  return lt_check_config(t, c, algo, workspace, why);
}

std::shared_ptr<LtSolution> LtSolution::configured(const GemmProblem& p, const LtConfig& c,
                                                   std::string& why) {
  std::shared_ptr<LtSolution> s(new LtSolution(p));
  if (!s->make_descriptors(why)) return nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
  if (!s->check_config(c, algo, workspace, &why)) return nullptr;
  s->algo_ = algo;
  s->workspace_ = workspace;
  s->config_ = c;
  s->name_ = format_lt_name(c);
  return s;
}

namespace {

template <typename T>
std::vector<T> cap_array(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  std::size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0) {
    return {};
  }
  std::vector<T> values(bytes / sizeof(T));
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, values.data(), bytes, &bytes) != CUBLAS_STATUS_SUCCESS) {
    return {};
  }
  return values;
}

}  // namespace

namespace {

struct TileShape {
  int id, rows, cols;
};
constexpr TileShape kTileShapes[] = {
#include "cublaslt_tiles.inc"
};

// (rows, cols) of a tile id; (0, 0) when unknown. Rows run along cuBLAS m (our N), cols along
// cuBLAS n (our M).
std::pair<int, int> tile_shape(int id) {
  for (const auto& t : kTileShapes) {
    if (t.id == id) return {t.rows, t.cols};
  }
  return {0, 0};
}

// One problem's configuration space as enumerate_lt_bases and expand_lt_configs see it: the
// descriptors configurations are checked against (an a16w16 LtSolution, or an a8w8 solution in the
// problem's explicit form) and cuBLASLt's types for cublasLtMatmulAlgoInit / GetIds.
struct LtSpaceContext {
  const GemmProblem& p;
  SolutionPtr probe;  // keeps the descriptors `check_with` uses alive
  std::function<bool(const LtConfig&)> check_with;
  cublasLtHandle_t handle = nullptr;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale_type = CUDA_R_32F;
  cudaDataType_t ta, tb, tc;
  std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  // Element size of the buffer split-K partial sums are reduced in: below 4 bytes only the fp32
  // (compute type) reduction scheme is accurate.
  std::size_t reduce_bytes = 4;
  std::size_t version;
  double waves = 0;        // 128x128 output tiles per SM
  bool compute_bound = false;
  LtSpaceStats& st;

  bool init_algo(int id, cublasLtMatmulAlgo_t& algo) const {
    return cublasLtMatmulAlgoInit(handle, compute, scale_type, ta, tb, tc, tc, id, &algo) == CUBLAS_STATUS_SUCCESS;
  }

  bool check(const LtConfig& c) {
    ++st.checked;
    return check_with(c);
  }
};

// LtSpaceContext::check_with for a probe solution (LtSolution or LtA8W8Solution): its
// check_config with scratch outputs.
template <typename Probe>
std::function<bool(const LtConfig&)> checker_of(std::shared_ptr<Probe> probe) {
  return [probe](const LtConfig& c) {
    cublasLtMatmulAlgo_t algo{};
    std::size_t workspace = 0;
    return probe->check_config(c, algo, workspace, nullptr);
  };
}

std::optional<LtSpaceContext> make_context(const GemmProblem& p, LtSpaceStats& st) {
  std::string why;
  LtSpaceContext ctx{p,
                     nullptr,
                     {},
                     nullptr,
                     CUBLAS_COMPUTE_32F,
                     CUDA_R_32F,
                     CUDA_R_32F,
                     CUDA_R_32F,
                     CUDA_R_32F,
                     CUBLASLT_EPILOGUE_DEFAULT,
                     4,
                     cublaslt_runtime_version(),
                     0,
                     false,
                     st};
  if (quantized_family(p.family)) {
    std::shared_ptr<LtA8W8Solution> probe = LtA8W8Solution::probe(p, LtA8W8Solution::explicit_form(p), why);
    if (!probe) return std::nullopt;
    ctx.check_with = checker_of(probe);
    ctx.handle = probe->handle();
    ctx.compute = probe->compute_type();
    ctx.scale_type = probe->scale_type();
    ctx.ta = ctx.tb = probe->in_type();
    ctx.tc = probe->d_type();
    ctx.epilogue = probe->epilogue();
    ctx.reduce_bytes = probe->mode() == LtA8W8Solution::Mode::kStaged ? 4 : dtype_size(p.out_type);
    ctx.probe = std::move(probe);
  } else {
    std::shared_ptr<LtSolution> probe = LtSolution::heuristic(p, why);
    if (!probe) return std::nullopt;
    ctx.check_with = checker_of(probe);
    ctx.handle = probe->handle();
    ctx.ta = cuda_type(p.b_type);
    ctx.tb = cuda_type(p.a_type);
    ctx.tc = probe->staged() ? CUDA_R_32F : cuda_type(p.out_type);
    ctx.epilogue = static_cast<std::uint32_t>(probe->epilogue());
    // Out's size even where the product is staged in fp32, as the heuristic's preference (Preference).
    ctx.reduce_bytes = dtype_size(p.out_type);
    ctx.probe = std::move(probe);
  }
  const int sms = cuda_device_info(p.device).sm_count;
  ctx.waves = static_cast<double>(p.batch) * std::ceil(static_cast<double>(p.m) / 128.0) *
              std::ceil(static_cast<double>(p.n) / 128.0) / static_cast<double>(std::max(1, sms));
  // Compute-bound: FLOPs per byte moved far above what memory bandwidth can feed (the H100
  // ridge is ~295 FLOP/B in bf16, the H200's ~206); 128 leaves a margin.
  const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  const double bytes = static_cast<double>(dtype_size(p.a_type)) *
                       static_cast<double>(p.m * p.k + p.n * p.k + p.m * p.n);
  ctx.compute_bound = flops / bytes > 128.0;
  return ctx;
}

}  // namespace

std::vector<LtConfig> enumerate_lt_bases(const GemmProblem& p, const LtSpaceOptions& o, LtSpaceStats* stats) {
  LtSpaceStats local;
  LtSpaceStats& st = stats ? *stats : local;
  std::vector<LtConfig> out;
  auto ctx = make_context(p, st);
  if (!ctx) return out;
  int ids[256];
  int n_ids = 0;
  if (cublasLtMatmulAlgoGetIds(ctx->handle, ctx->compute, ctx->scale_type, ctx->ta, ctx->tb, ctx->tc, ctx->tc, 256, ids,
                               &n_ids) != CUBLAS_STATUS_SUCCESS) {
    return out;
  }
  st.algo_ids = n_ids;
  for (int i = 0; i < n_ids; ++i) {
    cublasLtMatmulAlgo_t algo{};
    if (!ctx->init_algo(ids[i], algo)) continue;
    const std::uint32_t needed = ctx->epilogue;
    if (needed != CUBLASLT_EPILOGUE_DEFAULT) {
      std::uint32_t epilogues = 0;
      if (!get_cap(algo, CUBLASLT_ALGO_CAP_EPILOGUE_MASK, epilogues) || (epilogues & needed) != needed) continue;
    }
    std::vector<std::uint32_t> tiles = cap_array<std::uint32_t>(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
    std::vector<std::uint32_t> stages = cap_array<std::uint32_t>(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
    if (tiles.empty()) tiles.push_back(0);
    if (stages.empty()) stages.push_back(0);
    for (std::uint32_t tile : tiles) {
      if (ctx->compute_bound) {
        // Compute-bound problems: a warpgroup MMA covers 64 rows, and tiles narrower than 64 in
        // either dimension re-read operands too often to keep the tensor cores fed.
        auto [rows, cols] = tile_shape(static_cast<int>(tile));
        if (rows != 0 && (rows < 64 || cols < 64)) {
          ++st.pruned;
          continue;
        }
      }
      for (std::uint32_t stage : stages) {
        for (int cluster : o.clusters) {
          LtConfig c;
          c.algo = ids[i];
          c.tile = static_cast<int>(tile);
          c.stages = static_cast<int>(stage);
          c.cluster_shape = cluster;
          c.version = ctx->version;
          if (ctx->check(c)) out.push_back(c);
        }
      }
    }
  }
  st.valid += static_cast<long long>(out.size());
  return out;
}

std::vector<LtConfig> expand_lt_configs(const GemmProblem& p, const std::vector<LtConfig>& bases,
                                        const LtSpaceOptions& o, LtSpaceStats* stats) {
  LtSpaceStats local;
  LtSpaceStats& st = stats ? *stats : local;
  std::vector<LtConfig> out;
  auto ctx = make_context(p, st);
  if (!ctx) return out;
  for (const LtConfig& base : bases) {
    cublasLtMatmulAlgo_t algo{};
    if (!ctx->init_algo(base.algo, algo)) continue;
    std::int32_t splitk_support = 0, custom_max = 0;
    std::uint32_t red_mask = 0, swizzle_support = 0;
    get_cap(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, splitk_support);
    get_cap(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, red_mask);
    get_cap(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, swizzle_support);
    get_cap(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, custom_max);
    // 16-bit partial sums lose 8+ mantissa bits per split: with a 16-bit output only the fp32
    // (compute type) reduction is accurate; INPLACE and OUTPUT_TYPE accumulate in the output type.
    if (ctx->reduce_bytes < 4) red_mask &= CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    const bool split = splitk_support && ctx->waves < o.split_k_max_waves;
    for (int opt = 0; opt <= custom_max; ++opt) {
      LtConfig c = base;
      c.custom = opt;
      if (opt > 0 && ctx->check(c)) out.push_back(c);
      if (!split) continue;
      for (int k : o.split_ks) {
        if (k > p.k / 16) break;  // fewer than 16 K elements per split: pure overhead
        for (std::uint32_t red : {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                                  CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE}) {
          if ((red_mask & red) == 0) continue;
          LtConfig s = c;
          s.split_k = k;
          s.reduction = static_cast<int>(red);
          if (ctx->check(s)) out.push_back(s);
        }
      }
    }
    if (swizzle_support) {
      LtConfig c = base;
      c.swizzle = 1;
      if (ctx->check(c)) out.push_back(c);
    }
  }
  st.valid += static_cast<long long>(out.size());
  return out;
}

LtConfig LtSolution::chosen_config() const { return config_ ? *config_ : config_of(algo_); }

void LtSolution::run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws,
                     Stream stream) const {
  const bool staged = staging_bytes_ != 0;
  // The public op's name (FamilyInfo's names are string literals, so data() is terminated).
  const char* op = family_info(p.family).op.data();
  const float alpha = args.alpha;
  const float beta = (p.use_c && !staged) ? args.beta : 0.0f;
  void* d = staged ? ws.data : args.out;
  const void* c = (p.use_c && !staged) ? args.c : d;
  void* lt_ws = static_cast<char*>(ws.data) + staging_bytes_;
  const std::size_t lt_ws_bytes = ws.bytes - staging_bytes_;
  auto matmul = [&] {
    return cublasLtMatmul(handle_, desc_, &alpha, args.b, layout_a_, args.a, layout_b_, &beta, c, layout_c_, d,
                          layout_d_, &algo_, lt_ws, lt_ws_bytes, reinterpret_cast<cudaStream_t>(stream));
  };
  if (staged) {
    TGEMM_CUBLAS_CHECK(matmul(), op);
    epilogue_rows(gemm_epilogue(p, args, ProductAt::kStaging, static_cast<const float*>(d)), stream);
  } else if (p.has_bias()) {
    std::lock_guard<std::mutex> lock(bias_mutex_);
    TGEMM_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &args.bias, sizeof(args.bias)), op);
    TGEMM_CUBLAS_CHECK(matmul(), op);
  } else {
    TGEMM_CUBLAS_CHECK(matmul(), op);
  }
}

}  // namespace tgemm
