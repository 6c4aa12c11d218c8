// Concurrency on the GPU through the public API (gemm_race.h):
//  - 8 host threads on 8 non-blocking streams calling every a16w16 form (bf16 and fp16 inputs,
//    bf16/fp16/fp32 outputs, bias, erf and tanh GELU, ReLU, alpha/beta with a separate c and in
//    place, all options at once) on 40 problems (M 1..300, odd values included) that reach every
//    backend; the first calls of each shape race (a fresh process, and again after reload_config),
//    every output NaN-poisoned (or, in place, refilled with c) before its call and compared with
//    the fp32 reference; no sticky CUDA error at the end. ~2,000 calls.
//  - The same on 8 small problems: the compute-sanitizer (memcheck) variant that scripts/gpu-check
//    runs (filter *Sanitizer*).
//  - Each CUTLASS instance that implements a GELU problem (up to 4) run on a fresh thread that has
//    made no CUDA call, so has no current context.
//  - 4 processes with TGEMM_TUNE_GEMM=1 recording into one untuned file while each races its
//    (overlapping) problems from 4 threads: the file parses as `tgemm tune -i` reads it and holds
//    exactly the union of the shapes, each once, every line whole.
// The C++ API has no preshuffled-weight form; the Python variant is tests/python/test_concurrency.py.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/csv.h"
#include "runtime/runtime.h"
#include "tests/common/gpu_test_util.h"
#include "tests/common/host_test_util.h"
#include "tests/gpu/gemm_race.h"
#include "tuner/tune_job.h"

extern char** environ;

namespace tgemm::test {
namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// What served each case, for the log: a change of routing shows up here before it shows up as a
// backend left out of the race.
std::string coverage(const std::vector<RaceCase>& cases, const RaceReport& r) {
  std::ostringstream os;
  os << "libtypes raced:";
  for (const auto& [libtype, count] : r.libtypes) os << " " << libtype << " x" << count;
  os << "\n";
  for (std::size_t i = 0; i < cases.size() && i < r.kernels.size(); ++i) {
    os << "  " << cases[i].describe() << " -> " << r.kernels[i] << "\n";
  }
  return os.str();
}

void expect_clean_race(const std::vector<RaceCase>& cases, const RaceOptions& o) {
  RaceReport r = race(cases, o);
  std::printf("%s", coverage(cases, r).c_str());
  EXPECT_TRUE(r.failures.empty()) << join_lines(r.failures);
  EXPECT_EQ(r.calls, static_cast<std::int64_t>(o.threads) * o.rounds * static_cast<std::int64_t>(cases.size()));
  // No sticky error: a fresh synchronisation and the last-error slot are both clean.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Concurrency, EightStreamsEveryFormFirstCallsRace) {
  TGEMM_REQUIRE_GPU();
  RaceOptions o;
  o.threads = 8;
  o.rounds = 6;
  o.reload_every = 3;  // rounds 0 and 3 start cold
  expect_clean_race(full_race_cases(), o);
}

// reload_config() from another thread while 8 threads call GEMMs: a call resolved on the previous
// tables finishes on them (the runtime retires dispatchers, it does not free them), every result
// matches the reference.
TEST(Concurrency, ReloadWhileThreadsCall) {
  TGEMM_REQUIRE_GPU();
  RaceOptions o;
  o.threads = 8;
  o.rounds = 3;
  o.reload_every = 0;
  o.reload_concurrently = true;
  RaceReport r = race(small_race_cases(), o);
  EXPECT_TRUE(r.failures.empty()) << join_lines(r.failures);
  EXPECT_EQ(r.calls,
            static_cast<std::int64_t>(o.threads) * o.rounds * static_cast<std::int64_t>(small_race_cases().size()));
  EXPECT_GE(r.reloads, 1);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Concurrency, SanitizerEightStreamsSmallShapes) {
  TGEMM_REQUIRE_GPU();
  RaceOptions o;
  o.threads = 8;
  o.rounds = 2;
  o.reload_every = 1;  // both rounds start cold
  expect_clean_race(small_race_cases(), o);
}

// A thread that has made no CUDA runtime call has no current context: the runtime binds one
// lazily, and PyTorch's device guard makes no call where the device is already the current one.
// A CUTLASS kernel encodes its TMA descriptors on the host through the driver API, which fails
// there (CUDA_ERROR_INVALID_CONTEXT; CUTLASS then prints and launches with an unset descriptor)
// unless the backend makes the context current first. Every CUTLASS instance built that
// implements the problem runs, each on a fresh thread, on the legacy stream.
TEST(Concurrency, CutlassOnAThreadWithNoCurrentContext) {
  TGEMM_REQUIRE_GPU();
  A16W16Case c;
  c.m = 299;
  c.n = 5632;
  c.k = 1024;
  c.bias = true;
  c.activation = Activation::kGelu;
  A16W16Data d = make_a16w16(c, 17);
  const GemmProblem p = d.problem();
  const Backend* cutlass = Runtime::get().registry().find("cutlass");
  ASSERT_NE(cutlass, nullptr);
  int ran = 0;
  for (const SolutionPtr& s : cutlass->candidates(p)) {
    if (!s->can_implement(p) || ran >= 4) continue;
    ++ran;
    DeviceBuffer ws(std::max<std::size_t>(s->workspace_size(p), 16));
    const std::string failure = run_and_compare(d, [&] {
      std::string error;
      std::thread fresh([&] {
        try {
          s->run(p, d.args(), Workspace{ws.data(), ws.bytes()}, nullptr);
          if (cudaDeviceSynchronize() != cudaSuccess) error = "cudaDeviceSynchronize failed";
        } catch (const std::exception& e) {
          error = e.what();
        }
      });
      fresh.join();
      EXPECT_EQ(error, "") << s->name();
    });
    EXPECT_EQ(failure, "") << s->name();
  }
  EXPECT_GT(ran, 0) << "no CUTLASS instance implements " << p.describe();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- multi-process capture ----

const char kUntunedHeader[] = "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue";
// A tuned table with no row: every shape is untuned, so every first resolution records.
const char kTunedHeader[] =
    "arch,sm_count,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,kernelName,"
    "err_ratio,tflops,bw,epilogue\n";

// The environment of a child: this process's, without any TGEMM_* variable, plus `extra`.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "TGEMM_", 6) != 0) env.emplace_back(*e);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

TEST(Concurrency, CaptureFromProcessesUnderLoad) {
  TGEMM_REQUIRE_GPU();
  constexpr int kProcesses = 4;
  constexpr int kThreads = 4;
  constexpr int kRounds = 3;
  TempDir dir;
  const std::string untuned = dir.file("race_untuned.csv");
  const std::string table = dir.file("no_rows_tuned.csv");
  write_file(table, kTunedHeader);
  std::vector<std::string> env =
      child_environment({"TGEMM_TUNE_GEMM=1", "TGEMM_UNTUNED_GEMM_BF16=" + untuned, "TGEMM_CONFIG_GEMM_BF16=" + table});
  std::vector<char*> envp = c_strings(env);

  // ready: each child writes a byte once its buffers are built; go: the children block reading it
  // until the parent closes its end, so every process's first calls start together. The parent's
  // own ends are close-on-exec, so no child holds the write end of `go` open.
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::fcntl(ready[0], F_SETFD, FD_CLOEXEC), 0);
  ASSERT_EQ(::fcntl(go[1], F_SETFD, FD_CLOEXEC), 0);

  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    std::vector<std::string> args = {TGEMM_RACE_CHILD,         std::to_string(p),       std::to_string(kProcesses),
                                     std::to_string(kThreads), std::to_string(kRounds), std::to_string(ready[1]),
                                     std::to_string(go[0])};
    std::vector<char*> argv = c_strings(args);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, TGEMM_RACE_CHILD, nullptr, nullptr, argv.data(), envp.data());
    ASSERT_EQ(rc, 0) << "posix_spawn " << TGEMM_RACE_CHILD << ": " << std::strerror(rc);
    children.push_back(pid);
  }
  ::close(ready[1]);
  ::close(go[0]);
  int ready_count = 0;
  char buf[16];
  while (ready_count < kProcesses) {
    const ssize_t n = ::read(ready[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every child has exited or closed its end: one failed during setup
    ready_count += static_cast<int>(n);
  }
  ::close(ready[0]);
  ::close(go[1]);  // go
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child " << pid << " status " << status << " (its messages are on stderr above)";
  }
  EXPECT_EQ(ready_count, kProcesses);

  std::set<std::string> expected;
  for (int p = 0; p < kProcesses; ++p) {
    for (const RaceCase& c : capture_cases(p, kProcesses)) expected.insert(untuned_row(c));
  }
  const std::string text = read_file(untuned);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "the last line is cut";
  const std::vector<std::string> lines = read_lines(untuned);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], kUntunedHeader);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), std::string(kUntunedHeader)), 1);
  for (const std::string& l : lines) {
    auto fields = csv::split_line(l);
    ASSERT_TRUE(fields.has_value()) << "unparseable line: " << l;
    EXPECT_EQ(fields->size(), 9u) << "torn line: " << l;
  }
  const std::set<std::string> got(lines.begin() + 1, lines.end());
  EXPECT_EQ(got.size(), lines.size() - 1) << "a row was written twice:\n" << text;
  EXPECT_EQ(got, expected) << text;
  // The file as `tgemm tune -i` reads it.
  EXPECT_EQ(read_untuned(untuned).size(), expected.size());
}

}  // namespace
}  // namespace tgemm::test
