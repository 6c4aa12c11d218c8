// The cutlass backend (src/backends/cutlass, kernels/sm90/sm90_gemm_cutlass.cuh) on the real GPU:
// every kernel instance of the build against the fp32 reference kernel, each of its epilogue
// variants (bias on/off, every activation, alpha, beta * c separate and in place) and each of its
// run-time variants (raster order, swizzle, stream-K decompositions), on shapes with tails (M, N, K
// not multiples of the tile, M = 1); c with its own leading dimension; refusals (misaligned views,
// strides not a multiple of 16 bytes, K or N not a multiple of 8, other epilogues and dtypes,
// M = 0); bit-identical reruns of stream-K, CUDA-graph replays; the backend's from_row, candidates
// and default rule. Cutlass.SanitizerSubset is a small slice for compute-sanitizer
// (--gtest_filter='*Sanitizer*').
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/cutlass/cutlass_backend.h"
#include "core/registry.h"
#include "core/table.h"
#include "core/validate.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

using cutlass_sm90::Decomposition;
using cutlass_sm90::EpilogueKind;
using cutlass_sm90::Raster;
using cutlass_sm90::TileScheduler;

const CutlassSolutionInfo& info(const SolutionPtr& s) {
  const CutlassSolutionInfo* i = cutlass_solution_info(*s);
  EXPECT_NE(i, nullptr) << s->name();
  static const CutlassSolutionInfo none;
  return i != nullptr ? *i : none;
}

const Backend& cutlass_backend() {
  static Registry registry = [] {
    Registry r;
    register_cutlass_solutions(r);
    return r;
  }();
  return *registry.find("cutlass");
}

const std::vector<SolutionPtr>& all_solutions() {
  static const std::vector<SolutionPtr> all = cutlass_solutions();
  return all;
}

// The solutions of each instance, in registration order.
std::map<std::string, std::vector<SolutionPtr>> by_instance() {
  std::map<std::string, std::vector<SolutionPtr>> out;
  for (const SolutionPtr& s : all_solutions()) out[info(s).instance].push_back(s);
  return out;
}

bool is_base_runtime(const CutlassSolutionInfo& i) {
  return i.runtime.raster == Raster::kAlongM && i.runtime.swizzle == 1 &&
         i.runtime.decomposition != Decomposition::kSplitK;
}

// A case for solution s: its dtypes and its epilogue.
A16W16Case case_for(const CutlassSolutionInfo& i, std::int64_t m, std::int64_t n, std::int64_t k) {
  A16W16Case c;
  c.m = m;
  c.n = n;
  c.k = k;
  c.in = i.config.in;
  c.out = i.config.out;
  c.bias = i.bias;
  c.bias_type = i.config.in;
  c.activation = i.activation;
  return c;
}

std::string run_solution(A16W16Data& d, const Solution& s) {
  GemmProblem p = d.problem();
  if (!s.can_implement(p)) return s.name() + " refuses " + d.c.describe();
  DeviceBuffer ws(std::max<std::size_t>(s.workspace_size(p), 256));
  std::string err = run_and_compare(d, [&] { s.run(p, d.args(), Workspace{ws.data(), ws.bytes()}, nullptr); });
  return err.empty() ? "" : s.name() + ": " + err;
}

TEST(Cutlass, NamesAreUniqueAndDescribeTheSolution) {
  const std::vector<SolutionPtr>& all = all_solutions();
  std::vector<std::string> names;
  for (const SolutionPtr& s : all) {
    const CutlassSolutionInfo& i = info(s);
    EXPECT_EQ(s->libtype(), "cutlass");
    EXPECT_EQ(s->name().rfind("cutlass:sm90_", 0), 0u) << s->name();
    const std::string tile = "_" + std::to_string(i.config.tile_m) + "x" + std::to_string(i.config.tile_n) + "x" +
                             std::to_string(i.config.tile_k) + "_c" + std::to_string(i.config.cluster_m) + "x" +
                             std::to_string(i.config.cluster_n) + "_";
    EXPECT_NE(s->name().find(tile), std::string::npos) << s->name();
    const std::string tail = std::string(i.runtime.raster == Raster::kAlongM ? "_rM" : "_rN") + "_sw" +
                             std::to_string(i.runtime.swizzle);
    EXPECT_EQ(s->name().substr(s->name().size() - tail.size()), tail) << s->name();
    const bool lincomb = !i.bias && i.activation == Activation::kNone;
    EXPECT_EQ(lincomb, i.config.epilogue == EpilogueKind::kLinComb) << s->name();
    EXPECT_EQ(s->name().find("_lincomb_") != std::string::npos, lincomb) << s->name();
    EXPECT_EQ(s->name().find("_bias_") != std::string::npos, i.bias) << s->name();
    if (i.activation != Activation::kNone)
      EXPECT_NE(s->name().find("_" + std::string(activation_name(i.activation)) + "_r"), std::string::npos)
          << s->name();
    if (i.runtime.decomposition == Decomposition::kSplitK) {
      EXPECT_NE(s->name().find("_streamk_splitk" + std::to_string(i.runtime.splits) + "_"), std::string::npos);
      EXPECT_EQ(s->split_k(), i.runtime.splits);
    }
    names.push_back(s->name());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "duplicate solution name";
  // Every instance is registered with every raster x swizzle.
  for (const auto& [instance, sols] : by_instance()) {
    std::set<std::pair<int, int>> seen;
    for (const SolutionPtr& s : sols) seen.insert({static_cast<int>(info(s).runtime.raster), info(s).runtime.swizzle});
    EXPECT_EQ(seen.size(), 8u) << instance;
  }
}

TEST(Cutlass, InstanceNamesMatchTheGenerator) {
  std::vector<cutlass_sm90::CutlassKernel> kernels = cutlass_sm90::cutlass_kernels();
  for (const auto& k : kernels) EXPECT_EQ(cutlass_sm90::instance_name(k.config), k.generated_name);
  EXPECT_EQ(by_instance().size(), kernels.size());
}

// The loaded images: sm_90a SASS, no local memory (spills), shared memory within Hopper's 227 KB.
TEST(Cutlass, ImagesAreSm90aWithoutSpills) {
  TGEMM_REQUIRE_GPU();
  for (const auto& [instance, sols] : by_instance()) {
    const cutlass_sm90::CutlassKernelInfo k = cutlass_kernel_info(*sols.front());
    EXPECT_EQ(k.binary_version / 10, 9) << instance;
    EXPECT_EQ(k.local_bytes, 0) << instance << " uses local memory (" << k.registers << " registers)";
    EXPECT_LE(k.smem_bytes, 227 * 1024) << instance;
    EXPECT_EQ(k.threads, 384) << instance;
    RecordProperty(instance, std::to_string(k.registers) + " regs, " + std::to_string(k.smem_bytes) + " B smem");
  }
}

// Every instance: each epilogue variant at the base run-time settings on two shapes, then each
// other run-time variant (raster, swizzle, split-K) once on a shape with several tiles each way.
TEST(Cutlass, EveryInstanceMatchesReference) {
  TGEMM_REQUIRE_GPU();
  // (M, N, K): tails in every dimension (M = 1, 7, 129, 1000; N = 64, 200, 1000; K = 64, 1008).
  const std::int64_t shapes[][3] = {{1, 64, 64},     {7, 200, 1008},  {129, 200, 64},
                                    {1000, 64, 1008}, {129, 1000, 1008}, {1000, 200, 4096}};
  int cases = 0, failed = 0, v = 0;
  for (const auto& [instance, sols] : by_instance()) {
    for (const SolutionPtr& s : sols) {
      const CutlassSolutionInfo& i = info(s);
      std::vector<int> picks;
      if (is_base_runtime(i)) {
        picks = {v % 6, (v + 3) % 6};
      } else if (i.bias == info(sols.front()).bias && i.activation == info(sols.front()).activation) {
        picks = {-1};  // the other run-time variants: once each, with the instance's first epilogue
      }
      for (int pick : picks) {
        A16W16Case c = pick < 0 ? case_for(i, 1000, 1000, 1008)
                                : case_for(i, shapes[pick][0], shapes[pick][1], shapes[pick][2]);
        // alpha, beta * c (separate or in place) and padded leading dimensions in turn; pads
        // keep rows at multiples of 16 bytes.
        if (v % 3 == 1) c.alpha = 0.75f;
        if (v % 4 >= 2) {
          c.beta = v % 8 < 4 ? 1.0f : -0.5f;
          c.c_in_place = v % 2 == 0;
        }
        if (v % 5 == 0) c.lda_pad = 8;
        if (v % 7 == 0) c.ldb_pad = 16;
        if (v % 3 == 2) c.ldo_pad = 8;
        A16W16Data d = make_a16w16(c, 1000 + static_cast<std::uint64_t>(v));
        std::string err = run_solution(d, *s);
        if (!err.empty()) {
          ++failed;
          ADD_FAILURE() << err;
        }
        ++cases;
        ++v;
      }
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << cases << " cases wrong";
  EXPECT_GT(cases, 0);
  RecordProperty("cases", cases);
}

// c with a leading dimension of its own (neither N nor out's).
TEST(Cutlass, CHasItsOwnLeadingDimension) {
  TGEMM_REQUIRE_GPU();
  const std::int64_t m = 129, n = 200, k = 1008, ldo = n + 8, ldc = n + 24;
  for (const auto& [instance, sols] : by_instance()) {
    const SolutionPtr& s = sols.front();
    const CutlassSolutionInfo& i = info(s);
    const std::size_t es_in = dtype_size(i.config.in), es_out = dtype_size(i.config.out);
    DeviceBuffer x(m * k * es_in), w(n * k * es_in), out(m * ldo * es_out), c(m * ldc * es_out), bias(n * es_in);
    fill_uniform(x.data(), i.config.in, m * k, 1, -1, 1, nullptr);
    fill_uniform(w.data(), i.config.in, n * k, 2, -1, 1, nullptr);
    fill_uniform(c.data(), i.config.out, m * ldc, 3, -1, 1, nullptr);
    fill_uniform(bias.data(), i.config.in, n, 4, -1, 1, nullptr);
    TensorView xv = TensorView::contiguous(x.data(), i.config.in, {m, k});
    TensorView wv = TensorView::contiguous(w.data(), i.config.in, {n, k});
    TensorView ov = TensorView::strided(out.data(), i.config.out, {m, n}, {ldo, 1});
    TensorView cv = TensorView::strided(c.data(), i.config.out, {m, n}, {ldc, 1});
    TensorView bv = TensorView::contiguous(bias.data(), i.config.in, {n});
    GemmOptions o;
    o.alpha = 1.5f;
    o.beta = -0.75f;
    o.c = &cv;
    o.activation = i.activation;
    if (i.bias) o.bias = &bv;
    GemmCall call = validate_a16w16(xv, wv, ov, o);
    int device = 0;
    cudaGetDevice(&device);
    call.problem.device = device;
    ASSERT_TRUE(s->can_implement(call.problem)) << s->name();
    DeviceBuffer ws(std::max<std::size_t>(s->workspace_size(call.problem), 256));
    std::string err = run_and_compare_views(xv, wv, ov, o, [&] {
      s->run(call.problem, call.args, Workspace{ws.data(), ws.bytes()}, nullptr);
    });
    EXPECT_TRUE(err.empty()) << s->name() << ": " << err;
  }
}

TEST(Cutlass, RefusesWhatItCannotCompute) {
  TGEMM_REQUIRE_GPU();
  int device = 0;
  cudaGetDevice(&device);
  for (const auto& [instance, sols] : by_instance()) {
    const SolutionPtr& s = sols.front();
    const CutlassSolutionInfo& i = info(s);
    A16W16Case base = case_for(i, 33, 64, 256);
    base.lda_pad = 8;
    base.ldb_pad = 8;
    base.ldo_pad = 8;
    base.beta = 0.5f;
    A16W16Data d = make_a16w16(base, 9);
    const std::int64_t lda = base.k + 8, ldb = base.k + 8, ldo = base.n + 8;
    const std::size_t es_in = dtype_size(i.config.in), es_out = dtype_size(i.config.out);
    auto problem = [&](const TensorView& x, const TensorView& w, const TensorView& out, const GemmOptions& o) {
      GemmProblem p = validate_a16w16(x, w, out, o).problem;
      p.device = device;
      return p;
    };
    auto x_view = [&](std::int64_t offset, std::int64_t k, std::int64_t ld) {
      return TensorView::strided(d.x.as<char>() + offset * es_in, i.config.in, {base.m, k}, {ld, 1});
    };
    auto w_view = [&](std::int64_t offset, std::int64_t n, std::int64_t k, std::int64_t ld) {
      return TensorView::strided(d.w.as<char>() + offset * es_in, i.config.in, {n, k}, {ld, 1});
    };
    auto o_view = [&](std::int64_t offset, std::int64_t n, std::int64_t ld) {
      return TensorView::strided(d.out.as<char>() + offset * es_out, i.config.out, {base.m, n}, {ld, 1});
    };
    const GemmOptions opts = d.options();
    const TensorView x = x_view(0, base.k, lda), w = w_view(0, base.n, base.k, ldb), out = o_view(0, base.n, ldo);
    // The control: accepted.
    const GemmProblem good = problem(x, w, out, opts);
    ASSERT_TRUE(s->can_implement(good)) << s->name();
    // Base pointers off a 16-byte boundary (views one element in).
    EXPECT_FALSE(s->can_implement(problem(x_view(1, base.k - 8, lda), w_view(0, base.n, base.k - 8, ldb), out, opts)))
        << s->name();
    EXPECT_FALSE(s->can_implement(problem(x_view(0, base.k - 8, lda), w_view(1, base.n, base.k - 8, ldb), out, opts)))
        << s->name();
    {
      // out one element in (N - 8 columns so the view stays inside the buffer); c is checked
      // against out's shape, so it is left out here.
      TensorView short_bias = TensorView::contiguous(d.bias.data(), i.config.in, {base.n - 8});
      GemmOptions o = opts;
      o.beta = 0.0f;
      o.c = nullptr;
      if (i.bias) o.bias = &short_bias;
      const TensorView w8 = w_view(0, base.n - 8, base.k, ldb);
      EXPECT_TRUE(s->can_implement(problem(x, w8, o_view(0, base.n - 8, ldo), o))) << s->name();
      EXPECT_FALSE(s->can_implement(problem(x, w8, o_view(1, base.n - 8, ldo), o))) << s->name();
    }
    {
      GemmProblem p = good;
      p.align_c = 8;
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " misaligned c";
    }
    if (i.bias) {
      GemmProblem p = good;
      p.align_bias = 2;
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " misaligned bias";
      p = good;
      p.bias_type = DType::kFloat32;
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " fp32 bias";
    }
    // Row strides that are not a multiple of 16 bytes.
    EXPECT_FALSE(s->can_implement(problem(x_view(0, base.k, base.k + 4), w, out, opts))) << s->name();
    EXPECT_FALSE(s->can_implement(problem(x, w_view(0, base.n, base.k, base.k + 4), out, opts))) << s->name();
    {
      GemmProblem p = good;
      p.ldo = base.n + 2;
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " ldo";
      p = good;
      p.ldc = base.n + 2;
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " ldc";
    }
    // K or N not a multiple of 8 (16 bytes of the contiguous extent; rows still padded).
    EXPECT_FALSE(s->can_implement(problem(x_view(0, base.k - 4, lda), w_view(0, base.n, base.k - 4, ldb), out, opts)))
        << s->name();
    {
      GemmProblem p = good;
      p.n = base.n - 2;  // fp32 rows need N % 4, 16-bit rows and the bias N % 8
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " N % 8";
    }
    // Empty problems are the dispatcher's (it launches nothing).
    for (int dim = 0; dim < 3; ++dim) {
      GemmProblem p = good;
      (dim == 0 ? p.m : dim == 1 ? p.n : p.k) = 0;
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " empty dim " << dim;
    }
    // Another epilogue than the solution's.
    {
      GemmProblem p = good;
      p.epilogue = i.bias ? Epilogue::kNone : Epilogue::kBias;
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " bias mismatch";
      p = good;
      p.activation = i.activation == Activation::kGelu ? Activation::kGeluTanh : Activation::kGelu;
      EXPECT_FALSE(s->can_implement(p)) << s->name() << " activation mismatch";
    }
    // Other dtypes and families.
    GemmProblem q = good;
    q.a_type = q.b_type = DType::kFloat8E4M3;
    EXPECT_FALSE(s->can_implement(q));
    q = good;
    q.b_type = good.a_type == DType::kBFloat16 ? DType::kFloat16 : DType::kBFloat16;
    EXPECT_FALSE(s->can_implement(q));
    q = good;
    q.out_type = good.out_type == DType::kFloat32 ? good.a_type : DType::kFloat32;
    EXPECT_FALSE(s->can_implement(q));
    q = good;
    q.scale_ab = true;
    EXPECT_FALSE(s->can_implement(q));
    q = good;
    q.bpreshuffle = true;
    EXPECT_FALSE(s->can_implement(q));
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Cutlass, FromRowFindsSolutionsByName) {
  const Backend& b = cutlass_backend();
  GemmProblem p;
  for (const SolutionPtr& s : all_solutions()) {
    TableRow row;
    row.libtype = "cutlass";
    row.kernel_name = s->name();
    std::string why;
    SolutionPtr found = b.from_row(row, p, why);
    ASSERT_NE(found, nullptr) << s->name() << ": " << why;
    EXPECT_EQ(found->name(), s->name());
  }
  TableRow row;
  row.libtype = "cutlass";
  row.kernel_name = "cutlass:sm90_bf16_bf16out_96x128x64_c1x1_coop_persistent_lincomb_rM_sw1";
  std::string why;
  EXPECT_EQ(b.from_row(row, p, why), nullptr);
  EXPECT_NE(why.find(row.kernel_name), std::string::npos) << why;
}

TEST(Cutlass, CandidatesImplementTheProblemOnce) {
  TGEMM_REQUIRE_GPU();
  const Backend& b = cutlass_backend();
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{4096, 4096, 4096}, {1, 4096, 4096}, {200, 1024, 16384}}) {
    A16W16Case c;
    c.m = m;
    c.n = n;
    c.k = k;
    A16W16Data d = make_a16w16(c, 3);
    const GemmProblem p = d.problem();
    std::vector<SolutionPtr> cands = b.candidates(p);
    std::set<std::string> names;
    for (const SolutionPtr& s : cands) {
      EXPECT_TRUE(s->can_implement(p)) << s->name();
      EXPECT_TRUE(names.insert(s->name()).second) << s->name();
      EXPECT_EQ(info(s).config.epilogue, EpilogueKind::kLinComb) << s->name();
    }
    int implementing = 0;
    for (const SolutionPtr& s : all_solutions()) implementing += s->can_implement(p);
    EXPECT_LE(cands.size(), static_cast<std::size_t>(implementing));
    if (implementing > 0) EXPECT_FALSE(cands.empty()) << c.describe();
  }
}

TEST(Cutlass, DefaultOnlyForTheErfGelu) {
  TGEMM_REQUIRE_GPU();
  const Backend& b = cutlass_backend();
  const Activation others[] = {Activation::kNone, Activation::kGeluTanh, Activation::kRelu};
  for (Activation a : others) {
    A16W16Case c;
    c.m = 512;
    c.n = 1024;
    c.k = 1024;
    c.bias = true;
    c.activation = a;
    A16W16Data d = make_a16w16(c, 4);
    EXPECT_EQ(b.default_solution(d.problem()), nullptr) << c.describe();
  }
  // Grids of at least half a wave of 128x128 tiles on 132 SMs.
  const std::int64_t shapes[][3] = {{1000, 2048, 1008}, {4096, 4096, 1024}};
  const DType outs[] = {DType::kBFloat16, DType::kFloat32};
  int i = 0;
  for (const auto& sh : shapes) {
    for (DType out : outs) {
      A16W16Case c;
      c.m = sh[0];
      c.n = sh[1];
      c.k = sh[2];
      c.out = out;
      c.bias = i % 2 == 0;
      c.activation = Activation::kGelu;
      A16W16Data d = make_a16w16(c, 5 + static_cast<std::uint64_t>(i++));
      SolutionPtr s = b.default_solution(d.problem());
      bool any = false;
      for (const SolutionPtr& t : all_solutions()) any = any || t->can_implement(d.problem());
      if (!any) {
        EXPECT_EQ(s, nullptr);
        continue;
      }
      ASSERT_NE(s, nullptr) << c.describe();
      EXPECT_EQ(s->libtype(), "cutlass");
      std::string err = run_solution(d, *s);
      EXPECT_TRUE(err.empty()) << err;
    }
  }
  // M <= 64 (the skinny kernels or the staged path), and M > 64 with fewer 128x128 tiles than
  // half the SMs: no fused default (cuBLASLt staged wins there).
  const std::int64_t declined[][3] = {{1, 4096, 4096}, {16, 4096, 4096}, {64, 4096, 4096}, {512, 576, 1024}};
  for (const auto& sh : declined) {
    A16W16Case c;
    c.m = sh[0];
    c.n = sh[1];
    c.k = sh[2];
    c.bias = true;
    c.activation = Activation::kGelu;
    A16W16Data d = make_a16w16(c, 29);
    EXPECT_EQ(b.default_solution(d.problem()), nullptr) << c.describe();
  }
}

// The rule picks by the last wave's fill (132 SMs): 128x256 c2x1 when its grid is >= 80%
// efficient, else the less wasteful of it and 128x128; that pick only when it is >= 80%
// efficient, else no fused default (the staged path: cuBLASLt, then the pass); and the staged
// path for every problem with K > 4096.
TEST(Cutlass, DefaultRulePicksByWaveFill) {
  TGEMM_REQUIRE_GPU();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  if (sms != 132) GTEST_SKIP() << "the expected picks are for 132 SMs, this GPU has " << sms;
  const Backend& b = cutlass_backend();
  struct Want {
    std::int64_t m, n, k;
    int tile_n, cluster_m;
  };
  // 512x28672: 448 tiles of 128x256 (0.85 of 4 waves); 512x10240: 160 of them (0.61) against 320
  // of 128x128 (0.81); 8192x576: 128x256 pads N to 768 (0.73 x 0.75) against 128x128 (0.81 x 0.9
  // = 0.73 < 0.8: staged, tile_n 0); 512x6144: 96 tiles of 128x256 (< 1 wave) and 192 of 128x128
  // (0.73: staged).
  // 512x28672x8192: the first pick again, but K > 4096 (staged).
  for (const Want& w : {Want{512, 28672, 4096, 256, 2}, Want{512, 10240, 4096, 128, 1}, Want{8192, 576, 4096, 0, 0},
                        Want{512, 6144, 4096, 0, 0}, Want{512, 28672, 8192, 0, 0}}) {
    A16W16Case c;
    c.m = w.m;
    c.n = w.n;
    c.k = w.k;
    c.bias = true;
    c.activation = Activation::kGelu;
    A16W16Data d = make_a16w16(c, 31);
    SolutionPtr s = b.default_solution(d.problem());
    if (w.tile_n == 0) {
      EXPECT_EQ(s, nullptr) << c.describe() << " -> " << s->name();
      continue;
    }
    ASSERT_NE(s, nullptr) << c.describe();
    EXPECT_EQ(info(s).config.tile_n, w.tile_n) << c.describe() << " -> " << s->name();
    EXPECT_EQ(info(s).config.cluster_m, w.cluster_m) << c.describe() << " -> " << s->name();
    EXPECT_EQ(info(s).config.scheduler, TileScheduler::kPersistent) << s->name();
  }
}

// 300x5632: 3 x 44 = 132 tiles of 128x128, one full wave (the rule fuses); 300x3072 would be 72
// tiles (0.55 of a wave) and takes the staged path.
TEST(Cutlass, PublicApiFusesTheErfGeluByDefault) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 300;
  c.n = 5632;
  c.k = 1024;
  c.bias = true;
  c.activation = Activation::kGelu;
  A16W16Data d = make_a16w16(c, 15);
  DispatchInfo di = describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options());
  bool any = false;
  for (const SolutionPtr& t : all_solutions()) any = any || t->can_implement(d.problem());
  if (di.level == "default" && any) EXPECT_EQ(di.libtype, "cutlass") << di.kernel_name;
  std::string err = run_and_compare(d, [&] { gemm_gelu(d.xv, d.wv, &d.bv, d.ov, false, nullptr); });
  EXPECT_TRUE(err.empty()) << err << " [" << di.kernel_name << "]";
}

std::vector<SolutionPtr> stream_k_solutions() {
  std::vector<SolutionPtr> out;
  for (const SolutionPtr& s : all_solutions()) {
    const CutlassSolutionInfo& i = info(s);
    if (i.config.scheduler == TileScheduler::kStreamK && i.runtime.raster == Raster::kAlongM &&
        i.runtime.swizzle == 1 && (i.config.epilogue == EpilogueKind::kLinComb || (i.bias && i.activation == Activation::kNone)))
      out.push_back(s);
  }
  return out;
}

TEST(Cutlass, StreamKIsBitIdenticalRunToRun) {
  TGEMM_REQUIRE_GPU();
  for (const SolutionPtr& s : stream_k_solutions()) {
    const CutlassSolutionInfo& i = info(s);
    A16W16Case c = case_for(i, 200, 256, 16384);
    A16W16Data d = make_a16w16(c, 5);
    GemmProblem p = d.problem();
    if (!s->can_implement(p)) continue;  // a split count whose workspace is over the limit
    DeviceBuffer ws(std::max<std::size_t>(s->workspace_size(p), 256));
    const std::size_t bytes = static_cast<std::size_t>(c.m * c.n) * dtype_size(c.out);
    std::vector<char> first(bytes), again(bytes);
    s->run(p, d.args(), Workspace{ws.data(), ws.bytes()}, nullptr);
    copy_to_host(first.data(), d.out.data(), bytes);
    for (int rep = 0; rep < 3; ++rep) {
      fill_nan(d.out.data(), c.out, c.m * c.n, nullptr);
      s->run(p, d.args(), Workspace{ws.data(), ws.bytes()}, nullptr);
      copy_to_host(again.data(), d.out.data(), bytes);
      ASSERT_EQ(std::memcmp(first.data(), again.data(), bytes), 0) << s->name() << " differs on rerun " << rep;
    }
    EXPECT_TRUE(run_solution(d, *s).empty()) << s->name();
  }
}

TEST(Cutlass, ReplaysInCudaGraph) {
  TGEMM_REQUIRE_GPU();
  std::vector<SolutionPtr> picked = stream_k_solutions();
  for (const SolutionPtr& s : all_solutions())
    if (info(s).config.cluster_m * info(s).config.cluster_n > 1 && is_base_runtime(info(s))) {
      picked.push_back(s);
      break;
    }
  for (const SolutionPtr& s : picked) {
    A16W16Case c = case_for(info(s), 129, 1000, 4096);
    A16W16Data d = make_a16w16(c, 6);
    GemmProblem p = d.problem();
    if (!s->can_implement(p)) continue;
    DeviceBuffer ws(std::max<std::size_t>(s->workspace_size(p), 256));
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    // One eager run first: one-time device setup (shared-memory limit) happens outside capture.
    s->run(p, d.args(), Workspace{ws.data(), ws.bytes()}, reinterpret_cast<Stream>(stream));
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    s->run(p, d.args(), Workspace{ws.data(), ws.bytes()}, reinterpret_cast<Stream>(stream));
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int rep = 0; rep < 2; ++rep) {
      std::string err = run_and_compare(d, [&] {
        cudaGraphLaunch(exec, stream);
        cudaStreamSynchronize(stream);
      });
      EXPECT_TRUE(err.empty()) << s->name() << " replay " << rep << ": " << err;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

// A few solutions that between them reach every code path (pingpong and cooperative, a 2-CTA
// cluster, stream-K and split-K with their workspace, the bias/activation epilogue and beta * c in
// place) on small odd shapes. For compute-sanitizer:
//   compute-sanitizer --tool memcheck build/release/tests/gpu/test_gpu_cutlass --gtest_filter='*Sanitizer*'
TEST(Cutlass, SanitizerSubset) {
  TGEMM_REQUIRE_GPU();
  std::vector<SolutionPtr> picked;
  auto pick = [&](auto pred) {
    for (const SolutionPtr& s : all_solutions())
      if (pred(info(s))) {
        picked.push_back(s);
        return;
      }
  };
  using Info = CutlassSolutionInfo;
  pick([](const Info& i) { return i.config.schedule == cutlass_sm90::Schedule::kPingpong && is_base_runtime(i); });
  pick([](const Info& i) {
    return i.config.scheduler == TileScheduler::kStreamK && i.runtime.decomposition == Decomposition::kStreamK &&
           i.bias && i.activation == Activation::kGelu && i.runtime.swizzle == 1;
  });
  pick([](const Info& i) {
    return i.runtime.decomposition == Decomposition::kSplitK && i.runtime.splits == 2 && !i.bias &&
           i.activation == Activation::kRelu;
  });
  pick([](const Info& i) { return i.config.cluster_m * i.config.cluster_n > 1 && is_base_runtime(i); });
  ASSERT_GE(picked.size(), 2u);
  const std::int64_t shapes[][3] = {{7, 64, 64}, {129, 200, 1008}};
  int cases = 0;
  for (const SolutionPtr& s : picked) {
    for (std::size_t si = 0; si < std::size(shapes); ++si) {
      A16W16Case c = case_for(info(s), shapes[si][0], shapes[si][1], shapes[si][2]);
      c.beta = si == 1 ? 0.5f : 0.0f;
      c.c_in_place = true;
      A16W16Data d = make_a16w16(c, 40 + static_cast<std::uint64_t>(si));
      std::string err = run_solution(d, *s);
      EXPECT_TRUE(err.empty()) << err;
      ++cases;
    }
  }
  RecordProperty("cases", cases);
}

}  // namespace
}  // namespace tgemm::test
