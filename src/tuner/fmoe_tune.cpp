#include "tuner/fmoe_tune.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/check.h"
#include "core/csv.h"
#include "tuner/routing_race.h"
#include "tuner/untuned_csv.h"

namespace tgemm {

FmoeKey FmoeTuneProblem::key(const std::string& arch, int sm_count) const {
  return fmoe_key(tokens, experts, topk, hidden, inter, dtype, FmoeQuant::kNone, activation, arch, sm_count);
}

namespace {

using untuned_csv::Fields;
using untuned_csv::for_each_row;
using untuned_csv::kMaxDim;

// The ids of a problem lie in [0, E), or [0, E_global) with an expert_map.
std::int64_t id_space(const FmoeTuneProblem& p) { return p.global_experts > 0 ? p.global_experts : p.experts; }

void check_problem(const FmoeTuneProblem& p, const std::string& where, const char* op) {
  TGEMM_CHECK(p.dtype == DType::kBFloat16 || p.dtype == DType::kFloat16, op, where,
              ": dtype must be torch.bfloat16 or torch.float16, got ", dtype_name(p.dtype));
  TGEMM_CHECK(p.topk <= id_space(p), op, where, ": topk (", p.topk, ") exceeds the experts (", id_space(p),
              "): a token's experts are distinct");
  TGEMM_CHECK(p.tokens * p.topk <= kMaxDim, op, where, ": T x topk exceeds ", kMaxDim);
}

MoeActivation activation_of(const Fields& f) {
  const std::string* v = f.get("activation");
  if (v == nullptr || v->empty()) return MoeActivation::kSilu;
  const auto a = parse_fmoe_activation(*v);
  TGEMM_CHECK(a.has_value(), f.op, f.where, ": activation must be silu or gelu, got '", *v, "'");
  return *a;
}

// The optional E_global column: 0 where absent, empty or equal to E (no expert_map).
void read_global_experts(const Fields& f, FmoeTuneProblem& p) {
  const std::string* global = f.get("E_global");
  if (global == nullptr || global->empty()) return;
  p.global_experts = f.dim("E_global");
  TGEMM_CHECK(p.global_experts >= p.experts, f.op, f.where, ": E_global (", p.global_experts, ") is below E (",
              p.experts, ")");
  if (p.global_experts == p.experts) p.global_experts = 0;
}

// A double in [0, 1) from the generator's top 53 bits (std::uniform_real_distribution's output
// differs between standard libraries).
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

std::vector<FmoeTuneProblem> parse_fmoe_untuned(std::istream& in, const std::string& file) {
  constexpr const char* op = "tgemm tune-fmoe";
  std::vector<FmoeTuneProblem> out;
  for_each_row(in, file, op, {"T", "E", "topk", "H", "I", "dtype"}, [&](const Fields& f, const std::string& where) {
    FmoeTuneProblem p;
    p.name = where;
    p.tokens = f.dim("T");
    p.experts = f.dim("E");
    p.topk = f.dim("topk");
    p.hidden = f.dim("H");
    p.inter = f.dim("I");
    p.dtype = f.dtype("dtype", std::nullopt);
    const std::string* quant = f.get("quant");
    if (quant != nullptr && !quant->empty()) {
      const auto q = parse_fmoe_quant(*quant);
      TGEMM_CHECK(q.has_value(), op, where, ": quant must be none, fp8_block or fp8_rowwise, got '", *quant, "'");
      TGEMM_CHECK(*q == FmoeQuant::kNone, op, where, ": quant ", *quant,
                  ": fused_moe takes no quantized weights, so there is no path to race");
    }
    p.activation = activation_of(f);
    read_global_experts(f, p);
    check_problem(p, where, op);
    out.push_back(p);
  });
  return out;
}

std::string fmoe_problems_csv(const std::vector<FmoeTuneProblem>& problems) {
  std::vector<std::string> header = fmoe_untuned_columns();
  header.emplace_back("E_global");
  std::string text = csv::join(header) + "\n";
  for (const FmoeTuneProblem& p : problems) {
    text += csv::join({std::to_string(p.tokens), std::to_string(p.experts), std::to_string(p.topk),
                       std::to_string(p.hidden), std::to_string(p.inter), std::string(dtype_name(p.dtype)),
                       fmoe_quant_name(FmoeQuant::kNone), fmoe_activation_name(p.activation),
                       p.global_experts > 0 ? std::to_string(p.global_experts) : std::string()}) +
            "\n";
  }
  return text;
}

std::vector<FmoeTuneProblem> parse_fmoe_suite(std::istream& in, const std::string& file,
                                              const std::vector<std::int64_t>& tokens, DType dtype,
                                              MoeActivation activation) {
  constexpr const char* op = "tgemm";
  for (std::int64_t t : tokens) {
    TGEMM_CHECK(t >= 1 && t <= kMaxDim, op, "token counts must lie in [1, ", kMaxDim, "], got ", t);
  }
  std::vector<FmoeTuneProblem> out;
  for_each_row(in, file, op, {"name", "E", "topk", "H", "I"}, [&](const Fields& f, const std::string& where) {
    FmoeTuneProblem base;
    base.experts = f.dim("E");
    base.topk = f.dim("topk");
    base.hidden = f.dim("H");
    base.inter = f.dim("I");
    base.dtype = dtype;
    base.activation = activation;
    read_global_experts(f, base);
    for (std::int64_t t : tokens) {
      FmoeTuneProblem p = base;
      p.name = *f.get("name") + " T=" + std::to_string(t);
      p.tokens = t;
      check_problem(p, where, op);
      out.push_back(p);
    }
  });
  return out;
}

FmoeRouting fmoe_routing(std::int64_t tokens, std::int64_t topk, std::int64_t experts, bool skewed,
                         std::uint64_t seed) {
  TGEMM_CHECK(tokens >= 0 && topk >= 1 && topk <= experts, "fmoe_routing",
              "needs T >= 0 and 1 <= topk <= E, got T=", tokens, " topk=", topk, " E=", experts);
  std::mt19937_64 rng(seed);
  // Each expert's draw weight: 1 (uniform) or (i + 1)^-1.2 at position i of a seeded permutation.
  std::vector<double> pop(static_cast<std::size_t>(experts), 1.0);
  if (skewed) {
    for (std::int64_t i = 0; i < experts; ++i) pop[i] = std::pow(static_cast<double>(i + 1), -1.2);
    for (std::int64_t i = experts - 1; i > 0; --i) std::swap(pop[i], pop[rng() % static_cast<std::uint64_t>(i + 1)]);
  }
  FmoeRouting r;
  r.ids.reserve(static_cast<std::size_t>(tokens * topk));
  r.weights.reserve(static_cast<std::size_t>(tokens * topk));
  std::vector<double> left(pop.size());
  for (std::int64_t t = 0; t < tokens; ++t) {
    // k draws without replacement: a chosen expert's weight drops to 0 for the token's next draws.
    left = pop;
    double total = std::accumulate(left.begin(), left.end(), 0.0);
    std::vector<float> w(static_cast<std::size_t>(topk));
    for (std::int64_t j = 0; j < topk; ++j) {
      double x = unit(rng) * total;
      std::size_t pick = 0;
      for (std::size_t e = 0; e < left.size(); ++e) {
        if (left[e] <= 0) continue;
        pick = e;  // the last expert still in, should rounding carry x past the end
        if (x < left[e]) break;
        x -= left[e];
      }
      total -= left[pick];
      left[pick] = 0;
      r.ids.push_back(static_cast<std::int32_t>(pick));
      // Weights in [0.1, 1) before normalisation: no slot is negligible, none dominates 10:1.
      w[static_cast<std::size_t>(j)] = static_cast<float>(0.1 + 0.9 * unit(rng));
    }
    const float sum = std::accumulate(w.begin(), w.end(), 0.0f);
    for (float v : w) r.weights.push_back(v / sum);
  }
  return r;
}

std::vector<std::int32_t> fmoe_rank_map(std::int64_t experts, std::int64_t global_experts) {
  std::vector<std::int32_t> map(static_cast<std::size_t>(global_experts), -1);
  for (std::int64_t g = 0; g < std::min(experts, global_experts); ++g) map[g] = static_cast<std::int32_t>(g);
  return map;
}

std::string merged_fmoe_table(const std::vector<FmoeRow>& existing, const std::vector<FmoeKey>& raced,
                              const std::vector<FmoeRow>& rows) {
  return merged_tuned_table<FmoeTableTraits>(existing, raced, rows, fmoe_tuned_columns(), format_fmoe_row);
}

}  // namespace tgemm
