#include "cuda/workspace_pool.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/cuda_check.h"

namespace tgemm {

WorkspacePool::~WorkspacePool() {
  // Freed at process exit only if the driver is still up; errors there are ignored on purpose.
  for (auto& [key, ws] : buffers_) cudaFree(ws.data);
  for (auto& [dev, p] : retired_) cudaFree(p);
  cudaGetLastError();
}

Workspace WorkspacePool::get(int device, Stream stream, std::size_t bytes) {
  if (bytes == 0) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  Key key{device, stream};
  auto it = buffers_.find(key);
  if (it != buffers_.end() && it->second.bytes >= bytes) return it->second;
  std::size_t size = std::max(bytes, kMinWorkspaceBytes);
  // cudaMalloc is not captured; relaxing the mode lets it run while this thread captures.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  cudaThreadExchangeStreamCaptureMode(&mode);
  TGEMM_CUDA_CHECK(err, "tgemm workspace");
  if (it != buffers_.end()) {
    // Work already queued on this stream may still use the old buffer: retire it, don't free.
    retired_.emplace_back(device, it->second.data);
    it->second = Workspace{p, size};
    return it->second;
  }
  return buffers_.emplace(key, Workspace{p, size}).first->second;
}

void WorkspacePool::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, ws] : buffers_) TGEMM_CUDA_CHECK(cudaFree(ws.data), "release_workspaces");
  for (auto& [dev, p] : retired_) TGEMM_CUDA_CHECK(cudaFree(p), "release_workspaces");
  buffers_.clear();
  retired_.clear();
}

}  // namespace tgemm
