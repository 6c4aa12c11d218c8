// `tgemm shapes`: the untuned CSV of a model (from its config.json) or of a shape suite, with
// M = tokens. `tgemm merge`: tuned tables merged, duplicates keeping the lowest `us`.
#include "tools/cli/shapes.h"

#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "core/check.h"
#include "core/csv.h"
#include "core/model_shapes.h"
#include "core/table.h"
#include "tools/cli/common.h"

namespace tgemm::cli {

int run_shapes(const ShapesOptions& o) {
  TGEMM_CHECK(o.model_dir.empty() != o.suite.empty(), "tgemm shapes", "give exactly one of --model_dir and --suite");
  TGEMM_CHECK(o.batch_size >= 1, "tgemm shapes", "--batch_size must be >= 1, got ", o.batch_size);
  std::vector<std::int64_t> nsets = parse_int_list(o.nsets, "--nsets");
  std::vector<LinearShape> shapes;
  std::string dtype_name_str = "torch.bfloat16";
  if (!o.model_dir.empty()) {
    std::filesystem::path path(o.model_dir);
    if (std::filesystem::is_directory(path)) path /= "config.json";
    std::ifstream in(path);
    TGEMM_CHECK(static_cast<bool>(in), "tgemm shapes", "cannot open '", path.string(), "'");
    std::stringstream text;
    text << in.rdbuf();
    ModelShapeOptions mo;
    mo.tp = o.tp;
    mo.lm_head = o.lm_head;
    shapes = model_linear_shapes(text.str(), mo);
    std::string md = model_dtype(text.str());
    if (!md.empty() && dtype_from_name(md)) dtype_name_str = md;
  } else {
    for (const SuiteShape& s : read_suite(o.suite)) shapes.push_back({s.model + "/" + s.layer, s.n, s.k, 1.0});
  }
  DType in = o.dtype.empty() ? *dtype_from_name(dtype_name_str) : parse_dtype(o.dtype, "--dtype");
  TGEMM_CHECK(in == DType::kBFloat16 || in == DType::kFloat16, "tgemm shapes", "dtype must be bf16 or fp16, got ",
              dtype_name(in));
  DType out = o.out_dtype.empty() ? in : parse_dtype(o.out_dtype, "--outdtype");
  std::vector<std::string> lines;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, bool> seen;
  for (std::int64_t tokens : nsets) {
    for (const LinearShape& s : shapes) {
      auto m = static_cast<std::int64_t>(std::ceil(static_cast<double>(tokens * o.batch_size) * s.m_scale));
      m = std::max<std::int64_t>(m, 1);
      if (!seen.emplace(std::make_tuple(m, s.n, s.k), true).second) continue;
      lines.push_back(csv::join({std::to_string(m), std::to_string(s.n), std::to_string(s.k), o.bias ? "True" : "False",
                                 std::string(dtype_name(in)), std::string(dtype_name(out)), "False", "False", "none"}));
    }
  }
  std::ofstream f(o.output);
  TGEMM_CHECK(static_cast<bool>(f), "tgemm shapes", "cannot write '", o.output, "'");
  f << csv::join(untuned_table_columns()) << "\n";
  for (const auto& l : lines) f << l << "\n";
  fmt::print("{} (N, K) pairs:\n", shapes.size());
  for (const auto& s : shapes) fmt::print("  {:<16} N={:<6} K={:<6}{}\n", s.layer, s.n, s.k,
                                          s.m_scale != 1.0 ? fmt::format(" (M = tokens x {:.4f})", s.m_scale) : "");
  fmt::print("wrote {} problems to {}\n", lines.size(), o.output);
  return 0;
}

int run_merge(const MergeOptions& o) {
  TGEMM_CHECK(!o.inputs.empty() && !o.output.empty(), "tgemm merge", "give input tables and -o");
  std::vector<TableRow> rows;
  for (const auto& path : o.inputs) {
    std::ifstream in(path);
    TGEMM_CHECK(static_cast<bool>(in), "tgemm merge", "cannot open '", path, "'");
    ParsedTable t = parse_tuned_table(in, path);
    for (const auto& w : t.warnings) fmt::print(stderr, "warning: {}\n", w);
    for (auto& r : t.rows) {
      bool replaced = false;
      for (auto& existing : rows) {
        if (existing.key == r.key && existing.m == r.m) {
          if (r.us < existing.us) existing = r;
          replaced = true;
          break;
        }
      }
      if (!replaced) rows.push_back(r);
    }
  }
  write_tuned_table(o.output, rows);
  fmt::print("merged {} files into {} ({} rows)\n", o.inputs.size(), o.output, rows.size());
  return 0;
}

}  // namespace tgemm::cli
