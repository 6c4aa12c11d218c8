// Shared helpers of the host tests: scratch directories, whole-file reads and writes, and a log
// sink that records what the core says so tests can assert on warnings.
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"

namespace tgemm::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& contents);
std::string read_file(const std::string& path);
// Lines without their '\n'; a last line without '\n' is returned too.
std::vector<std::string> read_lines(const std::string& path);

// Installs a recording log sink for its lifetime (and forgets the once-only warnings said before,
// so each test sees its own); restores the previous sink on destruction.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> warnings() const;
  std::vector<std::string> infos() const;
  // Messages of `level` that contain every one of `parts`.
  std::vector<std::string> matching(LogLevel level, const std::vector<std::string>& parts) const;
  // Everything said, one message a line, for failure messages.
  std::string dump() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> messages_;
  LogSink previous_;
};

// True when `text` contains `part`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace tgemm::test
