#include "tools/cli/tune.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fmt/core.h>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "core/csv.h"
#include "core/table.h"
#include "runtime/runtime.h"
#include "tools/cli/alternatives.h"
#include "tools/cli/common.h"
#include "tune/racer.h"

extern char** environ;

namespace tgemm::cli {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// SIGINT/SIGTERM/SIGHUP to the tune (Ctrl-C, `timeout`, a closed terminal): the main loop writes
// every finished result before exiting, so a stopped tune loses only the problems in flight
// (SIGKILL still loses the results since the last --batch write).
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

struct UntunedProblem {
  std::int64_t m = 0, n = 0, k = 0;
  bool bias = false;
  DType dtype = DType::kBFloat16, out_dtype = DType::kBFloat16;
  bool scale_ab = false, bpreshuffle = false;
  EpilogueKey epilogue;
  std::string describe() const {
    std::string s = fmt::format("M={} N={} K={} bias={} dtype={} outdtype={}", m, n, k, bias ? "True" : "False",
                                dtype_name(dtype), dtype_name(out_dtype));
    if (!(epilogue == EpilogueKey{})) s += " epilogue=" + format_epilogue_key(epilogue);
    return s;
  }
};

std::vector<UntunedProblem> read_untuned(const std::string& path) {
  std::ifstream in(path);
  TGEMM_CHECK(static_cast<bool>(in), "tgemm tune", "cannot open --input_file '", path, "'");
  std::vector<UntunedProblem> out;
  std::map<std::string, std::size_t> cols;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto f = csv::split_line(line);
    TGEMM_CHECK(f.has_value(), "tgemm tune", path, ":", line_no, ": malformed line");
    if (cols.empty()) {
      for (std::size_t i = 0; i < f->size(); ++i) cols[(*f)[i]] = i;
      for (const char* c : {"M", "N", "K"}) {
        TGEMM_CHECK(cols.count(c), "tgemm tune", path, ": header has no '", c, "' column");
      }
      continue;
    }
    auto get = [&](const char* name) -> std::string {
      auto it = cols.find(name);
      return it == cols.end() || it->second >= f->size() ? std::string() : (*f)[it->second];
    };
    UntunedProblem p;
    auto m = csv::parse_int(get("M")), n = csv::parse_int(get("N")), k = csv::parse_int(get("K"));
    TGEMM_CHECK(m && n && k && *m > 0 && *n > 0 && *k > 0, "tgemm tune", path, ":", line_no,
                ": M, N, K must be positive integers");
    p.m = *m;
    p.n = *n;
    p.k = *k;
    p.bias = csv::parse_bool(get("bias")).value_or(false);
    p.scale_ab = csv::parse_bool(get("scaleAB")).value_or(false);
    p.bpreshuffle = csv::parse_bool(get("bpreshuffle")).value_or(false);
    std::string ep = get("epilogue");
    if (!ep.empty()) {
      auto e = parse_epilogue_key(ep);
      TGEMM_CHECK(e.has_value(), "tgemm tune", path, ":", line_no, ": unknown epilogue '", ep, "'");
      p.epilogue = *e;
    }
    std::string dt = get("dtype");
    if (!dt.empty()) {
      auto d = dtype_from_name(dt);
      TGEMM_CHECK(d.has_value(), "tgemm tune", path, ":", line_no, ": unknown dtype '", dt, "'");
      p.dtype = *d;
    }
    std::string od = get("outdtype");
    p.out_dtype = p.dtype;
    if (!od.empty()) {
      auto d = dtype_from_name(od);
      TGEMM_CHECK(d.has_value(), "tgemm tune", path, ":", line_no, ": unknown outdtype '", od, "'");
      p.out_dtype = *d;
    }
    TGEMM_CHECK(!p.scale_ab && !p.bpreshuffle, "tgemm tune", path, ":", line_no,
                ": scaleAB/bpreshuffle problems are not tunable in this build");
    bool dup = false;
    for (const auto& q : out) {
      dup = dup || (q.m == p.m && q.n == p.n && q.k == p.k && q.bias == p.bias && q.dtype == p.dtype &&
                    q.out_dtype == p.out_dtype && q.epilogue == p.epilogue);
    }
    if (!dup) out.push_back(p);
  }
  return out;
}

json problem_json(const UntunedProblem& p) {
  return {{"M", p.m},
          {"N", p.n},
          {"K", p.k},
          {"bias", p.bias},
          {"dtype", std::string(dtype_name(p.dtype))},
          {"outdtype", std::string(dtype_name(p.out_dtype))},
          {"epilogue", format_epilogue_key(p.epilogue)}};
}

// ---------------------------------------------------------------------------------------------
// Worker: problems in as JSON lines on stdin, progress and results out as JSON lines on stdout.

void emit(const json& j) {
  std::string s = j.dump();
  s.push_back('\n');
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

// --libtype: "all" (every backend: an empty list) or a comma list of libtypes.
std::vector<std::string> libtype_list(const std::string& libtype) {
  if (libtype == "all") return {};
  return csv::split_line(libtype).value_or(std::vector<std::string>{});
}

int run_worker(const TuneOptions& o) {
  Runtime& rt = Runtime::get();
  int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  warm_up_gpu(2.0);
  emit({{"type", "hello"}, {"arch", dev.arch}, {"sm_count", dev.sm_count}, {"device", dev.name}});
  RaceOptions ro;
  ro.select.max_err_ratio = o.err_ratio;
  ro.select.require_strict = !o.loose;
  ro.warmup = o.warmup;
  ro.iters = o.iters;
  ro.confirm_placements = o.confirm_placements;
  ro.confirm_best = o.confirm_best;
  ro.confirm_near_default = o.confirm_near_default;
  ro.final_placements = o.final_placements;
  ro.max_finalists = static_cast<std::size_t>(o.finalists);
  ro.memory_bound_finalists = static_cast<std::size_t>(o.finalists_mem);
  ro.final_margin = o.final_margin;
  ro.final_contenders = static_cast<std::size_t>(o.final_contenders);
  ro.refine_bases = static_cast<std::size_t>(o.refine_bases);
  ro.final_rounds = o.final_rounds;
  ro.accurate_block = o.accurate_block;
  ro.confirm_tries = o.confirm_tries;
  ro.confirm_rounds = o.confirm_rounds;
  ro.confirm_margin = o.confirm_margin;
  ro.placement_tolerance = o.placement_tolerance;
  ro.min_rotation_sets = o.min_rotation_sets;
  ro.sustained_round_ms = o.sustained_round_ms;
  ro.sustained_default_margin = o.sustained_margin;
  ro.sustained_confirm_all = o.sustained_confirm_all;
  ro.short_slots = o.short_slots;
  ro.graph_screen_us = o.graph_screen_us;
  ro.select.min_accurate = static_cast<std::size_t>(o.min_accurate);
  ro.select.accurate_margin = o.accurate_margin;
  ro.select.order_band = o.order_band;
  ro.dedupe_launches = o.dedupe_launches;
  ro.check_all = o.check_all;
  ro.libtypes = libtype_list(o.libtype);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    json req = json::parse(line);
    const json& pj = req["problem"];
    GemmProblem p;
    p.m = pj["M"];
    p.n = pj["N"];
    p.k = pj["K"];
    p.a_type = p.b_type = *dtype_from_name(pj["dtype"].get<std::string>());
    p.out_type = *dtype_from_name(pj["outdtype"].get<std::string>());
    if (pj["bias"].get<bool>()) {
      p.epilogue = Epilogue::kBias;
      p.bias_type = p.a_type;
    }
    const EpilogueKey e = *parse_epilogue_key(pj["epilogue"].get<std::string>());
    p.activation = e.activation;
    p.unit_alpha = !e.scaled;
    p.use_c = e.use_c;
    if (p.use_c) p.ldc = p.n;
    p.lda = p.ldb = p.k;
    p.ldo = p.n;
    p.device = device;
    ro.exclude.clear();
    for (const auto& e : req["exclude"]) ro.exclude.insert(e.get<std::string>());
    const std::int64_t id = req["id"];
    ro.on_candidate = [&](const std::string& phase, const std::string& cand) {
      emit({{"type", "progress"}, {"id", id}, {"phase", phase}, {"candidate", cand}});
    };
    try {
      RaceResult r = race_problem(p, ro);
      json cands = json::array();
      for (const auto& c : r.candidates) {
        cands.push_back({{"name", c.name}, {"libtype", c.libtype}, {"solidx", c.solidx}, {"splitK", c.split_k},
                         {"screen_us", c.screen_us}, {"us", c.us}, {"spread", c.spread}, {"err_ratio", c.err_ratio},
                         {"strict_ok", c.strict_ok}, {"error", c.error}, {"same_as", c.same_as}, {"stage", c.stage},
                         {"final_ratio", c.final_ratio}, {"confirm_ratio", c.confirm_ratio},
                         {"accurate_us", c.accurate_us}});
      }
      emit({{"type", "result"}, {"id", id}, {"winner", r.winner}, {"candidates", cands},
            {"enumerated", r.enumerated}, {"screened", r.screened}, {"accurate", r.accurate},
            {"default_us", r.default_us}, {"confirm_default_us", r.confirm_default_us},
            {"confirm_winner_us", r.confirm_winner_us}, {"confirm_ratio", r.confirm_ratio}, {"confirm_min_ratio", r.confirm_min_ratio},
            {"confirm_placements", r.confirm_placements}, {"confirm_tried", r.confirm_tried}, {"confirmed", r.confirmed},
            {"final_placements", r.final_placements}, {"same_launches", r.same_launches}, {"rescreened", r.rescreened}, {"seconds", r.seconds},
            {"stage_seconds", {r.screen_seconds, r.accurate_seconds, r.finals_seconds, r.confirm_seconds}},
            {"screen_graph_seconds", r.screen_graph_seconds}, {"check_seconds", r.check_seconds}, {"arch", dev.arch}, {"sm_count", dev.sm_count}});
    } catch (const std::exception& e) {
      emit({{"type", "fatal"}, {"id", id}, {"error", e.what()}});
      return 3;
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Parent.

struct Worker {
  int device = 0;
  pid_t pid = -1;
  int in_fd = -1;   // we write problems
  int out_fd = -1;  // we read messages
  std::string buffer;
  bool ready = false;
  std::int64_t busy_id = -1;
  Clock::time_point problem_start, last_progress;
  std::string current_candidate, current_phase;
  std::string arch;
  int sm_count = 0;
};

// This process's environment for a child that sees exactly one GPU, `device`. Ordinals are this
// process's, so a CUDA_VISIBLE_DEVICES of the caller maps them (CUDA_VISIBLE_DEVICES=1 tgemm tune
// tunes on physical GPU 1, not 0); its entries (indices, UUIDs, MIG ids) are passed through as given.
std::vector<std::string> environment_for_device(int device) {
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    if (std::string(*e).rfind("CUDA_VISIBLE_DEVICES=", 0) != 0) env_store.emplace_back(*e);
  }
  std::string visible = std::to_string(device);
  if (const char* parent = std::getenv("CUDA_VISIBLE_DEVICES"); parent != nullptr && *parent != '\0') {
    const std::vector<std::string> entries = csv::split_line(parent).value_or(std::vector<std::string>{});
    TGEMM_CHECK(device >= 0 && static_cast<std::size_t>(device) < entries.size(), "tgemm tune", "GPU ordinal ", device,
                " is not among the ", entries.size(), " GPU(s) of CUDA_VISIBLE_DEVICES='", parent, "'");
    visible = entries[static_cast<std::size_t>(device)];
  }
  env_store.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  return env_store;
}

std::string own_executable() {
  char exe[4096];
  ssize_t len = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  TGEMM_CHECK(len > 0, "tgemm tune", "cannot find its own executable");
  exe[len] = '\0';
  return exe;
}

// Starts this executable with `args` (after the program name) in a child that sees only GPU
// `device`, with `actions` applied (may be null); posix_spawn's error code, the child's pid in `pid`.
int spawn_self(std::vector<std::string> args, int device, const posix_spawn_file_actions_t* actions, pid_t& pid) {
  args.insert(args.begin(), "/proc/self/exe");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_store = environment_for_device(device);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string exe = own_executable();
  return posix_spawn(&pid, exe.c_str(), actions, nullptr, argv.data(), envp.data());
}

// --reconfirm: `tgemm <arguments>` (reconfirm_arguments) in a child process on GPU `device`; its
// exit status (128 + signal if it was killed).
int spawn_reconfirm(std::vector<std::string> args, int device) {
  std::fflush(stdout);
  pid_t pid = -1;
  const int rc = spawn_self(std::move(args), device, nullptr, pid);
  TGEMM_CHECK(rc == 0, "tgemm tune --reconfirm", "posix_spawn failed: ", std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

void spawn_worker(Worker& w, const TuneOptions& o) {
  int to_child[2], from_child[2];
  TGEMM_CHECK(::pipe(to_child) == 0 && ::pipe(from_child) == 0, "tgemm tune", "pipe() failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
  posix_spawn_file_actions_addclose(&fa, to_child[1]);
  posix_spawn_file_actions_addclose(&fa, from_child[0]);
  const int rc = spawn_self(worker_arguments(o), w.device, &fa, w.pid);
  posix_spawn_file_actions_destroy(&fa);
  ::close(to_child[0]);
  ::close(from_child[1]);
  TGEMM_CHECK(rc == 0, "tgemm tune", "posix_spawn of the worker failed: ", std::strerror(rc));
  w.in_fd = to_child[1];
  w.out_fd = from_child[0];
  ::fcntl(w.in_fd, F_SETFD, FD_CLOEXEC);
  ::fcntl(w.out_fd, F_SETFD, FD_CLOEXEC);
  w.buffer.clear();
  w.ready = false;
  w.busy_id = -1;
}

void kill_worker(Worker& w) {
  if (w.pid > 0) {
    ::kill(w.pid, SIGKILL);
    ::waitpid(w.pid, nullptr, 0);
  }
  if (w.in_fd >= 0) ::close(w.in_fd);
  if (w.out_fd >= 0) ::close(w.out_fd);
  w.pid = -1;
  w.in_fd = w.out_fd = -1;
}

bool write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}

std::string format_duration(double s) {
  if (s < 0 || !std::isfinite(s)) return "?";
  int t = static_cast<int>(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

// The profile's error column: the candidate's error, or for one not raced because it launches
// what another candidate launches (--dedupe_launches), which one.
std::string profile_error(const json& c) {
  const std::string same = c.value("same_as", std::string());
  return same.empty() ? c["error"].get<std::string>() : "not raced: same launch as " + same;
}

struct ProblemState {
  UntunedProblem problem;
  std::vector<std::string> exclude;
  int attempts = 0;
  bool done = false;
  bool failed = false;
  std::string failure;
};

TableKey key_of(const UntunedProblem& u, const std::string& arch, int sm) {
  GemmProblem p;
  p.n = u.n;
  p.k = u.k;
  p.a_type = p.b_type = u.dtype;
  p.out_type = u.out_dtype;
  p.epilogue = u.bias ? Epilogue::kBias : Epilogue::kNone;
  p.activation = u.epilogue.activation;
  p.unit_alpha = !u.epilogue.scaled;
  p.use_c = u.epilogue.use_c;
  return table_key(p, arch, sm);
}

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
  // The alternatives come from the tune's profile: without --profile_file, a temporary one.
  RemovedAtExit temporary_profile;
  if (o.reconfirm_alternatives > 0 && o.profile_file.empty()) {
    o.profile_file = temporary_profile.path = temporary_path("profile.csv");
  }
  std::vector<UntunedProblem> problems = read_untuned(o.input_file);
  require_gpu("tune");

  std::vector<int> devices;
  if (!o.devices.empty()) {
    for (auto d : parse_int_list(o.devices, "--devices")) devices.push_back(static_cast<int>(d));
  } else {
    for (int i = 0; i < o.mp; ++i) devices.push_back(i);
  }
  std::vector<Worker> workers(devices.size());
  for (std::size_t i = 0; i < workers.size(); ++i) {
    workers[i].device = devices[i];
    spawn_worker(workers[i], o);
  }
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction stop_action {};
  stop_action.sa_handler = on_stop_signal;
  sigemptyset(&stop_action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &stop_action, nullptr);

  // Existing rows (resume) and the rows of this run.
  std::vector<TableRow> rows;
  if (std::filesystem::exists(o.tuned_file)) {
    std::ifstream in(o.tuned_file);
    ParsedTable parsed = parse_tuned_table(in, o.tuned_file);
    for (const auto& w : parsed.warnings) fmt::print(stderr, "warning: {}\n", w);
    rows = parsed.rows;
  }
  std::ofstream profile;
  // A profile written before session 11 (resumed into) has no stage columns: rows appended to it
  // keep its 17 columns.
  bool profile_stages = true;
  bool profile_accurate = true;  // the accurate_us column (session 28); an older profile is appended to without it
  if (!o.profile_file.empty()) {
    bool fresh = !std::filesystem::exists(o.profile_file);
    if (!fresh) {
      std::ifstream in(o.profile_file);
      std::string header;
      std::getline(in, header);
      profile_stages = header.empty() || header.find(",stage,") != std::string::npos;
      profile_accurate = header.empty() || header.find(",accurate_us") != std::string::npos;
    }
    profile.open(o.profile_file, std::ios::app);
    if (fresh) {
      profile << "arch,sm_count,M,N,K,bias,dtype,outdtype,epilogue,libtype,kernelName,screen_us,us,spread,err_ratio,"
                 "strict_ok,error,stage,final_ratio,confirm_ratio,accurate_us\n";
    }
  }

  std::vector<ProblemState> states;
  std::deque<std::size_t> queue;
  std::string arch;
  int sm_count = 0;
  auto start = Clock::now();
  int finished = 0, failed = 0, skipped = 0, pending_write = 0;
  long long candidates_raced = 0;
  std::vector<int> enumerated_counts;
  std::vector<int> distinct_counts;  // enumerated less those that launch what another one does
  double tuned_seconds = 0;
  std::array<double, 4> stage_totals{};  // seconds of screen, accurate, finals, confirmation
  double screen_graph_total = 0, check_total = 0;  // parts of the screen and the accurate stage
  const bool tty = ::isatty(2);

  auto flush_rows = [&] {
    write_tuned_table(o.tuned_file, rows);
    pending_write = 0;
  };
  auto progress = [&](const std::string& last) {
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    int total = static_cast<int>(states.size());
    int done = finished + failed;
    double eta = done > 0 ? elapsed / done * (total - done) : -1;
    std::string msg = fmt::format("[{:>4}/{}] {} | {} candidates raced | elapsed {} | ETA {}", done, total, last,
                                  candidates_raced, format_duration(elapsed), format_duration(eta));
    if (tty) {
      int width = 30;
      int fill = total ? width * done / total : width;
      fmt::print(stderr, "\r[{}{}] {}\x1b[K", std::string(static_cast<std::size_t>(fill), '#'),
                 std::string(static_cast<std::size_t>(width - fill), '.'), msg);
      if (done == total) fmt::print(stderr, "\n");
    } else {
      fmt::print(stderr, "{}\n", msg);
    }
  };

  auto assign = [&](Worker& w) {
    if (queue.empty() || !w.ready || w.busy_id >= 0) return;
    std::size_t idx = queue.front();
    queue.pop_front();
    ProblemState& st = states[idx];
    ++st.attempts;
    json req = {{"id", idx}, {"problem", problem_json(st.problem)}, {"exclude", st.exclude}};
    if (!write_all(w.in_fd, req.dump() + "\n")) {
      queue.push_front(idx);
      return;
    }
    w.busy_id = static_cast<std::int64_t>(idx);
    w.problem_start = w.last_progress = Clock::now();
    w.current_candidate.clear();
  };

  auto fail_or_retry = [&](Worker& w, const std::string& why) {
    std::size_t idx = static_cast<std::size_t>(w.busy_id);
    ProblemState& st = states[idx];
    if (!w.current_candidate.empty()) st.exclude.push_back(w.current_candidate);
    fmt::print(stderr, "{}worker on GPU {}: {} (problem {}, {} '{}'); restarting it\n", tty ? "\n" : "", w.device, why,
               st.problem.describe(), w.current_phase, w.current_candidate);
    w.busy_id = -1;
    kill_worker(w);
    spawn_worker(w, o);
    if (st.attempts < 3 && !w.current_candidate.empty()) {
      queue.push_front(idx);
    } else {
      st.failed = true;
      st.failure = why;
      ++failed;
      progress(st.problem.describe() + " FAILED: " + why);
    }
  };

  auto handle_result = [&](Worker& w, const json& msg) {
    std::size_t idx = msg["id"];
    ProblemState& st = states[idx];
    w.busy_id = -1;
    int winner = msg["winner"];
    const json& cands = msg["candidates"];
    const int same_launches = msg.value("same_launches", 0);  // listed, not raced (--dedupe_launches)
    candidates_raced += static_cast<long long>(cands.size()) - same_launches;
    enumerated_counts.push_back(msg["enumerated"].get<int>());
    distinct_counts.push_back(msg["enumerated"].get<int>() - same_launches);
    tuned_seconds += msg["seconds"].get<double>();
    // Screen, accurate, finals, confirmation (the workers are this binary: always sent).
    const auto stages = msg["stage_seconds"].get<std::array<double, 4>>();
    for (std::size_t i = 0; i < 4; ++i) stage_totals[i] += stages[i];
    screen_graph_total += msg.value("screen_graph_seconds", 0.0);
    check_total += msg.value("check_seconds", 0.0);
    const UntunedProblem& p = st.problem;
    if (profile.is_open()) {
      for (const auto& c : cands) {
        std::vector<std::string> fields = {
            arch, std::to_string(sm_count), std::to_string(p.m), std::to_string(p.n), std::to_string(p.k),
            p.bias ? "True" : "False", std::string(dtype_name(p.dtype)), std::string(dtype_name(p.out_dtype)),
            format_epilogue_key(p.epilogue), c["libtype"], c["name"], fmt::format("{:.4f}", c["screen_us"].get<double>()),
            fmt::format("{:.4f}", c["us"].get<double>()), fmt::format("{:.4f}", c["spread"].get<double>()),
            fmt::format("{:.6f}", c["err_ratio"].get<double>()), c["strict_ok"].get<bool>() ? "True" : "False",
            profile_error(c)};
        if (profile_stages) {
          fields.push_back(c.value("stage", std::string()));
          fields.push_back(fmt::format("{:.5f}", c.value("final_ratio", -1.0)));
          fields.push_back(fmt::format("{:.5f}", c.value("confirm_ratio", -1.0)));
          if (profile_accurate) fields.push_back(fmt::format("{:.4f}", c.value("accurate_us", -1.0)));
        }
        profile << csv::join(fields) << "\n";
      }
      profile.flush();
    }
    if (winner < 0) {
      st.failed = true;
      st.failure = "no candidate passed timing and the correctness check";
      ++failed;
      progress(p.describe() + " FAILED: " + st.failure);
      return;
    }
    const json& c = cands[static_cast<std::size_t>(winner)];
    TableRow r;
    r.key = key_of(p, arch, sm_count);
    r.m = p.m;
    r.libtype = c["libtype"];
    r.kernel_name = c["name"];
    r.solidx = c["solidx"];
    r.split_k = c["splitK"];
    r.us = c["us"];
    r.err_ratio = c["err_ratio"];
    r.tflops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) / (r.us * 1e6);
    double bytes = static_cast<double>((p.m * p.k + p.n * p.k) * static_cast<std::int64_t>(dtype_size(p.dtype)) +
                                       p.m * p.n * static_cast<std::int64_t>(dtype_size(p.out_dtype)));
    r.bw = bytes / (r.us * 1e-6) / 1e9;
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const TableRow& x) { return x.key == r.key && x.m == r.m; }),
               rows.end());
    rows.push_back(r);
    st.done = true;
    ++finished;
    ++pending_write;
    double def = msg["default_us"];
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
    if (pending_write >= o.batch) flush_rows();
  };

  bool planned = false;
  while (g_stop_signal == 0) {
    // Plan once the first worker said which GPU it is on (arch, SM count key the rows).
    if (!planned && !arch.empty()) {
      for (const auto& p : problems) {
        bool have = false;
        if (!o.all) {
          for (const auto& r : rows) have = have || (r.key == key_of(p, arch, sm_count) && r.m == p.m);
        }
        if (have) {
          ++skipped;
          continue;
        }
        states.push_back({p, {}, 0, false, false, ""});
        queue.push_back(states.size() - 1);
      }
      fmt::print(stderr, "tgemm tune: {} problems in {}, {} already tuned in {} (skipped; --all retunes), {} to tune "
                         "on {} GPU(s) of {} ({} SMs)\n",
                 problems.size(), o.input_file, skipped, o.tuned_file, states.size(), workers.size(), arch, sm_count);
      planned = true;
    }
    if (planned) {
      bool all_idle = true;
      for (auto& w : workers) {
        assign(w);
        all_idle = all_idle && w.busy_id < 0;
      }
      if (queue.empty() && all_idle) break;
    }
    std::vector<pollfd> fds;
    for (auto& w : workers) fds.push_back({w.out_fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 200);
    if (g_stop_signal != 0) break;  // before a worker that got the signal too counts as failed
    for (std::size_t i = 0; i < workers.size(); ++i) {
      Worker& w = workers[i];
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        ssize_t n = ::read(w.out_fd, buf, sizeof(buf));
        if (n <= 0) {
          if (w.busy_id >= 0) {
            fail_or_retry(w, "worker exited");
          } else {
            TGEMM_CHECK(w.ready, "tgemm tune", "worker on GPU ", w.device, " exited before starting");
            kill_worker(w);
            spawn_worker(w, o);
          }
          continue;
        }
        w.buffer.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = w.buffer.find('\n')) != std::string::npos) {
          std::string line = w.buffer.substr(0, nl);
          w.buffer.erase(0, nl + 1);
          json msg = json::parse(line, nullptr, false);
          if (msg.is_discarded()) continue;
          std::string type = msg["type"];
          if (type == "hello") {
            w.ready = true;
            w.arch = msg["arch"];
            w.sm_count = msg["sm_count"];
            if (arch.empty()) {
              arch = w.arch;
              sm_count = w.sm_count;
            }
            TGEMM_CHECK(w.arch == arch && w.sm_count == sm_count, "tgemm tune", "GPU ", w.device, " is ", w.arch, "/",
                        w.sm_count, " SMs but GPU ", workers[0].device, " is ", arch, "/", sm_count,
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
      }
      if (w.busy_id >= 0) {
        auto now = Clock::now();
        double since_progress = std::chrono::duration<double>(now - w.last_progress).count();
        double since_start = std::chrono::duration<double>(now - w.problem_start).count();
        if (since_progress > o.candidate_timeout) {
          fail_or_retry(w, fmt::format("no progress for {:.0f} s (hang)", since_progress));
        } else if (since_start > o.timeout) {
          w.current_candidate.clear();  // not one candidate's fault: give up on the problem
          fail_or_retry(w, fmt::format("problem exceeded --timeout {:.0f} s", o.timeout));
        }
      }
    }
  }
  for (auto& w : workers) kill_worker(w);
  flush_rows();
  const int stop_signal = g_stop_signal;
  if (stop_signal != 0) {
    int in_flight = 0;
    for (const auto& st : states) in_flight += !st.done && !st.failed;
    fmt::print(stderr, "{}tgemm tune: stopped by signal {}: the {} finished results are written; {} problems left "
                       "(rerun the same command to resume)\n",
               tty ? "\n" : "", stop_signal, finished, in_flight);
  }

  std::sort(enumerated_counts.begin(), enumerated_counts.end());
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  fmt::print("\ntgemm tune summary: {} tuned, {} failed, {} skipped (already tuned); {} candidates raced; "
             "{} wall, {} of GPU work\n",
             finished, failed, skipped, candidates_raced, format_duration(elapsed), format_duration(tuned_seconds));
  if (finished > 0) {
    fmt::print("GPU work by stage: screen {}, accurate timing and checks {}, finals {}, confirmation {}\n",
               format_duration(stage_totals[0]), format_duration(stage_totals[1]), format_duration(stage_totals[2]),
               format_duration(stage_totals[3]));
    fmt::print("of which: graph screening {} of the screen, correctness checks {} of the accurate stage\n",
               format_duration(screen_graph_total), format_duration(check_total));
  }
  if (!enumerated_counts.empty()) {
    fmt::print("candidates per problem: min {}, median {}, max {}\n", enumerated_counts.front(),
               enumerated_counts[enumerated_counts.size() / 2], enumerated_counts.back());
  }
  if (o.dedupe_launches && !distinct_counts.empty()) {
    std::sort(distinct_counts.begin(), distinct_counts.end());
    fmt::print("distinct launches per problem (--dedupe_launches): min {}, median {}, max {}\n", distinct_counts.front(),
               distinct_counts[distinct_counts.size() / 2], distinct_counts.back());
  }
  for (const auto& st : states) {
    if (st.failed) fmt::print("FAILED {}: {}\n", st.problem.describe(), st.failure);
  }
  fmt::print("wrote {} ({} rows)\n", o.tuned_file, rows.size());
  if (stop_signal != 0) return 128 + stop_signal;
  if (o.reconfirm && !rows.empty()) {
    const std::vector<std::string> args = reconfirm_arguments(o);
    std::string command = "tgemm";
    for (const std::string& a : args) command += " " + a;
    fmt::print("\ntgemm tune --reconfirm: every non-default row once more, in a fresh process on GPU {}: {}\n",
               devices.front(), command);
    if (!temporary_profile.path.empty()) {
      fmt::print("(the profile is a temporary file, removed after the reconfirmation; --profile_file keeps one)\n");
    }
    const int rc = spawn_reconfirm(args, devices.front());
    if (rc != 0) {
      fmt::print(stderr, "tgemm tune: the reconfirmation exited with {}\n", rc);
      return rc;
    }
  }
  return failed == 0 ? 0 : 1;
}

int run_reconfirm(const ReconfirmOptions& o) {
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
  std::vector<TableRow> rows;
  {
    std::ifstream in(o.tuned_file);
    TGEMM_CHECK(static_cast<bool>(in), "tgemm reconfirm", "cannot open the tuned file '", o.tuned_file, "'");
    ParsedTable t = parse_tuned_table(in, o.tuned_file);
    for (const auto& w : t.warnings) fmt::print(stderr, "warning: {}\n", w);
    rows = std::move(t.rows);
  }
  std::unordered_map<std::string, std::vector<ProfiledCandidate>> profiled;
  if (o.alternatives > 0) {
    std::ifstream in(o.profile_file);
    TGEMM_CHECK(static_cast<bool>(in), "tgemm reconfirm", "cannot open the --profile file '", o.profile_file, "'");
    std::vector<std::string> warnings;
    profiled = read_profile_candidates(in, o.profile_file, o.err_ratio, /*loose=*/false, warnings);
    for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
  }
  require_gpu("reconfirm");
  const std::string output = o.output.empty() ? o.tuned_file : o.output;
  Runtime& rt = Runtime::get();
  const int device = rt.platform().current_device();
  const DeviceInfo& dev = rt.platform().device_info(device);
  warm_up_gpu(2.0);
  RaceOptions ro;
  ro.select.max_err_ratio = o.err_ratio;
  ro.confirm_rounds = o.rounds;
  ro.confirm_placements = o.placements;
  ro.confirm_margin = o.margin;
  ro.sustained_default_margin = o.sustained_margin;
  ro.short_slots = o.short_slots;
  ro.placement_tolerance = o.placement_tolerance;
  ro.min_rotation_sets = o.min_rotation_sets;
  ro.libtypes = libtype_list(o.libtype);
  int other_gpu = 0, is_default = 0, kept = 0, reverted = 0, unchecked = 0, replaced = 0;
  const auto start = Clock::now();
  for (TableRow& row : rows) {
    if (row.key.arch != dev.arch || row.key.sm_count != dev.sm_count) {
      ++other_gpu;
      continue;
    }
    const std::string where = fmt::format("{} M={}", row.key.describe(), row.m);
    try {
      const GemmProblem p = problem_of_key(row.key, row.m, device);
      // The row becomes solution s, timed at us (the default's time where s is the default).
      auto set_row = [&](const Solution& s, double us, double err_ratio) {
        row.libtype = std::string(s.libtype());
        row.kernel_name = s.name();
        row.solidx = s.solidx();
        row.split_k = s.split_k();
        row.us = us;
        row.err_ratio = err_ratio;
        row.tflops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) / (row.us * 1e6);
        const double bytes = static_cast<double>(dtype_size(p.a_type)) * static_cast<double>(p.m * p.k) +
                             static_cast<double>(dtype_size(p.b_type)) * static_cast<double>(p.n * p.k) +
                             static_cast<double>(dtype_size(p.out_type)) * static_cast<double>(p.m * p.n);
        row.bw = bytes / (row.us * 1e-6) / 1e9;
        write_tuned_table(output, rows);  // each change on disk at once: an interrupted pass loses nothing
      };
      auto solution_of = [&](const std::string& libtype, const std::string& name) {
        const Backend* backend = rt.registry().find(libtype);
        TGEMM_CHECK(backend != nullptr, "tgemm reconfirm", "no backend '", libtype, "' in this build");
        TableRow r = row;
        r.libtype = libtype;
        r.kernel_name = name;
        std::string why;
        SolutionPtr sol = backend->from_row(r, p, why);
        TGEMM_CHECK(sol != nullptr, "tgemm reconfirm", name, " cannot run: ", why);
        return sol;
      };
      auto backend_rank = [&](std::string_view libtype) {  // registration order, as the race ranks
        const auto& bs = rt.registry().backends();
        for (std::size_t i = 0; i < bs.size(); ++i) {
          if (bs[i]->libtype() == libtype) return static_cast<int>(i) + 1;
        }
        return static_cast<int>(bs.size()) + 1;
      };
      auto describe = [](const Reconfirmation& r) {
        return fmt::format("{:.3f}x the default, min {:.3f}x over {} placements, margin {:.1f}%", r.timing.ratio,
                           r.timing.min_ratio, r.timing.placements, r.margin * 100.0);
      };
      // What the row's own pick, and with --alternatives the profile's next best, measure here.
      struct Tried {
        SolutionPtr solution;
        Reconfirmation r;
        double err_ratio = 0;
      };
      std::vector<Tried> tried;
      const std::string default_name = race_default_name(p, ro.libtypes);
      const bool row_is_default = row.kernel_name == default_name;
      if (!row_is_default) tried.push_back({solution_of(row.libtype, row.kernel_name), {}, row.err_ratio});
      if (o.alternatives > 0) {
        const auto it = profiled.find(profile_problem_key(row));
        const int more = o.alternatives - static_cast<int>(tried.size());
        if (it != profiled.end() && more > 0) {
          for (const ProfiledCandidate& c : rank_alternatives(it->second, default_name, {row.kernel_name}, more)) {
            // One that cannot run here is left out with a warning; the row's own pick and the
            // others are still timed.
            try {
              SolutionPtr sol = solution_of(c.libtype, c.name);
              TGEMM_CHECK(sol->can_implement(p), "tgemm reconfirm", c.name, " cannot implement ", p.describe());
              tried.push_back({sol, {}, c.err_ratio});
            } catch (const Error& e) {
              if (is_sticky_error(e)) throw;
              fmt::print(stderr, "warning: {}: alternative {} left out: {}\n", where, c.name, e.what());
            }
          }
        }
      }
      if (!tried.empty()) {
        // One set of placements for all of them (time_solutions_against).
        std::vector<const Solution*> sols;
        for (const Tried& t : tried) sols.push_back(t.solution.get());
        const std::vector<Reconfirmation> rs = reconfirm_rows(p, sols, ro, race_default_solution(p, ro));
        for (std::size_t i = 0; i < tried.size(); ++i) {
          tried[i].r = rs[i];
          if (i == 0 && !row_is_default) continue;  // the row's own: reported with the outcome below
          fmt::print("{}: alternative {} {} ({})\n", where, tried[i].solution->name(),
                     tried[i].r.kept ? "passes" : "fails", describe(tried[i].r));
        }
      }
      if (tried.empty()) {
        ++is_default;
        continue;
      }
      // The fastest that passes, by the race's own selection (select_winner on the times relative
      // to the default): within choice_band of it, the first in tie order (backend, then name),
      // so two tunes that reconfirm the same candidates keep the same one.
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
      pick.order_band = o.choice_band;
      pick.max_err_ratio = 1.0;  // checked by the tune; the reconfirmation decides on time alone
      const int w = select_winner(passed, pick);
      const Tried* chosen = w >= 0 ? &tried[static_cast<std::size_t>(w)] : nullptr;
      if (chosen != nullptr && chosen->solution->name() == row.kernel_name) {
        ++kept;
        fmt::print("{}: {} kept ({})\n", where, row.kernel_name, describe(chosen->r));
        continue;
      }
      if (chosen != nullptr) {
        ++replaced;
        // The row's own reading too (a row that was the default has none).
        const std::string own = row_is_default ? std::string()
                                               : fmt::format("; the row's own {:.3f}x, min {:.3f}x{}",
                                                             tried.front().r.timing.ratio,
                                                             tried.front().r.timing.min_ratio,
                                                             tried.front().r.kept ? "" : ", failed");
        fmt::print("{}: {} replaced by {} ({}{})\n", where, row.kernel_name, chosen->solution->name(),
                   describe(chosen->r), own);
        set_row(*chosen->solution, chosen->r.timing.b_us, chosen->err_ratio);
        continue;
      }
      if (row_is_default) {
        ++is_default;
        continue;
      }
      const Reconfirmation& own = tried.front().r;
      if (own.default_err_ratio < 0 || own.default_err_ratio > o.err_ratio || !own.default_strict_ok) {
        ++kept;
        fmt::print("{}: {} kept: it failed ({}), but the default {} fails the check (err_ratio {:.4f}{})\n", where,
                   row.kernel_name, describe(own), own.default_name, own.default_err_ratio,
                   own.default_strict_ok ? "" : ", strict check failed");
        continue;
      }
      ++reverted;
      fmt::print("{}: {} reverted to {} ({})\n", where, row.kernel_name, own.default_name, describe(own));
      set_row(*own.default_solution, own.timing.a_us, own.default_err_ratio);
    } catch (const Error& e) {
      if (is_sticky_error(e)) throw;
      ++unchecked;
      fmt::print(stderr, "warning: {}: {} not reconfirmed (row kept): {}\n", where, row.kernel_name, e.what());
    }
  }
  write_tuned_table(output, rows);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  fmt::print("tgemm reconfirm summary: {} rows: {} already the default, {} kept, {} reverted to the default, {}{} not "
             "reconfirmed, {} for another GPU; {}; wrote {}\n",
             rows.size(), is_default, kept, reverted,
             o.alternatives > 0 ? fmt::format("{} replaced by an alternative, ", replaced) : std::string(), unchecked,
             other_gpu, format_duration(elapsed), output);
  return unchecked == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
