#include "core/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "core/check.h"

namespace tgemm {

std::string shape_str(const TensorView& t) {
  std::string s = "[";
  for (int d = 0; d < t.rank && d < kMaxRank; ++d) detail::append(s, detail::concat(d ? ", " : "", t.sizes[d]));
  s += "]";
  return s;
}

std::string strides_str(const TensorView& t) {
  std::string s = "(";
  for (int d = 0; d < t.rank && d < kMaxRank; ++d) detail::append(s, detail::concat(d ? ", " : "", t.strides[d]));
  s += ")";
  return s;
}

void check_rank_and_sizes(const TensorView& t, const char* name, std::string_view op) {
  for (int d = 0; d < t.rank; ++d) {
    TGEMM_CHECK(t.sizes[d] >= 0, op, name, ".size(", d, ") must be >= 0, got ", t.sizes[d]);
    TGEMM_CHECK(t.strides[d] >= 0, op, name, ".stride(", d, ") must be >= 0, got ", t.strides[d],
                " (negative strides are not supported)");
  }
}

// Bytes from the first to one past the last element, with overflow detection.
bool extent_bytes(const TensorView& t, std::int64_t& bytes) {
  if (t.numel() == 0) {
    bytes = 0;
    return true;
  }
  __int128 last = 0;
  for (int d = 0; d < t.rank; ++d) last += static_cast<__int128>(t.sizes[d] - 1) * t.strides[d];
  __int128 b = (last + 1) * static_cast<__int128>(dtype_size(t.dtype));
  if (b > std::numeric_limits<std::int64_t>::max() / 2) return false;
  bytes = static_cast<std::int64_t>(b);
  return true;
}

std::int64_t collapsed_row_stride(const TensorView& t, const char* name, std::string_view op) {
  std::int64_t ld = -1;
  int inner = -1;
  for (int d = t.rank - 2; d >= 0; --d) {
    if (t.sizes[d] <= 1) continue;
    if (inner < 0) {
      ld = t.strides[d];
    } else {
      TGEMM_CHECK(t.strides[d] == t.strides[inner] * t.sizes[inner], op, name, " cannot be flattened to 2-D: stride(",
                  d, ") = ", t.strides[d], " must equal stride(", inner, ") * size(", inner,
                  ") = ", t.strides[inner] * t.sizes[inner], " (sizes ", shape_str(t), ", strides ", strides_str(t),
                  ")");
    }
    inner = d;
  }
  return ld;
}

BlockScaleLayout check_block_scale_layout(const TensorView& scale, const char* name, std::int64_t rows,
                                          std::int64_t cols, const char* shape_text, bool allow_mn_major,
                                          std::string_view op) {
  TGEMM_CHECK(scale.rank == 2 && scale.sizes[0] == rows && scale.sizes[1] == cols, op, name, " must be ", shape_text,
              " = [", rows, ", ", cols, "], got ", shape_str(scale));
  const std::int64_t s0 = scale.strides[0], s1 = scale.strides[1];
  const bool row_major = (cols <= 1 || s1 == 1) && (rows <= 1 || s0 >= cols);
  const bool mn_major = (rows <= 1 || s0 == 1) && (cols <= 1 || s1 >= rows);
  if (allow_mn_major) {
    TGEMM_CHECK(row_major || mn_major, op, name, " must be row-major (strides (ld, 1), ld >= ", cols,
                ") or MN-major (strides (1, ld), ld >= ", rows, "), got strides ", strides_str(scale));
  } else {
    TGEMM_CHECK(row_major, op, name, " must be row-major (strides (ld, 1), ld >= ", cols, "), got strides ",
                strides_str(scale));
  }
  BlockScaleLayout l;
  if (row_major) {
    l.ld = rows <= 1 ? cols : s0;
  } else {
    l.mn_major = true;
    l.ld = cols <= 1 ? rows : s1;
  }
  return l;
}

void check_extent(const TensorView& t, const char* name, std::string_view op) {
  std::int64_t bytes = 0;
  TGEMM_CHECK(extent_bytes(t, bytes), op, name, " spans more than 2^62 bytes (sizes ", shape_str(t), ", strides ",
              strides_str(t), "): sizes overflow");
}

// Empty string when the byte ranges of a and b are disjoint, else a description of both.
std::string overlap(const TensorView& a, const char* an, const TensorView& b, const char* bn) {
  std::int64_t ea = 0, eb = 0;
  extent_bytes(a, ea);
  extent_bytes(b, eb);
  if (ea == 0 || eb == 0) return "";
  auto pa = reinterpret_cast<std::uintptr_t>(a.data);
  auto pb = reinterpret_cast<std::uintptr_t>(b.data);
  if (!(pa < pb + static_cast<std::uintptr_t>(eb) && pb < pa + static_cast<std::uintptr_t>(ea))) return "";
  return detail::concat(an, " spans [", a.data, ", +", ea, " bytes) and ", bn, " spans [", b.data, ", +", eb,
                        " bytes)");
}

void check_element_alignment(const TensorView& t, const char* name, std::string_view op) {
  if (t.data == nullptr) return;
  std::size_t es = dtype_size(t.dtype);
  TGEMM_CHECK(reinterpret_cast<std::uintptr_t>(t.data) % es == 0, op, name,
              ".data must be aligned to its element size (", es, " bytes), got address ", t.data);
}

namespace {

// Largest size of one GEMM dimension we accept: kernels index rows and columns with int32 and
// cuBLASLt takes them as such in its grid computations.
constexpr std::int64_t kMaxDim = std::numeric_limits<std::int32_t>::max();

// Returns the row stride, row_len where there is no row step to take (m <= 1 or every leading dim
// of size 1).
std::int64_t row_stride(const TensorView& t, const char* name, std::int64_t row_len, std::int64_t m,
                        std::string_view op) {
  const std::int64_t ld = collapsed_row_stride(t, name, op);
  return ld < row_len ? (m <= 1 ? row_len : ld) : ld;
}

// Rank bounds first (everything after indexes sizes[0, rank)), then the epilogue options.
void check_ranks_and_options(const TensorView& x, const TensorView& w, const TensorView& out,
                             const GemmOptions& options, std::string_view op) {
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&x, "x"},
                         {&w, "w"},
                         {&out, "out"},
                         {options.bias, "bias"},
                         {options.c, "c"}}) {
    if (t == nullptr) continue;
    TGEMM_CHECK(t->rank >= 1 && t->rank <= kMaxRank, op, name, ".rank must be in [1, ", kMaxRank, "], got ", t->rank);
  }
  const auto act = static_cast<int>(options.activation);
  TGEMM_CHECK(act >= 0 && act <= static_cast<int>(Activation::kRelu), op,
              "options.activation must be none, gelu, gelu_tanh or relu, got value ", act);
  TGEMM_CHECK(std::isfinite(options.alpha), op, "alpha must be finite, got ", options.alpha);
  TGEMM_CHECK(std::isfinite(options.beta), op, "beta must be finite, got ", options.beta);
  TGEMM_CHECK(options.beta == 0.0f || options.c != nullptr, op, "c must be given when beta != 0 (beta = ", options.beta,
              ")");
}

// Null pointers (an empty tensor may have none), then dtypes; xn and wn name the operands.
void check_pointers_and_dtypes(const TensorView& x, const TensorView& w, const TensorView& out, const TensorView* bias,
                               std::string_view op, const char* xn = "x", const char* wn = "w") {
  TGEMM_CHECK(x.data != nullptr || x.numel() == 0, op, xn, ".data must not be null (", xn, " is ", shape_str(x), ")");
  TGEMM_CHECK(w.data != nullptr || w.numel() == 0, op, wn, ".data must not be null (", wn, " is ", shape_str(w), ")");
  TGEMM_CHECK(out.data != nullptr || out.numel() == 0, op, "out.data must not be null (out is ", shape_str(out), ")");
  if (bias) {
    TGEMM_CHECK(bias->data != nullptr || bias->numel() == 0, op,
                "bias.data must not be null when a bias is given (bias is ", shape_str(*bias), ")");
  }
  TGEMM_CHECK(x.dtype == DType::kBFloat16 || x.dtype == DType::kFloat16, op, xn,
              ".dtype must be torch.bfloat16 or torch.float16, got ", dtype_name(x.dtype));
  TGEMM_CHECK(w.dtype == x.dtype, op, wn, ".dtype must equal ", xn, ".dtype (", dtype_name(x.dtype), "), got ",
              dtype_name(w.dtype));
  TGEMM_CHECK(out.dtype == DType::kBFloat16 || out.dtype == DType::kFloat16 || out.dtype == DType::kFloat32, op,
              "out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got ", dtype_name(out.dtype));
  if (bias) {
    TGEMM_CHECK(bias->dtype == x.dtype || bias->dtype == out.dtype, op, "bias.dtype must equal ", xn, ".dtype (",
                dtype_name(x.dtype), ") or out.dtype (", dtype_name(out.dtype), "), got ", dtype_name(bias->dtype));
  }
}

struct GemmDims {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

// Ranks, sizes and their agreement; returns M (x's leading dims flattened), N and K.
GemmDims check_shapes(const TensorView& x, const TensorView& w, const TensorView& out, const TensorView* bias,
                      std::string_view op) {
  check_rank_and_sizes(x, "x", op);
  check_rank_and_sizes(w, "w", op);
  check_rank_and_sizes(out, "out", op);
  TGEMM_CHECK(w.rank == 2, op, "w must be 2-D [N, K], got rank ", w.rank, " ", shape_str(w));
  TGEMM_CHECK(out.rank == x.rank, op, "out.rank must equal x.rank (", x.rank, "), got ", out.rank);
  if (bias) {
    check_rank_and_sizes(*bias, "bias", op);
    TGEMM_CHECK(bias->rank == 1, op, "bias must be 1-D [N], got rank ", bias->rank, " ", shape_str(*bias));
  }
  GemmDims dims;
  const std::int64_t k = x.size(-1);
  const std::int64_t n = w.size(0);
  TGEMM_CHECK(w.size(1) == k, op, "w.size(1) must equal x.size(-1) (K), got ", w.size(1), " vs ", k);
  TGEMM_CHECK(out.size(-1) == n, op, "out.size(-1) must equal w.size(0) (N), got ", out.size(-1), " vs ", n);
  std::int64_t m = 1;
  bool empty_rows = false;
  for (int d = 0; d + 1 < x.rank; ++d) {
    TGEMM_CHECK(out.sizes[d] == x.sizes[d], op, "out.size(", d, ") must equal x.size(", d, "), got ", out.sizes[d],
                " vs ", x.sizes[d]);
    empty_rows = empty_rows || x.sizes[d] == 0;
  }
  for (int d = 0; d + 1 < x.rank && !empty_rows; ++d) {
    TGEMM_CHECK(m <= kMaxDim / x.sizes[d], op, "x has more than 2^31-1 rows (M) after flattening ", shape_str(x));
    m *= x.sizes[d];
  }
  if (empty_rows) m = 0;
  TGEMM_CHECK(m <= kMaxDim, op, "M must be at most ", kMaxDim, ", got ", m);
  TGEMM_CHECK(n <= kMaxDim, op, "N (w.size(0)) must be at most ", kMaxDim, ", got ", n);
  TGEMM_CHECK(k <= kMaxDim, op, "K (x.size(-1)) must be at most ", kMaxDim, ", got ", k);
  if (bias) {
    TGEMM_CHECK(bias->size(0) == n, op, "bias.size(0) must equal N (", n, "), got ", bias->size(0));
  }
  dims.m = m;
  dims.n = n;
  dims.k = k;
  return dims;
}

struct RowStrides {
  std::int64_t lda = 0;
  std::int64_t ldb = 0;
  std::int64_t ldo = 0;
};

// Extents, contiguous rows and row strides of x, w, out and bias.
RowStrides check_layout(const TensorView& x, const TensorView& w, const TensorView& out, const TensorView* bias,
                        const GemmDims& dims, std::string_view op) {
  const std::int64_t m = dims.m, n = dims.n, k = dims.k;
  check_extent(x, "x", op);
  check_extent(w, "w", op);
  check_extent(out, "out", op);
  TGEMM_CHECK(k <= 1 || x.stride(-1) == 1, op, "x.stride(-1) must be 1 (rows contiguous), got ", x.stride(-1),
              " for x ", shape_str(x), " strides ", strides_str(x));
  TGEMM_CHECK(k <= 1 || w.stride(1) == 1, op,
              "w.stride(1) must be 1 (w is [N, K] with contiguous rows, as in F.linear), got ", w.stride(1),
              " strides ", strides_str(w));
  TGEMM_CHECK(n <= 1 || out.stride(-1) == 1, op, "out.stride(-1) must be 1, got ", out.stride(-1), " for out ",
              shape_str(out), " strides ", strides_str(out));
  RowStrides ld;
  ld.lda = row_stride(x, "x", k, m, op);
  ld.ldo = row_stride(out, "out", n, m, op);
  ld.ldb = n <= 1 ? std::max(w.stride(0), k) : w.stride(0);
  TGEMM_CHECK(m <= 1 || ld.lda >= k, op, "x row stride must be >= K (", k, "), got ", ld.lda);
  TGEMM_CHECK(n <= 1 || ld.ldb >= k, op, "w.stride(0) must be >= K (", k, "), got ", ld.ldb);
  TGEMM_CHECK(m <= 1 || ld.ldo >= n, op, "out row stride must be >= N (", n, "), got ", ld.ldo);
  if (bias) {
    TGEMM_CHECK(n <= 1 || bias->stride(0) == 1, op, "bias.stride(0) must be 1, got ", bias->stride(0));
  }
  return ld;
}

// c: shaped, typed and laid out like out; may be out itself, else must not overlap it.
// Returns c's row stride.
std::int64_t check_c(const TensorView& c, const TensorView& out, const GemmDims& dims, std::string_view op) {
  const std::int64_t m = dims.m, n = dims.n;
  TGEMM_CHECK(c.data != nullptr || c.numel() == 0, op, "c.data must not be null (c is ", shape_str(c), ")");
  TGEMM_CHECK(c.dtype == out.dtype, op, "c.dtype must equal out.dtype (", dtype_name(out.dtype), "), got ",
              dtype_name(c.dtype));
  check_rank_and_sizes(c, "c", op);
  TGEMM_CHECK(c.rank == out.rank, op, "c.rank must equal out.rank (", out.rank, "), got ", c.rank);
  for (int d = 0; d < c.rank; ++d) {
    TGEMM_CHECK(c.sizes[d] == out.sizes[d], op, "c.size(", d, ") must equal out.size(", d, "), got ", c.sizes[d],
                " vs ", out.sizes[d]);
  }
  check_extent(c, "c", op);
  TGEMM_CHECK(n <= 1 || c.stride(-1) == 1, op, "c.stride(-1) must be 1, got ", c.stride(-1), " for c ", shape_str(c),
              " strides ", strides_str(c));
  const std::int64_t ldc = row_stride(c, "c", n, m, op);
  TGEMM_CHECK(m <= 1 || ldc >= n, op, "c row stride must be >= N (", n, "), got ", ldc);
  check_element_alignment(c, "c", op);
  bool c_is_out = c.data == out.data;
  for (int d = 0; d < c.rank && c_is_out; ++d) c_is_out = c.strides[d] == out.strides[d];
  if (!c_is_out) {
    std::string both = overlap(out, "out", c, "c");
    TGEMM_CHECK(both.empty(), op, "c must be out itself or not overlap it: ", both);
  }
  return ldc;
}

// Element alignment, and out aliasing no input: kernels read the inputs while writing out.
void check_alignment_and_aliasing(const TensorView& x, const TensorView& w, const TensorView& out,
                                  const TensorView* bias, std::string_view op, const char* xn = "x",
                                  const char* wn = "w") {
  check_element_alignment(x, xn, op);
  check_element_alignment(w, wn, op);
  check_element_alignment(out, "out", op);
  if (bias) check_element_alignment(*bias, "bias", op);
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&x, xn}, {&w, wn}, {bias, "bias"}}) {
    if (t == nullptr) continue;
    std::string both = overlap(out, "out", *t, name);
    TGEMM_CHECK(both.empty(), op, "out must not overlap ", name, ": ", both);
  }
}

// The names of the a8w8 operands in messages: gemm_a8w8's x, w, x_scale, w_scale, or
// batched_gemm_a8w8's a, b, a_scale, b_scale.
struct A8W8Names {
  const char* x = "x";
  const char* w = "w";
  const char* xs = "x_scale";
  const char* ws = "w_scale";
};

// a8w8: null pointers, then the dtypes of the operands, out, bias and scales. `blockscale`:
// FP8 only, and a block-scale tensor without elements (K = 0) may have no data.
void check_a8w8_pointers_and_dtypes(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                    const TensorView& w_scale, const TensorView& out, const TensorView* bias,
                                    bool blockscale, std::string_view op, const A8W8Names& nm = {}) {
  TGEMM_CHECK(x.data != nullptr || x.numel() == 0, op, nm.x, ".data must not be null (", nm.x, " is ", shape_str(x),
              ")");
  TGEMM_CHECK(w.data != nullptr || w.numel() == 0, op, nm.w, ".data must not be null (", nm.w, " is ", shape_str(w),
              ")");
  TGEMM_CHECK(x_scale.data != nullptr || (blockscale && x_scale.numel() == 0), op, nm.xs, ".data must not be null (",
              nm.xs, " is ", shape_str(x_scale), ")");
  TGEMM_CHECK(w_scale.data != nullptr || (blockscale && w_scale.numel() == 0), op, nm.ws, ".data must not be null (",
              nm.ws, " is ", shape_str(w_scale), ")");
  TGEMM_CHECK(out.data != nullptr || out.numel() == 0, op, "out.data must not be null (out is ", shape_str(out), ")");
  if (bias) {
    TGEMM_CHECK(bias->data != nullptr || bias->numel() == 0, op,
                "bias.data must not be null when a bias is given (bias is ", shape_str(*bias), ")");
  }
  TGEMM_CHECK(x.dtype != DType::kFloat8E5M2, op, nm.x,
              ".dtype torch.float8_e5m2 is not supported (Hopper's FP8 GEMMs take e5m2 only against an e4m3 "
              "operand): quantize to torch.float8_e4m3fn");
  TGEMM_CHECK(!blockscale || x.dtype == DType::kFloat8E4M3, op, nm.x,
              ".dtype must be torch.float8_e4m3fn (block scales are an FP8 recipe), got ", dtype_name(x.dtype));
  TGEMM_CHECK(x.dtype == DType::kFloat8E4M3 || x.dtype == DType::kInt8, op, nm.x,
              ".dtype must be torch.float8_e4m3fn or torch.int8, got ", dtype_name(x.dtype));
  TGEMM_CHECK(w.dtype == x.dtype, op, nm.w, ".dtype must equal ", nm.x, ".dtype (", dtype_name(x.dtype),
              "): fp8 and int8 operands do not mix, got ", dtype_name(w.dtype));
  TGEMM_CHECK(out.dtype == DType::kBFloat16 || out.dtype == DType::kFloat16 || out.dtype == DType::kFloat32, op,
              "out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got ", dtype_name(out.dtype));
  if (bias) {
    TGEMM_CHECK(bias->dtype == out.dtype || bias->dtype == DType::kFloat32, op, "bias.dtype must equal out.dtype (",
                dtype_name(out.dtype), ") or be torch.float32, got ", dtype_name(bias->dtype));
  }
  TGEMM_CHECK(x_scale.dtype == DType::kFloat32, op, nm.xs, ".dtype must be torch.float32, got ",
              dtype_name(x_scale.dtype));
  TGEMM_CHECK(w_scale.dtype == DType::kFloat32, op, nm.ws, ".dtype must be torch.float32, got ",
              dtype_name(w_scale.dtype));
}

// A scale's granularity: one element (per-tensor), or `rows` contiguous elements (per-row:
// [rows], [rows, 1], [1, rows], or the leading dims of x with a trailing 1).
ScaleGranularity scale_granularity(const TensorView& s, const char* name, std::int64_t rows, const char* rows_name,
                                   const char* per_row, std::string_view op) {
  check_rank_and_sizes(s, name, op);
  const std::int64_t numel = s.numel();
  if (numel == 1) return ScaleGranularity::kTensor;
  TGEMM_CHECK(numel == rows, op, name, " must have 1 element (per-tensor) or ", rows_name, " = ", rows, " elements (",
              per_row, "), got shape ", shape_str(s));
  std::int64_t expected = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    if (s.sizes[d] == 1) continue;
    TGEMM_CHECK(s.strides[d] == expected, op, name, " must be contiguous, got shape ", shape_str(s), " strides ",
                strides_str(s));
    expected *= s.sizes[d];
  }
  return ScaleGranularity::kRow;
}

// The problem and arguments every dense family's checked call shares: dims, types, bias, row
// strides, alignments, pointers. `no_bias_type` is the bias dtype recorded when there is none.
GemmCall checked_call(OpFamily family, const GemmDims& dims, const RowStrides& ld, const TensorView& x,
                      const TensorView& w, const TensorView& out, const TensorView* bias, DType no_bias_type) {
  GemmCall call;
  GemmProblem& p = call.problem;
  p.family = family;
  p.m = dims.m;
  p.n = dims.n;
  p.k = dims.k;
  p.a_type = x.dtype;
  p.b_type = w.dtype;
  p.out_type = out.dtype;
  p.epilogue = bias ? Epilogue::kBias : Epilogue::kNone;
  p.bias_type = bias ? bias->dtype : no_bias_type;
  p.lda = std::max<std::int64_t>(ld.lda, 1);
  p.ldb = std::max<std::int64_t>(ld.ldb, 1);
  p.ldo = std::max<std::int64_t>(ld.ldo, 1);
  p.align_a = address_alignment(x.data);
  p.align_b = address_alignment(w.data);
  p.align_out = address_alignment(out.data);
  p.align_bias = bias ? address_alignment(bias->data) : 16;
  call.args.a = x.data;
  call.args.b = w.data;
  call.args.out = out.data;
  call.args.bias = bias ? bias->data : nullptr;
  return call;
}

}  // namespace

namespace {

// The checks gemm_a8w8 and gemm_a8w8_blockscale share before their scales' shapes: ranks, pointers
// and dtypes, shapes and their agreement, row layouts, 16-byte rows.
struct A8W8Operands {
  GemmDims dims;
  RowStrides ld;
};
A8W8Operands check_a8w8_operands(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                 const TensorView& w_scale, const TensorView& out, const TensorView* bias,
                                 bool blockscale, std::string_view op) {
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&x, "x"},
                         {&w, "w"},
                         {&x_scale, "x_scale"},
                         {&w_scale, "w_scale"},
                         {&out, "out"},
                         {bias, "bias"}}) {
    if (t == nullptr) continue;
    const int min_rank = (t == &x_scale || t == &w_scale) ? 0 : 1;
    TGEMM_CHECK(t->rank >= min_rank && t->rank <= kMaxRank, op, name, ".rank must be in [", min_rank, ", ", kMaxRank,
                "], got ", t->rank);
  }
  check_a8w8_pointers_and_dtypes(x, w, x_scale, w_scale, out, bias, blockscale, op);
  A8W8Operands o;
  o.dims = check_shapes(x, w, out, bias, op);
  o.ld = check_layout(x, w, out, bias, o.dims, op);
  // 16-byte rows: Hopper's TMA copies (and cuBLASLt's FP8 and IMMA kernels) move operand rows in
  // 16-byte units, so K and the row strides of x and w are multiples of 16 one-byte elements.
  TGEMM_CHECK(o.dims.k % 16 == 0, op, "K (x.size(-1)) must be a multiple of 16 for ", dtype_name(x.dtype),
              " operands (16-byte rows for TMA), got ", o.dims.k);
  TGEMM_CHECK(o.dims.m <= 1 || o.dims.k == 0 || o.ld.lda % 16 == 0, op, "x row stride must be a multiple of 16 for ",
              dtype_name(x.dtype), " operands, got ", o.ld.lda);
  TGEMM_CHECK(o.dims.n <= 1 || o.dims.k == 0 || o.ld.ldb % 16 == 0, op, "w.stride(0) must be a multiple of 16 for ",
              dtype_name(x.dtype), " operands, got ", o.ld.ldb);
  return o;
}

// After the scales' shapes: their alignment, the operands', nothing overlapping out; then the
// problem and arguments of the call with the scale pointers set.
GemmCall a8w8_call(OpFamily family, const A8W8Operands& o, const TensorView& x, const TensorView& w,
                   const TensorView& x_scale, const TensorView& w_scale, const TensorView& out, const TensorView* bias,
                   std::string_view op) {
  check_element_alignment(x_scale, "x_scale", op);
  check_element_alignment(w_scale, "w_scale", op);
  check_alignment_and_aliasing(x, w, out, bias, op);
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&x_scale, "x_scale"}, {&w_scale, "w_scale"}}) {
    std::string both = overlap(out, "out", *t, name);
    TGEMM_CHECK(both.empty(), op, "out must not overlap ", name, ": ", both);
  }
  GemmCall call = checked_call(family, o.dims, o.ld, x, w, out, bias, out.dtype);
  call.problem.align_scales = std::min(address_alignment(x_scale.data), address_alignment(w_scale.data));
  call.args.a_scale = static_cast<const float*>(x_scale.data);
  call.args.b_scale = static_cast<const float*>(w_scale.data);
  return call;
}

}  // namespace

GemmCall validate_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
                       const TensorView& out, const TensorView* bias, std::string_view op) {
  const A8W8Operands o = check_a8w8_operands(x, w, x_scale, w_scale, out, bias, false, op);
  const ScaleGranularity xs = scale_granularity(x_scale, "x_scale", o.dims.m, "M", "per-token: [M, 1]", op);
  const ScaleGranularity ws = scale_granularity(w_scale, "w_scale", o.dims.n, "N", "per-channel: [N, 1]", op);
  GemmCall call = a8w8_call(OpFamily::kA8W8, o, x, w, x_scale, w_scale, out, bias, op);
  call.problem.a_scale = xs;
  call.problem.b_scale = ws;
  return call;
}

GemmCall validate_a8w8_blockscale(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                  const TensorView& w_scale, const TensorView& out, const TensorView* bias,
                                  std::string_view op) {
  const A8W8Operands o = check_a8w8_operands(x, w, x_scale, w_scale, out, bias, true, op);
  const std::int64_t kb = (o.dims.k + 127) / 128, nb = (o.dims.n + 127) / 128;
  check_rank_and_sizes(x_scale, "x_scale", op);
  check_rank_and_sizes(w_scale, "w_scale", op);
  const BlockScaleLayout xl =
      check_block_scale_layout(x_scale, "x_scale", o.dims.m, kb, "[M, ceil(K / 128)]", true, op);
  const BlockScaleLayout wl =
      check_block_scale_layout(w_scale, "w_scale", nb, kb, "[ceil(N / 128), ceil(K / 128)]", false, op);
  GemmCall call = a8w8_call(OpFamily::kA8W8Blockscale, o, x, w, x_scale, w_scale, out, bias, op);
  GemmProblem& p = call.problem;
  p.a_scale = p.b_scale = ScaleGranularity::kBlock;
  p.a_scale_mn_major = xl.mn_major;
  p.ld_a_scale = std::max<std::int64_t>(xl.ld, 1);
  p.ld_b_scale = std::max<std::int64_t>(wl.ld, 1);
  return call;
}

GemmCall validate_a16w16(const TensorView& x, const TensorView& w, const TensorView& out, const GemmOptions& options,
                         std::string_view op) {
  const TensorView* bias = options.bias;
  const TensorView* c = options.c;
  check_ranks_and_options(x, w, out, options, op);
  check_pointers_and_dtypes(x, w, out, bias, op);
  const GemmDims dims = check_shapes(x, w, out, bias, op);
  const RowStrides ld = check_layout(x, w, out, bias, dims, op);
  const std::int64_t ldc = c ? check_c(*c, out, dims, op) : 0;
  check_alignment_and_aliasing(x, w, out, bias, op);

  GemmCall call = checked_call(OpFamily::kA16W16, dims, ld, x, w, out, bias, x.dtype);
  GemmProblem& p = call.problem;
  p.activation = options.activation;
  p.unit_alpha = options.alpha == 1.0f;
  p.use_c = options.beta != 0.0f;
  if (p.use_c) {
    p.ldc = std::max<std::int64_t>(ldc, 1);
    p.align_c = address_alignment(c->data);
    call.args.c = c->data;
  }
  call.args.alpha = options.alpha;
  call.args.beta = options.beta;
  return call;
}

namespace {

// One batched_gemm operand [B, rows, cols] as stored: contiguous rows of `cols` elements that do
// not overlap; returns the row stride (cols where there is no row step to take).
std::int64_t check_batched_rows(const TensorView& t, const char* name, const char* layout, std::string_view op) {
  const std::int64_t rows = t.size(1), cols = t.size(2);
  TGEMM_CHECK(cols <= 1 || t.stride(2) == 1, op, name, ".stride(2) must be 1 (", name, " is stored ", layout,
              " with contiguous rows; pass the stored tensor and the transpose flag, not a transposed view), got ",
              name, " ", shape_str(t), " strides ", strides_str(t));
  TGEMM_CHECK(rows <= 1 || t.stride(1) >= cols, op, name, ".stride(1) must be >= ", name, ".size(2) (", cols, ") for ",
              name, " stored ", layout, ", got strides ", strides_str(t));
  return rows <= 1 ? std::max<std::int64_t>(cols, 1) : t.stride(1);
}

// No two elements of t share an address: the dims of more than one element, in stride order, each
// step past the span of the smaller ones (so padded and interleaved batches pass).
bool distinct_elements(const TensorView& t) {
  for (int d = 0; d < t.rank; ++d) {
    if (t.sizes[d] == 0) return true;  // no elements, nothing to overlap
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, size)
  for (int d = 0; d < t.rank; ++d) {
    if (t.sizes[d] > 1) dims.emplace_back(t.strides[d], t.sizes[d]);
  }
  std::sort(dims.begin(), dims.end());
  __int128 span = 0;  // largest offset the smaller dims reach
  for (auto [stride, size] : dims) {
    if (stride <= span) return false;
    span += static_cast<__int128>(size - 1) * stride;
  }
  return true;
}

}  // namespace

namespace {

void check_batched_ranks(const TensorView& a, const TensorView& b, const TensorView& out, const TensorView* bias,
                         std::string_view op) {
  for (auto [t, name, rank] : {std::tuple<const TensorView*, const char*, int>{&a, "a", 3},
                               {&b, "b", 3},
                               {&out, "out", 3},
                               {bias, "bias", 1}}) {
    if (t == nullptr) continue;
    TGEMM_CHECK(t->rank == rank, op, name, " must have rank ", rank, ", got ", t->rank, " (sizes ",
                t->rank >= 0 && t->rank <= kMaxRank ? shape_str(*t) : std::string("?"), ")");
    check_rank_and_sizes(*t, name, op);
    check_extent(*t, name, op);
  }
}

struct BatchedDims {
  std::int64_t batch = 0;
  GemmDims dims;
  RowStrides ld;
};

// Shapes and their agreement, contiguous rows, out's elements distinct (batched_gemm and
// batched_gemm_a8w8).
BatchedDims check_batched_layout(const TensorView& a, const TensorView& b, const TensorView& out,
                                 const TensorView* bias, bool transpose_a, bool transpose_b, std::string_view op) {
  const char* a_layout = transpose_a ? "[B, K, M] (transpose_a=true)" : "[B, M, K] (transpose_a=false)";
  const char* b_layout = transpose_b ? "[B, N, K] (transpose_b=true)" : "[B, K, N] (transpose_b=false)";
  const std::int64_t batch = a.size(0);
  const std::int64_t m = transpose_a ? a.size(2) : a.size(1), k = transpose_a ? a.size(1) : a.size(2);
  const std::int64_t b_k = transpose_b ? b.size(2) : b.size(1), n = transpose_b ? b.size(1) : b.size(2);
  TGEMM_CHECK(b.size(0) == batch, op, "b.size(0) must equal a.size(0) (B), got ", b.size(0), " vs ", batch,
              " (a broadcast batch is a stride of 0, with the size of the batch)");
  TGEMM_CHECK(b_k == k, op, "K of b ", b_layout, " must equal K of a ", a_layout, ", got ", b_k, " vs ", k, " (a ",
              shape_str(a), ", b ", shape_str(b), ")");
  TGEMM_CHECK(out.size(0) == batch && out.size(1) == m && out.size(2) == n, op, "out must have shape [B, M, N] = [",
              batch, ", ", m, ", ", n, "], got ", shape_str(out));
  if (bias) TGEMM_CHECK(bias->size(0) == n, op, "bias.size(0) must equal N (", n, "), got ", bias->size(0));
  for (auto [v, name] : {std::pair<std::int64_t, const char*>{batch, "B"}, {m, "M"}, {n, "N"}, {k, "K"}}) {
    TGEMM_CHECK(v <= kMaxDim, op, name, " must be at most ", kMaxDim, ", got ", v);
  }
  BatchedDims d;
  d.batch = batch;
  d.dims = GemmDims{m, n, k};
  d.ld.lda = check_batched_rows(a, "a", a_layout, op);
  d.ld.ldb = check_batched_rows(b, "b", b_layout, op);
  d.ld.ldo = check_batched_rows(out, "out", "[B, M, N]", op);
  if (bias) TGEMM_CHECK(n <= 1 || bias->stride(0) == 1, op, "bias.stride(0) must be 1, got ", bias->stride(0));
  TGEMM_CHECK(batch <= 1 || m * n == 0 || out.stride(0) != 0, op,
              "out.stride(0) must not be 0: each of the B products writes its own [M, N] (B = ", batch, ")");
  TGEMM_CHECK(distinct_elements(out), op, "out's elements must not overlap each other, got out ", shape_str(out),
              " strides ", strides_str(out));
  return d;
}

// The batch of a checked call: count, layouts, batch strides and the alignments they leave.
void set_batch(GemmProblem& p, std::int64_t batch, const TensorView& a, const TensorView& b, const TensorView& out,
               bool transpose_a, bool transpose_b) {
  p.batch = batch;
  p.transpose_a = transpose_a;
  p.transpose_b = transpose_b;
  // One product: the stride is never stepped, so every such call has the dense value (one key, one
  // cached resolution).
  p.batch_stride_a = batch <= 1 ? a.size(1) * p.lda : a.stride(0);
  p.batch_stride_b = batch <= 1 ? b.size(1) * p.ldb : b.stride(0);
  p.batch_stride_out = batch <= 1 ? p.m * p.ldo : out.stride(0);
  // Product i's matrices start i batch strides past the base: the alignment kernels may assume
  // (cuBLASLt's vector loads) is the base's and the stride's. One product never steps its stride,
  // so its dense value (odd where a dimension of size 1 hides a padded row stride) limits nothing.
  if (batch <= 1) return;
  p.align_a = std::min(p.align_a, stride_alignment(p.batch_stride_a, a.dtype));
  p.align_b = std::min(p.align_b, stride_alignment(p.batch_stride_b, b.dtype));
  p.align_out = std::min(p.align_out, stride_alignment(p.batch_stride_out, out.dtype));
}

// A batched_gemm_a8w8 scale: one element for every product (shared per-tensor, batch stride 0),
// [B] or [B, 1, 1] (per-tensor per product), or [B, rows, 1] (per-row per product, rows
// contiguous). Sets *batch_stride to the floats between the scales of consecutive products.
ScaleGranularity batched_scale_granularity(const TensorView& s, const char* name, std::int64_t batch, std::int64_t rows,
                                           const char* per_row, std::string_view op, std::int64_t& batch_stride) {
  TGEMM_CHECK(s.rank >= 0 && s.rank <= kMaxRank, op, name, ".rank must be in [0, ", kMaxRank, "], got ", s.rank);
  check_rank_and_sizes(s, name, op);
  batch_stride = 0;
  if (s.numel() == 1) return ScaleGranularity::kTensor;
  const bool per_batch =
      (s.rank == 1 && s.size(0) == batch) || (s.rank == 3 && s.size(0) == batch && s.size(1) == 1 && s.size(2) == 1);
  const bool row = s.rank == 3 && s.size(0) == batch && s.size(1) == rows && s.size(2) == 1;
  TGEMM_CHECK(per_batch || row, op, name, " must have 1 element (one scale for every product), shape [B] or [B, 1, 1]",
              " (per-tensor per product) or ", per_row, " with B = ", batch, ", got shape ", shape_str(s));
  if (per_batch) {
    batch_stride = batch <= 1 ? 1 : s.stride(0);
    return ScaleGranularity::kTensor;
  }
  TGEMM_CHECK(rows <= 1 || s.stride(1) == 1, op, name, " must be contiguous along dim 1, got shape ", shape_str(s),
              " strides ", strides_str(s));
  batch_stride = batch <= 1 ? rows : s.stride(0);
  return ScaleGranularity::kRow;
}

}  // namespace

GemmCall validate_batched(const TensorView& a, const TensorView& b, const TensorView& out, bool transpose_a,
                          bool transpose_b, const TensorView* bias, std::string_view op) {
  check_batched_ranks(a, b, out, bias, op);
  check_pointers_and_dtypes(a, b, out, bias, op, "a", "b");
  const BatchedDims d = check_batched_layout(a, b, out, bias, transpose_a, transpose_b, op);
  check_alignment_and_aliasing(a, b, out, bias, op, "a", "b");
  GemmCall call = checked_call(OpFamily::kBatched, d.dims, d.ld, a, b, out, bias, a.dtype);
  set_batch(call.problem, d.batch, a, b, out, transpose_a, transpose_b);
  return call;
}

GemmCall validate_batched_a8w8(const TensorView& a, const TensorView& b, const TensorView& a_scale,
                               const TensorView& b_scale, const TensorView& out, const TensorView* bias,
                               std::string_view op) {
  check_batched_ranks(a, b, out, bias, op);
  const A8W8Names names{"a", "b", "a_scale", "b_scale"};
  check_a8w8_pointers_and_dtypes(a, b, a_scale, b_scale, out, bias, false, op, names);
  const BatchedDims d = check_batched_layout(a, b, out, bias, false, true, op);
  const GemmDims& dims = d.dims;
  // 16-byte rows, as gemm_a8w8: cuBLASLt's FP8 and IMMA kernels move operand rows in 16-byte units.
  TGEMM_CHECK(dims.k % 16 == 0, op, "K (a.size(2)) must be a multiple of 16 for ", dtype_name(a.dtype),
              " operands (16-byte rows), got ", dims.k);
  TGEMM_CHECK(dims.m <= 1 || dims.k == 0 || d.ld.lda % 16 == 0, op, "a.stride(1) must be a multiple of 16 for ",
              dtype_name(a.dtype), " operands, got ", d.ld.lda);
  TGEMM_CHECK(dims.n <= 1 || dims.k == 0 || d.ld.ldb % 16 == 0, op, "b.stride(1) must be a multiple of 16 for ",
              dtype_name(a.dtype), " operands, got ", d.ld.ldb);
  std::int64_t a_scale_stride = 0, b_scale_stride = 0;
  const ScaleGranularity as =
      batched_scale_granularity(a_scale, "a_scale", d.batch, dims.m, "[B, M, 1] (per-token)", op, a_scale_stride);
  const ScaleGranularity bs =
      batched_scale_granularity(b_scale, "b_scale", d.batch, dims.n, "[B, N, 1] (per-channel)", op, b_scale_stride);
  check_element_alignment(a_scale, "a_scale", op);
  check_element_alignment(b_scale, "b_scale", op);
  check_alignment_and_aliasing(a, b, out, bias, op, "a", "b");
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&a_scale, "a_scale"}, {&b_scale, "b_scale"}}) {
    std::string both = overlap(out, "out", *t, name);
    TGEMM_CHECK(both.empty(), op, "out must not overlap ", name, ": ", both);
  }
  GemmCall call = checked_call(OpFamily::kA8W8Batched, dims, d.ld, a, b, out, bias, out.dtype);
  GemmProblem& p = call.problem;
  set_batch(p, d.batch, a, b, out, false, true);
  p.a_scale = as;
  p.b_scale = bs;
  p.batch_stride_a_scale = a_scale_stride;
  p.batch_stride_b_scale = b_scale_stride;
  p.align_scales = std::min(address_alignment(a_scale.data), address_alignment(b_scale.data));
  call.args.a_scale = static_cast<const float*>(a_scale.data);
  call.args.b_scale = static_cast<const float*>(b_scale.data);
  return call;
}

}  // namespace tgemm

namespace tgemm {
namespace {

void check_gmm_dtypes(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes,
                      const TensorView& out, const TensorView* bias, std::string_view op) {
  TGEMM_CHECK(lhs.dtype == DType::kBFloat16 || lhs.dtype == DType::kFloat16, op,
              "lhs.dtype must be torch.bfloat16 or torch.float16, got ", dtype_name(lhs.dtype));
  TGEMM_CHECK(rhs.dtype == lhs.dtype, op, "rhs.dtype must equal lhs.dtype (", dtype_name(lhs.dtype), "), got ",
              dtype_name(rhs.dtype));
  TGEMM_CHECK(group_sizes.dtype == DType::kInt32, op, "group_sizes.dtype must be torch.int32, got ",
              dtype_name(group_sizes.dtype));
  TGEMM_CHECK(out.dtype == lhs.dtype || out.dtype == DType::kFloat32, op, "out.dtype must be lhs.dtype (",
              dtype_name(lhs.dtype), ") or torch.float32, got ", dtype_name(out.dtype));
  if (bias) {
    TGEMM_CHECK(bias->dtype == lhs.dtype || bias->dtype == DType::kFloat32, op, "bias.dtype must be lhs.dtype (",
                dtype_name(lhs.dtype), ") or torch.float32, got ", dtype_name(bias->dtype));
  }
}

}  // namespace

// A row-major matrix view [rows, cols]: unit column stride and rows that do not overlap; size-1
// dimensions may carry any stride (torch gives them arbitrary ones).
std::int64_t check_rows(const TensorView& t, int row_dim, const char* name, std::string_view op) {
  const std::int64_t rows = t.size(row_dim), cols = t.size(row_dim + 1);
  TGEMM_CHECK(cols <= 1 || t.stride(row_dim + 1) == 1, op, name, ".stride(", row_dim + 1,
              ") must be 1 (contiguous last dimension), got strides ", strides_str(t));
  TGEMM_CHECK(rows <= 1 || t.stride(row_dim) >= cols, op, name, ".stride(", row_dim, ") must be >= ", name, ".size(",
              row_dim + 1, ") (", cols, ") so rows do not overlap, got strides ", strides_str(t));
  return rows <= 1 ? std::max<std::int64_t>(cols, 1) : t.stride(row_dim);
}

GmmCall validate_gmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
                     bool transpose_rhs, const TensorView* bias, std::string_view op) {
  for (auto [t, name, rank] : {std::tuple<const TensorView*, const char*, int>{&lhs, "lhs", 2},
                               {&rhs, "rhs", 3},
                               {&group_sizes, "group_sizes", 1},
                               {&out, "out", 2},
                               {bias, "bias", 2}}) {
    if (t == nullptr) continue;
    TGEMM_CHECK(t->rank == rank, op, name, " must have rank ", rank, ", got ", t->rank, " (sizes ",
                t->rank >= 0 && t->rank <= kMaxRank ? shape_str(*t) : std::string("?"), ")");
    check_rank_and_sizes(*t, name, op);
    check_extent(*t, name, op);
    TGEMM_CHECK(t->data != nullptr || t->numel() == 0, op, name, ".data must not be null (", t->numel(), " elements)");
  }
  check_gmm_dtypes(lhs, rhs, group_sizes, out, bias, op);

  const std::int64_t m = lhs.size(0), k = lhs.size(1), g = rhs.size(0);
  const char* k_dim = transpose_rhs ? "rhs.size(2)" : "rhs.size(1)";
  const std::int64_t rhs_k = transpose_rhs ? rhs.size(2) : rhs.size(1);
  const std::int64_t n = transpose_rhs ? rhs.size(1) : rhs.size(2);
  const char* layout = transpose_rhs ? " (rhs [G, N, K], transpose_rhs=true)" : " (rhs [G, K, N], transpose_rhs=false)";
  TGEMM_CHECK(rhs_k == k, op, k_dim, " must equal lhs.size(1) (K)", layout, ", got ", rhs_k, " vs ", k);
  TGEMM_CHECK(group_sizes.size(0) == g, op, "group_sizes.size(0) must equal rhs.size(0) (G), got ", group_sizes.size(0),
              " vs ", g);
  TGEMM_CHECK(g <= std::numeric_limits<std::int32_t>::max(), op, "G (rhs.size(0)) must fit in int32, got ", g);
  if (bias) {
    TGEMM_CHECK(bias->size(0) == g && bias->size(1) == n, op, "bias must have shape [G, N] = [", g, ", ", n, "], got ",
                shape_str(*bias));
  }
  TGEMM_CHECK(out.size(0) == m && out.size(1) == n, op, "out must have shape [M, N] = [", m, ", ", n, "], got ",
              shape_str(out));
  TGEMM_CHECK(m <= kMaxDim && k <= kMaxDim, op, "M and K must be <= ", kMaxDim, ", got M=", m, " K=", k);
  TGEMM_CHECK(n <= kGmmMaxN, op, "N must be <= ", kGmmMaxN, " (column tiles of 64 on the grid's y axis), got ", n);
  // The kernel's grid.x holds every group's row tiles: ceil(M / 64) + G + 1 (gridDim.x < 2^31).
  TGEMM_CHECK((m + 63) / 64 + g + 1 <= std::numeric_limits<std::int32_t>::max(), op,
              "ceil(M / 64) + G + 1 must fit in int32 (row tiles of the grid), got M=", m, " G=", g);

  GmmCall call;
  GmmProblem& p = call.problem;
  p.lda = check_rows(lhs, 0, "lhs", op);
  p.ldo = check_rows(out, 0, "out", op);
  p.rhs_row_stride = check_rows(rhs, 1, "rhs", op);
  const std::int64_t group_elems = rhs.size(1) * p.rhs_row_stride;
  TGEMM_CHECK(g <= 1 || rhs.size(1) == 0 || rhs.stride(0) >= group_elems, op,
              "rhs.stride(0) must be >= rhs.size(1) * rhs.stride(1) (", group_elems,
              ") so groups do not overlap, got strides ", strides_str(rhs));
  TGEMM_CHECK(g <= 1 || group_sizes.stride(0) == 1, op, "group_sizes must be contiguous, got stride ",
              group_sizes.stride(0));
  if (bias) p.bias_stride = check_rows(*bias, 0, "bias", op);
  check_element_alignment(lhs, "lhs", op);
  check_element_alignment(rhs, "rhs", op);
  check_element_alignment(group_sizes, "group_sizes", op);
  check_element_alignment(out, "out", op);
  if (bias) check_element_alignment(*bias, "bias", op);
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&lhs, "lhs"},
                         {&rhs, "rhs"},
                         {&group_sizes, "group_sizes"},
                         {bias, "bias"}}) {
    if (t == nullptr) continue;
    std::string both = overlap(out, "out", *t, name);
    TGEMM_CHECK(both.empty(), op, "out must not overlap ", name, ": ", both);
  }

  p.m = m;
  p.n = n;
  p.k = k;
  p.groups = g;
  p.in_type = lhs.dtype;
  p.out_type = out.dtype;
  p.has_bias = bias != nullptr;
  p.bias_type = bias ? bias->dtype : lhs.dtype;
  p.transpose_rhs = transpose_rhs;
  p.rhs_group_stride = g <= 1 ? group_elems : rhs.stride(0);
  call.args.lhs = lhs.data;
  call.args.rhs = rhs.data;
  call.args.group_sizes = static_cast<const std::int32_t*>(group_sizes.data);
  call.args.bias = bias ? bias->data : nullptr;
  call.args.out = out.data;
  return call;
}

}  // namespace tgemm
