#include "quant/quant_validate.h"

#include <cstdint>
#include <limits>
#include <string>

#include "core/check.h"
#include "core/validate.h"

namespace tgemm {
namespace {

// Rows and columns are indexed with int32 in the grids' block counts and by callers' GEMMs.
constexpr std::int64_t kMaxDim = std::numeric_limits<std::int32_t>::max();

void check_rank(const TensorView& t, const char* name, int lo, int hi, const char* what, std::string_view op) {
  TGEMM_CHECK(t.rank >= lo && t.rank <= hi, op, name, " must be ", what, ", got rank ", t.rank);
  check_rank_and_sizes(t, name, op);
}

void check_pointer(const TensorView& t, const char* name, std::string_view op) {
  std::int64_t bytes = 0;
  TGEMM_CHECK(extent_bytes(t, bytes), op, name, " spans more than 2^62 bytes (sizes ", shape_str(t), ", strides ",
              strides_str(t), ")");
  TGEMM_CHECK(t.data != nullptr || t.numel() == 0, op, name, ".data must not be null (", name, " is ", shape_str(t),
              ")");
  const std::size_t es = dtype_size(t.dtype);
  TGEMM_CHECK(reinterpret_cast<std::uintptr_t>(t.data) % es == 0, op, name,
              ".data must be aligned to its element size (", es, " bytes), got address ", t.data);
}

void check_disjoint(const TensorView& a, const char* an, const TensorView& b, const char* bn, std::string_view op) {
  std::int64_t ea = 0, eb = 0;
  extent_bytes(a, ea);
  extent_bytes(b, eb);
  if (ea == 0 || eb == 0) return;
  const auto pa = reinterpret_cast<std::uintptr_t>(a.data);
  const auto pb = reinterpret_cast<std::uintptr_t>(b.data);
  const bool overlap = pa < pb + static_cast<std::uintptr_t>(eb) && pb < pa + static_cast<std::uintptr_t>(ea);
  TGEMM_CHECK(!overlap, op, an, " and ", bn, " must not overlap: ", an, " spans [", a.data, ", +", ea, " bytes), ", bn,
              " spans [", b.data, ", +", eb, " bytes)");
}

// The row stride of t flattened to [M, K]: elements of a row contiguous, leading dims collapsing
// as a torch view would (dims of size 1 may carry any stride).
std::int64_t row_stride(const TensorView& t, const char* name, std::int64_t k, std::string_view op) {
  TGEMM_CHECK(t.size(-1) <= 1 || t.stride(-1) == 1, op, name,
              " must have contiguous rows (stride(-1) == 1), got strides ", strides_str(t));
  const std::int64_t ld = collapsed_row_stride(t, name, op);
  if (ld < 0) return k;  // one row at most: no step to take
  TGEMM_CHECK(ld >= k, op, name, " rows overlap: the row stride ", ld, " is below K = ", k, " (strides ",
              strides_str(t), ")");
  return ld;
}

// Whether the non-trivial dims of t are dense row-major (a view of numel() consecutive elements).
bool dense(const TensorView& t) {
  std::int64_t expected = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.sizes[d] <= 1) continue;
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

// Sets the scale strides of a [rows, cols] scale for the groupings that have two dims.
void check_block_scale(const TensorView& scale, std::int64_t rows, std::int64_t cols, bool allow_mn_major,
                       const char* rows_name, QuantCall& call, std::string_view op) {
  const std::string shape = std::string("[") + rows_name + ", ceil(K / 128)]";
  const BlockScaleLayout l = check_block_scale_layout(scale, "scale", rows, cols, shape.c_str(), allow_mn_major, op);
  call.scale_row_stride = l.mn_major ? 1 : l.ld;
  call.scale_col_stride = l.mn_major ? l.ld : 1;
}

}  // namespace

QuantCall validate_quant(const TensorView& x, const TensorView& q, const TensorView& scale, QuantGrouping grouping,
                         std::string_view op) {
  const bool weight = grouping == QuantGrouping::kBlock128x128;
  const char* xn = weight ? "w" : "x";
  if (weight) {
    check_rank(x, xn, 2, 2, "2-D [N, K]", op);
  } else {
    check_rank(x, xn, 2, kMaxRank, "of rank 2 or more ([..., K])", op);
  }
  check_rank(q, "q", 0, kMaxRank, "of rank at most 6", op);
  check_rank(scale, "scale", 0, kMaxRank, "of rank at most 6", op);

  TGEMM_CHECK(x.dtype == DType::kBFloat16 || x.dtype == DType::kFloat16, op, xn,
              ".dtype must be torch.bfloat16 or torch.float16, got ", dtype_name(x.dtype));
  const bool int8_ok = grouping == QuantGrouping::kPerToken;
  if (q.dtype == DType::kFloat8E5M2) {
    detail::throw_error(op, "q.dtype torch.float8_e5m2 is not supported: quantization writes torch.float8_e4m3fn",
                        int8_ok ? " or torch.int8" : "");
  }
  TGEMM_CHECK(q.dtype == DType::kFloat8E4M3 || (int8_ok && q.dtype == DType::kInt8), op, "q.dtype must be ",
              int8_ok ? "torch.float8_e4m3fn or torch.int8" : "torch.float8_e4m3fn", ", got ", dtype_name(q.dtype));
  TGEMM_CHECK(scale.dtype == DType::kFloat32, op, "scale.dtype must be torch.float32, got ", dtype_name(scale.dtype));

  TGEMM_CHECK(q.rank == x.rank, op, "q.rank must equal ", xn, ".rank (", x.rank, "), got ", q.rank);
  for (int d = 0; d < x.rank; ++d) {
    TGEMM_CHECK(q.sizes[d] == x.sizes[d], op, "q must have ", xn, "'s sizes ", shape_str(x), ", got ", shape_str(q));
  }
  QuantCall call;
  call.k = x.size(-1);
  call.m = 1;
  for (int d = 0; d + 1 < x.rank; ++d) {
    if (x.sizes[d] == 0) {
      call.m = 0;
      break;
    }
    TGEMM_CHECK(call.m <= kMaxDim / x.sizes[d], op, xn, " has more than 2^31-1 rows after flattening ", shape_str(x));
    call.m *= x.sizes[d];
  }
  TGEMM_CHECK(call.k <= kMaxDim, op, xn, ".size(-1) (K) must be at most ", kMaxDim, ", got ", call.k);

  check_pointer(x, xn, op);
  check_pointer(q, "q", op);
  check_pointer(scale, "scale", op);
  call.ldx = row_stride(x, xn, call.k, op);
  call.ldq = row_stride(q, "q", call.k, op);

  switch (grouping) {
    case QuantGrouping::kPerTensor:
      TGEMM_CHECK(scale.numel() == 1, op, "scale must hold one element, got ", shape_str(scale));
      break;
    case QuantGrouping::kPerToken:
      TGEMM_CHECK(scale.numel() == call.m, op, "scale must hold one element per row (M = ", call.m, "), got ",
                  shape_str(scale));
      TGEMM_CHECK(dense(scale), op, "scale must be contiguous, got sizes ", shape_str(scale), " strides ",
                  strides_str(scale));
      call.scale_row_stride = 1;
      break;
    case QuantGrouping::kBlock1x128: check_block_scale(scale, call.m, quant_blocks(call.k), true, "M", call, op); break;
    case QuantGrouping::kBlock128x128:
      check_block_scale(scale, quant_blocks(call.m), quant_blocks(call.k), false, "ceil(N / 128)", call, op);
      break;
  }
  check_disjoint(x, xn, q, "q", op);
  check_disjoint(x, xn, scale, "scale", op);
  check_disjoint(q, "q", scale, "scale", op);

  call.x = x.data;
  call.x_type = x.dtype;
  call.q = q.data;
  call.q_type = q.dtype;
  call.scale = static_cast<float*>(scale.data);
  return call;
}

}  // namespace tgemm
