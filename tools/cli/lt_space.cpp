// `tgemm lt-space`: how large cuBLASLt's explicit configuration space is for a problem (algorithm
// ids, checks, valid configurations per algorithm) and what its heuristic picks. A diagnostic for
// tuning the tuner.
#include <fmt/core.h>
#include <fmt/format.h>

#include <chrono>
#include <map>

#include "backends/cublaslt/cublaslt_backend.h"
#include "core/validate.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "tools/cli/common.h"
#include "tools/cli/lt_space.h"

namespace tgemm::cli {

int run_lt_space(const LtSpaceCliOptions& o) {
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
  return 0;
}

}  // namespace tgemm::cli
