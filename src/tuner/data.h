// A race's operands: sets rotated past L2, placements of them behind pads, the fp32 reference and
// the correctness check of a candidate against it. Internal to the tuner module (needs CUDA).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/solution.h"
#include "runtime/device_utils.h"
#include "tgemm/error.h"
#include "tuner/options.h"
#include "tuner/select.h"

namespace tgemm {

struct DeviceInfo;

struct Operands {
  DeviceBuffer buf;  // [x | w | bias | c | x_scale | w_scale] of one rotation (scales: a8w8)
  DeviceBuffer out;
  GemmArgs args;
};

// One placement of a problem's operands.
struct RaceData {
  DeviceBuffer pad;  // allocated first: shifts this placement's operands (confirmation placements)
  std::vector<Operands> sets;
  DeviceBuffer ref;  // fp32 [M, N] reference of set 0 (not made for extra placements)
  // Added to both checks' atol: fp8_accumulation_atol of set 0 (FP8 a8w8; 0 for any other problem).
  double fp8_atol = 0;
};

// Device bytes of one placement of p's operands (all its rotation sets).
std::size_t data_bytes(const GemmProblem& p, const DataOptions& o, const DeviceInfo& dev);

// a16w16 operands are uniform in [-1, 1); a8w8 operands are random 8-bit codes (any int8; FP8 e4m3
// codes of magnitude below 2, never NaN) with fp32 scales uniform in [0.5, 1.5) / 127 (int8) or / 2
// (FP8), as tests/gpu/test_gemm_a8w8.cpp draws them: dequantized values below 1.5 in magnitude.
// Blockscale: the same FP8 codes and scales, one scale per block.
// pad_bytes > 0: a buffer of that size is allocated before the operands and kept with them, so
// a second placement of the same problem lands elsewhere in memory (no reference is computed).
RaceData make_data(const GemmProblem& p, const DataOptions& o, const DeviceInfo& dev, std::size_t pad_bytes = 0);

// Placements 1 .. wanted-1 of p's operands (placement 0 is the caller's), each behind a pad of
// distinct size, all alive together so that each lands elsewhere in memory; as many as
// o.memory_budget holds next to the caller's.
std::vector<RaceData> more_placements(const GemmProblem& p, const DataOptions& o, const DeviceInfo& dev, int wanted);

// A launcher for the timing helpers (time_graph, time_graphs_interleaved): solution `sol` on
// rotation i of placement `data`'s operand sets.
std::function<void(int, Stream)> rotating_launch(const GemmProblem& p, const RaceData& data, const Solution& sol,
                                                 const Workspace& ws);

// Synchronises and throws a tgemm::Error naming `candidate` if it failed; a sticky error (the
// context is poisoned) says so (is_sticky_error).
void check_context(const std::string& candidate);

// A sticky CUDA error (check_context names it so): the context is poisoned, so a caller that
// handles other errors per candidate or per row must rethrow this one.
bool is_sticky_error(const Error& e);

// A candidate that threw: its error is recorded and the race goes on, unless the error is sticky:
// then the exception being handled is rethrown. Call only from a handler.
void record_failure(CandidateResult& r, const Error& e);

// AITER's tuner tolerance: rtol = atol = 5e-2 for bf16 output, 1e-2 otherwise.
double tuner_tolerance(DType out_type);
// The library's strict tolerance for p against the fp32 reference (gemm_tolerance; a8w8: its atol
// times 1.5^2 for the operand bound, plus fp8_atol), as tests/gpu/test_gemm_a8w8.cpp argues it.
Tolerance strict_tolerance(const GemmProblem& p, double fp8_atol);

// The check of one candidate on the placement's first operand set: NaN-poisoned output, AITER's
// err_ratio at the tuner tolerance (non-finite or huge errors count as 1.0; FP8 adds fp8_atol) and
// the library's strict tolerance; sets r.err_ratio and r.strict_ok.
void check_solution(const GemmProblem& p, const RaceData& data, const Solution& sol, const Workspace& ws,
                    CandidateResult& r);

// Runs dense GEMMs for about `seconds` so clocks and power reach their sustained state before
// anything is timed (a cold GPU boosts higher for the first measurements, an idle one reads 345 MHz).
void warm_up_gpu(double seconds);

}  // namespace tgemm
