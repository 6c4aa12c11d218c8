#include "tuner/tune_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "core/csv.h"
#include "runtime/device_utils.h"
#include "tuner/command.h"

extern char** environ;

namespace tgemm {

namespace {

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

}  // namespace

namespace {

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

}  // namespace

int spawn_reconfirm(std::vector<std::string> args, int device) {
  return spawn_reconfirms({std::move(args)}, {device}).front();
}

std::vector<int> spawn_reconfirms(const std::vector<std::vector<std::string>>& args, const std::vector<int>& devices) {
  TGEMM_CHECK(args.size() == devices.size(), "tgemm tune --reconfirm", args.size(), " argument lists for ",
              devices.size(), " devices");
  std::fflush(stdout);
  std::vector<pid_t> pids;
  std::vector<int> statuses(args.size(), 1);
  for (std::size_t i = 0; i < args.size(); ++i) {
    pid_t pid = -1;
    const int rc = spawn_self(args[i], devices[i], nullptr, pid);
    if (rc != 0) {
      for (pid_t started : pids) wait_status(started);  // no child is left running unwaited
      TGEMM_CHECK(false, "tgemm tune --reconfirm", "posix_spawn failed: ", std::strerror(rc));
    }
    pids.push_back(pid);
  }
  for (std::size_t i = 0; i < pids.size(); ++i) statuses[i] = wait_status(pids[i]);
  return statuses;
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

void require_gpu_for(const std::string& command) {
  std::string why;
  if (cuda_device_available(&why)) return;
  throw NoGpu("tgemm " + command + ": no CUDA GPU is usable on this machine (" + why + ").\ntgemm " + command +
              " times kernels and needs an NVIDIA GPU (sm_90 H100/H200 for the Hopper kernels). Nothing was run.");
}

}  // namespace tgemm
