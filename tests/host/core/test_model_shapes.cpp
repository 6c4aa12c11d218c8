// `tgemm shapes` from a Hugging Face config.json: the (N, K) of each projection under tensor
// parallelism, the MoE token share, the padded LM head, and the errors on bad configs. The shared
// shape suite (bench/shapes/llm_shapes.csv) must come out of the committed configs exactly, and
// the shipped table (configs/bf16_tuned_gemm.csv) must hold a row for each of its problems.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "core/lookup.h"
#include "core/model_shapes.h"
#include "core/table.h"
#include "tests/common/host_test_util.h"
#include "tgemm/error.h"

#ifndef TGEMM_TEST_SOURCE_DIR
#error "TGEMM_TEST_SOURCE_DIR (the project source directory) must be defined by the build"
#endif

namespace tgemm {
namespace {

using json = nlohmann::json;

const std::string kSourceDir = TGEMM_TEST_SOURCE_DIR;

std::string config_text(const std::string& name) {
  return test::read_file(kSourceDir + "/tests/data/configs/" + name + ".json");
}

json config(const std::string& name) { return json::parse(config_text(name)); }

std::vector<LinearShape> shapes_of(const std::string& text, int tp = 1, bool lm_head = false) {
  ModelShapeOptions o;
  o.tp = tp;
  o.lm_head = lm_head;
  return model_linear_shapes(text, o);
}

std::vector<LinearShape> shapes_of(const json& j, int tp = 1, bool lm_head = false) {
  return shapes_of(j.dump(), tp, lm_head);
}

// (layer, N, K, m_scale) for readable comparisons.
using Row = std::tuple<std::string, std::int64_t, std::int64_t, double>;

std::vector<Row> rows(const std::vector<LinearShape>& shapes) {
  std::vector<Row> out;
  for (const auto& s : shapes) out.emplace_back(s.layer, s.n, s.k, s.m_scale);
  return out;
}

bool has_layer(const std::vector<LinearShape>& shapes, const std::string& layer) {
  for (const auto& s : shapes) {
    if (s.layer == layer) return true;
  }
  return false;
}

// The layer by value: callers pass temporaries (shapes_of(...)), which a pointer into would
// outlive. An absent layer fails the test and reads as N = K = 0.
LinearShape layer_of(const std::vector<LinearShape>& shapes, const std::string& layer) {
  for (const auto& s : shapes) {
    if (s.layer == layer) return s;
  }
  ADD_FAILURE() << "no '" << layer << "' layer";
  return {layer, 0, 0, 0.0};
}

// The message of the tgemm::Error `f` throws; fails the test (and returns "") when it throws
// nothing or something else.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-tgemm exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

// ---------------------------------------------------------------------------------------------
// The shared shape suite.

struct SuiteRow {
  std::string model, layer;
  std::int64_t n = 0, k = 0;
};

std::vector<SuiteRow> read_suite() {
  std::vector<SuiteRow> out;
  std::vector<std::string> lines = test::read_lines(kSourceDir + "/bench/shapes/llm_shapes.csv");
  EXPECT_FALSE(lines.empty());
  if (lines.empty()) return out;
  EXPECT_EQ(lines[0], "model,layer,N,K");
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty()) continue;
    std::vector<std::string> f;
    std::size_t start = 0;
    for (std::size_t comma; (comma = l.find(',', start)) != std::string::npos; start = comma + 1) {
      f.push_back(l.substr(start, comma - start));
    }
    f.push_back(l.substr(start));
    EXPECT_EQ(f.size(), 4u) << "llm_shapes.csv line " << i + 1 << ": " << l;
    if (f.size() != 4) continue;
    out.push_back({f[0], f[1], std::stoll(f[2]), std::stoll(f[3])});
  }
  return out;
}

// The suite's model names and the config + --tp that produce them.
const std::map<std::string, std::pair<std::string, int>>& suite_models() {
  static const std::map<std::string, std::pair<std::string, int>> kModels = {
      {"llama3-8b", {"llama3-8b", 1}},
      {"llama3-70b-tp8", {"llama3-70b", 8}},
      {"qwen3-32b", {"qwen3-32b", 1}},
      {"dsv3", {"deepseek-v3", 1}},
  };
  return kModels;
}

// Each shipped table (the shared one, and the H200's, which an H200 reads in its place) parses
// without a warning, is keyed for 132-SM sm_90a, and has exactly one plain bf16 row (no bias, no
// epilogue) for every problem of the suite at the bench's token counts, so no suite problem is
// left to the default on either card; its erf-GELU + bias rows are suite shapes too.
TEST(ShippedTable, OneRowForEverySuiteProblem) {
  std::map<std::pair<std::int64_t, std::int64_t>, int> suite;
  for (const SuiteRow& r : read_suite()) suite[{r.n, r.k}] = 1;
  ASSERT_EQ(suite.size(), 16u);
  for (const std::string file : {"/configs/bf16_tuned_gemm.csv", "/configs/h200/bf16_tuned_gemm.csv"}) {
    const std::string path = kSourceDir + file;
    SCOPED_TRACE(path);
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const ParsedTable t = parse_tuned_table(in, path);
    EXPECT_TRUE(t.warnings.empty()) << t.warnings.front();
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, int> plain;
    for (const TableRow& r : t.rows) {
      EXPECT_EQ(r.key.arch, "sm_90a") << r.file << ":" << r.line;
      EXPECT_EQ(r.key.sm_count, 132) << r.file << ":" << r.line;
      EXPECT_EQ(suite.count({r.key.n, r.key.k}), 1u) << r.file << ":" << r.line << ": not a suite shape";
      const bool is_plain = !r.key.bias && r.key.epilogue == EpilogueKey{} && r.key.dtype == DType::kBFloat16 &&
                            r.key.out_dtype == DType::kBFloat16;
      if (is_plain) ++plain[{r.m, r.key.n, r.key.k}];
    }
    EXPECT_EQ(plain.size(), 112u);  // no plain row outside the 7 x 16 problems
    for (std::int64_t m : {1, 16, 64, 128, 512, 2048, 8192}) {
      for (const auto& entry : suite) {
        const auto [n, k] = entry.first;
        const auto it = plain.find({m, n, k});
        EXPECT_EQ(it == plain.end() ? 0 : it->second, 1) << "plain rows for M=" << m << " N=" << n << " K=" << k;
      }
    }
  }
}

// An H200 reads its own table in place of the shared one, so the H200's serves every key and M the
// shared table serves (its own row there, or the shared row where no H200 tune covered it): no
// tuned point of the shared table falls back to the default on an H200.
TEST(ShippedTable, TheH200TableServesEveryKeyAndMOfTheSharedTable) {
  std::vector<std::string> warnings;
  Table shared, h200;
  shared.load_file(kSourceDir + "/configs/bf16_tuned_gemm.csv", warnings);
  h200.load_file(kSourceDir + "/configs/h200/bf16_tuned_gemm.csv", warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  ASSERT_GT(shared.size(), 0u);
  for (const TableRow* r : shared.all_rows()) {
    EXPECT_NE(find_row(h200.rows_for(r->key), r->m), nullptr)
        << r->file << ":" << r->line << ": " << r->key.describe() << " M=" << r->m << " has no H200 row";
  }
}

// The gelu + bias rows: every suite problem at the token counts each table was tuned
// for, so no suite gelu problem reaches a row tuned for another M. The shared table's were tuned
// on an H100 (M = 64 and 128 run the defaults there), the H200 table's on the H200; both parse
// without a warning and hold suite shapes only.
TEST(ShippedTable, GeluRowsForEverySuiteProblem) {
  std::map<std::pair<std::int64_t, std::int64_t>, int> suite;
  for (const SuiteRow& r : read_suite()) suite[{r.n, r.k}] = 1;
  const struct {
    std::string file;
    std::vector<std::int64_t> ms;
  } tables[] = {{"/configs/bf16_tuned_gemm.csv", {1, 16, 512, 2048, 8192}},
                {"/configs/h200/bf16_tuned_gemm.csv", {1, 16, 64, 128, 512, 2048, 8192}}};
  for (const auto& table : tables) {
    const std::string path = kSourceDir + table.file;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const ParsedTable t = parse_tuned_table(in, path);
    EXPECT_TRUE(t.warnings.empty()) << t.warnings.front();
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, int> gelu;
    for (const TableRow& r : t.rows) {
      EXPECT_EQ(suite.count({r.key.n, r.key.k}), 1u) << r.file << ":" << r.line << ": not a suite shape";
      if (r.key.bias && r.key.epilogue.activation == Activation::kGelu && !r.key.epilogue.scaled &&
          !r.key.epilogue.use_c)
        ++gelu[{r.m, r.key.n, r.key.k}];
    }
    EXPECT_EQ(gelu.size(), table.ms.size() * suite.size()) << path;
    for (std::int64_t m : table.ms)
      for (const auto& entry : suite) {
        const auto [n, k] = entry.first;
        const auto it = gelu.find({m, n, k});
        EXPECT_EQ(it == gelu.end() ? 0 : it->second, 1) << path << ": gelu rows for M=" << m << " N=" << n << " K=" << k;
      }
  }
}

TEST(ModelShapes, ReproducesTheSharedShapeSuite) {
  std::vector<SuiteRow> suite = read_suite();
  ASSERT_EQ(suite.size(), 16u) << "bench/shapes/llm_shapes.csv changed: update this test's model map";
  std::map<std::string, std::vector<LinearShape>> generated;
  for (const auto& [model, cfg] : suite_models()) {
    generated[model] = shapes_of(config_text(cfg.first), cfg.second);
  }
  for (const SuiteRow& r : suite) {
    SCOPED_TRACE(r.model + "/" + r.layer);
    auto it = generated.find(r.model);
    ASSERT_NE(it, generated.end()) << "suite model '" << r.model << "' has no config in this test";
    ASSERT_TRUE(has_layer(it->second, r.layer)) << "model_linear_shapes produced no '" << r.layer << "' layer";
    const LinearShape s = layer_of(it->second, r.layer);
    EXPECT_EQ(s.n, r.n);
    EXPECT_EQ(s.k, r.k);
    EXPECT_EQ(s.m_scale, 1.0);
  }
}

TEST(ModelShapes, DenseSuiteModelsProduceExactlyTheSuiteLayers) {
  // For the dense models the suite is the whole layer: no extra GEMM, none missing, in order.
  std::vector<SuiteRow> suite = read_suite();
  for (const std::string model : {"llama3-8b", "llama3-70b-tp8", "qwen3-32b"}) {
    SCOPED_TRACE(model);
    const auto& cfg = suite_models().at(model);
    std::vector<Row> expected;
    for (const SuiteRow& r : suite) {
      if (r.model == model) expected.emplace_back(r.layer, r.n, r.k, 1.0);
    }
    EXPECT_EQ(rows(shapes_of(config_text(cfg.first), cfg.second)), expected);
  }
}

// ---------------------------------------------------------------------------------------------
// Each committed config in full.

TEST(ModelShapes, Llama3_8B) {
  std::vector<Row> expected = {{"qkv", 6144, 4096, 1.0},
                               {"o", 4096, 4096, 1.0},
                               {"gate_up", 28672, 4096, 1.0},
                               {"down", 4096, 14336, 1.0}};
  EXPECT_EQ(rows(shapes_of(config_text("llama3-8b"))), expected);
}

TEST(ModelShapes, Llama3_70BTp8) {
  // 64 query heads / 8 = 8, 8 KV heads / 8 = 1, head_dim 8192 / 64 = 128.
  std::vector<Row> expected = {{"qkv", (8 + 2 * 1) * 128, 8192, 1.0},
                               {"o", 8192, 8 * 128, 1.0},
                               {"gate_up", 2 * 28672 / 8, 8192, 1.0},
                               {"down", 8192, 28672 / 8, 1.0}};
  EXPECT_EQ(rows(shapes_of(config_text("llama3-70b"), 8)), expected);
}

TEST(ModelShapes, Qwen3_32BUsesExplicitHeadDim) {
  // head_dim 128 is given; hidden / heads would be 80.
  std::vector<Row> expected = {{"qkv", (64 + 2 * 8) * 128, 5120, 1.0},
                               {"o", 5120, 64 * 128, 1.0},
                               {"gate_up", 51200, 5120, 1.0},
                               {"down", 5120, 25600, 1.0}};
  EXPECT_EQ(rows(shapes_of(config_text("qwen3-32b"))), expected);
}

TEST(ModelShapes, DeepSeekV3Tp1) {
  // MLA: q_a/kv_a compress the hidden state, q_b/kv_b expand per head (nope 128 + rope 64 for q,
  // nope 128 + v 128 for kv), o takes heads * v_head_dim. first_k_dense_replace = 3 keeps a dense
  // MLP; 256 routed experts with top-8 and one shared expert of moe_intermediate_size.
  const double share = 8.0 / 256.0;
  std::vector<Row> expected = {{"q_a", 1536, 7168, 1.0},
                               {"q_b", 128 * (128 + 64), 1536, 1.0},
                               {"kv_a", 512 + 64, 7168, 1.0},
                               {"kv_b", 128 * (128 + 128), 512, 1.0},
                               {"o", 7168, 128 * 128, 1.0},
                               {"gate_up", 2 * 18432, 7168, 1.0},
                               {"down", 7168, 18432, 1.0},
                               {"expert_gate_up", 2 * 2048, 7168, share},
                               {"expert_down", 7168, 2048, share},
                               {"shared_gate_up", 2 * 2048, 7168, 1.0},
                               {"shared_down", 7168, 2048, 1.0}};
  EXPECT_EQ(rows(shapes_of(config_text("deepseek-v3"))), expected);
}

TEST(ModelShapes, DeepSeekV3Tp8SplitsHeadsButReplicatesTheLoraProjections) {
  std::vector<LinearShape> s = shapes_of(config_text("deepseek-v3"), 8);
  ASSERT_TRUE(has_layer(s, "q_a"));
  EXPECT_EQ(layer_of(s, "q_a").n, 1536);
  EXPECT_EQ(layer_of(s, "kv_a").n, 576);
  EXPECT_EQ(layer_of(s, "q_b").n, 16 * 192);
  EXPECT_EQ(layer_of(s, "kv_b").n, 16 * 256);
  EXPECT_EQ(layer_of(s, "o").k, 16 * 128);
  EXPECT_EQ(layer_of(s, "expert_down").k, 2048 / 8);
}

TEST(ModelShapes, MixtralExpertsCarryTheirTokenShare) {
  // Mixtral keeps the expert width in intermediate_size and has no dense MLP: every FFN GEMM is
  // an expert GEMM seeing tokens * top-2 / 8 experts.
  std::vector<Row> expected = {{"qkv", 6144, 4096, 1.0},
                               {"o", 4096, 4096, 1.0},
                               {"expert_gate_up", 28672, 4096, 0.25},
                               {"expert_down", 4096, 14336, 0.25}};
  EXPECT_EQ(rows(shapes_of(config_text("mixtral-8x7b"))), expected);
  std::vector<LinearShape> tp2 = shapes_of(config_text("mixtral-8x7b"), 2);
  ASSERT_TRUE(has_layer(tp2, "expert_down"));
  EXPECT_EQ(layer_of(tp2, "expert_down").k, 7168);
  EXPECT_EQ(layer_of(tp2, "expert_down").m_scale, 0.25);
}

TEST(ModelShapes, QwenMoeStyleKeys) {
  // Qwen2-MoE names: num_experts, moe_intermediate_size, shared_expert_intermediate_size.
  json c = config("llama3-8b");
  c["num_experts"] = 60;
  c["num_experts_per_tok"] = 4;
  c["moe_intermediate_size"] = 1408;
  c["shared_expert_intermediate_size"] = 5632;
  std::vector<LinearShape> s = shapes_of(c);
  EXPECT_FALSE(has_layer(s, "gate_up")) << "an MoE model without first_k_dense_replace has no dense MLP";
  ASSERT_TRUE(has_layer(s, "expert_gate_up"));
  EXPECT_EQ(layer_of(s, "expert_gate_up").n, 2 * 1408);
  EXPECT_DOUBLE_EQ(layer_of(s, "expert_gate_up").m_scale, 4.0 / 60.0);
  ASSERT_TRUE(has_layer(s, "shared_down"));
  EXPECT_EQ(layer_of(s, "shared_down").k, 5632);
  EXPECT_EQ(layer_of(s, "shared_down").m_scale, 1.0);
}

// ---------------------------------------------------------------------------------------------
// Tensor parallelism.

TEST(ModelShapes, TpThatDoesNotDivideTheHeadsNamesTp) {
  std::string msg = error_of([] { shapes_of(config_text("llama3-8b"), 3); });
  EXPECT_TRUE(test::contains(msg, "--tp 3")) << msg;
  EXPECT_TRUE(test::contains(msg, "num_attention_heads")) << msg;
  EXPECT_TRUE(test::contains(msg, "32")) << msg;
  msg = error_of([] { shapes_of(config_text("deepseek-v3"), 3); });
  EXPECT_TRUE(test::contains(msg, "--tp 3")) << msg;
}

TEST(ModelShapes, TpThatDoesNotDivideKvHeadsOrFfnNamesTheKey) {
  json c = config("llama3-8b");
  c["num_key_value_heads"] = 12;  // >= tp 8 but not divisible: cannot be split evenly
  std::string msg = error_of([&] { shapes_of(c, 8); });
  EXPECT_TRUE(test::contains(msg, "num_key_value_heads")) << msg;
  EXPECT_TRUE(test::contains(msg, "--tp 8")) << msg;
  c = config("llama3-8b");
  c["intermediate_size"] = 14340;  // not a multiple of 8
  msg = error_of([&] { shapes_of(c, 8); });
  EXPECT_TRUE(test::contains(msg, "intermediate_size")) << msg;
  EXPECT_TRUE(test::contains(msg, "--tp 8")) << msg;
}

TEST(ModelShapes, TpBelowOneIsRejected) {
  for (int tp : {0, -2}) {
    std::string msg = error_of([&] { shapes_of(config_text("llama3-8b"), tp); });
    EXPECT_TRUE(test::contains(msg, "--tp")) << msg;
    EXPECT_TRUE(test::contains(msg, std::to_string(tp))) << msg;
  }
}

TEST(ModelShapes, KvHeadsFewerThanTpAreReplicated) {
  // Llama-3-70B at tp 16: 64 / 16 = 4 query heads per rank; its 8 KV heads cannot be split 16
  // ways, so each rank holds one (replicated), as vLLM does.
  std::vector<LinearShape> s = shapes_of(config_text("llama3-70b"), 16);
  ASSERT_TRUE(has_layer(s, "qkv"));
  EXPECT_EQ(layer_of(s, "qkv").n, (4 + 2 * 1) * 128);
  EXPECT_EQ(layer_of(s, "o").k, 4 * 128);
  // Equal counts split to one head per rank, the same width.
  EXPECT_EQ(layer_of(shapes_of(config_text("llama3-70b"), 8), "qkv").n, (8 + 2 * 1) * 128);
}

TEST(ModelShapes, MissingKvHeadsMeansMultiHeadAttention) {
  json c = config("llama3-8b");
  c.erase("num_key_value_heads");
  EXPECT_EQ(layer_of(shapes_of(c), "qkv").n, 3 * 4096);
  EXPECT_EQ(layer_of(shapes_of(c, 4), "qkv").n, 3 * 4096 / 4);
}

// ---------------------------------------------------------------------------------------------
// Bad configs.

TEST(ModelShapes, MissingHiddenSizeNamesTheKey) {
  json c = config("llama3-8b");
  c.erase("hidden_size");
  std::string msg = error_of([&] { shapes_of(c); });
  EXPECT_TRUE(test::contains(msg, "'hidden_size'")) << msg;
  c = config("llama3-8b");
  c["hidden_size"] = "4096";  // a string is not an integer
  msg = error_of([&] { shapes_of(c); });
  EXPECT_TRUE(test::contains(msg, "'hidden_size'")) << msg;
}

TEST(ModelShapes, OtherMissingKeysAreNamed) {
  struct Case {
    std::string config, erase, named;
  };
  for (const Case& k : std::vector<Case>{{"llama3-8b", "num_attention_heads", "'num_attention_heads'"},
                                         {"llama3-8b", "intermediate_size", "'intermediate_size'"},
                                         {"mixtral-8x7b", "num_experts_per_tok", "'num_experts_per_tok'"},
                                         {"deepseek-v3", "qk_rope_head_dim", "'qk_rope_head_dim'"},
                                         {"deepseek-v3", "v_head_dim", "'v_head_dim'"}}) {
    SCOPED_TRACE(k.config + " without " + k.erase);
    json c = config(k.config);
    c.erase(k.erase);
    std::string msg = error_of([&] { shapes_of(c); });
    EXPECT_TRUE(test::contains(msg, k.named)) << msg;
  }
  json extra = config("mixtral-8x7b");
  extra["rope_scaling"] = {{"factor", 8.0}};
  EXPECT_NO_THROW(shapes_of(extra)) << "an unrelated key must not be an error";
}

TEST(ModelShapes, ZeroAttentionHeadsIsAnErrorNotACrash) {
  // Run in a child: head_dim defaults to hidden / heads, so a division by zero (SIGFPE) would
  // kill the whole test binary rather than fail this test.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        json c = config("llama3-8b");
        c["num_attention_heads"] = 0;
        try {
          shapes_of(c);
        } catch (const Error& e) {
          std::exit(test::contains(e.what(), "num_attention_heads") ? 0 : 3);
        }
        std::exit(4);
      },
      ::testing::ExitedWithCode(0), "");
}

// Every out-of-range value: an error naming the key and the value, never a shape with N <= 0 or
// an int64 overflow (signed-overflow UB before the checks).
struct BadValue {
  std::string config, key;
  json value;
  std::string named;  // in the message besides the value
};

void expect_rejected(const BadValue& b) {
  SCOPED_TRACE(b.config + " with " + b.key + " = " + b.value.dump());
  json c = config(b.config);
  c[b.key] = b.value;
  const std::string msg = error_of([&] { shapes_of(c, 1, true); });
  EXPECT_TRUE(test::contains(msg, b.named)) << msg;
  EXPECT_TRUE(test::contains(msg, b.value.dump())) << msg;
}

TEST(ModelShapes, NonPositiveDimensionsNameTheKeyAndValue) {
  for (const BadValue& b :
       std::vector<BadValue>{{"llama3-8b", "head_dim", 0, "'head_dim'"},
                             {"llama3-8b", "head_dim", -128, "'head_dim'"},
                             {"llama3-8b", "hidden_size", 0, "'hidden_size'"},
                             {"llama3-8b", "hidden_size", -4096, "'hidden_size'"},
                             {"llama3-8b", "num_attention_heads", -32, "'num_attention_heads'"},
                             {"llama3-8b", "num_key_value_heads", 0, "'num_key_value_heads'"},
                             {"llama3-8b", "intermediate_size", -14336, "'intermediate_size'"},
                             {"llama3-8b", "vocab_size", 0, "'vocab_size'"},
                             {"deepseek-v3", "qk_rope_head_dim", -64, "'qk_rope_head_dim'"},
                             {"deepseek-v3", "q_lora_rank", -1, "'q_lora_rank'"},
                             {"deepseek-v3", "n_shared_experts", -1, "'n_shared_experts'"},
                             {"mixtral-8x7b", "num_local_experts", -8, "'num_local_experts'"},
                             {"mixtral-8x7b", "num_experts_per_tok", -2, "'num_experts_per_tok'"}}) {
    expect_rejected(b);
  }
}

TEST(ModelShapes, HugeValuesAreRejectedBeforeAnyProductOverflows) {
  const json int64_max = std::numeric_limits<std::int64_t>::max();
  const json uint64_max = std::numeric_limits<std::uint64_t>::max();
  for (const BadValue& b :
       std::vector<BadValue>{{"llama3-8b", "hidden_size", int64_max, "'hidden_size'"},
                             {"llama3-8b", "head_dim", int64_max, "'head_dim'"},
                             {"llama3-8b", "head_dim", uint64_max, "'head_dim'"},
                             {"llama3-8b", "intermediate_size", 4294967296LL, "'intermediate_size'"},
                             {"llama3-8b", "vocab_size", int64_max, "'vocab_size'"},
                             {"deepseek-v3", "v_head_dim", int64_max, "'v_head_dim'"},
                             {"deepseek-v3", "moe_intermediate_size", int64_max, "'moe_intermediate_size'"}}) {
    expect_rejected(b);
  }
  // Each value in range, their product not: the layer's width is named, not wrapped.
  json c = config("llama3-8b");
  c["num_attention_heads"] = 2147483647;
  c["num_key_value_heads"] = 2147483647;
  c["head_dim"] = 2147483647;
  std::string msg = error_of([&] { shapes_of(c); });
  EXPECT_TRUE(test::contains(msg, "qkv")) << msg;
  EXPECT_TRUE(test::contains(msg, "2147483647")) << msg;
  c = config("llama3-8b");
  c["intermediate_size"] = 2000000000;  // gate_up is twice as wide: 4e9 > 2^31 - 1
  msg = error_of([&] { shapes_of(c); });
  EXPECT_TRUE(test::contains(msg, "gate_up")) << msg;
  EXPECT_TRUE(test::contains(msg, "2000000000")) << msg;
}

TEST(ModelShapes, NonIntegerValuesOfOptionalKeysAreErrors) {
  // A float or a string where an integer belongs is not silently replaced by the default.
  for (const BadValue& b :
       std::vector<BadValue>{{"llama3-8b", "head_dim", 128.5, "'head_dim'"},
                             {"llama3-8b", "num_key_value_heads", "8", "'num_key_value_heads'"},
                             {"mixtral-8x7b", "num_experts_per_tok", 1e30, "'num_experts_per_tok'"}}) {
    expect_rejected(b);
  }
  // null is how Hugging Face writes an absent value ("head_dim": null in Mistral-style configs).
  json c = config("llama3-8b");
  c["head_dim"] = nullptr;
  EXPECT_EQ(rows(shapes_of(c)), rows(shapes_of(config_text("llama3-8b"))));
}

TEST(ModelShapes, TopKAboveTheExpertCountIsAnError) {
  json c = config("mixtral-8x7b");
  c["num_experts_per_tok"] = 9;  // of 8 experts
  const std::string msg = error_of([&] { shapes_of(c); });
  EXPECT_TRUE(test::contains(msg, "'num_experts_per_tok' (9)")) << msg;
  EXPECT_TRUE(test::contains(msg, "experts (8)")) << msg;
  c["num_experts_per_tok"] = 8;  // every expert: a share of 1
  EXPECT_EQ(layer_of(shapes_of(c), "expert_down").m_scale, 1.0);
}

TEST(ModelShapes, TpAboveTheBoundIsRejected) {
  const std::string msg = error_of([] { shapes_of(config_text("llama3-8b"), 1 << 30, true); });
  EXPECT_TRUE(test::contains(msg, "--tp")) << msg;
  EXPECT_TRUE(test::contains(msg, std::to_string(1 << 30))) << msg;
}

TEST(ModelShapes, NotAJsonObjectIsAnError) {
  for (const std::string text : {"", "not json", "[1, 2]", "{\"hidden_size\": 4096"}) {
    SCOPED_TRACE(text);
    std::string msg = error_of([&] { shapes_of(text); });
    EXPECT_TRUE(test::contains(msg, "JSON object")) << msg;
  }
}

// ---------------------------------------------------------------------------------------------
// LM head, nesting, dtype.

TEST(ModelShapes, LmHeadOnlyWhenAskedAndPaddedPerRank) {
  EXPECT_FALSE(has_layer(shapes_of(config_text("llama3-8b")), "lm_head"));
  // 128256 is a multiple of 64: unpadded at tp 1.
  LinearShape h = layer_of(shapes_of(config_text("llama3-8b"), 1, true), "lm_head");
  EXPECT_EQ(h.n, 128256);
  EXPECT_EQ(h.k, 4096);
  // At tp 8 the vocabulary is padded to a multiple of 64 * 8 = 512 (128512) and split 8 ways.
  h = layer_of(shapes_of(config_text("llama3-70b"), 8, true), "lm_head");
  EXPECT_EQ(h.n, 128512 / 8);
  EXPECT_EQ(h.k, 8192);
  // DeepSeek-V3: 129280 -> 129536 at tp 8.
  EXPECT_EQ(layer_of(shapes_of(config_text("deepseek-v3"), 8, true), "lm_head").n, 129536 / 8);
  json c = config("llama3-8b");
  c["vocab_size"] = 32001;
  EXPECT_EQ(layer_of(shapes_of(c, 1, true), "lm_head").n, 32064);
  // The LM head is last, after the layer's GEMMs.
  EXPECT_EQ(shapes_of(config_text("mixtral-8x7b"), 1, true).back().layer, "lm_head");
}

TEST(ModelShapes, LmHeadWithoutVocabSizeNamesTheKey) {
  json c = config("llama3-8b");
  c.erase("vocab_size");
  EXPECT_NO_THROW(shapes_of(c));
  std::string msg = error_of([&] { shapes_of(c, 1, true); });
  EXPECT_TRUE(test::contains(msg, "'vocab_size'")) << msg;
}

TEST(ModelShapes, TextConfigNesting) {
  // Multimodal configs (Llava, Gemma 3, Mistral 3, Llama 4) nest the language model.
  const std::string llama = config_text("llama3-8b");
  json nested = {{"architectures", {"LlavaForConditionalGeneration"}},
                 {"model_type", "llava"},
                 {"vision_config", {{"hidden_size", 1024}, {"num_attention_heads", 16}}},
                 {"text_config", json::parse(llama)}};
  EXPECT_EQ(rows(shapes_of(nested, 8, true)), rows(shapes_of(llama, 8, true)));
  EXPECT_EQ(model_dtype(nested.dump()), "torch.bfloat16");
  // A top-level hidden_size means the top level is the language model.
  json top = config("qwen3-32b");
  top["text_config"] = config("llama3-8b");
  EXPECT_EQ(rows(shapes_of(top)), rows(shapes_of(config_text("qwen3-32b"))));
}

TEST(ModelDtype, TorchDtype) {
  for (const std::string name : {"llama3-8b", "llama3-70b", "qwen3-32b", "deepseek-v3", "mixtral-8x7b"}) {
    EXPECT_EQ(model_dtype(config_text(name)), "torch.bfloat16") << name;
  }
  EXPECT_EQ(model_dtype(R"({"torch_dtype": "float16"})"), "torch.float16");
  // Newer transformers write "dtype"; torch_dtype wins when both exist.
  EXPECT_EQ(model_dtype(R"({"dtype": "bfloat16"})"), "torch.bfloat16");
  EXPECT_EQ(model_dtype(R"({"torch_dtype": "float16", "dtype": "bfloat16"})"), "torch.float16");
}

TEST(ModelDtype, AbsentOrUnreadableIsEmpty) {
  EXPECT_EQ(model_dtype(R"({"hidden_size": 4096})"), "");
  EXPECT_EQ(model_dtype(R"({"torch_dtype": 16})"), "");
  EXPECT_EQ(model_dtype("not json"), "");
  EXPECT_EQ(model_dtype("[\"torch_dtype\"]"), "");
}

TEST(ModelDtype, TopLevelDtypeOfANestedConfig) {
  // Gemma 3 and Llava write torch_dtype at the top level only, next to a text_config without one;
  // missing it would make `tgemm shapes` fall back to bf16 for an fp16 model.
  json c = {{"torch_dtype", "float16"}, {"text_config", config("llama3-8b")}};
  c["text_config"].erase("torch_dtype");
  EXPECT_EQ(model_dtype(c.dump()), "torch.float16");
}

}  // namespace
}  // namespace tgemm
