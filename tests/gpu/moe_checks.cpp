#include "tests/gpu/moe_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cuda/device.h"
#include "grouped/gmm_cutlass.h"
#include "runtime/device_utils.h"
#include "tests/gpu/grouped_checks.h"

namespace tgemm::test {
namespace {

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

// The local expert of a slot's id, or -1 where the slot contributes 0 (include/tgemm/moe.h).
std::int64_t local_expert(const MoeCase& c, const std::vector<std::int32_t>& map, std::int32_t id) {
  std::int64_t e = id;
  if (c.global_experts > 0) e = id >= 0 && id < c.global_experts ? map[static_cast<std::size_t>(id)] : -1;
  return e >= 0 && e < c.e ? e : -1;
}

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

}  // namespace

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
    // The CUTLASS path rounds each slot's down product to the input type before the weighted
    // sum: u_in |w| |y| per slot, at most u_in * mag.
    const double tol = 2.0 * u_out * std::fabs(ref[i]) + 2.0 * u_in * bound[i] + u_in * mag[i] + 1e-4 * mag[i] + 1e-6;
    if (!(std::fabs(out[i] - ref[i]) <= tol)) {
      if (first < 0) first = static_cast<std::int64_t>(i);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << c.describe() << ": first bad element " << first << " out "
                    << (first < 0 ? 0.0f : out[static_cast<std::size_t>(first)]) << " ref "
                    << (first < 0 ? 0.0 : ref[static_cast<std::size_t>(first)]);
}

bool moe_cutlass_takes(const MoeCase& c) {
  if (c.t * c.k == 0 || c.e == 0 || c.inter == 0 || c.h % 8 != 0 || c.inter % 8 != 0) return false;
  grouped_cutlass::GroupedShape s;
  s.rows = c.t * c.k;
  s.groups = c.e;
  s.in = c.in;
  s.b_k_major = true;
  s.tma_compatible = true;  // make_moe's buffers: cudaMalloc'ed, contiguous
  s.n = 2 * c.inter;
  s.k = c.h;
  const int device = cuda_current_device();
  if (grouped_cutlass::pick_grouped_kernel(s, device, GroupedBackend::kCutlass) == nullptr) return false;
  s.n = c.h;
  s.k = c.inter;
  return grouped_cutlass::pick_grouped_kernel(s, device, GroupedBackend::kCutlass) != nullptr;
}

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

}  // namespace tgemm::test
