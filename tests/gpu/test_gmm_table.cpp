// gmm's tuned table on the GPU: race one tiny key (tuner/gmm_race.h), write its row (or, where the
// default keeps the key, a row naming another candidate), and check that gmm dispatches to it
// (describe_gmm's level, solution, file and line) with a correct output; a row serves its bucket
// only; a row naming a solution this build cannot run is one warning and the default serves;
// TGEMM_GROUPED_BACKEND overrides the table, and a value it does not take is one warning and auto.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/log.h"
#include "cuda/device.h"
#include "grouped/gmm_table.h"
#include "tests/common/gpu_test_util.h"
#include "tests/gpu/grouped_checks.h"
#include "tgemm/config.h"
#include "tgemm/gmm.h"
#include "tuner/gmm_race.h"

namespace tgemm {
namespace {

// G = 4 groups of 64 rows (bucket 64), N = 256, K = 128, rhs [G, N, K]: small enough to race in a
// second, K and N multiples of 8 so every CUTLASS instance of the layout can take it.
GmmTuneProblem tiny_problem(std::int64_t m = 4 * 64) {
  GmmTuneProblem p;
  p.name = "tiny";
  p.groups = 4;
  p.m = m;
  p.n = 256;
  p.k = 128;
  p.rhs_nk = true;
  return p;
}

// tiny_problem()'s call with a uniform routing: 4 groups of 64 rows.
test::GmmCase tiny_case() {
  test::GmmCase c;
  c.m = 4 * 64;
  c.n = 256;
  c.k = 128;
  c.transpose_rhs = true;
  c.sizes.assign(4, 64);
  return c;
}

// Points TGEMM_CONFIG_GMM at a file holding `rows` for its lifetime (then restores the variable and
// the configuration).
class GmmTableFile {
 public:
  explicit GmmTableFile(const std::vector<GmmRow>& rows) {
    char dir[] = "/tmp/tgemm_gmm_table_XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    path_ = dir_ + "/tuned_gmm.csv";
    std::ofstream out(path_);
    out << csv::join(gmm_tuned_columns()) << "\n";
    for (const GmmRow& r : rows) out << format_gmm_row(r) << "\n";
    out.close();
    const char* old = std::getenv("TGEMM_CONFIG_GMM");
    had_ = old != nullptr;
    if (had_) previous_ = old;
    setenv("TGEMM_CONFIG_GMM", path_.c_str(), 1);
    reload_config();
  }
  ~GmmTableFile() {
    if (had_) {
      setenv("TGEMM_CONFIG_GMM", previous_.c_str(), 1);
    } else {
      unsetenv("TGEMM_CONFIG_GMM");
    }
    reload_config();
    std::remove(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_, previous_;
  bool had_ = false;
};

TEST(GmmTable, TunedKeyDispatchesToItsRow) {
  TGEMM_REQUIRE_GPU();
  const GmmTuneProblem p = tiny_problem();
  GmmRaceOptions o;
  o.rounds = 3;
  o.replays = 3;
  const GmmRaceResult res = race_gmm(p, o);
  ASSERT_GE(res.default_index, 0);
  ASSERT_FALSE(res.candidates.empty());
  EXPECT_EQ(res.candidates[0].solution, kGmmTileSolution);
  for (const GmmCandidateTiming& c : res.candidates) {
    EXPECT_TRUE(c.error.empty()) << c.solution << ": " << c.error;
    EXPECT_GT(c.us[0], 0) << c.solution;
    EXPECT_GT(c.us[1], 0) << c.solution;
  }
  EXPECT_EQ(res.key.rows_per_group, 64);
  GmmRow row;
  if (res.row) {
    // The rule: beyond the tie band on both routings.
    EXPECT_GT(res.row->speedup, 1 + o.tie_band);
    EXPECT_GT(res.row->speedup_skewed, 1 + o.tie_band);
    EXPECT_EQ(res.row->default_solution, res.default_solution);
    row = *res.row;
  } else {
    // The default kept the key: a row naming another candidate (or tile where tile is all this
    // build runs) still shows that gmm follows the table.
    const std::size_t other = res.candidates.size() > 1 && res.default_index == 0 ? 1 : 0;
    row.key = res.key;
    row.m = p.m;
    row.solution = res.candidates[other].solution;
    row.default_solution = res.default_solution;
  }
  GmmTableFile file({row});
  GmmRaceData data(p, 3);
  data.compute_reference(GmmRaceData::kSkewed);
  EXPECT_EQ(data.check([&](Stream s) { data.run_dispatch(GmmRaceData::kSkewed, 0, s); }), "");

  // What describe_gmm reports, and gmm's output, on a uniform routing of the key.
  test::GmmCase c = tiny_case();
  test::GmmData d = test::make_gmm(c, 5);
  const DispatchInfo info = describe_gmm(d.lv, d.rv, d.sv, d.ov, true, nullptr);
  EXPECT_EQ(info.level, "table");
  EXPECT_EQ(info.kernel_name, row.solution);
  EXPECT_EQ(info.file, file.path());
  EXPECT_EQ(info.line, 2);
  EXPECT_EQ(info.matched_m, p.m);
  test::run_gmm(d, nullptr);
  device_synchronize();
  test::expect_gmm_matches(d, c.sizes);

  // Half the rows per group: bucket 32, which no row serves.
  c.m = 4 * 32;
  c.sizes.assign(4, 32);
  test::GmmData half = test::make_gmm(c, 6);
  EXPECT_EQ(describe_gmm(half.lv, half.rv, half.sv, half.ov, true, nullptr).level, "default");

  // TGEMM_GROUPED_BACKEND overrides the row.
  test::GroupedBackendScope forced("tile");
  const DispatchInfo f = describe_gmm(d.lv, d.rv, d.sv, d.ov, true, nullptr);
  EXPECT_EQ(f.level, "forced");
  EXPECT_EQ(f.kernel_name, kGmmTileSolution);
}

TEST(GmmTable, ARowThisBuildCannotRunIsOneWarningAndTheDefaultServes) {
  TGEMM_REQUIRE_GPU();
  test::GmmCase c = tiny_case();
  test::GmmData d = test::make_gmm(c, 7);
  const DispatchInfo dflt = describe_gmm(d.lv, d.rv, d.sv, d.ov, true, nullptr);
  ASSERT_EQ(dflt.level, "default");

  const GmmTuneProblem p = tiny_problem();
  const DeviceInfo& dev = cuda_device_info(cuda_current_device());
  GmmRow row;
  row.key = p.key(dev.arch, dev.sm_count);
  row.m = p.m;
  row.solution = "sm90_grouped_bf16_bk_999x128x64_coop";
  std::vector<std::string> said;
  LogSink previous = set_log_sink([&](LogLevel level, const std::string& m) {
    if (level == LogLevel::kWarning) said.push_back(m);
  });
  {
    GmmTableFile file({row});
    const DispatchInfo info = describe_gmm(d.lv, d.rv, d.sv, d.ov, true, nullptr);
    EXPECT_EQ(info.level, "default");
    EXPECT_EQ(info.kernel_name, dflt.kernel_name);
    describe_gmm(d.lv, d.rv, d.sv, d.ov, true, nullptr);
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find(file.path() + ":2: "), std::string::npos) << said[0];
    EXPECT_NE(said[0].find("sm90_grouped_bf16_bk_999x128x64_coop"), std::string::npos) << said[0];
    test::run_gmm(d, nullptr);
    device_synchronize();
    test::expect_gmm_matches(d, c.sizes);
  }
  set_log_sink(previous);
}

// A TGEMM_GROUPED_BACKEND that is none of auto, tile, cutlass is one warning at reload_config()
// and means auto: gmm routes by its default rule, never "forced", and runs.
TEST(GmmTable, ABadBackendValueIsOneWarningAndTheDefaultServes) {
  TGEMM_REQUIRE_GPU();
  test::GmmCase c = tiny_case();
  test::GmmData d = test::make_gmm(c, 10);
  std::vector<std::string> said;
  LogSink previous = set_log_sink([&](LogLevel level, const std::string& m) {
    if (level == LogLevel::kWarning && m.find("TGEMM_GROUPED_BACKEND") != std::string::npos) said.push_back(m);
  });
  {
    test::EnvScope tables("TGEMM_CONFIG_GMM", "/nonexistent/tuned_gmm.csv");
    test::EnvScope backend("TGEMM_GROUPED_BACKEND", "wmma");
    const DispatchInfo info = describe_gmm(d.lv, d.rv, d.sv, d.ov, true, nullptr);
    EXPECT_EQ(info.level, "default");
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find("'wmma'"), std::string::npos) << said[0];
    test::run_gmm(d, nullptr);
    device_synchronize();
    test::expect_gmm_matches(d, c.sizes);
  }
  set_log_sink(previous);
}

// TGEMM_TUNE_GEMM=1: a call no row serves records its key once, at the bucket's top M (G x 64 for
// 40 rows a group), which `tgemm tune-gmm -i` races.
TEST(GmmTable, TheCaptureRecordsAKeyNoRowServesOnce) {
  TGEMM_REQUIRE_GPU();
  char dir[] = "/tmp/tgemm_gmm_capture_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/untuned_gmm.csv";
  {
    test::EnvScope tune("TGEMM_TUNE_GEMM", "1");
    test::EnvScope untuned("TGEMM_UNTUNED_GMM", path.c_str());
    test::EnvScope tables("TGEMM_CONFIG_GMM", "/nonexistent/tuned_gmm.csv");
    test::EnvScope backend("TGEMM_GROUPED_BACKEND", nullptr);
    test::GmmCase c;
    c.m = 4 * 40;
    c.n = 256;
    c.k = 128;
    c.transpose_rhs = true;
    c.sizes = {50, 30, 40, 40};
    test::GmmData d = test::make_gmm(c, 9);
    test::run_gmm(d, nullptr);
    test::run_gmm(d, nullptr);
    device_synchronize();
    test::expect_gmm_matches(d, c.sizes);
  }
  reload_config();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "G,M,N,K,rhs,dtype,outdtype,bias\n4,256,256,128,gnk,torch.bfloat16,torch.bfloat16,False\n");
  std::remove(path.c_str());
  std::remove((path + ".lock").c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace tgemm
