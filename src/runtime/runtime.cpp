#include "runtime/runtime.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/lookup.h"
#include "core/settings.h"
#include "runtime/device_utils.h"
#include "tgemm/config.h"

#ifndef TGEMM_SOURCE_CONFIG_DIR
#define TGEMM_SOURCE_CONFIG_DIR ""
#endif

namespace tgemm {
namespace {

bool is_dir(const std::string& path) {
  struct stat st{};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// <dir of libtgemm>/../share/tgemm/configs, for relocated installs.
std::string config_dir_next_to_library() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&config_dir_next_to_library), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  std::string lib(info.dli_fname);
  auto slash = lib.rfind('/');
  if (slash == std::string::npos) return "";
  return lib.substr(0, slash) + "/../share/tgemm/configs";
}

}  // namespace

Runtime& Runtime::get() {
  static Runtime runtime;
  return runtime;
}

Runtime::Runtime() {
  register_all_backends(registry_);
  reload();
}

std::string Runtime::shipped_config_dir() const {
  std::lock_guard<std::mutex> lock(reload_mutex_);
  return shipped_config_dir_locked();
}

std::string Runtime::shipped_config_dir_locked() const {
  if (auto dir = Settings::config_dir_from_env(Settings::process_env())) return *dir;
  if (!shipped_dir_override_.empty()) return shipped_dir_override_;
  // Beside the library first (an installed or moved package), then the source tree (a build tree).
  for (const std::string& dir : {config_dir_next_to_library(), std::string(TGEMM_SOURCE_CONFIG_DIR)}) {
    if (is_dir(dir)) return dir;
  }
  return "";
}

void Runtime::set_shipped_config_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(reload_mutex_);
  shipped_dir_override_ = dir;
}

void Runtime::reload() {
  std::lock_guard<std::mutex> lock(reload_mutex_);
  reset_warned_once();
  Settings settings = Settings::from_env(shipped_config_dir_locked(), Settings::process_env());
  gmm_tables_.push_back(std::make_unique<GmmTables>(settings.gmm, settings.capture, settings.log_tuned_config));
  current_gmm_.store(gmm_tables_.back().get(), std::memory_order_release);
  fmoe_tables_.push_back(std::make_unique<FmoeTables>(settings.fmoe, settings.capture, settings.log_tuned_config));
  current_fmoe_.store(fmoe_tables_.back().get(), std::memory_order_release);
  dispatchers_.push_back(std::make_unique<Dispatcher>(registry_, platform_, std::move(settings)));
  current_.store(dispatchers_.back().get(), std::memory_order_release);
}

// Public configuration API (tgemm/config.h).
void reload_config() { Runtime::get().reload(); }
std::string shipped_config_dir() { return Runtime::get().shipped_config_dir(); }
void set_shipped_config_dir(const std::string& dir) {
  Runtime::get().set_shipped_config_dir(dir);
  Runtime::get().reload();
}
std::vector<std::string> a16w16_table_files() {
  Runtime& rt = Runtime::get();
  if (!cuda_device_available()) return rt.dispatcher().settings().a16w16.table_files;  // no device, so no card table
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  return rt.dispatcher().table_files_for(OpFamily::kA16W16, dev);
}
void release_workspaces() { Runtime::get().workspaces().release(); }

void dispatch_gemm(GemmProblem& p, const GemmArgs& args, Stream stream) {
  Runtime& rt = Runtime::get();
  p.device = rt.platform().current_device();
  const Resolution& r = rt.dispatcher().resolve(p);
  Workspace ws = rt.workspaces().get(p.device, stream, r.solution->workspace_size(p));
  r.solution->run(p, args, ws, stream);
}

DispatchInfo describe_dispatch(GemmProblem& p) {
  DispatchInfo info;
  if (p.m == 0 || p.n == 0 || p.k == 0) {
    info.level = "empty";
    info.libtype = "none";
    info.kernel_name = p.k == 0 ? "broadcast_bias" : "none";
    return info;
  }
  Runtime& rt = Runtime::get();
  p.device = rt.platform().current_device();
  const Resolution& r = rt.dispatcher().resolve(p);
  info.level = std::string(walk_level_name(r.level));
  info.matched_m = r.matched_m;
  info.file = r.file;
  info.line = r.line;
  info.libtype = std::string(r.solution->libtype());
  info.kernel_name = r.solution->name();
  return info;
}

}  // namespace tgemm
