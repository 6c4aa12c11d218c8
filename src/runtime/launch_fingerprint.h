// What a host call enqueues, as a byte string that is equal for two calls exactly when they
// enqueue the same work: the tuner races configurations that launch identical kernels once
// (cuBLASLt's configuration space names many launches several times: custom options and other
// attributes that a given kernel ignores).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "tgemm/tensor.h"

namespace tgemm {

// Captures enqueue(stream) into a CUDA graph on a private stream (thread-local capture; nothing
// runs) and serialises the graph: per node in creation order, its type and, for a kernel, the
// function, grid, block, dynamic shared memory, cluster shape, cluster scheduling policy,
// priority and the bytes of every argument; for a memset, its destination, value, element
// size, width, height and pitch; then the edges (with their types). Two calls whose strings
// are equal launch the same kernels with the same arguments in the same order.
//
// nullopt when that cannot be established: enqueue throws or is not capturable (it
// synchronises, allocates, ...), the graph holds another kind of node, or the driver lacks an
// entry point used here. Never throws for those; no CUDA error is left behind. The caller treats
// nullopt as "unlike every other call".
//
// enqueue must be deterministic in what it enqueues for the same inputs (the same pointers,
// shapes and configuration); warm it up first where its first call loads modules lazily.
std::optional<std::string> launch_fingerprint(const std::function<void(Stream)>& enqueue);

}  // namespace tgemm
