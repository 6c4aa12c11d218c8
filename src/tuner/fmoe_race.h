// The GPU race of `tgemm tune-fmoe` (and of the GPU test that tunes a key): every path fused_moe
// can run a call on (src/moe/fmoe_dispatch.h: the tile path, each pair of loadable CUTLASS grouped
// instances) checked against the fp32 reference of the layer (tuner/fmoe_reference.h), then timed
// against fused_moe's default rule on a uniform and a seeded skewed routing of the key
// (tuner/fmoe_tune.h), CUDA-graph replays in interleaved rounds (gmm_race's harness). A row is
// written only where a candidate beats the default by more than the tie band on both routings.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/validate_moe.h"
#include "moe/fmoe_table.h"
#include "moe/moe_launch.h"
#include "runtime/device_utils.h"
#include "tuner/fmoe_tune.h"
#include "tuner/routing_race.h"

namespace tgemm {

// A problem's device data for the race and the bench: operand sets (hidden, w1, w2, out; up to 8,
// rotated, so that the experts a routing touches exceed three L2 sizes together), the uniform and
// the skewed routing, the validated calls of each routing on each set, and the fp32 reference of
// set 0. Inputs: hidden uniform(-1, 1), w1 and w2 uniform(-3/sqrt(K), 3/sqrt(K)) for their
// reduction K (H, I), so the gate/up products and the output are of unit variance, as a model's.
class FmoeRaceData {
 public:
  static constexpr int kUniform = 0, kSkewed = 1;

  FmoeRaceData(const FmoeTuneProblem& p, std::uint64_t seed);
  ~FmoeRaceData();
  FmoeRaceData(const FmoeRaceData&) = delete;
  FmoeRaceData& operator=(const FmoeRaceData&) = delete;

  const FmoeTuneProblem& problem() const { return p_; }
  int sets() const { return static_cast<int>(sets_.size()); }
  const FmoeRouting& routing(int r) const { return routing_[r]; }
  // The local experts routing r touches, and the slots it puts on the busiest one.
  std::int64_t touched_experts(int r) const;
  std::int64_t busiest_expert_slots(int r) const;
  const MoeCall& call(int r, int set) const { return calls_[r][static_cast<std::size_t>(set)]; }
  // fused_moe through its public entry point (forced backend, table row or default).
  void run_dispatch(int r, int set, Stream stream) const;
  // The bytes a call of routing r must read at least (the touched experts' weights, hidden, out)
  // and its FLOPs (2 x slots on this rank x 3 H I).
  double bytes(int r) const;
  double flops(int r) const;
  // About how long one call of routing r takes on an H100-class GPU (for the timing plan).
  double est_us(int r) const;
  // Computes the reference of routing r on set 0; check() compares against the last computed.
  void compute_reference(int r);
  // Empty where `run` (one call on set 0 of the reference's routing) writes the reference's values
  // into set 0's out (NaN-poisoned first) within tolerance, else why not.
  std::string check(const std::function<void(Stream)>& run) const;

 private:
  struct Set;
  FmoeTuneProblem p_;
  std::vector<std::unique_ptr<Set>> sets_;
  FmoeRouting routing_[2];
  std::vector<std::int32_t> local_[2];  // each slot's local expert, -1 off this rank
  DeviceBuffer ids_[2], weights_[2], map_;
  std::vector<MoeCall> calls_[2];
  DeviceBuffer ref_, mag_;
};

// The check's tolerance of an output element: rtol |ref| + mag_coef mag + atol (mag: the
// reference's rounding scale, tuner/fmoe_reference.h).
struct FmoeTolerance {
  double rtol, mag_coef, atol;
};
FmoeTolerance fmoe_tolerance(const FmoeTuneProblem& p);

// The result's default_solution and candidates' solutions: "tile" or "cutlass up <instance> down
// <instance>".
using FmoeRaceOptions = RoutingRaceOptions;
using FmoeRaceResult = RoutingRaceResult<FmoeKey, FmoeRow>;

// "tile" or "cutlass up <instance> down <instance>" (describe_fused_moe's kernel_name).
std::string fmoe_plan_label(const MoeCutlassPlan& plan);

// Races `p` on the current device. Throws tgemm::Error where the default itself fails the check.
FmoeRaceResult race_fmoe(const FmoeTuneProblem& p, const FmoeRaceOptions& o);

}  // namespace tgemm
