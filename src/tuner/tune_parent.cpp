// `tgemm tune`'s parent process (tuner/command.h, run_tune): the workers, the tuned table, the
// profile, progress, and the reconfirmation afterwards; with --m-grid, the grid points' races, their
// reconfirmation and the range pass (tuner/m_ranges.h) whose verifications the workers time.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/check.h"
#include "core/csv.h"
#include "core/m_grid.h"
#include "tuner/m_ranges.h"
#include "tuner/tune_job.h"
#include "tuner/tune_processes.h"
#include "tuner/tuned_file.h"

namespace tgemm {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// SIGINT/SIGTERM/SIGHUP to the tune (Ctrl-C, `timeout`, a closed terminal): the main loop writes
// every finished result before exiting, so a stopped tune loses only the problems in flight
// (SIGKILL still loses the results since the last --batch write).
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

const char* const kProfileHeader =
    "arch,sm_count,M,N,K,bias,dtype,outdtype,epilogue,libtype,kernelName,screen_us,us,spread,err_ratio,strict_ok,error,"
    "stage,final_ratio,confirm_ratio,accurate_us\n";

// Attempts of a problem whose worker hung or crashed on a candidate (excluded on the next one).
constexpr int kMaxAttempts = 3;

// A file removed when this goes out of scope (the tune's temporary profile).
struct RemovedAtExit {
  std::string path;
  RemovedAtExit() = default;
  RemovedAtExit(const RemovedAtExit&) = delete;
  RemovedAtExit& operator=(const RemovedAtExit&) = delete;
  ~RemovedAtExit() {
    if (path.empty()) return;
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

// A path in the temporary directory that no file has yet: tgemm-tune-<pid>-<n>-<suffix>.
std::string temporary_path(const std::string& suffix) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int n = 0;; ++n) {
    std::filesystem::path p = dir / fmt::format("tgemm-tune-{}-{}-{}", ::getpid(), n, suffix);
    if (!std::filesystem::exists(p)) return p.string();
  }
}

// The profile's error column: the candidate's error, or for one not raced because it launches
// what another candidate launches (--dedupe_launches), which one.
std::string profile_error(const json& c) {
  const std::string same = c.value("same_as", std::string());
  return same.empty() ? c["error"].get<std::string>() : "not raced: same launch as " + same;
}

std::vector<int> device_list(const TuneOptions& o) {
  std::vector<int> devices;
  if (o.devices.empty()) {
    for (int i = 0; i < o.mp; ++i) devices.push_back(i);
    return devices;
  }
  const auto fields = csv::split_line(o.devices);
  TGEMM_CHECK(fields.has_value(), "tgemm", "--devices: bad list '", o.devices, "'");
  for (const auto& f : *fields) {
    if (f.empty()) continue;
    const auto v = csv::parse_int(f);
    TGEMM_CHECK(v.has_value() && *v >= 0, "tgemm", "--devices must be a comma-separated list of non-negative integers, got '",
                f, "'");
    devices.push_back(static_cast<int>(*v));
  }
  return devices;
}

// Where a race's result goes: the tuned file (a problem of the input) and the grid points' file
// (--m-grid); an input problem at a grid point is raced once for both.
constexpr int kToTable = 1;
constexpr int kToGrid = 2;

// A range pass job (--m-grid): one range check's pending M values, timed in a worker.
struct VerifyJob {
  std::size_t key = 0;    // TuneParent::grid_keys_
  std::size_t check = 0;  // that key's checks
  std::vector<std::int64_t> ms;
};

// A count job (--m-grid-plan): the candidates a race of each M would screen, counted in a worker.
struct CountJob {
  std::size_t key = 0;  // TuneParent::grid_keys_
  std::vector<std::int64_t> ms;
};

struct ProblemState {
  UntunedProblem problem;
  std::vector<std::string> exclude;
  int attempts = 0;
  bool done = false;
  bool failed = false;
  std::string failure;
  int targets = kToTable;
  std::optional<VerifyJob> verify;
  std::optional<CountJob> count;
};

// One (N, K, types) key of an --m-grid tune and its range pass.
struct GridKey {
  UntunedProblem proto;  // the key's problem; M is set per grid point
  TableKey key;
  std::string id;  // key.describe(): its name in the state file
  // The key's last memory-bound M (last_memory_bound_m, up to the grid's largest): its ranges end
  // there; the grid points above it are raced for exact rows or left out (--m-grid-compute-bound).
  std::int64_t memory_bound_to = 0;
  std::vector<RangeCheck> checks;
  std::size_t open = 0;  // checks not settled yet
  int measured = 0;      // M values timed against the default
};

// The GemmProblem of an untuned problem, for host-side rules (is_compute_bound).
GemmProblem host_problem(const UntunedProblem& u) {
  GemmProblem p;
  p.m = u.m;
  p.n = u.n;
  p.k = u.k;
  p.a_type = p.b_type = u.dtype;
  p.out_type = u.out_dtype;
  return p;
}

// The candidates of one race result that passed its checks, as PointTiming (each time over the
// default's in the same stage) with the M interval the worker probed (their "runs").
std::vector<PointTiming> point_timings(const json& cands, const SelectOptions& select) {
  double default_accurate = -1;
  for (const auto& c : cands) {
    if (c.value("is_default", false)) default_accurate = c.value("accurate_us", -1.0);
  }
  std::vector<PointTiming> out;
  for (const auto& c : cands) {
    const double err = c.value("err_ratio", -1.0);
    const double accurate = c.value("accurate_us", -1.0);
    const bool passed = c.value("error", std::string()).empty() && c.value("same_as", std::string()).empty() &&
                        accurate > 0 && err >= 0 && err <= select.max_err_ratio &&
                        (!select.require_strict || c.value("strict_ok", false));
    if (!passed) continue;
    PointTiming t;
    t.solution = c["name"].get<std::string>();
    t.final_ratio = c.value("final_ratio", -1.0);
    t.confirm_ratio = c.value("confirm_ratio", -1.0);
    t.accurate_ratio = default_accurate > 0 ? accurate / default_accurate : -1.0;
    const json runs = c.value("runs", json());
    if (runs.is_array() && runs.size() == 2)
      t.runs = RunnableM{runs[0].get<std::int64_t>(), runs[1].get<std::int64_t>()};
    out.push_back(std::move(t));
  }
  return out;
}

bool has_row(const std::vector<TableRow>& rows, const TableKey& key, std::int64_t m) {
  return std::any_of(rows.begin(), rows.end(), [&](const TableRow& r) { return r.key == key && r.m == m; });
}

// What the summary reports: counts and the GPU time of the stages over every result.
struct TuneTotals {
  int finished = 0, failed = 0, skipped = 0;
  long long candidates_raced = 0;
  std::vector<int> enumerated;
  std::vector<int> distinct;  // enumerated less those that launch what another one does
  double tuned_seconds = 0;
  std::array<double, 4> stages{};  // seconds of screen, accurate, finals, confirmation
  double screen_graph = 0, checks = 0;
};

class TuneParent {
 public:
  TuneParent(TuneOptions o, std::vector<UntunedProblem> problems)
      : o_(std::move(o)), problems_(std::move(problems)), devices_(device_list(o_)), tty_(::isatty(2)) {}
  ~TuneParent() {
    for (auto& w : workers_) kill_worker(w);
  }

  int run();

 private:
  void start();
  void drive();
  void open_profile();
  void plan();
  void assign(Worker& w);
  void progress(const std::string& last);
  void fail_or_retry(Worker& w, const std::string& why);
  void handle_result(Worker& w, const json& msg);
  void write_profile(const UntunedProblem& p, const json& cands);
  void report_result(const UntunedProblem& p, const TableRow& r, const json& msg);
  void on_message(Worker& w, const json& msg);
  void read_from(Worker& w);
  void check_timeouts(Worker& w);
  void write_rows();
  int finish();
  void print_summary();
  int reconfirm() const;
  // --m-grid
  void start_grid();
  void plan_grid();
  void save_state() const { write_file_atomically(state_path_, state_.to_json()); }
  int grid_phase();
  int reconfirm_grid();
  void plan_range_checks();
  void queue_verify(std::size_t key, std::size_t check);
  json race_request(std::size_t idx, const ProblemState& st) const;
  json verify_request(std::size_t idx, const VerifyJob& job) const;
  void print_grid_preset() const;
  void plan_counts();
  void handle_counted(Worker& w, const json& msg);
  int finish_plan();
  void handle_verified(Worker& w, const json& msg);
  void apply_verify(const VerifyJob& job, const std::map<std::int64_t, double>& ratios);
  void write_key_ranges(GridKey& gk);
  void recut_key_ranges(const GridKey& gk);
  bool replan_key(const GridKey& gk);
  int write_compute_bound_rows(const GridKey& gk);
  bool in_grid(std::int64_t m) const { return std::binary_search(grid_.begin(), grid_.end(), m); }
  bool race_compute_bound() const { return o_.m_grid_compute_bound == "exact"; }
  // The grid key of `id` (TableKey::describe()); nullptr for a key no input problem has.
  const GridKey* grid_key(const std::string& id) const;
  // Grid point m of key `id` is raced (memory-bound, or compute-bound with --m-grid-compute-bound
  // exact) and, for feeds_ranges, feeds the key's ranges (memory-bound).
  bool grid_point_raced(const std::string& id, std::int64_t m) const;
  bool feeds_ranges(const std::string& id, std::int64_t m) const;

  TuneOptions o_;
  std::vector<UntunedProblem> problems_;
  std::vector<int> devices_;
  const bool tty_;
  std::vector<Worker> workers_;
  std::vector<TableRow> rows_;       // the tuned file's rows as last read or written, with this run's
  std::vector<TableRow> unwritten_;  // this run's rows not yet merged into the tuned file
  // A profile resumed into keeps the columns of its header: without the stage or accurate_us
  // columns, the rows appended to it have none either.
  bool profile_stages_ = true;
  bool profile_accurate_ = true;
  // An a8w8 tune's profile ends with a `scales` column: two recipes of one shape are two problems.
  bool profile_scales_ = false;
  // A batched tune's profile ends with B,transpose_a,transpose_b: two batches of one shape are two
  // problems.
  bool profile_batch_ = false;
  std::string profile_header_ = kProfileHeader;
  std::vector<ProblemState> states_;
  std::deque<std::size_t> queue_;
  std::string arch_;
  int sm_count_ = 0;
  Clock::time_point start_ = Clock::now();
  int pending_write_ = 0;
  bool planned_ = false;
  TuneTotals totals_;
  RemovedAtExit temporary_profile_;
  // --m-grid: the tuning grid, the grid points' race results (<tuned>.mgrid-points) as last
  // read or written and those not yet written, what the pass finished (<tuned>.mgrid-state.json).
  std::vector<std::int64_t> grid_;
  std::string grid_path_, state_path_;
  std::vector<TableRow> grid_rows_;
  std::vector<TableRow> grid_unwritten_;
  MGridState state_;
  std::vector<GridKey> grid_keys_;
  double tie_band_ = 0.01;
  int grid_raced_before_ = 0, range_rows_written_ = 0, keys_done_before_ = 0;
  int grid_left_out_ = 0, keys_replanned_ = 0, exact_rows_written_ = 0;
  // --m-grid-plan: the points counted and their candidates (first stage + refinement).
  int counted_points_ = 0;
  long long counted_candidates_ = 0;
  double count_seconds_ = 0;
};

void TuneParent::start() {
  if (o_.reconfirm_alternatives > 0 && o_.profile_file.empty()) {
    o_.profile_file = temporary_profile_.path = temporary_path("profile.csv");
  }
  workers_.resize(devices_.size());
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    workers_[i].device = devices_[i];
    spawn_worker(workers_[i], o_);
  }
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction stop_action {};
  stop_action.sa_handler = on_stop_signal;
  sigemptyset(&stop_action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &stop_action, nullptr);
  if (std::filesystem::exists(o_.tuned_file)) {
    std::ifstream in(o_.tuned_file);
    ParsedTable parsed = parse_tuned_table(in, o_.tuned_file);
    for (const auto& w : parsed.warnings) fmt::print(stderr, "warning: {}\n", w);
    if (!parsed.warnings.empty()) {
      fmt::print(stderr, "(the lines warned about stay in {} as they are; the tune adds its rows around them)\n",
                 o_.tuned_file);
    }
  }
  // Written back at once: a file that is not a tuned table, or a path that cannot be written, is
  // an error before any GPU time is spent.
  rows_ = update_tuned_table(o_.tuned_file, {});
  if (o_.m_grid) start_grid();
  open_profile();
}

void TuneParent::start_grid() {
  grid_ = tune_grid(o_.m_grid_max, o_.m_grid_factor);
  grid_path_ = o_.tuned_file + ".mgrid-points";
  state_path_ = o_.tuned_file + ".mgrid-state.json";
  tie_band_ = race_options_of(o_).select.tie_band;
  grid_rows_ = update_tuned_table(grid_path_, {});
  if (std::filesystem::exists(state_path_)) {
    std::ifstream in(state_path_);
    std::stringstream text;
    text << in.rdbuf();
    state_ = MGridState::from_json(text.str(), state_path_);
  }
}

void TuneParent::open_profile() {
  if (o_.profile_file.empty()) return;
  const bool fresh = !std::filesystem::exists(o_.profile_file);
  if (!fresh) {
    std::ifstream in(o_.profile_file);
    std::string header;
    std::getline(in, header);
    profile_stages_ = header.empty() || header.find(",stage,") != std::string::npos;
    profile_accurate_ = header.empty() || header.find(",accurate_us") != std::string::npos;
    profile_scales_ = !header.empty() && header.find(",scales") != std::string::npos;
    profile_batch_ = !header.empty() && header.find(",B,transpose_a,transpose_b") != std::string::npos;
  }
  // A profile being resumed keeps its header's columns, as for the stage columns above.
  if (fresh) profile_scales_ = !problems_.empty() && quantized_family(problems_.front().family());
  if (fresh) profile_batch_ = !problems_.empty() && batched_family(problems_.front().family());
  if (profile_scales_) profile_header_.insert(profile_header_.size() - 1, ",scales");  // before the newline
  if (profile_batch_) profile_header_.insert(profile_header_.size() - 1, ",B,transpose_a,transpose_b");
  append_locked(o_.profile_file, profile_header_, "");
}

// Once the first worker said which GPU it is on (arch and SM count key the rows).
void TuneParent::plan() {
  for (const auto& p : problems_) {
    bool have = false;
    if (!o_.all) {
      for (const auto& r : rows_) have = have || (r.key == key_of(p, arch_, sm_count_) && r.m == p.m);
    }
    if (have) {
      ++totals_.skipped;
      continue;
    }
    ProblemState st;
    st.problem = p;
    states_.push_back(std::move(st));
    queue_.push_back(states_.size() - 1);
  }
  fmt::print(stderr, "tgemm tune: {} problems in {}, {} already tuned in {} (skipped; --all retunes), {} to tune "
                     "on {} GPU(s) of {} ({} SMs)\n",
             problems_.size(), o_.input_file, totals_.skipped, o_.tuned_file, states_.size(), workers_.size(), arch_,
             sm_count_);
  if (o_.m_grid) plan_grid();
  if (o_.m_grid_plan) plan_counts();
  planned_ = true;
}

// Every key of the input at every grid point not raced before (a point is raced when the points'
// file has its row and the state its default).
void TuneParent::plan_grid() {
  for (const auto& p : problems_) {
    const TableKey key = key_of(p, arch_, sm_count_);
    const std::string id = key.describe();
    if (std::any_of(grid_keys_.begin(), grid_keys_.end(), [&](const GridKey& g) { return g.id == id; })) continue;
    GridKey gk;
    gk.proto = p;
    gk.key = key;
    gk.id = id;
    grid_keys_.push_back(std::move(gk));
  }
  std::size_t added = 0;
  for (GridKey& gk : grid_keys_) {
    if (o_.all) {
      state_.defaults.erase(gk.id);
      state_.reconfirmed.erase(gk.id);
      state_.ranges_written.erase(gk.id);
      state_.exact_written.erase(gk.id);
    }
    gk.memory_bound_to = last_memory_bound_m(host_problem(gk.proto), grid_.back());
    const KeyGridPlan kp = plan_key_grid(grid_, gk.memory_bound_to, race_compute_bound(), [&](std::int64_t m) {
      return has_row(grid_rows_, gk.key, m) && state_.raced(gk.id, m);
    });
    grid_raced_before_ += static_cast<int>(kp.raced_before.size());
    grid_left_out_ += static_cast<int>(kp.left_out.size());
    for (std::int64_t m : kp.to_race) {
      const auto same = std::find_if(states_.begin(), states_.end(), [&](const ProblemState& st) {
        return st.problem.m == m && key_of(st.problem, arch_, sm_count_) == gk.key;
      });
      if (same != states_.end()) {
        same->targets |= kToGrid;
        continue;
      }
      UntunedProblem u = gk.proto;
      u.m = m;
      ProblemState st;
      st.problem = u;
      st.targets = kToGrid;
      states_.push_back(std::move(st));
      queue_.push_back(states_.size() - 1);
      ++added;
    }
  }
  fmt::print(stderr,
             "tgemm tune --m-grid: {} keys x {} grid points (M = {}): {} raced before, {} to race, {} left out as "
             "compute-bound (--m-grid-compute-bound {}); their results in {}\n",
             grid_keys_.size(), grid_.size(), fmt::join(grid_, ","), grid_raced_before_, added, grid_left_out_,
             o_.m_grid_compute_bound, grid_path_);
  print_grid_preset();
}

// How the grid points race (GridRacePreset), and per key where it turns compute-bound: its ranges end
// there, and the grid points above are left out or raced for exact rows (the preset's screen
// narrows on them).
void TuneParent::print_grid_preset() const {
  if (o_.m_grid_race != "preset") {
    fmt::print(stderr, "tgemm tune --m-grid: grid points race with the tune's own options (--m-grid-race tune)\n");
  } else {
    const GridRacePreset preset;
    fmt::print(
        stderr,
        "tgemm tune --m-grid: grid points no input problem asked for race with the grid preset "
        "(--m-grid-race preset): min_accurate {}, {} finalists on memory-bound points, {} placement(s) in the "
        "finals; on compute-bound points cuBLASLt expands {} screened bases and identical launches race once; "
        "--m-grid-plan counts the candidates of each point\n",
        preset.min_accurate,
        preset.memory_bound_finalists > 0 ? preset.memory_bound_finalists : static_cast<std::size_t>(o_.finalists),
        preset.final_placements, preset.compute_bound_refine_bases);
  }
  for (const GridKey& gk : grid_keys_) {
    const auto from = std::upper_bound(grid_.begin(), grid_.end(), gk.memory_bound_to);
    if (from == grid_.end()) {
      fmt::print(stderr, "  N={} K={}: memory-bound at every grid point\n", gk.key.n, gk.key.k);
      continue;
    }
    const auto points = grid_.end() - from;
    fmt::print(stderr, "  N={} K={}: ranges end at M = {}, compute-bound above; grid points {}..{} ({}): {}\n",
               gk.key.n, gk.key.k, gk.memory_bound_to, *from, grid_.back(), points,
               race_compute_bound() ? "raced for exact-M rows" : "left out");
  }
}

// --m-grid-plan: the grid points planned for racing become one count job per key; nothing races.
void TuneParent::plan_counts() {
  std::vector<CountJob> jobs(grid_keys_.size());
  for (std::size_t k = 0; k < grid_keys_.size(); ++k) jobs[k].key = k;
  for (const ProblemState& st : states_) {
    if ((st.targets & kToGrid) == 0) continue;
    const TableKey key = key_of(st.problem, arch_, sm_count_);
    for (std::size_t k = 0; k < grid_keys_.size(); ++k) {
      if (grid_keys_[k].key == key) jobs[k].ms.push_back(st.problem.m);
    }
  }
  states_.clear();
  queue_.clear();
  for (CountJob& job : jobs) {
    if (job.ms.empty()) continue;
    std::sort(job.ms.begin(), job.ms.end());
    ProblemState st;
    st.problem = grid_keys_[job.key].proto;
    st.count = std::move(job);
    states_.push_back(std::move(st));
    queue_.push_back(states_.size() - 1);
  }
  fmt::print(stderr,
             "tgemm tune --m-grid-plan: counting the candidates of the grid points to race ({} keys); "
             "nothing is raced\n",
             states_.size());
}

void TuneParent::progress(const std::string& last) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const int total = static_cast<int>(states_.size());
  const int done = totals_.finished + totals_.failed;
  const double eta = done > 0 ? elapsed / done * (total - done) : -1;
  const std::string msg = fmt::format("[{:>4}/{}] {} | {} candidates raced | elapsed {} | ETA {}", done, total, last,
                                      totals_.candidates_raced, format_duration(elapsed), format_duration(eta));
  if (!tty_) {
    fmt::print(stderr, "{}\n", msg);
    return;
  }
  const int width = 30;
  const int fill = total ? width * done / total : width;
  fmt::print(stderr, "\r[{}{}] {}\x1b[K", std::string(static_cast<std::size_t>(fill), '#'),
             std::string(static_cast<std::size_t>(width - fill), '.'), msg);
  if (done == total) fmt::print(stderr, "\n");
}

void TuneParent::assign(Worker& w) {
  if (queue_.empty() || !w.ready || w.busy_id >= 0) return;
  const std::size_t idx = queue_.front();
  queue_.pop_front();
  ProblemState& st = states_[idx];
  ++st.attempts;
  json req;
  if (st.verify) {
    req = verify_request(idx, *st.verify);
  } else if (st.count) {
    req = {{"id", idx},
           {"count",
            {{"problem", problem_json(grid_keys_[st.count->key].proto)},
             {"ms", st.count->ms},
             {"preset", o_.m_grid_race == "preset"}}}};
  } else {
    req = race_request(idx, st);
  }
  if (!write_all(w.in_fd, req.dump() + "\n")) {
    queue_.push_front(idx);
    return;
  }
  w.busy_id = static_cast<std::int64_t>(idx);
  w.problem_start = w.last_progress = Clock::now();
  w.current_candidate.clear();
}

void TuneParent::fail_or_retry(Worker& w, const std::string& why) {
  const auto idx = static_cast<std::size_t>(w.busy_id);
  ProblemState& st = states_[idx];
  if (!w.current_candidate.empty()) st.exclude.push_back(w.current_candidate);
  fmt::print(stderr, "{}worker on GPU {}: {} (problem {}, {} '{}'); restarting it\n", tty_ ? "\n" : "", w.device, why,
             st.problem.describe(), w.current_phase, w.current_candidate);
  w.busy_id = -1;
  kill_worker(w);
  spawn_worker(w, o_);
  if (st.attempts < kMaxAttempts && !w.current_candidate.empty()) {
    queue_.push_front(idx);
    return;
  }
  st.failed = true;
  st.failure = why;
  if (st.verify) {
    // Its M values count as failed: the range shrinks or splits there, as for a loss.
    fmt::print(stderr, "range pass: a verification failed ({}); its M values count as not held\n", why);
    const VerifyJob job = *st.verify;
    apply_verify(job, {});
    return;
  }
  ++totals_.failed;
  progress(st.problem.describe() + " FAILED: " + why);
}

void TuneParent::write_profile(const UntunedProblem& p, const json& cands) {
  std::string text;
  for (const auto& c : cands) {
    std::vector<std::string> fields = {
        arch_, std::to_string(sm_count_), std::to_string(p.m), std::to_string(p.n), std::to_string(p.k),
        p.bias ? "True" : "False", std::string(dtype_name(p.dtype)), std::string(dtype_name(p.out_dtype)),
        format_epilogue_key(p.epilogue), c["libtype"], c["name"], fmt::format("{:.4f}", c["screen_us"].get<double>()),
        fmt::format("{:.4f}", c["us"].get<double>()), fmt::format("{:.4f}", c["spread"].get<double>()),
        fmt::format("{:.6f}", c["err_ratio"].get<double>()), c["strict_ok"].get<bool>() ? "True" : "False",
        profile_error(c)};
    if (profile_stages_) {
      fields.push_back(c.value("stage", std::string()));
      fields.push_back(fmt::format("{:.5f}", c.value("final_ratio", -1.0)));
      fields.push_back(fmt::format("{:.5f}", c.value("confirm_ratio", -1.0)));
      if (profile_accurate_) fields.push_back(fmt::format("{:.4f}", c.value("accurate_us", -1.0)));
    }
    if (profile_scales_) fields.emplace_back(format_scale_recipe(p.a_scale, p.b_scale));
    if (profile_batch_) {
      fields.insert(fields.end(),
                    {std::to_string(p.batch), p.transpose_a ? "True" : "False", p.transpose_b ? "True" : "False"});
    }
    text += csv::join(fields) + "\n";
  }
  // One locked append per problem: another tune appending to the same profile cannot interleave.
  append_locked(o_.profile_file, profile_header_, text);
}

void TuneParent::report_result(const UntunedProblem& p, const TableRow& r, const json& msg) {
  const int same_launches = msg.value("same_launches", 0);
  const auto stages = msg["stage_seconds"].get<std::array<double, 4>>();
  const double def = msg["default_us"];
  const double cratio = msg.value("confirm_ratio", -1.0);
  const std::string confirm =
      cratio > 0 ? fmt::format(", confirmation {:.3f}x, min {:.3f}x over {} placements, {} tried: {}", cratio,
                               msg.value("confirm_min_ratio", -1.0), msg.value("confirm_placements", 0),
                               msg.value("confirm_tried", 0), msg.value("confirmed", false) ? "kept" : "default kept")
                 : std::string();
  const int fplace = msg.value("final_placements", 0);
  const std::string finals = fplace > 1 ? fmt::format(", finals over {} placements", fplace) : std::string();
  const std::string distinct =
      same_launches > 0 ? fmt::format(" ({} distinct launches)", msg["enumerated"].get<int>() - same_launches) : std::string();
  const int rescreened = msg.value("rescreened", 0);
  const std::string loads = rescreened > 0 ? fmt::format(", {} first uses rescreened", rescreened) : std::string();
  progress(fmt::format("{} -> {} {:.2f} us ({}x vs default, {} candidates{}{}, {:.1f} s = screen {:.1f} + accurate "
                       "{:.1f} + finals {:.1f} + confirmation {:.1f}{}{})",
                       p.describe(), r.kernel_name, r.us, def > 0 ? fmt::format("{:.3f}", def / r.us) : std::string("?"),
                       msg["enumerated"].get<int>(), distinct, loads, msg["seconds"].get<double>(), stages[0],
                       stages[1], stages[2], stages[3], finals, confirm));
}

void TuneParent::handle_result(Worker& w, const json& msg) {
  const std::size_t idx = msg["id"];
  ProblemState& st = states_[idx];
  w.busy_id = -1;
  const int winner = msg["winner"];
  const json& cands = msg["candidates"];
  const int same_launches = msg.value("same_launches", 0);  // listed, not raced (--dedupe_launches)
  totals_.candidates_raced += static_cast<long long>(cands.size()) - same_launches;
  totals_.enumerated.push_back(msg["enumerated"].get<int>());
  totals_.distinct.push_back(msg["enumerated"].get<int>() - same_launches);
  totals_.tuned_seconds += msg["seconds"].get<double>();
  // Screen, accurate, finals, confirmation (the workers are this binary: always sent).
  const auto stages = msg["stage_seconds"].get<std::array<double, 4>>();
  for (std::size_t i = 0; i < 4; ++i) totals_.stages[i] += stages[i];
  totals_.screen_graph += msg.value("screen_graph_seconds", 0.0);
  totals_.checks += msg.value("check_seconds", 0.0);
  const UntunedProblem& p = st.problem;
  if (!o_.profile_file.empty()) write_profile(p, cands);
  if (winner < 0) {
    st.failed = true;
    st.failure = "no candidate passed timing and the correctness check";
    ++totals_.failed;
    progress(p.describe() + " FAILED: " + st.failure);
    return;
  }
  const json& c = cands[static_cast<std::size_t>(winner)];
  TableRow r;
  r.key = key_of(p, arch_, sm_count_);
  r.m = p.m;
  r.libtype = c["libtype"];
  r.kernel_name = c["name"];
  r.solidx = c["solidx"];
  r.split_k = c["splitK"];
  r.us = c["us"];
  r.err_ratio = c["err_ratio"];
  GemmProblem gp;
  gp.m = p.m;
  gp.n = p.n;
  gp.k = p.k;
  gp.a_type = gp.b_type = p.dtype;
  gp.out_type = p.out_dtype;
  set_row_rates(r, gp);
  if (st.targets & kToTable) {
    rows_.erase(
        std::remove_if(rows_.begin(), rows_.end(), [&](const TableRow& x) { return x.key == r.key && x.m == r.m; }),
        rows_.end());
    rows_.push_back(r);
    unwritten_.push_back(r);
  }
  if (st.targets & kToGrid) {
    std::string default_name;
    for (const auto& cj : cands) {
      if (cj.value("is_default", false)) default_name = cj["name"].get<std::string>();
    }
    const std::string id = r.key.describe();
    state_.record_race(id, r.m, default_name, point_timings(cands, race_options_of(o_).select), feeds_ranges(id, r.m));
    grid_unwritten_.push_back(r);
  }
  st.done = true;
  ++totals_.finished;
  ++pending_write_;
  report_result(p, r, msg);
  if (pending_write_ >= o_.batch) write_rows();
}

// This run's new rows merged into the tuned file as it is now, so a concurrent tune into the same
// file keeps its rows (and this one's replace those of the same key and M).
void TuneParent::write_rows() {
  rows_ = update_tuned_table(o_.tuned_file, unwritten_);
  unwritten_.clear();
  if (!grid_unwritten_.empty()) {
    // The state first: a point in the points' file always has its default recorded.
    save_state();
    grid_rows_ = update_tuned_table(grid_path_, grid_unwritten_);
    grid_unwritten_.clear();
  }
  pending_write_ = 0;
}

void TuneParent::on_message(Worker& w, const json& msg) {
  const std::string type = msg["type"];
  if (type == "hello") {
    w.ready = true;
    w.arch = msg["arch"];
    w.sm_count = msg["sm_count"];
    if (arch_.empty()) {
      arch_ = w.arch;
      sm_count_ = w.sm_count;
    }
    TGEMM_CHECK(w.arch == arch_ && w.sm_count == sm_count_, "tgemm tune", "GPU ", w.device, " is ", w.arch, "/",
                w.sm_count, " SMs but GPU ", workers_[0].device, " is ", arch_, "/", sm_count_,
                ": tune different GPUs separately");
  } else if (type == "progress") {
    w.last_progress = Clock::now();
    w.current_candidate = msg["candidate"];
    w.current_phase = msg["phase"];
  } else if (type == "result") {
    handle_result(w, msg);
  } else if (type == "verified") {
    handle_verified(w, msg);
  } else if (type == "counted") {
    handle_counted(w, msg);
  } else if (type == "fatal") {
    fail_or_retry(w, msg["error"].get<std::string>());
  }
}

void TuneParent::read_from(Worker& w) {
  char buf[65536];
  const ssize_t n = ::read(w.out_fd, buf, sizeof(buf));
  if (n <= 0) {
    if (w.busy_id >= 0) {
      fail_or_retry(w, "worker exited");
    } else {
      TGEMM_CHECK(w.ready, "tgemm tune", "worker on GPU ", w.device, " exited before starting");
      kill_worker(w);
      spawn_worker(w, o_);
    }
    return;
  }
  w.buffer.append(buf, static_cast<std::size_t>(n));
  std::size_t nl;
  while ((nl = w.buffer.find('\n')) != std::string::npos) {
    const std::string line = w.buffer.substr(0, nl);
    w.buffer.erase(0, nl + 1);
    const json msg = json::parse(line, nullptr, false);
    if (!msg.is_discarded()) on_message(w, msg);
  }
}

void TuneParent::check_timeouts(Worker& w) {
  if (w.busy_id < 0) return;
  const auto now = Clock::now();
  const double since_progress = std::chrono::duration<double>(now - w.last_progress).count();
  const double since_start = std::chrono::duration<double>(now - w.problem_start).count();
  if (since_progress > o_.candidate_timeout) {
    fail_or_retry(w, fmt::format("no progress for {:.0f} s (hang)", since_progress));
  } else if (since_start > o_.timeout) {
    w.current_candidate.clear();  // not one candidate's fault: give up on the problem
    fail_or_retry(w, fmt::format("problem exceeded --timeout {:.0f} s", o_.timeout));
  }
}

int TuneParent::run() {
  start();
  drive();
  return finish();
}

// Jobs to the workers until every queued one is done (or a stop signal); results are handled as
// they arrive, and may queue more (the range pass's next rounds).
void TuneParent::drive() {
  while (g_stop_signal == 0) {
    if (!planned_ && !arch_.empty()) plan();
    if (planned_) {
      bool all_idle = true;
      for (auto& w : workers_) {
        assign(w);
        all_idle = all_idle && w.busy_id < 0;
      }
      if (queue_.empty() && all_idle) break;
    }
    std::vector<pollfd> fds;
    for (auto& w : workers_) fds.push_back({w.out_fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 200);
    if (g_stop_signal != 0) break;  // before a worker that got the signal too counts as failed
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(workers_[i]);
      check_timeouts(workers_[i]);
    }
  }
}

void TuneParent::print_summary() {
  std::sort(totals_.enumerated.begin(), totals_.enumerated.end());
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  fmt::print("\ntgemm tune summary: {} tuned, {} failed, {} skipped (already tuned); {} candidates raced; "
             "{} wall, {} of GPU work\n",
             totals_.finished, totals_.failed, totals_.skipped, totals_.candidates_raced, format_duration(elapsed),
             format_duration(totals_.tuned_seconds));
  if (totals_.finished > 0) {
    fmt::print("GPU work by stage: screen {}, accurate timing and checks {}, finals {}, confirmation {}\n",
               format_duration(totals_.stages[0]), format_duration(totals_.stages[1]),
               format_duration(totals_.stages[2]), format_duration(totals_.stages[3]));
    fmt::print("of which: graph screening {} of the screen, correctness checks {} of the accurate stage\n",
               format_duration(totals_.screen_graph), format_duration(totals_.checks));
  }
  const std::vector<int>& e = totals_.enumerated;
  if (!e.empty()) {
    fmt::print("candidates per problem: min {}, median {}, max {}\n", e.front(), e[e.size() / 2], e.back());
  }
  if (o_.dedupe_launches && !totals_.distinct.empty()) {
    std::vector<int>& d = totals_.distinct;
    std::sort(d.begin(), d.end());
    fmt::print("distinct launches per problem (--dedupe_launches): min {}, median {}, max {}\n", d.front(),
               d[d.size() / 2], d.back());
  }
  for (const auto& st : states_) {
    if (st.failed) fmt::print("FAILED {}: {}\n", st.problem.describe(), st.failure);
  }
  fmt::print("wrote {} ({} rows)\n", o_.tuned_file, rows_.size());
}

int TuneParent::reconfirm() const {
  const std::vector<std::string> args = reconfirm_arguments(o_);
  std::string command = "tgemm";
  for (const std::string& a : args) command += " " + a;
  fmt::print("\ntgemm tune --reconfirm: every non-default row once more, in a fresh process on GPU {}: {}\n",
             devices_.front(), command);
  if (!temporary_profile_.path.empty()) {
    fmt::print("(the profile is a temporary file, removed after the reconfirmation; --profile_file keeps one)\n");
  }
  const int rc = spawn_reconfirm(args, devices_.front());
  if (rc != 0) fmt::print(stderr, "tgemm tune: the reconfirmation exited with {}\n", rc);
  return rc;
}

int TuneParent::finish() {
  if (o_.m_grid_plan) return finish_plan();
  for (auto& w : workers_) kill_worker(w);
  write_rows();
  const int stop_signal = g_stop_signal;
  if (stop_signal != 0) {
    int in_flight = 0;
    for (const auto& st : states_) in_flight += !st.done && !st.failed;
    fmt::print(stderr, "{}tgemm tune: stopped by signal {}: the {} finished results are written; {} problems left "
                       "(rerun the same command to resume)\n",
               tty_ ? "\n" : "", stop_signal, totals_.finished, in_flight);
  }
  print_summary();
  if (stop_signal != 0) return 128 + stop_signal;
  if (o_.reconfirm && !rows_.empty()) {
    const int rc = reconfirm();
    if (rc != 0) return rc;
  }
  if (o_.m_grid) {
    const int rc = grid_phase();
    if (rc != 0) return rc;
  }
  return totals_.failed == 0 ? 0 : 1;
}

void TuneParent::handle_counted(Worker& w, const json& msg) {
  const std::size_t idx = msg["id"];
  w.busy_id = -1;
  states_[idx].done = true;
  const GridKey& gk = grid_keys_[states_[idx].count->key];
  std::string list;
  long long key_total = 0;
  for (const auto& c : msg["counts"]) {
    const int first = c["first"], refined = c["refined"];
    key_total += first + refined;
    ++counted_points_;
    list += fmt::format(" M={} {} ({}+{}{})", c["M"].get<std::int64_t>(), first + refined, first, refined,
                        c["compute_bound"].get<bool>() ? ", compute-bound" : "");
  }
  counted_candidates_ += key_total;
  count_seconds_ += msg.value("seconds", 0.0);
  fmt::print("N={} K={}: {} candidates over {} points (first stage + refinement):{}\n", gk.key.n, gk.key.k, key_total,
             msg["counts"].size(), list);
}

int TuneParent::finish_plan() {
  for (auto& w : workers_) kill_worker(w);
  int failed = 0;
  for (const auto& st : states_) {
    if (st.failed) {
      ++failed;
      fmt::print("FAILED counting {}: {}\n", st.problem.describe(), st.failure);
    }
  }
  fmt::print(
      "\ntgemm tune --m-grid-plan: {} grid points to race, {} candidates to screen in all ({:.0f} a point); "
      "{} grid points left out as compute-bound (--m-grid-compute-bound {}); counted in {:.1f} s of worker time; "
      "nothing raced\n",
      counted_points_, counted_candidates_,
      counted_points_ > 0 ? static_cast<double>(counted_candidates_) / counted_points_ : 0.0, grid_left_out_,
      o_.m_grid_compute_bound, count_seconds_);
  return failed == 0 ? 0 : 1;
}

// --m-grid after the races: the grid points' reconfirmation, then the range pass of every key
// whose ranges for this grid are not written yet.
int TuneParent::grid_phase() {
  if (o_.reconfirm) {
    const int rc = reconfirm_grid();
    if (rc != 0) return rc;
  }
  plan_range_checks();
  if (!queue_.empty()) {
    fmt::print(stderr, "tgemm tune --m-grid: range pass, {} verifications to start on {} GPU(s)\n", queue_.size(),
               workers_.size());
    for (auto& w : workers_) spawn_worker(w, o_);
    drive();
    for (auto& w : workers_) kill_worker(w);
    if (g_stop_signal != 0) {
      fmt::print(stderr,
                 "tgemm tune --m-grid: stopped by signal {} in the range pass; the keys whose ranges are "
                 "written are kept (rerun the same command to resume)\n",
                 g_stop_signal);
      return 128 + g_stop_signal;
    }
  }
  int written_keys = 0;
  for (const GridKey& gk : grid_keys_) written_keys += state_.ranges_pending(gk.id, grid_) ? 0 : 1;
  std::string compute_bound = fmt::format("{} grid points left out as compute-bound", grid_left_out_);
  if (race_compute_bound()) {
    compute_bound = fmt::format("{} exact-M rows of compute-bound grid points written now", exact_rows_written_);
  }
  fmt::print(
      "\ntgemm tune --m-grid summary: {} keys x {} grid points; ranges written for {} keys ({} done before, {} "
      "planned again: their ranges reached compute-bound M), {} range rows written now, every range at or below "
      "its key's last memory-bound M; {}; wrote {}\n",
      grid_keys_.size(), grid_.size(), written_keys, keys_done_before_, keys_replanned_, range_rows_written_,
      compute_bound, o_.tuned_file);
  return written_keys == static_cast<int>(grid_keys_.size()) ? 0 : 1;
}

// The grid points' race winners through `tgemm reconfirm` in a fresh process, as the tuned file's
// rows are (a temporary table of the points not reconfirmed yet, merged back into the points' file).
int TuneParent::reconfirm_grid() {
  std::vector<TableRow> todo;
  for (const TableRow& r : grid_rows_) {
    const std::string id = r.key.describe();
    if (grid_point_raced(id, r.m) && state_.reconfirmed[id].count(r.m) == 0) todo.push_back(r);
  }
  if (todo.empty()) return 0;
  // One reconfirmation per GPU, each over a share of the points (a key's points round-robin, so
  // the big keys spread), run at once; each its own temporary table, merged back in turn.
  const std::size_t shards = std::min(devices_.size(), todo.size());
  std::vector<std::vector<TableRow>> shares(shards);
  for (std::size_t i = 0; i < todo.size(); ++i) shares[i % shards].push_back(todo[i]);
  std::vector<RemovedAtExit> tables(shards), locks(shards);
  std::vector<std::vector<std::string>> args;
  std::vector<int> devices;
  for (std::size_t i = 0; i < shards; ++i) {
    tables[i].path = temporary_path("mgrid-reconfirm-" + std::to_string(i) + ".csv");
    locks[i].path = tables[i].path + ".lock";
    write_tuned_table(tables[i].path, shares[i]);
    TuneOptions ro = o_;
    ro.tuned_file = tables[i].path;
    args.push_back(reconfirm_arguments(ro));
    devices.push_back(devices_[i]);
  }
  fmt::print("\ntgemm tune --m-grid: the {} grid points raced now, reconfirmed in {} fresh process(es) on GPU(s) {}\n",
             todo.size(), shards, fmt::join(devices, ","));
  const std::vector<int> statuses = spawn_reconfirms(args, devices);
  int result = 0;
  for (std::size_t i = 0; i < shards; ++i) {
    // 1: some rows could not be reconfirmed; they stay as raced.
    if (statuses[i] != 0 && statuses[i] != 1) {
      fmt::print(stderr, "tgemm tune --m-grid: the grid points' reconfirmation on GPU {} exited with {}\n", devices[i],
                 statuses[i]);
      result = statuses[i];
      continue;
    }
    std::ifstream in(tables[i].path);
    const ParsedTable back = parse_tuned_table(in, tables[i].path);
    for (const auto& w : back.warnings) fmt::print(stderr, "warning: {}\n", w);
    grid_rows_ = update_tuned_table(grid_path_, back.rows);
    for (const TableRow& r : back.rows) state_.reconfirmed[r.key.describe()].insert(r.m);
  }
  save_state();
  return result;
}

const GridKey* TuneParent::grid_key(const std::string& id) const {
  const auto it = std::find_if(grid_keys_.begin(), grid_keys_.end(), [&](const GridKey& g) { return g.id == id; });
  return it == grid_keys_.end() ? nullptr : &*it;
}

bool TuneParent::grid_point_raced(const std::string& id, std::int64_t m) const {
  const GridKey* gk = grid_key(id);
  return gk != nullptr && in_grid(m) && (m <= gk->memory_bound_to || race_compute_bound());
}

bool TuneParent::feeds_ranges(const std::string& id, std::int64_t m) const {
  const GridKey* gk = grid_key(id);
  return gk != nullptr && in_grid(m) && m <= gk->memory_bound_to;
}

void TuneParent::plan_range_checks() {
  for (std::size_t k = 0; k < grid_keys_.size(); ++k) {
    GridKey& gk = grid_keys_[k];
    if (race_compute_bound()) exact_rows_written_ += write_compute_bound_rows(gk);
    if (!state_.ranges_pending(gk.id, grid_) && !replan_key(gk)) {
      ++keys_done_before_;
      recut_key_ranges(gk);
      continue;
    }
    std::vector<GridWinner> points;
    const std::map<std::int64_t, std::string>& defaults = state_.defaults[gk.id];
    const std::map<std::int64_t, std::vector<PointTiming>>& timings = state_.timings[gk.id];
    for (const TableRow& r : grid_rows_) {
      const auto d = defaults.find(r.m);
      if (!(r.key == gk.key) || !feeds_ranges(gk.id, r.m) || d == defaults.end()) continue;
      GridWinner g{r.m, r.kernel_name, r.kernel_name == d->second, {}};
      const auto t = timings.find(r.m);
      if (!g.is_default && t != timings.end()) g.tied = tied_solutions(t->second, r.kernel_name, d->second, tie_band_);
      points.push_back(std::move(g));
    }
    // The compute-bound grid points, raced or not, feed no run: they bound the gap split below them.
    for (std::int64_t m : grid_) {
      if (m > gk.memory_bound_to) points.push_back(GridWinner{m, std::string(), true});
    }
    gk.checks = plan_ranges(points, o_.m_grid_shrink_steps, runnable_intervals(timings), gk.memory_bound_to);
    gk.open = gk.checks.size();
    if (gk.checks.empty()) write_key_ranges(gk);
    for (std::size_t c = 0; c < gk.checks.size(); ++c) queue_verify(k, c);
  }
}

// The check's next round as a job, or, when it is settled, its key's rows once every check of the
// key is.
void TuneParent::queue_verify(std::size_t key, std::size_t check) {
  GridKey& gk = grid_keys_[key];
  std::vector<std::int64_t> ms = pending(gk.checks[check]);
  if (ms.empty()) {
    if (--gk.open == 0) write_key_ranges(gk);
    return;
  }
  ProblemState st;
  st.problem = gk.proto;
  st.verify = VerifyJob{key, check, std::move(ms)};
  states_.push_back(std::move(st));
  queue_.push_back(states_.size() - 1);
}

// A race: the problem, the candidates excluded after a hang; for a grid point the largest M the
// worker probes each passing candidate up to (its RunnableM), and for a grid point no input problem
// asked for the grid preset.
json TuneParent::race_request(std::size_t idx, const ProblemState& st) const {
  json req = {{"id", idx}, {"problem", problem_json(st.problem)}, {"exclude", st.exclude}};
  if ((st.targets & kToGrid) != 0) req["runs_cap"] = grid_.back();
  if (st.targets == kToGrid && o_.m_grid_race == "preset") req["preset"] = true;
  return req;
}

json TuneParent::verify_request(std::size_t idx, const VerifyJob& job) const {
  const GridKey& gk = grid_keys_[job.key];
  const RangeCheck& c = gk.checks[job.check];
  // The race result of a point the solution won (not one it absorbed): its row names it.
  const auto won = std::find_if(c.grid.begin(), c.grid.end(), [&](std::int64_t m) { return c.absorbed.count(m) == 0; });
  TGEMM_CHECK(won != c.grid.end(), "tgemm tune --m-grid", "the run of ", c.solution, " of ", gk.id,
              " has no grid point it won");
  const auto row = std::find_if(grid_rows_.begin(), grid_rows_.end(),
                                [&](const TableRow& r) { return r.key == gk.key && r.m == *won; });
  TGEMM_CHECK(row != grid_rows_.end(), "tgemm tune --m-grid", "no grid row of ", gk.id, " at M = ", *won);
  const int rounds = o_.reconfirm_rounds > 0 ? o_.reconfirm_rounds : std::max(1, o_.confirm_rounds);
  return {{"id", idx},
          {"verify",
           {{"problem", problem_json(gk.proto)},
            {"ms", job.ms},
            {"libtype", row->libtype},
            {"kernelName", row->kernel_name},
            {"solidx", row->solidx},
            {"splitK", row->split_k},
            {"rounds", rounds},
            {"placements", o_.reconfirm_placements}}}};
}

void TuneParent::handle_verified(Worker& w, const json& msg) {
  const std::size_t idx = msg["id"];
  w.busy_id = -1;
  states_[idx].done = true;
  const VerifyJob job = *states_[idx].verify;
  const GridKey& gk = grid_keys_[job.key];
  std::map<std::int64_t, double> ratios;
  std::string readings;
  for (const auto& r : msg["ratios"]) {
    const std::int64_t m = r["M"];
    const double ratio = r["ratio"];
    ratios[m] = ratio;
    const std::string error = r.value("error", std::string());
    readings += fmt::format(" M={} {:.3f}x{}{}", m, ratio, ratio_holds(ratio, tie_band_) ? "" : " (not held)",
                            error.empty() ? "" : " [" + error + "]");
  }
  fmt::print(stderr, "{}range pass N={} K={}: {}:{} ({:.1f} s)\n", tty_ ? "\r" : "", gk.key.n, gk.key.k,
             gk.checks[job.check].solution, readings, msg.value("seconds", 0.0));
  apply_verify(job, ratios);
}

void TuneParent::apply_verify(const VerifyJob& job, const std::map<std::int64_t, double>& ratios) {
  GridKey& gk = grid_keys_[job.key];
  gk.measured += static_cast<int>(job.ms.size());
  apply_ratios(gk.checks[job.check], ratios, tie_band_);
  queue_verify(job.key, job.check);
}

// The key's verified ranges replace its range rows in the tuned file, cut around its exact rows.
void TuneParent::write_key_ranges(GridKey& gk) {
  std::vector<VerifiedRange> ranges;
  for (const RangeCheck& c : gk.checks) {
    for (VerifiedRange& v : verified_ranges(c)) ranges.push_back(std::move(v));
  }
  std::map<std::int64_t, TableRow> by_m;
  for (const TableRow& r : grid_rows_) {
    if (r.key == gk.key) by_m[r.m] = r;
  }
  std::vector<TableRow> written;
  rows_ = replace_range_rows(o_.tuned_file, gk.key, [&](const std::set<std::int64_t>& exact_ms) {
    written = range_rows(ranges, by_m, exact_ms);
    return written;
  });
  range_rows_written_ += static_cast<int>(written.size());
  state_.ranges_written[gk.id] = grid_;
  save_state();
  std::string list;
  for (const TableRow& r : written) list += fmt::format(" [{}, {}] {};", r.m_lo, r.m_hi, r.kernel_name);
  // Grid points a written range serves with another solution than their winner's (one it tied).
  int absorbed_points = 0;
  for (const TableRow& r : written) {
    for (const auto& [m, g] : by_m) {
      absorbed_points += in_grid(m) && r.m_lo <= m && m <= r.m_hi && g.kernel_name != r.kernel_name;
    }
  }
  const std::string absorbed =
      absorbed_points > 0 ? fmt::format(", {} grid points served by a solution that tied their winner", absorbed_points)
                          : std::string();
  fmt::print("{}N={} K={}: {} range rows ({} M values verified{}):{}\n", tty_ ? "\r" : "", gk.key.n, gk.key.k,
             written.size(), gk.measured, absorbed, list.empty() ? " none (the default serves every M)" : list);
}

// A key whose ranges were written before claims stopped at its last memory-bound M (an older state
// file): a range row reaching above it is planned and verified again from the memory-bound points,
// not cut, since a cut would leave its new end unmeasured. The pass replaces every range row of the key.
bool TuneParent::replan_key(const GridKey& gk) {
  if (!ranges_reach_above(rows_, gk.key, gk.memory_bound_to)) return false;
  ++keys_replanned_;
  state_.ranges_written.erase(gk.id);
  fmt::print(
      "N={} K={}: range rows written before reach compute-bound M (above {}): its ranges are planned and "
      "verified again\n",
      gk.key.n, gk.key.k, gk.memory_bound_to);
  return true;
}

// --m-grid-compute-bound exact: the key's raced compute-bound grid points become exact-M rows, each as
// the race and the grid's reconfirmation left it (the default's too, as an input problem's row
// does), once a race: afterwards the row is the tuned file's, which the tune's own reconfirmation
// re-times on every run. A point still to be reconfirmed waits for the next run; a point the input
// asked for has its own row.
int TuneParent::write_compute_bound_rows(const GridKey& gk) {
  std::vector<TableRow> rows;
  std::set<std::int64_t>& written = state_.exact_written[gk.id];
  for (const TableRow& r : grid_rows_) {
    if (!(r.key == gk.key) || !in_grid(r.m) || r.m <= gk.memory_bound_to || !state_.raced(gk.id, r.m)) continue;
    if (written.count(r.m) == 1 || (o_.reconfirm && state_.reconfirmed[gk.id].count(r.m) == 0)) continue;
    const bool asked = std::any_of(problems_.begin(), problems_.end(), [&](const UntunedProblem& p) {
      return p.m == r.m && key_of(p, arch_, sm_count_) == gk.key;
    });
    if (!asked) rows.push_back(r);
    written.insert(r.m);
  }
  if (!rows.empty()) rows_ = update_tuned_table(o_.tuned_file, rows);
  save_state();
  return static_cast<int>(rows.size());
}

// A key whose ranges were written before: its range rows cut around exact rows added since (an input
// problem tuned into a range); a cut only narrows a range, so nothing is timed.
void TuneParent::recut_key_ranges(const GridKey& gk) {
  std::vector<VerifiedRange> ranges;
  for (const TableRow& r : rows_) {
    if (!(r.key == gk.key) || (r.m_lo == 0 && r.m_hi == 0)) continue;
    VerifiedRange v{r.kernel_name, r.m_lo, r.m_hi, {}};
    // A range holds no grid point the default won (a run stops there), so the grid points inside it
    // that another solution won are the ones it absorbed.
    for (const TableRow& g : grid_rows_) {
      if (!(g.key == gk.key) || g.m < r.m_lo || r.m_hi < g.m) continue;
      if (g.kernel_name == r.kernel_name) {
        v.grid.push_back(g.m);
      } else if (in_grid(g.m)) {
        v.absorbed[g.m] = g.kernel_name;
      }
    }
    std::sort(v.grid.begin(), v.grid.end());
    if (!v.grid.empty()) ranges.push_back(std::move(v));
  }
  // A hand-edited file may hold overlapping ranges (the loader warns and skips one of each pair):
  // the lower of each overlap is kept, so the rows written are disjoint.
  std::sort(ranges.begin(), ranges.end(), [](const VerifiedRange& a, const VerifiedRange& b) { return a.lo < b.lo; });
  std::vector<VerifiedRange> disjoint;
  for (VerifiedRange& v : ranges) {
    if (disjoint.empty() || disjoint.back().hi < v.lo) disjoint.push_back(std::move(v));
  }
  ranges = std::move(disjoint);
  std::map<std::int64_t, TableRow> by_m;
  for (const TableRow& r : grid_rows_) {
    if (r.key == gk.key) by_m[r.m] = r;
  }
  rows_ = replace_range_rows(o_.tuned_file, gk.key, [&](const std::set<std::int64_t>& exact_ms) {
    return range_rows(ranges, by_m, exact_ms);
  });
}

}  // namespace

int run_tune(const TuneOptions& options) {
  if (options.worker) return run_worker(options);
  TuneOptions o = options;
  TGEMM_CHECK(!o.input_file.empty() && !o.tuned_file.empty(), "tgemm tune", "-i/--input_file and ",
              "-o/--tuned_file are required");
  TGEMM_CHECK(o.mp >= 1, "tgemm tune", "--mp must be >= 1, got ", o.mp);
  TGEMM_CHECK(o.batch >= 1, "tgemm tune", "--batch must be >= 1, got ", o.batch);
  TGEMM_CHECK(o.reconfirm_alternatives <= 0 || o.reconfirm, "tgemm tune", "--reconfirm_alternatives ",
              o.reconfirm_alternatives, " needs the reconfirmation (the alternatives are timed there), got --no-reconfirm");
  o.reconfirm_alternatives = reconfirm_alternatives(o);
  std::vector<UntunedProblem> problems = read_untuned(o.input_file);
  require_gpu_for("tune");
  if (o.m_grid) {
    tune_grid(o.m_grid_max, o.m_grid_factor);  // its arguments checked before any GPU time
    TGEMM_CHECK(o.m_grid_shrink_steps >= 0, "tgemm tune", "--m-grid-shrink-steps must be >= 0, got ",
                o.m_grid_shrink_steps);
    TGEMM_CHECK(o.m_grid_compute_bound == "skip" || o.m_grid_compute_bound == "exact", "tgemm tune",
                "--m-grid-compute-bound must be skip or exact, got '", o.m_grid_compute_bound, "'");
  }
  TuneParent parent(std::move(o), std::move(problems));
  return parent.run();
}

}  // namespace tgemm
