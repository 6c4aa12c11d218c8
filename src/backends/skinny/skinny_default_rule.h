// The skinny backend's default rule: which skinny solution runs an untuned problem, or none (then
// cuBLASLt's default does). Each region is one measured win with its reason; within the
// weight-as-A region a streaming-time model picks the tile and split.
#pragma once

#include "backends/skinny/skinny_gemv.h"
#include "backends/skinny/skinny_mma.h"

namespace tgemm::skinny {

// The default solution for p among the build's solutions, or nullptr. An activation after the
// optional bias takes the plain problem's pick, which applies it in its stores.
SolutionPtr default_solution(const MmaSolutions& mma, const GemvSolutions& gemv, const GemmProblem& p);

// The cost model's estimate of s's time on p (microseconds) on a device of `sms` SMs.
double estimate_us(const MmaWeightASolution& s, const GemmProblem& p, int sms);

}  // namespace tgemm::skinny
