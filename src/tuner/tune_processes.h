// Internal to the tune command: the child processes of `tgemm tune` (its workers, one per GPU,
// and the reconfirmation), each started from this executable and seeing exactly one GPU.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tuner/command.h"

namespace tgemm {

struct Worker {
  int device = 0;
  pid_t pid = -1;
  int in_fd = -1;   // the parent writes problems
  int out_fd = -1;  // the parent reads messages
  std::string buffer;
  bool ready = false;
  std::int64_t busy_id = -1;
  std::chrono::steady_clock::time_point problem_start, last_progress;
  std::string current_candidate, current_phase;
  std::string arch;
  int sm_count = 0;
};

// Starts `tgemm tune --worker` (worker_arguments) on w.device with pipes to and from it.
void spawn_worker(Worker& w, const TuneOptions& o);
// SIGKILL, reaped, pipes closed.
void kill_worker(Worker& w);
// All of s to fd, retrying short writes; false on an error.
bool write_all(int fd, const std::string& s);
// `tgemm <args>` in a child process on GPU `device`, waited for; its exit status (128 + signal if
// it was killed).
int spawn_reconfirm(std::vector<std::string> args, int device);
// As spawn_reconfirm for several children at once, child i on GPU devices[i] with args[i], all
// started before any is waited for; their exit statuses in order.
std::vector<int> spawn_reconfirms(const std::vector<std::vector<std::string>>& args, const std::vector<int>& devices);

}  // namespace tgemm
