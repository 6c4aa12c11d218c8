// Shared helpers of the grouped and MoE GPU tests (tests/gpu/test_grouped.cpp, test_moe.cpp):
// device buffers filled with uniform(-1, 1), NaN or given ints, the comparison of an output with a
// float64 host reference, and random expert ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device_utils.h"
#include "tgemm/tensor.h"

namespace tgemm::test {

// A device buffer of `count` elements of dtype.
struct Buffer {
  DeviceBuffer buf;
  DType dtype = DType::kBFloat16;
  std::int64_t count = 0;
  void* data() const { return buf.data(); }
  std::vector<float> host() const;  // bf16, fp16 or fp32 elements as floats
};

Buffer random_buffer(DType dtype, std::int64_t count, std::uint64_t seed);  // uniform(-1, 1)
Buffer nan_buffer(DType dtype, std::int64_t count);
Buffer int_buffer(const std::vector<std::int32_t>& v);  // int32

// Elements of out outside tol of ref (NaN fails), with the first one described (a gtest failure).
void expect_close(const std::vector<float>& out, const std::vector<double>& ref, Tolerance tol,
                  const std::string& what);

// `count` ids uniform in [0, experts) (seeded); with invalid, about one in 7 is out of range
// (negative or >= experts).
std::vector<std::int32_t> random_ids(std::int64_t count, std::int64_t experts, std::uint64_t seed, bool invalid);

}  // namespace tgemm::test
