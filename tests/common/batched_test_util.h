// Shared pieces of the batched GPU tests (tests/gpu/test_batched.cpp, test_batched_a8w8.cpp): how an
// operand's matrices follow each other (dense, broadcast, padded), its strides and view, and the
// check of a [B, M, N] output against a float64 host product with its padding still NaN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device_utils.h"
#include "tgemm/tensor.h"

namespace tgemm::test {

enum class BatchLayout { kDense, kBroadcast, kPadded };
const char* layout_name(BatchLayout l);

// One stored operand [B, rows, cols]: its row and batch strides and the elements its buffer holds.
struct BatchOperand {
  std::int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0, elems = 0;
};

// Rows of cols + row_pad elements; batches one matrix apart (dense), 0 apart (broadcast) or
// batch_pad elements past the matrix (padded).
BatchOperand batch_operand(std::int64_t batch, std::int64_t rows, std::int64_t cols, std::int64_t row_pad,
                           BatchLayout l, std::int64_t batch_pad);
// The operand's view [B, rows, cols] at its strides.
TensorView batch_view(void* data, DType dtype, std::int64_t batch, const BatchOperand& o);

// Every product's [M, N] of out (the host copy of its whole buffer, laid out as o) within tol of
// ref [B, M, N], and every other element of the buffer (row and batch padding) still NaN: written
// nowhere else. gtest failures name `what`.
void expect_batched_out(const std::vector<float>& out, const BatchOperand& o, std::int64_t batch, std::int64_t m,
                        std::int64_t n, const std::vector<double>& ref, Tolerance tol, const std::string& what);

}  // namespace tgemm::test
