#include "python/csrc/torch_view.h"

namespace tgemm::torch_binding {

void throw_c10_error(const std::string& msg) { C10_THROW_ERROR(Error, msg); }

std::string torch_dtype_name(at::ScalarType t) {
  // getDtypeNames gives ("float64", "double"); torch prints the first one.
  return "torch." + c10::getDtypeNames(t).first;
}

DType to_dtype(at::ScalarType t, std::string_view op, std::string_view what) {
  switch (t) {
    case at::kBFloat16:
      return DType::kBFloat16;
    case at::kHalf:
      return DType::kFloat16;
    case at::kFloat:
      return DType::kFloat32;
    case at::kFloat8_e4m3fn:
      return DType::kFloat8E4M3;
    case at::kFloat8_e5m2:
      return DType::kFloat8E5M2;
    case at::kChar:
      return DType::kInt8;
    case at::kInt:
      return DType::kInt32;
    case at::kByte: return DType::kUInt8;
    default:
      throw_error(op, what, " ", torch_dtype_name(t),
                  " is not a tgemm type (bfloat16, float16, float32, float8_e4m3fn, float8_e5m2, "
                  "int8, int32) nor torch.uint8 (MXFP4 codes and scales)");
  }
}

c10::Device op_device(const at::Tensor& x, std::string_view op) {
  if (!x.defined()) throw_error(op, "x must be a defined tensor");
  if (!x.is_cuda()) throw_error(op, "x must be a CUDA tensor, got device ", x.device().str());
  return x.device();
}

void throw_not_cuda(std::string_view op, std::initializer_list<std::pair<const char*, const at::Tensor*>> args) {
  for (const auto& [name, t] : args) {
    if (t != nullptr && t->defined() && !t->is_cuda()) {
      throw_error(op, name, " must be a CUDA tensor, got device ", t->device().str());
    }
  }
  throw_error(op, "every tensor argument must be a CUDA tensor");
}

TensorView to_view(const at::Tensor& t, c10::Device device, std::string_view op, std::string_view name) {
  if (!t.defined()) throw_error(op, name, " must be a defined tensor");
  if (t.device() != device) {
    throw_error(op, name, " must be on the device of x (", device.str(), "), got ", t.device().str());
  }
  const std::int64_t rank = t.dim();
  if (rank > kMaxRank) {
    // The core's wording for the same rule, which a view cannot carry to it.
    throw_error(op, name, ".rank must be in [1, ", kMaxRank, "], got ", rank);
  }
  TensorView v;
  v.data = t.data_ptr();
  v.dtype = to_dtype(t.scalar_type(), op, std::string(name) + ".dtype");
  v.rank = static_cast<int>(rank);
  for (int d = 0; d < v.rank; ++d) {
    v.sizes[d] = t.size(d);
    v.strides[d] = t.stride(d);
  }
  return v;
}

std::vector<std::int64_t> linear_output_sizes(const at::Tensor& x, const at::Tensor& w) {
  std::vector<std::int64_t> sizes;
  if (x.dim() >= 1) sizes.assign(x.sizes().begin(), x.sizes().end() - 1);
  sizes.push_back(w.dim() >= 1 ? w.size(0) : 0);
  return sizes;
}

}  // namespace tgemm::torch_binding
