// Plain C++17 view of a strided tensor: what every public tgemm entry point takes.
// No CUDA or torch types: a pointer, a dtype, sizes and strides (in elements).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

struct CUstream_st;

namespace tgemm {

using Stream = CUstream_st*;

enum class DType : std::uint8_t {
  kBFloat16,
  kFloat16,
  kFloat32,
  kFloat8E4M3,
  kFloat8E5M2,
  kInt8,
  kInt32,
  kUInt8,  // raw bytes: packed FP4 codes and E8M0 scales (include/tgemm/fp4.h)
};

// Bytes per element.
std::size_t dtype_size(DType t);
// Name as torch writes it ("torch.bfloat16"); the tables use these names.
std::string_view dtype_name(DType t);
// Short name for messages and kernel names ("bf16").
std::string_view dtype_short_name(DType t);
// Accepts the torch name, the short name, or the name without "torch.".
std::optional<DType> dtype_from_name(std::string_view name);

inline constexpr int kMaxRank = 6;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kBFloat16;
  int rank = 0;
  std::int64_t sizes[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};

  // Dimension d, negative counting from the back as in torch. Unchecked.
  std::int64_t size(int d) const { return sizes[d < 0 ? d + rank : d]; }
  std::int64_t stride(int d) const { return strides[d < 0 ? d + rank : d]; }
  std::int64_t numel() const;

  // Row-major contiguous view.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<std::int64_t> sizes);
  static TensorView strided(void* data, DType dtype, std::initializer_list<std::int64_t> sizes,
                            std::initializer_list<std::int64_t> strides);
};

}  // namespace tgemm
