#include "tests/common/host_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tgemm::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/tgemm_host_test.XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed for " + templ);
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << contents;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

LogCapture::LogCapture() {
  reset_warned_once();
  previous_ = set_log_sink([this](LogLevel level, const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.emplace_back(level, message);
  });
}

LogCapture::~LogCapture() {
  set_log_sink(std::move(previous_));
  reset_warned_once();
}

std::vector<std::string> LogCapture::warnings() const { return matching(LogLevel::kWarning, {}); }
std::vector<std::string> LogCapture::infos() const { return matching(LogLevel::kInfo, {}); }

std::vector<std::string> LogCapture::matching(LogLevel level,
                                              const std::vector<std::string>& parts) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [l, m] : messages_) {
    if (l != level) continue;
    bool all = true;
    for (const auto& part : parts) all = all && contains(m, part);
    if (all) out.push_back(m);
  }
  return out;
}

std::string LogCapture::dump() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& [l, m] : messages_) {
    out += (l == LogLevel::kWarning ? "warning: " : "info: ") + m + "\n";
  }
  return out;
}

}  // namespace tgemm::test
