// Launchers of the grouped GEMM kernels (gmm, tgmm, gathered grouped_gemm, masked); host-only
// declarations. Each launcher takes a validated call with a non-empty output and never
// synchronises with the host: group sizes, expert ids and masks are read on the device only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/validate.h"
#include "core/validate_grouped.h"

namespace tgemm {

namespace grouped_cutlass {
struct GroupedKernel;
struct GroupedShape;
}  // namespace grouped_cutlass

// Workspace of one gmm call: the groups' row offsets and tile offsets (2 x (G + 2) int64).
std::size_t gmm_workspace_bytes(const GmmProblem& p);

// out = gmm(...) for a validated call with M > 0 and N > 0: a scan of group_sizes on the device
// into the workspace, then the tiled kernel. Never synchronises with the host.
void launch_gmm_tiled(const GmmProblem& p, const GmmArgs& args, void* workspace, Stream stream);

// What the CUTLASS routing rule looks at in this call (src/grouped/gmm_cutlass.h, GroupedShape):
// route_gmm (src/grouped/gmm_dispatch.h) picks the instance, or the tile kernels, from it.
grouped_cutlass::GroupedShape gmm_grouped_shape(const GmmProblem& p, const GmmArgs& args);
// Workspace of launch_gmm_cutlass: the offsets, then the instance's arguments and tensor maps.
std::size_t gmm_cutlass_workspace_bytes(const GmmProblem& p, const grouped_cutlass::GroupedKernel& k, int device);
// out = gmm(...) on instance k: the offsets scan, the grouped GEMM, zeros past the groups. Never
// synchronises with the host.
void launch_gmm_cutlass(const GmmProblem& p, const GmmArgs& args, const grouped_cutlass::GroupedKernel& k,
                        void* workspace, int device, Stream stream);

// One block scans `sizes` [groups] (negative -> 0) into row_off[0..groups+1] and
// tile_off[0..groups+1] (int64, device): segment s < groups holds rows [row_off[s], row_off[s+1])
// clamped to m and tiles of 64 rows [tile_off[s], tile_off[s+1]); segment `groups` holds the rows
// past the sum, up to m. `where` names the launch in an error.
void launch_group_offsets(const std::int32_t* sizes, std::int64_t groups, std::int64_t m, std::int64_t* row_off,
                          std::int64_t* tile_off, Stream stream, const char* where);

// Workspace bytes of the tgmm launch (the groups' offsets).
std::size_t tgmm_workspace_bytes(const TgmmProblem& p);
// out[g] (+)= lhs[:, cols of g] @ rhs[rows of g], bias_grad[g] = row sums of lhs over the group's
// columns; p.persistent picks the grid (SM-count CTAs striding over the tiles, or one CTA each).
void launch_tgmm_tiled(const TgmmProblem& p, const TgmmArgs& args, void* workspace, Stream stream);

// Workspace bytes of the gathered grouped_gemm launch (histogram, offsets, permutation, and the
// fp32 [T * topk, N] products when topk_weights reduce them).
std::size_t gather_workspace_bytes(const GatherProblem& p);
void launch_gather_tiled(const GatherProblem& p, const GatherArgs& args, void* workspace, Stream stream);
// launch_gather_tiled in two halves, for calls that share one routing (fused_moe's two GEMMs):
// launch_gather_sort writes the sort of args.expert_ids into the workspace; launch_gather_presorted
// runs the tiles (and the weighted sum) over it. The sort sections lead the workspace and depend
// only on tokens, topk, experts and the ids, so a presorted call may use another problem's
// workspace (at least its own gather_workspace_bytes) sorted for the same four.
void launch_gather_sort(const GatherProblem& p, const GatherArgs& args, void* workspace, Stream stream);
void launch_gather_presorted(const GatherProblem& p, const GatherArgs& args, void* workspace, Stream stream);
// The sort launch_gather_sort leaves in `workspace`: expert e's slots are perm[row_off[e] ..
// row_off[e + 1]) (int64 row_off [E + 2], int32 perm [T * topk], slot = t * topk + j); the slots of
// ids outside [0, E) are perm[row_off[E] .. T * topk).
struct GatherSortView {
  const std::int64_t* row_off;
  const std::int32_t* perm;
};
GatherSortView gather_sort_view(const GatherProblem& p, void* workspace);

// out[g, :masked_m[g]] = x[g, :masked_m[g]] @ w[g]^T; no workspace.
void launch_masked_tiled(const MaskedProblem& p, const MaskedArgs& args, Stream stream);

}  // namespace tgemm
