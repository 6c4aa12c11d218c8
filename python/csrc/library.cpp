// The `tgemm` torch library: every row of op_table.h registered, its schema and its CUDA, CPU and
// Autograd kernels (torch.ops.tgemm.*). The fake kernels live in Python (tgemm/_fake.py).
#include <torch/library.h>

#include <type_traits>

#include "python/csrc/op_table.h"

namespace tb = tgemm::torch_binding;

TORCH_LIBRARY(tgemm, m) {
  // torch imports this module when it needs a fake kernel.
  m.set_python_module("tgemm._fake");
  tb::for_each_op([&](const auto& row) { m.def(row.schema, {at::Tag::pt2_compliant_tag}); });
}

TORCH_LIBRARY_IMPL(tgemm, CUDA, m) {
  tb::for_each_op([&](const auto& row) {
    using K = typename std::decay_t<decltype(row)>::Kernels;
    m.impl(tb::op_name(row.schema).c_str(), TORCH_FN(K::cuda));
  });
}

// CPU kernels exist only to say which argument is not on the GPU.
TORCH_LIBRARY_IMPL(tgemm, CPU, m) {
  tb::for_each_op([&](const auto& row) {
    using K = typename std::decay_t<decltype(row)>::Kernels;
    m.impl(tb::op_name(row.schema).c_str(), TORCH_FN(K::cpu));
  });
}

TORCH_LIBRARY_IMPL(tgemm, Autograd, m) {
  tb::for_each_op([&](const auto& row) {
    using K = typename std::decay_t<decltype(row)>::Kernels;
    m.impl(tb::op_name(row.schema).c_str(), TORCH_FN(K::autograd));
  });
}
