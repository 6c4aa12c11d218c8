#include "backends/skinny/skinny_names.h"

#include <cctype>
#include <cstddef>
#include <utility>
#include <vector>

namespace tgemm::skinny {
namespace {

constexpr std::string_view kPrefix = "skinny:sm90_";
constexpr std::string_view kGemvTag = "gemv";
constexpr std::string_view kWeightATag = "mma_wa";
constexpr std::string_view kWeightBTag = "mma_wb";

std::string field(const char* key, int value) { return std::string("_") + key + std::to_string(value); }

// One `_<key><value>` field: the key's lower-case letters, then the value's digits (none for a
// flag such as `wp`: value 0).
struct Field {
  std::string key;
  int value = 0;
  bool has_value = false;
};

// The fields after the family tag ("_m1_w8_c4" -> m 1, w 8, c 4), or nullopt if the text is not a
// sequence of fields or a value is not a positive decimal number without leading zeros.
std::optional<std::vector<Field>> split_fields(std::string_view text) {
  std::vector<Field> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '_') return std::nullopt;
    ++i;
    Field f;
    while (i < text.size() && std::islower(static_cast<unsigned char>(text[i])) != 0) f.key += text[i++];
    const std::size_t digits = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
      if (i - digits >= 6) return std::nullopt;  // no parameter has more than 6 digits
      f.value = 10 * f.value + (text[i++] - '0');
    }
    f.has_value = i > digits;
    if (f.key.empty() || (f.has_value && (text[digits] == '0'))) return std::nullopt;
    out.push_back(std::move(f));
  }
  return out;
}

// Reads the fields in order: next("m") takes the next field if its key is "m" and it has a value.
class FieldReader {
 public:
  explicit FieldReader(std::vector<Field> fields) : fields_(std::move(fields)) {}
  std::optional<int> next(std::string_view key) {
    if (pos_ >= fields_.size() || fields_[pos_].key != key || !fields_[pos_].has_value) return std::nullopt;
    return fields_[pos_++].value;
  }
  // An optional field with a value: 0 if absent.
  int optional(std::string_view key) { return next(key).value_or(0); }
  // An optional flag (a field without a value).
  bool flag(std::string_view key) {
    if (pos_ >= fields_.size() || fields_[pos_].key != key || fields_[pos_].has_value) return false;
    ++pos_;
    return true;
  }
  bool done() const { return pos_ == fields_.size(); }

 private:
  std::vector<Field> fields_;
  std::size_t pos_ = 0;
};

// The optional operand tag after the family tag: `_fp8`, `_int8` (read as the fields fp 8 and
// int 8), or none (16-bit). nullopt for a tag with another number.
std::optional<SkinnyOperands> read_operands(FieldReader& r) {
  if (const auto fp = r.next("fp")) return *fp == 8 ? std::optional(SkinnyOperands::kFp8) : std::nullopt;
  if (const auto in = r.next("int")) return *in == 8 ? std::optional(SkinnyOperands::kInt8) : std::nullopt;
  return SkinnyOperands::k16Bit;
}

std::string operands_tag(SkinnyOperands o) {
  switch (o) {
    case SkinnyOperands::kFp8: return "_fp8";
    case SkinnyOperands::kInt8: return "_int8";
    case SkinnyOperands::k16Bit: break;
  }
  return "";
}

std::optional<SkinnyVariant> parse_gemv(FieldReader& r) {
  SkinnyVariant v;
  v.family = SkinnyFamily::kGemv;
  const auto operands = read_operands(r);
  if (!operands) return std::nullopt;
  v.operands = *operands;
  const auto m = r.next("m"), w = r.next("w"), c = r.next("c");
  if (!m || !w || !c) return std::nullopt;
  v.gemv = GemvTile{*m, *w, *c, r.flag("wp")};
  return v;
}

std::optional<SkinnyVariant> parse_weight_a(FieldReader& r) {
  SkinnyVariant v;
  v.family = SkinnyFamily::kMmaWeightA;
  const auto m = r.next("m"), n = r.next("n"), wn = r.next("wn"), wk = r.next("wk"), u = r.next("u");
  if (!m || !n || !wn || !wk || !u || *n % *wn != 0) return std::nullopt;
  const int p = r.optional("p");
  const auto sk = r.next("sk");
  if (!sk) return std::nullopt;
  v.weight_a = MmaWeightATile{*m, *n / *wn, *wn, *wk, *u, p};
  v.split_k = *sk;
  return v;
}

std::optional<SkinnyVariant> parse_weight_b(FieldReader& r) {
  SkinnyVariant v;
  v.family = SkinnyFamily::kMmaWeightB;
  const auto operands = read_operands(r);
  if (!operands) return std::nullopt;
  v.operands = *operands;
  const auto m = r.next("m"), n = r.next("n"), wk = r.next("wk"), u = r.next("u"), c = r.next("c"), sk = r.next("sk");
  if (!m || !n || !wk || !u || !c || !sk || *m != MmaWeightBTile::m_tile || *n % 8 != 0) return std::nullopt;
  v.weight_b = MmaWeightBTile{*n / 8, *c, *wk, *u};
  v.split_k = *sk;
  return v;
}

}  // namespace

std::string gemv_name(const GemvTile& t, SkinnyOperands operands) {
  return std::string(kPrefix) + std::string(kGemvTag) + operands_tag(operands) + field("m", t.m_max) +
         field("w", t.warps) + field("c", t.chunks) + (t.whole ? "_wp" : "");
}

std::string mma_weight_a_name(const MmaWeightATile& t, int split_k) {
  return std::string(kPrefix) + std::string(kWeightATag) + field("m", t.m_tile) + field("n", t.block_n()) +
         field("wn", t.warps_n) + field("wk", t.warps_k) + field("u", t.unroll) +
         (t.stages > 0 ? field("p", t.stages) : "") + field("sk", split_k);
}

std::string mma_weight_b_name(const MmaWeightBTile& t, int split_k, SkinnyOperands operands) {
  return std::string(kPrefix) + std::string(kWeightBTag) + operands_tag(operands) + field("m", MmaWeightBTile::m_tile) +
         field("n", t.block_n()) + field("wk", t.warps_k) + field("u", t.unroll) + field("c", t.chunks) +
         field("sk", split_k);
}

std::string skinny_name(const SkinnyVariant& v) {
  switch (v.family) {
    case SkinnyFamily::kGemv: return gemv_name(v.gemv, v.operands);
    case SkinnyFamily::kMmaWeightA: return mma_weight_a_name(v.weight_a, v.split_k);
    case SkinnyFamily::kMmaWeightB: return mma_weight_b_name(v.weight_b, v.split_k, v.operands);
  }
  return {};
}

std::optional<SkinnyVariant> parse_skinny_name(std::string_view name) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  // The family tag, then the fields; a tag is followed by '_'.
  for (std::string_view tag : {kGemvTag, kWeightATag, kWeightBTag}) {
    if (name.size() <= tag.size() || name.substr(0, tag.size()) != tag || name[tag.size()] != '_') continue;
    auto fields = split_fields(name.substr(tag.size()));
    if (!fields) return std::nullopt;
    FieldReader r(std::move(*fields));
    std::optional<SkinnyVariant> v = tag == kGemvTag ? parse_gemv(r)
                                     : tag == kWeightATag ? parse_weight_a(r)
                                                          : parse_weight_b(r);
    if (!v || !r.done()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

}  // namespace tgemm::skinny
