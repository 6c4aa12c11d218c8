#include "core/validate_grouped.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/validate.h"

namespace tgemm {
namespace {

constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();
// Column tiles of 64 on the grid's y axis (at most 65535), as in gmm.
constexpr std::int64_t kMaxN = 64 * 65535;

struct Named {
  const TensorView* t;
  const char* name;
};

// Rank, sizes and strides >= 0, extent, non-null data where there are elements; a null t (an
// absent optional argument) passes. `ranks` lists the accepted ranks.
void check_view(const TensorView* t, const char* name, std::initializer_list<int> ranks, std::string_view op) {
  if (t == nullptr) return;
  const bool ok = std::find(ranks.begin(), ranks.end(), t->rank) != ranks.end();
  std::string expected;
  for (int r : ranks) detail::append(expected, detail::concat(expected.empty() ? "" : " or ", r));
  TGEMM_CHECK(ok, op, name, " must have rank ", expected, ", got ", t->rank, " (sizes ",
              t->rank >= 0 && t->rank <= kMaxRank ? shape_str(*t) : std::string("?"), ")");
  check_rank_and_sizes(*t, name, op);
  check_extent(*t, name, op);
  TGEMM_CHECK(t->data != nullptr || t->numel() == 0, op, name, ".data must not be null (", t->numel(), " elements)");
}

void check_16bit_operands(const TensorView& a, const char* an, const TensorView& b, const char* bn,
                          std::string_view op) {
  TGEMM_CHECK(a.dtype == DType::kBFloat16 || a.dtype == DType::kFloat16, op, an,
              ".dtype must be torch.bfloat16 or torch.float16, got ", dtype_name(a.dtype));
  TGEMM_CHECK(b.dtype == a.dtype, op, bn, ".dtype must equal ", an, ".dtype (", dtype_name(a.dtype), "), got ",
              dtype_name(b.dtype));
}

void check_contiguous(const TensorView& t, const char* name, std::string_view op) {
  std::int64_t expected = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    TGEMM_CHECK(t.sizes[d] <= 1 || t.strides[d] == expected, op, name, " must be contiguous, got sizes ", shape_str(t),
                " strides ", strides_str(t));
    expected *= t.sizes[d];
  }
}

// Element alignment of every view, then: out must not overlap any of `inputs`.
void check_alignment_and_overlap(const TensorView& out, const char* out_name, std::initializer_list<Named> inputs,
                                 std::string_view op) {
  check_element_alignment(out, out_name, op);
  for (const Named& in : inputs) {
    if (in.t == nullptr) continue;
    check_element_alignment(*in.t, in.name, op);
    const std::string both = overlap(out, out_name, *in.t, in.name);
    TGEMM_CHECK(both.empty(), op, out_name, " must not overlap ", in.name, ": ", both);
  }
}

// The stride between the [rows, cols] planes of dim 0 of a written 3-D view: planes must not
// overlap (any stride where there is one plane or an empty plane).
std::int64_t check_planes(const TensorView& t, std::int64_t row_stride, const char* name, std::string_view op) {
  const std::int64_t plane = t.size(1) * row_stride;
  TGEMM_CHECK(t.size(0) <= 1 || t.size(1) == 0 || t.stride(0) >= plane, op, name, ".stride(0) must be >= ", name,
              ".size(1) * ", name, ".stride(1) (", plane, ") so its planes do not overlap, got strides ",
              strides_str(t));
  return t.size(0) <= 1 ? plane : t.stride(0);
}

// lhs [K, M] of tgmm: row-major (stride(1) == 1) or column-major (stride(0) == 1); size-1 dims may
// carry any stride. Returns the non-unit stride and sets col_major.
std::int64_t tgmm_lhs_layout(const TensorView& lhs, bool& col_major, std::string_view op) {
  const std::int64_t k = lhs.size(0), m = lhs.size(1);
  const bool row_major = (m <= 1 || lhs.stride(1) == 1) && (k <= 1 || lhs.stride(0) >= m);
  const bool column_major = (k <= 1 || lhs.stride(0) == 1) && (m <= 1 || lhs.stride(1) >= k);
  TGEMM_CHECK(row_major || column_major, op,
              "lhs [K, M] must be row-major (stride(1) == 1, stride(0) >= M) or column-major (stride(0) == 1, "
              "stride(1) >= K), got sizes ",
              shape_str(lhs), " strides ", strides_str(lhs));
  col_major = !row_major;
  if (col_major) return m <= 1 ? std::max<std::int64_t>(k, 1) : lhs.stride(1);
  return k <= 1 ? std::max<std::int64_t>(m, 1) : lhs.stride(0);
}

}  // namespace

TgmmCall validate_tgmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes,
                       const TensorView& out, const TensorView* bias_grad, bool accumulate, bool persistent,
                       std::string_view op) {
  check_view(&lhs, "lhs", {2}, op);
  check_view(&rhs, "rhs", {2}, op);
  check_view(&group_sizes, "group_sizes", {1}, op);
  check_view(&out, "out", {3}, op);
  check_view(bias_grad, "bias_grad", {2}, op);
  check_16bit_operands(lhs, "lhs", rhs, "rhs", op);
  TGEMM_CHECK(group_sizes.dtype == DType::kInt32, op, "group_sizes.dtype must be torch.int32, got ",
              dtype_name(group_sizes.dtype));
  TGEMM_CHECK(out.dtype == lhs.dtype || out.dtype == DType::kFloat32, op, "out.dtype must be lhs.dtype (",
              dtype_name(lhs.dtype), ") or torch.float32, got ", dtype_name(out.dtype));
  if (bias_grad) {
    TGEMM_CHECK(bias_grad->dtype == DType::kFloat32, op, "bias_grad.dtype must be torch.float32, got ",
                dtype_name(bias_grad->dtype));
  }

  const std::int64_t k = lhs.size(0), m = lhs.size(1), n = rhs.size(1), g = group_sizes.size(0);
  TGEMM_CHECK(rhs.size(0) == m, op, "rhs.size(0) must equal lhs.size(1) (M), got ", rhs.size(0), " vs ", m);
  TGEMM_CHECK(out.size(0) == g && out.size(1) == k && out.size(2) == n, op, "out must have shape [G, K, N] = [", g,
              ", ", k, ", ", n, "], got ", shape_str(out));
  if (bias_grad) {
    TGEMM_CHECK(bias_grad->size(0) == g && bias_grad->size(1) == k, op, "bias_grad must have shape [G, K] = [", g, ", ",
                k, "], got ", shape_str(*bias_grad));
  }
  TGEMM_CHECK(m <= kMaxInt32 && k <= kMaxInt32 && n <= kMaxInt32, op, "M, K and N must be <= ", kMaxInt32,
              ", got M=", m, " K=", k, " N=", n);
  const std::int64_t tiles = g * ((k + 63) / 64) * ((n + 63) / 64);
  TGEMM_CHECK(tiles <= kMaxInt32, op, "G * ceil(K / 64) * ceil(N / 64) must fit in int32 (output tiles), got G=", g,
              " K=", k, " N=", n);

  TgmmCall call;
  TgmmProblem& p = call.problem;
  p.lda = tgmm_lhs_layout(lhs, p.lhs_col_major, op);
  p.ldb = check_rows(rhs, 0, "rhs", op);
  p.ldo = check_rows(out, 1, "out", op);
  p.out_group_stride = check_planes(out, p.ldo, "out", op);
  if (bias_grad) p.bias_grad_stride = check_rows(*bias_grad, 0, "bias_grad", op);
  TGEMM_CHECK(g <= 1 || group_sizes.stride(0) == 1, op, "group_sizes must be contiguous, got stride ",
              group_sizes.stride(0));
  check_alignment_and_overlap(
      out, "out", {{&lhs, "lhs"}, {&rhs, "rhs"}, {&group_sizes, "group_sizes"}, {bias_grad, "bias_grad"}}, op);
  if (bias_grad) {
    check_alignment_and_overlap(*bias_grad, "bias_grad", {{&lhs, "lhs"}, {&rhs, "rhs"}, {&group_sizes, "group_sizes"}},
                                op);
  }

  p.m = m;
  p.k = k;
  p.n = n;
  p.groups = g;
  p.in_type = lhs.dtype;
  p.out_type = out.dtype;
  p.has_bias_grad = bias_grad != nullptr;
  p.accumulate = accumulate;
  p.persistent = persistent;
  call.args.lhs = lhs.data;
  call.args.rhs = rhs.data;
  call.args.group_sizes = static_cast<const std::int32_t*>(group_sizes.data);
  call.args.out = out.data;
  call.args.bias_grad = bias_grad ? static_cast<float*>(bias_grad->data) : nullptr;
  return call;
}

namespace {

void check_gather_dtypes(const TensorView& x, const TensorView& weights, const TensorView& expert_ids,
                         const TensorView& out, const TensorView* topk_weights, std::string_view op) {
  check_16bit_operands(x, "x", weights, "weights", op);
  TGEMM_CHECK(expert_ids.dtype == DType::kInt32, op, "expert_ids.dtype must be torch.int32, got ",
              dtype_name(expert_ids.dtype));
  TGEMM_CHECK(out.dtype == x.dtype || out.dtype == DType::kFloat32, op, "out.dtype must be x.dtype (",
              dtype_name(x.dtype), ") or torch.float32, got ", dtype_name(out.dtype));
  if (topk_weights) {
    TGEMM_CHECK(topk_weights->dtype == x.dtype || topk_weights->dtype == DType::kFloat32, op,
                "topk_weights.dtype must be x.dtype (", dtype_name(x.dtype), ") or torch.float32, got ",
                dtype_name(topk_weights->dtype));
  }
}

}  // namespace

GatherCall validate_grouped_gemm(const TensorView& x, const TensorView& weights, const TensorView& expert_ids,
                                 const TensorView& out, bool transpose_weights, const TensorView* topk_weights,
                                 std::string_view op) {
  check_view(&x, "x", {2, 3}, op);
  check_view(&weights, "weights", {3}, op);
  check_view(&expert_ids, "expert_ids", {2}, op);
  check_view(&out, "out", {topk_weights ? 2 : 3}, op);
  check_view(topk_weights, "topk_weights", {2}, op);
  check_gather_dtypes(x, weights, expert_ids, out, topk_weights, op);

  const std::int64_t t = expert_ids.size(0), topk = expert_ids.size(1), h = x.size(-1), e = weights.size(0);
  const std::int64_t w_h = transpose_weights ? weights.size(2) : weights.size(1);
  const std::int64_t n = transpose_weights ? weights.size(1) : weights.size(2);
  TGEMM_CHECK(x.size(0) == t, op, "x.size(0) must equal expert_ids.size(0) (T), got ", x.size(0), " vs ", t);
  if (x.rank == 3) {
    TGEMM_CHECK(x.size(1) == topk, op, "x [T, topk, H] must have x.size(1) == expert_ids.size(1) (topk), got ",
                x.size(1), " vs ", topk);
  }
  TGEMM_CHECK(w_h == h, op, transpose_weights ? "weights.size(2)" : "weights.size(1)", " must equal x.size(-1) (H)",
              transpose_weights ? " (weights [E, N, H], transpose_weights=true)"
                                : " (weights [E, H, N], transpose_weights=false)",
              ", got ", w_h, " vs ", h);
  if (topk_weights) {
    TGEMM_CHECK(topk_weights->size(0) == t && topk_weights->size(1) == topk, op,
                "topk_weights must have shape [T, topk] = [", t, ", ", topk, "], got ", shape_str(*topk_weights));
    TGEMM_CHECK(out.size(0) == t && out.size(1) == n, op, "out must have shape [T, N] = [", t, ", ", n,
                "] (with topk_weights), got ", shape_str(out));
  } else {
    TGEMM_CHECK(out.size(0) == t && out.size(1) == topk && out.size(2) == n, op, "out must have shape [T, topk, N] = [",
                t, ", ", topk, ", ", n, "], got ", shape_str(out));
  }
  TGEMM_CHECK(h <= kMaxInt32 && n <= kMaxN, op, "H must be <= ", kMaxInt32, " and N <= ", kMaxN,
              " (column tiles of 64 on the grid's y axis), got H=", h, " N=", n);
  // Slots are permuted as int32; the grid holds ceil(T * topk / 64) + E + 1 row tiles.
  TGEMM_CHECK(t * topk <= kMaxInt32 && (t * topk + 63) / 64 + e + 1 <= kMaxInt32, op,
              "T * topk must fit in int32 and ceil(T * topk / 64) + E + 1 too, got T=", t, " topk=", topk, " E=", e);

  GatherCall call;
  GatherProblem& p = call.problem;
  TGEMM_CHECK(h <= 1 || x.stride(-1) == 1, op, "x.stride(", x.rank - 1, ") must be 1 (contiguous last dimension), got ",
              strides_str(x));
  p.x_token_stride = x.stride(0);
  p.x_slot_stride = x.rank == 3 ? x.stride(1) : 0;
  p.w_row_stride = check_rows(weights, 1, "weights", op);
  const std::int64_t expert_elems = weights.size(1) * p.w_row_stride;
  TGEMM_CHECK(e <= 1 || weights.size(1) == 0 || weights.stride(0) >= expert_elems, op,
              "weights.stride(0) must be >= weights.size(1) * weights.stride(1) (", expert_elems,
              ") so experts do not overlap, got strides ", strides_str(weights));
  p.w_expert_stride = e <= 1 ? expert_elems : weights.stride(0);
  check_contiguous(expert_ids, "expert_ids", op);
  if (topk_weights) {
    check_contiguous(*topk_weights, "topk_weights", op);
    p.out_token_stride = check_rows(out, 0, "out", op);
  } else {
    p.out_slot_stride = check_rows(out, 1, "out", op);
    p.out_token_stride = check_planes(out, p.out_slot_stride, "out", op);
  }
  check_alignment_and_overlap(
      out, "out", {{&x, "x"}, {&weights, "weights"}, {&expert_ids, "expert_ids"}, {topk_weights, "topk_weights"}}, op);

  p.tokens = t;
  p.topk = topk;
  p.n = n;
  p.k = h;
  p.experts = e;
  p.in_type = x.dtype;
  p.out_type = out.dtype;
  p.topk_weights_type = topk_weights ? topk_weights->dtype : DType::kFloat32;
  p.x_per_slot = x.rank == 3;
  p.transpose_weights = transpose_weights;
  p.weighted = topk_weights != nullptr;
  call.args.x = x.data;
  call.args.weights = weights.data;
  call.args.expert_ids = static_cast<const std::int32_t*>(expert_ids.data);
  call.args.topk_weights = topk_weights ? topk_weights->data : nullptr;
  call.args.out = out.data;
  return call;
}

MaskedCall validate_masked(const TensorView& x, const TensorView& w, const TensorView& out, const TensorView& masked_m,
                           std::int64_t expected_m, std::string_view op) {
  check_view(&x, "x", {3}, op);
  check_view(&w, "w", {3}, op);
  check_view(&out, "out", {3}, op);
  check_view(&masked_m, "masked_m", {1}, op);
  TGEMM_CHECK(x.dtype == DType::kBFloat16, op, "x.dtype must be torch.bfloat16, got ", dtype_name(x.dtype));
  TGEMM_CHECK(w.dtype == DType::kBFloat16, op, "w.dtype must be torch.bfloat16, got ", dtype_name(w.dtype));
  TGEMM_CHECK(out.dtype == DType::kBFloat16, op, "out.dtype must be torch.bfloat16, got ", dtype_name(out.dtype));
  TGEMM_CHECK(masked_m.dtype == DType::kInt32, op, "masked_m.dtype must be torch.int32, got ",
              dtype_name(masked_m.dtype));

  const std::int64_t g = x.size(0), max_m = x.size(1), k = x.size(2), n = w.size(1);
  TGEMM_CHECK(w.size(0) == g && w.size(2) == k, op, "w must have shape [G, N, K] with G = ", g, " and K = ", k,
              " (from x [G, max_m, K]), got ", shape_str(w));
  TGEMM_CHECK(out.size(0) == g && out.size(1) == max_m && out.size(2) == n, op, "out must have shape [G, max_m, N] = [",
              g, ", ", max_m, ", ", n, "], got ", shape_str(out));
  TGEMM_CHECK(masked_m.size(0) == g, op, "masked_m.size(0) must equal x.size(0) (G), got ", masked_m.size(0), " vs ",
              g);
  TGEMM_CHECK(expected_m >= 0, op, "expected_m must be >= 0, got ", expected_m);
  TGEMM_CHECK(k <= kMaxInt32 && n <= kMaxN, op, "K must be <= ", kMaxInt32, " and N <= ", kMaxN,
              " (column tiles of 64 on the grid's y axis), got K=", k, " N=", n);
  TGEMM_CHECK(g * ((max_m + 63) / 64) <= kMaxInt32, op,
              "G * ceil(max_m / 64) must fit in int32 (row tiles of the grid), got G=", g, " max_m=", max_m);

  MaskedCall call;
  MaskedProblem& p = call.problem;
  p.lda = check_rows(x, 1, "x", op);
  p.ldw = check_rows(w, 1, "w", op);
  p.ldo = check_rows(out, 1, "out", op);
  p.x_group_stride = x.stride(0);
  p.w_group_stride = w.stride(0);
  p.out_group_stride = check_planes(out, p.ldo, "out", op);
  TGEMM_CHECK(g <= 1 || masked_m.stride(0) == 1, op, "masked_m must be contiguous, got stride ", masked_m.stride(0));
  check_alignment_and_overlap(out, "out", {{&x, "x"}, {&w, "w"}, {&masked_m, "masked_m"}}, op);

  p.groups = g;
  p.max_m = max_m;
  p.n = n;
  p.k = k;
  p.expected_m = expected_m;
  call.args.x = x.data;
  call.args.w = w.data;
  call.args.masked_m = static_cast<const std::int32_t*>(masked_m.data);
  call.args.out = out.data;
  return call;
}

}  // namespace tgemm
