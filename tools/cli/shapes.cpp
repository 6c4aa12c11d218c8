// `tgemm shapes`: the untuned CSV of a model (from its config.json) or of a shape suite, with
// M = tokens. `tgemm merge`: tuned tables merged, the M ranges of each key kept disjoint.
// `tgemm compare`: how far two tuned tables of the same problems agree.
#include "tools/cli/shapes.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "core/csv.h"
#include "core/m_grid.h"
#include "core/model_shapes.h"
#include "core/table.h"
#include "runtime/runtime.h"
#include "tools/cli/common.h"
#include "tuner/data.h"
#include "tuner/timing.h"

namespace tgemm::cli {

namespace {

// The largest M `tgemm shapes` writes: tuned tables and kernels index rows with 32-bit integers.
constexpr std::int64_t kMaxTokens = 2147483647;

// The token counts of --nsets, each multiplied by --batch_size: every product in [1, kMaxTokens].
void check_token_counts(const std::vector<std::int64_t>& nsets, int batch_size) {
  TGEMM_CHECK(batch_size >= 1 && batch_size <= kMaxTokens, "tgemm shapes", "--batch_size must be in [1, ", kMaxTokens,
              "], got ", batch_size);
  TGEMM_CHECK(!nsets.empty(), "tgemm shapes", "--nsets must list at least one token count");
  for (std::int64_t t : nsets) {
    TGEMM_CHECK(t >= 1 && t <= kMaxTokens / batch_size, "tgemm shapes", "--nsets value ", t, " x --batch_size ",
                batch_size, " must be a token count in [1, ", kMaxTokens, "]");
  }
}

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

// --m-grid: every (N, K) over the M grid (core/m_grid.h) up to the largest M it sees (the
// --m-grid-max tokens x --batch_size x its share of them), in M order; nothing without --m-grid.
std::vector<std::pair<std::int64_t, const LinearShape*>> m_grid_problems(const ShapesOptions& o,
                                                                         const std::vector<LinearShape>& shapes) {
  std::vector<std::pair<std::int64_t, const LinearShape*>> out;
  if (!o.m_grid) return out;
  TGEMM_CHECK(o.m_grid_max >= 1 && o.m_grid_max <= kMGridLimit, "tgemm shapes", "--m-grid-max must be in [1, ",
              kMGridLimit, "], got ", o.m_grid_max);
  for (const LinearShape& s : shapes) {
    const double top = std::ceil(static_cast<double>(o.m_grid_max) * o.batch_size * s.m_scale);
    TGEMM_CHECK(top <= static_cast<double>(kMGridLimit), "tgemm shapes", "--m-grid-max ", o.m_grid_max,
                " x --batch_size ", o.batch_size, " x the share ", s.m_scale, " of ", s.layer, " is M = ", top,
                ", above ", kMGridLimit);
    for (std::int64_t m : m_grid(std::max<std::int64_t>(static_cast<std::int64_t>(top), 1))) out.emplace_back(m, &s);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

}  // namespace

std::string write_model_keys(const std::string& model_dir, int tp, const std::string& path) {
  ShapesOptions o;
  o.model_dir = model_dir;
  o.tp = tp;
  o.nsets = "1";
  o.output = path;
  run_shapes(o);
  return path;
}

int run_shapes(const ShapesOptions& o) {
  TGEMM_CHECK(o.model_dir.empty() != o.suite.empty(), "tgemm shapes", "give exactly one of --model_dir and --suite");
  std::vector<std::int64_t> nsets = parse_int_list(o.nsets, "--nsets");
  check_token_counts(nsets, o.batch_size);
  std::string dtype_name_str = "torch.bfloat16";
  const std::vector<LinearShape> shapes = linear_shapes_of(o, dtype_name_str);
  DType in = o.dtype.empty() ? *dtype_from_name(dtype_name_str) : parse_dtype(o.dtype, "--dtype");
  TGEMM_CHECK(in == DType::kBFloat16 || in == DType::kFloat16, "tgemm shapes", "dtype must be bf16 or fp16, got ",
              dtype_name(in));
  DType out = o.out_dtype.empty() ? in : parse_dtype(o.out_dtype, "--outdtype");
  std::vector<std::string> lines;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, bool> seen;
  auto add = [&](std::int64_t m, const LinearShape& s) {
    if (!seen.emplace(std::make_tuple(m, s.n, s.k), true).second) return;
    lines.push_back(csv::join({std::to_string(m), std::to_string(s.n), std::to_string(s.k), o.bias ? "True" : "False",
                               std::string(dtype_name(in)), std::string(dtype_name(out)), "False", "False", "none"}));
  };
  for (std::int64_t tokens : o.m_grid ? std::vector<std::int64_t>{} : nsets) {
    for (const LinearShape& s : shapes) {
      auto m = static_cast<std::int64_t>(std::ceil(static_cast<double>(tokens * o.batch_size) * s.m_scale));
      add(std::max<std::int64_t>(m, 1), s);
    }
  }
  for (const auto& [m, s] : m_grid_problems(o, shapes)) add(m, *s);
  std::string text = csv::join(untuned_table_columns()) + "\n";
  for (const auto& l : lines) text += l + "\n";
  write_text_file(o.output, text, "tgemm shapes", "-o");
  fmt::print("{} (N, K) pairs:\n", shapes.size());
  for (const auto& s : shapes) fmt::print("  {:<16} N={:<6} K={:<6}{}\n", s.layer, s.n, s.k,
                                          s.m_scale != 1.0 ? fmt::format(" (M = tokens x {:.4f})", s.m_scale) : "");
  if (o.m_grid) fmt::print("M grid ({} tokens at most): {}\n", o.m_grid_max, fmt::join(m_grid(o.m_grid_max), ","));
  fmt::print("wrote {} problems to {}\n", lines.size(), o.output);
  return 0;
}

namespace {

// The rows of one key, by M.
using RowsByM = std::map<std::int64_t, TableRow>;

// Rows by key, the keys in the order they first appear (so that the output and the warnings do
// not depend on hashing).
struct MergedRows {
  std::vector<TableKey> keys;
  std::unordered_map<TableKey, RowsByM, TableKeyHash> rows;

  RowsByM& of(const TableKey& key) {
    auto [it, added] = rows.try_emplace(key);
    if (added) keys.push_back(key);
    return it->second;
  }
};

std::string where(const TableRow& r) {
  return fmt::format("{}:{} (M={} [{}, {}])", r.file, r.line, r.m, r.range_lo(), r.range_hi());
}

// Rows of one key and M keep the lowest `us` (two times of the same problem; the first on a tie);
// then, in M order, a row whose range overlaps the last kept row's is warned about and skipped:
// the rule Table::add_rows applies within one file, so the result loads without a warning.
MergedRows disjoint_rows(const std::vector<TableRow>& rows, int& skipped) {
  MergedRows out;
  for (const TableRow& r : rows) {
    RowsByM& by_m = out.of(r.key);
    auto it = by_m.find(r.m);
    if (it == by_m.end()) {
      by_m.emplace(r.m, r);
    } else if (r.us < it->second.us) {
      it->second = r;
    }
  }
  for (const TableKey& key : out.keys) {
    RowsByM& by_m = out.rows[key];
    // Kept ranges are disjoint and each holds its row's M, so in M order a row overlapping any
    // kept range overlaps the last one.
    const TableRow* last = nullptr;
    for (auto it = by_m.begin(); it != by_m.end();) {
      if (last != nullptr && last->overlaps(it->second)) {
        fmt::print(stderr, "warning: {}: {} overlaps the range of the row at {}, row skipped\n", where(it->second),
                   key.describe(), where(*last));
        ++skipped;
        it = by_m.erase(it);
        continue;
      }
      last = &it->second;
      ++it;
    }
  }
  return out;
}

}  // namespace

int run_merge(const MergeOptions& o) {
  TGEMM_CHECK(!o.inputs.empty() && !o.output.empty(), "tgemm merge", "give input tables and -o");
  std::vector<std::vector<TableRow>> files;
  for (const std::string& path : o.inputs) {
    std::ifstream in(path);
    TGEMM_CHECK(static_cast<bool>(in), "tgemm merge", "cannot open '", path, "'");
    ParsedTable t = parse_tuned_table(in, path);
    for (const auto& w : t.warnings) fmt::print(stderr, "warning: {}\n", w);
    files.push_back(std::move(t.rows));
  }
  int skipped = 0, replaced = 0;
  MergedRows merged;
  if (!o.later_wins) {
    // The inputs as one table: which row a key keeps depends on the rows, not on the files' order.
    std::vector<TableRow> all;
    for (auto& rows : files) all.insert(all.end(), rows.begin(), rows.end());
    merged = disjoint_rows(all, skipped);
  } else {
    // As the runtime layers TGEMM_CONFIG_GEMM_BF16=a.csv:b.csv: each file made disjoint on its
    // own, then each of its rows removes the earlier files' rows whose ranges it overlaps.
    for (const auto& rows : files) {
      MergedRows file = disjoint_rows(rows, skipped);
      for (const TableKey& key : file.keys) {
        RowsByM& dst = merged.of(key);
        for (auto& [m, row] : file.rows[key]) {
          for (auto old = dst.begin(); old != dst.end();) {
            const bool drop = old->second.overlaps(row);
            replaced += drop ? 1 : 0;
            old = drop ? dst.erase(old) : std::next(old);
          }
          dst.emplace(m, std::move(row));
        }
      }
    }
  }
  std::vector<TableRow> rows;
  for (const TableKey& key : merged.keys) {
    for (auto& [m, row] : merged.rows[key]) rows.push_back(std::move(row));
  }
  write_tuned_table(o.output, rows);
  fmt::print("merged {} files into {} ({} rows)\n", o.inputs.size(), o.output, rows.size());
  if (skipped > 0) fmt::print("skipped: {} rows whose M range overlaps a kept row's\n", skipped);
  if (replaced > 0)
    fmt::print("replaced: {} rows of earlier files whose M ranges a later file's row overlaps\n", replaced);
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
    write_text_file(o_.json, doc.dump(2) + "\n", "tgemm compare", "--json");
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
