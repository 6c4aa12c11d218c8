// Version 7 taken apart (session 35): which of its parts keeps the M = 16 K-heavy weights over
// 1.18x of the read floor?
//
// Why: on an H200 the shipped version 7 tiles run 16x576x7168 at 1.52x of the floor, 1280x8192
// 1.31x, 1536x7168 1.34x, 4096x4096 1.19x, where a synthetic stream on the same grids with the
// same cross-CTA push and x's loads (bench/micro/splitk_sum_lab.cu) leaves ~0.5 us unexplained,
// and on 8192x1024 (no split) version 7 is ~0.8 us over that stream. The parts the synthetic
// stream lacks are the MMAs, the 8-row x 64-byte load pattern and the k-loop. Here the library's
// own kernel runs with its parts removed one at a time (the LAB bits of
// kernels/sm90/sm90_gemm_skinny_bop.cuh; the library instantiates none of them):
//   full        the kernel as shipped (checked against an fp32 reference, output NaN-poisoned);
//   nomma       no MMAs: the loaded weight and x words are xor-folded into the accumulators;
//   nox         no x loads: constant x fragments;
//   nomma+nox   the weight stream alone, in version 7's load pattern, loop and epilogue;
//   nosum       no cross-CTA sum (each rank stores its own CTA's sum): launched as the cluster
//               ("cl") and as plain CTAs ("plain");
//   stream      nomma+nox+nosum on plain CTAs: version 7's weight loads and nothing else.
// (That was the first run, V7_PARTS_RUN1=1. nomma turned out not to be a clean ablation: without
// the MMAs the compiler schedules the loads nearer their use, 56 registers instead of 74, and it
// ran slower than the full kernel.) The second run (the default):
//   mma x2      every MMA issued twice: the time it adds is what the MMAs cost;
//   x ...       x loaded with L1::no_allocate or L1::evict_last instead of __ldg, or issued
//               before the weight's loads in each batch;
//   nox+nosum   neither x nor the cross-CTA sum.
// The third run (its code is at commit b4437a7, the kernel's G and XS parameters at 2c43150,
// removed after it): CTAs of G row tiles sharing the CTA's k-range, x through L1 or staged in
// shared memory by bulk copies once a CTA. Slower on every problem.
// The fourth run (V7_PARTS_RUN4=1): the shipped tiles under each shared-memory carveout (x's L1
// reuse depends on the L1's share of the SM's 256 KB).
// The fifth run (V7_PARTS_RUN5=1): on 576x7168, CTAs of 16 or 32 warps over one or two 8-row
// blocks at split 1-4 (72-144 CTAs, few or no cross-CTA sums).
// The sixth run (V7_PARTS_RUN6=1): on 576x7168, splits that balance the grid over 132 SMs
// (11: non-portable clusters of 11), beside 8, 10, 12 and 16.
// Every line's label: tile, split, the grid's CTAs x split / resident CTAs an SM, the variant.
// (Runs 1-7's saved outputs predate that label: runs 1, 2, 4 printed no grid.)
// The seventh run (V7_PARTS_RUN7=1 [N K ...]): the M = 16 weights where cuBLASLt ships on the H200,
// version 7 with 24- and 32-row tiles (x's L1 traffic per weight byte 2 / RB) beside n16 and n8.
// The eighth run (its code and the kernel's kBopKInterleave bit are at commit 882a114, removed after
// it): the shipped tiles with the CTA's k-steps dealt to its warps round robin (a batch of the CTA
// covers W x U consecutive k-steps of each row) instead of W contiguous parts: -1% to +8%.
// The ninth run (V7_PARTS_RUN9=1, session 36): one CTA an SM of 16-32 warps on a grid of at most
// 132 CTAs (splits 3, 5, 7: clusters of any size up to 8), so that every SM holds one share and
// its warps hold the share's loads in one or two trips; beside the shipped tile.
// The tenth run (V7_PARTS_RUN10=1, session 36): the weight pre-tiled (lab bit kBopPreTiled,
// lab::pretile_kernel: each 8-row x 32-k block 512 contiguous bytes, an 8-row block's k-blocks in
// order; timeline_lab's run 3 read version 7's weight loads alone 7-13% faster in that order) against
// the row-major weight, the full kernel (checked) and without x and the sum, on the shipped tiles
// and neighbours.
// The eleventh run (V7_PARTS_RUN11=1, session 36): the row-major weight with padded rows (ldb =
// K + pad elements, a pitched copy of the same weight): whether the row pitch itself (a power of two
// at K = 1024, 4096, 8192) costs the row-major reads what the pre-tiled layout wins back.
// Results: bench/results/studies/s35/v7_parts_lab_run<N>.txt (H200); docs/perf-notes.md, skinny,
// "Session 35".
// Each on the tile and split that ship on the H200 (configs/h200/bf16_tuned_gemm.csv; 8192x1024
// ships cuBLASLt there, version 7's best tile is n16 wk4 u4 at split 1), every variant twice,
// interleaved, timed by CUDA-graph replay of 20 launches over rotation sets past L2 three times
// (lab_common.cuh, as `tgemm bench` times), beside the bench's floor kernel on the same bytes.
//
// Build (from the repository root): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a
//        -I. -Isrc -Iinclude -o scratch/lab/v7_parts_lab bench/micro/v7_parts_lab.cu
//        src/runtime/timing.cu src/runtime/cuda_check.cpp
// Run:   ./v7_parts_lab   (V7_PARTS_RUN<N>=1 for run N = 1, 4, 5, 6, 7, 9, 10, 11; none: run 2)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/micro/lab_common.cuh"
#include "kernels/sm90/sm90_gemm_skinny_bop.cuh"

namespace {

using lab::bf16;
namespace kd = tgemm::kernels::skinny_bop_detail;
constexpr int kM = 16;

// The MMA's rate alone: every warp runs kChains independent accumulator chains of
// mma.sync.m16n8k16 (bf16, fp32 accumulate) on register operands, `iters` times. The same
// instruction version 7 issues, at the machine's rate with no loads.
constexpr int kChains = 8;
__global__ void mma_rate_kernel(int iters, float* sink) {
  float c[kChains][4] = {};
  const std::uint32_t a = threadIdx.x * 0x00010001u, b = blockIdx.x * 0x00030003u;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int q = 0; q < kChains; ++q) tgemm::kernels::skinny_detail::mma_m16n8k16<bf16>(c[q], a, b, a + q, b, a, b + q);
  float s = 0.0f;
#pragma unroll
  for (int q = 0; q < kChains; ++q) s += c[q][0] + c[q][1] + c[q][2] + c[q][3];
  if (s == 1.2345f) sink[0] = s;  // keeps the MMAs; never true for these operands in practice
}

// TFLOP/s of mma_rate_kernel with `ctas_per_sm` CTAs of `warps` warps on every SM.
double mma_tflops(int sms, int ctas_per_sm, int warps) {
  float* sink;
  CK(cudaMalloc(&sink, 16));
  const int iters = 4096;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  mma_rate_kernel<<<sms * ctas_per_sm, 32 * warps>>>(iters, sink);
  CK(cudaEventRecord(e0));
  mma_rate_kernel<<<sms * ctas_per_sm, 32 * warps>>>(iters, sink);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(sink));
  const double flops = 2.0 * 16 * 8 * 16 * kChains * static_cast<double>(iters) * warps * ctas_per_sm * sms;
  return flops / (ms * 1e-3) / 1e12;
}

struct Case {
  int n, k;
  int rb, c, w, u, split;  // the tile: RB n8 blocks, C chunks, W warps, U k-steps a batch
};

using Problem = lab::Timed;

// A tile's template arguments as a type (run 10's lambda takes one).
template <int RB_, int C_, int W_, int U_>
struct Tile {
  static constexpr int rb = RB_, c = C_, w = W_, u = U_;
};

// One variant of one tile at one split, launched as the backend launches it (a (1, split, 1)
// cluster, above 8 a non-portable one; `cluster` false: plain CTAs), with LAB bits A and the
// shared-memory carveout `carveout` (-1: not set, the driver's choice). Checked against the
// reference unless A holds an ablation bit. Label: tile, split, the grid's CTAs x split /
// resident CTAs an SM, then `what`.
template <int RB, int C, int W, int U, int A = 0>
void run_variant(const Problem& p, int split, double floor_us, const char* name, int& failures, const char* what = "",
                 bool cluster = true, int carveout = -1, const std::vector<bf16*>* weights = nullptr, int ldb = 0) {
  using Shape = tgemm::kernels::SkinnyBopShape<RB, C, W, U>;
  auto* kernel = tgemm::kernels::sm90_gemm_skinny_bop<bf16, RB, C, W, U, A>;
  const int ctas = (p.n + Shape::kRows - 1) / Shape::kRows;
  const int smem = Shape::smem_bytes(split);
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(smem, Shape::kMaxSmemBytes)));
  if (split > 8) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                          carveout < 0 ? cudaSharedmemCarveoutDefault : carveout));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Shape::kThreads, smem));
  auto launch = [&](int i, cudaStream_t s) {
    auto kp = lab::skinny_params(p.x[i], weights != nullptr ? (*weights)[i] : p.w[i], p.out[i], kM, p.n, p.k);
    if (ldb > 0) kp.ldb = ldb;
    lab::launch_grid(kernel, ctas, split, cluster, Shape::kThreads, smem, s, kp);
  };
  char label[96];
  std::snprintf(label, sizeof label, "n%d c%d w%d u%d s%d %dx%d/%d %s", 8 * RB, C, W, U, split, ctas, split, per_sm, what);
  constexpr int kAblations = kd::kBopNoMma | kd::kBopNoX | kd::kBopNoSum | kd::kBopMma2;  // wrong results by design
  lab::report(p, launch, name, label, floor_us, (A & kAblations) == 0, failures);
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutDefault));
}

// Runs 1, 2 and 4 on the shipped tile of one problem.
template <int RB, int C, int W, int U>
void run_tile(const Problem& p, int split, double floor_us, const char* name, int& failures) {
  auto run = [&](auto lab_tag, bool cluster, const char* what) {
    run_variant<RB, C, W, U, decltype(lab_tag)::value>(p, split, floor_us, name, failures, what, cluster);
  };
  using kd::kBopMma2;
  using kd::kBopNoMma;
  using kd::kBopNoSum;
  using kd::kBopNoX;
  using kd::kBopXEvictLast;
  using kd::kBopXFirst;
  using kd::kBopXNoAlloc;
  if (std::getenv("V7_PARTS_RUN4") != nullptr) {  // the carveout
    for (int rep = 0; rep < 2; ++rep)
      for (int cv : {-1, 0, 25, 50, 100}) {
        const std::string what = "carveout " + std::to_string(cv);
        run_variant<RB, C, W, U>(p, split, floor_us, name, failures, what.c_str(), true, cv);
      }
    return;
  }
  const bool first_run = std::getenv("V7_PARTS_RUN1") != nullptr;  // else the second
  for (int rep = 0; rep < 2; ++rep) {
    run(std::integral_constant<int, 0>{}, true, "full");
    if (first_run) {  // session 35's first run
      run(std::integral_constant<int, kBopNoMma>{}, true, "nomma");
      run(std::integral_constant<int, kBopNoX>{}, true, "nox");
      run(std::integral_constant<int, kBopNoMma | kBopNoX>{}, true, "nomma+nox");
      if (split > 1) {
        run(std::integral_constant<int, kBopNoSum>{}, true, "nosum cl");
        run(std::integral_constant<int, kBopNoSum>{}, false, "nosum plain");
      }
      run(std::integral_constant<int, kBopNoMma | kBopNoX | kBopNoSum>{}, false, "stream");
      continue;
    }
    // The second run: the MMAs' cost (each issued twice) and x's load variants.
    run(std::integral_constant<int, kBopNoX>{}, true, "nox");
    run(std::integral_constant<int, kBopMma2>{}, true, "mma x2");
    run(std::integral_constant<int, kBopXNoAlloc>{}, true, "x L1::no_allocate");
    run(std::integral_constant<int, kBopXEvictLast>{}, true, "x L1::evict_last");
    run(std::integral_constant<int, kBopXFirst>{}, true, "x loads first");
    run(std::integral_constant<int, kBopXFirst | kBopXNoAlloc>{}, true, "x first no_allocate");
    if (split > 1) run(std::integral_constant<int, kBopNoX | kBopNoSum>{}, true, "nox+nosum cl");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const cudaDeviceProp prop = lab::device_header();
  std::printf("%-14s %-40s %8s %7s %9s\n", "problem", "variant", "us", "/floor", "err");
  const bool run7 = std::getenv("V7_PARTS_RUN7") != nullptr;
  std::vector<Case> cases = {
      {576, 7168, 2, 1, 4, 4, 8},  {1280, 8192, 1, 1, 4, 4, 4}, {1536, 7168, 1, 2, 8, 2, 2},
      {4096, 4096, 2, 1, 4, 4, 2}, {8192, 1024, 2, 1, 4, 4, 1}, {4096, 4096, 2, 1, 4, 4, 1},
  };
  if (std::getenv("V7_PARTS_RUN5") != nullptr || std::getenv("V7_PARTS_RUN6") != nullptr) cases.resize(1);  // 576x7168
  if (std::getenv("V7_PARTS_RUN9") != nullptr) cases = {cases[0], cases[1], cases[2], cases[4]};  // not 4096x4096
  if (std::getenv("V7_PARTS_RUN10") != nullptr || std::getenv("V7_PARTS_RUN11") != nullptr) cases.resize(5);  // not 4096x4096 at split 1 twice
  if (run7) {  // the M = 16 weights where cuBLASLt ships on the H200 (and 4096x4096)
    cases.clear();
    for (auto nk : lab::shapes_from_args(argc, argv, {{8192, 1024}, {8192, 3584}, {24576, 1536}, {10240, 5120}, {6144, 4096},
                                                      {4096, 4096}, {5120, 8192}, {4096, 14336}}))
      cases.push_back({nk.first, nk.second, 0, 0, 0, 0, 1});
  }
  // The MMA rate, for the MMA floor of each problem (2 x 16 x N x K flops at that rate).
  double best_tflops = 0;
  for (int warps : {4, 8, 16})
    for (int ctas : {1, 2, 4}) {
      const double r = mma_tflops(prop.multiProcessorCount, ctas, warps);
      std::printf("mma.sync m16n8k16 bf16: %d CTAs an SM x %2d warps, %d chains a warp: %7.1f TFLOP/s\n", ctas, warps, kChains, r);
      best_tflops = std::max(best_tflops, r);
    }
  int failures = 0;
  for (const Case& c : cases) {
    Problem p = lab::make_timed(prop, kM, c.n, c.k);
    const std::size_t wb = p.weight_bytes;
    const char* name = p.name.c_str();
    const double floor_us = p.floor_us;
    std::printf("%-14s %-40s %8.2f %7.3f %9s\n", name, ("floor " + p.floor_shape).c_str(), floor_us, 1.0, "-");
    const double mma_us = 2.0 * kM * c.n * c.k / (best_tflops * 1e12) * 1e6;
    std::printf("%-14s %-40s %8.2f %7.3f %9s\n", name, "mma at the best rate", mma_us, mma_us / floor_us, "-");
    if (run7) {
      // Run 7: wider row tiles (RB = 3, 4: x's L1 traffic per weight byte 2 / RB) beside the
      // library's n16 and n8 tiles, at split 1 and 2 where the grid fits.
      for (int rep = 0; rep < 2; ++rep)
        for (int split : {1, 2}) {
          if (split == 2 && c.n > 8192) continue;
          run_variant<2, 1, 4, 4>(p, split, floor_us, name, failures);
          run_variant<1, 2, 4, 2>(p, split, floor_us, name, failures);
          run_variant<3, 1, 4, 4>(p, split, floor_us, name, failures);
          run_variant<4, 1, 4, 4>(p, split, floor_us, name, failures);
          run_variant<4, 1, 4, 2>(p, split, floor_us, name, failures);
          run_variant<4, 1, 8, 2>(p, split, floor_us, name, failures);
          run_variant<4, 2, 4, 1>(p, split, floor_us, name, failures);
        }
    } else if (std::getenv("V7_PARTS_RUN11") != nullptr) {
      // Run 11: padded rows (each set's weight copied with a pitch of K + pad elements).
      for (int rep = 0; rep < 2; ++rep)
        for (int pad : {0, 8, 32, 64, 256}) {
          std::vector<bf16*> padded(p.sets);
          const std::size_t pitch = static_cast<std::size_t>(p.k + pad) * 2;
          for (int i = 0; i < p.sets; ++i) {
            CK(cudaMalloc(&padded[i], pitch * p.n));
            CK(cudaMemcpy2D(padded[i], pitch, p.w[i], static_cast<std::size_t>(p.k) * 2, static_cast<std::size_t>(p.k) * 2, p.n,
                            cudaMemcpyDeviceToDevice));
          }
          const std::string what = "ldb K+" + std::to_string(pad);
          if (c.n == 576) run_variant<2, 1, 4, 4>(p, 8, floor_us, name, failures, what.c_str(), true, -1, &padded, p.k + pad);
          else if (c.n == 1280) run_variant<1, 1, 4, 4>(p, 4, floor_us, name, failures, what.c_str(), true, -1, &padded, p.k + pad);
          else if (c.n == 1536) run_variant<1, 2, 8, 2>(p, 2, floor_us, name, failures, what.c_str(), true, -1, &padded, p.k + pad);
          else if (c.n == 4096) run_variant<2, 1, 4, 4>(p, 2, floor_us, name, failures, what.c_str(), true, -1, &padded, p.k + pad);
          else run_variant<2, 1, 4, 4>(p, 1, floor_us, name, failures, what.c_str(), true, -1, &padded, p.k + pad);
          for (bf16* w : padded) CK(cudaFree(w));
        }
    } else if (std::getenv("V7_PARTS_RUN10") != nullptr) {
      // Run 10: the pre-tiled weight (each set's copy) against the row-major one.
      std::vector<bf16*> tiled(p.sets);
      for (int i = 0; i < p.sets; ++i) {
        CK(cudaMalloc(&tiled[i], wb));
        lab::pretile_kernel<<<1024, 256>>>(p.w[i], tiled[i], p.n, p.k);
        CK(cudaGetLastError());
      }
      CK(cudaDeviceSynchronize());
      constexpr int PT = kd::kBopPreTiled, NXS = kd::kBopNoX | kd::kBopNoSum;
      auto both = [&](auto tile_tag, int split) {
        using T = decltype(tile_tag);
        run_variant<T::rb, T::c, T::w, T::u>(p, split, floor_us, name, failures, "row-major");
        run_variant<T::rb, T::c, T::w, T::u, PT>(p, split, floor_us, name, failures, "pre-tiled", true, -1, &tiled);
        if (split > 1) {
          run_variant<T::rb, T::c, T::w, T::u, NXS>(p, split, floor_us, name, failures, "row-major nox+nosum");
          run_variant<T::rb, T::c, T::w, T::u, NXS | PT>(p, split, floor_us, name, failures, "pre-tiled nox+nosum", true, -1, &tiled);
        }
      };
      for (int rep = 0; rep < 2; ++rep) {
        if (c.n == 576) {
          both(Tile<2, 1, 4, 4>{}, 8);
          both(Tile<1, 2, 8, 2>{}, 4);
          both(Tile<1, 1, 4, 4>{}, 8);
          both(Tile<2, 1, 4, 4>{}, 4);
        } else if (c.n == 1280) {
          both(Tile<1, 1, 4, 4>{}, 4);
          both(Tile<2, 1, 4, 4>{}, 4);
          both(Tile<1, 2, 8, 2>{}, 2);
        } else if (c.n == 1536) {
          both(Tile<1, 2, 8, 2>{}, 2);
          both(Tile<2, 1, 4, 4>{}, 4);
          both(Tile<1, 1, 4, 4>{}, 4);
        } else if (c.n == 4096) {
          both(Tile<2, 1, 4, 4>{}, 2);
          both(Tile<1, 2, 4, 2>{}, 2);
          both(Tile<2, 1, 4, 4>{}, 1);
        } else {
          both(Tile<2, 1, 4, 4>{}, 1);
          both(Tile<1, 2, 4, 2>{}, 1);
          both(Tile<1, 1, 8, 4>{}, 1);
        }
      }
      for (bf16* t : tiled) CK(cudaFree(t));
    } else if (std::getenv("V7_PARTS_RUN9") != nullptr) {
      // Run 9: balanced one-CTA-an-SM grids of 16-32 warps (labels give the resident CTAs an SM).
      for (int rep = 0; rep < 2; ++rep) {
        if (c.n == 576) {
          run_variant<2, 1, 4, 4>(p, 8, floor_us, name, failures, "shipped");
          run_variant<4, 1, 16, 2>(p, 7, floor_us, name, failures);   // 126 CTAs, 2 k-steps a warp
          run_variant<4, 1, 32, 1>(p, 7, floor_us, name, failures);   // 126 CTAs, 1 k-step a warp
          run_variant<4, 1, 8, 4>(p, 7, floor_us, name, failures);    // 126 CTAs, 4 k-steps a warp
          run_variant<3, 1, 16, 4>(p, 5, floor_us, name, failures);   // 120 CTAs, 2-3 k-steps a warp
          run_variant<3, 1, 16, 2>(p, 5, floor_us, name, failures);
          run_variant<2, 1, 16, 4>(p, 3, floor_us, name, failures);   // 108 CTAs, 4-5 k-steps a warp
          run_variant<2, 1, 32, 4>(p, 3, floor_us, name, failures);   // 108 CTAs, 2-3 k-steps a warp
          run_variant<4, 1, 16, 2>(p, 8, floor_us, name, failures);   // 144 CTAs: two waves at one an SM
        } else if (c.n == 8192) {
          run_variant<2, 1, 4, 4>(p, 1, floor_us, name, failures, "library's best");
          run_variant<4, 1, 16, 2>(p, 1, floor_us, name, failures);   // 256 CTAs
          run_variant<4, 1, 32, 1>(p, 1, floor_us, name, failures);
          run_variant<4, 1, 16, 4>(p, 1, floor_us, name, failures);
        } else if (c.n == 1280) {
          run_variant<1, 1, 4, 4>(p, 4, floor_us, name, failures, "shipped");
          run_variant<4, 1, 16, 4>(p, 3, floor_us, name, failures);   // 120 CTAs
          run_variant<4, 1, 32, 2>(p, 3, floor_us, name, failures);
          run_variant<2, 1, 16, 4>(p, 1, floor_us, name, failures);   // 80 CTAs, no sum
        } else if (c.n == 1536) {
          run_variant<1, 2, 8, 2>(p, 2, floor_us, name, failures, "shipped");
          run_variant<4, 1, 16, 4>(p, 2, floor_us, name, failures);   // 96 CTAs
          run_variant<4, 1, 32, 2>(p, 2, floor_us, name, failures);
          run_variant<3, 1, 16, 4>(p, 2, floor_us, name, failures);   // 128 CTAs
          run_variant<3, 1, 32, 2>(p, 2, floor_us, name, failures);
        }
      }
    } else if (std::getenv("V7_PARTS_RUN6") != nullptr) {
      // Run 6: 576x7168's grid balanced over the SMs. 36 16-row tiles split 8 are 288 CTAs: 24 SMs
      // hold 3 and 108 hold 2 (the busiest SM 1.37x the mean); split 11 gives 396 = 3 x 132
      // (72 8-row tiles: 792 = 6 x 132), as non-portable clusters of 11.
      for (int rep = 0; rep < 2; ++rep) {
        run_variant<2, 1, 4, 4>(p, 8, floor_us, name, failures);
        run_variant<2, 1, 4, 4>(p, 11, floor_us, name, failures);
        run_variant<2, 1, 4, 2>(p, 11, floor_us, name, failures);
        run_variant<2, 1, 2, 4>(p, 11, floor_us, name, failures);
        run_variant<1, 1, 4, 4>(p, 11, floor_us, name, failures);
        run_variant<1, 2, 4, 2>(p, 11, floor_us, name, failures);
        run_variant<1, 1, 4, 4>(p, 8, floor_us, name, failures);
        run_variant<2, 1, 4, 4>(p, 10, floor_us, name, failures);
        run_variant<2, 1, 4, 4>(p, 12, floor_us, name, failures);
        run_variant<2, 1, 4, 4>(p, 16, floor_us, name, failures);
      }
    } else if (std::getenv("V7_PARTS_RUN5") != nullptr) {
      // Run 5: one CTA an 8-row block (72 CTAs on 576 rows), 16 or 32 warps splitting K, no
      // cross-CTA sum; beside the shipped tile.
      for (int rep = 0; rep < 2; ++rep) {
        run_variant<2, 1, 4, 4>(p, 8, floor_us, name, failures);
        run_variant<1, 1, 16, 4>(p, 1, floor_us, name, failures);
        run_variant<1, 1, 16, 2>(p, 1, floor_us, name, failures);
        run_variant<1, 2, 16, 2>(p, 1, floor_us, name, failures);
        run_variant<1, 1, 32, 2>(p, 1, floor_us, name, failures);
        run_variant<1, 1, 32, 4>(p, 1, floor_us, name, failures);
        run_variant<1, 2, 32, 1>(p, 1, floor_us, name, failures);
        run_variant<1, 1, 16, 4>(p, 2, floor_us, name, failures);
        run_variant<2, 1, 16, 4>(p, 2, floor_us, name, failures);
        run_variant<2, 1, 16, 4>(p, 4, floor_us, name, failures);
      }
    } else if (c.rb == 2 && c.c == 1 && c.w == 4 && c.u == 4) run_tile<2, 1, 4, 4>(p, c.split, floor_us, name, failures);
    else if (c.rb == 1 && c.c == 1 && c.w == 4 && c.u == 4) run_tile<1, 1, 4, 4>(p, c.split, floor_us, name, failures);
    else if (c.rb == 1 && c.c == 2 && c.w == 8 && c.u == 2) run_tile<1, 2, 8, 2>(p, c.split, floor_us, name, failures);
    lab::free_timed(p);
  }
  std::printf("%s\n", failures ? "FAILURES (see ! above)" : "the full kernel matches the fp32 reference on every problem");
  return failures ? 1 : 0;
}
