#include "moe/fmoe_table.h"

#include "core/table_rows.h"

namespace tgemm {

std::int64_t fmoe_tokens_bucket(std::int64_t t) {
  if (t <= 0) return 0;
  std::int64_t b = 1;
  while (b < t) b *= 2;
  return b;
}

const char* fmoe_quant_name(FmoeQuant q) {
  switch (q) {
    case FmoeQuant::kFp8Block: return "fp8_block";
    case FmoeQuant::kFp8Rowwise: return "fp8_rowwise";
    case FmoeQuant::kNone: break;
  }
  return "none";
}

std::optional<FmoeQuant> parse_fmoe_quant(std::string_view s) {
  if (s == "none") return FmoeQuant::kNone;
  if (s == "fp8_block") return FmoeQuant::kFp8Block;
  if (s == "fp8_rowwise") return FmoeQuant::kFp8Rowwise;
  return std::nullopt;
}

const char* fmoe_activation_name(MoeActivation a) { return a == MoeActivation::kGelu ? "gelu" : "silu"; }

std::optional<MoeActivation> parse_fmoe_activation(std::string_view s) {
  if (s == "silu") return MoeActivation::kSilu;
  if (s == "gelu") return MoeActivation::kGelu;
  return std::nullopt;
}

bool FmoeKey::operator==(const FmoeKey& o) const {
  return arch == o.arch && sm_count == o.sm_count && tokens == o.tokens && experts == o.experts && topk == o.topk &&
         hidden == o.hidden && inter == o.inter && dtype == o.dtype && quant == o.quant && activation == o.activation;
}

std::string FmoeKey::describe() const {
  return "tokens=" + std::to_string(tokens) + " E=" + std::to_string(experts) + " topk=" + std::to_string(topk) +
         " H=" + std::to_string(hidden) + " I=" + std::to_string(inter) + " dtype=" + std::string(dtype_name(dtype)) +
         " quant=" + fmoe_quant_name(quant) + " activation=" + fmoe_activation_name(activation);
}

std::size_t FmoeKeyHash::operator()(const FmoeKey& k) const noexcept {
  return hash_key(k.arch, {static_cast<std::size_t>(k.sm_count), static_cast<std::size_t>(k.tokens),
                           static_cast<std::size_t>(k.experts), static_cast<std::size_t>(k.topk),
                           static_cast<std::size_t>(k.hidden), static_cast<std::size_t>(k.inter),
                           static_cast<std::size_t>(k.dtype) | static_cast<std::size_t>(k.quant) << 8 |
                               static_cast<std::size_t>(k.activation) << 16});
}

FmoeKey fmoe_key(std::int64_t t, std::int64_t experts, std::int64_t topk, std::int64_t hidden, std::int64_t inter,
                 DType dtype, FmoeQuant quant, MoeActivation activation, const std::string& arch, int sm_count) {
  FmoeKey key;
  key.arch = arch;
  key.sm_count = sm_count;
  key.tokens = fmoe_tokens_bucket(t);
  key.experts = experts;
  key.topk = topk;
  key.hidden = hidden;
  key.inter = inter;
  key.dtype = dtype;
  key.quant = quant;
  key.activation = activation;
  return key;
}

const std::vector<std::string>& fmoe_tuned_columns() {
  static const std::vector<std::string> kColumns =
      with_race_columns({"arch", "sm_count", "tokens", "T", "E", "topk", "H", "I", "dtype", "quant", "activation",
                         "solution", "up", "down"});
  return kColumns;
}

const std::vector<std::string>& fmoe_untuned_columns() {
  static const std::vector<std::string> kColumns = {"T", "E", "topk", "H", "I", "dtype", "quant", "activation"};
  return kColumns;
}

namespace {

// One data line's fields as a row: an empty return means the row is good, else the first reason
// it is not.
class FmoeRowReader : public RowFields {
 public:
  using RowFields::RowFields;
  std::string read(FmoeRow* row);

 private:
  void read_key(FmoeKey* key);
  void read_solution(FmoeRow* row);
};

void FmoeRowReader::read_key(FmoeKey* key) {
  key->arch = *field("arch");
  if (key->arch.empty()) fail("empty arch");
  key->sm_count = static_cast<int>(get_int("sm_count", -1, 1, kMaxTableDim));
  key->tokens = get_bucket("tokens", "fmoe_tokens_bucket");
  key->experts = get_int("E", -1, 1, kMaxTableDim);
  key->topk = get_int("topk", -1, 1, kMaxTableDim);
  if (bad().empty() && key->topk > key->experts) {
    fail("topk " + std::to_string(key->topk) + " must be <= E " + std::to_string(key->experts));
  }
  key->hidden = get_int("H", -1, 1, kMaxTableDim);
  key->inter = get_int("I", -1, 1, kMaxTableDim);
  key->dtype = get_dtype("dtype", std::nullopt);
  const std::string* quant = field("quant");
  if (quant != nullptr && !quant->empty()) {
    const auto q = parse_fmoe_quant(*quant);
    if (!q) fail("unknown quant '" + *quant + "' (expected none, fp8_block or fp8_rowwise)");
    key->quant = q.value_or(FmoeQuant::kNone);
  }
  const bool fp8 = key->dtype == DType::kFloat8E4M3;
  if (key->quant == FmoeQuant::kNone && key->dtype != DType::kBFloat16 && key->dtype != DType::kFloat16) {
    fail("dtype must be torch.bfloat16 or torch.float16 (fused_moe's inputs) where quant is none, got " +
         std::string(dtype_name(key->dtype)));
  } else if (key->quant != FmoeQuant::kNone && !fp8) {
    fail(std::string("quant ") + fmoe_quant_name(key->quant) + " needs dtype torch.float8_e4m3fn, got " +
         std::string(dtype_name(key->dtype)));
  }
  const std::string* act = field("activation");
  if (act != nullptr && !act->empty()) {
    const auto a = parse_fmoe_activation(*act);
    if (!a) fail("unknown activation '" + *act + "' (expected silu or gelu)");
    key->activation = a.value_or(MoeActivation::kSilu);
  }
}

void FmoeRowReader::read_solution(FmoeRow* row) {
  row->solution = *field("solution");
  if (const std::string* up = field("up")) row->up = *up;
  if (const std::string* down = field("down")) row->down = *down;
  if (row->solution == kFmoeTileSolution) {
    if (!row->up.empty() || !row->down.empty()) fail("a tile row names no CUTLASS instance (up and down empty)");
  } else if (row->solution == kFmoeCutlassSolution) {
    if (row->up.empty() || row->down.empty()) {
      fail("a cutlass row names the CUTLASS grouped instances of both GEMMs (up and down)");
    }
  } else {
    fail("solution must be tile or cutlass, got '" + row->solution + "'");
  }
}

std::string FmoeRowReader::read(FmoeRow* row) {
  FmoeKey& key = row->key;
  read_key(&key);
  row->t = get_race_size("T", fmoe_tokens_bucket, key.tokens, "tokens");
  read_solution(row);
  get_race(row);
  return bad();
}

}  // namespace

ParsedFmoeTable parse_fmoe_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits) {
  return parse_keyed_rows<FmoeRow, FmoeRowReader>(
      in, file, limits, {"arch", "sm_count", "tokens", "E", "topk", "H", "I", "dtype", "solution"});
}

std::string format_fmoe_row(const FmoeRow& r) {
  const FmoeKey& k = r.key;
  return format_race_row({k.arch, std::to_string(k.sm_count), std::to_string(k.tokens),
                          r.t > 0 ? std::to_string(r.t) : "", std::to_string(k.experts), std::to_string(k.topk),
                          std::to_string(k.hidden), std::to_string(k.inter), std::string(dtype_name(k.dtype)),
                          fmoe_quant_name(k.quant), fmoe_activation_name(k.activation), r.solution, r.up, r.down},
                         r);
}

std::string format_fmoe_untuned_row(const FmoeKey& k) {
  return csv::join({std::to_string(k.tokens), std::to_string(k.experts), std::to_string(k.topk),
                    std::to_string(k.hidden), std::to_string(k.inter), std::string(dtype_name(k.dtype)),
                    fmoe_quant_name(k.quant), fmoe_activation_name(k.activation)});
}

}  // namespace tgemm
