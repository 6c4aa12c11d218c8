#include "tuner/gmm_race.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>

#include "backends/reference/reference_backend.h"
#include "core/check.h"
#include "core/validate.h"
#include "cuda/cuda_check.h"
#include "grouped/gmm_cutlass.h"
#include "grouped/gmm_dispatch.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "runtime/timing.h"
#include "tgemm/gmm.h"
#include "tuner/select.h"

namespace tgemm {
namespace {

constexpr const char* kOp = "tgemm tune-gmm";

}  // namespace

struct GmmRaceData::Set {
  DeviceBuffer lhs, rhs, bias, out;
  TensorView lv, rv, bv, ov;
};

std::size_t GmmRaceData::set_bytes() const {
  return static_cast<std::size_t>((p_.m * p_.k + p_.groups * p_.n * p_.k) * 2 +
                                  p_.m * p_.n * static_cast<std::int64_t>(dtype_size(p_.out_dtype)));
}

double GmmRaceData::est_us() const {
  // 400 TFLOP/s of compute or 3 TB/s of traffic, whichever bounds.
  return std::max(2.0 * static_cast<double>(p_.m * p_.n) * static_cast<double>(p_.k) / 4e8,
                  static_cast<double>(set_bytes()) / 3e6);
}

GmmRaceData::GmmRaceData(const GmmTuneProblem& p, std::uint64_t seed) : p_(p) {
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  std::size_t free_b = 0, total_b = 0;
  TGEMM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), kOp);
  const int count = rotation_count(set_bytes(), dev.l2_bytes, 3.0, 8, free_b / 3);
  const std::int64_t rhs_elems = p.groups * p.n * p.k;
  for (int i = 0; i < count; ++i) {
    auto s = std::make_unique<Set>();
    const std::uint64_t base = 1000 * seed + 10 * static_cast<std::uint64_t>(i);
    s->lhs = DeviceBuffer(static_cast<std::size_t>(p.m * p.k) * 2);
    s->rhs = DeviceBuffer(static_cast<std::size_t>(rhs_elems) * 2);
    s->out = DeviceBuffer(static_cast<std::size_t>(p.m * p.n) * dtype_size(p.out_dtype));
    fill_uniform(s->lhs.data(), p.dtype, p.m * p.k, base, -1.0f, 1.0f, nullptr);
    fill_uniform(s->rhs.data(), p.dtype, rhs_elems, base + 1, -1.0f, 1.0f, nullptr);
    s->lv = TensorView::contiguous(s->lhs.data(), p.dtype, {p.m, p.k});
    s->rv = p.rhs_nk ? TensorView::contiguous(s->rhs.data(), p.dtype, {p.groups, p.n, p.k})
                     : TensorView::contiguous(s->rhs.data(), p.dtype, {p.groups, p.k, p.n});
    s->ov = TensorView::contiguous(s->out.data(), p.out_dtype, {p.m, p.n});
    if (p.bias) {
      s->bias = DeviceBuffer(static_cast<std::size_t>(p.groups * p.n) * 2);
      fill_uniform(s->bias.data(), p.dtype, p.groups * p.n, base + 2, -1.0f, 1.0f, nullptr);
      s->bv = TensorView::contiguous(s->bias.data(), p.dtype, {p.groups, p.n});
    }
    sets_.push_back(std::move(s));
  }
  for (int r = 0; r < 2; ++r) {
    routing_[r] = gmm_routing(p.m, p.groups, r == kSkewed, seed);
    sizes_[r] = DeviceBuffer(routing_[r].size() * sizeof(std::int32_t));
    copy_to_device(sizes_[r].data(), routing_[r].data(), routing_[r].size() * sizeof(std::int32_t));
    const TensorView sv = TensorView::contiguous(sizes_[r].data(), DType::kInt32, {p.groups});
    for (const auto& s : sets_) {
      calls_[r].push_back(validate_gmm(s->lv, s->rv, sv, s->ov, p.rhs_nk, p.bias ? &s->bv : nullptr, kOp));
    }
  }
  ref_ = DeviceBuffer(static_cast<std::size_t>(p.m * p.n) * sizeof(float));
}

GmmRaceData::~GmmRaceData() = default;

void GmmRaceData::run_dispatch(int r, int set, Stream stream) const {
  const Set& s = *sets_[static_cast<std::size_t>(set)];
  const TensorView sv = TensorView::contiguous(sizes_[r].data(), DType::kInt32, {p_.groups});
  gmm(s.lv, s.rv, sv, s.ov, p_.rhs_nk, p_.bias ? &s.bv : nullptr, stream);
}

void GmmRaceData::compute_reference(int r) {
  const Set& s = *sets_[0];
  float* ref = ref_.as<float>();
  std::int64_t row = 0;
  for (std::int64_t g = 0; g < p_.groups; ++g) {
    const std::int64_t rows = routing_[r][static_cast<std::size_t>(g)];
    if (rows > 0) {
      GemmProblem q;
      q.m = rows;
      q.n = p_.n;
      q.k = p_.k;
      q.a_type = q.b_type = p_.dtype;
      q.out_type = DType::kFloat32;
      q.bias_type = p_.dtype;
      q.epilogue = p_.bias ? Epilogue::kBias : Epilogue::kNone;
      q.lda = p_.k;
      q.transpose_b = p_.rhs_nk;
      q.ldb = p_.rhs_nk ? p_.k : p_.n;
      q.ldo = p_.n;
      GemmArgs a;
      a.a = static_cast<const char*>(s.lhs.data()) + row * p_.k * 2;
      a.b = static_cast<const char*>(s.rhs.data()) + g * p_.n * p_.k * 2;
      a.bias = p_.bias ? static_cast<const char*>(s.bias.data()) + g * p_.n * 2 : nullptr;
      a.out = ref + row * p_.n;
      run_reference_gemm(q, a, DType::kFloat32, p_.n, nullptr);
    }
    row += rows;
  }
  TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), kOp);
}

std::string GmmRaceData::check(const std::function<void(Stream)>& run) const {
  const Set& s = *sets_[0];
  try {
    fill_nan(s.out.data(), p_.out_dtype, p_.m * p_.n, nullptr);
    run(nullptr);
    TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), kOp);
  } catch (const Error& e) {
    return e.what();
  }
  const Tolerance tol = gemm_tolerance(p_.out_dtype, p_.k, p_.bias);
  const CompareResult r = compare_with_reference(s.out.data(), p_.out_dtype, p_.n, ref_.as<float>(), p_.n, p_.m, p_.n,
                                                 tol.rtol, tol.atol, nullptr);
  if (r.bad == 0) return "";
  return std::to_string(r.bad) + " of " + std::to_string(r.checked) + " elements outside tolerance (first at " +
         std::to_string(r.first_bad) + ": " + std::to_string(r.first_bad_out) + " vs " +
         std::to_string(r.first_bad_ref) + ")";
}

void check_routing_candidates(std::vector<GmmCandidateTiming>& candidates, int default_index, const char* op,
                              const std::string& name, const char* what, const std::function<void(int)>& reference,
                              const std::function<std::string(std::size_t, int)>& check) {
  for (int r = 0; r < 2; ++r) {
    reference(r);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      GmmCandidateTiming& c = candidates[i];
      if (c.error.empty()) c.error = check(i, r);
    }
    const GmmCandidateTiming& d = candidates[static_cast<std::size_t>(default_index)];
    TGEMM_CHECK(d.error.empty(), op, name, ": the default rule's ", what, " ", d.solution, " fails the check (",
                r == GmmRaceData::kUniform ? "uniform" : "skewed", " routing): ", d.error);
  }
}

void time_routing_candidates(std::vector<GmmCandidateTiming>& candidates, int default_index,
                             const RoutingRaceOptions& o, int sets, const std::function<double(int)>& est_us,
                             const std::function<void(std::size_t, int, int, Stream)>& launch) {
  std::vector<std::size_t> timed;
  std::size_t default_pos = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!candidates[i].error.empty()) continue;
    if (i == static_cast<std::size_t>(default_index)) default_pos = timed.size();
    timed.push_back(i);
  }
  for (int r = 0; r < 2; ++r) {
    const SlotPlan plan = plan_slots(est_us(r), o.rounds);
    TimingOptions topt;
    topt.replays = o.replays;
    topt.warmup_replays = 2;
    topt.launches_per_graph = std::max(plan.launches_per_graph, sets);
    std::vector<std::function<void(int, Stream)>> launches;
    for (std::size_t i : timed) launches.push_back([&launch, i, r](int j, Stream s) { launch(i, r, j, s); });
    std::vector<std::vector<double>> per_round;
    const std::vector<TimingStats> stats = time_graphs_interleaved(launches, topt, plan.rounds, &per_round);
    for (std::size_t j = 0; j < timed.size(); ++j) {
      GmmCandidateTiming& c = candidates[timed[j]];
      c.us[r] = stats[j].median_us;
      c.speedup[r] = paired_ratio(per_round[default_pos], per_round[j]);
    }
  }
}

GmmRaceResult race_gmm(const GmmTuneProblem& p, const GmmRaceOptions& o) {
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  GmmRaceResult res;
  res.key = p.key(dev.arch, dev.sm_count);
  GmmRaceData data(p, o.seed);
  const GmmCall& first = data.call(GmmRaceData::kUniform, 0);
  const std::vector<const grouped_cutlass::GroupedKernel*> kernels = gmm_candidates(first, device);
  const grouped_cutlass::GroupedKernel* dflt = gmm_default_kernel(first, device);
  res.default_solution = gmm_solution_name(dflt);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    res.candidates.push_back({gmm_solution_name(kernels[i]), "", {0, 0}, {0, 0}});
    if (kernels[i] == dflt) res.default_index = static_cast<int>(i);
  }
  TGEMM_CHECK(res.default_index >= 0, kOp, "the default rule's solution ", res.default_solution,
              " is not among the candidates of ", p.name);
  check_routing_candidates(
      res.candidates, res.default_index, kOp, p.name, "solution", [&](int r) { data.compute_reference(r); },
      [&](std::size_t i, int r) {
        const GmmCall& call = data.call(r, 0);
        const auto* k = kernels[i];
        return data.check([&](Stream s) { run_gmm_on(call, k, device, s); });
      });
  time_routing_candidates(
      res.candidates, res.default_index, o, data.sets(), [&](int) { return data.est_us(); },
      [&](std::size_t i, int r, int j, Stream s) { run_gmm_on(data.call(r, j % data.sets()), kernels[i], device, s); });
  res.winner = select_gmm_winner(res.candidates, res.default_index, o.tie_band);
  if (res.winner >= 0) {
    const GmmCandidateTiming& w = res.candidates[static_cast<std::size_t>(res.winner)];
    GmmRow row;
    row.key = res.key;
    row.m = p.m;
    row.solution = w.solution;
    row.us = w.us[0];
    row.us_skewed = w.us[1];
    row.speedup = w.speedup[0];
    row.speedup_skewed = w.speedup[1];
    row.default_solution = res.default_solution;
    res.row = row;
  }
  return res;
}

}  // namespace tgemm
