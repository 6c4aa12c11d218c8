// How fused_moe picks its path (runtime/api_moe.cpp), and the pieces `tgemm tune-fmoe`, `tgemm
// bench --family fmoe` and the tests use to run a call on a named path. Host-only declarations.
//
// Order: TGEMM_GROUPED_BACKEND=tile|cutlass forces a backend (level "forced"); else the row of
// fused_moe's tuned table for the call's key (src/moe/fmoe_table.h; level "table") where its
// instances are in this build, loadable on the device and can take the call (else one warning
// naming the row's file and line, and the default); else the default rule of
// src/grouped/gmm_cutlass.h over the slots, T * k rows in E groups (level "default"), and
// TGEMM_TUNE_GEMM records the key.
#pragma once

#include <string>
#include <vector>

#include "core/validate_moe.h"
#include "moe/fmoe_table.h"
#include "moe/moe_launch.h"

namespace tgemm {

struct FmoeRoute {
  MoeCutlassPlan plan;            // both null: the tile path
  const char* level = "default";  // forced | table | default
  const FmoeRow* row = nullptr;   // level "table": the row
};

// The key of a validated call on a device of `arch` and `sm_count` (fused_moe takes no quantized
// weights: quant none).
FmoeKey fused_moe_key(const MoeProblem& p, const std::string& arch, int sm_count);

// What fused_moe runs `call` on, on `device` (the current device). Throws tgemm::Error for a bad
// TGEMM_GROUPED_BACKEND.
FmoeRoute route_fused_moe(const MoeCall& call, int device);

// Whether the CUTLASS path can take the call: H and I multiples of 8 and every operand and row
// 16-byte aligned (the gather, the act and the combine move 16-byte chunks; TMA needs them too).
bool fused_moe_cutlass_can_take(const MoeProblem& p, const MoeArgs& args);

// The default rule's plan for `call` (the table and TGEMM_GROUPED_BACKEND not consulted): what a
// table row is measured against.
MoeCutlassPlan fused_moe_default_plan(const MoeCall& call, int device);

// "tile" or "cutlass": the table's `solution` of a plan.
std::string fmoe_solution_name(const MoeCutlassPlan& plan);

// Every plan that can run `call` on `device`: the tile path first, then each pair of loadable
// CUTLASS instances of the call's dtype (gate/up, down) where the CUTLASS path can take it, in
// catalog order.
std::vector<MoeCutlassPlan> fused_moe_candidates(const MoeCall& call, int device);

// Runs a validated call with T > 0 and H > 0 on `plan`, with the runtime's workspace for
// (device, stream). Never synchronises with the host.
void run_fused_moe_on(const MoeCall& call, const MoeCutlassPlan& plan, int device, Stream stream);

}  // namespace tgemm
