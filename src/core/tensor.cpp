#include "tgemm/tensor.h"

#include <array>

#include "core/check.h"

namespace tgemm {
namespace {

struct DTypeInfo {
  DType dtype;
  std::size_t size;
  std::string_view torch_name;
  std::string_view short_name;
};

constexpr std::array<DTypeInfo, 8> kDTypes = {{
    {DType::kBFloat16, 2, "torch.bfloat16", "bf16"},
    {DType::kFloat16, 2, "torch.float16", "fp16"},
    {DType::kFloat32, 4, "torch.float32", "fp32"},
    {DType::kFloat8E4M3, 1, "torch.float8_e4m3fn", "fp8e4m3"},
    {DType::kFloat8E5M2, 1, "torch.float8_e5m2", "fp8e5m2"},
    {DType::kInt8, 1, "torch.int8", "int8"},
    {DType::kInt32, 4, "torch.int32", "int32"},
    {DType::kUInt8, 1, "torch.uint8", "uint8"},
}};

const DTypeInfo& info(DType t) {
  for (const auto& i : kDTypes) {
    if (i.dtype == t) return i;
  }
  detail::throw_error("dtype", "unknown dtype value ", static_cast<int>(t));
}

}  // namespace

std::size_t dtype_size(DType t) { return info(t).size; }
std::string_view dtype_name(DType t) { return info(t).torch_name; }
std::string_view dtype_short_name(DType t) { return info(t).short_name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kDTypes) {
    if (name == i.torch_name || name == i.short_name || name == i.torch_name.substr(6)) {
      return i.dtype;
    }
  }
  // Common aliases torch also prints.
  if (name == "torch.half" || name == "half") return DType::kFloat16;
  if (name == "torch.float" || name == "float") return DType::kFloat32;
  return std::nullopt;
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= sizes[d];
  return n;
}

TensorView TensorView::contiguous(void* data, DType dtype,
                                  std::initializer_list<std::int64_t> sizes) {
  TGEMM_CHECK(sizes.size() <= static_cast<std::size_t>(kMaxRank), "TensorView",
              "rank must be at most ", kMaxRank, ", got ", sizes.size());
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int>(sizes.size());
  int d = 0;
  for (auto s : sizes) t.sizes[d++] = s;
  std::int64_t stride = 1;
  for (d = t.rank - 1; d >= 0; --d) {
    t.strides[d] = stride;
    stride *= t.sizes[d] > 0 ? t.sizes[d] : 1;
  }
  return t;
}

TensorView TensorView::strided(void* data, DType dtype, std::initializer_list<std::int64_t> sizes,
                               std::initializer_list<std::int64_t> strides) {
  TGEMM_CHECK(sizes.size() == strides.size(), "TensorView", "sizes and strides must have the same ",
              "length, got ", sizes.size(), " vs ", strides.size());
  TensorView t = contiguous(data, dtype, sizes);
  int d = 0;
  for (auto s : strides) t.strides[d++] = s;
  return t;
}

}  // namespace tgemm
