#include "runtime/runtime.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

#include "core/log.h"
#include "core/settings.h"
#include "runtime/cuda_check.h"
#include "runtime/device_utils.h"
#include "tgemm/config.h"

#ifndef TGEMM_INSTALL_CONFIG_DIR
#define TGEMM_INSTALL_CONFIG_DIR ""
#endif
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

int CudaPlatform::current_device() const {
  int device = 0;
  TGEMM_CUDA_CHECK(cudaGetDevice(&device), "tgemm");
  return device;
}

const DeviceInfo& CudaPlatform::device_info(int ordinal) const {
  TGEMM_CHECK(ordinal >= 0 && ordinal < kMaxDevices, "tgemm", "device ordinal must be in [0, ",
              kMaxDevices, "), got ", ordinal);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!devices_[ordinal]) {
    cudaDeviceProp prop{};
    TGEMM_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal), "tgemm");
    auto info = std::make_unique<DeviceInfo>();
    info->ordinal = ordinal;
    info->name = prop.name;
    info->arch = arch_name(prop.major, prop.minor);
    info->sm_count = prop.multiProcessorCount;
    info->l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
    devices_[ordinal] = std::move(info);
  }
  return *devices_[ordinal];
}

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

Runtime& Runtime::get() {
  static Runtime runtime;
  return runtime;
}

Runtime::Runtime() {
  register_all_backends(registry_);
  reload();
}

std::string Runtime::shipped_config_dir() const {
  if (const char* env = std::getenv("TGEMM_CONFIG_DIR"); env != nullptr && *env != '\0') return env;
  if (!shipped_dir_override_.empty()) return shipped_dir_override_;
  for (const std::string& dir :
       {std::string(TGEMM_INSTALL_CONFIG_DIR), config_dir_next_to_library(),
        std::string(TGEMM_SOURCE_CONFIG_DIR)}) {
    if (is_dir(dir)) return dir;
  }
  return "";
}

void Runtime::set_shipped_config_dir(const std::string& dir) { shipped_dir_override_ = dir; }

void Runtime::reload() {
  reset_warned_once();
  Settings settings = Settings::from_env(shipped_config_dir(), [](const char* name) {
    return static_cast<const char*>(std::getenv(name));
  });
  dispatcher_ = std::make_unique<Dispatcher>(registry_, platform_, std::move(settings));
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
  if (!cuda_device_available()) return rt.dispatcher().settings().a16w16.table_files;  // no card, no overlay
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  return rt.dispatcher().table_files_for(OpFamily::kA16W16, dev);
}
void release_workspaces() { Runtime::get().workspaces().release(); }

}  // namespace tgemm
