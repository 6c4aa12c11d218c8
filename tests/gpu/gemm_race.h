// Many host threads, each on its own CUDA stream, calling every a16w16 entry point of the public
// API on a shared list of problems, with the first call of each shape racing between threads.
// Used by tests/gpu/test_concurrency.cpp and by the child processes of its multi-process capture
// test (tests/gpu/gemm_race_child.cpp).
//
// Per problem the inputs, c and the fp32 reference are built once and shared read-only; every
// thread owns one output buffer per problem. A round: all threads start together (spin barrier),
// each poisons and launches every problem on its stream in its own order, synchronises its stream
// once, then compares each output with the reference. Between rounds the caller may forget every
// cached dispatch decision (reload_config), so first resolutions race again.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tgemm/gemm.h"

namespace tgemm::test {

// Which entry point a problem goes through (each one of the public API's a16w16 forms).
enum class RaceForm : std::uint8_t {
  kA16W16,            // gemm_a16w16, optionally with a bias in the options
  kBias,              // gemm_bias
  kGelu,              // gemm_gelu, erf form, optional bias
  kGeluTanh,          // gemm_gelu, tanh form, optional bias
  kRelu,              // gemm_relu, optional bias
  kAlphaBeta,         // gemm_alpha_beta with a separate c
  kAlphaBetaInPlace,  // gemm_alpha_beta with c = out
  kAllOptions,        // gemm_a16w16 with bias, tanh GELU, alpha and a separate beta * c
};

struct RaceCase {
  std::int64_t m = 1, n = 1, k = 1;
  RaceForm form = RaceForm::kA16W16;
  DType in = DType::kBFloat16;
  DType out = DType::kBFloat16;
  bool bias = false;  // bias of x's dtype; kBias and kAllOptions always have one
  std::string describe() const;
};

// Every form, both input dtypes, the three output dtypes, M in 1..300 (odd values included) over
// (N, K) pairs that route to every backend: exact rows of the shipped table (skinny GEMV and
// weight-as-B, explicit cuBLASLt configurations), the skinny default regions (GEMV, weight-as-A
// at M <= 8, weight-as-B at M = 9-16), the fused CUTLASS GELU default (a full wave at M = 257-384
// on 132 SMs), the staged GELU + bias path (split) and cuBLASLt's heuristic.
std::vector<RaceCase> full_race_cases();
// A few small problems that still reach skinny, CUTLASS, split and cuBLASLt: the
// compute-sanitizer variant.
std::vector<RaceCase> small_race_cases();

struct RaceOptions {
  int threads = 8;
  int rounds = 4;
  // Before round r > 0 with r % reload_every == 0: reload_config() (no GEMM in flight), so the
  // round's first calls of every shape race again. 0: never.
  int reload_every = 2;
  // A thread calling reload_config() in a loop (a millisecond apart) while the rounds run, so
  // reloads land between a call's resolution and its launch.
  bool reload_concurrently = false;
  // Called once, after every buffer is built and before the first round starts (the child
  // processes wait there for their siblings).
  std::function<void()> before_first_round;
};

struct RaceReport {
  std::int64_t calls = 0;
  std::vector<std::string> failures;  // mismatches, exceptions and CUDA errors, one line each
  // Per case index: the kernel that served it after the last round (describe_gemm_a16w16).
  std::vector<std::string> kernels;
  // Cases per libtype after the last round.
  std::map<std::string, int> libtypes;
  int reloads = 0;  // reload_config() calls made by the concurrent reloader
};

// The order thread `thread` of `threads` visits n cases in. Threads pair up: threads t and
// t + threads / 2 visit the cases in the same order, so the first call of every shape is made by
// (at least) two threads at once; the threads / 2 orders start evenly apart, so that many different
// shapes are being resolved for the first time at once.
std::vector<std::size_t> visit_order(int thread, int threads, std::size_t n);

// Runs the rounds; never throws for a failure inside a thread (it is reported). Ends with a device
// synchronisation whose error, if any, is a failure.
RaceReport race(const std::vector<RaceCase>& cases, const RaceOptions& options);

// The multi-process capture test's cases: process `set` of `nsets` runs every case of a shared pool
// but one in nsets (so every shape's first call races in nsets - 1 processes) and two cases no
// other process has.
std::vector<RaceCase> capture_cases(int set, int nsets);

// The untuned-CSV row a case's problem is recorded as under TGEMM_TUNE_GEMM=1.
std::string untuned_row(const RaceCase& c);

}  // namespace tgemm::test
