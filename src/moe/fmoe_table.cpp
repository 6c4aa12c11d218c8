#include "moe/fmoe_table.h"

#include <functional>
#include <limits>

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
  std::size_t h = std::hash<std::string>()(k.arch);
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<std::size_t>(k.sm_count));
  mix(static_cast<std::size_t>(k.tokens));
  mix(static_cast<std::size_t>(k.experts));
  mix(static_cast<std::size_t>(k.topk));
  mix(static_cast<std::size_t>(k.hidden));
  mix(static_cast<std::size_t>(k.inter));
  mix(static_cast<std::size_t>(k.dtype) | static_cast<std::size_t>(k.quant) << 8 |
      static_cast<std::size_t>(k.activation) << 16);
  return h;
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
  static const std::vector<std::string> kColumns = {
      "arch",    "sm_count",       "tokens",     "T",        "E",  "topk", "H",  "I",
      "dtype",   "quant",          "activation", "solution", "up", "down", "us", "us_skewed",
      "speedup", "speedup_skewed", "default"};
  return kColumns;
}

const std::vector<std::string>& fmoe_untuned_columns() {
  static const std::vector<std::string> kColumns = {"T", "E", "topk", "H", "I", "dtype", "quant", "activation"};
  return kColumns;
}

namespace {

// Dimensions within int32: the bound validate_fused_moe puts on a call's (the kernels index rows
// with int32).
constexpr long long kMaxDim = std::numeric_limits<std::int32_t>::max();

bool is_power_of_two(long long v) { return v > 0 && (v & (v - 1)) == 0; }

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
  key->sm_count = static_cast<int>(get_int("sm_count", -1, 1, kMaxDim));
  key->tokens = get_int("tokens", -1, 1, kMaxDim);
  if (bad().empty() && !is_power_of_two(key->tokens)) {
    fail("tokens must be a power of two (a bucket of fmoe_tokens_bucket), got " + std::to_string(key->tokens));
  }
  key->experts = get_int("E", -1, 1, kMaxDim);
  key->topk = get_int("topk", -1, 1, kMaxDim);
  if (bad().empty() && key->topk > key->experts) {
    fail("topk " + std::to_string(key->topk) + " must be <= E " + std::to_string(key->experts));
  }
  key->hidden = get_int("H", -1, 1, kMaxDim);
  key->inter = get_int("I", -1, 1, kMaxDim);
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
  const std::string* t = field("T");
  row->t = t != nullptr && !t->empty() ? get_int("T", 0, 1, kMaxDim) : 0;
  if (bad().empty() && row->t > 0 && fmoe_tokens_bucket(row->t) != key.tokens) {
    fail("T=" + std::to_string(row->t) + " is in bucket " + std::to_string(fmoe_tokens_bucket(row->t)) +
         ", not tokens " + std::to_string(key.tokens));
  }
  read_solution(row);
  row->us = get_measure("us");
  row->us_skewed = get_measure("us_skewed");
  row->speedup = get_measure("speedup");
  row->speedup_skewed = get_measure("speedup_skewed");
  if (const std::string* d = field("default")) row->default_solution = *d;
  return bad();
}

}  // namespace

ParsedFmoeTable parse_fmoe_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits) {
  ParsedFmoeTable out;
  TableScan scan =
      read_table_rows(in, file, limits, {"arch", "sm_count", "tokens", "E", "topk", "H", "I", "dtype", "solution"},
                      [&](const TableColumns& cols, const std::vector<std::string>& fields, int line) {
                        FmoeRow row;
                        row.file = file;
                        row.line = line;
                        std::string bad = FmoeRowReader(cols, fields).read(&row);
                        if (bad.empty()) out.rows.push_back(std::move(row));
                        return bad;
                      });
  out.warnings = std::move(scan.warnings);
  return out;
}

std::string format_fmoe_row(const FmoeRow& r) {
  const FmoeKey& k = r.key;
  return csv::join({k.arch, std::to_string(k.sm_count), std::to_string(k.tokens), r.t > 0 ? std::to_string(r.t) : "",
                    std::to_string(k.experts), std::to_string(k.topk), std::to_string(k.hidden),
                    std::to_string(k.inter), std::string(dtype_name(k.dtype)), fmoe_quant_name(k.quant),
                    fmoe_activation_name(k.activation), r.solution, r.up, r.down, format_measure(r.us),
                    format_measure(r.us_skewed), format_measure(r.speedup), format_measure(r.speedup_skewed),
                    r.default_solution});
}

std::string format_fmoe_untuned_row(const FmoeKey& k) {
  return csv::join({std::to_string(k.tokens), std::to_string(k.experts), std::to_string(k.topk),
                    std::to_string(k.hidden), std::to_string(k.inter), std::string(dtype_name(k.dtype)),
                    fmoe_quant_name(k.quant), fmoe_activation_name(k.activation)});
}

}  // namespace tgemm
