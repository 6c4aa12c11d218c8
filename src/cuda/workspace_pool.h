// Scratch memory for solutions, per (device, stream): the runtime hands it to every GEMM, and a
// backend that needs workspace of its own sizes it against kMinWorkspaceBytes.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/problem.h"

namespace tgemm {

// Smallest workspace handed out: cuBLASLt's recommended size on sm90. A solution that asks for
// no more than this never makes the pool allocate after the first GEMM on a stream.
inline constexpr std::size_t kMinWorkspaceBytes = 32u << 20;

// Scratch buffers per (device, stream), grown on demand and kept until release(). Buffers are
// allocated with the capture mode relaxed, so the first GEMM on a new stream may run inside
// CUDA-graph capture.
class WorkspacePool {
 public:
  WorkspacePool() = default;
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;
  ~WorkspacePool();

  Workspace get(int device, Stream stream, std::size_t bytes);
  void release();

 private:
  struct Key {
    int device;
    Stream stream;
    bool operator==(const Key& o) const { return device == o.device && stream == o.stream; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<const void*>{}(k.stream) ^ (static_cast<std::size_t>(k.device) << 1);
    }
  };
  std::mutex mutex_;
  std::unordered_map<Key, Workspace, KeyHash> buffers_;
  std::vector<std::pair<int, void*>> retired_;  // outgrown buffers, freed in release()
};

}  // namespace tgemm
