// TGEMM_CHECK(cond, op, parts...): throws tgemm::Error("op: parts...") when cond is false.
// The parts are streamed, so values go straight into the message:
//   TGEMM_CHECK(w.size(1) == k, "gemm_a16w16", "w.size(1) must equal x.size(-1) (K), got ",
//               w.size(1), " vs ", k);
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include "tgemm/error.h"

namespace tgemm::detail {

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
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
