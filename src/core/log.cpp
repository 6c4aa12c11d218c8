#include "core/log.h"

#include <cstdio>
#include <mutex>
#include <unordered_set>

namespace tgemm {
namespace {

struct LogState {
  std::mutex mutex;
  LogSink sink;
  std::unordered_set<std::string> warned;
};

LogState& state() {
  static LogState s;
  return s;
}

void emit(LogLevel level, const std::string& message) {
  LogSink sink;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    sink = state().sink;
  }
  if (sink) {
    sink(level, message);
    return;
  }
  std::fprintf(stderr, "[tgemm] %s%s\n", level == LogLevel::kWarning ? "warning: " : "",
               message.c_str());
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
  std::lock_guard<std::mutex> lock(state().mutex);
  LogSink old = std::move(state().sink);
  state().sink = std::move(sink);
  return old;
}

void log_info(const std::string& message) { emit(LogLevel::kInfo, message); }
void log_warning(const std::string& message) { emit(LogLevel::kWarning, message); }

bool log_warning_once(const std::string& key, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (!state().warned.insert(key).second) return false;
  }
  log_warning(message);
  return true;
}

void reset_warned_once() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().warned.clear();
}

}  // namespace tgemm
