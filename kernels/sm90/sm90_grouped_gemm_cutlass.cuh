// CUTLASS 4.2 Hopper grouped GEMMs (pointer-array, TMA loads, WGMMA, warp-specialized, sm_90a)
// composed from CUTLASS's collective builders for gmm's groups:
//   D_g[M_g, N] = A_g[M_g, K] @ B_g   for g < G, one launch,
// A_g row-major (K-major), B_g either [N, K] row-major (K-major B, rhs [G, N, K]) or [K, N]
// row-major (N-major B, rhs [G, K, N]), D_g row-major. bf16 or fp16 inputs, fp32 accumulation,
// output of the input dtype, no source C (ElementC = void: no C loads, no C shared memory).
// The problem shapes, the per-group pointers and strides live in device memory, written by a
// kernel before the launch (src/grouped/gmm_cutlass_launch.cuh); the host passes no shapes, so
// the persistent grid is SM-count sized and the tile scheduler walks the groups on the device
// (a group of 0 rows has 0 tiles and is skipped).
//
// Preconditions (checked by the host side, src/grouped/gmm_cutlass.cpp): 16-byte aligned base
// pointers, K, N and every leading dimension multiples of 8 elements (TMA moves 16-byte
// multiples), M_g, N, K < 2^31.
//
// Test: build/release/tests/gpu/test_gpu_gmm (GmmBackends.*) and test_gpu_moe; bench:
// bench/torch_bench.py --gmm / --fmoe with TGEMM_GROUPED_BACKEND=cutlass. Instances are generated
// by tools/generate_cutlass_instances.py (GROUPED_CATALOG).
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/numeric_types.h>
#include <cute/tensor.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include "grouped/gmm_cutlass.h"
#include "kernels/sm90/sm90_gemm_cutlass.cuh"

namespace tgemm::kernels {

// One grouped kernel instance: the types of the CUTLASS grouped GEMM of a configuration
// (src/grouped/gmm_cutlass.h).
template <DType IN, bool B_K_MAJOR, int TILE_M, int TILE_N, int TILE_K, cutlass_sm90::Schedule SCHEDULE>
struct Sm90CutlassGroupedGemm {
  static constexpr bool kBKMajor = B_K_MAJOR;
  static grouped_cutlass::GroupedConfig config() { return {IN, B_K_MAJOR, TILE_M, TILE_N, TILE_K, SCHEDULE}; }

  using ElementA = typename CutlassElement<IN>::type;
  using ElementB = ElementA;
  using ElementD = ElementA;
  using ElementAccumulator = float;
  using ElementCompute = float;
  using LayoutA = cutlass::layout::RowMajor;  // lhs rows: K-major
  // rhs [G, N, K]: B (K x N) column-major (K-major); rhs [G, K, N]: B row-major (N-major). WGMMA
  // reads both from shared memory for 16-bit types.
  using LayoutB = std::conditional_t<B_K_MAJOR, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignment = 16 / sizeof(ElementA);  // elements per 16-byte TMA unit

  // Per-group problem (M, N, K); G of them in device memory.
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using TileShape = cute::Shape<cute::Int<TILE_M>, cute::Int<TILE_N>, cute::Int<TILE_K>>;  // (BLK_M,BLK_N,BLK_K)
  // Clusters of one CTA: a group's tile count is often 1-2 along M, too few to pair CTAs.
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;

  static constexpr bool kCooperative = SCHEDULE == cutlass_sm90::Schedule::kCooperative;
  using KernelSchedule = std::conditional_t<kCooperative, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative,
                                            cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong>;
  using EpilogueSchedule = std::conditional_t<kCooperative, cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
                                              cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong>;
  static_assert(!kCooperative || TILE_M % 128 == 0, "the cooperative kernel splits tile M over two warpgroups of 64");

  using FusionOperation = cutlass::epilogue::fusion::LinearCombination<ElementD, ElementCompute, void, ElementCompute>;

  // Layout pointers (LayoutX *) select the grouped forms: one stride per group, in device memory.
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementCompute, void, LayoutD*, kAlignment,
      ElementD, LayoutD*, kAlignment, EpilogueSchedule, FusionOperation>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA*, kAlignment, ElementB, LayoutB*,
      kAlignment, ElementAccumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KernelSchedule>::CollectiveOp;

  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

  // One group's strides (rows, 1, 0), as the kernel reads them from device memory.
  using StrideA = typename GemmKernel::InternalStrideA;
  using StrideB = typename GemmKernel::InternalStrideB;
  using StrideD = typename GemmKernel::InternalStrideD;
};

}  // namespace tgemm::kernels
