// Warnings and the TGEMM_LOG_TUNED_CONFIG log. One sink for the process (stderr by default);
// tests install their own to assert on what was said.
#pragma once

#include <functional>
#include <string>

namespace tgemm {

enum class LogLevel { kInfo, kWarning };

using LogSink = std::function<void(LogLevel, const std::string&)>;

// Replaces the sink; returns the previous one. An empty sink restores the default (stderr).
LogSink set_log_sink(LogSink sink);

void log_info(const std::string& message);
void log_warning(const std::string& message);
// Says `message` once per process for each distinct `key`; returns whether it was said now.
bool log_warning_once(const std::string& key, const std::string& message);
// Forgets which once-only warnings were said (reload_config, tests).
void reset_warned_once();

}  // namespace tgemm
