#include "tools/cli/common.h"

#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fstream>
#include <optional>
#include <tuple>

#include "core/check.h"
#include "core/csv.h"
#include "core/table.h"
#include "runtime/device_utils.h"

namespace tgemm::cli {

void require_gpu(const std::string& command) {
  std::string why;
  if (!cuda_device_available(&why)) {
    std::fprintf(stderr,
                 "tgemm %s: no CUDA GPU is usable on this machine (%s).\n"
                 "tgemm %s times kernels and needs an NVIDIA GPU (sm_90 H100/H200 for the Hopper "
                 "kernels). Nothing was run.\n",
                 command.c_str(), why.c_str(), command.c_str());
    std::exit(2);
  }
}

DType parse_dtype(const std::string& name, const std::string& option) {
  auto d = dtype_from_name(name);
  TGEMM_CHECK(d.has_value(), "tgemm", option, " must be a dtype name (bf16, fp16, fp32, "
              "torch.bfloat16, ...), got '", name, "'");
  return *d;
}

std::vector<std::int64_t> parse_int_list(const std::string& list, const std::string& option) {
  std::vector<std::int64_t> out;
  auto fields = csv::split_line(list);
  TGEMM_CHECK(fields.has_value(), "tgemm", option, ": bad list '", list, "'");
  for (const auto& f : *fields) {
    if (f.empty()) continue;
    auto v = csv::parse_int(f);
    TGEMM_CHECK(v.has_value() && *v >= 0, "tgemm", option, " must be a comma-separated list of "
                "non-negative integers, got '", f, "'");
    out.push_back(*v);
  }
  return out;
}

void check_dim(const std::string& op, const std::string& option, std::int64_t value, std::int64_t lo) {
  constexpr std::int64_t kMaxDim = 2147483647;
  TGEMM_CHECK(value >= lo && value <= kMaxDim, op, option, " must be in [", lo, ", ", kMaxDim, "], got ", value);
}

namespace {

// Columns of a shape suite's header (-1: absent).
struct SuiteColumns {
  int model = -1, layer = -1, n = -1, k = -1;
};

SuiteColumns suite_columns(const std::vector<std::string>& header, const std::string& path) {
  SuiteColumns c;
  for (int i = 0; i < static_cast<int>(header.size()); ++i) {
    const std::string& h = header[static_cast<std::size_t>(i)];
    if (h == "model") c.model = i;
    if (h == "layer") c.layer = i;
    if (h == "N") c.n = i;
    if (h == "K") c.k = i;
  }
  TGEMM_CHECK(c.n >= 0 && c.k >= 0, "tgemm", path, ": header needs N and K columns");
  return c;
}

SuiteShape suite_shape(const std::vector<std::string>& f, const SuiteColumns& c, const std::string& path, int line_no) {
  auto get = [&](int col) {
    return col >= 0 && col < static_cast<int>(f.size()) ? f[static_cast<std::size_t>(col)] : std::string();
  };
  SuiteShape s;
  s.model = get(c.model);
  s.layer = get(c.layer);
  auto n = csv::parse_int(get(c.n));
  auto k = csv::parse_int(get(c.k));
  TGEMM_CHECK(n && k && *n > 0 && *k > 0, "tgemm", path, ":", line_no, ": bad N or K");
  s.n = *n;
  s.k = *k;
  return s;
}

}  // namespace

std::vector<SuiteShape> read_suite(const std::string& path) {
  std::ifstream in(path);
  TGEMM_CHECK(static_cast<bool>(in), "tgemm", "cannot open shape suite '", path, "'");
  std::vector<SuiteShape> out;
  std::string line;
  int line_no = 0;
  std::optional<SuiteColumns> cols;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto f = csv::split_line(line);
    TGEMM_CHECK(f.has_value(), "tgemm", path, ":", line_no, ": malformed line");
    if (!cols) {
      cols = suite_columns(*f, path);
      continue;
    }
    out.push_back(suite_shape(*f, *cols, path, line_no));
  }
  return out;
}

void write_text_file(const std::string& path, const std::string& text, const std::string& op,
                     const std::string& option) {
  TGEMM_CHECK(!path.empty(), op, option, " needs a file name");
  // Stream state is checked after the explicit flush and close: a buffered stream reports a
  // failed write (ENOSPC, EIO) only then.
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  TGEMM_CHECK(static_cast<bool>(out), op, "cannot write ", option, " '", path, "': ", std::strerror(errno));
  out << text;
  out.flush();
  const bool written = static_cast<bool>(out);
  const int write_errno = errno;
  out.close();
  TGEMM_CHECK(written && static_cast<bool>(out), op, "writing ", option, " '", path,
              "' failed: ", std::strerror(written ? errno : write_errno));
}

static std::tm now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return tm;
}

std::string iso_date() {
  char buf[32];
  std::tm tm = now_utc();
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string current_commit() {
  if (const char* c = std::getenv("TGEMM_COMMIT"); c != nullptr && *c != '\0') return c;
  if (FILE* p = ::popen("git rev-parse HEAD 2>/dev/null", "r")) {
    char buf[64] = {};
    std::string out;
    if (std::fgets(buf, sizeof(buf), p) != nullptr) out = buf;
    ::pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    if (out.size() == 40) return out;
  }
  return "unknown";
}

}  // namespace tgemm::cli
