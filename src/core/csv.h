// Minimal CSV: comma separated, optional double quotes ("" inside quotes is one quote),
// whitespace around unquoted fields trimmed. Blank lines and lines starting with '#' are skipped
// by the readers that use it.
#pragma once

#include <cstddef>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tgemm::csv {

// Fields of one line; nullopt for an unterminated quote.
std::optional<std::vector<std::string>> split_line(std::string_view line);
// One field, quoted only when it must be.
std::string quote(std::string_view field);
// A whole line (no newline).
std::string join(const std::vector<std::string>& fields);

std::optional<long long> parse_int(std::string_view s);
std::optional<double> parse_double(std::string_view s);
// True/False/true/false/1/0.
std::optional<bool> parse_bool(std::string_view s);

// Bounds on what a reader takes from one input. A tuned table is a few hundred lines of ~200
// bytes; the bounds only stop inputs that are not tables (/dev/zero, a binary file, a runaway
// writer) from growing memory without end, and keep line numbers within an int.
struct ReadLimits {
  std::size_t max_line_bytes = std::size_t{64} << 10;
  std::size_t max_input_bytes = std::size_t{64} << 20;
};

// Reads an input line by line within ReadLimits. A UTF-8 byte order mark at the start of the
// input is dropped (spreadsheet exports write one), and so is each line's '\n' or "\r\n".
class LineReader {
 public:
  enum class Stop { kNone, kEnd, kLineTooLong, kInputTooLarge };

  explicit LineReader(std::istream& in, ReadLimits limits = {}) : in_(in), limits_(limits) {}
  // The next line into *line; false at the end of the input or at a limit (stop() says which).
  // Once it returned false it keeps returning false.
  bool next(std::string* line);
  Stop stop() const { return stop_; }
  // Lines returned so far: the number of the last one (1-based).
  int line_no() const { return line_no_; }
  // Why reading stopped early, e.g. "line 3 is longer than 65536 bytes"; empty unless stop() is
  // kLineTooLong or kInputTooLarge.
  std::string stop_reason() const;
  const ReadLimits& limits() const { return limits_; }

 private:
  std::istream& in_;
  ReadLimits limits_;
  Stop stop_ = Stop::kNone;
  int line_no_ = 0;
  std::size_t consumed_ = 0;
};

}  // namespace tgemm::csv
