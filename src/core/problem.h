// A Problem is the full description of one GEMM call; a TableKey is the part of it the tuned
// tables are keyed by (M is looked up separately, by the walk in lookup.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tgemm/gemm.h"
#include "tgemm/tensor.h"

namespace tgemm {

// One op family = one table family (configs/<tuned_file>, its own environment variables).
enum class OpFamily : std::uint8_t {
  kA16W16,          // bf16/fp16 inputs: gemm_a16w16 and its fused-epilogue forms
  kA8W8,            // float8_e4m3fn or int8 inputs with fp32 scales: gemm_a8w8
  kA8W8Blockscale,  // float8_e4m3fn inputs with 1x128 (x) and 128x128 (w) fp32 block scales
  kBatched,         // bf16/fp16 strided-batched products: batched_gemm
  kA8W8Batched,     // float8_e4m3fn or int8 strided-batched products with fp32 scales: batched_gemm_a8w8
};
inline constexpr int kOpFamilies = 5;
inline constexpr OpFamily kAllOpFamilies[] = {OpFamily::kA16W16, OpFamily::kA8W8, OpFamily::kA8W8Blockscale,
                                              OpFamily::kBatched, OpFamily::kA8W8Batched};
// The families of 8-bit operands with fp32 scales (gemm_a8w8, gemm_a8w8_blockscale,
// batched_gemm_a8w8): a `scales` column in their tables, cuBLASLt's a8w8 solutions.
inline bool quantized_family(OpFamily f) {
  return f == OpFamily::kA8W8 || f == OpFamily::kA8W8Blockscale || f == OpFamily::kA8W8Batched;
}
// The families of B products (batched_gemm, batched_gemm_a8w8): `B`, `transpose_a` and
// `transpose_b` columns in their tables, batch strides in their problems.
inline bool batched_family(OpFamily f) { return f == OpFamily::kBatched || f == OpFamily::kA8W8Batched; }

struct FamilyInfo {
  std::string_view op;            // public op name, for messages
  std::string_view table;         // the family's name in messages and keys: "bf16", "a8w8", "bf16_batched"
  std::string_view tuned_file;    // "bf16_tuned_gemm.csv": the shipped shared and per-card tables
  std::string_view untuned_file;  // "bf16_untuned_gemm.csv": the capture's default file
  std::string_view config_env;    // "TGEMM_CONFIG_GEMM_BF16": tuned tables to load
  std::string_view untuned_env;   // "TGEMM_UNTUNED_GEMM_BF16": where the capture writes
};
const FamilyInfo& family_info(OpFamily f);

enum class Epilogue : std::uint8_t {
  kNone,
  kBias,  // + bias[N]
};
std::string_view epilogue_name(Epilogue e);

// How finely an a8w8 operand's fp32 scale varies: one scalar for the tensor, or one value per row
// (per token for x [M, K], per output channel for w [N, K]), or one per block (blockscale: 1x128
// blocks of x, 128x128 blocks of w). kNone: no scale (a16w16).
enum class ScaleGranularity : std::uint8_t { kNone, kTensor, kRow, kBlock };

// The `scales` column of the a8w8 tables: x's granularity, then w's.
//   tensor         x per-tensor,  w per-tensor
//   token          x per-token,   w per-tensor
//   channel        x per-tensor,  w per-channel
//   token_channel  x per-token,   w per-channel
//   block          x 1x128 blocks, w 128x128 blocks (the a8w8_blockscale tables)
// "none" for both kNone (a16w16 rows).
std::string_view format_scale_recipe(ScaleGranularity x, ScaleGranularity w);
// nullopt for an unknown name.
std::optional<std::pair<ScaleGranularity, ScaleGranularity>> parse_scale_recipe(std::string_view text);
std::string_view activation_name(Activation a);  // none | gelu | gelu_tanh | relu

// What a table row's `epilogue` column holds: the activation, then "+alpha" when alpha != 1 and
// "+c" when beta * c is added ("none", "gelu", "relu+c", "none+alpha+c"). The bias has its own
// column, as in AITER's tables.
struct EpilogueKey {
  Activation activation = Activation::kNone;
  bool scaled = false;  // alpha != 1
  bool use_c = false;   // beta != 0
  bool operator==(const EpilogueKey& o) const {
    return activation == o.activation && scaled == o.scaled && use_c == o.use_c;
  }
};
std::string format_epilogue_key(const EpilogueKey& e);
// nullopt for an unknown token.
std::optional<EpilogueKey> parse_epilogue_key(std::string_view text);

struct GemmProblem {
  OpFamily family = OpFamily::kA16W16;
  std::int64_t m = 0, n = 0, k = 0;
  DType a_type = DType::kBFloat16;    // x
  DType b_type = DType::kBFloat16;    // w
  DType out_type = DType::kBFloat16;
  DType bias_type = DType::kBFloat16;  // meaningful only with a bias epilogue
  Epilogue epilogue = Epilogue::kNone;
  Activation activation = Activation::kNone;
  bool unit_alpha = true;  // alpha == 1 (solutions that cannot scale check this)
  bool use_c = false;      // beta != 0: beta * c is added (c: [M, N], out's dtype, ld ldc)
  bool scale_ab = false;
  bool bpreshuffle = false;
  // a8w8: granularity of x's and w's fp32 scales (GemmArgs::a_scale, b_scale); kNone otherwise.
  ScaleGranularity a_scale = ScaleGranularity::kNone;
  ScaleGranularity b_scale = ScaleGranularity::kNone;
  // a8w8_blockscale: the layout of the block scales (include/tgemm/a8w8.h). x_scale [M, ceil(K/128)]
  // is row-major with row stride ld_a_scale, or MN-major (a_scale_mn_major) with column stride
  // ld_a_scale; w_scale [ceil(N/128), ceil(K/128)] is row-major with row stride ld_b_scale.
  bool a_scale_mn_major = false;
  std::int64_t ld_a_scale = 0, ld_b_scale = 0;
  // Leading dimensions in elements: x [M,K] row stride, w [N,K] row stride, out [M,N] row stride.
  std::int64_t lda = 0, ldb = 0, ldo = 0;
  std::int64_t ldc = 0;  // row stride of c when use_c
  // Largest power of two (capped at 16) dividing each base address, in bytes. Part of the problem
  // because kernels with 16-byte vector or TMA loads can only run on 16-byte-aligned operands.
  std::uint8_t align_a = 16, align_b = 16, align_out = 16, align_bias = 16, align_c = 16;
  // The smaller alignment of the two scale pointers (a8w8): cuBLASLt reads scale vectors with
  // vector loads.
  std::uint8_t align_scales = 16;
  // batched: `batch` products out[i] = op(a[i]) @ op(b[i]) (+ bias), each operand i at
  // batch_stride_* elements from operand i - 1 (0 for a or b: one matrix broadcast to every
  // product; never 0 for out). transpose_a: a stored [K, M] (element (m, k) at k * lda + m), else
  // [M, K]; transpose_b: b stored [N, K] (element (n, k) at n * ldb + k, gemm_a16w16's w layout,
  // hence true for the other families), else [K, N] (at k * ldb + n).
  std::int64_t batch = 1;
  std::int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_out = 0;
  // a8w8_batched: product i reads its scales at a_scale + i * batch_stride_a_scale (and b's
  // likewise), in floats; 0 where one scale (or one vector) serves every product.
  std::int64_t batch_stride_a_scale = 0, batch_stride_b_scale = 0;
  bool transpose_a = false;
  bool transpose_b = true;
  int device = 0;  // ordinal; tables are per arch and SM count, so decisions are per device

  bool has_bias() const { return epilogue == Epilogue::kBias; }
  // Only the product (and optionally bias): what every backend implements.
  bool plain_epilogue() const { return activation == Activation::kNone && unit_alpha && !use_c; }
  EpilogueKey epilogue_key() const { return {activation, !unit_alpha, use_c}; }
  bool operator==(const GemmProblem& o) const;
  bool operator!=(const GemmProblem& o) const { return !(*this == o); }
  // "M=1 N=4096 K=4096 bias=False dtype=torch.bfloat16 outdtype=torch.bfloat16"
  std::string describe() const;
};

struct GemmProblemHash {
  std::size_t operator()(const GemmProblem& p) const noexcept;
};

// Alignment, in bytes, of an address (largest power of two dividing it, at most 16).
std::uint8_t address_alignment(const void* p);
// The same of a batch stride of `stride` elements of t: batched_gemm's product i starts i strides
// past the base, so an operand keeps the smaller of the base's and this alignment (16 for 0).
std::uint8_t stride_alignment(std::int64_t stride, DType t);

// The table key: what a tuned row applies to, minus M.
struct TableKey {
  std::string arch;  // "sm_90a"
  int sm_count = 0;
  std::int64_t n = 0, k = 0;
  bool bias = false;
  DType dtype = DType::kBFloat16;
  DType out_dtype = DType::kBFloat16;
  bool scale_ab = false;
  bool bpreshuffle = false;
  EpilogueKey epilogue;
  ScaleGranularity a_scale = ScaleGranularity::kNone;  // the `scales` column (a8w8)
  ScaleGranularity b_scale = ScaleGranularity::kNone;
  // batched and a8w8_batched: the `B`, `transpose_a` and `transpose_b` columns; batch 0 for the
  // other families.
  std::int64_t batch = 0;
  bool transpose_a = false;
  bool transpose_b = false;

  // The family whose table holds rows of this key: batched (a8w8_batched for 8-bit dtypes) where it
  // has a batch, a8w8_blockscale for block scales, else by dtype.
  OpFamily family() const;
  bool operator==(const TableKey& o) const;
  std::string describe() const;
};

struct TableKeyHash {
  std::size_t operator()(const TableKey& k) const noexcept;
};

TableKey table_key(const GemmProblem& p, const std::string& arch, int sm_count);
// The problem a table row describes, with contiguous, 16-byte aligned operands (what the tuner
// races): table_key(problem_of_key(k, m, d), k.arch, k.sm_count) == k.
GemmProblem problem_of_key(const TableKey& key, std::int64_t m, int device);
// The block-scale layout raced for an a8w8_blockscale problem (no-op for other families): what
// cuBLASLt reads without a copy, x_scale MN-major with column stride M rounded up to 4 (DeepGEMM's
// TMA-aligned layout) and w_scale row-major with rows ceil(K/128) rounded up to 4 apart. The layout
// is no part of the key: a row-major x_scale adds the same transpose pass to every cuBLASLt
// candidate.
void set_raced_block_scale_layout(GemmProblem& p);

// Device arguments of one call; shapes and types live in the GemmProblem.
struct GemmArgs {
  const void* a = nullptr;     // x [M,K]
  const void* b = nullptr;     // w [N,K]
  void* out = nullptr;         // [M,N]
  const void* bias = nullptr;  // [N]
  const void* c = nullptr;     // [M,N], read when the problem's use_c
  const float* a_scale = nullptr;  // a8w8: x's scale, [1] or [M] (problem's a_scale); blockscale: x_scale
  const float* b_scale = nullptr;  // a8w8: w's scale, [1] or [N] (problem's b_scale); blockscale: w_scale
  float alpha = 1.0f;
  float beta = 0.0f;
};

// Scratch memory handed to a solution; owned by the runtime, per device and stream.
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

}  // namespace tgemm
