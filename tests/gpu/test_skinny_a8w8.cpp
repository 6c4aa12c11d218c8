// The skinny backend's a8w8 variants (FP8 e4m3 and INT8: the GEMV and the weight-as-B MMA,
// kernels/sm90/sm90_skinny_{gemv,mma_weight_b}.cuh) on the real GPU: every variant against the
// fp32 reference of the dequantized operands for every M it claims, cycled over odd N, K tails of
// its k-step (K a multiple of 16, the a8w8 rule), padded row strides, the four scale recipes, bias
// none / out's dtype / fp32 and every output dtype, outputs NaN-poisoned; bit-identical reruns of
// the split variants; a CUDA-graph replay with scales changed between replays (read on the
// device); refusals; the backend's candidates, from_row and default for a8w8 problems; rows of an
// a8w8 table naming them dispatch through gemm_a8w8.
// SkinnyA8W8.SanitizerSubset is the slice for compute-sanitizer (--gtest_filter='*Sanitizer*').
//
// Operands as tests/gpu/test_gemm_a8w8.cpp draws them (int8 in [-127, 127], e4m3 codes of
// magnitude below 2, scales in [0.5, 1.5) / 127 or / 2), with its tolerance: gemm_tolerance's atol
// times 2.25 for the operand bound, plus fp8_accumulation_atol for FP8 (the tensor cores' reduced
// accumulation; the GEMV's fp32 FMAs stay well inside it).
#include <cuda_runtime.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "backends/skinny/skinny_backend.h"
#include "backends/skinny/skinny_names.h"
#include "core/check.h"
#include "core/registry.h"
#include "core/table.h"
#include "core/validate.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/host_test_util.h"
#include "tgemm/tgemm.h"
#include "tuner/tuned_file.h"

namespace tgemm::test {
namespace {

using skinny::SkinnyFamily;
using skinny::SkinnyOperands;

skinny::SkinnyVariant variant(const SolutionPtr& s) {
  const auto v = skinny::parse_skinny_name(s->name());
  EXPECT_TRUE(v.has_value()) << s->name();
  return v.value_or(skinny::SkinnyVariant{});
}

// The tokens a variant covers: the GEMV's m_max, 16 for the weight-as-B MMA.
int m_tile(const SolutionPtr& s) {
  const skinny::SkinnyVariant v = variant(s);
  return v.family == SkinnyFamily::kGemv ? v.gemv.m_max : skinny::MmaWeightBTile::m_tile;
}

DType in_type(SkinnyOperands o) { return o == SkinnyOperands::kInt8 ? DType::kInt8 : DType::kFloat8E4M3; }

// The FP8 and INT8 variants of this build, in registration order.
std::vector<SolutionPtr> eight_bit_solutions() {
  std::vector<SolutionPtr> out;
  for (const SolutionPtr& s : skinny_solutions())
    if (variant(s).operands != SkinnyOperands::k16Bit) out.push_back(s);
  return out;
}

const Backend& skinny_backend() {
  static Registry registry = [] {
    Registry r;
    register_skinny_solutions(r);
    return r;
  }();
  return *registry.find("skinny");
}

struct Case {
  std::int64_t m = 1, n = 1, k = 16;
  DType in = DType::kFloat8E4M3;
  DType out = DType::kBFloat16;
  bool x_per_token = false;
  bool w_per_channel = false;
  int bias = 0;              // 0 none, 1 out's dtype, 2 fp32
  std::int64_t lda_pad = 0;  // extra elements per x row (a multiple of 16)
  std::int64_t ldb_pad = 0;  // extra elements per w row (a multiple of 16)
  std::int64_t ldo_pad = 0;  // extra elements per out row
  std::string describe() const {
    return detail::concat("M=", m, " N=", n, " K=", k, " ", dtype_name(in), "->", dtype_name(out), " scales=",
                          format_scale_recipe(x_per_token ? ScaleGranularity::kRow : ScaleGranularity::kTensor,
                                              w_per_channel ? ScaleGranularity::kRow : ScaleGranularity::kTensor),
                          " bias=", bias, " pads=", lda_pad, "/", ldb_pad, "/", ldo_pad);
  }
};

struct Data {
  Case c;
  DeviceBuffer x, w, xs, ws, bias, out, ref;
  TensorView xv, wv, xsv, wsv, bv, ov;
  const TensorView* bias_view() const { return c.bias ? &bv : nullptr; }
  // The problem and arguments as gemm_a8w8 builds them, on the current device.
  GemmCall call() const {
    GemmCall call = validate_a8w8(xv, wv, xsv, wsv, ov, bias_view());
    int device = 0;
    cudaGetDevice(&device);
    call.problem.device = device;
    return call;
  }
};

std::uint8_t draw(std::mt19937_64& rng, DType in) {
  if (in == DType::kInt8)
    return static_cast<std::uint8_t>(static_cast<std::int8_t>(static_cast<int>(rng() % 255) - 127));
  const std::uint8_t exp = static_cast<std::uint8_t>(rng() % 8);  // |v| < 2
  return static_cast<std::uint8_t>(((rng() & 1) << 7) | (exp << 3) | (rng() & 7));
}

Data make(const Case& c, std::uint64_t seed) {
  Data d;
  d.c = c;
  std::mt19937_64 rng(seed);
  const std::int64_t lda = c.k + c.lda_pad, ldb = c.k + c.ldb_pad, ldo = c.n + c.ldo_pad;
  std::vector<std::uint8_t> hx(static_cast<std::size_t>(c.m * lda)), hw(static_cast<std::size_t>(c.n * ldb));
  for (auto& b : hx) b = draw(rng, c.in);
  for (auto& b : hw) b = draw(rng, c.in);
  d.x = DeviceBuffer(hx.size());
  d.w = DeviceBuffer(hw.size());
  copy_to_device(d.x.data(), hx.data(), hx.size());
  copy_to_device(d.w.data(), hw.data(), hw.size());
  const float unit = c.in == DType::kInt8 ? 1.0f / 127 : 0.5f;
  const std::int64_t xs_n = c.x_per_token ? c.m : 1, ws_n = c.w_per_channel ? c.n : 1;
  d.xs = DeviceBuffer(static_cast<std::size_t>(xs_n) * 4);
  d.ws = DeviceBuffer(static_cast<std::size_t>(ws_n) * 4);
  fill_uniform(d.xs.data(), DType::kFloat32, xs_n, seed * 3 + 1, 0.5f * unit, 1.5f * unit, nullptr);
  fill_uniform(d.ws.data(), DType::kFloat32, ws_n, seed * 3 + 2, 0.5f * unit, 1.5f * unit, nullptr);
  const DType bias_type = c.bias == 2 ? DType::kFloat32 : c.out;
  if (c.bias) {
    d.bias = DeviceBuffer(static_cast<std::size_t>(c.n) * dtype_size(bias_type));
    fill_uniform(d.bias.data(), bias_type, c.n, seed * 3 + 3, -1.0f, 1.0f, nullptr);
  }
  d.out = DeviceBuffer(static_cast<std::size_t>(c.m * ldo) * dtype_size(c.out));
  d.ref = DeviceBuffer(static_cast<std::size_t>(c.m * c.n) * 4);
  d.xv = TensorView::strided(d.x.data(), c.in, {c.m, c.k}, {lda, 1});
  d.wv = TensorView::strided(d.w.data(), c.in, {c.n, c.k}, {ldb, 1});
  d.xsv = c.x_per_token ? TensorView::contiguous(d.xs.data(), DType::kFloat32, {c.m, 1})
                        : TensorView::contiguous(d.xs.data(), DType::kFloat32, {1});
  d.wsv = c.w_per_channel ? TensorView::contiguous(d.ws.data(), DType::kFloat32, {c.n, 1})
                          : TensorView::contiguous(d.ws.data(), DType::kFloat32, {1});
  d.bv = TensorView::contiguous(d.bias.data(), bias_type, {c.n});
  d.ov = TensorView::strided(d.out.data(), c.out, {c.m, c.n}, {ldo, 1});
  return d;
}

// Compares out with the fp32 reference of the dequantized operands (test_gemm_a8w8's tolerance).
// Empty on success.
std::string compare(Data& d) {
  const Case& c = d.c;
  GemmCall call = d.call();
  const GemmArgs args = call.args;
  call.args.out = d.ref.data();
  run_reference_gemm_a8w8(call.problem, call.args, DType::kFloat32, c.n, nullptr);
  Tolerance tol = gemm_tolerance(c.out, c.k, c.bias != 0);
  tol.atol *= 2.25;
  tol.atol += fp8_accumulation_atol(call.problem, args, nullptr);
  const CompareResult r = compare_with_reference(d.out.data(), c.out, c.n + c.ldo_pad, d.ref.as<float>(), c.n, c.m, c.n,
                                                 tol.rtol, tol.atol, nullptr);
  if (r.bad == 0) return "";
  return detail::concat(c.describe(), ": ", r.bad, " of ", r.checked, " elements wrong (", r.nonfinite,
                        " non-finite), first at ", r.first_bad, ": ", r.first_bad_out, " vs ", r.first_bad_ref);
}

// Poisons out, runs s on the case, compares. Empty on success; a refusal is a failure.
std::string run_solution(Data& d, const Solution& s) {
  const GemmCall call = d.call();
  if (!s.can_implement(call.problem)) return s.name() + " refuses " + d.c.describe();
  fill_nan(d.out.data(), d.c.out, d.c.m * (d.c.n + d.c.ldo_pad), nullptr);
  DeviceBuffer ws(s.workspace_size(call.problem));
  s.run(call.problem, call.args, Workspace{ws.data(), ws.bytes()}, nullptr);
  const std::string err = compare(d);
  return err.empty() ? "" : s.name() + ": " + err;
}

// Every FP8 variant exists in every build (the CI build compiles the FP8 unit), in both families;
// the INT8 ones where the build has them (not the CI subset), as many as the FP8 ones.
TEST(SkinnyA8W8, BuildHasEightBitVariants) {
  int count[2][2] = {{0, 0}, {0, 0}};  // [fp8, int8][gemv, weight-as-B]
  for (const SolutionPtr& s : eight_bit_solutions()) {
    const skinny::SkinnyVariant v = variant(s);
    ASSERT_NE(v.family, SkinnyFamily::kMmaWeightA) << s->name();
    EXPECT_EQ(skinny::skinny_name(v), s->name());
    ++count[v.operands == SkinnyOperands::kInt8 ? 1 : 0][v.family == SkinnyFamily::kGemv ? 0 : 1];
  }
  EXPECT_EQ(count[0][0], 16) << "FP8 GEMV: 8 tiles, default and whole-pass splits";
  EXPECT_EQ(count[0][1], 24) << "FP8 weight-as-B: 6 tiles at split-K 1, 2, 4, 8";
  EXPECT_TRUE((count[1][0] == 0 && count[1][1] == 0) || (count[1][0] == 16 && count[1][1] == 24));
}

// Every variant, every M in 1..its tile; N, K (tails of the k-step: K % 64 != 0 and K % 128 != 0,
// and deep enough for split-K 8 x 8 warps), padded strides, the scale recipe, the bias and the
// output dtype cycle so that each variant meets each.
TEST(SkinnyA8W8, EveryVariantMatchesReference) {
  TGEMM_REQUIRE_GPU();
  const std::int64_t ns[] = {1, 7, 577, 1030};
  const std::int64_t ks[] = {16, 528, 1008, 4112, 8208};
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  const std::vector<SolutionPtr> all = eight_bit_solutions();
  ASSERT_FALSE(all.empty());
  int cases = 0, failed = 0;
  for (std::size_t vi = 0; vi < all.size(); ++vi) {
    const SolutionPtr& s = all[vi];
    const int v = static_cast<int>(vi);
    for (int m = 1; m <= m_tile(s); ++m) {
      Case c;
      c.m = m;
      c.n = ns[(m + v) % 4];
      c.k = ks[(m + 2 * v) % 5];
      c.in = in_type(variant(s).operands);
      c.out = outs[(m + v) % 3];
      const int recipe = (m + v / 2) % 4;
      c.x_per_token = (recipe & 1) != 0;
      c.w_per_channel = (recipe & 2) != 0;
      c.bias = (m + v / 3) % 3;
      c.lda_pad = (m + v) % 5 == 0 ? 16 : 0;
      c.ldb_pad = (m + v) % 7 == 0 ? 32 : 0;
      c.ldo_pad = (m + v) % 4 == 0 ? 3 : 0;
      Data d = make(c, static_cast<std::uint64_t>(v) * 131 + static_cast<std::uint64_t>(m));
      const std::string err = run_solution(d, *s);
      ++cases;
      if (!err.empty()) {
        ++failed;
        ADD_FAILURE() << err;
      }
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << cases << " cases wrong";
  RecordProperty("cases", cases);
}

// The split variants (weight-as-B at every split-K: warps and ranks summed in a fixed order; the
// GEMV's segments) give the same bits on every run.
TEST(SkinnyA8W8, VariantsAreBitIdenticalRunToRun) {
  TGEMM_REQUIRE_GPU();
  for (const SolutionPtr& s : eight_bit_solutions()) {
    Case c;
    c.m = m_tile(s);
    c.n = 577;
    c.k = 16400;
    c.in = in_type(variant(s).operands);
    c.out = DType::kFloat32;
    c.x_per_token = c.w_per_channel = true;
    c.bias = 2;
    Data d = make(c, 5);
    const GemmCall call = d.call();
    ASSERT_TRUE(s->can_implement(call.problem)) << s->name();
    const std::size_t bytes = static_cast<std::size_t>(c.m * c.n) * sizeof(float);
    std::vector<char> first(bytes), again(bytes);
    s->run(call.problem, call.args, Workspace{}, nullptr);
    copy_to_host(first.data(), d.out.data(), bytes);
    for (int rep = 0; rep < 2; ++rep) {
      fill_nan(d.out.data(), c.out, c.m * c.n, nullptr);
      s->run(call.problem, call.args, Workspace{}, nullptr);
      copy_to_host(again.data(), d.out.data(), bytes);
      ASSERT_EQ(std::memcmp(first.data(), again.data(), bytes), 0) << s->name() << " differs on rerun " << rep;
    }
  }
}

// Scales are read on the device at run time: a captured launch replayed after the scales (and x)
// changed computes with the new values. Per dtype, one GEMV and one split-K 8 weight-as-B variant.
TEST(SkinnyA8W8, ReplaysInCudaGraphWithNewScales) {
  TGEMM_REQUIRE_GPU();
  std::vector<SolutionPtr> picked;
  for (SkinnyOperands o : {SkinnyOperands::kFp8, SkinnyOperands::kInt8})
    for (SkinnyFamily f : {SkinnyFamily::kGemv, SkinnyFamily::kMmaWeightB})
      for (const SolutionPtr& s : eight_bit_solutions()) {
        const skinny::SkinnyVariant v = variant(s);
        if (v.operands == o && v.family == f && (f == SkinnyFamily::kGemv || v.split_k == 8)) {
          picked.push_back(s);
          break;
        }
      }
  ASSERT_GE(picked.size(), 2u);
  for (const SolutionPtr& s : picked) {
    for (bool per_row : {false, true}) {
      Case c;
      c.m = m_tile(s);
      c.n = 1030;
      c.k = 4112;
      c.in = in_type(variant(s).operands);
      c.x_per_token = c.w_per_channel = per_row;
      c.bias = 1;
      Data d = make(c, 6);
      const GemmCall call = d.call();
      ASSERT_TRUE(s->can_implement(call.problem)) << s->name();
      cudaStream_t stream = nullptr;
      ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
      s->run(call.problem, call.args, Workspace{}, reinterpret_cast<Stream>(stream));
      ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      for (int rep = 0; rep < 2; ++rep) {
        const float unit = c.in == DType::kInt8 ? 1.0f / 127 : 0.5f;
        const std::uint64_t seed = 100 + static_cast<std::uint64_t>(rep);
        fill_uniform(d.xs.data(), DType::kFloat32, per_row ? c.m : 1, seed, 2.0f * unit, 3.0f * unit, nullptr);
        fill_uniform(d.ws.data(), DType::kFloat32, per_row ? c.n : 1, seed + 7, 0.25f * unit, 0.5f * unit, nullptr);
        fill_nan(d.out.data(), c.out, c.m * c.n, nullptr);
        device_synchronize();
        ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        const std::string err = compare(d);
        EXPECT_TRUE(err.empty()) << s->name() << " replay " << rep << ": " << err;
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(stream);
    }
  }
}

TEST(SkinnyA8W8, RefusesWhatItCannotCompute) {
  TGEMM_REQUIRE_GPU();
  for (const SolutionPtr& s : eight_bit_solutions()) {
    Case c;
    c.m = m_tile(s);
    c.n = 64;
    c.k = 256;
    c.in = in_type(variant(s).operands);
    c.x_per_token = true;
    Data d = make(c, 9);
    const GemmProblem p = d.call().problem;
    EXPECT_TRUE(s->can_implement(p)) << s->name();  // the control
    GemmProblem q = p;
    q.m = c.m + 1;  // M above the tile
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.a_type = q.b_type = c.in == DType::kInt8 ? DType::kFloat8E4M3 : DType::kInt8;  // the other 8-bit dtype
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.b_type = DType::kFloat8E5M2;
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.family = OpFamily::kA16W16;  // a16w16 problems are the 16-bit variants'
    q.a_scale = q.b_scale = ScaleGranularity::kNone;
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.a_scale = ScaleGranularity::kNone;  // an a8w8 problem without x's scale
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.family = OpFamily::kA8W8Blockscale;  // 1x128 / 128x128 block scales are not read per row
    q.a_scale = q.b_scale = ScaleGranularity::kBlock;
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.k = 264;  // not whole 16-byte chunks
    q.lda = q.ldb = 264;
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.ldb = 264;  // w's rows not 16-byte multiples
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.align_b = 8;  // w 8 bytes past a 16-byte boundary
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.align_scales = 2;  // scale floats misaligned
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.activation = Activation::kGelu;  // gemm_a8w8 has no activation
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.unit_alpha = false;
    EXPECT_FALSE(s->can_implement(q)) << s->name();
    q = p;
    q.bpreshuffle = true;
    EXPECT_FALSE(s->can_implement(q)) << s->name();
  }
  // The 16-bit variants refuse every a8w8 problem.
  Case c;
  c.n = 64;
  c.k = 256;
  Data d = make(c, 10);
  const GemmProblem p = d.call().problem;
  for (const SolutionPtr& s : skinny_solutions())
    if (variant(s).operands == SkinnyOperands::k16Bit) EXPECT_FALSE(s->can_implement(p)) << s->name();
}

// Candidates of an a8w8 problem are its dtype's variants only (the GEMV's smallest fitting
// token count and the weight-as-B tiles); from_row finds every 8-bit name; the default rule leaves
// a8w8 to cuBLASLt (no region of it was measured for 8-bit operands), also where it takes a
// 16-bit problem of the same shape.
TEST(SkinnyA8W8, BackendCandidatesFromRowAndDefault) {
  TGEMM_REQUIRE_GPU();
  const Backend& b = skinny_backend();
  const std::vector<SolutionPtr> all = eight_bit_solutions();
  for (const SolutionPtr& s : all) {
    TableRow row;
    row.libtype = "skinny";
    row.kernel_name = s->name();
    std::string why;
    const SolutionPtr found = b.from_row(row, GemmProblem{}, why);
    ASSERT_NE(found, nullptr) << s->name() << ": " << why;
    EXPECT_EQ(found->name(), s->name());
  }
  for (DType in : {DType::kFloat8E4M3, DType::kInt8}) {
    const bool built =
        std::any_of(all.begin(), all.end(), [&](const SolutionPtr& s) { return in_type(variant(s).operands) == in; });
    for (std::int64_t m : {1, 3, 16, 17}) {
      for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{576, 7168}, {4096, 4096}}) {
        Case c;
        c.m = m;
        c.n = n;
        c.k = k;
        c.in = in;
        c.x_per_token = c.w_per_channel = true;
        Data d = make(c, 11);
        const GemmProblem p = d.call().problem;
        const std::vector<SolutionPtr> cands = b.candidates(p);
        int gemv = 0, weight_b = 0;
        for (const SolutionPtr& s : cands) {
          const skinny::SkinnyVariant v = variant(s);
          EXPECT_EQ(in_type(v.operands), in) << s->name();
          EXPECT_TRUE(s->can_implement(p)) << s->name();
          ++(v.family == SkinnyFamily::kGemv ? gemv : weight_b);
          if (v.family == SkinnyFamily::kGemv) EXPECT_EQ(v.gemv.m_max, m == 1 ? 1 : 4) << s->name();
        }
        EXPECT_EQ(gemv > 0, built && m <= 4) << dtype_name(in) << " M=" << m;
        EXPECT_EQ(weight_b > 0, built && m <= 16) << dtype_name(in) << " M=" << m;
        EXPECT_EQ(b.default_solution(p), nullptr) << c.describe();
      }
    }
  }
}

// Rows of the a8w8 table naming 8-bit variants (a GEMV at M = 1, a weight-as-B split at M = 16,
// per dtype of the build) are what gemm_a8w8 runs for their key and M, and compute within the
// tolerance: the path of the rows `tgemm tune` writes and `tgemm bench --family a8w8` times.
TEST(SkinnyA8W8, TableRowsDispatchThroughGemmA8W8) {
  TGEMM_REQUIRE_GPU();
  std::vector<SolutionPtr> picked;
  for (SkinnyOperands o : {SkinnyOperands::kFp8, SkinnyOperands::kInt8}) {
    for (SkinnyFamily f : {SkinnyFamily::kGemv, SkinnyFamily::kMmaWeightB}) {
      for (const SolutionPtr& s : eight_bit_solutions()) {
        const skinny::SkinnyVariant v = variant(s);
        if (v.operands == o && v.family == f && (f == SkinnyFamily::kMmaWeightB ? v.split_k == 2 : v.gemv.m_max == 1)) {
          picked.push_back(s);
          break;
        }
      }
    }
  }
  ASSERT_GE(picked.size(), 2u);
  TempDir dir;
  const std::string table = dir.file("a8w8_tuned_gemm.csv");
  std::vector<Data> data;
  std::vector<TableRow> rows;
  for (std::size_t i = 0; i < picked.size(); ++i) {
    const SolutionPtr& s = picked[i];
    Case c;
    c.m = m_tile(s) == 1 ? 1 : 16;
    c.n = 1030;
    c.k = 4112;
    c.in = in_type(variant(s).operands);
    c.x_per_token = c.w_per_channel = true;
    c.bias = 1;
    data.push_back(make(c, 60 + i));
    const GemmProblem p = data.back().call().problem;
    ASSERT_TRUE(s->can_implement(p)) << s->name();
    const DeviceInfo& dev = Runtime::get().platform().device_info(p.device);
    TableRow r;
    r.key = table_key(p, dev.arch, dev.sm_count);
    r.m = p.m;
    r.libtype = "skinny";
    r.split_k = s->split_k();
    r.kernel_name = s->name();
    r.us = 1.0;
    rows.push_back(r);
  }
  write_tuned_table(table, rows);
  ASSERT_EQ(::setenv("TGEMM_CONFIG_GEMM_A8W8", table.c_str(), 1), 0);
  Runtime::get().reload();
  for (std::size_t i = 0; i < data.size(); ++i) {
    Data& d = data[i];
    const DispatchInfo info = describe_gemm_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view());
    EXPECT_EQ(info.kernel_name, picked[i]->name()) << d.c.describe();
    fill_nan(d.out.data(), d.c.out, d.c.m * d.c.n, nullptr);
    gemm_a8w8(d.xv, d.wv, d.xsv, d.wsv, d.ov, d.bias_view(), nullptr);
    const std::string err = compare(d);
    EXPECT_TRUE(err.empty()) << picked[i]->name() << ": " << err;
  }
  ::unsetenv("TGEMM_CONFIG_GEMM_A8W8");
  Runtime::get().reload();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// One variant of each family and dtype, on odd shapes (N not a multiple of the CTA's rows, K not a
// multiple of the k-step, M between tiles), every split-K path of the weight-as-B kernel. Small
// enough for compute-sanitizer's memcheck, racecheck and synccheck:
//   compute-sanitizer --tool memcheck build/release/tests/gpu/test_gpu_skinny_a8w8 --gtest_filter='*Sanitizer*'
TEST(SkinnyA8W8, SanitizerSubset) {
  TGEMM_REQUIRE_GPU();
  std::vector<SolutionPtr> picked;
  for (SkinnyOperands o : {SkinnyOperands::kFp8, SkinnyOperands::kInt8}) {
    for (int want : {0, 1, 2, 8}) {  // 0: a GEMV of 4 tokens; else weight-as-B at that split
      for (const SolutionPtr& s : eight_bit_solutions()) {
        const skinny::SkinnyVariant v = variant(s);
        if (v.operands != o) continue;
        if ((want == 0 && v.family == SkinnyFamily::kGemv && v.gemv.m_max == 4) ||
            (want > 0 && v.family == SkinnyFamily::kMmaWeightB && v.split_k == want)) {
          picked.push_back(s);
          break;
        }
      }
    }
  }
  ASSERT_GE(picked.size(), 4u);
  int i = 0;
  for (const SolutionPtr& s : picked) {
    for (std::int64_t m : {std::int64_t{1}, std::int64_t{m_tile(s) == 4 ? 3 : 11}}) {
      Case c;
      c.m = m;
      c.n = 9;
      c.k = 1040;
      c.in = in_type(variant(s).operands);
      c.out = i % 2 == 0 ? DType::kBFloat16 : DType::kFloat32;
      c.x_per_token = i % 2 == 0;
      c.w_per_channel = true;
      c.bias = 1 + i % 2;
      Data d = make(c, static_cast<std::uint64_t>(40 + i++));
      const std::string err = run_solution(d, *s);
      EXPECT_TRUE(err.empty()) << err;
    }
  }
}

}  // namespace
}  // namespace tgemm::test
