// `tgemm lt-space`: how large cuBLASLt's explicit configuration space is for a problem (algorithm
// ids, checks, valid configurations per algorithm) and what its heuristic picks. A diagnostic for
// tuning the tuner.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <vector>

#include "backends/cublaslt/cublaslt_backend.h"
#include "core/validate.h"
#include "cuda/cuda_check.h"
#include "runtime/device_utils.h"
#include "runtime/launch_fingerprint.h"
#include "runtime/runtime.h"
#include "tools/cli/common.h"
#include "tools/cli/lt_space.h"

namespace tgemm::cli {
namespace {

// --launches: every configuration run once (module loading, first-call state), then captured and
// fingerprinted; the groups of configurations that launch the same work, largest first. Tells how
// much of the space `tgemm tune --dedupe_launches` races once.
void print_launch_groups(const GemmProblem& p, const GemmArgs& args, const std::vector<LtConfig>& configs) {
  std::map<std::string, std::vector<std::string>> groups;
  int refused = 0, failed = 0, unknown = 0;
  DeviceBuffer ws;
  for (const LtConfig& c : configs) {
    std::string why;
    std::shared_ptr<LtSolution> s = LtSolution::configured(p, c, why);
    if (!s || !s->can_implement(p)) {
      ++refused;
      continue;
    }
    if (s->workspace_size(p) > ws.bytes()) ws = DeviceBuffer(s->workspace_size(p));
    const Workspace w{ws.data(), ws.bytes()};
    try {
      s->run(p, args, w, nullptr);
      TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "lt-space");
    } catch (const Error&) {
      cudaGetLastError();
      ++failed;
      continue;
    }
    const std::optional<std::string> fp = launch_fingerprint([&](Stream st) { s->run(p, args, w, st); });
    if (fp) groups[*fp].push_back(s->name());
    else ++unknown;
  }
  std::vector<const std::vector<std::string>*> sorted;
  std::size_t ran = 0;
  for (const auto& [fp, names] : groups) {
    sorted.push_back(&names);
    ran += names.size();
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->size() > b->size(); });
  fmt::print("launches: {} configurations ran, {} distinct launches among them, {} not capturable, {} refused, "
             "{} failed\n",
             ran + unknown, groups.size(), unknown, refused, failed);
  for (std::size_t g = 0; g < sorted.size() && g < 5; ++g) {
    const auto& names = *sorted[g];
    fmt::print("  {} configurations launch the same work, e.g. {}{}\n", names.size(), names.front(),
               names.size() > 1 ? fmt::format(" and {}", names.back()) : std::string());
  }
}

}  // namespace

int run_lt_space(const LtSpaceCliOptions& o) {
  check_dim("tgemm lt-space", "-m", o.m, 1);
  check_dim("tgemm lt-space", "-n", o.n, 1);
  check_dim("tgemm lt-space", "-k", o.k, 1);
  require_gpu("lt-space");
  DType in = parse_dtype(o.dtype, "--dtype");
  DeviceBuffer x(static_cast<std::size_t>(o.m * o.k) * 2), w(static_cast<std::size_t>(o.n * o.k) * 2),
      y(static_cast<std::size_t>(o.m * o.n) * 2), b(static_cast<std::size_t>(o.n) * 2);
  TensorView xv = TensorView::contiguous(x.data(), in, {o.m, o.k});
  TensorView wv = TensorView::contiguous(w.data(), in, {o.n, o.k});
  TensorView yv = TensorView::contiguous(y.data(), in, {o.m, o.n});
  TensorView bv = TensorView::contiguous(b.data(), in, {o.n});
  GemmOptions opts;
  if (o.bias) opts.bias = &bv;
  GemmProblem p = validate_a16w16(xv, wv, yv, opts).problem;
  p.device = Runtime::get().platform().current_device();
  LtSpaceStats stats;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<LtConfig> bases = enumerate_lt_bases(p, LtSpaceOptions{}, &stats);
  LtSpaceStats bstats = stats;
  std::vector<LtConfig> expanded = expand_lt_configs(p, bases, LtSpaceOptions{}, &stats);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<LtConfig> configs = bases;
  configs.insert(configs.end(), expanded.begin(), expanded.end());
  std::map<int, std::pair<int, int>> per_algo;
  for (const auto& c : bases) per_algo[c.algo].first++;
  for (const auto& c : expanded) per_algo[c.algo].second++;
  fmt::print("{}: {} algorithm ids, {} bases ({} tiles pruned), {} configurations in the whole space, "
             "{} checks ({:.2f} s)\n",
             p.describe(), stats.algo_ids, bases.size(), bstats.pruned, configs.size(), stats.checked, secs);
  for (auto [algo, count] : per_algo) fmt::print("  algo {:3d}: {} bases, {} expansions\n", algo, count.first, count.second);
  fmt::print("heuristic top 8 (in the space?):\n");
  for (const auto& s : LtSolution::heuristic_top(p, 8)) {
    LtConfig c = s->chosen_config();
    bool in_space = false;
    for (const auto& e : configs) in_space = in_space || e == c;
    fmt::print("  {} (ws {} B){}\n", s->name(), s->workspace_size(p), in_space ? "" : "  [outside enumeration]");
  }
  if (o.launches) {
    fill_uniform(x.data(), in, o.m * o.k, 1, -1.0f, 1.0f, nullptr);
    fill_uniform(w.data(), in, o.n * o.k, 2, -1.0f, 1.0f, nullptr);
    fill_uniform(b.data(), in, o.n, 3, -1.0f, 1.0f, nullptr);
    GemmArgs args;
    args.a = x.data();
    args.b = w.data();
    args.bias = o.bias ? b.data() : nullptr;
    args.out = y.data();
    print_launch_groups(p, args, configs);
  }
  return 0;
}

}  // namespace tgemm::cli
