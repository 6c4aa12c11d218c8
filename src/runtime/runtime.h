// The process-wide runtime: the CUDA platform, the registry of every backend in this build, the
// dispatcher over the loaded tables, and the workspaces tgemm owns.
#pragma once

#include <memory>
#include <string>

#include "core/dispatcher.h"
#include "core/registry.h"
#include "cuda/device.h"
#include "cuda/workspace_pool.h"

namespace tgemm {

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
