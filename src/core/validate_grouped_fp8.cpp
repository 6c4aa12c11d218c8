#include "core/validate_grouped_fp8.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/check.h"
#include "core/validate.h"
#include "core/validate_grouped.h"

namespace tgemm {
namespace {

constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();
// Scale blocks of DeepSeek-V3's recipe: 1x128 for activations, 128x128 for weights.
constexpr std::int64_t kScaleBlock = 128;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The [size(1), size(2)] plane of a 3-D view, for the 2-D layout checks.
TensorView plane(const TensorView& t) {
  TensorView p = t;
  p.rank = 2;
  p.sizes[0] = t.sizes[1];
  p.sizes[1] = t.sizes[2];
  p.strides[0] = t.strides[1];
  p.strides[1] = t.strides[2];
  return p;
}

void check_fp8_dtypes(const TensorView& x, const TensorView& x_scale, const TensorView& w, const TensorView& w_scale,
                      const TensorView& out, const TensorView& index, const char* index_name, std::string_view op) {
  TGEMM_CHECK(x.dtype == DType::kFloat8E4M3, op, "x.dtype must be torch.float8_e4m3fn, got ", dtype_name(x.dtype));
  TGEMM_CHECK(w.dtype == DType::kFloat8E4M3, op, "w.dtype must be torch.float8_e4m3fn, got ", dtype_name(w.dtype));
  TGEMM_CHECK(x_scale.dtype == DType::kFloat32, op, "x_scale.dtype must be torch.float32, got ",
              dtype_name(x_scale.dtype));
  TGEMM_CHECK(w_scale.dtype == DType::kFloat32, op, "w_scale.dtype must be torch.float32, got ",
              dtype_name(w_scale.dtype));
  TGEMM_CHECK(out.dtype == DType::kBFloat16, op, "out.dtype must be torch.bfloat16, got ", dtype_name(out.dtype));
  TGEMM_CHECK(index.dtype == DType::kInt32, op, index_name, ".dtype must be torch.int32, got ",
              dtype_name(index.dtype));
}

// w [G, N, K] with 16-byte rows and w_scale [G, ceil(N / 128), L] with row-major planes; fills the
// weight side of p (groups, n, k set by the caller).
void check_weights(const TensorView& w, const TensorView& w_scale, Fp8GroupedProblem& p, std::string_view op) {
  TGEMM_CHECK(w.size(0) == p.groups && w.size(2) == p.k, op, "w must have shape [G, N, K] with G = ", p.groups,
              " and K = ", p.k, ", got ", shape_str(w));
  const std::int64_t nb = ceil_div(p.n, kScaleBlock), kb = ceil_div(p.k, kScaleBlock);
  TGEMM_CHECK(w_scale.size(0) == p.groups, op, "w_scale must have shape [G, ceil(N / 128), ceil(K / 128)] = [",
              p.groups, ", ", nb, ", ", kb, "], got ", shape_str(w_scale));
  const BlockScaleLayout wl = check_block_scale_layout(plane(w_scale), "w_scale", nb, kb,
                                                       "[ceil(N / 128), ceil(K / 128)] per group", false, op);
  p.ws_row_stride = std::max<std::int64_t>(wl.ld, 1);
  p.ws_group_stride = w_scale.stride(0);
  p.ldw = check_rows(w, 1, "w", op);
  p.w_group_stride = w.stride(0);
  TGEMM_CHECK(p.k % 16 == 0, op, "K (x.size(-1)) must be a multiple of 16 for torch.float8_e4m3fn (16-byte rows), got ",
              p.k);
  TGEMM_CHECK(p.n <= 1 || p.k == 0 || p.ldw % 16 == 0, op,
              "w.stride(1) must be a multiple of 16 for torch.float8_e4m3fn (16-byte rows), got ", p.ldw);
  TGEMM_CHECK(p.k <= kMaxInt32 && p.n <= kGroupedMaxN, op, "K must be <= ", kMaxInt32, " and N <= ", kGroupedMaxN,
              " (column tiles of 64 on the grid's y axis), got K=", p.k, " N=", p.n);
}

// x_scale's (row, block) layout from a 2-D [rows, L] view.
void set_x_scale_layout(const TensorView& xs2, Fp8GroupedProblem& p, const char* shape_text, std::string_view op) {
  const std::int64_t kb = ceil_div(p.k, kScaleBlock);
  const BlockScaleLayout xl = check_block_scale_layout(xs2, "x_scale", p.rows, kb, shape_text, true, op);
  const std::int64_t ld = std::max<std::int64_t>(xl.ld, 1);
  p.xs_row_stride = xl.mn_major ? 1 : ld;
  p.xs_col_stride = xl.mn_major ? ld : 1;
}

void fill_args(Fp8GroupedCall& call, const TensorView& x, const TensorView& x_scale, const TensorView& w,
               const TensorView& w_scale, const TensorView& out, const TensorView& index) {
  call.args.x = x.data;
  call.args.x_scale = static_cast<const float*>(x_scale.data);
  call.args.w = w.data;
  call.args.w_scale = static_cast<const float*>(w_scale.data);
  call.args.group_data = static_cast<const std::int32_t*>(index.data);
  call.args.out = out.data;
}

}  // namespace

Fp8GroupedCall validate_fp8_contiguous(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                                       const TensorView& w_scale, const TensorView& out, const TensorView& m_indices,
                                       std::string_view op) {
  check_view(&x, "x", {2}, op);
  check_view(&x_scale, "x_scale", {2}, op);
  check_view(&w, "w", {3}, op);
  check_view(&w_scale, "w_scale", {3}, op);
  check_view(&out, "out", {2}, op);
  check_view(&m_indices, "m_indices", {1}, op);
  check_fp8_dtypes(x, x_scale, w, w_scale, out, m_indices, "m_indices", op);

  Fp8GroupedCall call;
  Fp8GroupedProblem& p = call.problem;
  p.groups = w.size(0);
  p.rows = x.size(0);
  p.k = x.size(1);
  p.n = w.size(1);
  check_weights(w, w_scale, p, op);
  TGEMM_CHECK(out.size(0) == p.rows && out.size(1) == p.n, op, "out must have shape [M, N] = [", p.rows, ", ", p.n,
              "], got ", shape_str(out));
  TGEMM_CHECK(m_indices.size(0) == p.rows, op, "m_indices.size(0) must equal x.size(0) (M), got ", m_indices.size(0),
              " vs ", p.rows);
  TGEMM_CHECK(p.rows <= kMaxInt32, op, "M must be <= ", kMaxInt32, ", got ", p.rows);
  set_x_scale_layout(x_scale, p, "[M, ceil(K / 128)]", op);
  p.lda = check_rows(x, 0, "x", op);
  TGEMM_CHECK(p.rows <= 1 || p.k == 0 || p.lda % 16 == 0, op,
              "x.stride(0) must be a multiple of 16 for torch.float8_e4m3fn (16-byte rows), got ", p.lda);
  p.ldo = check_rows(out, 0, "out", op);
  TGEMM_CHECK(p.rows <= 1 || m_indices.stride(0) == 1, op, "m_indices must be contiguous, got stride ",
              m_indices.stride(0));
  check_alignment_and_overlap(
      out, "out", {{&x, "x"}, {&x_scale, "x_scale"}, {&w, "w"}, {&w_scale, "w_scale"}, {&m_indices, "m_indices"}}, op);
  fill_args(call, x, x_scale, w, w_scale, out, m_indices);
  return call;
}

Fp8GroupedCall validate_fp8_masked(const TensorView& x, const TensorView& x_scale, const TensorView& w,
                                   const TensorView& w_scale, const TensorView& out, const TensorView& masked_m,
                                   std::int64_t expected_m, std::string_view op) {
  check_view(&x, "x", {3}, op);
  check_view(&x_scale, "x_scale", {3}, op);
  check_view(&w, "w", {3}, op);
  check_view(&w_scale, "w_scale", {3}, op);
  check_view(&out, "out", {3}, op);
  check_view(&masked_m, "masked_m", {1}, op);
  check_fp8_dtypes(x, x_scale, w, w_scale, out, masked_m, "masked_m", op);

  Fp8GroupedCall call;
  Fp8GroupedProblem& p = call.problem;
  p.masked = true;
  p.groups = x.size(0);
  p.rows = x.size(1);
  p.k = x.size(2);
  p.n = w.size(1);
  check_weights(w, w_scale, p, op);
  TGEMM_CHECK(out.size(0) == p.groups && out.size(1) == p.rows && out.size(2) == p.n, op,
              "out must have shape [G, max_m, N] = [", p.groups, ", ", p.rows, ", ", p.n, "], got ", shape_str(out));
  TGEMM_CHECK(masked_m.size(0) == p.groups, op, "masked_m.size(0) must equal x.size(0) (G), got ", masked_m.size(0),
              " vs ", p.groups);
  TGEMM_CHECK(x_scale.size(0) == p.groups, op, "x_scale must have shape [G, max_m, ceil(K / 128)] = [", p.groups, ", ",
              p.rows, ", ", ceil_div(p.k, kScaleBlock), "], got ", shape_str(x_scale));
  TGEMM_CHECK(expected_m >= 0, op, "expected_m must be >= 0, got ", expected_m);
  TGEMM_CHECK(p.groups * ceil_div(p.rows, 64) <= kMaxInt32, op,
              "G * ceil(max_m / 64) must fit in int32 (row tiles of the grid), got G=", p.groups, " max_m=", p.rows);
  set_x_scale_layout(plane(x_scale), p, "[max_m, ceil(K / 128)] per group", op);
  p.xs_group_stride = x_scale.stride(0);
  p.lda = check_rows(x, 1, "x", op);
  TGEMM_CHECK(p.rows <= 1 || p.k == 0 || p.lda % 16 == 0, op,
              "x.stride(1) must be a multiple of 16 for torch.float8_e4m3fn (16-byte rows), got ", p.lda);
  p.x_group_stride = x.stride(0);
  p.ldo = check_rows(out, 1, "out", op);
  const std::int64_t out_plane = p.rows * p.ldo;
  TGEMM_CHECK(p.groups <= 1 || p.rows == 0 || out.stride(0) >= out_plane, op,
              "out.stride(0) must be >= out.size(1) * out.stride(1) (", out_plane,
              ") so its planes do not overlap, got strides ", strides_str(out));
  p.out_group_stride = p.groups <= 1 ? out_plane : out.stride(0);
  TGEMM_CHECK(p.groups <= 1 || masked_m.stride(0) == 1, op, "masked_m must be contiguous, got stride ",
              masked_m.stride(0));
  check_alignment_and_overlap(
      out, "out", {{&x, "x"}, {&x_scale, "x_scale"}, {&w, "w"}, {&w_scale, "w_scale"}, {&masked_m, "masked_m"}}, op);
  p.expected_m = expected_m;
  fill_args(call, x, x_scale, w, w_scale, out, masked_m);
  return call;
}

}  // namespace tgemm
