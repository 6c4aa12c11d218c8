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

#include <string>
#include <typeinfo>
#include <utility>

#include "python/csrc/ops_a16w16.h"
#include "python/csrc/ops_epilogue.h"
#include "tgemm/config.h"
#include "tgemm/error.h"
#include "tgemm/gemm.h"

namespace py = pybind11;

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

  m.def(
      "gemm_a16w16",
      [](const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
         std::optional<at::ScalarType> otype) {
        return python_errors([&] {
          const py::gil_scoped_release no_gil;
          return tgemm::torch_binding::call_gemm_a16w16(x, w, bias, otype);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("bias") = py::none(), py::arg("otype") = py::none(),
      "torch.ops.tgemm.gemm_a16w16 without the boxed-call overhead (eager only: torch.compile "
      "cannot trace into it, and __torch_function__ overrides are not consulted; "
      "tgemm.gemm_a16w16 picks the right one); raises tgemm.TgemmError for bad input");

  m.def(
      "gemm_a16w16_out",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& out, const std::optional<at::Tensor>& bias) {
        python_errors([&] {
          const py::gil_scoped_release no_gil;
          tgemm::torch_binding::call_gemm_a16w16_out(x, w, out, bias);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("out"), py::arg("bias") = py::none(),
      "torch.ops.tgemm.gemm_a16w16_out without the boxed-call overhead (eager only, as "
      "gemm_a16w16); raises tgemm.TgemmError for bad input");

  // The fused-epilogue ops, each the fast path of its torch.ops.tgemm op (eager only, as
  // gemm_a16w16; tgemm.<op> picks the right one); raise tgemm.TgemmError for bad input.
  namespace tb = tgemm::torch_binding;
  m.def(
      "gemm_bias",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, std::optional<at::ScalarType> otype) {
        return python_errors([&] {
          const py::gil_scoped_release no_gil;
          return tb::call_gemm_bias(x, w, bias, otype);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("bias"), py::arg("otype") = py::none(),
      "torch.ops.tgemm.gemm_bias without the boxed-call overhead (eager only)");
  m.def(
      "gemm_bias_out",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, const at::Tensor& out) {
        python_errors([&] {
          const py::gil_scoped_release no_gil;
          tb::call_gemm_bias_out(x, w, bias, out);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("bias"), py::arg("out"),
      "torch.ops.tgemm.gemm_bias_out without the boxed-call overhead (eager only)");
  m.def(
      "gemm_gelu",
      [](const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias, const std::string& approximate,
         std::optional<at::ScalarType> otype) {
        return python_errors([&] {
          const py::gil_scoped_release no_gil;
          return tb::call_gemm_gelu(x, w, bias, approximate, otype);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("bias") = py::none(), py::arg("approximate") = "none",
      py::arg("otype") = py::none(), "torch.ops.tgemm.gemm_gelu without the boxed-call overhead (eager only)");
  m.def(
      "gemm_gelu_out",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& out, const std::optional<at::Tensor>& bias,
         const std::string& approximate) {
        python_errors([&] {
          const py::gil_scoped_release no_gil;
          tb::call_gemm_gelu_out(x, w, out, bias, approximate);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("out"), py::arg("bias") = py::none(), py::arg("approximate") = "none",
      "torch.ops.tgemm.gemm_gelu_out without the boxed-call overhead (eager only)");
  m.def(
      "gemm_relu",
      [](const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
         std::optional<at::ScalarType> otype) {
        return python_errors([&] {
          const py::gil_scoped_release no_gil;
          return tb::call_gemm_relu(x, w, bias, otype);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("bias") = py::none(), py::arg("otype") = py::none(),
      "torch.ops.tgemm.gemm_relu without the boxed-call overhead (eager only)");
  m.def(
      "gemm_relu_out",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& out, const std::optional<at::Tensor>& bias) {
        python_errors([&] {
          const py::gil_scoped_release no_gil;
          tb::call_gemm_relu_out(x, w, out, bias);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("out"), py::arg("bias") = py::none(),
      "torch.ops.tgemm.gemm_relu_out without the boxed-call overhead (eager only)");
  m.def(
      "gemm_alpha_beta",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, double alpha, double beta) {
        return python_errors([&] {
          const py::gil_scoped_release no_gil;
          return tb::call_gemm_alpha_beta(x, w, c, alpha, beta);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("c"), py::arg("alpha") = 1.0, py::arg("beta") = 1.0,
      "torch.ops.tgemm.gemm_alpha_beta without the boxed-call overhead (eager only)");
  m.def(
      "gemm_alpha_beta_out",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& c, const at::Tensor& out, double alpha,
         double beta) {
        python_errors([&] {
          const py::gil_scoped_release no_gil;
          tb::call_gemm_alpha_beta_out(x, w, c, out, alpha, beta);
        });
      },
      py::arg("x"), py::arg("w"), py::arg("c"), py::arg("out"), py::arg("alpha") = 1.0, py::arg("beta") = 1.0,
      "torch.ops.tgemm.gemm_alpha_beta_out without the boxed-call overhead (eager only)");

  m.def(
      "describe_gemm_a16w16",
      [](const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
         std::optional<at::ScalarType> otype) {
        return python_errors(
            [&] { return dispatch_info_dict(tgemm::torch_binding::describe_a16w16(x, w, bias, otype)); });
      },
      py::arg("x"), py::arg("w"), py::arg("bias") = py::none(), py::arg("otype") = py::none(),
      "where gemm_a16w16(x, w, bias, otype) is routed: dict(level, matched_m, file, line, libtype, kernelName)");

  m.def("reload_config", &Bound<&tgemm::reload_config>::call,
        "re-read TGEMM_* variables and tables; forget cached dispatch decisions");
  m.def("shipped_config_dir", &Bound<&tgemm::shipped_config_dir>::call);
  m.def("set_shipped_config_dir", &Bound<&tgemm::set_shipped_config_dir>::call, py::arg("dir"));
  m.def("a16w16_table_files", &Bound<&tgemm::a16w16_table_files>::call);
  m.def("release_workspaces", &Bound<&tgemm::release_workspaces>::call);
}
