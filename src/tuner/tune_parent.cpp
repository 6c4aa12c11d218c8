// `tgemm tune`'s parent process (tuner/command.h, run_tune): the workers, the tuned table, the
// profile, progress, and the reconfirmation afterwards.
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "core/csv.h"
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

struct ProblemState {
  UntunedProblem problem;
  std::vector<std::string> exclude;
  int attempts = 0;
  bool done = false;
  bool failed = false;
  std::string failure;
};

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
  std::vector<ProblemState> states_;
  std::deque<std::size_t> queue_;
  std::string arch_;
  int sm_count_ = 0;
  Clock::time_point start_ = Clock::now();
  int pending_write_ = 0;
  bool planned_ = false;
  TuneTotals totals_;
  RemovedAtExit temporary_profile_;
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
  open_profile();
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
  }
  append_locked(o_.profile_file, kProfileHeader, "");
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
    states_.push_back({p, {}, 0, false, false, ""});
    queue_.push_back(states_.size() - 1);
  }
  fmt::print(stderr, "tgemm tune: {} problems in {}, {} already tuned in {} (skipped; --all retunes), {} to tune "
                     "on {} GPU(s) of {} ({} SMs)\n",
             problems_.size(), o_.input_file, totals_.skipped, o_.tuned_file, states_.size(), workers_.size(), arch_,
             sm_count_);
  planned_ = true;
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
  const json req = {{"id", idx}, {"problem", problem_json(st.problem)}, {"exclude", st.exclude}};
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
    text += csv::join(fields) + "\n";
  }
  // One locked append per problem: another tune appending to the same profile cannot interleave.
  append_locked(o_.profile_file, kProfileHeader, text);
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
  rows_.erase(std::remove_if(rows_.begin(), rows_.end(), [&](const TableRow& x) { return x.key == r.key && x.m == r.m; }),
              rows_.end());
  rows_.push_back(r);
  unwritten_.push_back(r);
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
  return finish();
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
  return totals_.failed == 0 ? 0 : 1;
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
  TuneParent parent(std::move(o), std::move(problems));
  return parent.run();
}

}  // namespace tgemm
