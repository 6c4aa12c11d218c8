// at::Tensor -> tgemm::TensorView for the torch binding: the one place that knows both types.
// Every op of python/csrc/ops_<family>.cpp converts its tensors here, then calls the public C++ API
// (include/tgemm/*.h); the core never sees a torch type.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check.h"
#include "tgemm/error.h"
#include "tgemm/tensor.h"

namespace tgemm::torch_binding {

// Errors of the binding. Only c10::Error may leave a kernel that torch's dispatcher calls (torch
// turns it into a Python RuntimeError with the message, without the C++ backtrace unless
// TORCH_SHOW_CPP_STACKTRACES=1); tgemm::Error and other C++ exceptions must not cross the dispatcher.
// The message is "op: ...", the core's wording, for every error whatever its origin.

// Throws c10::Error(msg): msg is the whole message (what_without_backtrace() returns it unchanged).
[[noreturn]] void throw_c10_error(const std::string& msg);

// Throws c10::Error("op: parts...") as the core's TGEMM_CHECK words a tgemm::Error, so the binding's
// own checks read like the core's.
template <typename... Parts>
[[noreturn]] void throw_error(std::string_view op, const Parts&... parts) {
  // Formatted without iostreams, like the core's messages (core/check.h says why).
  throw_c10_error(tgemm::detail::concat(op, ": ", parts...));
}

// Runs body() for code that runs no Python and calls no other kernel that could (the CUDA and CPU
// kernels, the calls into the C++ core): every exception leaves as c10::Error. A c10::Error
// (OutOfMemoryError and the other subclasses included) is rethrown as it is; a tgemm::Error
// becomes a c10::Error with its message unchanged (the core's messages start with the op);
// another std::exception (std::bad_alloc, ...) becomes "op: what()".
template <typename Body>
decltype(auto) with_c10_errors(std::string_view op, Body&& body) {
  try {
    return std::forward<Body>(body)();
  } catch (const c10::Error&) {
    throw;
  } catch (const Error& e) {
    throw_c10_error(e.what());
  } catch (const std::exception& e) {
    throw_c10_error(std::string(op) + ": " + e.what());
  }
}

// Runs body() for kernels that redispatch (autograd): a tgemm::Error becomes a c10::Error with its
// message unchanged; everything else passes unchanged, above all the Python exceptions that fake
// kernels and dispatch modes below raise (FakeTensor's, Dynamo's), whose type must survive.
template <typename Body>
decltype(auto) with_c10_tgemm_errors(Body&& body) {
  try {
    return std::forward<Body>(body)();
  } catch (const Error& e) {
    throw_c10_error(e.what());
  }
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

// The type of an op's Autograd kernel for an op of type Sig: Sig with the dispatch key set first
// (the kernel redispatches below autograd with it).
template <class Sig>
struct AutogradSigOf;
template <class R, class... Args>
struct AutogradSigOf<R(Args...)> {
  using type = R(c10::DispatchKeySet, Args...);
};
template <class Sig>
using AutogradSig = typename AutogradSigOf<Sig>::type;

}  // namespace tgemm::torch_binding
