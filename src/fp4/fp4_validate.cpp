#include "fp4/fp4_validate.h"

#include <cstdint>
#include <limits>
#include <string>

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

A16W4Call validate_a16w4(const TensorView& x, const TensorView& w, const TensorView& w_scale, const TensorView& out,
                         const TensorView* bias, std::string_view op) {
  check_view(x, "x", 2, kMaxRank, "of rank 2 or more ([..., K])", op);
  check_view(w, "w", 2, 2, "2-D [N, K / 2]", op);
  check_view(w_scale, "w_scale", 2, 2, "2-D [N, K / 32]", op);
  check_view(out, "out", 1, kMaxRank, "of x's rank", op);
  if (bias != nullptr) check_view(*bias, "bias", 1, 1, "1-D [N]", op);
  check_16bit(x, "x", op);
  check_dtype(w, "w", DType::kUInt8, op);
  check_dtype(w_scale, "w_scale", DType::kUInt8, op);
  TGEMM_CHECK(out.dtype == DType::kBFloat16 || out.dtype == DType::kFloat16 || out.dtype == DType::kFloat32, op,
              "out.dtype must be torch.bfloat16, torch.float16 or torch.float32, got ", dtype_name(out.dtype));
  if (bias != nullptr) {
    TGEMM_CHECK(bias->dtype == x.dtype || bias->dtype == out.dtype, op, "bias.dtype must be x's (", dtype_name(x.dtype),
                ") or out's (", dtype_name(out.dtype), "), got ", dtype_name(bias->dtype));
  }

  const std::int64_t k = x.size(-1), n = w.size(0);
  check_k(k, "x", op);
  TGEMM_CHECK(w.size(1) == k / 2, op, "w.size(1) must be K / 2 = ", k / 2, " (two e2m1 codes a byte; x is ",
              shape_str(x), "), got ", w.size(1));
  TGEMM_CHECK(w_scale.size(0) == n && w_scale.size(1) == k / kMxfp4Block, op, "w_scale must be [N, K / 32] = [", n,
              ", ", k / kMxfp4Block, "], got ", shape_str(w_scale));
  TGEMM_CHECK(n <= kMaxDim, op, "w.size(0) (N) must be at most ", kMaxDim, ", got ", n);
  check_like(out, "out", x, "x", n, "N", op);
  if (bias != nullptr) {
    TGEMM_CHECK(bias->size(0) == n, op, "bias must be [N] = [", n, "], got ", shape_str(*bias));
  }

  A16W4Call c;
  c.m = flat_rows(x, "x", op);
  c.n = n;
  c.k = k;
  c.ldx = flat_row_stride(x, "x", op);
  c.ldw = check_rows(w, 0, "w", op);
  c.ld_scale = check_rows(w_scale, 0, "w_scale", op);
  c.ldo = flat_row_stride(out, "out", op);
  for (auto [t, name] :
       {std::pair<const TensorView*, const char*>{&x, "x"}, {&w, "w"}, {&w_scale, "w_scale"}, {bias, "bias"}}) {
    if (t != nullptr) check_disjoint(out, "out", *t, name, op);
  }
  c.x = x.data;
  c.x_type = x.dtype;
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

}  // namespace tgemm
