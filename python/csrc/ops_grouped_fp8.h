// The FP8 block-scaled grouped GEMMs as torch ops (rows of python/csrc/op_table.h), on the current
// CUDA stream through include/tgemm/grouped_fp8.h; m_indices and masked_m stay on the device.
// Inference kernels: no derivative. Both write a caller-given out (DeepGEMM's convention):
//   tgemm::m_grouped_gemm_fp8_contiguous(Tensor x, Tensor x_scale, Tensor w, Tensor w_scale,
//                                        Tensor(a!) out, Tensor m_indices) -> ()
//   tgemm::m_grouped_gemm_fp8_masked(Tensor x, Tensor x_scale, Tensor w, Tensor w_scale,
//                                    Tensor(a!) out, Tensor masked_m, int expected_m) -> ()
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "python/csrc/torch_view.h"

namespace tgemm::torch_binding {

struct MGroupedGemmFp8Contiguous {
  using Sig = void(const at::Tensor& x, const at::Tensor& x_scale, const at::Tensor& w, const at::Tensor& w_scale,
                   const at::Tensor& out, const at::Tensor& m_indices);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

struct MGroupedGemmFp8Masked {
  using Sig = void(const at::Tensor& x, const at::Tensor& x_scale, const at::Tensor& w, const at::Tensor& w_scale,
                   const at::Tensor& out, const at::Tensor& masked_m, std::int64_t expected_m);
  static Sig cuda, cpu;
  static AutogradSig<Sig> autograd;
};

}  // namespace tgemm::torch_binding
