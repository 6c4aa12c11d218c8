#include "tuner/gmm_tune.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/check.h"
#include "core/csv.h"
#include "tuner/routing_race.h"
#include "tuner/untuned_csv.h"

namespace tgemm {

GmmKey GmmTuneProblem::key(const std::string& arch, int sm_count) const {
  return gmm_key(m, groups, n, k, rhs_nk, dtype, out_dtype, bias, arch, sm_count);
}

namespace {

using untuned_csv::Fields;
using untuned_csv::for_each_row;
using untuned_csv::kMaxDim;

void check_types(const GmmTuneProblem& p, const std::string& where, const char* op) {
  TGEMM_CHECK(p.dtype == DType::kBFloat16 || p.dtype == DType::kFloat16, op, where,
              ": dtype must be torch.bfloat16 or torch.float16, got ", dtype_name(p.dtype));
  TGEMM_CHECK(p.out_dtype == p.dtype || p.out_dtype == DType::kFloat32, op, where,
              ": outdtype must be dtype or torch.float32, got ", dtype_name(p.out_dtype));
}

}  // namespace

std::vector<GmmTuneProblem> parse_gmm_untuned(std::istream& in, const std::string& file) {
  constexpr const char* op = "tgemm tune-gmm";
  std::vector<GmmTuneProblem> out;
  for_each_row(in, file, op, {"G", "M", "N", "K", "rhs", "dtype"}, [&](const Fields& f, const std::string& where) {
    GmmTuneProblem p;
    p.name = where;
    p.groups = f.dim("G");
    p.m = f.dim("M");
    p.n = f.dim("N");
    p.k = f.dim("K");
    const std::string& rhs = *f.get("rhs");
    TGEMM_CHECK(rhs == "gnk" || rhs == "gkn", op, where, ": rhs must be gnk or gkn, got '", rhs, "'");
    p.rhs_nk = rhs == "gnk";
    p.dtype = f.dtype("dtype", std::nullopt);
    p.out_dtype = f.dtype("outdtype", p.dtype);
    const std::string* bias = f.get("bias");
    if (bias != nullptr && !bias->empty()) {
      const auto b = csv::parse_bool(*bias);
      TGEMM_CHECK(b.has_value(), op, where, ": bias must be True or False, got '", *bias, "'");
      p.bias = *b;
    }
    check_types(p, where, op);
    out.push_back(p);
  });
  return out;
}

std::vector<GmmTuneProblem> parse_moe_suite(std::istream& in, const std::string& file, bool rhs_nk, DType dtype,
                                            DType out_dtype, bool bias) {
  constexpr const char* op = "tgemm";
  std::vector<GmmTuneProblem> out;
  for_each_row(in, file, op, {"name", "G", "tokens_per_expert", "N", "K"},
               [&](const Fields& f, const std::string& where) {
                 GmmTuneProblem p;
                 p.name = *f.get("name");
                 p.groups = f.dim("G");
                 const std::int64_t tpe = f.dim("tokens_per_expert");
                 TGEMM_CHECK(p.groups * tpe <= kMaxDim, op, where, ": G x tokens_per_expert exceeds ", kMaxDim);
                 p.m = p.groups * tpe;
                 p.n = f.dim("N");
                 p.k = f.dim("K");
                 p.rhs_nk = rhs_nk;
                 p.dtype = dtype;
                 p.out_dtype = out_dtype;
                 p.bias = bias;
                 check_types(p, where, op);
                 out.push_back(p);
               });
  return out;
}

std::vector<std::int32_t> gmm_routing(std::int64_t m, std::int64_t g, bool skewed, std::uint64_t seed) {
  TGEMM_CHECK(g > 0 && m >= 0, "gmm_routing", "needs G > 0 and M >= 0, got G=", g, " M=", m);
  std::vector<std::int32_t> sizes(static_cast<std::size_t>(g));
  if (!skewed) {
    for (std::int64_t i = 0; i < g; ++i) sizes[i] = static_cast<std::int32_t>(m / g + (i < m % g ? 1 : 0));
    return sizes;
  }
  std::vector<double> w(static_cast<std::size_t>(g));
  for (std::int64_t i = 0; i < g; ++i) w[i] = std::pow(static_cast<double>(i + 1), -1.2);
  // Fisher-Yates with the generator's raw output: the same permutation on every standard library.
  std::mt19937_64 rng(seed);
  for (std::int64_t i = g - 1; i > 0; --i) std::swap(w[i], w[rng() % static_cast<std::uint64_t>(i + 1)]);
  double sum = 0;
  for (double v : w) sum += v;
  std::int64_t given = 0;
  std::size_t largest = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    sizes[i] = static_cast<std::int32_t>(std::floor(w[i] / sum * static_cast<double>(m)));
    given += sizes[i];
    if (w[i] > w[largest]) largest = i;
  }
  sizes[largest] += static_cast<std::int32_t>(m - given);
  return sizes;
}

int select_gmm_winner(const std::vector<GmmCandidateTiming>& candidates, int default_index, double tie_band) {
  int best = -1;
  double best_min = 1.0 + tie_band;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const GmmCandidateTiming& c = candidates[i];
    if (static_cast<int>(i) == default_index || !c.error.empty()) continue;
    const double worst = std::min(c.speedup[0], c.speedup[1]);
    if (worst > best_min) {
      best = static_cast<int>(i);
      best_min = worst;
    }
  }
  return best;
}

std::string merged_gmm_table(const std::vector<GmmRow>& existing, const std::vector<GmmKey>& raced,
                             const std::vector<GmmRow>& rows) {
  return merged_tuned_table<GmmTableTraits>(existing, raced, rows, gmm_tuned_columns(), format_gmm_row);
}

}  // namespace tgemm
