#include "backends/cublaslt/cublaslt_a8w8.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/cublaslt/cublaslt_config.h"
#include "core/check.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "cuda/scale_epilogue.h"

namespace tgemm {
namespace {

constexpr const char* kWhere = "gemm_a8w8";

// Offsets in the workspace are rounded up to this (cuBLASLt and the vector loads of the
// staging buffer want 256-byte aligned buffers, as cudaMalloc gives).
constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

bool per_tensor_both(const GemmProblem& p) {
  return p.a_scale == ScaleGranularity::kTensor && p.b_scale == ScaleGranularity::kTensor;
}

// A pointer value of the given alignment, for queries that read only alignment (cuBLASLt's
// heuristic does for the bias).
const void* fake_pointer(std::uint8_t alignment) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(0x100000) + alignment);
}

template <typename T>
void set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  TGEMM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)), kWhere);
}

// cuBLASLt's heuristic refuses the outer-vector and block scale modes while the scale pointers are
// unset ("requires a custom pointer for A scale"), then returns no algorithm. It reads only their
// alignment; run sets the real (16-byte aligned) pointers before each matmul.
void set_scale_placeholders(cublasLtMatmulDesc_t desc) {
  set_attr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, fake_pointer(16));
  set_attr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, fake_pointer(16));
}

}  // namespace

LtA8W8Solution::LtA8W8Solution(const GemmProblem& p, Mode mode) : problem_(p), mode_(mode) {
  name_ = mode == Mode::kFused ? std::string(kCublasLtHeuristicName) : std::string(kCublasLtA8W8StagedName);
}

LtA8W8Solution::~LtA8W8Solution() { destroy_lt_descriptors(desc_, layout_a_, layout_b_, layout_c_, layout_d_); }

bool LtA8W8Solution::make_descriptors(std::string& why) {
  const GemmProblem& p = problem_;
  if (p.family == OpFamily::kA8W8Blockscale) return make_blockscale_descriptors(why);
  if (p.family != OpFamily::kA8W8 && p.family != OpFamily::kA8W8Batched) {
    why = "not an a8w8 problem: " + p.describe();
    return false;
  }
  const bool int8 = p.a_type == DType::kInt8;
  const bool staged = mode_ == Mode::kStaged;
  const bool batched = p.family == OpFamily::kA8W8Batched;
  if (!staged && batched) {
    // cuBLASLt's scale pointers give one scale (or one vector) for every matrix of a strided batch,
    // while each product of batched_gemm_a8w8 may have its own.
    why = "batched_gemm_a8w8 runs staged: cuBLASLt's scale pointers do not step with the batch";
    return false;
  }
  if (!staged && int8) {
    why = "cuBLASLt's IMMA kernels write int32 or int8, not scaled " + std::string(dtype_name(p.out_type)) +
          ": int8 runs staged";
    return false;
  }
  if (!staged && p.has_bias() && p.bias_type != p.out_type) {
    why = "cuBLASLt's FP8 bias has out's dtype (" + std::string(dtype_name(p.out_type)) + "), not " +
          std::string(dtype_name(p.bias_type));
    return false;
  }
  if (!staged && !per_tensor_both(p) && p.align_scales < 16) {
    // The outer-vector scales are read with 16-byte vector loads; the staged pass reads any
    // 4-byte aligned scale.
    why = "cuBLASLt's outer-vector scales need 16-byte aligned scale vectors, got " + std::to_string(p.align_scales) +
          "-byte aligned";
    return false;
  }
  handle_ = cublaslt_handle(p.device);
  const cudaDataType_t d = d_type();
  TGEMM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, compute_type(), scale_type()), kWhere);
  set_attr(desc_, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set_attr(desc_, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (!staged) {
    if (!per_tensor_both(p)) {
      // Each (i, j) of the product times A's scale i (our N) and B's scale j (our M).
      const std::int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      set_attr(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode);
      set_attr(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode);
      set_scale_placeholders(desc_);
      if (p.a_scale == ScaleGranularity::kTensor) vector_bytes_ = round_up(static_cast<std::size_t>(p.m) * 4);
      if (p.b_scale == ScaleGranularity::kTensor) vector_bytes_ = round_up(static_cast<std::size_t>(p.n) * 4);
    }
    if (p.has_bias()) {
      set_attr(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
      set_attr(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cublaslt_data_type(p.bias_type));
      set_attr(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, fake_pointer(p.align_bias));
    }
  } else {
    // One dense [M, N] product per matrix of the batch.
    staging_bytes_ =
        round_up(static_cast<std::size_t>(p.batch) * static_cast<std::size_t>(p.m) * static_cast<std::size_t>(p.n) * 4);
  }
  const cudaDataType_t in = in_type();
  const std::int64_t ld_d = staged ? p.n : p.ldo;
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_a_, in, p.k, p.n, p.ldb), kWhere);
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_b_, in, p.k, p.m, p.lda), kWhere);
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_c_, d, p.n, p.m, ld_d), kWhere);
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_d_, d, p.n, p.m, ld_d), kWhere);
  if (batched) {
    set_batch(layout_a_, p, p.batch_stride_b, kWhere);
    set_batch(layout_b_, p, p.batch_stride_a, kWhere);
    set_batch(layout_c_, p, p.m * p.n, kWhere);
    set_batch(layout_d_, p, p.m * p.n, kWhere);
  }
  return true;
}

std::vector<cublasLtMatmulHeuristicResult_t> LtA8W8Solution::query(int count) const {
  const GemmProblem& p = problem_;
  cublasLtMatmulPreference_t pref = nullptr;
  TGEMM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref), kWhere);
  const bool staged = mode_ == Mode::kStaged;
  const std::uint64_t ws = kCublasLtMaxWorkspace;
  // A = w, B = x, C = D = out (or the 256-byte aligned staging buffer).
  const std::uint32_t aa = p.align_b, ab = x_alignment(), ad = staged ? 16 : p.align_out;
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(count));
  int returned = 0;
  cublasStatus_t st =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  if (st == CUBLAS_STATUS_SUCCESS) {
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof(aa));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof(ab));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ad, sizeof(ad));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad, sizeof(ad));
    if (!staged && dtype_size(p.out_type) < 4) {
      // Split-K partial sums reduced in a 16-bit output lose 8+ bits per split: fp32 only.
      const std::uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask));
    }
    st = cublasLtMatmulAlgoGetHeuristic(handle_, desc_, layout_a_, layout_b_, layout_c_, layout_d_, pref, count,
                                        results.data(), &returned);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS) returned = 0;
  results.resize(static_cast<std::size_t>(returned));
  return results;
}

std::shared_ptr<LtA8W8Solution> LtA8W8Solution::heuristic(const GemmProblem& p, Mode mode, std::string& why) {
  std::shared_ptr<LtA8W8Solution> s(new LtA8W8Solution(p, mode));
  if (!s->make_descriptors(why)) return nullptr;
  const auto results = s->query(1);
  if (results.empty() || results[0].state != CUBLAS_STATUS_SUCCESS) {
    why = "cuBLASLt heuristic returned no algorithm for " + s->name_ + " " + p.describe();
    return nullptr;
  }
  s->algo_ = results[0].algo;
  s->workspace_ = results[0].workspaceSize;
  return s;
}

std::vector<LtConfig> LtA8W8Solution::heuristic_configs(const GemmProblem& p, Mode mode, int count) {
  std::vector<LtConfig> out;
  std::string why;
  std::shared_ptr<LtA8W8Solution> s(new LtA8W8Solution(p, mode));
  if (!s->make_descriptors(why)) return out;
  for (const auto& r : s->query(count)) {
    if (r.state != CUBLAS_STATUS_SUCCESS) continue;
    const LtConfig c = lt_config_of(r.algo);
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::shared_ptr<LtA8W8Solution> LtA8W8Solution::probe(const GemmProblem& p, Mode mode, std::string& why) {
  std::shared_ptr<LtA8W8Solution> s(new LtA8W8Solution(p, mode));
  if (!s->make_descriptors(why)) return nullptr;
  return s;
}

std::shared_ptr<LtA8W8Solution> LtA8W8Solution::configured(const GemmProblem& p, Mode mode, const LtConfig& c,
                                                           std::string& why) {
  std::shared_ptr<LtA8W8Solution> s = probe(p, mode, why);
  if (!s) return nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
  if (!s->check_config(c, algo, workspace, &why)) return nullptr;
  s->algo_ = algo;
  s->workspace_ = workspace;
  s->config_ = c;
  s->name_ = format_lt_a8w8_name(mode, c);
  return s;
}

LtA8W8Solution::Mode LtA8W8Solution::explicit_form(const GemmProblem& p) {
  if (p.family == OpFamily::kA8W8Blockscale) {
    if (p.m % 4 != 0 || (p.has_bias() && p.bias_type != p.out_type)) return Mode::kStaged;
    std::string why;
    return heuristic(p, Mode::kFused, why) ? Mode::kFused : Mode::kStaged;
  }
  if (p.family == OpFamily::kA8W8Batched) return Mode::kStaged;
  const bool fused =
      p.a_type == DType::kFloat8E4M3 && per_tensor_both(p) && (!p.has_bias() || p.bias_type == p.out_type);
  return fused ? Mode::kFused : Mode::kStaged;
}

bool LtA8W8Solution::check_config(const LtConfig& c, cublasLtMatmulAlgo_t& algo, std::size_t& workspace,
                                  std::string* why) const {
  const GemmProblem& p = problem_;
  LtCheckTarget t;
  t.handle = handle_;
  t.desc = desc_;
  t.layout_a = layout_a_;
  t.layout_b = layout_b_;
  t.layout_c = layout_c_;
  t.layout_d = layout_d_;
  t.compute = compute_type();
  t.scale_type = scale_type();
  t.type_a = t.type_b = in_type();
  t.type_c = t.type_d = d_type();
  // A = w, B = x; C = D = out, or the staging buffer (256-byte aligned in the workspace).
  t.align_a = p.align_b;
  t.align_b = x_alignment();
  t.align_c = t.align_d = mode_ == Mode::kStaged ? 16 : p.align_out;
  t.problem = &p;
  t.a8w8_form = mode_;
  return lt_check_config(t, c, algo, workspace, why);
}

cublasComputeType_t LtA8W8Solution::compute_type() const {
  return problem_.a_type == DType::kInt8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F;
}

cudaDataType_t LtA8W8Solution::scale_type() const { return problem_.a_type == DType::kInt8 ? CUDA_R_32I : CUDA_R_32F; }

cudaDataType_t LtA8W8Solution::in_type() const { return cublaslt_data_type(problem_.a_type); }

cudaDataType_t LtA8W8Solution::d_type() const {
  if (mode_ == Mode::kFused) return cublaslt_data_type(problem_.out_type);
  return problem_.a_type == DType::kInt8 ? CUDA_R_32I : CUDA_R_32F;
}

cublasLtEpilogue_t LtA8W8Solution::epilogue() const {
  return mode_ == Mode::kFused && problem_.has_bias() ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

std::uint32_t LtA8W8Solution::x_alignment() const {
  // A padded copy of x sits at a 256-byte aligned workspace offset.
  return block_.x_bytes > 0 ? 16u : problem_.align_a;
}

void LtA8W8Solution::run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws, Stream stream) const {
  if (p.family == OpFamily::kA8W8Blockscale) {
    run_blockscale(p, args, ws, stream);
    return;
  }
  auto* base = static_cast<char*>(ws.data);
  void* lt_ws = base + staging_bytes_ + vector_bytes_;
  const std::size_t lt_ws_bytes = ws.bytes - staging_bytes_ - vector_bytes_;
  const auto cuda_stream = reinterpret_cast<cudaStream_t>(stream);
  if (mode_ == Mode::kStaged) {
    void* acc = base;
    const bool int8 = p.a_type == DType::kInt8;
    const std::int32_t alpha_i = 1, beta_i = 0;
    const float alpha_f = 1.0f, beta_f = 0.0f;
    const void* alpha = int8 ? static_cast<const void*>(&alpha_i) : static_cast<const void*>(&alpha_f);
    const void* beta = int8 ? static_cast<const void*>(&beta_i) : static_cast<const void*>(&beta_f);
    TGEMM_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, alpha, args.b, layout_a_, args.a, layout_b_, beta, acc, layout_c_,
                                      acc, layout_d_, &algo_, lt_ws, lt_ws_bytes, cuda_stream),
                       kWhere);
    scale_rows(a8w8_epilogue(p, args, acc, int8 ? DType::kInt32 : DType::kFloat32), stream);
    return;
  }
  // A's scale is w's (our N rows), B's is x's (our M columns).
  const float* a_scale = args.b_scale;
  const float* b_scale = args.a_scale;
  if (!per_tensor_both(p)) {
    auto* vec = reinterpret_cast<float*>(base + staging_bytes_);
    if (p.b_scale == ScaleGranularity::kTensor) {
      broadcast_scale(args.b_scale, vec, p.n, stream);
      a_scale = vec;
    } else if (p.a_scale == ScaleGranularity::kTensor) {
      broadcast_scale(args.a_scale, vec, p.m, stream);
      b_scale = vec;
    }
  }
  const float alpha = 1.0f, beta = 0.0f;
  std::lock_guard<std::mutex> lock(pointer_mutex_);
  set_attr(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale);
  set_attr(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale);
  if (p.has_bias()) set_attr(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias);
  TGEMM_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, &alpha, args.b, layout_a_, args.a, layout_b_, &beta, args.out,
                                    layout_c_, args.out, layout_d_, &algo_, lt_ws, lt_ws_bytes, cuda_stream),
                     kWhere);
}

namespace {

constexpr const char* kBlockWhere = "gemm_a8w8_blockscale";

std::size_t float_bytes(std::int64_t count) { return round_up(static_cast<std::size_t>(count) * sizeof(float)); }

// Descriptor attributes whose rejection means "no cuBLASLt solution" rather than an error: a
// cuBLASLt without block scale modes refuses them, and the dispatcher then walks on.
template <typename T>
bool try_set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
}

}  // namespace

bool LtA8W8Solution::make_blockscale_descriptors(std::string& why) {
  const GemmProblem& p = problem_;
  const bool staged = mode_ == Mode::kStaged;
  if (p.a_type != DType::kFloat8E4M3) {
    why = "block scales need float8_e4m3fn operands, got " + std::string(dtype_name(p.a_type));
    return false;
  }
  if (p.n % 4 != 0) {
    why = "cuBLASLt's block-scaled FP8 kernels need N a multiple of 4, got " + std::to_string(p.n);
    return false;
  }
  if (!staged && p.m % 4 != 0) {
    why = "cuBLASLt's block-scaled FP8 kernels need M a multiple of 4 to write out directly, got " +
          std::to_string(p.m) + " (the staged form pads M)";
    return false;
  }
  if (!staged && p.has_bias() && p.bias_type != p.out_type) {
    why = "cuBLASLt's FP8 bias has out's dtype (" + std::string(dtype_name(p.out_type)) + "), not " +
          std::string(dtype_name(p.bias_type));
    return false;
  }
  // What run copies into the workspace: x with zero rows up to a multiple of 4; x_scale unless it
  // is M-major with column stride exactly M (a multiple of 4) and 16-byte aligned; w_scale unless
  // its rows are exactly L rounded up to 4 floats apart and 16-byte aligned. cuBLASLt takes no
  // leading dimension for scales: it reads them at those strides.
  const std::int64_t kb = (p.k + 127) / 128, nb = (p.n + 127) / 128;
  const std::int64_t kb4 = (kb + 3) / 4 * 4;
  BlockPrep& b = block_;
  b.m_rows = (p.m + 3) / 4 * 4;
  std::size_t offset = 0;
  if (b.m_rows != p.m) {
    b.x_offset = offset;
    b.x_bytes = round_up(static_cast<std::size_t>(b.m_rows * p.k));
    offset += b.x_bytes;
  }
  const bool scales_aligned = p.align_scales >= 16;
  if (!(p.a_scale_mn_major && p.ld_a_scale == b.m_rows && b.m_rows == p.m && scales_aligned)) {
    b.xs_offset = offset;
    b.xs_bytes = float_bytes(kb * b.m_rows);
    offset += b.xs_bytes;
  }
  if (!(p.ld_b_scale == kb4 && scales_aligned)) {
    b.ws_offset = offset;
    b.ws_bytes = float_bytes(nb * kb4);
    offset += b.ws_bytes;
  }
  vector_bytes_ = offset;
  if (staged) staging_bytes_ = float_bytes(b.m_rows * p.n);

  handle_ = cublaslt_handle(p.device);
  const cudaDataType_t d = d_type();
  TGEMM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, compute_type(), scale_type()), kBlockWhere);
  set_attr(desc_, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set_attr(desc_, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  // A = w: one scale per 128x128 block; B = x: one per 128 elements of a row.
  const std::int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  const std::int32_t b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  if (!try_set_attr(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode) ||
      !try_set_attr(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode)) {
    why = "this cuBLASLt (" + format_lt_version(cublaslt_runtime_version()) + ") has no block scale modes";
    return false;
  }
  set_scale_placeholders(desc_);
  if (!staged && p.has_bias()) {
    set_attr(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    set_attr(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cublaslt_data_type(p.bias_type));
    set_attr(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, fake_pointer(p.align_bias));
  }
  const cudaDataType_t in = in_type();
  const std::int64_t ld_x = b.x_bytes > 0 ? p.k : p.lda;
  const std::int64_t ld_d = staged ? p.n : p.ldo;
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_a_, in, p.k, p.n, p.ldb), kBlockWhere);
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_b_, in, p.k, b.m_rows, ld_x), kBlockWhere);
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_c_, d, p.n, b.m_rows, ld_d), kBlockWhere);
  TGEMM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_d_, d, p.n, b.m_rows, ld_d), kBlockWhere);
  return true;
}

void LtA8W8Solution::run_blockscale(const GemmProblem& p, const GemmArgs& args, const Workspace& ws,
                                    Stream stream) const {
  auto* base = static_cast<char*>(ws.data);
  char* prep = base + staging_bytes_;
  const auto cuda_stream = reinterpret_cast<cudaStream_t>(stream);
  const BlockPrep& b = block_;
  const std::int64_t kb = (p.k + 127) / 128, nb = (p.n + 127) / 128;
  const void* x = args.a;
  const float* x_scale = args.a_scale;
  const float* w_scale = args.b_scale;
  if (b.x_bytes > 0) {
    char* xp = prep + b.x_offset;
    const auto k = static_cast<std::size_t>(p.k);
    TGEMM_CUDA_CHECK(cudaMemcpy2DAsync(xp, k, args.a, static_cast<std::size_t>(p.lda), k, static_cast<std::size_t>(p.m),
                                       cudaMemcpyDeviceToDevice, cuda_stream),
                     kBlockWhere);
    TGEMM_CUDA_CHECK(cudaMemsetAsync(xp + p.m * p.k, 0, static_cast<std::size_t>((b.m_rows - p.m) * p.k), cuda_stream),
                     kBlockWhere);
    x = xp;
  }
  if (b.xs_bytes > 0) {
    // [L, M4], M contiguous, zeros past M.
    ScaleRepack r;
    r.src = args.a_scale;
    r.src_stride_r = p.a_scale_mn_major ? p.ld_a_scale : 1;
    r.src_stride_c = p.a_scale_mn_major ? 1 : p.ld_a_scale;
    r.rows = kb;
    r.cols = p.m;
    r.dst = reinterpret_cast<float*>(prep + b.xs_offset);
    r.dst_ld = b.m_rows;
    repack_scales(r, stream);
    x_scale = r.dst;
  }
  if (b.ws_bytes > 0) {
    // [ceil(N / 128), L4], K contiguous, zeros past L.
    ScaleRepack r;
    r.src = args.b_scale;
    r.src_stride_r = p.ld_b_scale;
    r.src_stride_c = 1;
    r.rows = nb;
    r.cols = kb;
    r.dst = reinterpret_cast<float*>(prep + b.ws_offset);
    r.dst_ld = (kb + 3) / 4 * 4;
    repack_scales(r, stream);
    w_scale = r.dst;
  }
  const bool staged = mode_ == Mode::kStaged;
  void* d = staged ? static_cast<void*>(base) : args.out;
  void* lt_ws = prep + vector_bytes_;
  const std::size_t lt_ws_bytes = ws.bytes - staging_bytes_ - vector_bytes_;
  const float alpha = 1.0f, beta = 0.0f;
  {
    std::lock_guard<std::mutex> lock(pointer_mutex_);
    // A's scales are w's, B's are x's.
    set_attr(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, w_scale);
    set_attr(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, x_scale);
    if (!staged && p.has_bias()) set_attr(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias);
    TGEMM_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, &alpha, args.b, layout_a_, x, layout_b_, &beta, d, layout_c_, d,
                                      layout_d_, &algo_, lt_ws, lt_ws_bytes, cuda_stream),
                       kBlockWhere);
  }
  if (staged) epilogue_rows(gemm_epilogue(p, args, ProductAt::kStaging, static_cast<const float*>(d)), stream);
}

}  // namespace tgemm
