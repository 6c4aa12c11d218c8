#include "tests/common/batched_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace tgemm::test {

const char* layout_name(BatchLayout l) {
  return l == BatchLayout::kDense ? "dense" : l == BatchLayout::kBroadcast ? "broadcast" : "padded";
}

BatchOperand batch_operand(std::int64_t batch, std::int64_t rows, std::int64_t cols, std::int64_t row_pad,
                           BatchLayout l, std::int64_t batch_pad) {
  BatchOperand o;
  o.rows = rows;
  o.cols = cols;
  o.ld = cols + row_pad;
  const std::int64_t matrix = rows * o.ld;
  o.batch_stride = l == BatchLayout::kBroadcast ? 0 : l == BatchLayout::kPadded ? matrix + batch_pad : matrix;
  o.elems = std::max<std::int64_t>((batch - 1) * o.batch_stride + matrix, 1);
  return o;
}

TensorView batch_view(void* data, DType dtype, std::int64_t batch, const BatchOperand& o) {
  TensorView t = TensorView::contiguous(data, dtype, {batch, o.rows, o.cols});
  t.strides[0] = o.batch_stride;
  t.strides[1] = o.ld;
  t.strides[2] = 1;
  return t;
}

void expect_batched_out(const std::vector<float>& out, const BatchOperand& o, std::int64_t batch, std::int64_t m,
                        std::int64_t n, const std::vector<double>& ref, Tolerance tol, const std::string& what) {
  std::vector<bool> inside(out.size(), false);
  std::int64_t bad = 0, first = -1;
  for (std::int64_t i = 0; i < batch; ++i) {
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t col = 0; col < n; ++col) {
        const std::int64_t at = i * o.batch_stride + r * o.ld + col;
        const double want = ref[static_cast<std::size_t>((i * m + r) * n + col)];
        inside[static_cast<std::size_t>(at)] = true;
        if (!(std::fabs(out[static_cast<std::size_t>(at)] - want) <= tol.atol + tol.rtol * std::fabs(want))) {
          if (first < 0) first = (i * m + r) * n + col;
          ++bad;
        }
      }
    }
  }
  std::int64_t written_outside = 0;
  for (std::size_t e = 0; e < out.size(); ++e) written_outside += !inside[e] && !std::isnan(out[e]);
  EXPECT_EQ(bad, 0) << what << ": first bad element (b, m, n) = (" << (bad ? first / (m * n) : 0) << ", "
                    << (bad ? first % (m * n) / n : 0) << ", " << (bad ? first % n : 0) << ")";
  EXPECT_EQ(written_outside, 0) << what << ": elements of out's padding were written";
}

}  // namespace tgemm::test
