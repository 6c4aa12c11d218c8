// The process-wide runtime: the CUDA platform, the registry of every backend in this build, the
// dispatcher over the loaded tables, and the workspaces tgemm owns.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/dispatcher.h"
#include "core/registry.h"
#include "cuda/device.h"
#include "cuda/workspace_pool.h"
#include "grouped/gmm_table.h"
#include "moe/fmoe_table.h"

namespace tgemm {

class Runtime {
 public:
  static Runtime& get();

  // The current dispatcher. A GEMM resolves on it and keeps the Resolution while it launches, so a
  // reload() on another thread must not free it: reload() retires the previous one instead (kept
  // until exit, its tables and caches typically well under 1 MB), and the swap is one atomic store.
  Dispatcher& dispatcher() { return *current_.load(std::memory_order_acquire); }
  // gmm's tables (src/grouped/gmm_table.h) of the current configuration, replaced by reload()
  // and retired like the dispatcher.
  GmmTables& gmm_tables() { return *current_gmm_.load(std::memory_order_acquire); }
  // fused_moe's tables (src/moe/fmoe_table.h), likewise.
  FmoeTables& fmoe_tables() { return *current_fmoe_.load(std::memory_order_acquire); }
  const Registry& registry() const { return registry_; }
  const CudaPlatform& platform() const { return platform_; }
  WorkspacePool& workspaces() { return workspaces_; }
  std::string shipped_config_dir() const;
  void set_shipped_config_dir(const std::string& dir);
  // Re-reads settings and tables; forgets cached dispatch decisions. Safe while other threads call
  // GEMMs: calls that started keep the dispatcher they resolved on, later calls take the new one.
  void reload();

 private:
  Runtime();
  std::string shipped_config_dir_locked() const;  // with reload_mutex_ held

  CudaPlatform platform_;
  Registry registry_;
  WorkspacePool workspaces_;
  mutable std::mutex reload_mutex_;  // reloads, shipped_dir_override_
  std::string shipped_dir_override_;
  std::vector<std::unique_ptr<Dispatcher>> dispatchers_;  // every one built; the last is current_
  std::atomic<Dispatcher*> current_{nullptr};
  std::vector<std::unique_ptr<GmmTables>> gmm_tables_;  // every one built; the last is current_gmm_
  std::atomic<GmmTables*> current_gmm_{nullptr};
  std::vector<std::unique_ptr<FmoeTables>> fmoe_tables_;  // every one built; the last is current_fmoe_
  std::atomic<FmoeTables*> current_fmoe_{nullptr};
};

// Registers every backend compiled into this build, in default-priority order.
void register_all_backends(Registry& registry);

// The public entry points after validation, for a problem with M, N and K > 0: resolve p on the
// current device (p.device is set) and run it with its workspace on `stream`.
void dispatch_gemm(GemmProblem& p, const GemmArgs& args, Stream stream);
// What dispatch_gemm runs for p (walk level, row, solution); level "empty" where M, N or K is 0.
DispatchInfo describe_dispatch(GemmProblem& p);

}  // namespace tgemm
