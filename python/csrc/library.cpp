// The `tgemm` torch library: the schema of every public op, in one place (torch.ops.tgemm.*).
//
// A new op family (gemm_bias, gemm_gelu, a8w8, batched, grouped, ...) is added the same way as
// a16w16: its schemas here, its CUDA and autograd kernels in python/csrc/ops_<family>.cpp
// (TORCH_LIBRARY_IMPL(tgemm, CUDA|Autograd, m)), its fake (meta) kernels in python/tgemm/_fake.py,
// its Python wrappers in python/tgemm/ops.py, and its opcheck/compile/graph tests in
// tests/python/.
//
// Conventions: inputs in the C++ API's order; optional arguments default to None; a functional
// op returns a new tensor; an out= variant is `<op>_out(..., Tensor(a!) out, ...) -> ()` (no
// aliased return, so torch.compile functionalizes it).
#include <torch/library.h>

TORCH_LIBRARY(tgemm, m) {
  // The fake kernels live in Python; torch imports this module when it needs them.
  m.set_python_module("tgemm._fake");

  // a16w16: y = x @ w^T (+ bias), w [N, K] as in F.linear; bf16/fp16 in, bf16/fp16/fp32 out.
  m.def("gemm_a16w16(Tensor x, Tensor w, Tensor? bias=None, ScalarType? otype=None) -> Tensor",
        {at::Tag::pt2_compliant_tag});
  m.def("gemm_a16w16_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None) -> ()",
        {at::Tag::pt2_compliant_tag});
}
