// validate_quant_mxfp4, validate_a16w4, validate_a8w4 and validate_a4w4 (src/fp4/fp4_validate.h)
// over fake, never-mapped addresses: what they accept (flattened leading dims, padded rows,
// empties, per-tensor and per-token scales) and the message of each refusal, naming the op, the
// argument, the expectation and the value.
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
  W4GemmCall run() const { return validate_a16w4(x, w, s, out, with_bias ? &bias : nullptr, "gemm_a16w4"); }
};

TEST(ValidateA16W4, AcceptsTheDocumentedLayouts) {
  A16W4Args a;
  W4GemmCall c = a.run();
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

struct A8W4Args {
  TensorView x = view(addr(0x100000), DType::kFloat8E4M3, {2, 3, 128});
  TensorView xs = view(addr(0x600000), DType::kFloat32, {2, 3, 1});
  TensorView w = view(addr(0x200000), DType::kUInt8, {40, 64});
  TensorView s = view(addr(0x300000), DType::kUInt8, {40, 4});
  TensorView out = view(addr(0x400000), DType::kBFloat16, {2, 3, 40});
  TensorView bias = view(addr(0x500000), DType::kFloat32, {40});
  bool with_bias = false;
  W4GemmCall run() const { return validate_a8w4(x, w, xs, s, out, with_bias ? &bias : nullptr, "gemm_a8w4"); }
};

TEST(ValidateA8W4, TakesPerTokenAndPerTensorScales) {
  A8W4Args a;
  a.with_bias = true;  // fp32 bias with a bf16 out
  W4GemmCall c = a.run();
  EXPECT_EQ(c.m, 6);
  EXPECT_EQ(c.n, 40);
  EXPECT_EQ(c.k, 128);
  EXPECT_EQ(c.ldx, 128);
  EXPECT_EQ(c.ld_x_scale, 1);
  EXPECT_EQ(c.x_scale, addr(0x600000));
  EXPECT_EQ(c.x_type, DType::kFloat8E4M3);
  EXPECT_EQ(c.bias_type, DType::kFloat32);
  a.xs = view(addr(0x600000), DType::kFloat32, {});  // a 0-d scalar: per-tensor
  c = a.run();
  EXPECT_EQ(c.ld_x_scale, 0);
  a.xs = view(addr(0x600000), DType::kFloat32, {6, 1}, {1, 7});  // size-1 dim with any stride
  c = a.run();
  EXPECT_EQ(c.ld_x_scale, 1);
  a.x = view(addr(0x100000), DType::kFloat8E4M3, {0, 128});
  a.out = view(addr(0x400000), DType::kBFloat16, {0, 40});
  a.xs = view(addr(0x600000), DType::kFloat32, {1});
  EXPECT_EQ(a.run().m, 0);
}

TEST(ValidateA8W4, RefusesBadInputWithItsValues) {
  {
    A8W4Args a;
    a.x = view(addr(0x100000), DType::kFloat8E4M3, {2, 3, 48});
    a.w = view(addr(0x200000), DType::kUInt8, {40, 24});
    expect_has(error_of([&] { a.run(); }), {"gemm_a8w4", "multiple of 32", "48"});
  }
  {
    A8W4Args a;  // packed e2m1 activations handed to the FP8 op
    a.x = view(addr(0x100000), DType::kUInt8, {2, 3, 64});
    expect_has(error_of([&] { a.run(); }), {"gemm_a8w4", "x.dtype must be torch.float8_e4m3fn", "torch.uint8"});
  }
  {
    A8W4Args a;  // E8M0 block scales handed to the FP8 op
    a.xs = view(addr(0x600000), DType::kUInt8, {2, 3, 4});
    expect_has(error_of([&] { a.run(); }), {"x_scale.dtype must be torch.float32", "torch.uint8"});
  }
  {
    A8W4Args a;
    a.xs = view(addr(0x600000), DType::kFloat32, {2, 3, 4});
    expect_has(error_of([&] { a.run(); }), {"x_scale must have 1 element (per-tensor) or M = 6", "[2, 3, 4]"});
  }
  {
    A8W4Args a;
    a.xs = view(addr(0x600000), DType::kFloat32, {6, 1}, {2, 1});
    expect_has(error_of([&] { a.run(); }), {"x_scale must be contiguous", "(2, 1)"});
  }
  {
    A8W4Args a;
    a.w = view(addr(0x200000), DType::kUInt8, {40, 128});
    expect_has(error_of([&] { a.run(); }), {"w.size(1) must be K / 2 = 64", "128"});
  }
  {
    A8W4Args a;
    a.s = view(addr(0x300000), DType::kUInt8, {40, 3});
    expect_has(error_of([&] { a.run(); }), {"w_scale must be [N, K / 32] = [40, 4]", "[40, 3]"});
  }
  {
    A8W4Args a;
    a.with_bias = true;
    a.bias = view(addr(0x500000), DType::kFloat16, {40});
    expect_has(error_of([&] { a.run(); }),
               {"bias.dtype must be out's (torch.bfloat16) or torch.float32", "torch.float16"});
  }
  {
    A8W4Args a;
    a.out = view(addr(0x400000), DType::kFloat8E4M3, {2, 3, 40});
    expect_has(error_of([&] { a.run(); }), {"out.dtype", "torch.float8_e4m3fn"});
  }
  {
    A8W4Args a;
    a.out = view(addr(0x600000), DType::kFloat32, {2, 3, 40});
    expect_has(error_of([&] { a.run(); }), {"out and x_scale must not overlap"});
  }
}

struct A4W4Args {
  TensorView x = view(addr(0x100000), DType::kUInt8, {3, 64});
  TensorView xs = view(addr(0x600000), DType::kUInt8, {3, 4});
  TensorView w = view(addr(0x200000), DType::kUInt8, {40, 64});
  TensorView s = view(addr(0x300000), DType::kUInt8, {40, 4});
  TensorView out = view(addr(0x400000), DType::kFloat16, {3, 40});
  TensorView bias = view(addr(0x500000), DType::kFloat16, {40});
  bool with_bias = false;
  W4GemmCall run() const { return validate_a4w4(x, w, xs, s, out, with_bias ? &bias : nullptr, "gemm_a4w4"); }
};

TEST(ValidateA4W4, ReadsKFromThePackedWidthAndTakesPaddedRows) {
  A4W4Args a;
  a.with_bias = true;
  W4GemmCall c = a.run();
  EXPECT_EQ(c.m, 3);
  EXPECT_EQ(c.k, 128);
  EXPECT_EQ(c.ldx, 64);
  EXPECT_EQ(c.ld_x_scale, 4);
  EXPECT_EQ(c.x_type, DType::kUInt8);
  EXPECT_EQ(c.bias_type, DType::kFloat16);
  a.x = view(addr(0x100000), DType::kUInt8, {2, 2, 64}, {160, 80, 1});
  a.xs = view(addr(0x600000), DType::kUInt8, {2, 2, 4}, {16, 8, 1});
  a.out = view(addr(0x400000), DType::kFloat32, {2, 2, 40});
  a.bias = view(addr(0x500000), DType::kFloat32, {40});
  c = a.run();
  EXPECT_EQ(c.m, 4);
  EXPECT_EQ(c.ldx, 80);
  EXPECT_EQ(c.ld_x_scale, 8);
}

TEST(ValidateA4W4, RefusesBadInputWithItsValues) {
  {
    A4W4Args a;
    a.x = view(addr(0x100000), DType::kUInt8, {3, 24});
    expect_has(error_of([&] { a.run(); }), {"gemm_a4w4", "x.size(-1) (K / 2", "multiple of 16", "24"});
  }
  {
    A4W4Args a;  // FP8 activations handed to the MXFP4 op
    a.x = view(addr(0x100000), DType::kFloat8E4M3, {3, 64});
    expect_has(error_of([&] { a.run(); }), {"x.dtype must be torch.uint8", "torch.float8_e4m3fn"});
  }
  {
    A4W4Args a;  // a per-token fp32 scale handed to the MXFP4 op
    a.xs = view(addr(0x600000), DType::kFloat32, {3, 1});
    expect_has(error_of([&] { a.run(); }), {"x_scale.dtype must be torch.uint8", "torch.float32"});
  }
  {
    A4W4Args a;
    a.xs = view(addr(0x600000), DType::kUInt8, {3, 2});
    expect_has(error_of([&] { a.run(); }), {"x_scale must have x's leading sizes", "K / 32 = 4", "[3, 2]"});
  }
  {
    A4W4Args a;
    a.xs = view(addr(0x600000), DType::kUInt8, {4, 4});
    expect_has(error_of([&] { a.run(); }), {"x_scale must have x's leading sizes", "[4, 4]"});
  }
  {
    A4W4Args a;
    a.w = view(addr(0x200000), DType::kUInt8, {40, 32});
    expect_has(error_of([&] { a.run(); }), {"w.size(1) must be K / 2 = 64", "32"});
  }
  {
    A4W4Args a;
    a.s = view(addr(0x300000), DType::kUInt8, {41, 4});
    expect_has(error_of([&] { a.run(); }), {"w_scale must be [N, K / 32] = [40, 4]", "[41, 4]"});
  }
  {
    A4W4Args a;
    a.with_bias = true;
    a.bias = view(addr(0x500000), DType::kBFloat16, {40});
    expect_has(error_of([&] { a.run(); }),
               {"bias.dtype must be out's (torch.float16) or torch.float32", "torch.bfloat16"});
  }
  {
    A4W4Args a;
    a.xs = view(addr(0x600000), DType::kUInt8, {3, 4}, {1, 3});
    expect_has(error_of([&] { a.run(); }), {"x_scale must have contiguous rows"});
  }
}

}  // namespace
}  // namespace tgemm
