#include "core/capture.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/csv.h"
#include "core/log.h"
#include "core/table.h"

namespace tgemm {
namespace {

class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

bool write_all(int fd, const std::string& data) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string format_untuned_row(const GemmProblem& p) {
  std::vector<std::string> fields = {std::to_string(p.m),
                                     std::to_string(p.n),
                                     std::to_string(p.k),
                                     p.has_bias() ? "True" : "False",
                                     std::string(dtype_name(p.a_type)),
                                     std::string(dtype_name(p.out_type)),
                                     p.scale_ab ? "True" : "False",
                                     p.bpreshuffle ? "True" : "False",
                                     format_epilogue_key(p.epilogue_key())};
  for (std::string& f : family_key_fields(table_key(p, "", 0))) fields.push_back(std::move(f));
  return csv::join(fields);
}

std::vector<std::string> Capture::untuned_table_columns_of(OpFamily family) { return untuned_table_columns(family); }

void Capture::record_row(const std::string& row) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (recorded_.count(row)) return;

  auto fail = [&](const char* what) {
    log_warning_once("capture:" + path_, "TGEMM_TUNE_GEMM: cannot " + std::string(what) + " '" +
                                             path_ + "' (" + std::strerror(errno) +
                                             "); untuned shapes are not being recorded");
  };
  FileLock lock(path_ + ".lock");
  if (!lock.ok()) {
    fail("lock");
    return;
  }
  // Re-read under the lock: another process may have recorded the row meanwhile.
  bool ends_with_newline = true;
  bool empty = true;
  {
    std::ifstream in(path_);
    csv::LineReader reader(in);
    std::string line;
    while (reader.next(&line)) {
      empty = false;
      recorded_.insert(line);
    }
    if (reader.stop() != csv::LineReader::Stop::kEnd) {
      // Not a capture file (a device, a binary file): appending to it would not make one.
      log_warning_once("capture:" + path_, "TGEMM_TUNE_GEMM: '" + path_ + "': " + reader.stop_reason() +
                                               "; untuned shapes are not being recorded");
      return;
    }
    if (!empty) {
      std::ifstream tail(path_, std::ios::binary | std::ios::ate);
      if (tail && tail.tellg() > 0) {
        tail.seekg(-1, std::ios::end);
        ends_with_newline = tail.get() == '\n';
      }
    }
  }
  if (recorded_.count(row)) return;

  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    fail("open");
    return;
  }
  std::string data;
  if (!ends_with_newline) data += "\n";
  if (empty) data += csv::join(columns_) + "\n";
  data += row + "\n";
  bool ok = write_all(fd, data) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    fail("write");
    return;
  }
  recorded_.insert(row);
}

}  // namespace tgemm
