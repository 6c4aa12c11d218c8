// Public sparse entry points (include/tgemm/sparse.h): weights built and checked once, then
// sparse_gemm validates shapes, returns early on empty problems and runs the chosen backend.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/check.h"
#include "core/problem.h"
#include "core/validate.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "cuda/scale_epilogue.h"
#include "runtime/runtime.h"
#include "sparse/sparse_backends.h"
#include "sparse/sparse_table.h"
#include "sparse/sparse_validate.h"
#include "tgemm/a8w8.h"
#include "tgemm/gemm.h"

namespace tgemm {
namespace {

// The files of TGEMM_CONFIG_GEMM_SPARSE (':'-separated, each must open), else the shipped
// sparse_tuned_gemm.csv where it exists; read on the first sparse_gemm that asks.
SparseTable load_sparse_table() {
  SparseTable table;
  const char* env = std::getenv("TGEMM_CONFIG_GEMM_SPARSE");
  std::vector<std::string> files;
  bool required = false;
  if (env != nullptr && *env != '\0') {
    required = true;
    std::string list = env;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t end = std::min(list.find(':', start), list.size());
      if (end > start) files.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  } else {
    files.push_back(Runtime::get().shipped_config_dir() + "/sparse_tuned_gemm.csv");
  }
  for (const std::string& file : files) {
    std::ifstream in(file);
    TGEMM_CHECK(in || !required, "sparse_gemm", "TGEMM_CONFIG_GEMM_SPARSE names ", file, ", which cannot be opened");
    if (in) table.add(in, file);
  }
  return table;
}

const SparseTable& sparse_table() {
  static const SparseTable table = load_sparse_table();
  return table;
}

// The table's row for this call where it has one the weight and this process can run: a dense row
// needs the weight's dense copy, a cuSPARSELt row a loadable cuSPARSELt.
void apply_table(const SparseWeight& w, bool cusparselt, SparseGemmCall& call, SparseGemmOptions& options) {
  const auto choice = sparse_table().find(w.pattern(), w.density(), w.block_size(), call.m, call.n, call.k, w.dtype());
  if (!choice) return;
  if (choice->backend == SparseBackend::kDense && !w.has_dense()) return;
  if (choice->backend == SparseBackend::kCusparselt && !cusparselt) return;
  call.backend = choice->backend;
  options.algorithm = choice->algorithm;
  options.split_k = choice->split_k;
}

}  // namespace

bool has_cusparselt() { return sparse::cusparselt_unavailable_reason().empty(); }

SparseChoice sparse::describe_sparse_gemm(const SparseWeight& w, std::int64_t m) {
  const bool cusparselt = w.pattern() == SparsePattern::k2of4 && has_cusparselt();
  SparseGemmCall call;
  call.m = m;
  call.n = w.n();
  call.k = w.k();
  call.backend = resolve_sparse_backend(w, SparseBackend::kDefault, cusparselt, "describe_sparse_gemm");
  SparseGemmOptions chosen;
  apply_table(w, cusparselt, call, chosen);
  SparseChoice c;
  c.backend = call.backend;
  c.algorithm = chosen.algorithm;
  c.split_k = chosen.split_k;
  const auto row = sparse_table().find(w.pattern(), w.density(), w.block_size(), m, w.n(), w.k(), w.dtype());
  c.where = row && row->backend == call.backend ? row->where : "default";
  return c;
}

std::size_t sparse_compressed_bytes_2_4(std::int64_t n, std::int64_t k, DType dtype) {
  return sparse::cusparselt_compressed_bytes(n, k, dtype);
}

void prune_2_4(const TensorView& w, const TensorView& out, Stream stream) {
  constexpr std::string_view op = "prune_2_4";
  TGEMM_CHECK(w.rank == 2, op, "w must have rank 2 ([N, K]), got rank ", w.rank);
  TGEMM_CHECK(w.dtype == DType::kBFloat16 || w.dtype == DType::kFloat16, op, "w must be bf16 or fp16, got ",
              dtype_name(w.dtype));
  const std::int64_t n = w.sizes[0], k = w.sizes[1];
  TGEMM_CHECK(k % 4 == 0, op, "w.size(1) (K) must be a multiple of 4 (groups of 4 along K), got ", k);
  const std::int64_t ldw = check_dense_weight(w, "w", n, k, w.dtype, op);
  const std::int64_t ldo = check_dense_weight(out, "out", n, k, w.dtype, op);
  if (out.data != w.data || ldo != ldw) {
    const std::string o = overlap(out, "out", w, "w");
    TGEMM_CHECK(o.empty(), op, "out must be w itself or not overlap it: ", o);
  }
  sparse::launch_prune_2_4(w.data, ldw, out.data, ldo, n, k, w.dtype, stream);
}

SparseWeight SparseWeight::compress_2_4(const TensorView& w, const TensorView& compressed, Stream stream) {
  constexpr std::string_view op = "SparseWeight::compress_2_4";
  TGEMM_CHECK(w.rank == 2, op, "w must have rank 2 ([N, K]), got rank ", w.rank);
  check_2_4_shape(w.sizes[0], w.sizes[1], w.dtype, op);
  const std::int64_t n = w.sizes[0], k = w.sizes[1];
  const std::int64_t ldw = check_dense_weight(w, "w", n, k, w.dtype, op);
  TGEMM_CHECK(ldw == k, op, "w must be contiguous (row stride K = ", k, "), got row stride ", ldw);
  // The structure check reads the weight on the host once, here, so no GEMM call pays for it.
  const std::size_t esize = dtype_size(w.dtype);
  std::vector<std::uint8_t> host(static_cast<std::size_t>(n * k) * esize);
  TGEMM_CUDA_CHECK(cudaMemcpyAsync(host.data(), w.data, host.size(), cudaMemcpyDeviceToHost, stream), op.data());
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(stream), op.data());
  if (esize == 1) {
    check_2_4_host(host.data(), n, k, k, op);
  } else {
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(n * k));
    std::memcpy(bits.data(), host.data(), host.size());
    check_2_4_host(bits.data(), n, k, k, op);
  }
  SparseWeight out = from_compressed_2_4(compressed, n, k, w.dtype);
  const std::size_t need = sparse_compressed_bytes_2_4(n, k, w.dtype);
  TGEMM_CHECK(static_cast<std::size_t>(compressed.sizes[0]) >= need, op, "compressed must hold ", need,
              " bytes (sparse_compressed_bytes_2_4), got ", compressed.sizes[0]);
  sparse::cusparselt_compress(w.data, n, k, w.dtype, compressed.data, stream);
  return out;
}

SparseWeight SparseWeight::csr(const TensorView& row_offsets, const TensorView& col_indices, const TensorView& values,
                               std::int64_t n, std::int64_t k, Stream stream) {
  constexpr std::string_view op = "SparseWeight::csr";
  const std::int64_t nnz = check_csr_views(row_offsets, col_indices, values, n, k, op);
  std::vector<std::int32_t> offsets(static_cast<std::size_t>(n + 1)), cols(static_cast<std::size_t>(nnz));
  TGEMM_CUDA_CHECK(
      cudaMemcpyAsync(offsets.data(), row_offsets.data, offsets.size() * 4, cudaMemcpyDeviceToHost, stream), op.data());
  if (nnz > 0) {
    TGEMM_CUDA_CHECK(cudaMemcpyAsync(cols.data(), col_indices.data, cols.size() * 4, cudaMemcpyDeviceToHost, stream),
                     op.data());
  }
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(stream), op.data());
  check_csr_host(offsets.data(), n, cols.data(), nnz, k, op);
  return csr_prechecked(row_offsets, col_indices, values, n, k);
}

SparseWeight SparseWeight::bsr(const TensorView& row_offsets, const TensorView& col_indices, const TensorView& values,
                               std::int64_t n, std::int64_t k, std::int64_t block_size, Stream stream) {
  constexpr std::string_view op = "SparseWeight::bsr";
  const std::int64_t nnzb = check_bsr_views(row_offsets, col_indices, values, n, k, block_size, op);
  const std::int64_t rows = n / block_size;
  std::vector<std::int32_t> offsets(static_cast<std::size_t>(rows + 1)), cols(static_cast<std::size_t>(nnzb));
  TGEMM_CUDA_CHECK(
      cudaMemcpyAsync(offsets.data(), row_offsets.data, offsets.size() * 4, cudaMemcpyDeviceToHost, stream), op.data());
  if (nnzb > 0) {
    TGEMM_CUDA_CHECK(cudaMemcpyAsync(cols.data(), col_indices.data, cols.size() * 4, cudaMemcpyDeviceToHost, stream),
                     op.data());
  }
  TGEMM_CUDA_CHECK(cudaStreamSynchronize(stream), op.data());
  // The block structure is CSR's over block rows and block columns: the messages' rows and K are
  // counted in blocks.
  check_csr_host(offsets.data(), rows, cols.data(), nnzb, k / block_size, op);
  return bsr_prechecked(row_offsets, col_indices, values, n, k, block_size);
}

void sparse_gemm(const TensorView& x, const SparseWeight& w, const TensorView& out, const SparseGemmOptions& options,
                 Stream stream) {
  // Only a 2:4 weight asks whether cuSPARSELt loads (its first call dlopens it); a CSR weight never
  // runs on it.
  const bool cusparselt = w.pattern() == SparsePattern::k2of4 && has_cusparselt();
  SparseGemmCall call = validate_sparse_gemm(x, w, out, options, cusparselt);
  if (call.m == 0 || call.n == 0) return;
  SparseGemmOptions chosen = options;
  if (options.backend == SparseBackend::kDefault && options.algorithm == -1 && options.split_k == 0) {
    apply_table(w, cusparselt, call, chosen);
  }
  if (call.backend == SparseBackend::kDense) {
    GemmOptions dense;
    dense.bias = options.bias;
    gemm_a16w16(x, w.dense(), out, dense, stream);
    return;
  }
  // The bias (or, for an empty sum, the zeros) in one elementwise pass: from cuSPARSE's fp32
  // product (rounded once into out), or over out in place. The sparse libraries' own bias
  // epilogues differ by library and dtype; this pass does not.
  EpilogueParams e;
  e.out = out.data;
  e.out_type = out.dtype;
  e.ldo = call.ldo;
  e.m = call.m;
  e.n = call.n;
  e.bias = options.bias != nullptr ? options.bias->data : nullptr;
  e.bias_type = x.dtype;
  const bool empty_sum = call.k == 0 || w.nnz() == 0;
  if (empty_sum) {
    epilogue_rows(e, stream);
    return;
  }
  if (call.backend == SparseBackend::kCusparselt) {
    sparse::cusparselt_matmul(call, w, x.data, out.data, chosen.algorithm, chosen.split_k, stream);
    if (options.bias == nullptr) return;
    e.c = out.data;
    e.ldc = call.ldo;
    e.beta = 1.0f;
    epilogue_rows(e, stream);
    return;
  }
  sparse::cusparse_matmul(call, w, x.data, out.data, chosen.algorithm, stream, [&](const float* product) {
    if (product != nullptr) {
      e.src = product;
      e.ld_src = call.n;
    } else if (options.bias != nullptr) {
      e.c = out.data;
      e.ldc = call.ldo;
      e.beta = 1.0f;
    } else {
      return;
    }
    epilogue_rows(e, stream);
  });
}

void sparse_gemm_a8w8(const TensorView& x, const SparseWeight& w, const TensorView& x_scale, const TensorView& w_scale,
                      const TensorView& out, const SparseGemmOptions& options, Stream stream) {
  constexpr std::string_view op = "sparse_gemm_a8w8";
  TGEMM_CHECK(w.pattern() == SparsePattern::k2of4 && w.dtype() == DType::kFloat8E4M3, op,
              "the weight must be a float8_e4m3fn 2:4 weight, got a ", dtype_name(w.dtype()), " ",
              sparse_pattern_name(w.pattern()), " weight (sparse_gemm runs 16-bit weights)");
  TGEMM_CHECK(x.dtype == DType::kFloat8E4M3, op, "x must be torch.float8_e4m3fn (the weight's dtype), got ",
              dtype_name(x.dtype));
  TGEMM_CHECK(options.algorithm >= -1 && options.split_k >= 0, op,
              "options.algorithm must be >= -1 and options.split_k >= 0, got ", options.algorithm, ", ",
              options.split_k);
  // gemm_a8w8's checks, with the weight's dense copy as w where it has one, else a stand-in
  // [N, K] view at an address below any device allocation (never read through): the compressed
  // buffer is smaller than N * K bytes, so a view of it could report a false overlap with an out
  // allocated just after it.
  constexpr std::uintptr_t kStandIn = 256;
  TensorView w_view = TensorView::contiguous(reinterpret_cast<void*>(kStandIn), DType::kFloat8E4M3, {w.n(), w.k()});
  if (w.has_dense()) w_view = w.dense();
  const GemmCall gc = validate_a8w8(x, w_view, x_scale, w_scale, out, options.bias, op);
  const bool cusparselt = has_cusparselt();
  SparseGemmCall call;
  call.m = gc.problem.m;
  call.n = gc.problem.n;
  call.k = gc.problem.k;
  call.ldx = gc.problem.lda;
  call.ldo = gc.problem.ldo;
  call.backend = resolve_sparse_backend(w, options.backend, cusparselt, op);
  if (call.m == 0 || call.n == 0) return;
  SparseGemmOptions chosen = options;
  if (options.backend == SparseBackend::kDefault && options.algorithm == -1 && options.split_k == 0) {
    apply_table(w, cusparselt, call, chosen);
  }
  // cuSPARSELt 0.8.0's e4m3 kernels (64x64x256 tiles on an H200) read past the compressed weight
  // when K is not a multiple of 256 (compute-sanitizer: 2 KiB reads beyond a 64 x 128 weight's
  // 5120 bytes): such a K runs the dense FP8 GEMM on the weight's dense copy, or is refused.
  if (call.backend == SparseBackend::kCusparselt && call.k % kSparse24Fp8KMultiple != 0) {
    TGEMM_CHECK(w.has_dense(), op, "K must be a multiple of ", kSparse24Fp8KMultiple,
                " for cuSPARSELt's FP8 2:4 kernels (they read whole 256-deep tiles of the compressed weight), got ",
                call.k, "; a weight with its dense copy (SparseWeight::with_dense) runs the dense FP8 GEMM instead");
    call.backend = SparseBackend::kDense;
  }
  if (call.backend == SparseBackend::kDense) {
    gemm_a8w8(x, w.dense(), x_scale, w_scale, out, options.bias, stream);
    return;
  }
  sparse::cusparselt_matmul_fp8(call, w, x.data, chosen.algorithm, chosen.split_k, stream, [&](const float* product) {
    scale_rows(a8w8_epilogue(gc.problem, gc.args, product, DType::kFloat32), stream);
  });
}

}  // namespace tgemm
