// validate_quant_mxfp4 and validate_a16w4 (src/fp4/fp4_validate.h) over fake, never-mapped
// addresses: what they accept (flattened leading dims, padded rows, empties) and the message of
// each refusal, naming the op, the argument, the expectation and the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fp4/fp4_validate.h"
#include "tests/common/fake_views.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::addr;
using test::view;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_has(const std::string& msg, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(msg.empty()) << "no error thrown";
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(ValidateQuantMxfp4, FlattensLeadingDimsAndTakesPaddedRows) {
  const Mxfp4QuantCall c = validate_quant_mxfp4(view(addr(0x100000), DType::kBFloat16, {2, 3, 64}),
                                                view(addr(0x200000), DType::kUInt8, {2, 3, 32}),
                                                view(addr(0x300000), DType::kUInt8, {2, 3, 2}), "quant_mxfp4");
  EXPECT_EQ(c.m, 6);
  EXPECT_EQ(c.k, 64);
  EXPECT_EQ(c.ldx, 64);
  EXPECT_EQ(c.ldq, 32);
  EXPECT_EQ(c.ld_scale, 2);
  const Mxfp4QuantCall p = validate_quant_mxfp4(view(addr(0x100000), DType::kFloat16, {4, 32}, {40, 1}),
                                                view(addr(0x200000), DType::kUInt8, {4, 16}, {48, 1}),
                                                view(addr(0x300000), DType::kUInt8, {4, 1}, {4, 1}), "quant_mxfp4");
  EXPECT_EQ(p.ldx, 40);
  EXPECT_EQ(p.ldq, 48);
  EXPECT_EQ(p.ld_scale, 4);
  EXPECT_EQ(p.x_type, DType::kFloat16);
}

TEST(ValidateQuantMxfp4, RefusesBadInputWithItsValues) {
  const auto x = [](std::vector<std::int64_t> s, DType t = DType::kBFloat16) { return view(addr(0x100000), t, s); };
  const auto u8 = [](std::uintptr_t a, std::vector<std::int64_t> s, DType t = DType::kUInt8) {
    return view(addr(a), t, s);
  };
  expect_has(error_of([&] {
               validate_quant_mxfp4(x({4, 48}), u8(0x200000, {4, 24}), u8(0x300000, {4, 1}), "quant_mxfp4");
             }),
             {"quant_mxfp4", "multiple of 32", "48"});
  expect_has(error_of([&] {
               validate_quant_mxfp4(x({4, 64}, DType::kFloat32), u8(0x200000, {4, 32}), u8(0x300000, {4, 2}), "op");
             }),
             {"x.dtype", "torch.float32"});
  expect_has(error_of([&] {
               validate_quant_mxfp4(x({4, 64}), u8(0x200000, {4, 32}, DType::kInt8), u8(0x300000, {4, 2}), "op");
             }),
             {"q.dtype", "torch.uint8", "torch.int8"});
  expect_has(error_of([&] {
               validate_quant_mxfp4(x({4, 64}), u8(0x200000, {4, 64}), u8(0x300000, {4, 2}), "op");
             }),
             {"q must have", "K / 2 = 32", "[4, 64]"});
  expect_has(error_of([&] {
               validate_quant_mxfp4(x({4, 64}), u8(0x200000, {4, 32}), u8(0x300000, {4, 4}), "op");
             }),
             {"scale must have", "K / 32 = 2", "[4, 4]"});
  expect_has(error_of([&] {
               validate_quant_mxfp4(x({4, 64}), u8(0x100010, {4, 32}), u8(0x300000, {4, 2}), "op");
             }),
             {"x and q must not overlap"});
}

struct A16W4Args {
  TensorView x = view(addr(0x100000), DType::kBFloat16, {3, 128});
  TensorView w = view(addr(0x200000), DType::kUInt8, {40, 64});
  TensorView s = view(addr(0x300000), DType::kUInt8, {40, 4});
  TensorView out = view(addr(0x400000), DType::kBFloat16, {3, 40});
  TensorView bias = view(addr(0x500000), DType::kFloat32, {40});
  bool with_bias = false;
  A16W4Call run() const { return validate_a16w4(x, w, s, out, with_bias ? &bias : nullptr, "gemm_a16w4"); }
};

TEST(ValidateA16W4, AcceptsTheDocumentedLayouts) {
  A16W4Args a;
  A16W4Call c = a.run();
  EXPECT_EQ(c.m, 3);
  EXPECT_EQ(c.n, 40);
  EXPECT_EQ(c.k, 128);
  EXPECT_EQ(c.ldw, 64);
  EXPECT_EQ(c.ld_scale, 4);
  EXPECT_EQ(c.bias, nullptr);
  a.out = view(addr(0x400000), DType::kFloat32, {3, 40});
  a.with_bias = true;  // fp32 bias: out's dtype
  c = a.run();
  EXPECT_EQ(c.bias_type, DType::kFloat32);
  a.x = view(addr(0x100000), DType::kBFloat16, {2, 5, 128});
  a.out = view(addr(0x400000), DType::kBFloat16, {2, 5, 40});
  a.bias = view(addr(0x500000), DType::kBFloat16, {40});
  a.w = view(addr(0x200000), DType::kUInt8, {40, 64}, {80, 1});
  c = a.run();
  EXPECT_EQ(c.m, 10);
  EXPECT_EQ(c.ldw, 80);
}

TEST(ValidateA16W4, RefusesBadInputWithItsValues) {
  {
    A16W4Args a;
    a.x = view(addr(0x100000), DType::kBFloat16, {3, 100});
    expect_has(error_of([&] { a.run(); }), {"gemm_a16w4", "multiple of 32", "100"});
  }
  {
    A16W4Args a;
    a.w = view(addr(0x200000), DType::kUInt8, {40, 128});
    expect_has(error_of([&] { a.run(); }), {"w.size(1) must be K / 2 = 64", "128"});
  }
  {
    A16W4Args a;
    a.w = view(addr(0x200000), DType::kInt8, {40, 64});
    expect_has(error_of([&] { a.run(); }), {"w.dtype", "torch.uint8", "torch.int8"});
  }
  {
    A16W4Args a;
    a.s = view(addr(0x300000), DType::kUInt8, {40, 2});
    expect_has(error_of([&] { a.run(); }), {"w_scale must be [N, K / 32] = [40, 4]", "[40, 2]"});
  }
  {
    A16W4Args a;
    a.s = view(addr(0x300000), DType::kFloat32, {40, 4});
    expect_has(error_of([&] { a.run(); }), {"w_scale.dtype", "torch.float32"});
  }
  {
    A16W4Args a;
    a.out = view(addr(0x400000), DType::kBFloat16, {3, 41});
    expect_has(error_of([&] { a.run(); }), {"out must have", "N = 40", "[3, 41]"});
  }
  {
    A16W4Args a;
    a.with_bias = true;
    a.bias = view(addr(0x500000), DType::kFloat16, {40});
    expect_has(error_of([&] { a.run(); }), {"bias.dtype", "torch.float16"});
  }
  {
    A16W4Args a;
    a.with_bias = true;
    a.bias = view(addr(0x500000), DType::kBFloat16, {39});
    expect_has(error_of([&] { a.run(); }), {"bias must be [N] = [40]", "[39]"});
  }
  {
    A16W4Args a;
    a.out = view(addr(0x200010), DType::kBFloat16, {3, 40});
    expect_has(error_of([&] { a.run(); }), {"out and w must not overlap"});
  }
}

}  // namespace
}  // namespace tgemm
