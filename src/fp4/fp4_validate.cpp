#include "fp4/fp4_validate.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/validate.h"
#include "tgemm/fp4.h"

namespace tgemm {
namespace {

// Rows and columns are indexed with int32 in the kernels' grids.
constexpr std::int64_t kMaxDim = std::numeric_limits<std::int32_t>::max();

void check_view(const TensorView& t, const char* name, int lo, int hi, const char* what, std::string_view op) {
  TGEMM_CHECK(t.rank >= lo && t.rank <= hi, op, name, " must be ", what, ", got rank ", t.rank);
  check_rank_and_sizes(t, name, op);
  check_extent(t, name, op);
  TGEMM_CHECK(t.data != nullptr || t.numel() == 0, op, name, ".data must not be null (", name, " is ", shape_str(t),
              ")");
  check_element_alignment(t, name, op);
}

void check_dtype(const TensorView& t, const char* name, DType want, std::string_view op) {
  TGEMM_CHECK(t.dtype == want, op, name, ".dtype must be ", dtype_name(want), ", got ", dtype_name(t.dtype));
}

void check_16bit(const TensorView& t, const char* name, std::string_view op) {
  TGEMM_CHECK(t.dtype == DType::kBFloat16 || t.dtype == DType::kFloat16, op, name,
              ".dtype must be torch.bfloat16 or torch.float16, got ", dtype_name(t.dtype));
}

// M of t flattened to [M, t.size(-1)].
std::int64_t flat_rows(const TensorView& t, const char* name, std::string_view op) {
  std::int64_t m = 1;
  for (int d = 0; d + 1 < t.rank; ++d) {
    if (t.sizes[d] == 0) return 0;
    TGEMM_CHECK(m <= kMaxDim / t.sizes[d], op, name, " has more than 2^31-1 rows after flattening ", shape_str(t));
    m *= t.sizes[d];
  }
  return m;
}

// Row stride of t flattened to [M, cols]: elements of a row contiguous, rows not overlapping.
std::int64_t flat_row_stride(const TensorView& t, const char* name, std::string_view op) {
  const std::int64_t cols = t.size(-1);
  TGEMM_CHECK(cols <= 1 || t.stride(-1) == 1, op, name, " must have contiguous rows (stride(-1) == 1), got strides ",
              strides_str(t));
  const std::int64_t ld = collapsed_row_stride(t, name, op);
  if (ld < 0) return cols;  // one row at most
  TGEMM_CHECK(ld >= cols, op, name, " rows overlap: the row stride ", ld, " is below ", name, ".size(-1) = ", cols,
              " (strides ", strides_str(t), ")");
  return ld;
}

// t has `like`'s leading sizes and `last` elements in its last dim.
void check_like(const TensorView& t, const char* name, const TensorView& like, const char* like_name, std::int64_t last,
                const char* last_text, std::string_view op) {
  bool ok = t.rank == like.rank && t.size(-1) == last;
  for (int d = 0; ok && d + 1 < like.rank; ++d) ok = t.sizes[d] == like.sizes[d];
  TGEMM_CHECK(ok, op, name, " must have ", like_name, "'s leading sizes and ", last_text, " = ", last,
              " in its last dim (", like_name, " is ", shape_str(like), "), got ", shape_str(t));
}

void check_k(std::int64_t k, const char* name, std::string_view op) {
  TGEMM_CHECK(k % kMxfp4Block == 0, op, name, ".size(-1) (K) must be a multiple of 32 (one E8M0 scale per 32 values),",
              " got ", k);
  TGEMM_CHECK(k <= kMaxDim, op, name, ".size(-1) (K) must be at most ", kMaxDim, ", got ", k);
}

void check_disjoint(const TensorView& a, const char* an, const TensorView& b, const char* bn, std::string_view op) {
  const std::string o = overlap(a, an, b, bn);
  TGEMM_CHECK(o.empty(), op, an, " and ", bn, " must not overlap: ", o);
}

// The weight side, out and bias of every W4 GEMM: views first (with x's and x_scale's, done by the
// caller in between), then dtypes, then shapes, in the order of the other entry points.
void check_weight_views(const TensorView& w, const TensorView& w_scale, const TensorView& out, const TensorView* bias,
                        std::string_view op) {
  check_view(w, "w", 2, 2, "2-D [N, K / 2]", op);
  check_view(w_scale, "w_scale", 2, 2, "2-D [N, K / 32]", op);
  check_view(out, "out", 1, kMaxRank, "of x's rank", op);
  if (bias != nullptr) check_view(*bias, "bias", 1, 1, "1-D [N]", op);
}

void check_weight_dtypes(const TensorView& w, const TensorView& w_scale, const TensorView& out, std::string_view op) {
  check_dtype(w, "w", DType::kUInt8, op);
  check_dtype(w_scale, "w_scale", DType::kUInt8, op);
  TGEMM_CHECK(out.dtype == DType::kBFloat16 || out.dtype == DType::kFloat16 || out.dtype == DType::kFloat32, op,
              "out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got ", dtype_name(out.dtype));
}

// gemm_a8w4's and gemm_a4w4's bias: out's dtype or fp32 (as gemm_a8w8's; x has no 16-bit dtype).
void check_bias_out_or_fp32(const TensorView* bias, const TensorView& out, std::string_view op) {
  if (bias == nullptr) return;
  TGEMM_CHECK(bias->dtype == out.dtype || bias->dtype == DType::kFloat32, op, "bias.dtype must be out's (",
              dtype_name(out.dtype), ") or torch.float32, got ", dtype_name(bias->dtype));
}

// w [N, K / 2], w_scale [N, K / 32], out x's leading sizes and N, bias [N]; returns N.
std::int64_t check_weight_shapes(std::int64_t k, const TensorView& x, const TensorView& w, const TensorView& w_scale,
                                 const TensorView& out, const TensorView* bias, std::string_view op) {
  const std::int64_t n = w.size(0);
  TGEMM_CHECK(w.size(1) == k / 2, op, "w.size(1) must be K / 2 = ", k / 2, " (two e2m1 codes a byte; x is ",
              shape_str(x), "), got ", w.size(1));
  TGEMM_CHECK(w_scale.size(0) == n && w_scale.size(1) == k / kMxfp4Block, op, "w_scale must be [N, K / 32] = [", n,
              ", ", k / kMxfp4Block, "], got ", shape_str(w_scale));
  TGEMM_CHECK(n <= kMaxDim, op, "w.size(0) (N) must be at most ", kMaxDim, ", got ", n);
  check_like(out, "out", x, "x", n, "N", op);
  if (bias != nullptr) {
    TGEMM_CHECK(bias->size(0) == n, op, "bias must be [N] = [", n, "], got ", shape_str(*bias));
  }
  return n;
}

// The call of every W4 GEMM once shapes agree: row strides, overlap of out with each input, the
// pointers. x_scale: null for gemm_a16w4; its stride is the caller's to set.
W4GemmCall w4_call(std::int64_t k, std::int64_t n, const TensorView& x, const TensorView* x_scale, const TensorView& w,
                   const TensorView& w_scale, const TensorView& out, const TensorView* bias, std::string_view op) {
  W4GemmCall c;
  c.m = flat_rows(x, "x", op);
  c.n = n;
  c.k = k;
  c.ldx = flat_row_stride(x, "x", op);
  c.ldw = check_rows(w, 0, "w", op);
  c.ld_scale = check_rows(w_scale, 0, "w_scale", op);
  c.ldo = flat_row_stride(out, "out", op);
  for (auto [t, name] : {std::pair<const TensorView*, const char*>{&x, "x"},
                         {x_scale, "x_scale"},
                         {&w, "w"},
                         {&w_scale, "w_scale"},
                         {bias, "bias"}}) {
    if (t != nullptr) check_disjoint(out, "out", *t, name, op);
  }
  c.x = x.data;
  c.x_type = x.dtype;
  if (x_scale != nullptr) c.x_scale = x_scale->data;
  c.w = static_cast<const std::uint8_t*>(w.data);
  c.w_scale = static_cast<const std::uint8_t*>(w_scale.data);
  c.out = out.data;
  c.out_type = out.dtype;
  if (bias != nullptr) {
    c.bias = bias->data;
    c.bias_type = bias->dtype;
  }
  return c;
}

// gemm_a8w4's x_scale: 1 element (per-tensor, stride 0) or M contiguous elements (per-token,
// stride 1); size-1 dims may carry any stride.
std::int64_t per_token_scale_stride(const TensorView& s, std::int64_t m, std::string_view op) {
  if (s.numel() == 1) return 0;
  TGEMM_CHECK(s.numel() == m, op, "x_scale must have 1 element (per-tensor) or M = ", m,
              " elements (per-token: [M, 1]), got shape ", shape_str(s));
  std::int64_t expected = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    if (s.sizes[d] == 1) continue;
    TGEMM_CHECK(s.strides[d] == expected, op, "x_scale must be contiguous, got shape ", shape_str(s), " strides ",
                strides_str(s));
    expected *= s.sizes[d];
  }
  return 1;
}

}  // namespace

Mxfp4QuantCall validate_quant_mxfp4(const TensorView& x, const TensorView& q, const TensorView& scale,
                                    std::string_view op) {
  check_view(x, "x", 2, kMaxRank, "of rank 2 or more ([..., K])", op);
  check_view(q, "q", 1, kMaxRank, "of x's rank", op);
  check_view(scale, "scale", 1, kMaxRank, "of x's rank", op);
  check_16bit(x, "x", op);
  check_dtype(q, "q", DType::kUInt8, op);
  check_dtype(scale, "scale", DType::kUInt8, op);
  const std::int64_t k = x.size(-1);
  check_k(k, "x", op);
  check_like(q, "q", x, "x", k / 2, "K / 2", op);
  check_like(scale, "scale", x, "x", k / kMxfp4Block, "K / 32", op);

  Mxfp4QuantCall c;
  c.m = flat_rows(x, "x", op);
  c.k = k;
  c.ldx = flat_row_stride(x, "x", op);
  c.ldq = flat_row_stride(q, "q", op);
  c.ld_scale = flat_row_stride(scale, "scale", op);
  check_disjoint(x, "x", q, "q", op);
  check_disjoint(x, "x", scale, "scale", op);
  check_disjoint(q, "q", scale, "scale", op);
  c.x = x.data;
  c.x_type = x.dtype;
  c.q = static_cast<std::uint8_t*>(q.data);
  c.scale = static_cast<std::uint8_t*>(scale.data);
  return c;
}

W4GemmCall validate_a16w4(const TensorView& x, const TensorView& w, const TensorView& w_scale, const TensorView& out,
                          const TensorView* bias, std::string_view op) {
  check_view(x, "x", 2, kMaxRank, "of rank 2 or more ([..., K])", op);
  check_weight_views(w, w_scale, out, bias, op);
  check_16bit(x, "x", op);
  check_weight_dtypes(w, w_scale, out, op);
  if (bias != nullptr) {
    TGEMM_CHECK(bias->dtype == x.dtype || bias->dtype == out.dtype, op, "bias.dtype must be x's (", dtype_name(x.dtype),
                ") or out's (", dtype_name(out.dtype), "), got ", dtype_name(bias->dtype));
  }
  const std::int64_t k = x.size(-1);
  check_k(k, "x", op);
  const std::int64_t n = check_weight_shapes(k, x, w, w_scale, out, bias, op);
  return w4_call(k, n, x, nullptr, w, w_scale, out, bias, op);
}

W4GemmCall validate_a8w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
                         const TensorView& out, const TensorView* bias, std::string_view op) {
  check_view(x, "x", 2, kMaxRank, "of rank 2 or more ([..., K])", op);
  check_view(x_scale, "x_scale", 0, kMaxRank, "of rank 6 or less", op);
  check_weight_views(w, w_scale, out, bias, op);
  TGEMM_CHECK(x.dtype == DType::kFloat8E4M3, op, "x.dtype must be torch.float8_e4m3fn, got ", dtype_name(x.dtype));
  TGEMM_CHECK(x_scale.dtype == DType::kFloat32, op,
              "x_scale.dtype must be torch.float32 (one scale per tensor or per token), got ",
              dtype_name(x_scale.dtype));
  check_weight_dtypes(w, w_scale, out, op);
  check_bias_out_or_fp32(bias, out, op);
  const std::int64_t k = x.size(-1);
  check_k(k, "x", op);
  const std::int64_t n = check_weight_shapes(k, x, w, w_scale, out, bias, op);
  const std::int64_t ld_x_scale = per_token_scale_stride(x_scale, flat_rows(x, "x", op), op);
  W4GemmCall c = w4_call(k, n, x, &x_scale, w, w_scale, out, bias, op);
  c.ld_x_scale = ld_x_scale;
  return c;
}

W4GemmCall validate_a4w4(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
                         const TensorView& out, const TensorView* bias, std::string_view op) {
  check_view(x, "x", 2, kMaxRank, "of rank 2 or more ([..., K / 2])", op);
  check_view(x_scale, "x_scale", 2, kMaxRank, "of x's rank ([..., K / 32])", op);
  check_weight_views(w, w_scale, out, bias, op);
  TGEMM_CHECK(x.dtype == DType::kUInt8, op, "x.dtype must be torch.uint8 (two e2m1 codes a byte), got ",
              dtype_name(x.dtype));
  TGEMM_CHECK(x_scale.dtype == DType::kUInt8, op, "x_scale.dtype must be torch.uint8 (E8M0, one per 32 values), got ",
              dtype_name(x_scale.dtype));
  check_weight_dtypes(w, w_scale, out, op);
  check_bias_out_or_fp32(bias, out, op);
  const std::int64_t half_k = x.size(-1);
  TGEMM_CHECK(half_k % (kMxfp4Block / 2) == 0, op,
              "x.size(-1) (K / 2, two e2m1 codes a byte) must be a multiple of 16 (one E8M0 scale per 32 values), "
              "got ",
              half_k);
  TGEMM_CHECK(half_k <= kMaxDim / 2, op, "x.size(-1) (K / 2) must be at most ", kMaxDim / 2, ", got ", half_k);
  const std::int64_t k = 2 * half_k;
  check_like(x_scale, "x_scale", x, "x", k / kMxfp4Block, "K / 32", op);
  const std::int64_t n = check_weight_shapes(k, x, w, w_scale, out, bias, op);
  const std::int64_t ld_x_scale = flat_row_stride(x_scale, "x_scale", op);
  W4GemmCall c = w4_call(k, n, x, &x_scale, w, w_scale, out, bias, op);
  c.ld_x_scale = ld_x_scale;
  return c;
}

}  // namespace tgemm
