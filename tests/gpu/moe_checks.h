// Reference checks of the MoE ops shared by their GPU test (test_moe.cpp) and the concurrency test
// (test_concurrency_families.cpp): per op a case, its device data (inputs uniform(-1, 1), outputs
// NaN-poisoned), the call on a given stream, and the comparison with a host reference of the
// documented rules (a gtest failure on mismatch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/common/grouped_test_util.h"
#include "tgemm/moe.h"

namespace tgemm::test {

// ---- fused_moe

struct MoeCase {
  std::int64_t t = 37, k = 2, e = 8, h = 128, inter = 96;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  DType weight_type = DType::kFloat32;
  MoeActivation act = MoeActivation::kSilu;
  std::int64_t global_experts = 0;  // > 0: an expert_map of that many entries
  std::vector<std::int32_t> ids;    // [T * k]
  std::vector<std::int32_t> map;    // [global_experts]
  std::string describe() const {
    return "T=" + std::to_string(t) + " k=" + std::to_string(k) + " E=" + std::to_string(e) +
           " H=" + std::to_string(h) + " I=" + std::to_string(inter) + " in=" + std::string(dtype_short_name(in)) +
           " out=" + std::string(dtype_short_name(out)) + " weights=" + std::string(dtype_short_name(weight_type)) +
           " act=" + (act == MoeActivation::kSilu ? "silu" : "gelu") + " E_global=" + std::to_string(global_experts);
  }
};

struct MoeData {
  MoeCase c;
  Buffer hidden, w1, w2, topk_weights, ids, map, out;
  TensorView hv, w1v, w2v, tv, iv, mv, ov;
};

MoeData make_moe(const MoeCase& c, std::uint64_t seed);
void run_moe(const MoeData& d, Stream stream);
// The float64 layer, and per element a first-order bound of what the 16-bit gate/up and activated
// intermediates may move it by: the products x @ w1 rounded to the input type (relative u each,
// through act's sensitivity for the gate), act(gate) * up rounded again, summed with |w2| and
// |topk_weights|. out matches when |out - ref| <= 2 u_out |ref| + 2 u_in bound + fp32 sums.
void expect_moe_matches(const MoeData& d, const std::vector<std::int32_t>& ids, const std::vector<float>& tw);

// Whether fused_moe runs this case's GEMMs on CUTLASS grouped instances on the current device
// under TGEMM_GROUPED_BACKEND=cutlass (the bf16 or fp16 instances with K-major B built and
// loadable, H and I multiples of 8, a slot and an expert at least).
bool moe_cutlass_takes(const MoeCase& c);

enum class Routing { kUniform, kSkewed, kSomeEmpty, kOneExpert };

// Ids of T tokens x k slots over E experts: uniform; skewed (about 3/4 of the slots on expert 1);
// a third of the experts never chosen; every slot on expert E - 1. Distinct within a token where
// the rule allows.
std::vector<std::int32_t> routing_ids(Routing r, std::int64_t t, std::int64_t k, std::int64_t e, std::uint64_t seed);

// ---- topk_softmax and grouped_topk

struct RouteCase {
  std::int64_t t = 33, e = 64, k = 4, n_group = 1, topk_group = 1;
  DType gating = DType::kFloat32;
  bool grouped = false;  // grouped_topk (else topk_softmax)
  bool sigmoid = false;
  bool bias = false;
  bool renormalize = false;
  double scaling = 1.0;
  std::string describe() const {
    return std::string(grouped ? "grouped_topk" : "topk_softmax") + " T=" + std::to_string(t) +
           " E=" + std::to_string(e) + " k=" + std::to_string(k) + " n_group=" + std::to_string(n_group) +
           " topk_group=" + std::to_string(topk_group) + " gating=" + std::string(dtype_short_name(gating)) +
           " sigmoid=" + std::to_string(sigmoid) + " bias=" + std::to_string(bias) +
           " renormalize=" + std::to_string(renormalize);
  }
};

struct RouteData {
  RouteCase c;
  Buffer gating, bias, weights, ids;
  TensorView gv, bv, wv, iv;
};

RouteData make_route(const RouteCase& c, std::uint64_t seed);
void run_route(const RouteData& d, Stream stream);
// Device ids: distinct, eligible, and at each rank an expert whose choice equals the host's pick
// there up to fp32 rounding of the scores (exactly, where the logits rank); weights: the scores
// at the device's ids, renormalized and scaled.
// nan_row: a row of NaN logits whose weights are not checked (NaN scores make NaN weights), or -1.
void expect_route_matches(const RouteData& d, std::int64_t nan_row);

}  // namespace tgemm::test
