#include "cuda/device.h"

#include <cuda.h>  // CUcontext and CUresult for cuCtxGetCurrent's signature; no link against libcuda
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "cuda/cuda_check.h"

namespace tgemm {
namespace {

constexpr int kMaxDevices = 64;

// Filled once per ordinal and never freed: the facts of a device do not change while the process
// runs, and readers keep references. Lock-free reads; the mutex only serialises first queries.
struct DeviceCache {
  std::mutex mutex;
  std::atomic<const DeviceInfo*> slots[kMaxDevices] = {};
};

DeviceCache& device_cache() {
  // Never destroyed: a query during static destruction (a workspace freed at exit) stays valid.
  static DeviceCache* cache = new DeviceCache;
  return *cache;
}

DeviceInfo query_device(int ordinal) {
  cudaDeviceProp prop{};
  TGEMM_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal), "tgemm");
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = prop.name;
  info.arch = arch_name(prop.major, prop.minor);
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  return info;
}

}  // namespace

int cuda_current_device() {
  int device = 0;
  TGEMM_CUDA_CHECK(cudaGetDevice(&device), "tgemm");
  return device;
}

namespace {

using CtxGetCurrent = CUresult (*)(CUcontext*);

// The driver's cuCtxGetCurrent through the runtime's entry-point query (no link against libcuda);
// null where the driver does not give it.
CtxGetCurrent ctx_get_current() {
  static const CtxGetCurrent fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &p, 4000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<CtxGetCurrent>(nullptr);
    }
    return reinterpret_cast<CtxGetCurrent>(p);
  }();
  return fn;
}

}  // namespace

void cuda_bind_context(int device) {
  thread_local std::uint64_t bound = 0;  // bit d: a context of device d was current on this thread
  const std::uint64_t bit = device < 64 ? std::uint64_t{1} << device : 0;
  if (bound & bit) return;
  // A context the caller made current (its own, or the primary one) stays: only a thread with
  // none gets the primary context, which cudaSetDevice initializes and makes current (CUDA 12+)
  // even where the device is already the current one.
  CUcontext current = nullptr;
  const CtxGetCurrent get = ctx_get_current();
  if (get == nullptr || get(&current) != CUDA_SUCCESS || current == nullptr) {
    TGEMM_CUDA_CHECK(cudaSetDevice(device), "tgemm");
  }
  bound |= bit;
}

const DeviceInfo& cuda_device_info(int ordinal) {
  TGEMM_CHECK(ordinal >= 0 && ordinal < kMaxDevices, "tgemm", "device ordinal must be in [0, ",
              kMaxDevices, "), got ", ordinal);
  DeviceCache& cache = device_cache();
  if (const DeviceInfo* known = cache.slots[ordinal].load(std::memory_order_acquire)) return *known;
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (const DeviceInfo* known = cache.slots[ordinal].load(std::memory_order_relaxed)) return *known;
  const DeviceInfo* info = new DeviceInfo(query_device(ordinal));
  cache.slots[ordinal].store(info, std::memory_order_release);
  return *info;
}

const DeviceInfo* find_cuda_device_info(int ordinal) noexcept {
  if (ordinal < 0 || ordinal >= kMaxDevices) return nullptr;
  try {
    return &cuda_device_info(ordinal);
  } catch (...) {
    return nullptr;
  }
}

int cuda_sm_count(int ordinal) noexcept {
  const DeviceInfo* info = find_cuda_device_info(ordinal);
  return info != nullptr ? info->sm_count : -1;
}

bool is_sm90a_device(int ordinal) noexcept {
  const DeviceInfo* info = find_cuda_device_info(ordinal);
  return info != nullptr && info->arch == "sm_90a";  // arch_name(9, 0)
}

int CudaPlatform::current_device() const { return cuda_current_device(); }

const DeviceInfo& CudaPlatform::device_info(int ordinal) const { return cuda_device_info(ordinal); }

}  // namespace tgemm
