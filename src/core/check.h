// TGEMM_CHECK(cond, op, parts...): throws tgemm::Error("op: parts...") when cond is false.
// The parts are appended as text, so values go straight into the message:
//   TGEMM_CHECK(w.size(1) == k, "gemm_a16w16", "w.size(1) must equal x.size(-1) (K), got ",
//               w.size(1), " vs ", k);
//
// Messages are built with std::to_chars / snprintf, not iostreams: the library also runs inside
// other programs' processes (the PyTorch extension), where iostream number formatting depends on
// locale state that a host linking another libstdc++ copy may not share. Formatting without
// locales cannot be broken that way, and is cheaper.
#pragma once

#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

#include "tgemm/error.h"

namespace tgemm::detail {

inline void append(std::string& s, std::string_view v) { s.append(v.data(), v.size()); }
inline void append(std::string& s, const std::string& v) { s.append(v); }
inline void append(std::string& s, const char* v) { s.append(v != nullptr ? v : "(null)"); }
inline void append(std::string& s, char c) { s.push_back(c); }
inline void append(std::string& s, bool b) { s.append(b ? "true" : "false"); }
inline void append(std::string& s, double v) {
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "%g", v);
  s.append(buf, static_cast<std::size_t>(n > 0 ? n : 0));
}
inline void append(std::string& s, const void* p) {
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "%p", p);
  s.append(buf, static_cast<std::size_t>(n > 0 ? n : 0));
}
inline void append(std::string& s, void* p) { append(s, static_cast<const void*>(p)); }
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                           !std::is_same_v<T, char>, int> = 0>
void append(std::string& s, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  s.append(buf, r.ptr);
}
template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
void append(std::string& s, T v) {
  append(s, static_cast<double>(v));
}
// String literals and char arrays.
template <std::size_t N>
void append(std::string& s, const char (&v)[N]) {
  s.append(v);
}

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::string s;
  (append(s, parts), ...);
  return s;
}

template <typename... Parts>
[[noreturn]] void throw_error(std::string_view op, const Parts&... parts) {
  throw Error(concat(op, ": ", parts...));
}

}  // namespace tgemm::detail

#define TGEMM_CHECK(cond, op, ...)                       \
  do {                                                   \
    if (!(cond)) {                                       \
      ::tgemm::detail::throw_error((op), __VA_ARGS__);   \
    }                                                    \
  } while (0)
