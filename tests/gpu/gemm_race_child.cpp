// One process of Concurrency.CaptureFromProcessesUnderLoad (test_concurrency.cpp): builds its
// cases (capture_cases), tells the parent it is ready, waits until the parent lets every process
// go at once, then races its cases from several threads (gemm_race.h) with the environment the
// parent gave it (TGEMM_TUNE_GEMM=1 into a shared untuned file). Exit 0 when every result matched
// its reference, 1 on any mismatch or CUDA error (printed), 2 on bad arguments or setup failure.
//
//   gemm_race_child SET NSETS THREADS ROUNDS READY_FD GO_FD
// READY_FD: one byte is written there when the buffers are built; GO_FD: read until end of file
// before the first round.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <string>

#include "tests/gpu/gemm_race.h"
#include "tgemm/error.h"

namespace {

void signal_ready_and_wait(int ready_fd, int go_fd) {
  const char byte = 'r';
  ssize_t n;
  do {
    n = ::write(ready_fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) throw tgemm::Error("gemm_race_child: write to the ready pipe failed");
  ::close(ready_fd);
  char buf;
  while (true) {
    n = ::read(go_fd, &buf, 1);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    break;
  }
  ::close(go_fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s SET NSETS THREADS ROUNDS READY_FD GO_FD\n", argv[0]);
    return 2;
  }
  int set = 0;
  try {
    set = std::stoi(argv[1]);
    const int nsets = std::stoi(argv[2]);
    tgemm::test::RaceOptions options;
    options.threads = std::stoi(argv[3]);
    options.rounds = std::stoi(argv[4]);
    // Every round after the first forgets the cached decisions and the capture's memory of what it
    // recorded, so each round's first calls resolve, and record through the file lock, again.
    options.reload_every = 1;
    const int ready_fd = std::stoi(argv[5]);
    const int go_fd = std::stoi(argv[6]);
    options.before_first_round = [&] { signal_ready_and_wait(ready_fd, go_fd); };
    tgemm::test::RaceReport report = tgemm::test::race(tgemm::test::capture_cases(set, nsets), options);
    for (const std::string& f : report.failures) std::fprintf(stderr, "gemm_race_child %d: %s\n", set, f.c_str());
    std::fprintf(stderr, "gemm_race_child %d: %lld calls, %zu failures\n", set, static_cast<long long>(report.calls),
                 report.failures.size());
    return report.failures.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_race_child %d: %s\n", set, e.what());
    return 2;
  }
}
