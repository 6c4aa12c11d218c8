// The CUTLASS path of the FP8 block-scaled grouped GEMMs (include/tgemm/grouped_fp8.h): CUTLASS
// 4.2's sm_90a pointer-array FP8 blockwise-scaled grouped GEMM (src/grouped/fp8_cutlass_sm90.cu,
// one instance), which rule takes a call, and its host entry points. Host-only header.
//
// The kernel builds each group's scale tensors from the group's own shape: x_scale compact and
// MN-major per group (row m of block b at b * M_g + m), w_scale MN-major per group (block (n, b)
// at b * ceil(N / 128) + n). Neither op's layout is that (one x_scale stride for every group,
// w_scale K-major), so a prepare kernel repacks both into the workspace on every call, on the
// device, beside the per-group shapes, pointers and strides: no group size reaches the host.
//
// Contiguous layout: CUTLASS needs each group's rows adjacent. A segments kernel finds, on the
// device, each group's run of rows in m_indices; when some group has more than one run (rows
// interleaved or split), a device flag says "unsorted": every CUTLASS group then gets 0 rows (its
// persistent CTAs find no tile and exit) and the tile kernel, launched after it with the flag,
// computes the call; when sorted the tile kernel's CTAs read the flag and exit. Both are always
// launched, so a captured graph follows indices that change between replays, sorted or not.
// DeepGEMM's layout (each group's rows one segment, -1 padding rows between) is sorted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/settings.h"
#include "core/validate_grouped_fp8.h"
#include "tgemm/tensor.h"

namespace tgemm::fp8_cutlass {

// The instance's tile (BLK_M, BLK_N, BLK_K): BLK_K is the 128-wide scale block along K.
inline constexpr int kTileM = 128, kTileN = 128, kTileK = 128;
// "sm90_grouped_fp8_blockwise_128x128x128_c1x2_coop": the instance's name.
const char* instance_name();

// Whether the CUTLASS kernel can take a validated call with rows > 0 and n > 0: K a positive
// multiple of 128 (whole scale blocks, as DeepGEMM requires) of at most 65535 blocks, N a multiple
// of 8 (16-byte bf16 output rows for TMA), x, w and out 16-byte aligned with their row and group
// strides multiples of 16 bytes, at least one group, every extent below 2^31 (CUTLASS shapes are
// int32). The scale layouts do not matter: both are repacked.
bool can_take(const Fp8GroupedProblem& p, const Fp8GroupedArgs& a);

// The rule: kCutlass: the CUTLASS kernel wherever it can take the call and is built and loadable
// on the device (`available`), the tile kernel elsewhere; kAuto and kTile: the tile kernel. The
// default stays on the tile kernel until the CUTLASS path has been checked and timed on a GPU
// (docs/performance.md, "FP8 block-scaled grouped GEMMs").
bool choose_cutlass(bool can_take, bool available, GroupedBackend backend);

// Whether the op runs `call` (validated, rows > 0, n > 0) on the CUTLASS kernel on `device` (the
// current device) under the runtime's TGEMM_GROUPED_BACKEND (Settings::grouped_backend, read at
// reload_config): false where the build has no instance (src/runtime/api_grouped_fp8.cpp).
bool uses_cutlass(const Fp8GroupedCall& call, int device);

// Device side (src/grouped/fp8_cutlass_sm90.cu, built where the build has an sm_90a target:
// TGEMM_HAVE_FP8_GROUPED_CUTLASS).
//
// Whether the instance runs on `device`: an sm_90a image and the shared memory it needs granted
// (cached per device).
bool loadable(int device) noexcept;
// Workspace bytes of a call on a device with `sm_count` SMs.
std::size_t workspace_bytes(const Fp8GroupedProblem& p, int sm_count);
// Launches the call on `stream`, never synchronising: contiguous: a memset, the segments kernel,
// the prepare kernel, the CUTLASS kernel and the tile kernel behind the flag; masked: the prepare
// kernel and the CUTLASS kernel. Preconditions: can_take(p, a), loadable(device), `workspace`
// of workspace_bytes(p, sm_count) bytes, 256-byte aligned. Throws tgemm::Error naming `where`.
void launch(const Fp8GroupedProblem& p, const Fp8GroupedArgs& a, void* workspace, int device, int sm_count,
            Stream stream, const char* where);

}  // namespace tgemm::fp8_cutlass
