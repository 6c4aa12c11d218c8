// GEMM shapes of a transformer from its Hugging Face config.json, for `tgemm shapes`: the dense
// projections of one layer (and the MoE expert GEMMs), split for tensor parallelism as vLLM and
// SGLang shard them. M is the number of tokens (AITER's generator swaps M and N; we do not).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tgemm {

struct LinearShape {
  std::string layer;  // qkv, o, gate_up, down, q_a, kv_a, q_b, lm_head, expert_gate_up, ...
  std::int64_t n = 0;  // output features
  std::int64_t k = 0;  // input features
  // Tokens per call as a fraction of the batch tokens (experts: tokens * topk / experts).
  double m_scale = 1.0;
};

struct ModelShapeOptions {
  int tp = 1;
  bool lm_head = false;
};

// Throws tgemm::Error naming the missing or inconsistent key. Understands Llama, Mistral,
// Mixtral, Qwen2/Qwen3(-MoE), Gemma and DeepSeek-V2/V3 (MLA) style keys.
std::vector<LinearShape> model_linear_shapes(const std::string& config_json_text, const ModelShapeOptions& o);

// The model's weight dtype name as torch writes it ("torch.bfloat16"); "" when absent.
std::string model_dtype(const std::string& config_json_text);

}  // namespace tgemm
