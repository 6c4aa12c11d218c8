// The GPU race of `tgemm tune-gmm` (and of the GPU test that tunes a key): every solution gmm can
// run a problem on (the tile kernels, each loadable CUTLASS grouped instance of its dtype and rhs
// layout) checked against an fp32 reference, then timed against gmm's default rule on a uniform
// and a seeded skewed routing of the key (src/tuner/gmm_tune.h), CUDA-graph replays in
// interleaved rounds. A row is written only where a candidate beats the default by more than the
// tie band on both routings.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/validate.h"
#include "grouped/gmm_table.h"
#include "runtime/device_utils.h"
#include "tuner/gmm_tune.h"
#include "tuner/routing_race.h"

namespace tgemm {

namespace grouped_cutlass {
struct GroupedKernel;
}

// A problem's device data for the race and the bench: operand sets (lhs, rhs, bias, out; up to 8,
// rotated, so that together they exceed three L2 sizes), the uniform and skewed routings' group
// sizes, the validated calls of each routing on each set, and an fp32 reference of set 0.
class GmmRaceData {
 public:
  static constexpr int kUniform = 0, kSkewed = 1;

  // On the current device; inputs uniform(-1, 1) from `seed`.
  GmmRaceData(const GmmTuneProblem& p, std::uint64_t seed);
  ~GmmRaceData();
  GmmRaceData(const GmmRaceData&) = delete;
  GmmRaceData& operator=(const GmmRaceData&) = delete;

  const GmmTuneProblem& problem() const { return p_; }
  int sets() const { return static_cast<int>(sets_.size()); }
  const std::vector<std::int32_t>& routing(int r) const { return routing_[r]; }
  const GmmCall& call(int r, int set) const { return calls_[r][static_cast<std::size_t>(set)]; }
  // gmm through its public entry point (the dispatch: forced backend, table row or default).
  void run_dispatch(int r, int set, Stream stream) const;
  // About how long one call takes on an H100-class GPU (for the timing plan), and one set's bytes.
  double est_us() const;
  std::size_t set_bytes() const;
  // Computes the fp32 reference of routing r on set 0 (the reference GEMM per group); check()
  // compares against the last one computed.
  void compute_reference(int r);
  // Empty where `run` (one call on set 0 of the reference's routing, on the given stream) writes
  // the reference's values into set 0's out (NaN-poisoned first), else why not.
  std::string check(const std::function<void(Stream)>& run) const;

 private:
  struct Set;
  GmmTuneProblem p_;
  std::vector<std::unique_ptr<Set>> sets_;
  std::vector<std::int32_t> routing_[2];
  DeviceBuffer sizes_[2];
  std::vector<GmmCall> calls_[2];
  DeviceBuffer ref_;
};

using GmmRaceOptions = RoutingRaceOptions;
using GmmRaceResult = RoutingRaceResult<GmmKey, GmmRow>;

// The harness of the two-routing races (race_gmm, race_fmoe), over their candidates (index i) and
// routings (r: kUniform, kSkewed).
//
// Checks: on each routing, `reference(r)` computes its reference, then `check(i, r)` says why
// candidate i does not reproduce it (empty: it does); a candidate that fails stays dropped, its
// error kept. Throws tgemm::Error naming `op` and `name` where the default (`what`: "solution",
// "path") fails.
void check_routing_candidates(std::vector<GmmCandidateTiming>& candidates, int default_index, const char* op,
                              const std::string& name, const char* what, const std::function<void(int)>& reference,
                              const std::function<std::string(std::size_t, int)>& check);
// Times the candidates without error on each routing, CUDA-graph replays of `sets` rotated operand
// sets in interleaved rounds (plan_slots of `est_us(r)`, one call's expected time): each one's
// median and paired speedup over the default's. `launch(i, r, j, s)` runs candidate i on routing
// r's set j % sets.
void time_routing_candidates(std::vector<GmmCandidateTiming>& candidates, int default_index,
                             const RoutingRaceOptions& o, int sets, const std::function<double(int)>& est_us,
                             const std::function<void(std::size_t, int, int, Stream)>& launch);

// Races `p` on the current device. Throws tgemm::Error where the default itself fails the check
// or nothing can run the problem.
GmmRaceResult race_gmm(const GmmTuneProblem& p, const GmmRaceOptions& o);

}  // namespace tgemm
