#include "core/model_shapes.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace tgemm {
namespace {

using json = nlohmann::json;
constexpr const char* kOp = "tgemm shapes";
// More ranks than any deployment shards one layer over; keeps 64 * tp (the vocabulary padding)
// and head counts far from overflow.
constexpr int kMaxTp = 1 << 16;

const json& config_root(const json& j) {
  // Multimodal configs nest the language model.
  if (j.contains("text_config") && j["text_config"].is_object() && !j.contains("hidden_size")) return j["text_config"];
  return j;
}

// The largest dimension a config may give and a shape may have: the kernels and the tuned tables
// index rows and columns with 32-bit integers (and every product of two such values fits int64).
constexpr std::int64_t kMaxDim = 2147483647;

// A key counts as absent when missing or null (DeepSeek-V2-Lite writes "q_lora_rank": null).
bool has_key(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

// An integer in [lo, kMaxDim]; anything else (a string, a float, out of range) names the key.
std::int64_t checked_int(const json& j, const char* key, std::int64_t lo) {
  const json& v = j[key];
  const bool integer = v.is_number_integer();
  // An unsigned value above INT64_MAX would wrap in get<int64_t>().
  const bool fits =
      integer && (!v.is_number_unsigned() || v.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxDim));
  const std::int64_t x = fits ? v.get<std::int64_t>() : 0;
  TGEMM_CHECK(fits && x >= lo && x <= kMaxDim, kOp, "config.json '", key, "' must be an integer in [", lo, ", ",
              kMaxDim, "], got ", v.dump());
  return x;
}

// A required dimension: a positive integer.
std::int64_t get_int(const json& j, const char* key) {
  TGEMM_CHECK(has_key(j, key) && j[key].is_number_integer(), kOp, "config.json needs an integer '", key, "'");
  return checked_int(j, key, 1);
}

// An optional value: dflt when absent, else an integer >= lo.
std::int64_t get_int_or(const json& j, const char* key, std::int64_t dflt, std::int64_t lo = 0) {
  return has_key(j, key) ? checked_int(j, key, lo) : dflt;
}

// a * b + c, a layer's width, which must itself be a dimension. The operands are sums and
// products of config values, so the arithmetic is checked rather than trusted to fit int64.
std::int64_t width(const char* layer, std::int64_t a, std::int64_t b, std::int64_t c = 0) {
  std::int64_t w = 0;
  const bool overflow = __builtin_mul_overflow(a, b, &w) || __builtin_add_overflow(w, c, &w);
  TGEMM_CHECK(!overflow && w >= 1 && w <= kMaxDim, kOp, "the ", layer, " width ", a, " x ", b, " + ", c,
              overflow ? std::string(" overflows") : " = " + std::to_string(w), ", outside [1, ", kMaxDim, "]");
  return w;
}

std::int64_t split(std::int64_t v, int tp, const char* what) {
  TGEMM_CHECK(v % tp == 0, kOp, what, " (", v, ") is not divisible by --tp ", tp);
  return v / tp;
}

}  // namespace

std::vector<LinearShape> model_linear_shapes(const std::string& text, const ModelShapeOptions& o) {
  TGEMM_CHECK(o.tp >= 1 && o.tp <= kMaxTp, kOp, "--tp must be in [1, ", kMaxTp, "], got ", o.tp);
  json doc = json::parse(text, nullptr, false);
  TGEMM_CHECK(!doc.is_discarded() && doc.is_object(), kOp, "config.json is not a JSON object");
  const json& c = config_root(doc);
  const int tp = o.tp;
  const std::int64_t hidden = get_int(c, "hidden_size");
  const std::int64_t heads = get_int(c, "num_attention_heads");
  std::vector<LinearShape> out;

  const bool mla = has_key(c, "kv_lora_rank");
  if (mla) {
    // DeepSeek-V2/V3 multi-head latent attention: q_a and kv_a are replicated (small), q_b and o
    // are split by heads.
    const std::int64_t q_lora = get_int_or(c, "q_lora_rank", 0);
    const std::int64_t kv_lora = get_int(c, "kv_lora_rank");
    const std::int64_t rope = get_int(c, "qk_rope_head_dim");
    const std::int64_t nope = get_int(c, "qk_nope_head_dim");
    const std::int64_t v_dim = get_int(c, "v_head_dim");
    const std::int64_t local_heads = split(heads, tp, "num_attention_heads");
    if (q_lora > 0) {
      out.push_back({"q_a", q_lora, hidden});
      out.push_back({"q_b", width("q_b", local_heads, nope + rope), q_lora});
    } else {
      out.push_back({"q", width("q", local_heads, nope + rope), hidden});
    }
    out.push_back({"kv_a", width("kv_a", 1, kv_lora, rope), hidden});
    out.push_back({"kv_b", width("kv_b", local_heads, nope + v_dim), kv_lora});
    out.push_back({"o", hidden, width("o", local_heads, v_dim)});
  } else {
    const std::int64_t kv_heads = get_int_or(c, "num_key_value_heads", heads, 1);
    TGEMM_CHECK(has_key(c, "head_dim") || hidden % heads == 0, kOp, "hidden_size ", hidden,
                " is not a multiple of num_attention_heads ", heads, " and there is no head_dim");
    const std::int64_t head_dim = get_int_or(c, "head_dim", hidden / heads, 1);
    const std::int64_t local_heads = split(heads, tp, "num_attention_heads");
    // KV heads are replicated when there are fewer of them than ranks, which needs tp to be a
    // multiple of their count (vLLM's rule).
    TGEMM_CHECK(kv_heads >= tp || tp % kv_heads == 0, kOp, "--tp ", tp, " is not a multiple of num_key_value_heads ",
                kv_heads);
    const std::int64_t local_kv = kv_heads >= tp ? split(kv_heads, tp, "num_key_value_heads") : 1;
    out.push_back({"qkv", width("qkv", local_heads + 2 * local_kv, head_dim), hidden});
    out.push_back({"o", hidden, width("o", local_heads, head_dim)});
  }

  // Feed-forward: dense MLP, MoE experts, shared experts.
  const std::int64_t experts = get_int_or(c, "n_routed_experts", get_int_or(c, "num_local_experts", get_int_or(c, "num_experts", 0)));
  const std::int64_t topk = get_int_or(c, "num_experts_per_tok", 0);
  TGEMM_CHECK(topk <= experts || experts == 0, kOp, "config.json 'num_experts_per_tok' (", topk,
              ") is above the number of routed experts (", experts, ")");
  const std::int64_t inter = get_int_or(c, "intermediate_size", 0);
  const bool has_dense = experts == 0 || get_int_or(c, "first_k_dense_replace", 0) > 0;
  if (has_dense) {
    TGEMM_CHECK(inter > 0, kOp, "config.json needs a positive integer 'intermediate_size' for the dense MLP",
                has_key(c, "intermediate_size") ? ", got " + std::to_string(inter) : std::string());
    const std::int64_t local = split(inter, tp, "intermediate_size");
    out.push_back({"gate_up", width("gate_up", 2, local), hidden});
    out.push_back({"down", hidden, local});
  }
  if (experts > 0) {
    TGEMM_CHECK(topk > 0, kOp, "an MoE config.json needs 'num_experts_per_tok'");
    // Mixtral keeps the expert width in intermediate_size; the others in moe_intermediate_size.
    const std::int64_t expert_inter = get_int_or(c, "moe_intermediate_size", inter);
    TGEMM_CHECK(expert_inter > 0, kOp, "an MoE config.json needs 'moe_intermediate_size' or 'intermediate_size'");
    const std::int64_t local = split(expert_inter, tp, "moe_intermediate_size");
    const double share = static_cast<double>(topk) / static_cast<double>(experts);
    out.push_back({"expert_gate_up", width("expert_gate_up", 2, local), hidden, share});
    out.push_back({"expert_down", hidden, local, share});
    const std::int64_t shared = get_int_or(c, "n_shared_experts", 0);
    const std::int64_t shared_inter = get_int_or(c, "shared_expert_intermediate_size", 0);
    if (shared > 0 || shared_inter > 0) {
      const std::int64_t shared_width = shared_inter > 0 ? shared_inter : width("shared expert", shared, expert_inter);
      const std::int64_t l = split(shared_width, tp, "shared expert width");
      out.push_back({"shared_gate_up", width("shared_gate_up", 2, l), hidden});
      out.push_back({"shared_down", hidden, l});
    }
  }
  if (o.lm_head) {
    const std::int64_t vocab = get_int(c, "vocab_size");
    // The vocabulary is padded to a multiple of 64 * tp before sharding, as vLLM pads it.
    const std::int64_t pad = std::int64_t{64} * tp;
    out.push_back({"lm_head", width("lm_head", (vocab + pad - 1) / pad, pad) / tp, hidden});
  }
  return out;
}

std::string model_dtype(const std::string& text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return "";
  // The language model's own dtype first, then the top level's (Gemma 3, Llava keep it there).
  const json* roots[] = {&config_root(doc), &doc};
  for (const json* c : roots) {
    for (const char* key : {"torch_dtype", "dtype"}) {
      if (c->contains(key) && (*c)[key].is_string()) return "torch." + (*c)[key].get<std::string>();
    }
  }
  return "";
}

}  // namespace tgemm
