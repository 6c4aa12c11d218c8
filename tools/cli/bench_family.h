// What the per-family benches (bench_a8w8.cpp, bench_batched.cpp) share: the baseline and tgemm
// timed in interleaved rounds of CUDA-graph replays (a second reading below --remeasure-below),
// the suite summary, and the results file.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/platform.h"
#include "core/solution.h"
#include "runtime/timing.h"
#include "tgemm/gemm.h"
#include "tgemm/tensor.h"
#include "tools/cli/bench.h"

namespace tgemm::cli {

// What a family's bench runs with: the current device, the cublaslt backend (the baseline), a
// memory budget for the rotated operands (a third of the free memory, at most 24 GiB) and the
// device copy rate (the floors), taken after the GPU check, before a GPU warm-up.
struct FamilyBench {
  int device = 0;
  const DeviceInfo* dev = nullptr;
  const Backend* lt = nullptr;
  std::size_t budget = 0;
  double copy_tbps = 0;
};
FamilyBench start_family_bench();

// One problem's timing fields (baseline_us, tgemm_us, speedup, rounds, launches; first_reading
// and remeasured = true where the first reading was below o.remeasure_below). `baseline` and
// `tgemm` launch rotation i % rotations; est_us sizes the graphs. both: the counted reading's stats.
nlohmann::json time_baseline_and_tgemm(const BenchOptions& o, double est_us, std::size_t rotations,
                                       const std::function<void(int, Stream)>& baseline,
                                       const std::function<void(int, Stream)>& tgemm, std::vector<TimingStats>& both);

// The fields after a row's problem: baseline "cublaslt_default" and its solution, the dispatch's
// solution and walk level, the check, the rotations, the floor, and the rates at tgemm's time.
nlohmann::json dispatch_fields(const std::string& baseline_solution, const DispatchInfo& info, const std::string& check,
                               std::size_t rotations, double floor_us, double bytes, double flops, double t_us);

// The geomean and minimum of the rows' speedups (over `baseline`, as the summary line names it)
// and the count of failed checks, printed and, unless o.json is "-", written with the rows to
// o.json or bench/results/<stem>-<card>.json.
void finish_family_bench(const BenchOptions& o, const DeviceInfo& dev, double copy_tbps, const std::string& stem,
                         const nlohmann::json& rows, int wrong, const std::string& baseline = "cuBLASLt default");

}  // namespace tgemm::cli
