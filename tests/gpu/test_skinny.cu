// The skinny backend (src/backends/skinny; kernels/sm90/sm90_skinny_{gemv,mma_weight_a,
// mma_weight_b}.cuh) on the real GPU: every variant of the three families against the fp32
// reference kernel for every M it claims, crossed (sampled) with odd N, K tails (including K not a
// multiple of 8 with padded rows), bias of the input and the output dtype, every output dtype, both
// input dtypes, and the fused activation epilogues; the GEMV's whole-pass splits; bit-identical
// reruns and CUDA-graph replays of the split variants; refusals (misaligned views, odd strides, M
// above the tile, other dtypes); the backend's from_row, candidates and default rule. The 16-bit
// variants only (sixteen_bit_solutions); the FP8 and INT8 ones: test_skinny_a8w8.cpp.
// Skinny.SanitizerSubset is a small, fast slice for compute-sanitizer (--gtest_filter='*Sanitizer*').
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "backends/skinny/skinny_backend.h"
#include "backends/skinny/skinny_kernels.h"
#include "backends/skinny/skinny_names.h"
#include "core/registry.h"
#include "core/table.h"
#include "core/validate.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

// The number after "_<key>" in a variant name ("m16" -> 16 for key "m"); -1 if absent.
int name_field(const std::string& name, const std::string& key) {
  const std::string tag = "_" + key;
  for (std::size_t pos = name.find(tag); pos != std::string::npos; pos = name.find(tag, pos + 1)) {
    std::size_t i = pos + tag.size();
    if (i < name.size() && name[i] >= '0' && name[i] <= '9') return std::stoi(name.substr(i));
  }
  return -1;
}

int m_tile(const SolutionPtr& s) { return name_field(s->name(), "m"); }
// The variant a solution's name describes (skinny_names.h); every skinny name parses.
skinny::SkinnyVariant variant(const SolutionPtr& s) {
  const auto v = skinny::parse_skinny_name(s->name());
  EXPECT_TRUE(v.has_value()) << s->name();
  return v.value_or(skinny::SkinnyVariant{});
}
// The GEMV on CUDA cores (m_tile is its token count).
bool is_gemv(const SolutionPtr& s) { return variant(s).family == skinny::SkinnyFamily::kGemv; }
// The weight-as-B MMA family (`_c<chunks>` its chunks a lane and k-step).
bool is_weight_b(const SolutionPtr& s) { return variant(s).family == skinny::SkinnyFamily::kMmaWeightB; }
// The variants of 16-bit inputs (a16w16): the FP8 and INT8 ones are test_skinny_a8w8.cpp's.
std::vector<SolutionPtr> sixteen_bit_solutions() {
  std::vector<SolutionPtr> out;
  for (const SolutionPtr& s : skinny_solutions())
    if (variant(s).operands == skinny::SkinnyOperands::k16Bit) out.push_back(s);
  return out;
}
// Candidate group of a variant: 0 the two MMA families (one smallest fitting M tile for both),
// 1 the GEMV (its smallest fitting token count).
int scheme(const SolutionPtr& s) { return is_gemv(s) ? 1 : 0; }

const Backend& skinny_backend() {
  static Registry registry = [] {
    Registry r;
    register_skinny_solutions(r);
    return r;
  }();
  return *registry.find("skinny");
}

// Leading-dimension padding that makes rows of K elements a multiple of 8 (16 bytes).
std::int64_t pad_to_8(std::int64_t k) { return (8 - k % 8) % 8; }

// A workspace of the size the solution asks for p (every skinny solution asks for none; the tests
// pass it as the dispatcher does).
struct TestWorkspace {
  DeviceBuffer buf;
  Workspace ws;
  TestWorkspace(const Solution& s, const GemmProblem& p) : buf(s.workspace_size(p)), ws{buf.data(), buf.bytes()} {}
};

std::string run_solution(A16W16Data& d, const Solution& s) {
  GemmProblem p = d.problem();
  if (!s.can_implement(p)) return s.name() + " refuses " + d.c.describe();
  TestWorkspace w(s, p);
  std::string err = run_and_compare(d, [&] { s.run(p, d.args(), w.ws, nullptr); });
  return err.empty() ? "" : s.name() + ": " + err;
}

// One case of a sweep: counted, and a wrong result or a refusal (run_solution's error) counted
// as failed and reported.
void tally(const std::string& err, int& cases, int& failed) {
  ++cases;
  if (err.empty()) return;
  ++failed;
  ADD_FAILURE() << err;
}

// Every solution's name parses to its family, tile and split (skinny_names.h), formats back to
// itself, and is unique.
TEST(Skinny, NamesAreUniqueAndComplete) {
  std::vector<SolutionPtr> all = skinny_solutions();
  ASSERT_FALSE(all.empty());
  std::vector<std::string> names;
  int families[3] = {0, 0, 0};
  for (const auto& s : all) {
    EXPECT_EQ(s->libtype(), "skinny");
    const auto v = skinny::parse_skinny_name(s->name());
    ASSERT_TRUE(v.has_value()) << s->name();
    EXPECT_EQ(skinny::skinny_name(*v), s->name());
    EXPECT_EQ(s->split_k(), v->split_k) << s->name();
    EXPECT_EQ(s->workspace_size(GemmProblem{}), 0u) << s->name();
    ++families[static_cast<int>(v->family)];
    names.push_back(s->name());
  }
  for (int f : families) EXPECT_GT(f, 0) << "a family without a solution";
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "duplicate variant name";
}

// Every variant, every M in 1..m_tile; the other dimensions cycle so that each variant meets
// every N, every K (tails: K % 32 != 0, K % 8 != 0, and K deep enough for the unguarded main
// loop even at split-K 8 x 8 warps), each bias mode, each output dtype and both input dtypes.
TEST(Skinny, EveryVariantMatchesReference) {
  TGEMM_REQUIRE_GPU();
  const std::int64_t ns[] = {1, 7, 577, 4099};
  const std::int64_t ks[] = {8, 1000, 4104, 16392, 1001, 4099};
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  const DType ins[] = {DType::kBFloat16, DType::kFloat16};
  std::vector<SolutionPtr> all = sixteen_bit_solutions();
  int cases = 0, failed = 0;
  for (std::size_t vi = 0; vi < all.size(); ++vi) {
    const SolutionPtr& s = all[vi];
    const int v = static_cast<int>(vi);
    // A build may carry one input dtype only (the CI subset: bf16); test the ones it has.
    A16W16Case probe;
    probe.in = DType::kFloat16;
    probe.n = 16;
    probe.k = 64;
    const bool has_fp16 = s->can_implement(make_a16w16(probe, 1).problem());
    for (int m = 1; m <= m_tile(s); ++m) {
      A16W16Case c;
      c.m = m;
      c.n = ns[(m + v) % 4];
      c.k = ks[(m + 2 * v) % 6];
      c.in = has_fp16 ? ins[(m + v / 2) % 2] : DType::kBFloat16;
      c.out = outs[(m + v) % 3];
      const int bias_mode = (m + v / 3) % 3;  // none, x's dtype, out's dtype
      c.bias = bias_mode != 0;
      c.bias_type = bias_mode == 2 ? c.out : c.in;
      c.lda_pad = pad_to_8(c.k) + ((m + v) % 5 == 0 ? 8 : 0);
      c.ldb_pad = pad_to_8(c.k) + ((m + v) % 7 == 0 ? 16 : 0);
      c.ldo_pad = (m + v) % 4 == 0 ? 3 : 0;
      A16W16Data d = make_a16w16(c, static_cast<std::uint64_t>(v) * 131 + static_cast<std::uint64_t>(m));
      tally(run_solution(d, *s), cases, failed);
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << cases << " cases wrong";
  RecordProperty("cases", cases);
}

// The fused activation epilogues (act(x w^T + bias), the erf and tanh GELU and ReLU)
// in every variant, sampled over M, odd N, K tails, bias on and off and every output dtype, against
// the float64 host activation of the fp32 reference (run_solution).
TEST(Skinny, ActivationEpiloguesMatchReference) {
  TGEMM_REQUIRE_GPU();
  const std::int64_t ns[] = {7, 577, 4099};
  const std::int64_t ks[] = {1000, 4104, 1001};
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  const Activation acts[] = {Activation::kGelu, Activation::kGeluTanh, Activation::kRelu};
  std::vector<SolutionPtr> all = sixteen_bit_solutions();
  int cases = 0, failed = 0;
  for (std::size_t vi = 0; vi < all.size(); ++vi) {
    const SolutionPtr& s = all[vi];
    const int v = static_cast<int>(vi);
    const int mt = m_tile(s);
    for (int j = 0; j < 3; ++j) {
      A16W16Case c;
      c.m = j == 0 ? 1 : (j == 1 ? mt : std::max(1, (mt + 1) / 2));
      c.n = ns[(j + v) % 3];
      c.k = ks[(j + 2 * v) % 3];
      c.out = outs[(j + v) % 3];
      c.activation = acts[(j + v / 3) % 3];
      c.bias = (j + v) % 2 == 0;
      c.bias_type = c.in;
      c.lda_pad = pad_to_8(c.k);
      c.ldb_pad = pad_to_8(c.k);
      A16W16Data d = make_a16w16(c, static_cast<std::uint64_t>(v) * 977 + static_cast<std::uint64_t>(j));
      tally(run_solution(d, *s), cases, failed);  // a refusal fails too: every variant fuses them
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << cases << " cases wrong";
  RecordProperty("cases", cases);
}

// The GEMV's whole-pass variants (`_wp`, GemvTile::whole) where their split differs from
// the default's (K = 5120, 7168, 1536: the default leaves partial passes), against the fp32
// reference at every M of the tile, odd N, bias on and off, every output dtype; and the split
// rule itself (host arithmetic).
TEST(Skinny, GemvWholePassSplitsMatchReference) {
  using skinny::GemvTile;
  EXPECT_EQ((GemvTile{1, 8, 4, false}.segs(5120)), 8);  // 80 chunks a segment: a partial pass
  EXPECT_EQ((GemvTile{1, 8, 4, true}.segs(5120)), 1);   // 640 = 5 x 128
  EXPECT_EQ((GemvTile{1, 8, 2, true}.segs(5120)), 2);   // 320 = 5 x 64, the largest such split
  EXPECT_EQ((GemvTile{1, 8, 8, true}.segs(5120)), 4);   // none whole: the default's
  EXPECT_EQ((GemvTile{1, 8, 8, true}.segs(14336)), 1);  // 1792 = 7 x 256
  EXPECT_EQ((GemvTile{1, 8, 4, true}.segs(4096)), 4);   // the default's split is whole already
  EXPECT_EQ((GemvTile{1, 8, 4, true}.segs(5121)), (GemvTile{1, 8, 4, false}.segs(5121)));  // K % 8
  TGEMM_REQUIRE_GPU();
  const std::int64_t ns[] = {7, 577};
  const std::int64_t ks[] = {5120, 7168, 1536};
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  int cases = 0, failed = 0, whole = 0;
  for (const SolutionPtr& s : sixteen_bit_solutions()) {
    if (!is_gemv(s) || !variant(s).gemv.whole) continue;
    ++whole;
    for (int m = 1; m <= m_tile(s); ++m) {
      for (int j = 0; j < 3; ++j) {
        A16W16Case c;
        c.m = m;
        c.n = ns[(m + j) % 2];
        c.k = ks[j];
        c.out = outs[(m + j) % 3];
        c.bias = (m + j) % 2 == 0;
        c.bias_type = c.in;
        c.lda_pad = pad_to_8(c.k);
        c.ldb_pad = pad_to_8(c.k);
        A16W16Data d = make_a16w16(c, static_cast<std::uint64_t>(whole) * 389 + static_cast<std::uint64_t>(m * 3 + j));
        tally(run_solution(d, *s), cases, failed);
      }
    }
  }
  EXPECT_EQ(whole, 8) << "one whole-pass variant for each GEMV tile";
  EXPECT_EQ(failed, 0) << failed << " of " << cases << " cases wrong";
  RecordProperty("cases", cases);
}

// A few variants that together reach every code path (register batches and ring; no split,
// the flat cluster reduction and the distributed one; every M tile of the build) on odd shapes
// (N not a multiple of the tile, K % 32 != 0 and K % 8 != 0, K shorter than one batch), at
// M = 1 and M = the tile. Small enough for compute-sanitizer's memcheck, racecheck and synccheck:
//   compute-sanitizer --tool memcheck build/release/tests/gpu/test_gpu_skinny --gtest_filter='*Sanitizer*'
TEST(Skinny, SanitizerSubset) {
  TGEMM_REQUIRE_GPU();
  std::vector<SolutionPtr> all = sixteen_bit_solutions();
  auto stages = [](const SolutionPtr& s) { return std::max(0, name_field(s->name(), "p")); };
  auto sk = [](const SolutionPtr& s) { return name_field(s->name(), "sk"); };
  auto rows = [](const SolutionPtr& s) { return name_field(s->name(), "n"); };
  std::vector<SolutionPtr> picked;
  auto pick = [&](auto pred) {
    for (const SolutionPtr& s : all)
      if (pred(s)) {
        if (std::find(picked.begin(), picked.end(), s) == picked.end()) picked.push_back(s);
        return;
      }
  };
  pick([&](const SolutionPtr& s) { return stages(s) == 0 && sk(s) == 1; });
  pick([&](const SolutionPtr& s) { return stages(s) == 0 && sk(s) == 8 && rows(s) == 16; });
  // The largest CTA tile at split_k 8: its partials exceed the flat limit (distributed sum).
  SolutionPtr widest;
  for (const SolutionPtr& s : all)
    if (stages(s) == 0 && sk(s) == 8 && (widest == nullptr || rows(s) * m_tile(s) > rows(widest) * m_tile(widest)))
      widest = s;
  if (widest) picked.push_back(widest);
  pick([&](const SolutionPtr& s) { return stages(s) > 0 && sk(s) == 1; });
  pick([&](const SolutionPtr& s) { return stages(s) > 0 && sk(s) == 2 && m_tile(s) >= 16; });
  pick([&](const SolutionPtr& s) { return stages(s) > 0 && sk(s) == 4 && name_field(s->name(), "u") >= 4; });
  for (int mt : {8, 16, 32}) pick([&](const SolutionPtr& s) { return m_tile(s) == mt && sk(s) == 2; });
  // Weight-as-B MMA: no split, a 2-CTA and an 8-CTA cluster, 2 chunks a lane.
  auto bop = [](const SolutionPtr& s) { return is_weight_b(s) ? name_field(s->name(), "c") : 0; };
  pick([&](const SolutionPtr& s) { return bop(s) > 0 && sk(s) == 1; });
  pick([&](const SolutionPtr& s) { return bop(s) == 1 && sk(s) == 2 && rows(s) == 16; });
  pick([&](const SolutionPtr& s) { return bop(s) == 1 && sk(s) == 8; });
  pick([&](const SolutionPtr& s) { return bop(s) == 2 && sk(s) == 4; });
  pick([&](const SolutionPtr& s) { return bop(s) == 2 && name_field(s->name(), "wk") == 4 && sk(s) == 8; });
  // GEMV: one token, and four with the most chunks a lane.
  pick([&](const SolutionPtr& s) { return is_gemv(s) && m_tile(s) == 1; });
  pick([&](const SolutionPtr& s) { return is_gemv(s) && m_tile(s) == 4 && name_field(s->name(), "c") == 8; });
  ASSERT_GE(picked.size(), 3u);
  // Odd N and K: K shorter than one batch (8, 40 = 32 + 8), K % 32 != 0 and K % 8 != 0 (1001,
  // 4099), N not a multiple of any tile.
  const std::int64_t shapes[][2] = {{33, 1001}, {7, 4099}, {129, 200}, {40, 8}, {4423, 40}};
  const Activation kActs[] = {Activation::kNone, Activation::kGelu, Activation::kNone, Activation::kGeluTanh,
                              Activation::kNone, Activation::kRelu};
  int cases = 0;
  for (const SolutionPtr& s : picked) {
    for (int mi = 0; mi < 2; ++mi) {
      const std::int64_t m = mi == 0 ? 1 : m_tile(s);
      for (std::size_t si = 0; si < std::size(shapes); ++si) {
        A16W16Case c;
        c.m = m;
        c.n = shapes[si][0];
        c.k = shapes[si][1];
        c.out = si % 2 == 0 ? DType::kBFloat16 : DType::kFloat32;
        c.bias = si % 2 == 1;
        // The activations' stores too (the plain stores' fast paths need none): one in two cases.
        c.activation = kActs[(si + static_cast<std::size_t>(mi)) % std::size(kActs)];
        c.lda_pad = pad_to_8(c.k);
        c.ldb_pad = pad_to_8(c.k);
        A16W16Data d = make_a16w16(c, 40 + static_cast<std::uint64_t>(si) + 7 * static_cast<std::uint64_t>(m));
        std::string err = run_solution(d, *s);
        EXPECT_TRUE(err.empty()) << err;
        ++cases;
      }
    }
  }
  RecordProperty("cases", cases);
}

TEST(Skinny, SplitVariantsAreBitIdenticalRunToRun) {
  TGEMM_REQUIRE_GPU();
  for (const SolutionPtr& s : sixteen_bit_solutions()) {
    if (name_field(s->name(), "sk") == 1 && name_field(s->name(), "wk") == 1) continue;
    A16W16Case c;
    c.m = m_tile(s);
    c.n = 577;
    c.k = 16392;
    c.out = DType::kFloat32;
    c.bias = true;
    A16W16Data d = make_a16w16(c, 5);
    GemmProblem p = d.problem();
    ASSERT_TRUE(s->can_implement(p)) << s->name();
    const std::size_t bytes = static_cast<std::size_t>(c.m * c.n) * sizeof(float);
    std::vector<char> first(bytes), again(bytes);
    TestWorkspace w(*s, p);
    s->run(p, d.args(), w.ws, nullptr);
    copy_to_host(first.data(), d.out.data(), bytes);
    for (int rep = 0; rep < 3; ++rep) {
      fill_nan(d.out.data(), c.out, c.m * c.n, nullptr);
      s->run(p, d.args(), w.ws, nullptr);
      copy_to_host(again.data(), d.out.data(), bytes);
      ASSERT_EQ(std::memcmp(first.data(), again.data(), bytes), 0) << s->name() << " differs on rerun " << rep;
    }
  }
}

TEST(Skinny, SplitVariantReplaysInCudaGraph) {
  TGEMM_REQUIRE_GPU();
  for (const SolutionPtr& s : sixteen_bit_solutions()) {
    if (name_field(s->name(), "sk") != 8) continue;
    A16W16Case c;
    c.m = m_tile(s);
    c.n = 4099;
    c.k = 4104;
    c.bias = true;
    A16W16Data d = make_a16w16(c, 6);
    GemmProblem p = d.problem();
    ASSERT_TRUE(s->can_implement(p)) << s->name();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    s->run(p, d.args(), Workspace{}, reinterpret_cast<Stream>(stream));
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

TEST(Skinny, RefusesWhatItCannotCompute) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 33;
  c.n = 64;
  c.k = 256;
  c.lda_pad = 8;
  c.ldb_pad = 8;
  A16W16Data d = make_a16w16(c, 9);
  const GemmOptions none;
  for (const SolutionPtr& s : sixteen_bit_solutions()) {
    const std::int64_t mt = m_tile(s);
    auto problem = [&](const TensorView& x, const TensorView& w) {
      TensorView out = TensorView::contiguous(d.out.data(), c.out, {x.size(0), w.size(0)});
      GemmProblem p = validate_a16w16(x, w, out, none).problem;
      int device = 0;
      cudaGetDevice(&device);
      p.device = device;
      return p;
    };
    const std::int64_t lda = c.k + c.lda_pad, ldb = c.k + c.ldb_pad;
    auto x_rows = [&](std::int64_t m, std::int64_t offset, std::int64_t k, std::int64_t ld) {
      return TensorView::strided(d.x.as<char>() + offset * 2, c.in, {m, k}, {ld, 1});
    };
    const std::int64_t k1 = c.k - 1;  // K not a multiple of 8, rows still padded to 16 bytes
    TensorView w = TensorView::strided(d.w.data(), c.in, {c.n, c.k}, {ldb, 1});
    TensorView w1 = TensorView::strided(d.w.data(), c.in, {c.n, k1}, {ldb, 1});
    // The controls: accepted at M = its tile, also with K % 8 != 0.
    EXPECT_TRUE(s->can_implement(problem(x_rows(mt, 0, c.k, lda), w))) << s->name();
    EXPECT_TRUE(s->can_implement(problem(x_rows(mt, 0, k1, lda), w1))) << s->name();
    // M above the tile.
    EXPECT_FALSE(s->can_implement(problem(x_rows(mt + 1, 0, c.k, lda), w))) << s->name();
    // x or w one element past a 16-byte boundary (offset views).
    EXPECT_FALSE(s->can_implement(problem(x_rows(mt, 1, k1, lda), w1))) << s->name();
    TensorView w_off = TensorView::strided(d.w.as<char>() + 2, c.in, {c.n, k1}, {ldb, 1});
    EXPECT_FALSE(s->can_implement(problem(x_rows(mt, 0, k1, lda), w_off))) << s->name();
    // Row strides that are not a multiple of 8 elements.
    EXPECT_FALSE(s->can_implement(problem(x_rows(2, 0, k1, k1), w1))) << s->name();
    TensorView w_odd = TensorView::strided(d.w.data(), c.in, {c.n, k1}, {k1, 1});
    EXPECT_FALSE(s->can_implement(problem(x_rows(mt, 0, k1, lda), w_odd))) << s->name();
    // Other families of problems.
    GemmProblem p = problem(x_rows(1, 0, c.k, lda), w);
    GemmProblem q = p;
    q.a_type = q.b_type = DType::kFloat8E4M3;
    EXPECT_FALSE(s->can_implement(q));
    q = p;
    q.b_type = p.a_type == DType::kBFloat16 ? DType::kFloat16 : DType::kBFloat16;
    EXPECT_FALSE(s->can_implement(q));
    q = p;
    q.scale_ab = true;
    EXPECT_FALSE(s->can_implement(q));
    q = p;
    q.bpreshuffle = true;
    EXPECT_FALSE(s->can_implement(q));
    q = p;
    q.out_type = DType::kInt32;
    EXPECT_FALSE(s->can_implement(q));
    // Epilogues: alpha != 1 and beta * c are refused; the activations are fused.
    q = p;
    q.unit_alpha = false;
    EXPECT_FALSE(s->can_implement(q));
    q = p;
    q.use_c = true;
    EXPECT_FALSE(s->can_implement(q));
    for (Activation a : {Activation::kGelu, Activation::kGeluTanh, Activation::kRelu}) {
      q = p;
      q.activation = a;
      EXPECT_TRUE(s->can_implement(q)) << s->name() << " " << activation_name(a);
    }
  }
}

TEST(Skinny, FromRowFindsVariantsByName) {
  const Backend& b = skinny_backend();
  GemmProblem p;
  for (const SolutionPtr& s : skinny_solutions()) {
    TableRow row;
    row.libtype = "skinny";
    row.kernel_name = s->name();
    std::string why;
    SolutionPtr found = b.from_row(row, p, why);
    ASSERT_NE(found, nullptr) << s->name() << ": " << why;
    EXPECT_EQ(found->name(), s->name());
  }
  // A well-formed name of a tile this build lacks, and a name outside the grammar.
  TableRow row;
  row.libtype = "skinny";
  row.kernel_name = "skinny:sm90_mma_wa_m16_n16_wn1_wk8_u99_sk1";
  std::string why;
  EXPECT_EQ(b.from_row(row, p, why), nullptr);
  EXPECT_NE(why.find("'skinny:sm90_mma_wa_m16_n16_wn1_wk8_u99_sk1'"), std::string::npos) << why;
  EXPECT_NE(why.find("no such variant in this build"), std::string::npos) << why;
  row.kernel_name = "skinny:sm90_m16_n16_wn1_wk8_u4_sk1";  // no family
  why.clear();
  EXPECT_EQ(b.from_row(row, p, why), nullptr);
  EXPECT_NE(why.find("is not a skinny solution name"), std::string::npos) << why;
}

TEST(Skinny, CandidatesUseTheSmallestFittingTile) {
  TGEMM_REQUIRE_GPU();
  const Backend& b = skinny_backend();
  for (std::int64_t m : {1, 8, 9, 16, 17, 32, 33, 256}) {
    A16W16Case c;
    c.m = m;
    c.n = 4096;
    c.k = 4096;
    A16W16Data d = make_a16w16(c, 10);
    GemmProblem p = d.problem();
    std::vector<SolutionPtr> cands = b.candidates(p);
    // Per candidate group (the MMA families, the GEMV): the smallest M tile that fits.
    int smallest[2] = {0, 0};
    for (const SolutionPtr& s : sixteen_bit_solutions()) {
      int& sm = smallest[scheme(s)];
      if (s->can_implement(p) && (sm == 0 || m_tile(s) < sm)) sm = m_tile(s);
    }
    if (std::all_of(std::begin(smallest), std::end(smallest), [](int v) { return v == 0; })) {
      EXPECT_TRUE(cands.empty()) << "M=" << m;
      continue;
    }
    EXPECT_FALSE(cands.empty()) << "M=" << m;
    for (const SolutionPtr& s : cands) {
      EXPECT_TRUE(s->can_implement(p)) << s->name();
      EXPECT_EQ(m_tile(s), smallest[scheme(s)]) << s->name() << " for M=" << m;
    }
  }
}

TEST(Skinny, DefaultRuleCoversDecodeOnly) {
  TGEMM_REQUIRE_GPU();
  const Backend& b = skinny_backend();
  auto problem = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    A16W16Case c;
    c.m = m;
    c.n = n;
    c.k = k;
    return c;
  };
  // Large M, tiny weights and short K: cuBLASLt's.
  for (auto c : {problem(17, 4096, 4096), problem(128, 4096, 4096), problem(4096, 4096, 4096),
                 problem(1, 64, 64), problem(16, 256, 1024), problem(16, 32768, 128)}) {
    A16W16Data d = make_a16w16(c, 12);
    EXPECT_EQ(b.default_solution(d.problem()), nullptr) << c.describe();
  }
  // Outside the measured win regions (skinny_default_rule.cpp): weights above 96 MiB;
  // at M = 9-16 K below 2048, K below 4096 with N above 1024, weights outside 2-32 MiB.
  // M = 2-8 with K <= 2048 and N above 4096, or where the model picks a 32-row tile (1536x7168 and
  // 8192x3584 over M = 2-8), or an unsplit tile over more than 4096 rows (4608x3584, 5120x4096,
  // 6144x4096 over M = 2-8): cuBLASLt's.
  for (auto c : {problem(1, 28672, 4096), problem(4, 5120, 2048), problem(8, 6144, 1024), problem(2, 8192, 1024),
                 problem(2, 4608, 3584), problem(8, 4608, 3584), problem(5, 5120, 4096), problem(2, 6144, 4096),
                 problem(2, 1536, 7168), problem(5, 1536, 7168), problem(8, 1536, 7168), problem(3, 8192, 3584),
                 problem(7, 8192, 3584), problem(16, 5120, 2048), problem(12, 2560, 2560), problem(16, 4096, 1024),
                 problem(16, 6144, 4096), problem(9, 576, 1024)}) {
    A16W16Data d = make_a16w16(c, 12);
    EXPECT_EQ(b.default_solution(d.problem()), nullptr) << c.describe();
  }
  // Decode GEMMs of the shape suite: the rule offers a variant that computes them; at M = 2-8 a
  // 16-row weight-as-A tile.
  for (auto c : {problem(1, 4096, 4096), problem(4, 576, 7168), problem(8, 4096, 1024), problem(1, 8192, 1024),
                 problem(1, 1280, 8192), problem(1, 24576, 1536), problem(3, 4096, 4096), problem(6, 3584, 3584),
                 problem(1, 6144, 4096)}) {
    A16W16Data d = make_a16w16(c, 13);
    SolutionPtr s = b.default_solution(d.problem());
    ASSERT_NE(s, nullptr) << c.describe();
    EXPECT_EQ(s->libtype(), "skinny");
    if (c.m >= 2) EXPECT_NE(s->name().find("_n16_"), std::string::npos) << s->name() << " for " << c.describe();
    std::string err = run_solution(d, *s);
    EXPECT_TRUE(err.empty()) << err;
  }
  // M = 9-16 on K >= 4096 (or K >= 2048 with N <= 1024), 2-32 MiB: the weight-as-B tile of 16
  // rows a CTA, 4 warps, 4 k-steps a batch, one chunk a lane; split-K doubled while the doubled
  // grid stays within 4 CTAs an SM, at most 4; odd M and N included.
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const struct {
    std::int64_t m, n, k;
  } m16[] = {{16, 576, 7168}, {9, 4096, 4096}, {12, 3072, 4096}, {16, 1024, 2048}, {13, 2047, 8192}};
  for (const auto& e : m16) {
    A16W16Case c = problem(e.m, e.n, e.k);
    A16W16Data d = make_a16w16(c, 18);
    SolutionPtr s = b.default_solution(d.problem());
    ASSERT_NE(s, nullptr) << c.describe();
    const std::int64_t tiles = (e.n + 15) / 16;
    int split = 1;
    while (split < 4 && tiles * split * 2 <= 4LL * sms) split *= 2;
    EXPECT_EQ(s->name(), "skinny:sm90_mma_wb_m16_n16_wk4_u4_c1_sk" + std::to_string(split)) << c.describe();
    std::string err = run_solution(d, *s);
    EXPECT_TRUE(err.empty()) << err;
  }
  // M = 1 with at most 1024 rows of >= 64 elements (and >= 64 KiB): the GEMV tile measured best
  // there, also for an odd row count and K not a multiple of 64.
  for (auto c : {problem(1, 576, 64), problem(1, 576, 2048), problem(1, 1024, 7168), problem(1, 577, 1000)}) {
    A16W16Data d = make_a16w16(c, 16);
    SolutionPtr s = b.default_solution(d.problem());
    ASSERT_NE(s, nullptr) << c.describe();
    EXPECT_EQ(s->name(), "skinny:sm90_gemv_m1_w8_c2") << c.describe();
    std::string err = run_solution(d, *s);
    EXPECT_TRUE(err.empty()) << err;
  }
  // Outside it: more tokens, more rows, or a smaller weight than measured.
  for (auto c : {problem(2, 576, 2048), problem(1, 1280, 8192), problem(1, 576, 56)}) {
    A16W16Data d = make_a16w16(c, 17);
    SolutionPtr s = b.default_solution(d.problem());
    if (s != nullptr) EXPECT_EQ(s->name().find("gemv"), std::string::npos) << s->name() << " for " << c.describe();
  }
  // Activation epilogues: the plain problem's default variant, which fuses the
  // activation in its stores, and nothing where the plain problem has none.
  const Activation acts[] = {Activation::kGelu, Activation::kGeluTanh, Activation::kRelu};
  int ai = 0;
  for (auto c : {problem(1, 4096, 4096), problem(16, 576, 7168), problem(1, 576, 2048), problem(13, 2047, 8192)}) {
    A16W16Data plain = make_a16w16(c, 19);
    SolutionPtr want = b.default_solution(plain.problem());
    ASSERT_NE(want, nullptr) << c.describe();
    c.activation = acts[ai++ % 3];
    c.bias = ai % 2 == 0;
    A16W16Data d = make_a16w16(c, 19);
    SolutionPtr s = b.default_solution(d.problem());
    ASSERT_NE(s, nullptr) << c.describe();
    EXPECT_EQ(s->name(), want->name()) << c.describe();
    std::string err = run_solution(d, *s);
    EXPECT_TRUE(err.empty()) << err;
    GemmProblem scaled = d.problem();  // alpha != 1: refused, so no default
    scaled.unit_alpha = false;
    EXPECT_EQ(b.default_solution(scaled), nullptr) << c.describe();
  }
  for (auto c : {problem(128, 4096, 4096), problem(16, 32768, 128)}) {
    c.activation = Activation::kGelu;
    A16W16Data d = make_a16w16(c, 19);
    EXPECT_EQ(b.default_solution(d.problem()), nullptr) << c.describe();
  }
  // Misaligned operands: no variant applies, so no default either.
  A16W16Case c = problem(1, 4096, 4095);
  A16W16Data d = make_a16w16(c, 14);
  EXPECT_EQ(b.default_solution(d.problem()), nullptr);
}

TEST(Skinny, PublicApiRoutesUntunedDecodeShapesHere) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 4;
  c.n = 6144;
  c.k = 4096;
  c.bias = true;
  A16W16Data d = make_a16w16(c, 15);
  DispatchInfo info = describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options());
  if (info.level == "default") EXPECT_EQ(info.libtype, "skinny") << info.kernel_name;
  std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
  EXPECT_TRUE(err.empty()) << err << " [" << info.kernel_name << "]";
}

}  // namespace
}  // namespace tgemm::test
