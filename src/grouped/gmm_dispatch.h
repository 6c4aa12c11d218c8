// How gmm picks its solution (runtime/api_gmm.cpp), and the pieces `tgemm tune-gmm`, `tgemm bench
// --family gmm` and the tests use to run a call on a named solution. Host-only declarations.
//
// Order: TGEMM_GROUPED_BACKEND=tile|cutlass forces a backend (level "forced"); else the row of
// gmm's tuned table for the call's key (src/grouped/gmm_table.h; level "table") where its
// solution is in this build, loadable on the device and can take the call (else one warning
// naming the row's file and line, and the default); else the default rule of
// src/grouped/gmm_cutlass.h (level "default"), and TGEMM_TUNE_GEMM records the key.
#pragma once

#include <string>
#include <vector>

#include "core/validate.h"
#include "grouped/gmm_table.h"

namespace tgemm {

namespace grouped_cutlass {
struct GroupedKernel;
}

struct GmmRoute {
  const grouped_cutlass::GroupedKernel* kernel = nullptr;  // null: the WMMA tile kernels
  const char* level = "default";                           // forced | table | default
  const GmmRow* row = nullptr;                             // level "table": the row
};

// What gmm runs `call` on, on `device` (the current device). Throws tgemm::Error for a bad
// TGEMM_GROUPED_BACKEND.
GmmRoute route_gmm(const GmmCall& call, int device);

// "tile" or the CUTLASS instance's name: the table's `solution` of a kernel (null: tile).
std::string gmm_solution_name(const grouped_cutlass::GroupedKernel* kernel);

// The default rule's choice for `call` (the table and TGEMM_GROUPED_BACKEND not consulted): what
// a table row is measured against.
const grouped_cutlass::GroupedKernel* gmm_default_kernel(const GmmCall& call, int device);

// Every solution that can run `call` on `device`: the tile kernels (null) first, then each
// loadable CUTLASS instance of the call's dtype and rhs layout that can take it, in catalog order.
std::vector<const grouped_cutlass::GroupedKernel*> gmm_candidates(const GmmCall& call, int device);

// Runs a validated call with M > 0 and N > 0 on `kernel` (null: the tile kernels), with the
// runtime's workspace for (device, stream). Never synchronises with the host.
void run_gmm_on(const GmmCall& call, const grouped_cutlass::GroupedKernel* kernel, int device, Stream stream);

}  // namespace tgemm
