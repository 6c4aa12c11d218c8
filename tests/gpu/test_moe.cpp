// topk_softmax, grouped_topk and fused_moe against float64/float32 host references with the
// documented device rules: random routings (uniform, skewed, some experts empty, every token on one
// expert), expert_map with experts on other ranks and out-of-range ids, both dtypes and
// activations, aligned and unaligned H and I, fp32 and 16-bit outputs and routing weights, empty
// shapes; outputs poisoned with NaN (an unwritten element fails); CUDA graphs replayed after the
// routing changes on the device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/device_utils.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/grouped_test_util.h"
#include "tgemm/moe.h"

namespace tgemm {
namespace {

using test::Buffer;
using test::int_buffer;
using test::nan_buffer;
using test::random_buffer;
using test::random_ids;

// Unit roundoff of a 16-bit or fp32 type.
double unit_roundoff(DType t) {
  switch (t) {
    case DType::kBFloat16: return std::ldexp(1.0, -8);
    case DType::kFloat16: return std::ldexp(1.0, -11);
    default: return std::ldexp(1.0, -24);
  }
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// act(x) and |x act'(x)|: how a relative error of x moves act(x).
double activate(MoeActivation a, double x) {
  return a == MoeActivation::kSilu ? x * sigmoid(x) : 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double activation_sensitivity(MoeActivation a, double x) {
  if (a == MoeActivation::kSilu) return std::fabs(x * sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x))));
  const double pdf = 0.3989422804014327 * std::exp(-0.5 * x * x);  // the normal density
  return std::fabs(x * (0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * pdf));
}

// ---------------------------------------------------------------------------------------------
// fused_moe

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

MoeData make_moe(const MoeCase& c, std::uint64_t seed) {
  MoeData d;
  d.c = c;
  d.hidden = random_buffer(c.in, c.t * c.h, seed);
  d.w1 = random_buffer(c.in, c.e * 2 * c.inter * c.h, seed + 1);
  d.w2 = random_buffer(c.in, c.e * c.h * c.inter, seed + 2);
  d.topk_weights = random_buffer(c.weight_type, c.t * c.k, seed + 3);
  d.ids = int_buffer(c.ids);
  d.map = int_buffer(c.map);
  d.out = nan_buffer(c.out, c.t * c.h);
  d.hv = TensorView::contiguous(d.hidden.data(), c.in, {c.t, c.h});
  d.w1v = TensorView::contiguous(d.w1.data(), c.in, {c.e, 2 * c.inter, c.h});
  d.w2v = TensorView::contiguous(d.w2.data(), c.in, {c.e, c.h, c.inter});
  d.tv = TensorView::contiguous(d.topk_weights.data(), c.weight_type, {c.t, c.k});
  d.iv = TensorView::contiguous(d.ids.data(), DType::kInt32, {c.t, c.k});
  d.mv = TensorView::contiguous(d.map.data(), DType::kInt32, {c.global_experts});
  d.ov = TensorView::contiguous(d.out.data(), c.out, {c.t, c.h});
  return d;
}

void run_moe(const MoeData& d, Stream stream) {
  fused_moe(d.hv, d.w1v, d.w2v, d.tv, d.iv, d.ov, d.c.act, d.c.global_experts > 0 ? &d.mv : nullptr, stream);
}

// The local expert of a slot's id, or -1 where the slot contributes 0 (include/tgemm/moe.h).
std::int64_t local_expert(const MoeCase& c, const std::vector<std::int32_t>& map, std::int32_t id) {
  std::int64_t e = id;
  if (c.global_experts > 0) e = id >= 0 && id < c.global_experts ? map[static_cast<std::size_t>(id)] : -1;
  return e >= 0 && e < c.e ? e : -1;
}

// The float64 layer, and per element a first-order bound of what the 16-bit gate/up and activated
// intermediates may move it by: the products x @ w1 rounded to the input type (relative u each,
// through act's sensitivity for the gate), act(gate) * up rounded again, summed with |w2| and
// |topk_weights|. out matches when |out - ref| <= 2 u_out |ref| + 2 u_in bound + fp32 sums.
void expect_moe_matches(const MoeData& d, const std::vector<std::int32_t>& ids, const std::vector<float>& tw) {
  const MoeCase& c = d.c;
  const std::vector<float> x = d.hidden.host(), w1 = d.w1.host(), w2 = d.w2.host(), out = d.out.host();
  std::vector<double> ref(static_cast<std::size_t>(c.t * c.h), 0.0), bound(ref.size(), 0.0), mag(ref.size(), 0.0);
  std::vector<double> act(static_cast<std::size_t>(c.inter)), sens(act.size());
  for (std::int64_t t = 0; t < c.t; ++t) {
    for (std::int64_t j = 0; j < c.k; ++j) {
      const std::int64_t e = local_expert(c, c.map, ids[static_cast<std::size_t>(t * c.k + j)]);
      if (e < 0) continue;
      for (std::int64_t i = 0; i < c.inter; ++i) {
        double gate = 0.0, up = 0.0;
        for (std::int64_t hh = 0; hh < c.h; ++hh) {
          const double xv = x[t * c.h + hh];
          gate += xv * w1[(e * 2 * c.inter + i) * c.h + hh];
          up += xv * w1[(e * 2 * c.inter + c.inter + i) * c.h + hh];
        }
        act[i] = activate(c.act, gate) * up;
        sens[i] = (activation_sensitivity(c.act, gate) + 2.0 * std::fabs(activate(c.act, gate))) * std::fabs(up);
      }
      const double weight = tw[static_cast<std::size_t>(t * c.k + j)];
      for (std::int64_t hh = 0; hh < c.h; ++hh) {
        double s = 0.0, b = 0.0, m = 0.0;
        for (std::int64_t i = 0; i < c.inter; ++i) {
          const double wv = w2[(e * c.h + hh) * c.inter + i];
          s += act[i] * wv;
          b += sens[i] * std::fabs(wv);
          m += std::fabs(act[i] * wv);
        }
        const std::size_t at = static_cast<std::size_t>(t * c.h + hh);
        ref[at] += weight * s;
        bound[at] += std::fabs(weight) * b;
        mag[at] += std::fabs(weight) * m;
      }
    }
  }
  const double u_in = unit_roundoff(c.in), u_out = unit_roundoff(c.out);
  std::int64_t bad = 0, first = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    // fp32 sums of up to max(H, I) products: 1e-4 of their magnitude covers the order and the
    // tensor cores' truncating alignment with room to spare.
    const double tol = 2.0 * u_out * std::fabs(ref[i]) + 2.0 * u_in * bound[i] + 1e-4 * mag[i] + 1e-6;
    if (!(std::fabs(out[i] - ref[i]) <= tol)) {
      if (first < 0) first = static_cast<std::int64_t>(i);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << c.describe() << ": first bad element " << first << " out "
                    << (first < 0 ? 0.0f : out[static_cast<std::size_t>(first)]) << " ref "
                    << (first < 0 ? 0.0 : ref[static_cast<std::size_t>(first)]);
}

void check_moe(const MoeCase& c, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  MoeData d = make_moe(c, seed);
  run_moe(d, nullptr);
  device_synchronize();
  expect_moe_matches(d, c.ids, d.topk_weights.host());
}

enum class Routing { kUniform, kSkewed, kSomeEmpty, kOneExpert };

// Ids of T tokens x k slots over E experts: uniform; skewed (about 3/4 of the slots on expert 1);
// a third of the experts never chosen; every slot on expert E - 1. Distinct within a token where
// the rule allows.
std::vector<std::int32_t> routing_ids(Routing r, std::int64_t t, std::int64_t k, std::int64_t e, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(t * k));
  std::vector<std::int32_t> pool;
  for (std::int32_t x = 0; x < e; ++x) {
    if (r != Routing::kSomeEmpty || x % 3 != 0) pool.push_back(x);
  }
  for (std::int64_t tok = 0; tok < t; ++tok) {
    std::shuffle(pool.begin(), pool.end(), rng);
    for (std::int64_t j = 0; j < k; ++j) {
      std::int32_t id = pool[static_cast<std::size_t>(j) % pool.size()];
      if (r == Routing::kSkewed && j == 0 && rng() % 4 != 0) id = 1;
      if (r == Routing::kOneExpert) id = static_cast<std::int32_t>(e - 1);
      ids[static_cast<std::size_t>(tok * k + j)] = id;
    }
  }
  return ids;
}

TEST(FusedMoe, RandomRoutingsDtypesAndActivations) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1000;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (Routing r : {Routing::kUniform, Routing::kSkewed, Routing::kSomeEmpty, Routing::kOneExpert}) {
      for (MoeActivation act : {MoeActivation::kSilu, MoeActivation::kGelu}) {
        MoeCase c;
        c.in = c.out = in;
        c.act = act;
        c.ids = routing_ids(r, c.t, c.k, c.e, seed);
        check_moe(c, seed++);
      }
    }
  }
}

TEST(FusedMoe, UnalignedSizesTopkAndExpertCounts) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1100;
  // H = 100: element loads in the gate/up GEMM; I = 60: scalar activation and element loads in
  // the down GEMM; I = 33 odd; E = 1 and 64; k = 1 and 6.
  for (auto [h, inter, e, k] :
       {std::tuple<int, int, int, int>{100, 60, 8, 2}, {64, 33, 4, 3}, {128, 64, 1, 1}, {96, 40, 64, 6}}) {
    MoeCase c;
    c.t = 29;
    c.h = h;
    c.inter = inter;
    c.e = e;
    c.k = k;
    c.ids = routing_ids(Routing::kUniform, c.t, c.k, c.e, seed);
    check_moe(c, seed++);
  }
}

TEST(FusedMoe, Fp32OutAnd16BitRoutingWeights) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 1200;
  for (DType in : {DType::kBFloat16, DType::kFloat16}) {
    for (DType out : {in, DType::kFloat32}) {
      for (DType wt : {DType::kFloat32, in}) {
        MoeCase c;
        c.in = in;
        c.out = out;
        c.weight_type = wt;
        c.ids = routing_ids(Routing::kSkewed, c.t, c.k, c.e, seed);
        check_moe(c, seed++);
      }
    }
  }
}

TEST(FusedMoe, ExpertMapAndOutOfRangeIdsContributeZero) {
  TGEMM_REQUIRE_GPU();
  MoeCase c;
  c.e = 6;
  c.k = 4;
  c.global_experts = 16;
  // Global experts 2, 5, 7, 8, 11 and 13 live here (local 0..5); 9 maps to local 6 (>= E) and 14
  // to -7: both contribute 0, as the experts on other ranks (-1) do.
  c.map.assign(16, -1);
  c.map[2] = 0;
  c.map[5] = 1;
  c.map[7] = 2;
  c.map[8] = 3;
  c.map[11] = 4;
  c.map[13] = 5;
  c.map[9] = 6;
  c.map[14] = -7;
  c.ids = random_ids(c.t * c.k, c.global_experts, 1300, true);  // some ids outside [0, 16)
  check_moe(c, 1300);
  // Without a map the same ids index the 6 local experts directly: ids 6.. and negatives give 0.
  c.global_experts = 0;
  c.map.clear();
  check_moe(c, 1301);
}

TEST(FusedMoe, EmptyShapesWriteZerosOrNothing) {
  TGEMM_REQUIRE_GPU();
  MoeCase c;
  c.k = 0;  // no slot: zeros
  c.ids.clear();
  check_moe(c, 1400);
  c.k = 2;
  c.inter = 0;  // no intermediate: zeros
  c.ids = routing_ids(Routing::kUniform, c.t, c.k, c.e, 1401);
  check_moe(c, 1401);
  c.inter = 32;
  c.e = 0;  // no local expert: every slot contributes 0
  c.ids.assign(static_cast<std::size_t>(c.t * c.k), 0);
  check_moe(c, 1402);
  c.e = 4;
  c.t = 0;  // nothing to write
  c.ids.clear();
  check_moe(c, 1403);
}

TEST(FusedMoe, CapturedGraphFollowsRoutingChangedOnTheDevice) {
  TGEMM_REQUIRE_GPU();
  for (bool with_map : {false, true}) {
    MoeCase c;
    c.t = 64;
    c.k = 2;
    c.e = 8;
    if (with_map) {
      c.global_experts = 16;
      c.map.assign(16, -1);
      for (int g = 0; g < 8; ++g) c.map[static_cast<std::size_t>(2 * g + 1)] = g;  // odd experts live here
    }
    const std::int64_t id_range = with_map ? 16 : 8;
    c.ids = random_ids(c.t * c.k, id_range, 1500, false);
    MoeData d = make_moe(c, 1500);
    test::GraphReplay graph([&](Stream stream) { run_moe(d, stream); });
    ASSERT_TRUE(graph.ok());
    for (std::uint64_t s : {1501, 1502, 1503}) {
      std::vector<std::int32_t> ids = random_ids(c.t * c.k, id_range, s, s == 1502);
      if (s == 1503) ids.assign(ids.size(), with_map ? 3 : 7);
      ASSERT_EQ(cudaMemcpyAsync(d.ids.data(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice, graph.stream()),
                cudaSuccess);
      fill_uniform(d.topk_weights.data(), c.weight_type, c.t * c.k, s, 0.0f, 1.0f, graph.stream());
      fill_nan(d.out.data(), c.out, d.out.count, graph.stream());
      graph.replay();
      SCOPED_TRACE(c.describe() + " replay seed " + std::to_string(s));
      expect_moe_matches(d, ids, d.topk_weights.host());
    }
  }
}

// ---------------------------------------------------------------------------------------------
// topk_softmax and grouped_topk

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

// NaN ranks below every number, then the larger value, then the lower index (include/tgemm/moe.h).
bool ranks_above(float a, std::int64_t ia, float b, std::int64_t ib) {
  if (std::isnan(a) != std::isnan(b)) return std::isnan(b);
  if (!std::isnan(a) && a != b) return a > b;
  return ia < ib;
}

// One row's routing in fp32 on the host, as the kernel computes it: scores, what ranks, which
// experts are eligible (in a chosen group) and the ids in rank order.
struct RowRoute {
  std::vector<float> score, choice;
  std::vector<bool> eligible;
  std::vector<std::int64_t> ids;
};

RowRoute route_row(const RouteCase& c, const float* logits, const std::vector<float>& bias) {
  RowRoute r;
  r.score.resize(static_cast<std::size_t>(c.e));
  r.choice.assign(logits, logits + c.e);
  float m = -INFINITY, sum = 0.0f;
  for (std::int64_t e = 0; e < c.e; ++e) m = std::fmax(m, logits[e]);
  for (std::int64_t e = 0; e < c.e; ++e) {
    r.score[e] = c.sigmoid ? 1.0f / (1.0f + std::exp(-logits[e])) : std::exp(logits[e] - m);
    sum += r.score[e];
  }
  for (std::int64_t e = 0; e < c.e && !c.sigmoid; ++e) r.score[e] /= sum;
  if (c.bias) {
    for (std::int64_t e = 0; e < c.e; ++e) r.choice[e] = r.score[e] + bias[static_cast<std::size_t>(e)];
  }
  const std::int64_t gs = c.e / c.n_group;
  std::vector<float> group_score(static_cast<std::size_t>(c.n_group));
  for (std::int64_t g = 0; g < c.n_group; ++g) {
    std::vector<std::int64_t> members(static_cast<std::size_t>(gs));
    for (std::int64_t i = 0; i < gs; ++i) members[i] = g * gs + i;
    std::sort(members.begin(), members.end(),
              [&](std::int64_t a, std::int64_t b) { return ranks_above(r.choice[a], a, r.choice[b], b); });
    group_score[g] = c.bias && gs > 1 ? r.choice[members[0]] + r.choice[members[1]] : r.choice[members[0]];
  }
  std::vector<std::int64_t> groups(static_cast<std::size_t>(c.n_group));
  for (std::int64_t g = 0; g < c.n_group; ++g) groups[g] = g;
  std::sort(groups.begin(), groups.end(),
            [&](std::int64_t a, std::int64_t b) { return ranks_above(group_score[a], a, group_score[b], b); });
  r.eligible.assign(static_cast<std::size_t>(c.e), false);
  for (std::int64_t i = 0; i < c.topk_group; ++i) {
    for (std::int64_t e = groups[i] * gs; e < (groups[i] + 1) * gs; ++e) r.eligible[e] = true;
  }
  for (std::int64_t e = 0; e < c.e; ++e) {
    if (r.eligible[e]) r.ids.push_back(e);
  }
  std::sort(r.ids.begin(), r.ids.end(),
            [&](std::int64_t a, std::int64_t b) { return ranks_above(r.choice[a], a, r.choice[b], b); });
  r.ids.resize(static_cast<std::size_t>(c.k));
  return r;
}

struct RouteData {
  RouteCase c;
  Buffer gating, bias, weights, ids;
  TensorView gv, bv, wv, iv;
};

RouteData make_route(const RouteCase& c, std::uint64_t seed) {
  RouteData d;
  d.c = c;
  d.gating = random_buffer(c.gating, c.t * c.e, seed);
  d.bias = random_buffer(DType::kFloat32, c.e, seed + 1);
  d.weights = nan_buffer(DType::kFloat32, c.t * c.k);
  d.ids = int_buffer(std::vector<std::int32_t>(static_cast<std::size_t>(c.t * c.k), -100));
  d.gv = TensorView::contiguous(d.gating.data(), c.gating, {c.t, c.e});
  d.bv = TensorView::contiguous(d.bias.data(), DType::kFloat32, {c.e});
  d.wv = TensorView::contiguous(d.weights.data(), DType::kFloat32, {c.t, c.k});
  d.iv = TensorView::contiguous(d.ids.data(), DType::kInt32, {c.t, c.k});
  return d;
}

void run_route(const RouteData& d, Stream stream) {
  const RouteCase& c = d.c;
  if (c.grouped) {
    grouped_topk(d.gv, c.bias ? &d.bv : nullptr, c.n_group, c.topk_group,
                 c.sigmoid ? MoeScoring::kSigmoid : MoeScoring::kSoftmax, c.renormalize, c.scaling, d.wv, d.iv, stream);
  } else {
    topk_softmax(d.gv, d.wv, d.iv, c.renormalize, stream);
  }
}

// Device ids: distinct, eligible, and at each rank an expert whose choice equals the host's pick
// there up to fp32 rounding of the scores (exactly, where the logits rank); weights: the scores
// at the device's ids, renormalized and scaled.
void expect_route_matches(const RouteData& d, std::int64_t nan_row) {
  const RouteCase& c = d.c;
  const std::vector<float> logits = d.gating.host(), bias = d.bias.host(), w = d.weights.host();
  std::vector<std::int32_t> ids(static_cast<std::size_t>(c.t * c.k));
  copy_to_host(ids.data(), d.ids.data(), ids.size() * 4);
  for (std::int64_t t = 0; t < c.t; ++t) {
    SCOPED_TRACE("row " + std::to_string(t));
    const RowRoute r = route_row(c, logits.data() + t * c.e, bias);
    std::vector<bool> seen(static_cast<std::size_t>(c.e), false);
    double picked = 0.0;
    for (std::int64_t j = 0; j < c.k; ++j) {
      const std::int32_t id = ids[static_cast<std::size_t>(t * c.k + j)];
      ASSERT_TRUE(id >= 0 && id < c.e) << "id " << id;
      ASSERT_FALSE(seen[id]) << "expert " << id << " chosen twice";
      seen[id] = true;
      ASSERT_TRUE(r.eligible[id]) << "expert " << id << " is in a group not chosen";
      const float want = r.choice[r.ids[j]], got = r.choice[id];
      const float slack = (c.bias ? 4e-7f : 0.0f) * std::max(1.0f, std::fabs(want));
      EXPECT_TRUE(std::fabs(got - want) <= slack || (std::isnan(got) && std::isnan(want)))
          << "rank " << j << ": device expert " << id << " (" << got << "), host expert " << r.ids[j] << " (" << want
          << ")";
      picked += r.score[id];
    }
    if (t == nan_row) continue;  // NaN scores make NaN weights
    for (std::int64_t j = 0; j < c.k; ++j) {
      const std::int32_t id = ids[static_cast<std::size_t>(t * c.k + j)];
      const double want = r.score[id] / (c.renormalize ? picked : 1.0) * c.scaling;
      EXPECT_NEAR(w[t * c.k + j], want, 1e-5 * std::fabs(want) + 1e-7) << "weight of rank " << j;
    }
  }
}

void check_route(const RouteCase& c, std::uint64_t seed) {
  SCOPED_TRACE(c.describe());
  RouteData d = make_route(c, seed);
  run_route(d, nullptr);
  device_synchronize();
  expect_route_matches(d, -1);
}

TEST(Routing, TopkSoftmaxExpertCountsDtypesAndRenormalize) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 2000;
  for (auto [e, k] : {std::pair<int, int>{8, 2}, {60, 4}, {128, 8}, {300, 6}, {2048, 1}, {5, 5}}) {
    for (DType g : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      RouteCase c;
      c.e = e;
      c.k = k;
      c.gating = g;
      c.renormalize = seed % 2 == 0;
      check_route(c, seed++);
    }
  }
}

TEST(Routing, GroupedTopkDeepSeekV3AndVariants) {
  TGEMM_REQUIRE_GPU();
  std::uint64_t seed = 2100;
  RouteCase c;
  c.grouped = true;
  c.e = 256;  // DeepSeek-V3: 8 groups of 32, 4 groups kept, 8 experts, sigmoid with bias, scaled
  c.n_group = 8;
  c.topk_group = 4;
  c.k = 8;
  c.sigmoid = true;
  c.bias = true;
  c.renormalize = true;
  c.scaling = 2.5;
  check_route(c, seed++);
  c.gating = DType::kBFloat16;
  check_route(c, seed++);
  c.bias = false;  // group score: the group's best
  c.sigmoid = false;
  c.renormalize = false;
  c.scaling = 1.0;
  check_route(c, seed++);
  c.e = 64;  // groups of one expert: the top-2 sum is the expert itself
  c.n_group = 64;
  c.topk_group = 6;
  c.k = 6;
  c.bias = true;
  check_route(c, seed++);
  c.e = 96;  // every group kept: plain top-k
  c.n_group = 3;
  c.topk_group = 3;
  c.k = 7;
  check_route(c, seed++);
}

TEST(Routing, NanLogitsStillGiveDistinctIdsInRange) {
  TGEMM_REQUIRE_GPU();
  for (bool grouped : {false, true}) {
    RouteCase c;
    c.t = 4;
    c.e = 32;
    c.k = 4;
    c.grouped = grouped;
    c.sigmoid = grouped;
    c.n_group = grouped ? 4 : 1;
    c.topk_group = grouped ? 2 : 1;
    RouteData d = make_route(c, 2200);
    const float nan = std::nanf("");
    std::vector<float> row(static_cast<std::size_t>(c.e), nan);  // row 1: NaN everywhere but expert 9
    row[9] = 0.5f;
    copy_to_device(static_cast<float*>(d.gating.data()) + c.e, row.data(), row.size() * 4);
    run_route(d, nullptr);
    device_synchronize();
    SCOPED_TRACE(c.describe());
    expect_route_matches(d, 1);
  }
}

TEST(Routing, CapturedGraphOfRoutingAndFusedMoeFollowsNewLogits) {
  TGEMM_REQUIRE_GPU();
  RouteCase rc;
  rc.t = 48;
  rc.e = 8;
  rc.k = 2;
  rc.renormalize = true;
  RouteData r = make_route(rc, 2300);
  MoeCase mc;
  mc.t = rc.t;
  mc.k = rc.k;
  mc.e = rc.e;
  mc.ids.assign(static_cast<std::size_t>(mc.t * mc.k), 0);
  MoeData m = make_moe(mc, 2301);
  const TensorView ids = r.iv, weights = r.wv;  // the routing's outputs feed the layer
  test::GraphReplay graph([&](Stream stream) {
    run_route(r, stream);
    fused_moe(m.hv, m.w1v, m.w2v, weights, ids, m.ov, mc.act, nullptr, stream);
  });
  ASSERT_TRUE(graph.ok());
  for (std::uint64_t s : {2302, 2303}) {
    fill_uniform(r.gating.data(), rc.gating, rc.t * rc.e, s, -4.0f, 4.0f, graph.stream());
    fill_nan(m.out.data(), mc.out, m.out.count, graph.stream());
    graph.replay();
    SCOPED_TRACE("replay seed " + std::to_string(s));
    expect_route_matches(r, -1);
    std::vector<std::int32_t> routed(static_cast<std::size_t>(rc.t * rc.k));
    copy_to_host(routed.data(), r.ids.data(), routed.size() * 4);
    expect_moe_matches(m, routed, r.weights.host());
  }
}

}  // namespace
}  // namespace tgemm
