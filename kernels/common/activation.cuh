// The epilogue activations of tgemm, in fp32 (tgemm::Activation): one definition shared by every
// kernel that fuses them, so all backends compute the same function.
#pragma once

namespace tgemm::kernels {

// F.gelu's default: x * Phi(x) with the exact normal CDF.
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

// F.gelu(approximate="tanh").
__device__ __forceinline__ float gelu_tanh(float x) {
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

__device__ __forceinline__ float relu(float x) { return fmaxf(x, 0.0f); }

// Activation by the value of tgemm::Activation (0 none, 1 gelu, 2 gelu_tanh, 3 relu).
__device__ __forceinline__ float activate(int activation, float x) {
  switch (activation) {
    case 1:
      return gelu_erf(x);
    case 2:
      return gelu_tanh(x);
    case 3:
      return relu(x);
    default:
      return x;
  }
}

}  // namespace tgemm::kernels
