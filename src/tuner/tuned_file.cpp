#include "tuner/tuned_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "core/check.h"
#include "core/csv.h"

namespace tgemm {

namespace {

constexpr const char* kOp = "tgemm";
// A tuned table read back for a merge is held in memory whole; the shipped tables are ~100 KiB.
constexpr std::streamoff kMaxTableBytes = 64LL << 20;

std::string errno_text() { return std::strerror(errno); }

// Exclusive flock on "<path>.lock" for the object's lifetime.
class TableLock {
 public:
  explicit TableLock(const std::string& table) : path_(table + ".lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    TGEMM_CHECK(fd_ >= 0, kOp, "cannot open the lock file '", path_, "': ", errno_text());
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const std::string why = errno_text();
      ::close(fd_);
      TGEMM_CHECK(false, kOp, "cannot lock '", path_, "': ", why);
    }
  }
  TableLock(const TableLock&) = delete;
  TableLock& operator=(const TableLock&) = delete;
  ~TableLock() { ::close(fd_); }  // closing the last descriptor releases the flock

 private:
  std::string path_;
  int fd_ = -1;
};

// A table can only replace a regular file or nothing: renaming over a directory fails after the
// temporary file is written, and over a device (/dev/full) would replace the device node.
void require_regular_target(const std::string& path) {
  TGEMM_CHECK(!path.empty(), kOp, "the tuned table's path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  TGEMM_CHECK(S_ISREG(st.st_mode), kOp, "cannot write the tuned table '", path,
              "': it exists and is not a regular file (a directory or a device)");
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// text to a temporary file beside path (same file system, so the rename is atomic), fsynced,
// then renamed over path; the temporary file is removed on every failure.
void replace_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  TGEMM_CHECK(fd >= 0, kOp, "cannot create '", tmp, "' to write '", path, "': ", errno_text());
  std::string failure;
  if (!write_all(fd, text)) {
    failure = "write to '" + tmp + "' failed: " + errno_text();
  } else if (::fsync(fd) != 0) {
    failure = "fsync of '" + tmp + "' failed: " + errno_text();
  }
  if (::close(fd) != 0 && failure.empty()) failure = "close of '" + tmp + "' failed: " + errno_text();
  if (failure.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    failure = "rename of '" + tmp + "' to '" + path + "' failed: " + errno_text();
  }
  if (!failure.empty()) {
    ::unlink(tmp.c_str());
    TGEMM_CHECK(false, kOp, failure);
  }
}

std::string table_text(const std::vector<std::string>& verbatim, const std::vector<TableRow>& rows) {
  std::vector<const TableRow*> sorted;
  for (const auto& r : rows) sorted.push_back(&r);
  auto order = [](const TableRow* r) {
    return std::make_tuple(r->key.arch, r->key.sm_count, static_cast<int>(r->key.dtype),
                           static_cast<int>(r->key.out_dtype), r->key.bias, r->key.batch, r->key.transpose_a,
                           r->key.transpose_b, r->key.n, r->key.k, static_cast<int>(r->key.a_scale),
                           static_cast<int>(r->key.b_scale), r->m);
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const TableRow* a, const TableRow* b) { return order(a) < order(b); });
  // One family a table: a8w8 rows need the `scales` column (a file of them is an a8w8 table),
  // batched rows B,transpose_a,transpose_b.
  OpFamily family = OpFamily::kA16W16;
  for (const TableRow& r : rows) {
    if (r.key.family() != OpFamily::kA16W16) family = r.key.family();
  }
  std::string text = csv::join(tuned_table_columns(family)) + "\n";
  for (const std::string& l : verbatim) text += l + "\n";
  for (const TableRow* r : sorted) text += format_tuned_row(*r) + "\n";
  return text;
}

// The table as it is on disk: its rows, and the lines the parser did not turn into rows.
struct ExistingTable {
  std::vector<TableRow> rows;
  std::vector<std::string> verbatim;  // in file order, without the header
};

bool is_content(const std::string& line) {
  const auto first = line.find_first_not_of(" \t");
  return first != std::string::npos && line[first] != '#';
}

void require_tuned_header(const std::string& header, const std::string& path, int line_no) {
  const auto fields = csv::split_line(header);
  for (const char* c : {"arch", "sm_count", "M", "N", "K", "dtype", "libtype", "kernelName"}) {
    TGEMM_CHECK(fields && std::find(fields->begin(), fields->end(), c) != fields->end(), kOp, path, ":", line_no,
                ": the header has no '", c,
                "' column, so this is not a tuned table; refusing to overwrite it "
                "(move it away or name another file)");
  }
}

ExistingTable read_existing(const std::string& path) {
  ExistingTable t;
  std::ifstream in(path, std::ios::binary);
  if (!in) return t;  // no table yet
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string content = buf.str();
  TGEMM_CHECK(static_cast<std::streamoff>(content.size()) <= kMaxTableBytes, kOp, "'", path, "' is ", content.size(),
              " bytes, over the ", kMaxTableBytes, "-byte limit of a tuned table");
  std::istringstream parse_in(content);
  t.rows = parse_tuned_table(parse_in, path).rows;
  std::set<int> row_lines;
  for (const TableRow& r : t.rows) row_lines.insert(r.line);
  std::istringstream lines(content);
  std::string line;
  bool have_header = false;
  for (int line_no = 1; std::getline(lines, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (!have_header && is_content(line)) {
      require_tuned_header(line, path, line_no);
      have_header = true;
      continue;
    }
    if (row_lines.count(line_no) == 0) t.verbatim.push_back(line);
  }
  return t;
}

// An exact row at M inside a range row of its key: the range keeps the side of M that holds its
// own row's M, so the file never holds two rows that serve one M (the loader would skip one).
void narrow_ranges_around(std::vector<TableRow>& rows, const TableRow& exact) {
  for (TableRow& x : rows) {
    if (!(x.key == exact.key) || (x.m_lo == 0 && x.m_hi == 0) || !x.serves(exact.m)) continue;
    if (exact.m < x.m) {
      x.m_lo = exact.m + 1;
    } else {
      x.m_hi = exact.m - 1;
    }
  }
}

}  // namespace

void write_tuned_table(const std::string& path, const std::vector<TableRow>& rows) {
  require_regular_target(path);
  TableLock lock(path);
  replace_atomically(path, table_text({}, rows));
}

std::vector<TableRow> update_tuned_table(const std::string& path, const std::vector<TableRow>& rows) {
  require_regular_target(path);
  TableLock lock(path);
  ExistingTable t = read_existing(path);
  for (const TableRow& r : rows) {
    t.rows.erase(
        std::remove_if(t.rows.begin(), t.rows.end(), [&](const TableRow& x) { return x.key == r.key && x.m == r.m; }),
        t.rows.end());
    if (r.m_lo == 0 && r.m_hi == 0) narrow_ranges_around(t.rows, r);
    t.rows.push_back(r);
  }
  replace_atomically(path, table_text(t.verbatim, t.rows));
  return t.rows;
}

std::vector<TableRow> replace_range_rows(
    const std::string& path, const TableKey& key,
    const std::function<std::vector<TableRow>(const std::set<std::int64_t>& exact_ms)>& make_rows) {
  require_regular_target(path);
  TableLock lock(path);
  ExistingTable t = read_existing(path);
  std::set<std::int64_t> exact_ms;
  for (const TableRow& r : t.rows) {
    if (r.key == key && r.m_lo == 0 && r.m_hi == 0) exact_ms.insert(r.m);
  }
  t.rows.erase(std::remove_if(t.rows.begin(), t.rows.end(),
                              [&](const TableRow& x) { return x.key == key && (x.m_lo != 0 || x.m_hi != 0); }),
               t.rows.end());
  for (TableRow& r : make_rows(exact_ms)) {
    TGEMM_CHECK(r.key == key && exact_ms.count(r.m) == 0, kOp, "a range row for ", r.key.describe(), " at M = ", r.m,
                " would replace an exact row or belongs to another key");
    t.rows.push_back(std::move(r));
  }
  replace_atomically(path, table_text(t.verbatim, t.rows));
  return t.rows;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  require_regular_target(path);
  TableLock lock(path);
  replace_atomically(path, text);
}

void append_locked(const std::string& path, const std::string& header, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  TGEMM_CHECK(fd >= 0, kOp, "cannot open '", path, "' to append: ", errno_text());
  std::string failure;
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    failure = "cannot lock '" + path + "': " + errno_text();
    break;
  }
  struct stat st {};
  if (failure.empty() && ::fstat(fd, &st) != 0) failure = "cannot stat '" + path + "': " + errno_text();
  // The size is read under the lock: of two processes creating the file, one writes the header.
  if (failure.empty() && st.st_size == 0 && !write_all(fd, header)) {
    failure = "write to '" + path + "' failed: " + errno_text();
  }
  if (failure.empty() && !write_all(fd, text)) failure = "write to '" + path + "' failed: " + errno_text();
  if (::close(fd) != 0 && failure.empty()) failure = "close of '" + path + "' failed: " + errno_text();
  TGEMM_CHECK(failure.empty(), kOp, failure);
}

}  // namespace tgemm
