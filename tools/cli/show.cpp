// `tgemm show`: the loaded tables, and for a given problem which row and walk level it resolves to.
#include "tools/cli/show.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/check.h"
#include "core/log.h"
#include "core/settings.h"
#include "core/table.h"
#include "runtime/device_utils.h"
#include "runtime/runtime.h"
#include "tgemm/tgemm.h"
#include "tools/cli/common.h"

namespace tgemm::cli {

namespace {

// Per-card tables present (each the whole table of the devices of its card, which then do not
// read the table above).
void print_card_tables(const Settings& settings) {
  const std::string& dir = settings.a16w16.card_table_dir;
  if (dir.empty()) return;
  std::error_code ec;
  std::vector<std::string> tables;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string f = card_table_path(dir, e.path().filename().string(), family_info(OpFamily::kA16W16).table);
    if (e.is_directory(ec) && std::filesystem::exists(f, ec)) tables.push_back(f);
  }
  std::sort(tables.begin(), tables.end());
  fmt::print("per-card tables (on a device of that card, in place of the above): {}\n",
             tables.empty() ? std::string("none") : fmt::format("{}", fmt::join(tables, ", ")));
}

// The files this GPU's a16w16 lookups read: its card's table where the shipped directory has one.
void print_device_tables() {
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  fmt::print("tables on this device ({}, card '{}'): {}\n", dev.name, card_slug(dev.name),
             fmt::join(rt.dispatcher().table_files_for(OpFamily::kA16W16, dev), ":"));
}

// The tables and, with --rows, their rows.
void print_tables(const ShowOptions& o) {
  // Tables load without a GPU; resolution needs one (device arch, SM count, cuBLASLt checks).
  Settings settings = Settings::from_env(o.config_dir.empty() ? std::string() : o.config_dir,
                                         [](const char* n) { return static_cast<const char*>(std::getenv(n)); });
  if (o.config_dir.empty()) {
    // Same search as the library: no GPU is needed to find the shipped directory.
    settings = Settings::from_env(Runtime::get().shipped_config_dir(),
                                  [](const char* n) { return static_cast<const char*>(std::getenv(n)); });
  }
  Table table;
  std::vector<std::string> warnings;
  for (const auto& f : settings.a16w16.table_files) table.load_file(f, warnings);
  fmt::print("a16w16 tables (TGEMM_CONFIG_GEMM_BF16 or shipped):\n");
  for (const auto& f : settings.a16w16.table_files) fmt::print("  {}\n", f);
  for (const auto& w : warnings) fmt::print("  warning: {}\n", w);
  fmt::print("{} rows\n", table.size());
  print_card_tables(settings);
  std::vector<const TableRow*> rows = table.all_rows();
  if (o.rows) {
    fmt::print("{}\n", fmt::join(tuned_table_columns(), ","));
    for (const TableRow* r : rows) {
      if (o.n > 0 && r->key.n != o.n) continue;
      if (o.k > 0 && r->key.k != o.k) continue;
      fmt::print("{}   # {}:{}\n", format_tuned_row(*r), r->file, r->line);
    }
  }
}

// Where -m/-n/-k resolve on this GPU.
int resolve(const ShowOptions& o) {
  TGEMM_CHECK(o.n > 0 && o.k > 0, "tgemm show", "-n and -k must be given (> 0) with -m");
  check_dim("tgemm show", "-m", o.m, 0);
  check_dim("tgemm show", "-n", o.n, 1);
  check_dim("tgemm show", "-k", o.k, 1);
  DType in = parse_dtype(o.dtype, "--dtype");
  DType out = o.out_dtype.empty() ? in : parse_dtype(o.out_dtype, "--out-dtype");
  DeviceBuffer x(static_cast<std::size_t>(std::max<std::int64_t>(o.m * o.k, 1)) * dtype_size(in));
  DeviceBuffer w(static_cast<std::size_t>(o.n * o.k) * dtype_size(in));
  DeviceBuffer y(static_cast<std::size_t>(std::max<std::int64_t>(o.m * o.n, 1)) * dtype_size(out));
  DeviceBuffer b(static_cast<std::size_t>(o.n) * dtype_size(in));
  TensorView xv = TensorView::contiguous(x.data(), in, {o.m, o.k});
  TensorView wv = TensorView::contiguous(w.data(), in, {o.n, o.k});
  TensorView yv = TensorView::contiguous(y.data(), out, {o.m, o.n});
  TensorView bv = TensorView::contiguous(b.data(), in, {o.n});
  GemmOptions opts;
  if (o.bias) opts.bias = &bv;
  DispatchInfo info = describe_gemm_a16w16(xv, wv, yv, opts);
  fmt::print("M={} N={} K={} bias={} dtype={} outdtype={}\n  level: {}\n", o.m, o.n, o.k, o.bias ? "True" : "False",
             dtype_name(in), dtype_name(out), info.level);
  if (info.matched_m >= 0) fmt::print("  row: {}:{} (tuned M={})\n", info.file, info.line, info.matched_m);
  fmt::print("  libtype: {}\n  kernelName: {}\n", info.libtype, info.kernel_name);
  return 0;
}

}  // namespace

int run_show(const ShowOptions& o) {
  print_tables(o);
  std::string why;
  const bool gpu = cuda_device_available(&why);
  if (gpu) print_device_tables();
  if (o.m < 0) return 0;
  if (!gpu) {
    fmt::print("resolving a problem needs a CUDA GPU (arch, SM count, cuBLASLt checks): {}\n", why);
    return 2;
  }
  return resolve(o);
}

}  // namespace tgemm::cli
