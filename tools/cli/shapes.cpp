// `tgemm shapes`: the untuned CSV of a model (from its config.json) or of a shape suite, with
// M = tokens. `tgemm merge`: tuned tables merged, duplicates keeping the lowest `us`.
// `tgemm compare`: how far two tuned tables of the same problems agree.
#include "tools/cli/shapes.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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
#include "runtime/runtime.h"
#include "tools/cli/common.h"
#include "tuner/data.h"
#include "tuner/timing.h"

namespace tgemm::cli {

namespace {

// The (N, K) pairs of the model's config.json or of the shape suite; a model's torch_dtype, where
// it names a dtype, goes to `dtype`.
std::vector<LinearShape> linear_shapes_of(const ShapesOptions& o, std::string& dtype) {
  std::vector<LinearShape> shapes;
  if (o.model_dir.empty()) {
    for (const SuiteShape& s : read_suite(o.suite)) shapes.push_back({s.model + "/" + s.layer, s.n, s.k, 1.0});
    return shapes;
  }
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
  const std::string md = model_dtype(text.str());
  if (!md.empty() && dtype_from_name(md)) dtype = md;
  return shapes;
}

}  // namespace

int run_shapes(const ShapesOptions& o) {
  TGEMM_CHECK(o.model_dir.empty() != o.suite.empty(), "tgemm shapes", "give exactly one of --model_dir and --suite");
  TGEMM_CHECK(o.batch_size >= 1, "tgemm shapes", "--batch_size must be >= 1, got ", o.batch_size);
  std::vector<std::int64_t> nsets = parse_int_list(o.nsets, "--nsets");
  std::string dtype_name_str = "torch.bfloat16";
  const std::vector<LinearShape> shapes = linear_shapes_of(o, dtype_name_str);
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
  std::vector<std::size_t> from;  // index of the input file each row came from
  for (std::size_t f = 0; f < o.inputs.size(); ++f) {
    const std::string& path = o.inputs[f];
    std::ifstream in(path);
    TGEMM_CHECK(static_cast<bool>(in), "tgemm merge", "cannot open '", path, "'");
    ParsedTable t = parse_tuned_table(in, path);
    for (const auto& w : t.warnings) fmt::print(stderr, "warning: {}\n", w);
    for (auto& r : t.rows) {
      bool replaced = false;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].key == r.key && rows[i].m == r.m) {
          if ((o.later_wins && from[i] < f) || r.us < rows[i].us) {
            rows[i] = r;
            from[i] = f;
          }
          replaced = true;
          break;
        }
      }
      if (!replaced) {
        rows.push_back(r);
        from.push_back(f);
      }
    }
  }
  write_tuned_table(o.output, rows);
  fmt::print("merged {} files into {} ({} rows)\n", o.inputs.size(), o.output, rows.size());
  return 0;
}

namespace {
std::vector<TableRow> read_table(const std::string& path, const char* what) {
  std::ifstream in(path);
  TGEMM_CHECK(static_cast<bool>(in), "tgemm compare", "cannot open ", what, " '", path, "'");
  ParsedTable t = parse_tuned_table(in, path);
  for (const auto& w : t.warnings) fmt::print(stderr, "warning: {}\n", w);
  return t.rows;
}

// --measure: the two rows' solutions of one problem timed against each other on this GPU; the
// ratio is A's time / B's (paired). Throws when a row cannot be turned into a runnable solution.
PairTiming measure_rows(const TableRow& ra, const TableRow& rb, int rounds, int placements, bool short_slots,
                        int min_rotation_sets) {
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  TGEMM_CHECK(rb.key.arch == dev.arch && rb.key.sm_count == dev.sm_count, "tgemm compare --measure", "the row ",
              rb.key.describe(), " M=", rb.m, " is for ", rb.key.arch, " with ", rb.key.sm_count, " SMs, this GPU (",
              dev.name, ") is ", dev.arch, " with ", dev.sm_count, " SMs");
  const GemmProblem p = problem_of_key(rb.key, rb.m, device);
  SolutionPtr sol[2];
  const TableRow* rows[2] = {&ra, &rb};
  for (int i = 0; i < 2; ++i) {
    const Backend* backend = rt.registry().find(rows[i]->libtype);
    TGEMM_CHECK(backend != nullptr, "tgemm compare --measure", "no backend '", rows[i]->libtype, "' in this build (",
                rows[i]->file, ":", rows[i]->line, ")");
    std::string why;
    sol[i] = backend->from_row(*rows[i], p, why);
    TGEMM_CHECK(sol[i] != nullptr, "tgemm compare --measure", "the row ", rows[i]->kernel_name, " (", rows[i]->file,
                ":", rows[i]->line, ") cannot run ", p.describe(), ": ", why);
  }
  RaceOptions ro;
  ro.short_slots = short_slots;
  ro.data.min_rotation_sets = min_rotation_sets;
  return time_solution_pair(p, *sol[0], *sol[1], ro, rounds, placements);
}

}  // namespace

namespace {

// The verdicts of the rows both tables have.
struct CompareCounts {
  int common = 0, identical = 0, within = 0, beyond = 0, only_a = 0, only_b = 0, a_faster = 0, b_faster = 0,
      unmeasured = 0;
};

class TableComparison {
 public:
  explicit TableComparison(const CompareOptions& o) : o_(o) {}

  // A's row ra and B's row rb of the same problem and M.
  void compare(const TableRow& ra, const TableRow& rb) {
    ++n_.common;
    if (ra.kernel_name == rb.kernel_name) {
      ++n_.identical;
      json_row(ra, rb, "identical");
      return;
    }
    // Times: the tables' own (two runs), or with --measure both timed here, paired.
    double ta = ra.us, tb = rb.us;
    std::string range;
    PairTiming measured{};
    if (o_.measure && !measure(ra, rb, measured, range)) return;
    if (o_.measure) {
      ta = measured.ratio;
      tb = 1.0;
    }
    const double lo = std::min(ta, tb), hi = std::max(ta, tb);
    const bool tie = lo > 0 && hi <= lo * (1.0 + o_.tie_band);
    ++(tie ? n_.within : n_.beyond);
    if (!tie) ++(ta < tb ? n_.a_faster : n_.b_faster);
    nlohmann::json& jr = json_row(ra, rb, tie ? "tie" : (ta < tb ? "a_faster" : "b_faster"));
    if (o_.measure) {
      jr["ratio"] = measured.ratio;
      jr["min_ratio"] = measured.min_ratio;
      jr["max_ratio"] = measured.max_ratio;
      jr["placements"] = measured.placements;
    }
    lines_.push_back(difference(ra, rb, lo > 0 ? (tb / ta - 1.0) * 100.0 : 0.0, range, tie));
    if (o_.measure) fmt::print("{}\n", lines_.back());
  }

  void print_summary() const {
    if (!lines_.empty() && !o_.measure) {
      fmt::print("rows that differ (A | B):\n");
      for (const auto& l : lines_) fmt::print("{}\n", l);
    }
    const double pct = n_.common > 0 ? 100.0 * n_.identical / n_.common : 0.0;
    fmt::print("{} rows in both tables: {} identical ({:.1f}%), {} differ within the tie band of {:.1f}%, "
               "{} differ beyond it; {} only in A, {} only in B\n",
               n_.common, n_.identical, pct, n_.within, o_.tie_band * 100.0, n_.beyond, n_.only_a, n_.only_b);
    if (o_.measure) {
      fmt::print("measured on this GPU: {} of {} rows agree or tie ({:.1f}%); beyond the band A's row faster in {}, "
                 "B's in {}; {} not measured\n",
                 n_.identical + n_.within, n_.common,
                 n_.common > 0 ? 100.0 * (n_.identical + n_.within) / n_.common : 0.0, n_.a_faster, n_.b_faster,
                 n_.unmeasured);
    }
  }

  void write_json() const {
    nlohmann::json doc = {{"a", o_.a}, {"b", o_.b}, {"tie_band", o_.tie_band}, {"measure", o_.measure},
                          {"rounds", o_.rounds}, {"placements", o_.placements}, {"short_slots", o_.short_slots},
                          {"min_rotation_sets", o_.min_rotation_sets}, {"commit", current_commit()},
                          {"date", iso_date()}, {"rows", json_rows_},
                          {"summary", {{"common", n_.common}, {"identical", n_.identical}, {"within", n_.within},
                                       {"beyond", n_.beyond}, {"a_faster", n_.a_faster}, {"b_faster", n_.b_faster},
                                       {"not_measured", n_.unmeasured}, {"only_a", n_.only_a}, {"only_b", n_.only_b}}}};
    if (o_.measure) {
      const Runtime& rt = Runtime::get();
      doc["device"] = rt.platform().device_info(rt.platform().current_device()).name;
    }
    std::ofstream out(o_.json);
    TGEMM_CHECK(static_cast<bool>(out), "tgemm compare", "cannot write --json '", o_.json, "'");
    out << doc.dump(2) << "\n";
    TGEMM_CHECK(static_cast<bool>(out), "tgemm compare", "write to --json '", o_.json, "' failed");
    fmt::print("wrote {}\n", o_.json);
  }

  CompareCounts& counts() { return n_; }

 private:
  // One differing row: B's time relative to A's in percent (diff), measured here or the tables'.
  std::string difference(const TableRow& ra, const TableRow& rb, double diff, const std::string& range, bool tie) const {
    const char* band = tie ? "within the tie band" : "beyond the tie band";
    if (o_.measure) {
      return fmt::format("  {} M={}: {} | {} (B {:+.2f}% vs A, measured here, paired{}; tables: {:.3f} | {:.3f} us; {})",
                         rb.key.describe(), rb.m, ra.kernel_name, rb.kernel_name, diff, range, ra.us, rb.us, band);
    }
    return fmt::format("  {} M={}: {} {:.3f} us | {} {:.3f} us ({:+.2f}%, {})", rb.key.describe(), rb.m, ra.kernel_name,
                       ra.us, rb.kernel_name, rb.us, diff, band);
  }

  nlohmann::json& json_row(const TableRow& ra, const TableRow& rb, const char* verdict) {
    json_rows_.push_back({{"problem", rb.key.describe()}, {"m", rb.m}, {"a", ra.kernel_name}, {"b", rb.kernel_name},
                          {"a_table_us", ra.us}, {"b_table_us", rb.us}, {"verdict", verdict}});
    return json_rows_.back();
  }

  // --measure: false when the pair could not be measured (reported, the others still measured).
  bool measure(const TableRow& ra, const TableRow& rb, PairTiming& t, std::string& range) {
    try {
      t = measure_rows(ra, rb, o_.rounds, o_.placements, o_.short_slots, o_.min_rotation_sets);
    } catch (const Error& e) {
      // A row this build cannot run (stale, unknown solution).
      if (is_sticky_error(e)) throw;
      ++n_.unmeasured;
      fmt::print("  {} M={}: not measured: {}\n", rb.key.describe(), rb.m, e.what());
      json_row(ra, rb, "not_measured")["error"] = e.what();
      return false;
    }
    if (t.placements > 1) {
      range = fmt::format(", median of {} placements, B {:+.2f}..{:+.2f}%", t.placements,
                          (1.0 / t.max_ratio - 1.0) * 100.0, (1.0 / t.min_ratio - 1.0) * 100.0);
    }
    return true;
  }

  const CompareOptions& o_;
  CompareCounts n_;
  std::vector<std::string> lines_;
  nlohmann::json json_rows_ = nlohmann::json::array();
};

}  // namespace

int run_compare(const CompareOptions& o) {
  TGEMM_CHECK(o.tie_band >= 0 && o.tie_band < 1, "tgemm compare", "--tie-band must be in [0, 1), got ", o.tie_band);
  TGEMM_CHECK(o.rounds >= 1, "tgemm compare", "--rounds must be >= 1, got ", o.rounds);
  TGEMM_CHECK(o.placements >= 1, "tgemm compare", "--placements must be >= 1, got ", o.placements);
  TGEMM_CHECK(o.min_rotation_sets >= 1 && o.min_rotation_sets <= 32, "tgemm compare",
              "--min_rotation_sets must be in [1, 32], got ", o.min_rotation_sets);
  const std::vector<TableRow> a = read_table(o.a, "table A");
  const std::vector<TableRow> b = read_table(o.b, "table B");
  if (o.measure) require_gpu("compare --measure");
  TableComparison cmp(o);
  std::vector<bool> matched(a.size(), false);
  for (const TableRow& rb : b) {
    std::size_t i = 0;
    while (i < a.size() && !(a[i].key == rb.key && a[i].m == rb.m)) ++i;
    if (i == a.size()) {
      ++cmp.counts().only_b;
      continue;
    }
    matched[i] = true;
    cmp.compare(a[i], rb);
  }
  for (bool m : matched) cmp.counts().only_a += m ? 0 : 1;
  cmp.print_summary();
  if (!o.json.empty()) cmp.write_json();
  return 0;
}

}  // namespace tgemm::cli
