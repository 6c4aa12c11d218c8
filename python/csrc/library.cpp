// The `tgemm` torch library: the schema of every public op, in one place (torch.ops.tgemm.*).
//
// A new op family (a8w8, batched, grouped, ...) is added the same way as
// a16w16: its schemas here, its CUDA and autograd kernels in python/csrc/ops_<family>.cpp
// (TORCH_LIBRARY_IMPL(tgemm, CUDA|Autograd, m)), its fake (meta) kernels in python/tgemm/_fake.py,
// its Python wrappers in python/tgemm/ops.py, and its opcheck/compile/graph tests in
// tests/python/.
//
// Conventions: inputs in the C++ API's order; optional arguments default to None; a functional
// op returns a new tensor; an out= variant is `<op>_out(..., Tensor(a!) out, ...) -> ()` (no
// aliased return, so torch.compile functionalizes it), with out after the required tensors and
// before the arguments that have defaults.
#include <torch/library.h>

TORCH_LIBRARY(tgemm, m) {
  // The fake kernels live in Python; torch imports this module when it needs them.
  m.set_python_module("tgemm._fake");

  // a16w16: y = x @ w^T (+ bias), w [N, K] as in F.linear; bf16/fp16 in, bf16/fp16/fp32 out.
  m.def("gemm_a16w16(Tensor x, Tensor w, Tensor? bias=None, ScalarType? otype=None) -> Tensor",
        {at::Tag::pt2_compliant_tag});
  m.def("gemm_a16w16_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None) -> ()",
        {at::Tag::pt2_compliant_tag});

  // Fused epilogues (python/csrc/ops_epilogue.cpp), each tgemm::gemm_a16w16 with the matching
  // epilogue, tuned and dispatched as such: y = act(x @ w^T (+ bias)), bias [N] of x's dtype or
  // of the output dtype, added in fp32 before the activation; outputs bf16/fp16/fp32.
  m.def("gemm_bias(Tensor x, Tensor w, Tensor bias, ScalarType? otype=None) -> Tensor",
        {at::Tag::pt2_compliant_tag});
  m.def("gemm_bias_out(Tensor x, Tensor w, Tensor bias, Tensor(a!) out) -> ()", {at::Tag::pt2_compliant_tag});
  // approximate as in F.gelu: "none" (erf) or "tanh".
  m.def("gemm_gelu(Tensor x, Tensor w, Tensor? bias=None, str approximate=\"none\", ScalarType? otype=None) "
        "-> Tensor",
        {at::Tag::pt2_compliant_tag});
  m.def("gemm_gelu_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None, str approximate=\"none\") -> ()",
        {at::Tag::pt2_compliant_tag});
  m.def("gemm_relu(Tensor x, Tensor w, Tensor? bias=None, ScalarType? otype=None) -> Tensor",
        {at::Tag::pt2_compliant_tag});
  m.def("gemm_relu_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None) -> ()", {at::Tag::pt2_compliant_tag});
  // y = alpha * (x @ w^T) + beta * c, c [..., N] shaped like y; the functional form's y has c's
  // dtype. The out= form takes out = c (the same tensor) to accumulate in place, as ATen's out=
  // ops let out alias an input; otherwise out must not overlap c.
  m.def("gemm_alpha_beta(Tensor x, Tensor w, Tensor c, float alpha=1.0, float beta=1.0) -> Tensor",
        {at::Tag::pt2_compliant_tag});
  m.def("gemm_alpha_beta_out(Tensor x, Tensor w, Tensor c, Tensor(a!) out, float alpha=1.0, float beta=1.0) -> ()",
        {at::Tag::pt2_compliant_tag});
}
