#include "backends/skinny/skinny_batched_names.h"

#include <cctype>

namespace tgemm::skinny {
namespace {

constexpr std::string_view kPrefix = "batched_skinny:sm90_";
constexpr std::string_view kGemvTag = "bgemv_";
constexpr std::string_view kMmaTag = "bmma_";

// A positive decimal number without leading zeros at text[i..], at most 4 digits; advances i.
std::optional<int> read_number(std::string_view text, std::size_t& i) {
  const std::size_t start = i;
  int v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
    if (i - start >= 4) return std::nullopt;
    v = 10 * v + (text[i++] - '0');
  }
  if (i == start || text[start] == '0') return std::nullopt;
  return v;
}

// `_<key><value>` at text[i..]; advances i.
std::optional<int> read_field(std::string_view text, std::size_t& i, std::string_view key) {
  if (text.substr(i, 1 + key.size()) != std::string("_") + std::string(key)) return std::nullopt;
  i += 1 + key.size();
  return read_number(text, i);
}

// The key of a tile's last field: u (mma), l (gemv nk) or c (gemv kn).
const char* param_key(const BatchedTile& t) {
  if (t.family == BatchedFamily::kMma) return "u";
  return t.layout == BatchedLayout::kNK ? "l" : "c";
}

bool is_out_type(DType t) { return t == DType::kBFloat16 || t == DType::kFloat16 || t == DType::kFloat32; }

// The product alone (and a bias) of 16-bit inputs: what both kernels compute.
bool accepts_operands(const GemmProblem& p) noexcept {
  if (p.family != OpFamily::kBatched) return false;
  if (p.a_type != p.b_type || (p.a_type != DType::kBFloat16 && p.a_type != DType::kFloat16)) return false;
  if (p.scale_ab || p.bpreshuffle || p.a_scale != ScaleGranularity::kNone || p.b_scale != ScaleGranularity::kNone)
    return false;
  if (!p.plain_epilogue()) return false;
  if (!is_out_type(p.out_type) || p.align_out < dtype_size(p.out_type)) return false;
  return !p.has_bias() || (is_out_type(p.bias_type) && p.align_bias >= dtype_size(p.bias_type));
}

}  // namespace

std::vector<BatchedTile> batched_tiles() {
  std::vector<BatchedTile> out;
#define TGEMM_BATCHED_ADD_NK(M, L) out.push_back(BatchedTile{BatchedLayout::kNK, M, L});
#define TGEMM_BATCHED_ADD_KN(M, C) out.push_back(BatchedTile{BatchedLayout::kKN, M, C});
#define TGEMM_BATCHED_ADD_MMA(M, U) out.push_back(BatchedTile{BatchedLayout::kNK, M, U, BatchedFamily::kMma});
  TGEMM_BATCHED_SKINNY_NK_TILES(TGEMM_BATCHED_ADD_NK)
  TGEMM_BATCHED_SKINNY_KN_TILES(TGEMM_BATCHED_ADD_KN)
  TGEMM_BATCHED_SKINNY_MMA_TILES(TGEMM_BATCHED_ADD_MMA)
#undef TGEMM_BATCHED_ADD_NK
#undef TGEMM_BATCHED_ADD_KN
#undef TGEMM_BATCHED_ADD_MMA
  return out;
}

std::string batched_skinny_name(const BatchedTile& t) {
  const bool mma = t.family == BatchedFamily::kMma;
  return std::string(kPrefix) + std::string(mma ? kMmaTag : kGemvTag) + (t.layout == BatchedLayout::kNK ? "nk" : "kn") +
         "_m" + std::to_string(t.m_max) + "_" + param_key(t) + std::to_string(t.param);
}

std::optional<BatchedTile> parse_batched_skinny_name(std::string_view name) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::size_t i = kPrefix.size();
  BatchedTile t;
  if (name.substr(i, kMmaTag.size()) == kMmaTag) {
    t.family = BatchedFamily::kMma;
    i += kMmaTag.size();
  } else if (name.substr(i, kGemvTag.size()) == kGemvTag) {
    i += kGemvTag.size();
  } else {
    return std::nullopt;
  }
  const std::string_view layout = name.substr(i, 2);
  if (layout == "nk")
    t.layout = BatchedLayout::kNK;
  else if (layout == "kn")
    t.layout = BatchedLayout::kKN;
  else
    return std::nullopt;
  i += 2;
  const auto m = read_field(name, i, "m");
  if (!m) return std::nullopt;
  if (t.family == BatchedFamily::kMma && t.layout != BatchedLayout::kNK) return std::nullopt;
  const auto param = read_field(name, i, param_key(t));
  if (!param || i != name.size()) return std::nullopt;
  t.m_max = *m;
  t.param = *param;
  return t;
}

bool batched_tile_accepts(const BatchedTile& t, const GemmProblem& p) noexcept {
  if (!accepts_operands(p)) return false;
  // gridDim.y carries the batch.
  if (p.batch < 1 || p.batch > 65535) return false;
  // The kernels index columns and k in int32: n0 + 8 * COLS and k + 2 * slices stay below 2^31.
  constexpr std::int64_t kMaxDim = std::int64_t{1} << 30;
  if (p.m < 1 || p.m > t.m_max || p.n < 1 || p.n > kMaxDim || p.k < 1 || p.k > kMaxDim) return false;
  if (p.m > 1 && p.ldo < p.n) return false;
  // 16-byte chunks of b's rows: 8 elements of a 16-bit dtype.
  if (p.align_b < 16) return false;
  if (t.layout == BatchedLayout::kNK) {
    if (!p.transpose_b || p.transpose_a || p.align_a < 16) return false;
    if ((p.m > 1 && p.lda % 8 != 0) || (p.n > 1 && p.ldb % 8 != 0)) return false;
  } else {
    if (p.transpose_b || (p.k > 1 && p.ldb % 8 != 0)) return false;
    if (p.align_a < 2) return false;
  }
  return true;
}

}  // namespace tgemm::skinny
