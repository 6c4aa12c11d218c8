// at::Tensor -> tgemm::TensorView for the torch binding: the one place that knows both types.
// Every op of python/csrc/ops_<family>.cpp converts its tensors here, then calls the public C++ API
// (include/tgemm/*.h); the core never sees a torch type.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tgemm/error.h"
#include "tgemm/tensor.h"

namespace tgemm::torch_binding {

// Throws tgemm::Error("op: parts...") as the core's TGEMM_CHECK does, so the binding's own checks
// read like the core's and reach Python as the same tgemm.TgemmError.
template <typename... Parts>
[[noreturn]] void throw_error(std::string_view op, const Parts&... parts) {
  std::ostringstream os;
  os << op << ": ";
  (os << ... << parts);
  throw Error(os.str());
}

// "torch.bfloat16": the name the core's messages and the tables use.
std::string torch_dtype_name(at::ScalarType t);

// The tgemm dtype of a torch dtype; for one tgemm has no type for, throws naming op and what
// carries it ("x.dtype", "otype").
DType to_dtype(at::ScalarType t, std::string_view op, std::string_view what);

// A view of a CUDA tensor on `device` (sizes, strides in elements, data_ptr with the storage
// offset applied). Throws for an undefined tensor, a non-CUDA tensor, a tensor on another device
// and a rank above tgemm::kMaxRank; everything else (dtype rules, shapes, layouts) is checked by
// the C++ entry point the view is passed to.
TensorView to_view(const at::Tensor& t, c10::Device device, std::string_view op, std::string_view name);

// The first operand of an op: a defined CUDA tensor, whose device the op runs on.
c10::Device op_device(const at::Tensor& x, std::string_view op);

// For the CPU kernels of ops that run on CUDA only: throws saying which argument is not CUDA
// (instead of the dispatcher's "could not run ... with arguments from the 'CPU' backend").
[[noreturn]] void throw_not_cuda(std::string_view op,
                                 std::initializer_list<std::pair<const char*, const at::Tensor*>> args);

// Sizes of y = x @ w^T as F.linear shapes it: (*x.shape[:-1], w.shape[0]). Tolerates bad ranks
// (they are reported by the C++ validation, in its check order, once the output exists).
std::vector<std::int64_t> linear_output_sizes(const at::Tensor& x, const at::Tensor& w);

inline bool has_tensor(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

}  // namespace tgemm::torch_binding
