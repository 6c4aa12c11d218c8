// What the core needs to know about the machine. The CUDA runtime provides the real one
// (src/runtime); host tests provide a fake, so the core never includes a CUDA header.
#pragma once

#include <cstddef>
#include <string>

namespace tgemm {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;      // "NVIDIA H200"
  std::string arch;      // "sm_90a" for compute capability 9.0, else "sm_<major><minor>"
  int sm_count = 0;
  std::size_t l2_bytes = 0;
};

std::string arch_name(int cc_major, int cc_minor);

class Platform {
 public:
  virtual ~Platform() = default;
  virtual int current_device() const = 0;
  // Cached per ordinal by implementations; cheap to call.
  virtual const DeviceInfo& device_info(int ordinal) const = 0;
};

}  // namespace tgemm
