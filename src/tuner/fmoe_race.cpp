#include "tuner/fmoe_race.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "core/check.h"
#include "cuda/cuda_check.h"
#include "grouped/gmm_cutlass.h"
#include "moe/fmoe_dispatch.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"
#include "tgemm/moe.h"
#include "tuner/fmoe_reference.h"
#include "tuner/gmm_race.h"
#include "tuner/select.h"

namespace tgemm {
namespace {

constexpr const char* kOp = "tgemm tune-fmoe";

std::size_t elems_bytes(std::int64_t n, DType d) { return static_cast<std::size_t>(n) * dtype_size(d); }

}  // namespace

struct FmoeRaceData::Set {
  DeviceBuffer hidden, w1, w2, out;
  TensorView hv, w1v, w2v, ov;
};

FmoeTolerance fmoe_tolerance(const FmoeTuneProblem& p) {
  // rtol: the gmm race's rule for the output's rounding (4 u_out). mag_coef: the intermediate
  // roundings (relative u_in each, tuner/fmoe_reference.h's mag their root sum of squares at full
  // u_in); a rounding error's standard deviation is at most u_in / sqrt(3), so 8 u_in mag is over
  // 13 standard deviations, safe over the 10^7 elements of a large key, and also the worst case
  // where mag has at most 64 terms. atol: the fp32 accumulations over H and I terms (~2^-23 per
  // term of the unit-variance data, tensor cores' truncating adds), and a reference that sums to
  // 0 (a token with no slot on this rank).
  const double u_in = p.dtype == DType::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  const double rtol = gemm_tolerance(p.dtype, p.hidden, false).rtol;
  return {rtol, 8 * u_in, 1e-6 + std::ldexp(1.0, -23) * static_cast<double>(p.hidden + p.inter)};
}

FmoeRaceData::FmoeRaceData(const FmoeTuneProblem& p, std::uint64_t seed) : p_(p) {
  const std::int64_t id_space = p.global_experts > 0 ? p.global_experts : p.experts;
  for (int r = 0; r < 2; ++r) {
    routing_[r] = fmoe_routing(p.tokens, p.topk, id_space, r == kSkewed, seed + static_cast<std::uint64_t>(r));
    local_[r] = routing_[r].ids;
    for (std::int32_t& e : local_[r]) e = e < p.experts ? e : -1;  // fmoe_rank_map's rank
  }
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  std::size_t free_b = 0, total_b = 0;
  TGEMM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), kOp);
  const std::int64_t w1_elems = p.experts * 2 * p.inter * p.hidden, w2_elems = p.experts * p.hidden * p.inter;
  const std::size_t full = elems_bytes(w1_elems + w2_elems + 2 * p.tokens * p.hidden, p.dtype);
  // Rotated over the bytes a call reads (its touched experts), held in whole sets.
  const int want = rotation_count(static_cast<std::size_t>(bytes(kUniform)), dev.l2_bytes, 3.0, 8,
                                  std::numeric_limits<std::size_t>::max());
  const int count = std::max(1, std::min<int>(want, static_cast<int>(free_b / 3 / full)));
  const double a1 = 3.0 / std::sqrt(static_cast<double>(p.hidden)), a2 = 3.0 / std::sqrt(static_cast<double>(p.inter));
  for (int i = 0; i < count; ++i) {
    auto s = std::make_unique<Set>();
    const std::uint64_t base = 1000 * seed + 10 * static_cast<std::uint64_t>(i);
    s->hidden = DeviceBuffer(elems_bytes(p.tokens * p.hidden, p.dtype));
    s->w1 = DeviceBuffer(elems_bytes(w1_elems, p.dtype));
    s->w2 = DeviceBuffer(elems_bytes(w2_elems, p.dtype));
    s->out = DeviceBuffer(elems_bytes(p.tokens * p.hidden, p.dtype));
    fill_uniform(s->hidden.data(), p.dtype, p.tokens * p.hidden, base, -1.0f, 1.0f, nullptr);
    fill_uniform(s->w1.data(), p.dtype, w1_elems, base + 1, static_cast<float>(-a1), static_cast<float>(a1), nullptr);
    fill_uniform(s->w2.data(), p.dtype, w2_elems, base + 2, static_cast<float>(-a2), static_cast<float>(a2), nullptr);
    s->hv = TensorView::contiguous(s->hidden.data(), p.dtype, {p.tokens, p.hidden});
    s->w1v = TensorView::contiguous(s->w1.data(), p.dtype, {p.experts, 2 * p.inter, p.hidden});
    s->w2v = TensorView::contiguous(s->w2.data(), p.dtype, {p.experts, p.hidden, p.inter});
    s->ov = TensorView::contiguous(s->out.data(), p.dtype, {p.tokens, p.hidden});
    sets_.push_back(std::move(s));
  }
  TensorView mv;
  if (p.global_experts > 0) {
    const std::vector<std::int32_t> map = fmoe_rank_map(p.experts, p.global_experts);
    map_ = DeviceBuffer(map.size() * sizeof(std::int32_t));
    copy_to_device(map_.data(), map.data(), map.size() * sizeof(std::int32_t));
    mv = TensorView::contiguous(map_.data(), DType::kInt32, {p.global_experts});
  }
  for (int r = 0; r < 2; ++r) {
    const std::size_t slots = routing_[r].ids.size();
    ids_[r] = DeviceBuffer(slots * sizeof(std::int32_t));
    weights_[r] = DeviceBuffer(slots * sizeof(float));
    copy_to_device(ids_[r].data(), routing_[r].ids.data(), slots * sizeof(std::int32_t));
    copy_to_device(weights_[r].data(), routing_[r].weights.data(), slots * sizeof(float));
    const TensorView iv = TensorView::contiguous(ids_[r].data(), DType::kInt32, {p.tokens, p.topk});
    const TensorView tv = TensorView::contiguous(weights_[r].data(), DType::kFloat32, {p.tokens, p.topk});
    for (const auto& s : sets_) {
      calls_[r].push_back(validate_fused_moe(s->hv, s->w1v, s->w2v, tv, iv, s->ov, p.activation,
                                             p.global_experts > 0 ? &mv : nullptr, kOp));
    }
  }
  ref_ = DeviceBuffer(static_cast<std::size_t>(p.tokens * p.hidden) * sizeof(float));
  mag_ = DeviceBuffer(static_cast<std::size_t>(p.tokens * p.hidden) * sizeof(float));
}

FmoeRaceData::~FmoeRaceData() = default;

std::int64_t FmoeRaceData::touched_experts(int r) const {
  std::unordered_set<std::int32_t> seen;
  for (std::int32_t e : local_[r]) {
    if (e >= 0) seen.insert(e);
  }
  return static_cast<std::int64_t>(seen.size());
}

std::int64_t FmoeRaceData::busiest_expert_slots(int r) const {
  std::vector<std::int64_t> per(static_cast<std::size_t>(p_.experts), 0);
  for (std::int32_t e : local_[r]) {
    if (e >= 0) ++per[static_cast<std::size_t>(e)];
  }
  return per.empty() ? 0 : *std::max_element(per.begin(), per.end());
}

double FmoeRaceData::bytes(int r) const {
  const double elem = static_cast<double>(dtype_size(p_.dtype));
  return elem * (static_cast<double>(touched_experts(r)) * 3.0 * static_cast<double>(p_.hidden * p_.inter) +
                 2.0 * static_cast<double>(p_.tokens * p_.hidden));
}

double FmoeRaceData::flops(int r) const {
  const auto local = std::count_if(local_[r].begin(), local_[r].end(), [](std::int32_t e) { return e >= 0; });
  return 2.0 * static_cast<double>(local) * 3.0 * static_cast<double>(p_.hidden * p_.inter);
}

double FmoeRaceData::est_us(int r) const {
  // 400 TFLOP/s of compute or 3 TB/s of traffic, whichever bounds (gmm_race's rates).
  return std::max(flops(r) / 4e8, bytes(r) / 3e6);
}

void FmoeRaceData::run_dispatch(int r, int set, Stream stream) const {
  const Set& s = *sets_[static_cast<std::size_t>(set)];
  const TensorView iv = TensorView::contiguous(ids_[r].data(), DType::kInt32, {p_.tokens, p_.topk});
  const TensorView tv = TensorView::contiguous(weights_[r].data(), DType::kFloat32, {p_.tokens, p_.topk});
  TensorView mv;
  if (p_.global_experts > 0) mv = TensorView::contiguous(map_.data(), DType::kInt32, {p_.global_experts});
  fused_moe(s.hv, s.w1v, s.w2v, tv, iv, s.ov, p_.activation, p_.global_experts > 0 ? &mv : nullptr, stream);
}

void FmoeRaceData::compute_reference(int r) {
  const Set& s = *sets_[0];
  FmoeReferenceProblem q;
  q.tokens = p_.tokens;
  q.topk = p_.topk;
  q.experts = p_.experts;
  q.hidden = p_.hidden;
  q.inter = p_.inter;
  q.dtype = p_.dtype;
  q.activation = p_.activation;
  fmoe_reference(q, s.hidden.data(), s.w1.data(), s.w2.data(), local_[r], routing_[r].weights, ref_.as<float>(),
                 mag_.as<float>(), nullptr);
}

std::string FmoeRaceData::check(const std::function<void(Stream)>& run) const {
  const Set& s = *sets_[0];
  const std::int64_t count = p_.tokens * p_.hidden;
  try {
    fill_nan(s.out.data(), p_.dtype, count, nullptr);
    run(nullptr);
    TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), kOp);
  } catch (const Error& e) {
    return e.what();
  }
  const FmoeTolerance tol = fmoe_tolerance(p_);
  const FmoeCompare c = fmoe_compare(s.out.data(), p_.dtype, ref_.as<float>(), mag_.as<float>(), count, tol.rtol,
                                     tol.mag_coef, tol.atol, nullptr);
  if (c.bad == 0) return "";
  return std::to_string(c.bad) + " of " + std::to_string(c.checked) + " elements outside tolerance (first at [" +
         std::to_string(c.first_bad / p_.hidden) + ", " + std::to_string(c.first_bad % p_.hidden) +
         "]: " + std::to_string(c.first_bad_out) + " vs " + std::to_string(c.first_bad_ref) + ", tolerance " +
         std::to_string(c.first_bad_tol) + ")";
}

std::string fmoe_plan_label(const MoeCutlassPlan& plan) {
  if (plan.up == nullptr) return kFmoeTileSolution;
  return std::string(kFmoeCutlassSolution) + " up " + plan.up->generated_name + " down " + plan.down->generated_name;
}

FmoeRaceResult race_fmoe(const FmoeTuneProblem& p, const FmoeRaceOptions& o) {
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  FmoeRaceResult res;
  res.key = p.key(dev.arch, dev.sm_count);
  FmoeRaceData data(p, o.seed);
  const MoeCall& first = data.call(FmoeRaceData::kUniform, 0);
  const std::vector<MoeCutlassPlan> plans = fused_moe_candidates(first, device);
  const MoeCutlassPlan dflt = fused_moe_default_plan(first, device);
  res.default_solution = fmoe_plan_label(dflt);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    res.candidates.push_back({fmoe_plan_label(plans[i]), "", {0, 0}, {0, 0}});
    if (plans[i].up == dflt.up && plans[i].down == dflt.down) res.default_index = static_cast<int>(i);
  }
  TGEMM_CHECK(res.default_index >= 0, kOp, "the default rule's path ", res.default_solution,
              " is not among the candidates of ", p.name);
  check_routing_candidates(
      res.candidates, res.default_index, kOp, p.name, "path", [&](int r) { data.compute_reference(r); },
      [&](std::size_t i, int r) {
        const MoeCall& call = data.call(r, 0);
        const MoeCutlassPlan pl = plans[i];
        return data.check([&](Stream s) { run_fused_moe_on(call, pl, device, s); });
      });
  time_routing_candidates(
      res.candidates, res.default_index, o, data.sets(), [&](int r) { return data.est_us(r); },
      [&](std::size_t i, int r, int j, Stream s) {
        run_fused_moe_on(data.call(r, j % data.sets()), plans[i], device, s);
      });
  res.winner = select_gmm_winner(res.candidates, res.default_index, o.tie_band);
  if (res.winner >= 0) {
    const FmoeCandidateTiming& w = res.candidates[static_cast<std::size_t>(res.winner)];
    const MoeCutlassPlan& pl = plans[static_cast<std::size_t>(res.winner)];
    FmoeRow row;
    row.key = res.key;
    row.t = p.tokens;
    row.solution = fmoe_solution_name(pl);
    if (pl.up != nullptr) {
      row.up = pl.up->generated_name;
      row.down = pl.down->generated_name;
    }
    row.us = w.us[0];
    row.us_skewed = w.us[1];
    row.speedup = w.speedup[0];
    row.speedup_skewed = w.speedup[1];
    row.default_solution = fmoe_solution_name(dflt);
    res.row = row;
  }
  return res;
}

}  // namespace tgemm
