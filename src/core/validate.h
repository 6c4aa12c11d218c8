// Argument checks of the public entry points, in this order: rank bounds and epilogue options,
// null pointers, dtypes, ranks and shape agreement, strides/layout, c, alignment, overlap (the first
// failing check names the error). On success they return the problem (device left 0; the runtime
// fills it) and the device arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/problem.h"
#include "tgemm/gemm.h"

namespace tgemm {

// Pieces every op's checks use (also src/quant's): "[4, 16]", "(16, 1)"; sizes and strides >= 0
// (tgemm::Error naming op and argument otherwise); the bytes from a view's first element to one
// past its last (false when that overflows 2^62).
std::string shape_str(const TensorView& t);
std::string strides_str(const TensorView& t);
void check_rank_and_sizes(const TensorView& t, const char* name, std::string_view op);
bool extent_bytes(const TensorView& t, std::int64_t& bytes);
// The row stride of t's leading dims collapsed into one (as a torch view would; dims of size 1
// may carry any stride), -1 where no leading dim has more than one element; a tgemm::Error naming
// op, argument and strides where they do not collapse.
std::int64_t collapsed_row_stride(const TensorView& t, const char* name, std::string_view op);
// tgemm::Error naming op and argument where t spans more than 2^62 bytes, where its data is not
// aligned to its element size; overlap(): empty when the byte ranges of a and b are disjoint, else
// a description of both.
void check_extent(const TensorView& t, const char* name, std::string_view op);
void check_element_alignment(const TensorView& t, const char* name, std::string_view op);
std::string overlap(const TensorView& a, const char* an, const TensorView& b, const char* bn);
// A row-major matrix in dims (row_dim, row_dim + 1) of t: unit column stride and rows that do not
// overlap (size-1 dimensions may carry any stride); returns the row stride (the row length where
// there is at most one row).
std::int64_t check_rows(const TensorView& t, int row_dim, const char* name, std::string_view op);

// The layout of a [rows, cols] fp32 block-scale matrix (1x128 or 128x128 blocks): row-major,
// strides (ld, 1) with ld >= cols, or, where allow_mn_major, MN-major,
// strides (1, ld) with ld >= rows (DeepGEMM's TMA-aligned layout rounds ld up to a multiple of 4;
// any other ld is accepted too: what torch's clone of a padded view gives). Dims of size 1 may carry any stride. A
// tgemm::Error naming op and argument where the shape is not [rows, cols] (`shape_text` spells
// it, e.g. "[M, ceil(K / 128)]") or the strides are neither layout.
struct BlockScaleLayout {
  bool mn_major = false;
  std::int64_t ld = 0;  // the row stride (row-major) or the column stride (MN-major)
};
BlockScaleLayout check_block_scale_layout(const TensorView& scale, const char* name, std::int64_t rows,
                                          std::int64_t cols, const char* shape_text, bool allow_mn_major,
                                          std::string_view op);

struct GemmCall {
  GemmProblem problem;
  GemmArgs args;
};

// Checks for out = x @ w^T (+ bias) as in gemm_a16w16; `op` names the entry point in messages.
GemmCall validate_a16w16(const TensorView& x, const TensorView& w, const TensorView& out,
                         const GemmOptions& options, std::string_view op = "gemm_a16w16");

// Checks for out = (x @ w^T) * x_scale * w_scale (+ bias) as in gemm_a8w8: x, w both
// float8_e4m3fn or both int8, rows of 16 bytes' multiple (K % 16 == 0); fp32 scales with 1
// element (per-tensor) or M (x, per-token) / N (w, per-channel) contiguous elements; out bf16,
// fp16 or fp32; bias [N] of out's dtype or fp32. Devices are the caller's to check (a TensorView
// carries none).
GemmCall validate_a8w8(const TensorView& x, const TensorView& w, const TensorView& x_scale, const TensorView& w_scale,
                       const TensorView& out, const TensorView* bias, std::string_view op = "gemm_a8w8");

// Checks for gemm_a8w8_blockscale: x, w float8_e4m3fn with 16-byte rows as in gemm_a8w8;
// x_scale [M, ceil(K/128)] fp32 row-major or MN-major; w_scale [ceil(N/128),
// ceil(K/128)] fp32 row-major; out and bias as in gemm_a8w8 (include/tgemm/a8w8.h).
GemmCall validate_a8w8_blockscale(const TensorView& x, const TensorView& w, const TensorView& x_scale,
                                  const TensorView& w_scale, const TensorView& out, const TensorView* bias,
                                  std::string_view op = "gemm_a8w8_blockscale");

// Checks of batched_gemm (include/tgemm/batched.h): a [B, M, K] or [B, K, M] (transpose_a), b
// [B, K, N] or [B, N, K] (transpose_b), out [B, M, N], bias [N]; rows contiguous, any batch stride
// of a and b (0: broadcast), out's elements distinct (its batch stride never 0) and not
// overlapping a, b or bias.
GemmCall validate_batched(const TensorView& a, const TensorView& b, const TensorView& out, bool transpose_a,
                          bool transpose_b, const TensorView* bias, std::string_view op = "batched_gemm");

// Checks of batched_gemm_a8w8 (include/tgemm/batched.h): a [B, M, K], b [B, N, K], both
// float8_e4m3fn or both int8 with 16-byte rows (K % 16 == 0), any batch stride (0: broadcast);
// a_scale one element, [B], [B, 1, 1] or [B, M, 1]; b_scale one element, [B], [B, 1, 1] or
// [B, N, 1] (fp32); out [B, M, N] bf16, fp16 or fp32 with distinct elements, not overlapping any
// input; bias [N] of out's dtype or fp32.
GemmCall validate_batched_a8w8(const TensorView& a, const TensorView& b, const TensorView& a_scale,
                               const TensorView& b_scale, const TensorView& out, const TensorView* bias,
                               std::string_view op = "batched_gemm_a8w8");

// gmm: out[rows of g] = lhs[rows of g] @ rhs[g] (+ bias[g]); see include/tgemm/gmm.h.
struct GmmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t groups = 0;           // G
  DType in_type = DType::kBFloat16;  // lhs and rhs
  DType out_type = DType::kBFloat16;
  DType bias_type = DType::kBFloat16;  // meaningful only with has_bias
  bool has_bias = false;
  bool transpose_rhs = false;  // rhs [G, N, K] (true) or [G, K, N] (false)
  // Strides in elements: lhs and out rows, rhs groups and rows (rhs.stride(0), rhs.stride(1)),
  // bias rows.
  std::int64_t lda = 0, ldo = 0, rhs_group_stride = 0, rhs_row_stride = 0, bias_stride = 0;
};

struct GmmArgs {
  const void* lhs = nullptr;
  const void* rhs = nullptr;
  const std::int32_t* group_sizes = nullptr;
  const void* bias = nullptr;
  void* out = nullptr;
};

struct GmmCall {
  GmmProblem problem;
  GmmArgs args;
};

// Largest N a gmm kernel grid covers: column tiles of 64 along gridDim.y (at most 65535).
inline constexpr std::int64_t kGmmMaxN = 64 * 65535;

// Checks of gmm, in the order of the other entry points: ranks, null pointers, dtypes, shape
// agreement (K, G of rhs, group_sizes and bias, N, M), strides, alignment, overlap.
GmmCall validate_gmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
                     bool transpose_rhs, const TensorView* bias, std::string_view op = "gmm");

}  // namespace tgemm
