// Bad input through the public API on a real device: each case raises tgemm::Error naming the op,
// the argument and the actual value; nothing is launched, no CUDA error is left behind, and a
// good call still works afterwards.
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

struct BadCase {
  std::string what;
  std::vector<std::string> needles;  // all must appear in the message
  std::function<void()> call;
};

TEST(Errors, BadInputsRaiseClearErrorsAndLeaveNoStickyError) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 16;
  c.n = 64;
  c.k = 128;
  c.bias = true;
  A16W16Data d = make_a16w16(c, 5);
  const TensorView x = d.xv, w = d.wv, out = d.ov, bias = d.bv;
  DeviceBuffer big(1 << 20);
  auto with = [](TensorView t, auto&& edit) {
    edit(t);
    return t;
  };
  auto opts = [](const TensorView* b) {
    GemmOptions o;
    o.bias = b;
    return o;
  };
  auto call = [](TensorView x, TensorView w, TensorView o, GemmOptions g) {
    return [=] { gemm_a16w16(x, w, o, g, nullptr); };
  };
  static TensorView bias_keep;
  std::vector<BadCase> cases = {
      {"null x", {"x.data", "null"}, call(with(x, [](TensorView& t) { t.data = nullptr; }), w, out, {})},
      {"null w", {"w.data", "null"}, call(x, with(w, [](TensorView& t) { t.data = nullptr; }), out, {})},
      {"null out", {"out.data", "null"}, call(x, w, with(out, [](TensorView& t) { t.data = nullptr; }), {})},
      {"fp32 x", {"x.dtype", "torch.float32"}, call(with(x, [](TensorView& t) { t.dtype = DType::kFloat32; }), w, out, {})},
      {"int8 x", {"x.dtype", "torch.int8"}, call(with(x, [](TensorView& t) { t.dtype = DType::kInt8; }), w, out, {})},
      {"fp16 w with bf16 x", {"w.dtype", "torch.float16"}, call(x, with(w, [](TensorView& t) { t.dtype = DType::kFloat16; }), out, {})},
      {"int32 out", {"out.dtype", "torch.int32"}, call(x, w, with(out, [](TensorView& t) { t.dtype = DType::kInt32; }), {})},
      {"fp8 out", {"out.dtype", "float8"}, call(x, w, with(out, [](TensorView& t) { t.dtype = DType::kFloat8E4M3; }), {})},
      {"w rank 3", {"w must be 2-D", "rank 3"}, call(x, with(w, [&](TensorView& t) { t = TensorView::contiguous(t.data, t.dtype, {1, c.n, c.k}); }), out, {})},
      {"out rank 3", {"out.rank", "3"}, call(x, w, with(out, [&](TensorView& t) { t = TensorView::contiguous(t.data, t.dtype, {1, c.m, c.n}); }), {})},
      {"x rank 7", {"x.rank", "7"}, call(with(x, [](TensorView& t) { t.rank = 7; }), w, out, {})},
      {"negative size", {"x.size(0)", "-16"}, call(with(x, [](TensorView& t) { t.sizes[0] = -16; }), w, out, {})},
      {"negative stride", {"x.stride(0)", "-128"}, call(with(x, [](TensorView& t) { t.strides[0] = -128; }), w, out, {})},
      {"K mismatch", {"w.size(1)", "127", "128"}, call(x, with(w, [](TensorView& t) { t.sizes[1] = 127; }), out, {})},
      {"N mismatch", {"out.size(-1)", "63", "64"}, call(x, w, with(out, [](TensorView& t) { t.sizes[1] = 63; }), {})},
      {"M mismatch", {"out.size(0)", "15", "16"}, call(x, w, with(out, [](TensorView& t) { t.sizes[0] = 15; }), {})},
      {"bias length", {"bias.size(0)", "63"}, [&] { bias_keep = with(bias, [](TensorView& t) { t.sizes[0] = 63; }); gemm_a16w16(x, w, out, opts(&bias_keep), nullptr); }},
      {"bias rank 2", {"bias must be 1-D", "rank 2"}, [&] { bias_keep = TensorView::contiguous(bias.data, bias.dtype, {1, c.n}); gemm_a16w16(x, w, out, opts(&bias_keep), nullptr); }},
      {"bias int32", {"bias.dtype", "torch.int32"}, [&] { bias_keep = with(bias, [](TensorView& t) { t.dtype = DType::kInt32; }); gemm_a16w16(x, w, out, opts(&bias_keep), nullptr); }},
      {"null bias", {"bias.data", "null"}, [&] { bias_keep = with(bias, [](TensorView& t) { t.data = nullptr; }); gemm_a16w16(x, w, out, opts(&bias_keep), nullptr); }},
      {"x inner stride", {"x.stride(-1)", "2"}, call(with(x, [](TensorView& t) { t.strides[1] = 2; t.sizes[1] = 64; }), with(w, [](TensorView& t) { t.sizes[1] = 64; }), out, {})},
      {"w inner stride", {"w.stride(1)", "2"}, call(x, with(w, [](TensorView& t) { t.strides[1] = 2; t.strides[0] = 256; t.sizes[0] = 32; }), with(out, [](TensorView& t) { t.sizes[1] = 32; }), {})},
      {"out inner stride", {"out.stride(-1)", "2"}, call(x, with(w, [](TensorView& t) { t.sizes[0] = 32; }), with(out, [](TensorView& t) { t.strides[1] = 2; t.sizes[1] = 32; }), {})},
      {"lda < K", {"x row stride", "100"}, call(with(x, [](TensorView& t) { t.strides[0] = 100; }), w, out, {})},
      {"ldo < N", {"out row stride", "60"}, call(x, w, with(out, [](TensorView& t) { t.strides[0] = 60; }), {})},
      {"misaligned x", {"x.data", "aligned"}, call(with(x, [](TensorView& t) { t.data = static_cast<char*>(t.data) + 1; }), w, out, {})},
      {"misaligned out", {"out.data", "aligned"}, call(x, w, with(out, [](TensorView& t) { t.data = static_cast<char*>(t.data) + 1; }), {})},
      {"overflowing M", {"rows (M)", "[1048576, 1048576, 128]"}, call(with(x, [](TensorView& t) { t = TensorView::contiguous(t.data, t.dtype, {1 << 20, 1 << 20, 128}); }), w, with(out, [](TensorView& t) { t = TensorView::contiguous(t.data, t.dtype, {1 << 20, 1 << 20, 64}); }), {})},
      {"overflowing extent", {"x", "overflow"}, call(with(x, [](TensorView& t) { t.strides[0] = std::int64_t{1} << 61; }), w, out, {})},
      {"out overlaps x", {"out must not overlap x"}, call(x, w, with(out, [&](TensorView& t) { t.data = x.data; t.dtype = x.dtype; }), {})},
      {"out overlaps w", {"out must not overlap w"}, call(x, w, with(out, [&](TensorView& t) { t.data = w.data; }), {})},
  };
  ASSERT_GE(cases.size(), 25u);
  for (const BadCase& bc : cases) {
    bool threw = false;
    try {
      bc.call();
    } catch (const Error& e) {
      threw = true;
      std::string msg = e.what();
      EXPECT_NE(msg.find("gemm_a16w16"), std::string::npos) << bc.what << ": " << msg;
      for (const auto& needle : bc.needles) {
        EXPECT_NE(msg.find(needle), std::string::npos) << bc.what << ": '" << needle << "' not in: " << msg;
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << bc.what << ": threw a non-tgemm exception: " << e.what();
      threw = true;
    }
    EXPECT_TRUE(threw) << bc.what << ": no error raised";
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::string err = run_and_compare(d, [&] { gemm_a16w16(x, w, out, d.options(), nullptr); });
  EXPECT_TRUE(err.empty()) << "a good call after the bad ones: " << err;
}

}  // namespace
}  // namespace tgemm::test
