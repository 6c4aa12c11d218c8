#include "core/csv.h"

#include <cerrno>
#include <cstdlib>

namespace tgemm::csv {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::vector<std::string>> split_line(std::string_view line) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  while (true) {
    std::string field;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field.push_back('"');
            i += 2;
          } else {
            ++i;
            closed = true;
            break;
          }
        } else {
          field.push_back(line[i++]);
        }
      }
      if (!closed) return std::nullopt;
      while (i < line.size() && line[i] != ',') ++i;  // ignore junk after the closing quote
    } else {
      std::size_t start = i;
      while (i < line.size() && line[i] != ',') ++i;
      field = std::string(trim(line.substr(start, i - start)));
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return fields;
}

std::string quote(std::string_view field) {
  // Unquoted fields are trimmed on reading, so surrounding whitespace needs quotes too.
  bool edge_space = !field.empty() && (field.front() == ' ' || field.front() == '\t' || field.back() == ' ' ||
                                       field.back() == '\t' || field.back() == '\r');
  if (!edge_space && field.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += "\"\"";
    else out.push_back(c);
  }
  out += "\"";
  return out;
}

std::string join(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out.push_back(',');
    out += quote(fields[i]);
  }
  return out;
}

std::optional<long long> parse_int(std::string_view s) {
  s = trim(s);
  // Digits with an optional sign, optionally followed by ".0..." as pandas writes integer columns.
  std::size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  std::size_t digits_end = i;
  while (digits_end < s.size() && s[digits_end] >= '0' && s[digits_end] <= '9') ++digits_end;
  if (digits_end == i) return std::nullopt;
  if (digits_end < s.size()) {
    if (s[digits_end] != '.') return std::nullopt;
    for (std::size_t j = digits_end + 1; j < s.size(); ++j) {
      if (s[j] != '0') return std::nullopt;
    }
  }
  std::string tmp(s.substr(0, digits_end));
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(tmp.c_str(), &end, 10);
  if (errno == ERANGE || end != tmp.c_str() + tmp.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::string tmp(s);
  char* end = nullptr;
  double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size()) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(std::string_view s) {
  s = trim(s);
  if (s == "True" || s == "true" || s == "1" || s == "TRUE") return true;
  if (s == "False" || s == "false" || s == "0" || s == "FALSE") return false;
  return std::nullopt;
}

bool LineReader::next(std::string* line) {
  line->clear();
  if (stop_ != Stop::kNone) return false;
  std::streambuf* buf = in_.rdbuf();
  if (buf == nullptr) {
    stop_ = Stop::kEnd;
    return false;
  }
  bool any = false;
  while (true) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in_.setstate(std::ios::eofbit);
      if (!any) {
        stop_ = Stop::kEnd;
        return false;
      }
      break;
    }
    any = true;
    if (++consumed_ > limits_.max_input_bytes) {
      stop_ = Stop::kInputTooLarge;
      line->clear();
      return false;
    }
    if (c == '\n') break;
    if (line->size() >= limits_.max_line_bytes) {
      stop_ = Stop::kLineTooLong;
      line->clear();
      return false;
    }
    line->push_back(static_cast<char>(c));
  }
  if (line_no_ == 0 && line->compare(0, 3, "\xEF\xBB\xBF") == 0) line->erase(0, 3);
  if (!line->empty() && line->back() == '\r') line->pop_back();
  ++line_no_;
  return true;
}

std::string LineReader::stop_reason() const {
  switch (stop_) {
    case Stop::kLineTooLong:
      return "line " + std::to_string(line_no_ + 1) + " is longer than " + std::to_string(limits_.max_line_bytes) +
             " bytes";
    case Stop::kInputTooLarge:
      return "the input is larger than " + std::to_string(limits_.max_input_bytes) + " bytes (at line " +
             std::to_string(line_no_ + 1) + ")";
    case Stop::kNone:
    case Stop::kEnd: break;
  }
  return "";
}

}  // namespace tgemm::csv
