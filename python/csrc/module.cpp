// tgemm._C: loading it registers the torch ops (library.cpp, ops_*.cpp); the module itself holds
// what is not an op: table/config helpers, dispatch descriptions, and an eager fast path into the
// same dispatcher entries torch.ops.tgemm uses.
//
// Errors: every function bound here raises tgemm.TgemmError (a RuntimeError subclass defined in
// Python, tgemm/_errors.py, handed over by _set_error_type at import) for a tgemm::Error or a plain
// c10::Error, with the text torch itself would show for the c10::Error (no C++ backtrace unless
// TORCH_SHOW_CPP_STACKTRACES=1). Everything else leaves as torch's own bindings raise it: Python
// exceptions (a fake kernel's, a mode's) unchanged, c10::OutOfMemoryError as
// torch.OutOfMemoryError, and so on. No pybind11 exception translator is registered: this module
// shares pybind11's internals with torch, and a global translator would apply to torch's bindings
// too; the translation is local to each bound function (python_errors below).
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/cpp_stacktraces.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/version.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "python/csrc/op_table.h"
#include "tgemm/config.h"
#include "tgemm/error.h"
#include "tgemm/gemm.h"
#include "tgemm/sparse.h"

namespace py = pybind11;
namespace tb = tgemm::torch_binding;

namespace {

// The Python type of tgemm errors: tgemm.TgemmError once tgemm/__init__.py has set it (a strong
// reference kept for the life of the process), RuntimeError before.
PyObject* g_error_type = nullptr;

void set_error_type(const py::object& type) {
  if (!PyType_Check(type.ptr()) || PyObject_IsSubclass(type.ptr(), PyExc_RuntimeError) != 1) {
    PyErr_Clear();
    throw py::type_error("tgemm._C._set_error_type: expected a subclass of RuntimeError");
  }
  PyObject* old = g_error_type;
  g_error_type = type.inc_ref().ptr();
  Py_XDECREF(old);
}

// Sets the Python error (GIL held) and unwinds to pybind11, which raises it.
[[noreturn]] void raise_tgemm_error(const std::string& msg) {
  PyErr_SetString(g_error_type != nullptr ? g_error_type : PyExc_RuntimeError, msg.c_str());
  throw py::error_already_set();
}

// Runs body() (GIL held; body releases it where it wants) with torch's error handling
// (HANDLE_TH_ERRORS: warnings raised by TORCH_WARN become Python warnings, c10 errors and Python
// errors become what torch's own bindings make of them), except that a tgemm::Error, and a
// c10::Error of exactly that type (what the kernels and the binding raise for bad input), become
// tgemm.TgemmError with the message torch would show.
template <typename Body>
decltype(auto) python_errors(Body&& body) {
  HANDLE_TH_ERRORS
  try {
    return std::forward<Body>(body)();
  } catch (const tgemm::Error& e) {
    raise_tgemm_error(torch::processErrorMsg(e.what()));
  } catch (const c10::Error& e) {
    if (typeid(e) != typeid(c10::Error)) throw;  // OutOfMemoryError, AcceleratorError, ...: torch's
    raise_tgemm_error(
        torch::processErrorMsg(torch::get_cpp_stacktraces_enabled() ? e.what() : e.what_without_backtrace()));
  }
  END_HANDLE_TH_ERRORS_PYBIND
}

// A free function bound with python_errors around it: Bound<&f>::call has f's signature.
template <auto Fn>
struct Bound;
template <typename R, typename... Args, R (*Fn)(Args...)>
struct Bound<Fn> {
  static R call(Args... args) {
    return python_errors([&]() -> R { return Fn(std::forward<Args>(args)...); });
  }
};

// The eager fast path of the op whose kernels are K: its dispatcher entry called unboxed (the
// same kernels as torch.ops.tgemm.<op>, autograd and profiler included), with the GIL released.
template <class K, class Sig = typename K::Sig>
struct FastPath;
template <class K, class R, class... Args>
struct FastPath<K, R(Args...)> {
  static constexpr std::size_t kArity = sizeof...(Args);
  static R call(Args... args) {
    return python_errors([&]() -> R {
      const py::gil_scoped_release no_gil;
      return tb::op_handle<K>().call(args...);
    });
  }
};

// A schema default as a Python value (the defaults the op schemas use: None, float, int, bool, str).
py::object python_default(const c10::IValue& v) {
  if (v.isNone()) return py::none();
  if (v.isDouble()) return py::float_(v.toDouble());
  if (v.isInt()) return py::int_(v.toInt());
  if (v.isBool()) return py::bool_(v.toBool());
  if (v.isString()) return py::str(v.toStringRef());
  throw std::logic_error("tgemm._C: a schema default of type " + v.tagKind() + " has no Python binding here");
}

// The keyword of one schema argument: without a default for the leading `Required` ones.
template <bool Required>
auto python_arg(const c10::Argument& a) {
  if constexpr (Required) {
    return py::arg(a.name().c_str());
  } else {
    return py::arg_v(a.name().c_str(), python_default(*a.default_value()));
  }
}

template <class K, std::size_t Required, std::size_t... I>
void def_fast_path_with(py::module_& m, const c10::FunctionSchema& schema, const std::string& name,
                        const std::string& doc, std::index_sequence<I...>) {
  m.def(name.c_str(), &FastPath<K>::call, python_arg<(I < Required)>(schema.arguments()[I])..., doc.c_str());
}

// Binds tgemm._C.<op> with the schema's argument names and defaults.
template <class K, std::size_t... Required>
void def_fast_path_for(py::module_& m, std::size_t required, std::index_sequence<Required...>) {
  const c10::FunctionSchema& schema = tb::op_handle<K>().schema();
  const std::string name = schema.name().substr(schema.name().find("::") + 2);
  const std::string doc = "torch.ops.tgemm." + name +
                          " without the boxed-call overhead (eager only: torch.compile cannot trace into it, and "
                          "__torch_function__ overrides are not consulted; tgemm." + name +
                          " picks the right one); raises tgemm.TgemmError for bad input";
  constexpr std::size_t kArity = FastPath<K>::kArity;
  // The pybind11 keywords are compile-time arguments: one instantiation per count of leading
  // arguments without a default, the one the schema has taken at run time.
  const bool bound = ((required == Required ? (def_fast_path_with<K, Required>(m, schema, name, doc,
                                                                                std::make_index_sequence<kArity>{}),
                                               true)
                                            : false) ||
                      ...);
  if (!bound) throw std::logic_error("tgemm._C: " + name + " has more required arguments than its kernel");
}

template <class K>
void def_fast_path(py::module_& m) {
  const auto& arguments = tb::op_handle<K>().schema().arguments();
  constexpr std::size_t kArity = FastPath<K>::kArity;
  if (arguments.size() != kArity) throw std::logic_error("tgemm._C: a schema and its kernel disagree on arity");
  std::size_t required = 0;
  while (required < kArity && !arguments[required].default_value()) ++required;
  for (std::size_t i = required; i < kArity; ++i) {
    if (!arguments[i].default_value()) throw std::logic_error("tgemm._C: an argument without a default after one with");
  }
  def_fast_path_for<K>(m, required, std::make_index_sequence<kArity + 1>{});
}

py::dict dispatch_info_dict(const tgemm::DispatchInfo& info) {
  py::dict d;
  d["level"] = info.level;
  d["matched_m"] = info.matched_m;
  d["file"] = info.file;
  d["line"] = info.line;
  d["libtype"] = info.libtype;
  d["kernelName"] = info.kernel_name;
  return d;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "tgemm's PyTorch extension: torch.ops.tgemm.* and the helpers of the tgemm package";

  m.attr("torch_version") = TORCH_VERSION;

  m.def("_set_error_type", &set_error_type, py::arg("type"),
        "the exception type (a RuntimeError subclass) the functions of this module raise for bad "
        "input; tgemm sets tgemm.TgemmError at import");

  // Every op's eager fast path, tgemm._C.<op>: torch.ops.tgemm.<op> without the boxed-call overhead.
  tb::for_each_op([&](const auto& row) { def_fast_path<typename std::decay_t<decltype(row)>::Kernels>(m); });

  m.def(
      "describe_gemm_a16w16",
      [](const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
         std::optional<at::ScalarType> otype) {
        return python_errors(
            [&] { return dispatch_info_dict(tgemm::torch_binding::describe_a16w16(x, w, bias, otype)); });
      },
      py::arg("x"), py::arg("w"), py::arg("bias") = py::none(), py::arg("otype") = py::none(),
      "where gemm_a16w16(x, w, bias, otype) is routed: dict(level, matched_m, file, line, libtype, kernelName)");

  // names: the four operands' keyword names (x, w, x_scale, w_scale; a, b, a_scale, b_scale).
  auto def_describe_a8w8 = [&m](const char* name, auto describe, std::array<const char*, 4> names, const char* doc) {
    m.def(
        name,
        [describe](const at::Tensor& x, const at::Tensor& w, const at::Tensor& x_scale, const at::Tensor& w_scale,
                   const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
          return python_errors([&] { return dispatch_info_dict(describe(x, w, x_scale, w_scale, bias, out_dtype)); });
        },
        py::arg(names[0]), py::arg(names[1]), py::arg(names[2]), py::arg(names[3]), py::arg("bias") = py::none(),
        py::arg("out_dtype") = py::none(), doc);
  };
  constexpr std::array<const char*, 4> kLinearNames{"x", "w", "x_scale", "w_scale"};
  def_describe_a8w8("describe_gemm_a8w8", &tgemm::torch_binding::describe_a8w8, kLinearNames,
                    "where gemm_a8w8(x, w, x_scale, w_scale, bias, out_dtype) is routed: dict(level, matched_m, file, "
                    "line, libtype, kernelName)");
  def_describe_a8w8("describe_gemm_a8w8_blockscale", &tgemm::torch_binding::describe_a8w8_blockscale, kLinearNames,
                    "where gemm_a8w8_blockscale(x, w, x_scale, w_scale, bias, out_dtype) is routed: dict(level, "
                    "matched_m, file, line, libtype, kernelName)");
  def_describe_a8w8("describe_batched_gemm_a8w8", &tgemm::torch_binding::describe_batched_a8w8,
                    {"a", "b", "a_scale", "b_scale"},
                    "where batched_gemm_a8w8(a, b, a_scale, b_scale, bias, out_dtype) is routed: dict(level, "
                    "matched_m, file, line, libtype, kernelName)");

  m.def(
      "describe_batched_gemm",
      [](const at::Tensor& a, const at::Tensor& b, bool transpose_a, bool transpose_b,
         const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype) {
        return python_errors([&] {
          return dispatch_info_dict(
              tgemm::torch_binding::describe_batched(a, b, transpose_a, transpose_b, bias, out_dtype));
        });
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      py::arg("bias") = py::none(), py::arg("out_dtype") = py::none(),
      "where batched_gemm(a, b, transpose_a, transpose_b, bias, out_dtype) is routed: dict(level, matched_m, file, "
      "line, libtype, kernelName)");

  m.def(
      "describe_gmm",
      [](const at::Tensor& lhs, const at::Tensor& rhs, const at::Tensor& group_sizes,
         const std::optional<at::Tensor>& bias, bool transpose_rhs, std::optional<at::ScalarType> out_dtype) {
        return python_errors([&] {
          return dispatch_info_dict(
              tgemm::torch_binding::describe_gmm_call(lhs, rhs, group_sizes, bias, transpose_rhs, out_dtype));
        });
      },
      py::arg("lhs"), py::arg("rhs"), py::arg("group_sizes"), py::arg("bias") = py::none(),
      py::arg("transpose_rhs") = false, py::arg("out_dtype") = py::none(),
      "where gmm(lhs, rhs, group_sizes, bias, transpose_rhs, out_dtype) is routed: dict(level forced|table|default|"
      "empty, matched_m, file, line, libtype, kernelName)");

  m.def(
      "describe_fused_moe",
      [](const at::Tensor& hidden, const at::Tensor& w1, const at::Tensor& w2, const at::Tensor& topk_weights,
         const at::Tensor& topk_ids, const std::string& activation, const std::optional<at::Tensor>& expert_map,
         std::optional<at::ScalarType> out_dtype) {
        return python_errors([&] {
          return dispatch_info_dict(tgemm::torch_binding::describe_fused_moe_call(
              hidden, w1, w2, topk_weights, topk_ids, activation, expert_map, out_dtype));
        });
      },
      py::arg("hidden"), py::arg("w1"), py::arg("w2"), py::arg("topk_weights"), py::arg("topk_ids"),
      py::arg("activation") = "silu", py::arg("expert_map") = py::none(), py::arg("out_dtype") = py::none(),
      "where fused_moe(hidden, w1, w2, topk_weights, topk_ids, activation, expert_map, out_dtype) is routed: "
      "dict(level forced|table|default|empty, matched_m, file, line, libtype, kernelName)");

  m.def("reload_config", &Bound<&tgemm::reload_config>::call,
        "re-read TGEMM_* variables and tables; forget cached dispatch decisions");
  m.def("shipped_config_dir", &Bound<&tgemm::shipped_config_dir>::call);
  m.def("set_shipped_config_dir", &Bound<&tgemm::set_shipped_config_dir>::call, py::arg("dir"));
  m.def("a16w16_table_files", &Bound<&tgemm::a16w16_table_files>::call);
  m.def("release_workspaces", &Bound<&tgemm::release_workspaces>::call);

  m.def(
      "compress_2_4", [](const at::Tensor& w) { return python_errors([&] { return tb::compress_2_4(w); }); },
      py::arg("w"),
      "the int8 bytes of cuSPARSELt's compressed form of the 2:4 weight w [N, K] (bf16/fp16, N and K multiples of "
      "16; float8_e4m3fn, multiples of 32), for torch.ops.tgemm.sparse_gemm_2_4 (sparse_gemm_2_4_fp8); reads w "
      "back to check it is 2:4 (synchronizes)");
  m.def(
      "check_sparse_csr",
      [](const at::Tensor& crow_indices, const at::Tensor& col_indices, const at::Tensor& values, std::int64_t n,
         std::int64_t k) {
        python_errors([&] {
          tb::check_sparse_csr(crow_indices, col_indices, values, n, k);
          return 0;
        });
      },
      py::arg("crow_indices"), py::arg("col_indices"), py::arg("values"), py::arg("n"), py::arg("k"),
      "raises tgemm.TgemmError unless the CSR arrays (int32 indices) of an [n, k] weight are well formed: offsets "
      "from 0 to nnz, never decreasing; column indices in [0, k), sorted and distinct within a row");
  m.def(
      "check_sparse_bsr",
      [](const at::Tensor& crow_indices, const at::Tensor& col_indices, const at::Tensor& values, std::int64_t n,
         std::int64_t k, std::int64_t block_size) {
        python_errors([&] {
          tb::check_sparse_bsr(crow_indices, col_indices, values, n, k, block_size);
          return 0;
        });
      },
      py::arg("crow_indices"), py::arg("col_indices"), py::arg("values"), py::arg("n"), py::arg("k"),
      py::arg("block_size"),
      "raises tgemm.TgemmError unless the BSR arrays (int32 block indices, values [nnzb, bs, bs]) of an [n, k] "
      "weight are well formed: block_size divides n and k; block columns in [0, k / bs), sorted and distinct");
  m.def("has_cusparselt", &Bound<&tgemm::has_cusparselt>::call,
        "whether this build can run 2:4 weights (cuSPARSELt loaded)");
}
