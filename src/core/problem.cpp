#include "core/problem.h"

#include <tuple>

#include "core/check.h"

namespace tgemm {
namespace {

template <typename T>
void hash_mix(std::size_t& seed, const T& v) {
  seed ^= std::hash<T>{}(v) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

const char* py_bool(bool b) { return b ? "True" : "False"; }

}  // namespace

const FamilyInfo& family_info(OpFamily f) {
  static const FamilyInfo kA16W16{"gemm_a16w16",
                                  "bf16",
                                  "bf16_tuned_gemm.csv",
                                  "bf16_untuned_gemm.csv",
                                  "TGEMM_CONFIG_GEMM_BF16",
                                  "TGEMM_UNTUNED_GEMM_BF16"};
  static const FamilyInfo kA8W8{"gemm_a8w8",
                                "a8w8",
                                "a8w8_tuned_gemm.csv",
                                "a8w8_untuned_gemm.csv",
                                "TGEMM_CONFIG_GEMM_A8W8",
                                "TGEMM_UNTUNED_GEMM_A8W8"};
  // AITER's names for its batched table and variable (AITER_CONFIG_BF16_BATCHED_GEMM).
  static const FamilyInfo kBatched{"batched_gemm",
                                   "bf16_batched",
                                   "bf16_tuned_batched_gemm.csv",
                                   "bf16_untuned_batched_gemm.csv",
                                   "TGEMM_CONFIG_BF16_BATCHED_GEMM",
                                   "TGEMM_UNTUNED_BF16_BATCHED_GEMM"};
  // AITER's names (AITER_CONFIG_A8W8_BATCHED_GEMM).
  static const FamilyInfo kA8W8Batched{"batched_gemm_a8w8",
                                       "a8w8_batched",
                                       "a8w8_tuned_batched_gemm.csv",
                                       "a8w8_untuned_batched_gemm.csv",
                                       "TGEMM_CONFIG_A8W8_BATCHED_GEMM",
                                       "TGEMM_UNTUNED_A8W8_BATCHED_GEMM"};
  static const FamilyInfo kA8W8Blockscale{"gemm_a8w8_blockscale",
                                          "a8w8_blockscale",
                                          "a8w8_blockscale_tuned_gemm.csv",
                                          "a8w8_blockscale_untuned_gemm.csv",
                                          "TGEMM_CONFIG_GEMM_A8W8_BLOCKSCALE",
                                          "TGEMM_UNTUNED_GEMM_A8W8_BLOCKSCALE"};
  switch (f) {
    case OpFamily::kA16W16:
      return kA16W16;
    case OpFamily::kA8W8: return kA8W8;
    case OpFamily::kA8W8Blockscale: return kA8W8Blockscale;
    case OpFamily::kBatched: return kBatched;
    case OpFamily::kA8W8Batched: return kA8W8Batched;
  }
  detail::throw_error("family_info", "unknown op family ", static_cast<int>(f));
}

std::string_view epilogue_name(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return "none";
    case Epilogue::kBias:
      return "bias";
  }
  return "?";
}

std::string_view format_scale_recipe(ScaleGranularity x, ScaleGranularity w) {
  using G = ScaleGranularity;
  if (x == G::kNone && w == G::kNone) return "none";
  if (x == G::kTensor && w == G::kTensor) return "tensor";
  if (x == G::kRow && w == G::kTensor) return "token";
  if (x == G::kTensor && w == G::kRow) return "channel";
  if (x == G::kRow && w == G::kRow) return "token_channel";
  if (x == G::kBlock && w == G::kBlock) return "block";
  return "?";
}

std::optional<std::pair<ScaleGranularity, ScaleGranularity>> parse_scale_recipe(std::string_view text) {
  using G = ScaleGranularity;
  for (G x : {G::kNone, G::kTensor, G::kRow, G::kBlock}) {
    for (G w : {G::kNone, G::kTensor, G::kRow, G::kBlock}) {
      const std::string_view name = format_scale_recipe(x, w);
      if (name != "?" && name == text) return std::make_pair(x, w);
    }
  }
  return std::nullopt;
}

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "none";
    case Activation::kGelu:
      return "gelu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
    case Activation::kRelu:
      return "relu";
  }
  return "?";
}

std::string format_epilogue_key(const EpilogueKey& e) {
  std::string s(activation_name(e.activation));
  if (e.scaled) s += "+alpha";
  if (e.use_c) s += "+c";
  return s;
}

std::optional<EpilogueKey> parse_epilogue_key(std::string_view text) {
  EpilogueKey e;
  bool first = true;
  while (true) {
    std::size_t plus = text.find('+');
    std::string_view token = text.substr(0, plus);
    if (first) {
      bool found = false;
      for (Activation a : {Activation::kNone, Activation::kGelu, Activation::kGeluTanh, Activation::kRelu}) {
        if (token == activation_name(a)) {
          e.activation = a;
          found = true;
        }
      }
      if (!found) return std::nullopt;
      first = false;
    } else if (token == "alpha") {
      e.scaled = true;
    } else if (token == "c") {
      e.use_c = true;
    } else {
      return std::nullopt;
    }
    if (plus == std::string_view::npos) break;
    text.remove_prefix(plus + 1);
  }
  return e;
}

bool GemmProblem::operator==(const GemmProblem& o) const {
  auto tie = [](const GemmProblem& p) {
    return std::tie(p.family, p.m, p.n, p.k, p.a_type, p.b_type, p.out_type, p.bias_type, p.epilogue, p.activation,
                    p.unit_alpha, p.use_c, p.scale_ab, p.bpreshuffle, p.a_scale, p.b_scale, p.a_scale_mn_major,
                    p.ld_a_scale, p.ld_b_scale, p.lda, p.ldb, p.ldo, p.ldc, p.align_a, p.align_b, p.align_out,
                    p.align_bias, p.align_c, p.align_scales, p.batch, p.batch_stride_a, p.batch_stride_b,
                    p.batch_stride_out, p.batch_stride_a_scale, p.batch_stride_b_scale, p.transpose_a, p.transpose_b,
                    p.device);
  };
  return tie(*this) == tie(o);
}

std::string GemmProblem::describe() const {
  std::string s = batched_family(family) ? detail::concat("B=", batch, " transpose_a=", py_bool(transpose_a),
                                                          " transpose_b=", py_bool(transpose_b), " ")
                                         : std::string();
  s += detail::concat("M=", m, " N=", n, " K=", k, " bias=", py_bool(has_bias()), " dtype=", dtype_name(a_type),
                      " outdtype=", dtype_name(out_type));
  if (scale_ab) s += " scaleAB=True";
  if (bpreshuffle) s += " bpreshuffle=True";
  if (a_scale != ScaleGranularity::kNone || b_scale != ScaleGranularity::kNone) {
    s += detail::concat(" scales=", format_scale_recipe(a_scale, b_scale));
  }
  if (!plain_epilogue()) s += " epilogue=" + format_epilogue_key(epilogue_key());
  return s;
}

std::size_t GemmProblemHash::operator()(const GemmProblem& p) const noexcept {
  std::size_t h = 0;
  hash_mix(h, p.m);
  hash_mix(h, p.n);
  hash_mix(h, p.k);
  hash_mix(h, p.lda);
  hash_mix(h, p.ldb);
  hash_mix(h, p.ldo);
  hash_mix(h, p.ldc);
  hash_mix(h, p.ld_a_scale * 2 + static_cast<int>(p.a_scale_mn_major));
  hash_mix(h, p.ld_b_scale);
  hash_mix(h, p.batch);
  hash_mix(h, p.batch_stride_a);
  hash_mix(h, p.batch_stride_b);
  hash_mix(h, p.batch_stride_out);
  hash_mix(h, p.batch_stride_a_scale * 3 + p.batch_stride_b_scale);
  hash_mix(h, static_cast<int>(p.transpose_a) | (static_cast<int>(p.transpose_b) << 1));
  hash_mix(h, static_cast<int>(p.activation) | (static_cast<int>(p.unit_alpha) << 4) |
                  (static_cast<int>(p.use_c) << 5) | (static_cast<int>(p.align_c) << 6) |
                  (static_cast<int>(p.a_scale) << 11) | (static_cast<int>(p.b_scale) << 13) |
                  (static_cast<int>(p.align_scales) << 15));
  std::uint64_t packed = 0;
  packed |= static_cast<std::uint64_t>(p.family);
  packed |= static_cast<std::uint64_t>(p.a_type) << 4;
  packed |= static_cast<std::uint64_t>(p.b_type) << 8;
  packed |= static_cast<std::uint64_t>(p.out_type) << 12;
  packed |= static_cast<std::uint64_t>(p.bias_type) << 16;
  packed |= static_cast<std::uint64_t>(p.epilogue) << 20;
  packed |= static_cast<std::uint64_t>(p.scale_ab) << 24;
  packed |= static_cast<std::uint64_t>(p.bpreshuffle) << 25;
  packed |= static_cast<std::uint64_t>(p.align_a) << 26;
  packed |= static_cast<std::uint64_t>(p.align_b) << 31;
  packed |= static_cast<std::uint64_t>(p.align_out) << 36;
  packed |= static_cast<std::uint64_t>(p.align_bias) << 41;
  packed |= static_cast<std::uint64_t>(p.device) << 46;
  hash_mix(h, packed);
  return h;
}

std::uint8_t address_alignment(const void* p) {
  auto v = reinterpret_cast<std::uintptr_t>(p);
  std::uint8_t a = 16;
  while (a > 1 && (v % a) != 0) a = static_cast<std::uint8_t>(a / 2);
  return a;
}

OpFamily TableKey::family() const {
  const bool quantized = dtype == DType::kFloat8E4M3 || dtype == DType::kFloat8E5M2 || dtype == DType::kInt8;
  if (batch > 0) return quantized ? OpFamily::kA8W8Batched : OpFamily::kBatched;
  if (a_scale == ScaleGranularity::kBlock) return OpFamily::kA8W8Blockscale;
  return quantized ? OpFamily::kA8W8 : OpFamily::kA16W16;
}

std::uint8_t stride_alignment(std::int64_t stride, DType t) {
  return address_alignment(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(stride) * dtype_size(t)));
}

bool TableKey::operator==(const TableKey& o) const {
  return std::tie(arch, sm_count, n, k, bias, dtype, out_dtype, scale_ab, bpreshuffle, a_scale, b_scale, batch,
                  transpose_a, transpose_b) == std::tie(o.arch, o.sm_count, o.n, o.k, o.bias, o.dtype, o.out_dtype,
                                                        o.scale_ab, o.bpreshuffle, o.a_scale, o.b_scale, o.batch,
                                                        o.transpose_a, o.transpose_b) &&
         epilogue == o.epilogue;
}

std::string TableKey::describe() const {
  const std::string batched = batch > 0 ? detail::concat(" B=", batch, " transpose_a=", py_bool(transpose_a),
                                                         " transpose_b=", py_bool(transpose_b))
                                        : std::string();
  return detail::concat(
      "arch=", arch, " sm_count=", sm_count, " N=", n, " K=", k, " bias=", py_bool(bias), " dtype=", dtype_name(dtype),
      " outdtype=", dtype_name(out_dtype), " scaleAB=", py_bool(scale_ab), " bpreshuffle=", py_bool(bpreshuffle),
      " epilogue=", format_epilogue_key(epilogue), a_scale != ScaleGranularity::kNone ? " scales=" : "",
      a_scale != ScaleGranularity::kNone ? format_scale_recipe(a_scale, b_scale) : "", batched);
}

std::size_t TableKeyHash::operator()(const TableKey& k) const noexcept {
  std::size_t h = std::hash<std::string>{}(k.arch);
  hash_mix(h, k.sm_count);
  hash_mix(h, k.n);
  hash_mix(h, k.k);
  hash_mix(h, k.batch);
  hash_mix(h, (static_cast<int>(k.transpose_a) << 0) | (static_cast<int>(k.transpose_b) << 1));
  hash_mix(h, (static_cast<int>(k.bias) << 0) | (static_cast<int>(k.scale_ab) << 1) |
                  (static_cast<int>(k.bpreshuffle) << 2) | (static_cast<int>(k.dtype) << 3) |
                  (static_cast<int>(k.out_dtype) << 8) | (static_cast<int>(k.epilogue.activation) << 16) |
                  (static_cast<int>(k.epilogue.scaled) << 20) | (static_cast<int>(k.epilogue.use_c) << 21) |
                  (static_cast<int>(k.a_scale) << 22) | (static_cast<int>(k.b_scale) << 24));
  return h;
}

TableKey table_key(const GemmProblem& p, const std::string& arch, int sm_count) {
  TableKey k;
  k.arch = arch;
  k.sm_count = sm_count;
  k.n = p.n;
  k.k = p.k;
  k.bias = p.has_bias();
  k.dtype = p.a_type;
  k.out_dtype = p.out_type;
  k.scale_ab = p.scale_ab;
  k.bpreshuffle = p.bpreshuffle;
  k.epilogue = p.epilogue_key();
  k.a_scale = p.a_scale;
  k.b_scale = p.b_scale;
  if (batched_family(p.family)) {
    k.batch = p.batch;
    k.transpose_a = p.transpose_a;
    k.transpose_b = p.transpose_b;
  }
  return k;
}

void set_raced_block_scale_layout(GemmProblem& p) {
  if (p.family != OpFamily::kA8W8Blockscale) return;
  p.a_scale_mn_major = true;
  p.ld_a_scale = (p.m + 3) / 4 * 4;
  p.ld_b_scale = ((p.k + 127) / 128 + 3) / 4 * 4;
}

GemmProblem problem_of_key(const TableKey& key, std::int64_t m, int device) {
  GemmProblem p;
  p.m = m;
  p.n = key.n;
  p.k = key.k;
  p.a_type = p.b_type = key.dtype;
  p.out_type = key.out_dtype;
  p.bias_type = key.dtype;
  p.epilogue = key.bias ? Epilogue::kBias : Epilogue::kNone;
  p.activation = key.epilogue.activation;
  p.unit_alpha = !key.epilogue.scaled;
  p.use_c = key.epilogue.use_c;
  p.scale_ab = key.scale_ab;
  p.bpreshuffle = key.bpreshuffle;
  p.a_scale = key.a_scale;
  p.b_scale = key.b_scale;
  if (key.a_scale != ScaleGranularity::kNone) {
    // a8w8: the family follows from the scales; a bias is added in fp32 and given in out's dtype.
    p.family = key.a_scale == ScaleGranularity::kBlock ? OpFamily::kA8W8Blockscale : OpFamily::kA8W8;
    p.bias_type = key.out_dtype;
  }
  set_raced_block_scale_layout(p);
  p.lda = p.ldb = key.k;
  p.ldo = p.ldc = key.n;
  if (key.batch > 0) {
    // batched: dense operands of the stored layouts, one matrix after another; a8w8_batched's
    // scales one per product (per-tensor) or one vector per product (per-row).
    p.family = key.a_scale != ScaleGranularity::kNone ? OpFamily::kA8W8Batched : OpFamily::kBatched;
    p.batch_stride_a_scale = key.a_scale == ScaleGranularity::kRow ? m : 1;
    p.batch_stride_b_scale = key.b_scale == ScaleGranularity::kRow ? key.n : 1;
    if (p.family == OpFamily::kBatched) p.batch_stride_a_scale = p.batch_stride_b_scale = 0;
    p.batch = key.batch;
    p.transpose_a = key.transpose_a;
    p.transpose_b = key.transpose_b;
    p.lda = key.transpose_a ? m : key.k;
    p.ldb = key.transpose_b ? key.k : key.n;
    p.batch_stride_a = m * key.k;
    p.batch_stride_b = key.n * key.k;
    p.batch_stride_out = m * key.n;
    if (key.batch > 1) {
      // Dense bases: the strides' alignment is each operand's (as validate_batched takes it).
      p.align_a = stride_alignment(p.batch_stride_a, p.a_type);
      p.align_b = stride_alignment(p.batch_stride_b, p.b_type);
      p.align_out = stride_alignment(p.batch_stride_out, p.out_type);
    }
  }
  p.device = device;
  return p;
}

}  // namespace tgemm
