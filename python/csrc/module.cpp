// tgemm._C: loading it registers the torch ops (library.cpp, ops_*.cpp); the module itself holds
// what is not an op: the exception type, table/config helpers, dispatch descriptions, and an eager
// fast path into the same dispatcher entry torch.ops.tgemm uses.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/version.h>

#include "python/csrc/ops_a16w16.h"
#include "tgemm/config.h"
#include "tgemm/error.h"
#include "tgemm/gemm.h"

namespace py = pybind11;

namespace {

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

  // tgemm::Error -> tgemm.TgemmError (a RuntimeError) with the C++ message unchanged. The
  // translator is registered in the pybind11 internals shared with torch, so it also applies to
  // errors raised inside torch.ops.tgemm.* calls.
  py::register_exception<tgemm::Error>(m, "TgemmError", PyExc_RuntimeError);

  m.attr("torch_version") = TORCH_VERSION;

  m.def("gemm_a16w16", &tgemm::torch_binding::call_gemm_a16w16, py::arg("x"), py::arg("w"),
        py::arg("bias") = py::none(), py::arg("otype") = py::none(), py::call_guard<py::gil_scoped_release>(),
        "torch.ops.tgemm.gemm_a16w16 without the boxed-call overhead (eager only: torch.compile "
        "cannot trace into it; tgemm.gemm_a16w16 picks the right one)");

  m.def(
      "describe_gemm_a16w16",
      [](const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
         std::optional<at::ScalarType> otype) {
        return dispatch_info_dict(tgemm::torch_binding::describe_a16w16(x, w, bias, otype));
      },
      py::arg("x"), py::arg("w"), py::arg("bias") = py::none(), py::arg("otype") = py::none(),
      "where gemm_a16w16(x, w, bias, otype) is routed: dict(level, matched_m, file, line, libtype, kernelName)");

  m.def("reload_config", &tgemm::reload_config,
        "re-read TGEMM_* variables and tables; forget cached dispatch decisions");
  m.def("shipped_config_dir", &tgemm::shipped_config_dir);
  m.def("set_shipped_config_dir", &tgemm::set_shipped_config_dir, py::arg("dir"));
  m.def("a16w16_table_files", &tgemm::a16w16_table_files);
  m.def("release_workspaces", &tgemm::release_workspaces);
}
