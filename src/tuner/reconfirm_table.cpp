// `tgemm reconfirm` over a tuned table (tuner/command.h, run_reconfirm): each row of this GPU timed
// against the race's default once more (tuner/reconfirm.h), with the tune's next-best candidates
// from its profile where asked; the table rewritten row by row.
#include <fmt/core.h>

#include <chrono>
#include <fstream>
#include <unordered_map>

#include "core/check.h"
#include "core/csv.h"
#include "core/platform.h"
#include "core/registry.h"
#include "runtime/runtime.h"
#include "tuner/alternatives.h"
#include "tuner/data.h"
#include "tuner/race.h"
#include "tuner/reconfirm.h"
#include "tuner/tune_job.h"
#include "tuner/tuned_file.h"

namespace tgemm {

namespace {

void validate(const ReconfirmOptions& o) {
  TGEMM_CHECK(o.rounds >= 1, "tgemm reconfirm", "--rounds must be >= 1, got ", o.rounds);
  TGEMM_CHECK(o.placements >= 1, "tgemm reconfirm", "--placements must be >= 1, got ", o.placements);
  TGEMM_CHECK(o.margin >= 0 && o.margin < 1, "tgemm reconfirm", "--margin must be in [0, 1), got ", o.margin);
  TGEMM_CHECK(o.sustained_margin >= 0 && o.sustained_margin < 1, "tgemm reconfirm",
              "--sustained_margin must be in [0, 1), got ", o.sustained_margin);
  TGEMM_CHECK(o.placement_tolerance >= 0 && o.placement_tolerance < 0.5, "tgemm reconfirm",
              "--placement_tolerance must be in [0, 0.5), got ", o.placement_tolerance);
  TGEMM_CHECK(o.min_rotation_sets >= 1 && o.min_rotation_sets <= 32, "tgemm reconfirm",
              "--min_rotation_sets must be in [1, 32], got ", o.min_rotation_sets);
  TGEMM_CHECK(o.alternatives >= 0 && o.alternatives <= 16, "tgemm reconfirm",
              "--alternatives must be in [0, 16], got ", o.alternatives);
  TGEMM_CHECK(o.alternatives == 0 || !o.profile_file.empty(), "tgemm reconfirm",
              "--alternatives ", o.alternatives, " needs --profile (the tune's --profile_file), got none");
  TGEMM_CHECK(o.choice_band >= 0 && o.choice_band < 0.1, "tgemm reconfirm", "--choice_band must be in [0, 0.1), got ",
              o.choice_band);
}

std::vector<TableRow> read_table(const std::string& path) {
  std::ifstream in(path);
  TGEMM_CHECK(static_cast<bool>(in), "tgemm reconfirm", "cannot open the tuned file '", path, "'");
  ParsedTable t = parse_tuned_table(in, path);
  for (const auto& w : t.warnings) fmt::print(stderr, "warning: {}\n", w);
  return std::move(t.rows);
}

std::unordered_map<std::string, std::vector<ProfiledCandidate>> read_profile(const ReconfirmOptions& o) {
  if (o.alternatives == 0) return {};
  std::ifstream in(o.profile_file);
  TGEMM_CHECK(static_cast<bool>(in), "tgemm reconfirm", "cannot open the --profile file '", o.profile_file, "'");
  std::vector<std::string> warnings;
  auto profiled = read_profile_candidates(in, o.profile_file, o.err_ratio, /*loose=*/false, warnings);
  for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
  return profiled;
}

RaceOptions reconfirm_race_options(const ReconfirmOptions& o) {
  RaceOptions ro;
  ro.select.max_err_ratio = o.err_ratio;
  ro.confirm.rounds = o.rounds;
  ro.confirm.placements = o.placements;
  ro.confirm.margin = o.margin;
  ro.sustained_default_margin = o.sustained_margin;
  ro.short_slots = o.short_slots;
  ro.confirm.placement_tolerance = o.placement_tolerance;
  ro.data.min_rotation_sets = o.min_rotation_sets;
  if (o.libtype != "all") ro.libtypes = csv::split_line(o.libtype).value_or(std::vector<std::string>{});
  return ro;
}

std::string describe(const Reconfirmation& r) {
  return fmt::format("{:.3f}x the default, min {:.3f}x over {} placements, margin {:.1f}%", r.timing.ratio,
                     r.timing.min_ratio, r.timing.placements, r.margin * 100.0);
}

// What the row's own pick, and with --alternatives the profile's next best, measure here.
struct Tried {
  SolutionPtr solution;
  Reconfirmation r;
  double err_ratio = 0;
};

struct Counts {
  int other_gpu = 0, is_default = 0, kept = 0, reverted = 0, unchecked = 0, replaced = 0, ranges = 0;
};

class Reconfirmer {
 public:
  Reconfirmer(const ReconfirmOptions& o, std::vector<TableRow> rows)
      : o_(o), rows_(std::move(rows)), profiled_(read_profile(o)), ro_(reconfirm_race_options(o)) {}

  int run();

 private:
  void reconfirm_row(TableRow& row, int device);
  SolutionPtr solution_of(const TableRow& row, const GemmProblem& p, const std::string& libtype,
                          const std::string& name) const;
  int backend_rank(std::string_view libtype) const;
  std::vector<Tried> candidates_of(const TableRow& row, const GemmProblem& p, const std::string& default_name,
                                   const std::string& where) const;
  int choose(const std::vector<Tried>& tried) const;
  void set_row(TableRow& row, const GemmProblem& p, const Solution& s, double us, double err_ratio);
  void decide(TableRow& row, const GemmProblem& p, const std::vector<Tried>& tried, bool row_is_default,
              const std::string& where);

  const ReconfirmOptions& o_;
  std::vector<TableRow> rows_;
  std::unordered_map<std::string, std::vector<ProfiledCandidate>> profiled_;
  RaceOptions ro_;
  std::string output_;
  Counts n_;
};

// The row becomes solution s, timed at us (the default's time where s is the default); each change
// is on disk at once, so an interrupted pass loses nothing.
void Reconfirmer::set_row(TableRow& row, const GemmProblem& p, const Solution& s, double us, double err_ratio) {
  row.libtype = std::string(s.libtype());
  row.kernel_name = s.name();
  row.solidx = s.solidx();
  row.split_k = s.split_k();
  row.us = us;
  row.err_ratio = err_ratio;
  set_row_rates(row, p);
  write_tuned_table(output_, rows_);
}

SolutionPtr Reconfirmer::solution_of(const TableRow& row, const GemmProblem& p, const std::string& libtype,
                                     const std::string& name) const {
  const Backend* backend = Runtime::get().registry().find(libtype);
  TGEMM_CHECK(backend != nullptr, "tgemm reconfirm", "no backend '", libtype, "' in this build");
  TableRow r = row;
  r.libtype = libtype;
  r.kernel_name = name;
  std::string why;
  SolutionPtr sol = backend->from_row(r, p, why);
  TGEMM_CHECK(sol != nullptr, "tgemm reconfirm", name, " cannot run: ", why);
  return sol;
}

// Registration order, as the race ranks.
int Reconfirmer::backend_rank(std::string_view libtype) const {
  const auto& bs = Runtime::get().registry().backends();
  for (std::size_t i = 0; i < bs.size(); ++i) {
    if (bs[i]->libtype() == libtype) return static_cast<int>(i) + 1;
  }
  return static_cast<int>(bs.size()) + 1;
}

std::vector<Tried> Reconfirmer::candidates_of(const TableRow& row, const GemmProblem& p,
                                              const std::string& default_name, const std::string& where) const {
  std::vector<Tried> tried;
  if (row.kernel_name != default_name) tried.push_back({solution_of(row, p, row.libtype, row.kernel_name), {}, row.err_ratio});
  if (o_.alternatives == 0) return tried;
  const auto it = profiled_.find(profile_problem_key(row));
  const int more = o_.alternatives - static_cast<int>(tried.size());
  if (it == profiled_.end() || more <= 0) return tried;
  for (const ProfiledCandidate& c : rank_alternatives(it->second, default_name, {row.kernel_name}, more)) {
    // One that cannot run here is left out with a warning; the row's own pick and the others are
    // still timed.
    try {
      SolutionPtr sol = solution_of(row, p, c.libtype, c.name);
      TGEMM_CHECK(sol->can_implement(p), "tgemm reconfirm", c.name, " cannot implement ", p.describe());
      tried.push_back({sol, {}, c.err_ratio});
    } catch (const Error& e) {
      if (is_sticky_error(e)) throw;
      fmt::print(stderr, "warning: {}: alternative {} left out: {}\n", where, c.name, e.what());
    }
  }
  return tried;
}

// The fastest that passes, by the race's own selection (select_winner on the times relative to
// the default): within choice_band of it, the first in tie order (backend, then name), so two
// tunes that reconfirm the same candidates keep the same one. -1: none passed.
int Reconfirmer::choose(const std::vector<Tried>& tried) const {
  std::vector<CandidateResult> passed;
  for (const Tried& t : tried) {
    CandidateResult c;
    c.name = t.solution->name();
    c.backend_rank = backend_rank(t.solution->libtype());
    c.us = t.r.timing.ratio > 0 ? 1.0 / t.r.timing.ratio : -1;
    c.err_ratio = t.err_ratio;
    c.strict_ok = true;  // the tune's check (the row's, or the profile's for an alternative)
    if (!t.r.kept) c.error = "did not pass the reconfirmation";
    passed.push_back(c);
  }
  SelectOptions pick;
  pick.order_band = o_.choice_band;
  pick.max_err_ratio = 1.0;  // checked by the tune; the reconfirmation decides on time alone
  return select_winner(passed, pick);
}

void Reconfirmer::decide(TableRow& row, const GemmProblem& p, const std::vector<Tried>& tried, bool row_is_default,
                         const std::string& where) {
  const int w = choose(tried);
  const Tried* chosen = w >= 0 ? &tried[static_cast<std::size_t>(w)] : nullptr;
  if (chosen != nullptr && chosen->solution->name() == row.kernel_name) {
    ++n_.kept;
    fmt::print("{}: {} kept ({})\n", where, row.kernel_name, describe(chosen->r));
    return;
  }
  if (chosen != nullptr) {
    ++n_.replaced;
    // The row's own reading too (a row that was the default has none).
    const std::string own =
        row_is_default ? std::string()
                       : fmt::format("; the row's own {:.3f}x, min {:.3f}x{}", tried.front().r.timing.ratio,
                                     tried.front().r.timing.min_ratio, tried.front().r.kept ? "" : ", failed");
    fmt::print("{}: {} replaced by {} ({}{})\n", where, row.kernel_name, chosen->solution->name(), describe(chosen->r),
               own);
    set_row(row, p, *chosen->solution, chosen->r.timing.b_us, chosen->err_ratio);
    return;
  }
  if (row_is_default) {
    ++n_.is_default;
    return;
  }
  const Reconfirmation& own = tried.front().r;
  if (own.default_err_ratio < 0 || own.default_err_ratio > o_.err_ratio || !own.default_strict_ok) {
    ++n_.kept;
    fmt::print("{}: {} kept: it failed ({}), but the default {} fails the check (err_ratio {:.4f}{})\n", where,
               row.kernel_name, describe(own), own.default_name, own.default_err_ratio,
               own.default_strict_ok ? "" : ", strict check failed");
    return;
  }
  ++n_.reverted;
  fmt::print("{}: {} reverted to {} ({})\n", where, row.kernel_name, own.default_name, describe(own));
  set_row(row, p, *own.default_solution, own.timing.a_us, own.default_err_ratio);
}

void Reconfirmer::reconfirm_row(TableRow& row, int device) {
  const std::string where = fmt::format("{} M={}", row.key.describe(), row.m);
  try {
    const GemmProblem p = problem_of_key(row.key, row.m, device);
    const std::string default_name = race_default_name(p, ro_.libtypes);
    const bool row_is_default = row.kernel_name == default_name;
    std::vector<Tried> tried = candidates_of(row, p, default_name, where);
    if (tried.empty()) {
      ++n_.is_default;
      return;
    }
    // One set of placements for all of them (time_solutions_against).
    std::vector<const Solution*> sols;
    for (const Tried& t : tried) sols.push_back(t.solution.get());
    const std::vector<Reconfirmation> rs = reconfirm_rows(p, sols, ro_, race_default_solution(p, ro_));
    for (std::size_t i = 0; i < tried.size(); ++i) {
      tried[i].r = rs[i];
      if (i == 0 && !row_is_default) continue;  // the row's own: reported with the outcome
      fmt::print("{}: alternative {} {} ({})\n", where, tried[i].solution->name(), tried[i].r.kept ? "passes" : "fails",
                 describe(tried[i].r));
    }
    decide(row, p, tried, row_is_default, where);
  } catch (const Error& e) {
    if (is_sticky_error(e)) throw;
    ++n_.unchecked;
    fmt::print(stderr, "warning: {}: {} not reconfirmed (row kept): {}\n", where, row.kernel_name, e.what());
  }
}

int Reconfirmer::run() {
  require_gpu_for("reconfirm");
  output_ = o_.output.empty() ? o_.tuned_file : o_.output;
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  warm_up_gpu(2.0);
  const auto start = std::chrono::steady_clock::now();
  for (TableRow& row : rows_) {
    if (row.key.arch != dev.arch || row.key.sm_count != dev.sm_count) {
      ++n_.other_gpu;
      continue;
    }
    // A row with an M range was verified over the range (`tgemm tune --m-grid`); one timing at
    // its M can neither extend that to another solution (an alternative) nor make a default row
    // out of it, so it is left as it is: the tune's range pass re-verifies it.
    if (row.m_lo != 0 || row.m_hi != 0) {
      ++n_.ranges;
      continue;
    }
    reconfirm_row(row, device);
  }
  write_tuned_table(output_, rows_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(
      "tgemm reconfirm summary: {} rows: {} already the default, {} kept, {} reverted to the default, {}{} not "
      "reconfirmed, {} for another GPU{}; {}; wrote {}\n",
      rows_.size(), n_.is_default, n_.kept, n_.reverted,
      o_.alternatives > 0 ? fmt::format("{} replaced by an alternative, ", n_.replaced) : std::string(), n_.unchecked,
      n_.other_gpu,
      n_.ranges > 0
          ? fmt::format(", {} with an M range left as they are (tgemm tune --m-grid verifies them)", n_.ranges)
          : std::string(),
      format_duration(elapsed), output_);
  return n_.unchecked == 0 ? 0 : 1;
}

}  // namespace

int run_reconfirm(const ReconfirmOptions& o) {
  validate(o);
  Reconfirmer r(o, read_table(o.tuned_file));
  return r.run();
}

}  // namespace tgemm
