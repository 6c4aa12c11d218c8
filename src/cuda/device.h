// Facts of the CUDA devices (name, architecture, SMs, L2), queried once per ordinal and kept for
// the life of the process: the one cache that the runtime's Platform, the backends (can_implement,
// launch shapes) and the tuner read. Host-only header (no CUDA types).
#pragma once

#include "core/platform.h"

namespace tgemm {

// The calling thread's current device. Throws tgemm::Error naming the CUDA call.
int cuda_current_device();

// Makes a context of `device` (the calling thread's current device: the caller's problem was
// resolved on it) current on this thread where none is (its primary context; a context the
// caller made current stays), checked once per thread and device. The runtime binds a thread to
// the context lazily, at its first call that needs one (a launch, an allocation); cudaGetDevice
// does not, and PyTorch's device guard makes no call where the device is already the current one.
// Host code that calls the driver API directly (CUTLASS encodes its TMA descriptors with
// cuTensorMapEncodeTiled) fails on such a thread with CUDA_ERROR_INVALID_CONTEXT. Throws
// tgemm::Error naming the CUDA call.
void cuda_bind_context(int device);

// Facts of device `ordinal`, queried on first use. Throws tgemm::Error for an ordinal outside
// [0, 64) or a device CUDA cannot query.
const DeviceInfo& cuda_device_info(int ordinal);

// As cuda_device_info, for code that must not throw (Solution::can_implement): null where that
// throws. A failed query leaves no CUDA error behind and is tried again on the next call.
const DeviceInfo* find_cuda_device_info(int ordinal) noexcept;

// SMs of device `ordinal`; -1 where it cannot be queried.
int cuda_sm_count(int ordinal) noexcept;

// Whether device `ordinal` is compute capability 9.0 exactly, the only device the sm_90a
// kernels run on (sm_90a SASS runs on no other); false where it cannot be queried.
bool is_sm90a_device(int ordinal) noexcept;

// The Platform the dispatcher reaches the machine through, over the cache above.
class CudaPlatform final : public Platform {
 public:
  int current_device() const override;
  const DeviceInfo& device_info(int ordinal) const override;
};

}  // namespace tgemm
