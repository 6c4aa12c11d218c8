// The quantization helpers as torch ops (rows of python/csrc/op_table.h), each allocating its
// outputs and calling include/tgemm/quant.h on the current CUDA stream:
//   tgemm::quant_fp8_per_tensor(x) -> (q, scale[1])                   scale = amax / 448
//   tgemm::quant_fp8_per_tensor_static(x, scale) -> q                 a given fp32 scale (one element)
//   tgemm::quant_per_token(x, qtype=None) -> (q, scale[..., 1])       float8_e4m3fn (default) or int8
//   tgemm::quant_fp8_per_block_1x128(x, mn_major=False) -> (q, scale[M, ceil(K/128)])
//                                                                    row-major, or DeepGEMM's
//                                                                    MN-major TMA-aligned layout
//   tgemm::quant_fp8_per_block_128x128(w) -> (q, scale[ceil(N/128), ceil(K/128)])
// q has x's sizes, contiguous. Not differentiable (the autograd kernels only redispatch).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <tuple>

#include "python/csrc/torch_view.h"

namespace tgemm::torch_binding {

struct QuantFp8PerTensor {
  using Sig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor& x);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct QuantFp8PerTensorStatic {
  using Sig = at::Tensor(const at::Tensor& x, const at::Tensor& scale);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct QuantPerToken {
  using Sig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor& x, std::optional<at::ScalarType> qtype);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct QuantFp8PerBlock1x128 {
  using Sig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor& x, bool mn_major);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct QuantFp8PerBlock128x128 {
  using Sig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor& w);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

}  // namespace tgemm::torch_binding
