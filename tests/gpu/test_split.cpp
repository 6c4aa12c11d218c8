// The split backend on the GPU: every split candidate (another backend's plain product, then the
// bias/activation pass in place) against the fp32 reference on random shapes with tails, every
// activation, bias on/off, every output dtype; and a table row "split:..." routed by the
// dispatcher through the public API.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "backends/split/split_backend.h"
#include "core/csv.h"
#include "core/table.h"
#include "runtime/runtime.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

const Backend& split_backend() {
  const Backend* b = Runtime::get().registry().find("split");
  EXPECT_NE(b, nullptr);
  return *b;
}

TEST(Split, EveryCandidateMatchesReference) {
  TGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(4242);
  const DType outs[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};
  int cases = 0, failed = 0;
  for (int i = 0; i < 40; ++i) {
    A16W16Case c;
    c.m = i < 4 ? 1 : 1 + static_cast<std::int64_t>(rng() % 600);
    c.n = 8 * (1 + static_cast<std::int64_t>(rng() % 150));
    c.k = 8 * (1 + static_cast<std::int64_t>(rng() % 200));
    c.in = rng() % 2 ? DType::kBFloat16 : DType::kFloat16;
    c.out = outs[rng() % 3];
    c.activation = static_cast<Activation>(rng() % 4);
    c.bias = c.activation == Activation::kNone || rng() % 2;
    c.bias_type = c.in;
    A16W16Data d = make_a16w16(c, 900 + static_cast<std::uint64_t>(i));
    const GemmProblem p = d.problem();
    const std::vector<SolutionPtr> cands = split_backend().candidates(p);
    EXPECT_FALSE(cands.empty()) << c.describe();
    for (const SolutionPtr& s : cands) {
      ASSERT_TRUE(s->can_implement(p)) << s->name();
      DeviceBuffer ws(std::max<std::size_t>(s->workspace_size(p), 256));
      std::string err = run_and_compare(d, [&] { s->run(p, d.args(), Workspace{ws.data(), ws.bytes()}, nullptr); });
      ++cases;
      if (!err.empty()) {
        ++failed;
        ADD_FAILURE() << s->name() << " " << c.describe() << ": " << err;
      }
    }
  }
  // At least one candidate per problem (the cuBLASLt default's product; the skinny and CUTLASS
  // defaults join only where their default rules take the plain product).
  EXPECT_EQ(failed, 0);
  EXPECT_GE(cases, 40);
  RecordProperty("cases", cases);
}

TEST(Split, RefusesProblemsWithoutAnEpilogueOrWithAlphaOrC) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 33;
  c.n = 256;
  c.k = 128;
  EXPECT_TRUE(split_backend().candidates(make_a16w16(c, 1).problem()).empty());
  c.bias = true;
  c.alpha = 0.5f;
  EXPECT_TRUE(split_backend().candidates(make_a16w16(c, 2).problem()).empty());
  c.alpha = 1.0f;
  c.beta = 1.0f;
  EXPECT_TRUE(split_backend().candidates(make_a16w16(c, 3).problem()).empty());
}

TEST(Split, TableRowRoutesThroughThePublicApi) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 48;
  c.n = 320;
  c.k = 200;
  c.bias = true;
  c.activation = Activation::kGelu;
  A16W16Data d = make_a16w16(c, 77);
  const DeviceInfo& dev = Runtime::get().platform().device_info(0);
  TableRow row;
  row.key = table_key(d.problem(), dev.arch, dev.sm_count);
  row.m = c.m;
  row.libtype = "split";
  row.kernel_name = "split:cublaslt:heuristic";
  row.us = 1.0;
  const std::string path = ::testing::TempDir() + "tgemm_split_table.csv";
  {
    std::ofstream out(path);
    out << csv::join(tuned_table_columns()) << "\n"
        << format_tuned_row(row) << "\n";
  }
  setenv("TGEMM_CONFIG_GEMM_BF16", path.c_str(), 1);
  reload_config();
  DispatchInfo info = describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options());
  EXPECT_EQ(info.level, "exact");
  EXPECT_EQ(info.libtype, "split");
  EXPECT_EQ(info.kernel_name, "split:cublaslt:heuristic");
  std::string err = run_and_compare(d, [&] { gemm_gelu(d.xv, d.wv, &d.bv, d.ov, false, nullptr); });
  EXPECT_TRUE(err.empty()) << err;
  unsetenv("TGEMM_CONFIG_GEMM_BF16");
  reload_config();
}

// With no table row, an erf-GELU + bias problem that the skinny and CUTLASS rules decline (here
// K > 4096, or M <= 64 outside the skinny rule) runs staged: cuBLASLt's default product, then the
// pass; inside the skinny rule its variant fuses the bias and the GELU; without the bias or with
// another activation, the fused defaults stay.
TEST(Split, DefaultStagesTheErfGeluWithBias) {
  TGEMM_REQUIRE_GPU();
  const std::string path = ::testing::TempDir() + "tgemm_split_empty_table.csv";
  {
    std::ofstream out(path);
    out << csv::join(tuned_table_columns()) << "\n";
  }
  setenv("TGEMM_CONFIG_GEMM_BF16", path.c_str(), 1);
  reload_config();
  struct Want {
    std::int64_t m;
    bool bias;
    Activation act;
    const char* libtype;  // "split" (staged), "skinny" (fused), nullptr: anything but split
    std::int64_t n = 1000, k = 5000;
  };
  // 64x1000x5000 is beyond the skinny rule's M; 16x28672x4096 beyond its weight size (235 MB);
  // 16x1000x5000 (10 MB) inside it.
  for (const Want w : {Want{600, true, Activation::kGelu, "split"}, Want{8192, true, Activation::kGelu, "split"},
                       Want{511, true, Activation::kGelu, "split"}, Want{64, true, Activation::kGelu, "split"},
                       Want{16, true, Activation::kGelu, "split", 28672, 4096},
                       Want{16, true, Activation::kGelu, "skinny"},
                       Want{600, false, Activation::kGelu, nullptr}, Want{600, true, Activation::kGeluTanh, nullptr},
                       Want{600, true, Activation::kRelu, nullptr}}) {
    A16W16Case c;
    c.m = w.m;
    c.n = w.n;
    c.k = w.k;
    c.bias = w.bias;
    c.activation = w.act;
    A16W16Data d = make_a16w16(c, 500 + static_cast<std::uint64_t>(w.m));
    DispatchInfo info = describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options());
    EXPECT_EQ(info.level, "default") << c.describe();
    if (w.libtype == nullptr) {
      EXPECT_NE(info.libtype, "split") << c.describe() << " -> " << info.kernel_name;
    } else {
      EXPECT_EQ(info.libtype, w.libtype) << c.describe() << " -> " << info.kernel_name;
      if (info.libtype == "split") EXPECT_EQ(info.kernel_name, "split:cublaslt:heuristic") << c.describe();
    }
    if (w.m > 1000) continue;  // the reference of 8192 x 1000 x 5000 adds time, not coverage
    std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
    EXPECT_TRUE(err.empty()) << err << " " << c.describe() << " [" << info.kernel_name << "]";
  }
  unsetenv("TGEMM_CONFIG_GEMM_BF16");
  reload_config();
}

}  // namespace
}  // namespace tgemm::test
