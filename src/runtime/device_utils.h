// Device-memory helpers shared by the GPU tests, the bench and the tuner: owned buffers, random
// and NaN fills, comparison against an fp32 reference. Host-only header (no CUDA types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/problem.h"
#include "tgemm/tensor.h"

namespace tgemm {

// Whether CUDA sees a device; where it does not, *why (if given) says what CUDA said. Clears the
// error it may leave, so nothing sticky follows.
bool cuda_device_available(std::string* why = nullptr);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Uniform values in [lo, hi), a counter-based hash of (seed, index): reproducible, never zeros
// by construction of the data (a few elements may round to zero like any random draw).
void fill_uniform(void* data, DType dtype, std::int64_t count, std::uint64_t seed, float lo,
                  float hi, Stream stream);
// Quiet NaN in every element (poisons outputs so unwritten elements fail comparisons).
void fill_nan(void* data, DType dtype, std::int64_t count, Stream stream);

struct CompareResult {
  std::int64_t checked = 0;
  std::int64_t bad = 0;      // |out - ref| > atol + rtol |ref|, NaN or Inf
  std::int64_t nonfinite = 0;
  double max_abs_err = 0;
  std::int64_t first_bad = -1;  // row-major index of the first bad element, -1 if none
  double first_bad_out = 0, first_bad_ref = 0;
  double ref_rms = 0;
  double ref_max_abs = 0;
};

// Compares out [m, n] (ld ldo, dtype out_type) with ref [m, n] fp32 (ld ldr). Synchronises.
CompareResult compare_with_reference(const void* out, DType out_type, std::int64_t ldo,
                                     const float* ref, std::int64_t ldr, std::int64_t m,
                                     std::int64_t n, double rtol, double atol, Stream stream);

// Tolerance for comparing a GEMM output with the fp32 reference, for inputs and bias bounded by 1
// in magnitude (the fills of the tests, bench and tuner):
//  - output rounding, 2 ulps relative (rtol = 4u, u the output type's unit roundoff);
//  - fp32 accumulation: tensor cores align products before adding with truncation, so the sum
//    of K products differs from a sequential fp32 sum by up to ~K * 2^-23 * |partial sums|, and
//    random partial sums grow like sqrt(K)/3: atol ~ 8e-8 K^1.5;
//  - a bias epilogue in a 16-bit output type rounds the accumulator before adding the bias
//    (cuBLASLt does, as F.linear does), which costs up to 2u * |bias| more.
struct Tolerance {
  double rtol;
  double atol;
};
Tolerance gemm_tolerance(DType out_type, std::int64_t k, bool has_bias);

// The extra absolute tolerance of an FP8 (e4m3) a8w8 problem, 0 for any other: Hopper's FP8 tensor
// cores keep only about 14 significant bits of the running sum between promotions to fp32 (an
// H100 read errors up to ~2^-14.5 of sum |x w| at K = 528, far past the fp32 term), so 2^-11
// (8x that) of the largest dequantized sum |x| |w| over the outputs, computed by the reference
// kernel on the operands' magnitudes (sign bits cleared) with args' scales. Synchronises.
double fp8_accumulation_atol(const GemmProblem& p, const GemmArgs& args, Stream stream);

// Copies device memory to host (synchronous).
void copy_to_host(void* dst, const void* src, std::size_t bytes);
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void device_synchronize();

}  // namespace tgemm
