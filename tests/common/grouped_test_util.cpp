#include "tests/common/grouped_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tests/common/gpu_test_util.h"

namespace tgemm::test {

std::vector<float> Buffer::host() const { return to_host_floats(buf.data(), dtype, count); }

Buffer random_buffer(DType dtype, std::int64_t count, std::uint64_t seed) {
  Buffer b{DeviceBuffer(std::max<std::size_t>(static_cast<std::size_t>(count) * dtype_size(dtype), 16)), dtype, count};
  fill_uniform(b.data(), dtype, count, seed, -1.0f, 1.0f, nullptr);
  return b;
}

Buffer nan_buffer(DType dtype, std::int64_t count) {
  Buffer b{DeviceBuffer(std::max<std::size_t>(static_cast<std::size_t>(count) * dtype_size(dtype), 16)), dtype, count};
  fill_nan(b.data(), dtype, count, nullptr);
  return b;
}

Buffer int_buffer(const std::vector<std::int32_t>& v) {
  Buffer b{DeviceBuffer(std::max<std::size_t>(v.size() * 4, 16)), DType::kInt32, static_cast<std::int64_t>(v.size())};
  if (!v.empty()) copy_to_device(b.data(), v.data(), v.size() * 4);
  return b;
}

// Elements of out outside tol of ref (NaN fails), with the first one described.
void expect_close(const std::vector<float>& out, const std::vector<double>& ref, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(out.size(), ref.size()) << what;
  std::int64_t bad = 0, first = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double err = std::fabs(static_cast<double>(out[i]) - ref[i]);
    if (!(err <= tol.atol + tol.rtol * std::fabs(ref[i]))) {
      if (first < 0) first = static_cast<std::int64_t>(i);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": first bad element " << first << " out "
                    << (first < 0 ? 0.0f : out[static_cast<std::size_t>(first)]) << " ref "
                    << (first < 0 ? 0.0 : ref[static_cast<std::size_t>(first)]);
}

std::vector<std::int32_t> random_ids(std::int64_t count, std::int64_t experts, std::uint64_t seed, bool invalid) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(count));
  for (auto& id : ids) {
    id = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(std::max<std::int64_t>(experts, 1)));
    if (invalid && rng() % 7 == 0)
      id = rng() % 2 ? -1 - static_cast<std::int32_t>(rng() % 5) : static_cast<std::int32_t>(experts + rng() % 3);
  }
  return ids;
}

}  // namespace tgemm::test
