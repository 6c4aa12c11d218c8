// Host tests of argument validation: tensor views over fake, never-mapped addresses (validation
// never dereferences them) and the check that a bad input's tgemm::Error names the op, the
// argument and the value.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tgemm/error.h"
#include "tgemm/tensor.h"

namespace tgemm::test {

inline void* addr(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

// A view of `sizes` at `data`: contiguous row-major strides unless `strides` is given.
inline TensorView view(void* data, DType dtype, const std::vector<std::int64_t>& sizes,
                       const std::vector<std::int64_t>& strides = {}) {
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int>(sizes.size());
  std::int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.sizes[d] = sizes[d];
    t.strides[d] = strides.empty() ? stride : strides[d];
    stride *= sizes[d] > 0 ? sizes[d] : 1;
  }
  return t;
}

// One bad input: `mutate` spoils a good call's arguments; every one of `parts` (the argument and
// the value) must appear in the message.
template <typename Args>
struct BadInputCase {
  const char* name;
  std::function<void(Args&)> mutate;
  std::vector<std::string> parts;
};

// Test names and failure messages show the case name, not the bytes of the struct.
template <typename Args>
void PrintTo(const BadInputCase<Args>& c, std::ostream* os) {
  *os << c.name;
}

// Mutates a good Args, calls its validate(); expects a tgemm::Error starting with `op` + ": " and
// holding every part.
template <typename Args>
void expect_bad_input_error(const BadInputCase<Args>& c, std::string_view op) {
  Args a;
  c.mutate(a);
  try {
    a.validate();
    FAIL() << c.name << ": no tgemm::Error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(std::string(op) + ": ", 0), 0u) << msg;
    for (const auto& part : c.parts) {
      EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' missing from: " << msg;
    }
  }
}

}  // namespace tgemm::test
