#include "sparse/sparse_validate.h"

#include <string>

#include "core/check.h"
#include "core/validate.h"

namespace tgemm {

const char* sparse_pattern_name(SparsePattern p) {
  switch (p) {
    case SparsePattern::k2of4: return "2:4";
    case SparsePattern::kCsr: return "csr";
    case SparsePattern::kBlock: return "block";
  }
  return "?";
}

const char* sparse_backend_name(SparseBackend b) {
  switch (b) {
    case SparseBackend::kDefault: return "default";
    case SparseBackend::kCusparselt: return "cusparselt";
    case SparseBackend::kCusparse: return "cusparse";
    case SparseBackend::kDense: return "dense";
  }
  return "?";
}

namespace {

bool is_16bit_float(DType t) { return t == DType::kBFloat16 || t == DType::kFloat16; }

// A rank-1 contiguous view of `dtype` with `size` elements, non-null where not empty.
void check_vector(const TensorView& t, const char* name, DType dtype, std::int64_t size, std::string_view op) {
  TGEMM_CHECK(t.rank == 1, op, name, " must have rank 1, got rank ", t.rank);
  check_rank_and_sizes(t, name, op);
  TGEMM_CHECK(t.dtype == dtype, op, name, " must be ", dtype_name(dtype), ", got ", dtype_name(t.dtype));
  TGEMM_CHECK(t.sizes[0] == size, op, name, ".size(0) must be ", size, ", got ", t.sizes[0]);
  TGEMM_CHECK(t.sizes[0] <= 1 || t.strides[0] == 1, op, name, " must be contiguous, got stride ", t.strides[0]);
  TGEMM_CHECK(t.sizes[0] == 0 || t.data != nullptr, op, name, " must not be null");
  check_element_alignment(t, name, op);
}

}  // namespace

std::int64_t sparse_2_4_multiple(DType dtype) {
  return dtype == DType::kFloat8E4M3 ? kSparse24Multiple8Bit : kSparse24Multiple;
}

void check_2_4_shape(std::int64_t n, std::int64_t k, DType dtype, std::string_view op) {
  TGEMM_CHECK(is_16bit_float(dtype) || dtype == DType::kFloat8E4M3, op,
              "a 2:4 weight must be bf16, fp16 or float8_e4m3fn, got ", dtype_name(dtype));
  const std::int64_t multiple = sparse_2_4_multiple(dtype);
  const char* rule = dtype == DType::kFloat8E4M3 ? " (cuSPARSELt's structured-matrix rule for 8-bit types), got "
                                                 : " (cuSPARSELt's structured-matrix rule for 16-bit types), got ";
  TGEMM_CHECK(n > 0 && n % multiple == 0, op, "a 2:4 weight's N (rows) must be a positive multiple of ", multiple, rule,
              n);
  TGEMM_CHECK(k > 0 && k % multiple == 0, op, "a 2:4 weight's K (columns) must be a positive multiple of ", multiple,
              rule, k);
}

namespace {

// `magnitude` masks the sign bit: +0 and -0 are the zeros of both encodings.
template <typename Bits>
void check_2_4_groups(const Bits* w, std::int64_t n, std::int64_t k, std::int64_t ld, Bits magnitude,
                      std::string_view op) {
  TGEMM_CHECK(k % 4 == 0, op, "a 2:4 weight's K must be a multiple of 4, got ", k);
  for (std::int64_t r = 0; r < n; ++r) {
    const Bits* row = w + r * ld;
    for (std::int64_t g = 0; g < k; g += 4) {
      int nonzeros = 0;
      for (int j = 0; j < 4; ++j) nonzeros += (row[g + j] & magnitude) != 0 ? 1 : 0;
      TGEMM_CHECK(nonzeros <= 2, op, "the weight is not 2:4 sparse: row ", r, ", columns [", g, ", ", g + 4, ") hold ",
                  nonzeros, " nonzeros (at most 2 of every 4 along K; prune_2_4 makes a weight 2:4)");
    }
  }
}

}  // namespace

void check_2_4_host(const std::uint16_t* w, std::int64_t n, std::int64_t k, std::int64_t ld, std::string_view op) {
  check_2_4_groups<std::uint16_t>(w, n, k, ld, 0x7fffu, op);
}

void check_2_4_host(const std::uint8_t* w, std::int64_t n, std::int64_t k, std::int64_t ld, std::string_view op) {
  check_2_4_groups<std::uint8_t>(w, n, k, ld, 0x7fu, op);
}

void check_csr_host(const std::int32_t* offsets, std::int64_t n, const std::int32_t* cols, std::int64_t nnz,
                    std::int64_t k, std::string_view op) {
  TGEMM_CHECK(offsets[0] == 0, op, "row_offsets[0] must be 0, got ", offsets[0]);
  TGEMM_CHECK(offsets[n] == nnz, op, "row_offsets[N] (N = ", n, ") must equal nnz (col_indices.size(0) = ", nnz,
              "), got ", offsets[n]);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t begin = offsets[r], end = offsets[r + 1];
    TGEMM_CHECK(begin <= end, op, "row_offsets must not decrease: row_offsets[", r, "] = ", begin, " > row_offsets[",
                r + 1, "] = ", end);
    for (std::int64_t i = begin; i < end; ++i) {
      TGEMM_CHECK(cols[i] >= 0 && cols[i] < k, op, "col_indices[", i, "] (row ", r, ") must be in [0, K = ", k,
                  "), got ", cols[i]);
      TGEMM_CHECK(i == begin || cols[i] > cols[i - 1], op, "col_indices of row ", r,
                  " must be sorted and distinct, got col_indices[", i - 1, "] = ", cols[i - 1], " then col_indices[", i,
                  "] = ", cols[i]);
    }
  }
}

std::int64_t check_csr_views(const TensorView& row_offsets, const TensorView& col_indices, const TensorView& values,
                             std::int64_t n, std::int64_t k, std::string_view op) {
  TGEMM_CHECK(n >= 0 && k >= 0, op, "the weight's shape [N, K] must not be negative, got [", n, ", ", k, "]");
  TGEMM_CHECK(n < (std::int64_t{1} << 31) && k < (std::int64_t{1} << 31), op,
              "the weight's N and K must fit int32 (the index dtype), got [", n, ", ", k, "]");
  TGEMM_CHECK(row_offsets.dtype == DType::kInt32, op, "row_offsets must be torch.int32, got ",
              dtype_name(row_offsets.dtype));
  TGEMM_CHECK(col_indices.dtype == DType::kInt32, op, "col_indices must be torch.int32, got ",
              dtype_name(col_indices.dtype));
  TGEMM_CHECK(is_16bit_float(values.dtype), op, "values must be bf16 or fp16, got ", dtype_name(values.dtype));
  TGEMM_CHECK(col_indices.rank == 1, op, "col_indices must have rank 1, got rank ", col_indices.rank);
  const std::int64_t nnz = col_indices.sizes[0];
  check_vector(row_offsets, "row_offsets", DType::kInt32, n + 1, op);
  check_vector(col_indices, "col_indices", DType::kInt32, nnz, op);
  check_vector(values, "values", values.dtype, nnz, op);
  return nnz;
}

std::int64_t check_bsr_views(const TensorView& row_offsets, const TensorView& col_indices, const TensorView& values,
                             std::int64_t n, std::int64_t k, std::int64_t block_size, std::string_view op) {
  TGEMM_CHECK(block_size > 0, op, "block_size must be positive, got ", block_size);
  TGEMM_CHECK(n >= 0 && k >= 0, op, "the weight's shape [N, K] must not be negative, got [", n, ", ", k, "]");
  TGEMM_CHECK(n % block_size == 0 && k % block_size == 0, op, "block_size ", block_size,
              " must divide the weight's N and K, got [", n, ", ", k, "]");
  TGEMM_CHECK(n < (std::int64_t{1} << 31) && k < (std::int64_t{1} << 31), op,
              "the weight's N and K must fit int32 (the index dtype), got [", n, ", ", k, "]");
  TGEMM_CHECK(row_offsets.dtype == DType::kInt32, op, "crow_indices must be torch.int32, got ",
              dtype_name(row_offsets.dtype));
  TGEMM_CHECK(col_indices.dtype == DType::kInt32, op, "col_indices must be torch.int32, got ",
              dtype_name(col_indices.dtype));
  TGEMM_CHECK(is_16bit_float(values.dtype), op, "values must be bf16 or fp16, got ", dtype_name(values.dtype));
  TGEMM_CHECK(col_indices.rank == 1, op, "col_indices must have rank 1, got rank ", col_indices.rank);
  const std::int64_t nnzb = col_indices.sizes[0];
  check_vector(row_offsets, "crow_indices", DType::kInt32, n / block_size + 1, op);
  check_vector(col_indices, "col_indices", DType::kInt32, nnzb, op);
  TGEMM_CHECK(values.rank == 3, op, "values must have rank 3 ([nnzb, block_size, block_size]), got rank ", values.rank);
  check_rank_and_sizes(values, "values", op);
  TGEMM_CHECK(values.sizes[0] == nnzb && values.sizes[1] == block_size && values.sizes[2] == block_size, op,
              "values must be [nnzb = ", nnzb, ", ", block_size, ", ", block_size, "], got ", shape_str(values));
  const bool contiguous = values.numel() == 0 || (values.strides[2] == 1 && values.strides[1] == block_size &&
                                                  (nnzb <= 1 || values.strides[0] == block_size * block_size));
  TGEMM_CHECK(contiguous, op, "values must be contiguous, got strides ", strides_str(values));
  TGEMM_CHECK(values.numel() == 0 || values.data != nullptr, op, "values must not be null");
  check_element_alignment(values, "values", op);
  return nnzb;
}

std::int64_t check_dense_weight(const TensorView& w, const char* name, std::int64_t n, std::int64_t k, DType dtype,
                                std::string_view op) {
  TGEMM_CHECK(w.rank == 2, op, name, " must have rank 2 ([N, K]), got rank ", w.rank);
  check_rank_and_sizes(w, name, op);
  TGEMM_CHECK(w.dtype == dtype, op, name, " must be ", dtype_name(dtype), ", got ", dtype_name(w.dtype));
  TGEMM_CHECK(w.sizes[0] == n && w.sizes[1] == k, op, name, " must be [", n, ", ", k, "], got ", shape_str(w));
  TGEMM_CHECK(w.data != nullptr || w.numel() == 0, op, name, " must not be null");
  check_extent(w, name, op);
  check_element_alignment(w, name, op);
  return check_rows(w, 0, name, op);
}

SparseBackend resolve_sparse_backend(const SparseWeight& w, SparseBackend asked, bool cusparselt_built,
                                     std::string_view op) {
  const bool is_24 = w.pattern() == SparsePattern::k2of4;
  SparseBackend b = asked;
  if (b == SparseBackend::kDefault) b = is_24 ? SparseBackend::kCusparselt : SparseBackend::kCusparse;
  TGEMM_CHECK(b != SparseBackend::kDense || w.has_dense(), op,
              "backend dense needs the weight's dense copy (SparseWeight::with_dense), which this weight lacks");
  TGEMM_CHECK(b != SparseBackend::kCusparselt || is_24, op, "backend cusparselt runs 2:4 weights, got a ",
              sparse_pattern_name(w.pattern()), " weight");
  TGEMM_CHECK(b != SparseBackend::kCusparselt || cusparselt_built, op,
              "this build of tgemm has no cuSPARSELt (CMake did not find it), so 2:4 weights cannot run on it");
  TGEMM_CHECK(b != SparseBackend::kCusparse || !is_24, op,
              "backend cusparse runs CSR and block weights, got a 2:4 weight (use cusparselt or dense)");
  return b;
}

SparseGemmCall validate_sparse_gemm(const TensorView& x, const SparseWeight& w, const TensorView& out,
                                    const SparseGemmOptions& options, bool cusparselt_built) {
  constexpr std::string_view op = "sparse_gemm";
  TGEMM_CHECK(is_16bit_float(w.dtype()), op, "the weight is ", dtype_name(w.dtype()),
              ": an FP8 2:4 weight runs through sparse_gemm_a8w8, with its scales");
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&x, "x"}, {&out, "out"}}) {
    TGEMM_CHECK(t->rank >= 2 && t->rank <= kMaxRank, op, name, " must have rank 2 to ", kMaxRank, ", got ", t->rank);
    check_rank_and_sizes(*t, name, op);
    check_extent(*t, name, op);
    TGEMM_CHECK(t->dtype == w.dtype(), op, name, " must have the weight's dtype ", dtype_name(w.dtype()), ", got ",
                dtype_name(t->dtype));
    TGEMM_CHECK(t->data != nullptr || t->numel() == 0, op, name, " must not be null");
    check_element_alignment(*t, name, op);
  }
  SparseGemmCall call;
  call.n = w.n();
  call.k = w.k();
  TGEMM_CHECK(x.size(-1) == call.k, op, "x.size(-1) must equal the weight's K (", call.k, "), got ", x.size(-1));
  TGEMM_CHECK(out.size(-1) == call.n, op, "out.size(-1) must equal the weight's N (", call.n, "), got ", out.size(-1));
  TGEMM_CHECK(out.rank == x.rank, op, "out must have x's rank ", x.rank, ", got ", out.rank);
  call.m = 1;
  for (int d = 0; d + 1 < x.rank; ++d) {
    TGEMM_CHECK(out.sizes[d] == x.sizes[d], op, "out.size(", d, ") must equal x.size(", d, ") (", x.sizes[d], "), got ",
                out.sizes[d]);
    call.m *= x.sizes[d];
  }
  TGEMM_CHECK(x.size(-1) <= 1 || x.stride(-1) == 1, op, "x's rows must be contiguous (stride(-1) == 1), got strides ",
              strides_str(x));
  TGEMM_CHECK(out.size(-1) <= 1 || out.stride(-1) == 1, op,
              "out's rows must be contiguous (stride(-1) == 1), got strides ", strides_str(out));
  const std::int64_t ldx = collapsed_row_stride(x, "x", op), ldo = collapsed_row_stride(out, "out", op);
  call.ldx = ldx < 0 ? call.k : ldx;
  call.ldo = ldo < 0 ? call.n : ldo;
  TGEMM_CHECK(call.m <= 1 || call.ldx >= call.k, op, "x's row stride must be >= K (", call.k, "), got ", call.ldx);
  TGEMM_CHECK(call.m <= 1 || call.ldo >= call.n, op, "out's row stride must be >= N (", call.n, "), got ", call.ldo);
  if (options.bias != nullptr) check_vector(*options.bias, "bias", x.dtype, call.n, op);
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&x, "x"}, {options.bias, "bias"}}) {
    if (t == nullptr) continue;
    const std::string o = overlap(out, "out", *t, name);
    TGEMM_CHECK(o.empty(), op, "out must not overlap its inputs: ", o);
  }
  TGEMM_CHECK(options.algorithm >= -1, op,
              "options.algorithm must be -1 (the default) or a configuration id >= 0, got ", options.algorithm);
  TGEMM_CHECK(options.split_k >= 0, op, "options.split_k must be >= 0 (0: the default), got ", options.split_k);
  call.backend = resolve_sparse_backend(w, options.backend, cusparselt_built, op);
  return call;
}

// Host-only members of SparseWeight; the members that read device memory are in api_sparse.cpp.

SparseWeight SparseWeight::from_compressed_2_4(const TensorView& compressed, std::int64_t n, std::int64_t k,
                                               DType dtype) {
  constexpr std::string_view op = "SparseWeight::from_compressed_2_4";
  check_2_4_shape(n, k, dtype, op);
  TGEMM_CHECK(compressed.rank == 1, op, "compressed must have rank 1 (bytes), got rank ", compressed.rank);
  check_rank_and_sizes(compressed, "compressed", op);
  TGEMM_CHECK(compressed.dtype == DType::kInt8 || compressed.dtype == DType::kUInt8, op,
              "compressed must be a byte buffer (int8 or uint8), got ", dtype_name(compressed.dtype));
  TGEMM_CHECK(compressed.sizes[0] <= 1 || compressed.strides[0] == 1, op, "compressed must be contiguous");
  TGEMM_CHECK(compressed.data != nullptr, op, "compressed must not be null");
  // cuSPARSELt's compressed form: the N x K/2 kept values plus their 2-bit position metadata,
  // never smaller than the values alone.
  const std::int64_t min_bytes = n * (k / 2) * static_cast<std::int64_t>(dtype_size(dtype));
  TGEMM_CHECK(compressed.sizes[0] >= min_bytes, op, "compressed holds ", compressed.sizes[0], " bytes, fewer than the ",
              min_bytes, " of the kept values of a [", n, ", ", k, "] 2:4 weight");
  SparseWeight w;
  w.pattern_ = SparsePattern::k2of4;
  w.dtype_ = dtype;
  w.n_ = n;
  w.k_ = k;
  w.nnz_ = n * (k / 2);
  w.compressed_ = compressed;
  return w;
}

SparseWeight SparseWeight::csr_prechecked(const TensorView& row_offsets, const TensorView& col_indices,
                                          const TensorView& values, std::int64_t n, std::int64_t k) {
  const std::int64_t nnz = check_csr_views(row_offsets, col_indices, values, n, k, "SparseWeight::csr_prechecked");
  SparseWeight w;
  w.pattern_ = SparsePattern::kCsr;
  w.dtype_ = values.dtype;
  w.n_ = n;
  w.k_ = k;
  w.nnz_ = nnz;
  w.row_offsets_ = row_offsets;
  w.col_indices_ = col_indices;
  w.values_ = values;
  return w;
}

SparseWeight SparseWeight::bsr_prechecked(const TensorView& row_offsets, const TensorView& col_indices,
                                          const TensorView& values, std::int64_t n, std::int64_t k,
                                          std::int64_t block_size) {
  const std::int64_t nnzb =
      check_bsr_views(row_offsets, col_indices, values, n, k, block_size, "SparseWeight::bsr_prechecked");
  SparseWeight w;
  w.pattern_ = SparsePattern::kBlock;
  w.dtype_ = values.dtype;
  w.n_ = n;
  w.k_ = k;
  w.nnz_ = nnzb * block_size * block_size;
  w.block_size_ = block_size;
  w.row_offsets_ = row_offsets;
  w.col_indices_ = col_indices;
  w.values_ = values;
  return w;
}

double SparseWeight::density() const {
  if (pattern_ == SparsePattern::k2of4) return 0.5;
  return n_ * k_ == 0 ? 0.0 : static_cast<double>(nnz_) / static_cast<double>(n_ * k_);
}

SparseWeight& SparseWeight::with_dense(const TensorView& dense) {
  check_dense_weight(dense, "dense", n_, k_, dtype_, "SparseWeight::with_dense");
  dense_ = dense;
  return *this;
}

}  // namespace tgemm
