// Minimal CSV: comma separated, optional double quotes ("" inside quotes is one quote),
// whitespace around unquoted fields trimmed. Blank lines and lines starting with '#' are skipped
// by the readers that use it.
#pragma once

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

}  // namespace tgemm::csv
