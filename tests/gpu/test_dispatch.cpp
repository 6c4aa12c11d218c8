// Tables drive dispatch on the real GPU: a row makes the dispatcher run exactly that solution
// (and the log says so); broken rows (unknown kernel, bad configuration, other SM count, stale
// cuBLASLt version, unknown libtype, malformed line) are warned about with file:line and skipped;
// a problem without a row runs the default.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <vector>

#include "backends/cublaslt/cublaslt_backend.h"
#include "core/log.h"
#include "core/settings.h"
#include "core/csv.h"
#include "core/table.h"
#include "runtime/runtime.h"
#include "tests/common/gpu_test_util.h"
#include "tgemm/tgemm.h"

namespace tgemm::test {
namespace {

struct LogCapture {
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> lines;
  LogSink previous;
  LogCapture() {
    previous = set_log_sink([this](LogLevel l, const std::string& m) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.emplace_back(l, m);
    });
  }
  ~LogCapture() { set_log_sink(previous); }
  int count(LogLevel level, const std::string& needle) {
    std::lock_guard<std::mutex> lock(mutex);
    int n = 0;
    for (auto& [l, m] : lines) n += (l == level && m.find(needle) != std::string::npos) ? 1 : 0;
    return n;
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string s;
    for (auto& [l, m] : lines) s += (l == LogLevel::kWarning ? "W: " : "I: ") + m + "\n";
    return s;
  }
};

class DispatchTables : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("TGEMM_CONFIG_GEMM_BF16");
    unsetenv("TGEMM_LOG_TUNED_CONFIG");
    if (has_gpu()) reload_config();
  }
};

TableRow row_for(const DeviceInfo& dev, std::int64_t m, std::int64_t n, std::int64_t k, const std::string& libtype,
                 const std::string& name) {
  TableRow r;
  r.key.arch = dev.arch;
  r.key.sm_count = dev.sm_count;
  r.key.n = n;
  r.key.k = k;
  r.m = m;
  r.libtype = libtype;
  r.kernel_name = name;
  r.us = 1.0;
  return r;
}

TEST_F(DispatchTables, RowsRouteBrokenRowsWarnMissingRowsDefault) {
  TGEMM_REQUIRE_GPU();
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  const std::int64_t k = 512;

  // The configuration to route to: the heuristic's second candidate when there is one, so a
  // pass proves the row (not the heuristic) chose it.
  A16W16Case base;
  base.m = 64;
  base.n = 1024;
  base.k = k;
  A16W16Data d1 = make_a16w16(base, 1);
  auto top = LtSolution::heuristic_top(d1.problem(), 8);
  ASSERT_FALSE(top.empty());
  const std::string routed = top.size() > 1 ? top[1]->name() : top[0]->name();
  LtConfig bad = top[0]->chosen_config();
  bad.tile = 9999;
  LtConfig stale = top[0]->chosen_config();
  stale.version = 120900;

  std::string path = ::testing::TempDir() + "tgemm_dispatch_" + std::to_string(::getpid()) + ".csv";
  std::vector<TableRow> rows = {
      row_for(dev, 64, 1024, k, "cublaslt", routed),                               // line 2: exact
      row_for(dev, 16, 1536, k, "cublaslt", routed),                               // line 3: M = 16 only, not M = 5
      row_for(dev, 64, 1088, k, "cublaslt",
              "cublaslt:algo99999_tile0_stages0_splitk1_red0_swz0_opt0_inner0_cluster0_v" +
                  std::to_string(cublaslt_runtime_version())),                      // line 4: unknown algo
      row_for(dev, 64, 1152, k, "cublaslt", format_lt_name(bad)),                   // line 5: bad config
      row_for(dev, 64, 1280, k, "nosuchlib", "nosuchlib:kernel"),                   // line 6: unknown libtype
      row_for(dev, 64, 1344, k, "cublaslt", format_lt_name(stale)),                 // line 7: stale version
      row_for(dev, 64, 1472, k, "reference", "reference:simt_f32acc"),              // line 8: reference
  };
  TableRow other_sm = row_for(dev, 64, 1216, k, "cublaslt", routed);
  other_sm.key.sm_count = dev.sm_count + 18;
  {
    std::ofstream out(path);
    out << csv::join(tuned_table_columns()) << "\n";
    for (const auto& r : rows) out << format_tuned_row(r) << "\n";
    out << "sm_90a,132,64,1600,512,False\n";  // line 9: malformed
  }
  std::string other_path = path + ".other_sm.csv";
  {
    std::ofstream out(other_path);
    out << csv::join(tuned_table_columns()) << "\n"
        << format_tuned_row(other_sm) << "\n";
  }

  LogCapture log;
  setenv("TGEMM_CONFIG_GEMM_BF16", (path + ":" + other_path).c_str(), 1);
  setenv("TGEMM_LOG_TUNED_CONFIG", "1", 1);
  reload_config();
  EXPECT_EQ(log.count(LogLevel::kWarning, path + ":9:"), 1) << log.all();

  auto resolve = [&](std::int64_t m, std::int64_t n, std::uint64_t seed) {
    A16W16Case c = base;
    c.m = m;
    c.n = n;
    A16W16Data d = make_a16w16(c, seed);
    DispatchInfo info = describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options());
    std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
    EXPECT_TRUE(err.empty()) << err;
    return info;
  };

  DispatchInfo exact = resolve(64, 1024, 2);
  EXPECT_EQ(exact.level, "exact");
  EXPECT_EQ(exact.kernel_name, routed);
  EXPECT_EQ(exact.line, 2);
  EXPECT_EQ(log.count(LogLevel::kInfo, routed), 1) << log.all();  // logged once per shape
  resolve(64, 1024, 3);
  EXPECT_EQ(log.count(LogLevel::kInfo, "N=1024 "), 1) << log.all();

  // M = 5 has no row (the M = 16 row of this key was not measured there): the default.
  DispatchInfo other_m = resolve(5, 1536, 4);
  EXPECT_EQ(other_m.level, "default");
  EXPECT_EQ(other_m.matched_m, -1);

  struct Broken {
    std::int64_t n;
    int line;
    std::string file, needle;
  };
  for (const Broken& b : {Broken{1088, 4, path, "99999"}, Broken{1152, 5, path, "tile9999"},
                          Broken{1280, 6, path, "nosuchlib"}, Broken{1344, 7, path, "stale"}}) {
    DispatchInfo info = resolve(64, b.n, 10 + static_cast<std::uint64_t>(b.n));
    EXPECT_EQ(info.level, "default") << "N=" << b.n;
    EXPECT_EQ(log.count(LogLevel::kWarning, b.file + ":" + std::to_string(b.line) + ":"), 1)
        << "N=" << b.n << "\n" << log.all();
    EXPECT_EQ(log.count(LogLevel::kWarning, b.needle), 1) << "N=" << b.n << "\n" << log.all();
  }

  DispatchInfo other = resolve(64, 1216, 20);
  EXPECT_EQ(other.level, "default");
  EXPECT_EQ(log.count(LogLevel::kWarning, "has " + std::to_string(dev.sm_count) + " SMs"), 1) << log.all();

  DispatchInfo reference = resolve(64, 1472, 21);
  EXPECT_EQ(reference.level, "exact");
  EXPECT_EQ(reference.libtype, "reference");

  DispatchInfo none = resolve(64, 1408, 22);
  EXPECT_EQ(none.level, "default");
  EXPECT_EQ(none.line, 0);
  EXPECT_FALSE(none.libtype.empty());

  std::remove(path.c_str());
  std::remove(other_path.c_str());
}

// A row naming cublaslt:heuristic_torch_default runs PyTorch's heuristic choice (the bench's
// baseline), bytewise the same algorithm, correct against the reference; where that choice would
// reduce split-K partial sums in the 16-bit output, the row is refused with a warning naming why
// and the problem runs the default.
TEST_F(DispatchTables, TorchDefaultRowRunsTheBaselinesAlgorithm) {
  TGEMM_REQUIRE_GPU();
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  const std::string path = ::testing::TempDir() + "tgemm_torchdef_" + std::to_string(::getpid()) + ".csv";
  const std::vector<std::pair<std::int64_t, std::int64_t>> mns = {{512, 1024}, {1, 4096}, {16, 1280}};
  const std::int64_t k = 4096;
  {
    std::ofstream out(path);
    out << csv::join(tuned_table_columns()) << "\n";
    for (const auto& [m, n] : mns)
      out << format_tuned_row(row_for(dev, m, n, k, "cublaslt", std::string(kCublasLtTorchDefaultName))) << "\n";
  }
  LogCapture log;
  setenv("TGEMM_CONFIG_GEMM_BF16", path.c_str(), 1);
  reload_config();
  int routed = 0;
  for (std::size_t i = 0; i < mns.size(); ++i) {
    A16W16Case c;
    c.m = mns[i].first;
    c.n = mns[i].second;
    c.k = k;
    A16W16Data d = make_a16w16(c, 300 + i);
    SCOPED_TRACE(d.problem().describe());
    std::string why;
    auto torch = LtSolution::heuristic(d.problem(), why, /*torch_default=*/true);
    ASSERT_NE(torch, nullptr) << why;
    const LtConfig tc = torch->chosen_config();
    const bool allowed = tc.split_k <= 1 || tc.reduction == static_cast<int>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
    DispatchInfo info = describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options());
    std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
    EXPECT_TRUE(err.empty()) << err;
    if (allowed) {
      EXPECT_EQ(info.level, "exact");
      EXPECT_EQ(info.kernel_name, kCublasLtTorchDefaultName);
      auto lt = std::dynamic_pointer_cast<const LtSolution>(rt.dispatcher().resolve(d.problem()).solution);
      ASSERT_NE(lt, nullptr);
      EXPECT_EQ(std::memcmp(&lt->algo(), &torch->algo(), sizeof(cublasLtMatmulAlgo_t)), 0);
      ++routed;
    } else {
      EXPECT_EQ(info.level, "default");
      EXPECT_GE(log.count(LogLevel::kWarning, "16-bit output type"), 1) << log.all();
    }
  }
  EXPECT_GE(routed, 1) << "no problem's PyTorch default was allowed: the test routed nothing";
  std::remove(path.c_str());
}

// Per-card tables on the real device: with the shipped directory (no TGEMM_CONFIG_GEMM_BF16),
// the table for this device's card, <dir>/<card>/bf16_tuned_gemm.csv, is its whole table: its row
// serves, a shared row does not, and the one file reported is the card's. A directory without a
// file for this card serves the shared table. The install's own directory follows the same rule.
TEST_F(DispatchTables, CardTableReplacesTheSharedTableOnThisCard) {
  TGEMM_REQUIRE_GPU();
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  const std::string card = card_slug(dev.name);
  ASSERT_FALSE(card.empty()) << dev.name;
  const std::string previous_dir = rt.shipped_config_dir();
  const std::string root = ::testing::TempDir() + "tgemm_card_table_" + std::to_string(::getpid());
  const std::string with_card = root + "/with_card", shared_only = root + "/shared_only";
  ASSERT_EQ(std::system(("mkdir -p '" + with_card + "/" + card + "' '" + shared_only + "'").c_str()), 0);
  const std::string header = csv::join(tuned_table_columns()) + "\n";
  const std::int64_t k = 4096;
  for (const std::string& dir : {with_card, shared_only}) {
    std::ofstream shared(dir + "/bf16_tuned_gemm.csv");
    shared << header << format_tuned_row(row_for(dev, 512, 1024, k, "cublaslt", "cublaslt:heuristic")) << "\n"
           << format_tuned_row(row_for(dev, 512, 2048, k, "cublaslt", "cublaslt:heuristic")) << "\n";
  }
  const std::string own = card_table_path(with_card, card, "bf16");
  {
    std::ofstream table(own);
    table << header << format_tuned_row(row_for(dev, 512, 1024, k, "cublaslt", std::string(kCublasLtTorchDefaultName)))
          << "\n";
  }
  // TGEMM_CONFIG_DIR (the device scripts set it) would take precedence over the directory set here.
  const char* config_dir_env = std::getenv("TGEMM_CONFIG_DIR");
  const std::string saved_config_dir = config_dir_env ? config_dir_env : "";
  unsetenv("TGEMM_CONFIG_DIR");
  unsetenv("TGEMM_CONFIG_GEMM_BF16");
  const auto check = [&](std::int64_t n, const std::string& level, const std::string& kernel, const std::string& file) {
    A16W16Case c;
    c.m = 512;
    c.n = n;
    c.k = k;
    A16W16Data d = make_a16w16(c, 400 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(d.problem().describe());
    DispatchInfo info = describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options());
    EXPECT_EQ(info.level, level);
    if (!kernel.empty()) EXPECT_EQ(info.kernel_name, kernel);
    EXPECT_EQ(info.file, file);
    std::string err = run_and_compare(d, [&] { gemm_a16w16(d.xv, d.wv, d.ov, d.options(), nullptr); });
    EXPECT_TRUE(err.empty()) << err;
  };

  set_shipped_config_dir(with_card);
  ASSERT_EQ(rt.shipped_config_dir(), with_card);
  // PyTorch's choice for this problem reduces nothing in 16 bits (DispatchTables.
  // TorchDefaultRowRunsTheBaselinesAlgorithm routed it on an H100), so the card's row applies.
  check(1024, "exact", std::string(kCublasLtTorchDefaultName), own);
  check(2048, "default", "", "");  // only the shared table has a row: not this card's
  EXPECT_EQ(rt.dispatcher().table_files_for(OpFamily::kA16W16, dev), (std::vector<std::string>{own}));
  EXPECT_EQ(a16w16_table_files(), (std::vector<std::string>{own}));

  set_shipped_config_dir(shared_only);
  check(1024, "exact", std::string(kCublasLtHeuristicName), shared_only + "/bf16_tuned_gemm.csv");
  check(2048, "exact", std::string(kCublasLtHeuristicName), shared_only + "/bf16_tuned_gemm.csv");
  EXPECT_EQ(a16w16_table_files(), (std::vector<std::string>{shared_only + "/bf16_tuned_gemm.csv"}));

  // The shipped directory: this card's table where it ships one (configs/h200/ on an H200), else
  // the shared table.
  if (config_dir_env != nullptr) setenv("TGEMM_CONFIG_DIR", saved_config_dir.c_str(), 1);
  set_shipped_config_dir(previous_dir);
  const std::string shipped = rt.shipped_config_dir();
  const std::string shipped_own = card_table_path(shipped, card, "bf16");
  const bool ships_own = std::ifstream(shipped_own).good();
  EXPECT_EQ(a16w16_table_files(),
            (std::vector<std::string>{ships_own ? shipped_own : shipped + "/bf16_tuned_gemm.csv"}))
      << dev.name;
  EXPECT_EQ(std::system(("rm -rf '" + root + "'").c_str()), 0);
}

TEST_F(DispatchTables, ShippedTableRowsAreAllValidOnThisDevice) {
  TGEMM_REQUIRE_GPU();
  // Every row of the shipped tables for this device, whatever its epilogue, must resolve to itself
  // at the exact level: a stale or broken shipped row would silently fall back. The rows are those
  // this device dispatches with: its card's table where one ships (configs/h200/ on an H200), else
  // the shared table.
  LogCapture log;
  reload_config();
  Runtime& rt = Runtime::get();
  int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  const Table& table = rt.dispatcher().table_for(OpFamily::kA16W16, dev);
  int checked = 0, not_built = 0;
  for (const TableRow* r : table.all_rows()) {
    if (r->key.arch != dev.arch || r->key.sm_count != dev.sm_count) continue;
#ifdef TGEMM_KERNELS_CI_SUBSET
    // This build holds the CI subset of the CUTLASS instances: a row naming another instance is
    // refused (with a warning) as the library must; the full build (scripts/gpu-check) checks it.
    std::string why;
    const Backend* cutlass = rt.registry().find("cutlass");
    if (r->libtype == "cutlass" && cutlass != nullptr && !cutlass->from_row(*r, GemmProblem{}, why)) {
      ++not_built;
      continue;
    }
#endif
    A16W16Case c;
    c.m = r->m;
    c.n = r->key.n;
    c.k = r->key.k;
    c.in = r->key.dtype;
    c.out = r->key.out_dtype;
    c.bias = r->key.bias;
    // The row's epilogue (gelu rows, scaled, + beta*c): the call must ask for the same one.
    c.activation = r->key.epilogue.activation;
    if (r->key.epilogue.scaled) c.alpha = 0.5f;
    if (r->key.epilogue.use_c) c.beta = 1.0f;
    A16W16Data d = make_a16w16(c, static_cast<std::uint64_t>(checked) + 100);
    DispatchInfo info = describe_gemm_a16w16(d.xv, d.wv, d.ov, d.options());
    EXPECT_EQ(info.level, "exact") << r->file << ":" << r->line;
    EXPECT_EQ(info.kernel_name, r->kernel_name) << r->file << ":" << r->line;
    EXPECT_EQ(info.file + ":" + std::to_string(info.line), r->file + ":" + std::to_string(r->line));
    ++checked;
  }
  EXPECT_EQ(log.count(LogLevel::kWarning, "") - log.count(LogLevel::kWarning, "no such solution in this build"), 0)
      << log.all();
#ifndef TGEMM_KERNELS_CI_SUBSET
  EXPECT_EQ(log.count(LogLevel::kWarning, "no such solution in this build"), 0) << log.all();
#endif
  EXPECT_GT(checked, 0);
  RecordProperty("rows_checked", checked);
  RecordProperty("rows_not_in_this_build", not_built);
}

}  // namespace
}  // namespace tgemm::test
