#include "tools/cli/bench_family.h"

#include <cuda_runtime.h>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "core/settings.h"
#include "cuda/cuda_check.h"
#include "runtime/runtime.h"
#include "tools/cli/common.h"
#include "tuner/data.h"
#include "tuner/select.h"

namespace tgemm::cli {
namespace {

using json = nlohmann::json;

json time_pair(const BenchOptions& o, double est_us, std::size_t rotations,
               const std::function<void(int, Stream)>& baseline, const std::function<void(int, Stream)>& tgemm,
               std::vector<TimingStats>& both) {
  TimingOptions topt;
  topt.replays = std::max(3, o.replays / 5);
  topt.warmup_replays = 2;
  const SlotPlan plan = plan_slots(est_us, o.rounds > 0 ? o.rounds : 10);
  topt.launches_per_graph =
      o.launches > 0 ? o.launches : std::max(plan.launches_per_graph, static_cast<int>(rotations));
  const int rounds = o.rounds > 0 ? o.rounds : plan.rounds;
  std::vector<std::vector<double>> per_round;
  both = time_graphs_interleaved({baseline, tgemm}, topt, rounds, &per_round);
  return {{"baseline_us", both[0].median_us},
          {"tgemm_us", both[1].median_us},
          {"speedup", paired_ratio(per_round[0], per_round[1])},
          {"rounds", rounds},
          {"launches", topt.launches_per_graph}};
}

}  // namespace

json time_baseline_and_tgemm(const BenchOptions& o, double est_us, std::size_t rotations,
                             const std::function<void(int, Stream)>& baseline,
                             const std::function<void(int, Stream)>& tgemm, std::vector<TimingStats>& both) {
  json reading = time_pair(o, est_us, rotations, baseline, tgemm, both);
  const bool again = reading["speedup"].get<double>() < o.remeasure_below;
  if (again) {
    json first = std::move(reading);
    reading = time_pair(o, est_us, rotations, baseline, tgemm, both);
    reading["first_reading"] = std::move(first);
  }
  reading["remeasured"] = again;
  return reading;
}

FamilyBench start_family_bench() {
  require_gpu("bench");
  FamilyBench b;
  Runtime& rt = Runtime::get();
  b.device = rt.platform().current_device();
  b.dev = &rt.platform().device_info(b.device);
  b.lt = rt.registry().find("cublaslt");
  TGEMM_CHECK(b.lt != nullptr, "tgemm bench", "this build has no cublaslt backend");
  std::size_t free_b = 0, total_b = 0;
  TGEMM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), "bench");
  b.budget = std::min<std::size_t>(free_b / 3, 24ull << 30);
  b.copy_tbps = measure_copy_tbps(1ull << 30);
  warm_up_gpu(2.0);
  return b;
}

json dispatch_fields(const std::string& baseline_solution, const DispatchInfo& info, const std::string& check,
                     std::size_t rotations, double floor_us, double bytes, double flops, double t_us) {
  return {{"baseline", "cublaslt_default"},
          {"baseline_solution", baseline_solution},
          {"solution", info.kernel_name},
          {"level", info.level},
          {"check", check},
          {"rotations", rotations},
          {"floor_us", floor_us},
          {"tbps", bytes / (t_us * 1e-6) / 1e12},
          {"tflops", flops / (t_us * 1e-6) / 1e12}};
}

void finish_family_bench(const BenchOptions& o, const DeviceInfo& dev, double copy_tbps, const std::string& stem,
                         const json& rows, int wrong, const std::string& baseline) {
  double log_sum = 0, min_speedup = 1e30;
  for (const json& r : rows) {
    log_sum += std::log(r["speedup"].get<double>());
    min_speedup = std::min(min_speedup, r["speedup"].get<double>());
  }
  const int count = static_cast<int>(rows.size());
  const double geomean = count ? std::exp(log_sum / count) : 0;
  if (count == 0) min_speedup = 0;
  fmt::print("\n{} problems: geomean speedup {:.3f}x over {}, min {:.3f}x, {} failed the check\n", count, geomean,
             baseline, min_speedup, wrong);
  if (o.json == "-") return;
  const std::string path = o.json.empty() ? "bench/results/" + stem + "-" + card_slug(dev.name) + ".json" : o.json;
  json doc = {
      {"command", o.command},
      {"device", dev.name},
      {"sm_count", dev.sm_count},
      {"commit", current_commit()},
      {"date", iso_date()},
      {"copy_tbps", copy_tbps},
      {"suite", o.suite},
      {"rows", rows},
      {"summary",
       {{"problems", count}, {"geomean_speedup", geomean}, {"min_speedup", min_speedup}, {"check_failures", wrong}}}};
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream(path) << doc.dump(2) << "\n";
  fmt::print("wrote {}\n", path);
}

}  // namespace tgemm::cli
