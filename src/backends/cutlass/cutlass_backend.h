// The cutlass backend (libtype "cutlass"): CUTLASS 4.2 Hopper GEMMs (TMA + WGMMA, warp-specialized
// cooperative / pingpong, persistent or stream-K tile schedulers, sm_90a) for
//   out[M,N] = act(alpha * x[M,K] @ w[N,K]^T + beta * c[M,N] + bias[N])
// with bf16/fp16 inputs, fp32 accumulation, output of the input dtype or fp32, fused epilogues.
//
// Each generated kernel instance (tools/generate_cutlass_instances.py; cutlass_kernels.h) is
// registered as several solutions that differ only in run-time arguments, named
//   cutlass:sm90_<in>_<out>out_<BLK_M>x<BLK_N>x<BLK_K>_c<CM>x<CN>_<coop|pingpong>_<persistent|
//           streamk_<sk|splitk2|splitk4|splitk8>>_<epilogue>_r<M|N>_sw<1|2|4|8>
// e.g. cutlass:sm90_bf16_bf16out_128x256x64_c2x1_coop_persistent_bias_gelu_rM_sw2, where
// <epilogue> is what the solution computes: lincomb (alpha * acc + beta * c, on lincomb
// instances), or on bias_act instances bias | gelu | bias_gelu | gelu_tanh | bias_gelu_tanh |
// relu | bias_relu (alpha and beta * c always included). A solution refuses every problem whose
// epilogue differs from its name.
//
// Default rule: none, except for the erf GELU (cuBLASLt has no erf-GELU epilogue and stages the
// product through fp32 plus a second pass): there a fused instance is the default (see
// CutlassBackend::default_solution).
#pragma once

#include <string>
#include <vector>

#include "backends/cutlass/cutlass_kernels.h"
#include "core/registry.h"

namespace tgemm {

void register_cutlass_solutions(Registry& registry);

// Every cutlass solution of this build, in registration order (tests and tools).
std::vector<SolutionPtr> cutlass_solutions();

// What a cutlass solution is made of (tests and tools).
struct CutlassSolutionInfo {
  cutlass_sm90::CutlassConfig config;  // its kernel instance
  std::string instance;                // instance_name(config)
  cutlass_sm90::CutlassRuntime runtime;
  // The epilogue it computes besides alpha and beta * c (lincomb instances: no bias, kNone).
  bool bias = false;
  Activation activation = Activation::kNone;
};
// nullptr for a solution of another backend.
const CutlassSolutionInfo* cutlass_solution_info(const Solution& s);

// Facts about an instance's loaded image on the current device (tests and docs): registers,
// shared memory, and whether it holds sm_90a code.
cutlass_sm90::CutlassKernelInfo cutlass_kernel_info(const Solution& s);

}  // namespace tgemm
