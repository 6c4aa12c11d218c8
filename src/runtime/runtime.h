// The process-wide runtime: the CUDA platform, the registry of every backend in this build, the
// dispatcher over the loaded tables, and the workspaces tgemm owns.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dispatcher.h"
#include "core/platform.h"
#include "core/registry.h"

namespace tgemm {

class CudaPlatform final : public Platform {
 public:
  int current_device() const override;
  const DeviceInfo& device_info(int ordinal) const override;

 private:
  static constexpr int kMaxDevices = 64;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<DeviceInfo> devices_[kMaxDevices];
};

// Scratch buffers per (device, stream), grown on demand and kept until release(). Buffers are
// allocated with the capture mode relaxed, so the first GEMM on a new stream may run inside
// CUDA-graph capture.
class WorkspacePool {
 public:
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

// Smallest workspace handed out: cuBLASLt's recommended size on sm90.
inline constexpr std::size_t kMinWorkspaceBytes = 32u << 20;

class Runtime {
 public:
  static Runtime& get();

  Dispatcher& dispatcher() { return *dispatcher_; }
  const Registry& registry() const { return registry_; }
  const CudaPlatform& platform() const { return platform_; }
  WorkspacePool& workspaces() { return workspaces_; }
  std::string shipped_config_dir() const;
  void set_shipped_config_dir(const std::string& dir);
  // Re-reads settings and tables; forgets cached dispatch decisions.
  void reload();

 private:
  Runtime();
  CudaPlatform platform_;
  Registry registry_;
  WorkspacePool workspaces_;
  std::string shipped_dir_override_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

// Registers every backend compiled into this build, in default-priority order.
void register_all_backends(Registry& registry);

}  // namespace tgemm
