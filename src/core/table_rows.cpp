#include "core/table_rows.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tgemm {
namespace {

// The columns of a header line, or why the header is unusable (empty when usable).
std::string read_header(const std::vector<std::string>& fields, const std::vector<const char*>& required,
                        TableColumns* cols) {
  cols->width = fields.size();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    // An empty name cannot be asked for, so repeats of it are harmless (a trailing comma).
    if (fields[i].empty()) continue;
    if (!cols->index.emplace(fields[i], i).second) {
      return "header names column '" + fields[i] + "' twice (fields " + std::to_string(cols->index.at(fields[i]) + 1) +
             " and " + std::to_string(i + 1) + "), file skipped";
    }
  }
  for (const char* name : required) {
    if (!cols->has(name)) return std::string("header has no '") + name + "' column, file skipped";
  }
  return {};
}

}  // namespace

TableScan read_table_rows(
    std::istream& in, const std::string& file, const csv::ReadLimits& limits, const std::vector<const char*>& required,
    const std::function<std::string(const TableColumns&, const std::vector<std::string>&, int)>& row) {
  TableScan out;
  csv::LineReader reader(in, limits);
  std::string line;
  TableColumns cols;
  auto warn = [&](const std::string& why) {
    out.warnings.push_back(file + ":" + std::to_string(reader.line_no()) + ": " + why);
  };
  while (reader.next(&line)) {
    std::string_view view(line);
    if (view.find_first_not_of(" \t") == std::string_view::npos || view.front() == '#') continue;
    auto fields = csv::split_line(view);
    if (!out.have_header) {
      if (!fields) {
        warn("malformed header (unterminated quote), file skipped");
        return out;
      }
      const std::string error = read_header(*fields, required, &cols);
      if (!error.empty()) {
        warn(error);
        return out;
      }
      out.have_header = true;
      continue;
    }
    ++out.data_lines;
    if (!fields) {
      warn("malformed line (unterminated quote), row skipped");
      continue;
    }
    if (fields->size() != cols.width) {
      warn("malformed line: " + std::to_string(fields->size()) + " fields where the header has " +
           std::to_string(cols.width) + ", row skipped");
      continue;
    }
    const std::string bad = row(cols, *fields, reader.line_no());
    if (!bad.empty()) warn(bad + ", row skipped");
  }
  if (reader.stop() != csv::LineReader::Stop::kEnd) {
    out.warnings.push_back(file + ": " + reader.stop_reason() + ", the rest of the file is not read");
  } else {
    out.read_to_end = true;
    if (!out.have_header && reader.line_no() > 0) out.warnings.push_back(file + ": no header line, file skipped");
  }
  return out;
}

const std::string* RowFields::field(const std::string& name) const {
  auto it = cols_.index.find(name);
  return it == cols_.index.end() ? nullptr : &fields_[it->second];
}

long long RowFields::get_bucket(const char* name, const char* bucket_of) {
  const long long b = get_int(name, -1, 1, kMaxTableDim);
  if (bad().empty() && (b & (b - 1)) != 0) {
    fail(std::string(name) + " must be a power of two (a bucket of " + bucket_of + "), got " + std::to_string(b));
  }
  return b;
}

long long RowFields::get_race_size(const char* name, const std::function<long long(long long)>& bucket_of,
                                   long long bucket, const char* bucket_name, const std::string& context) {
  const std::string* f = field(name);
  const long long size = f != nullptr && !f->empty() ? get_int(name, 0, 1, kMaxTableDim) : 0;
  if (bad().empty() && size > 0 && bucket_of(size) != bucket) {
    fail(std::string(name) + "=" + std::to_string(size) + context + " is in bucket " + std::to_string(bucket_of(size)) +
         ", not " + bucket_name + " " + std::to_string(bucket));
  }
  return size;
}

void RowFields::fail(std::string why) {
  if (bad_.empty()) bad_ = std::move(why);
}

long long RowFields::get_int(const char* name, long long dflt, long long min_value, long long max_value) {
  const std::string* f = field(name);
  if (!f || f->empty()) {
    if (dflt < min_value) fail(std::string("missing ") + name);
    return dflt;
  }
  auto v = csv::parse_int(*f);
  if (!v) {
    fail(std::string("bad ") + name + " '" + *f + "'");
  } else if (*v < min_value) {
    fail(std::string(name) + " must be >= " + std::to_string(min_value) + ", got " + *f);
  } else if (*v > max_value) {
    fail(std::string(name) + " must be <= " + std::to_string(max_value) + ", got " + *f);
  } else {
    return *v;
  }
  return dflt;
}

bool RowFields::get_bool(const char* name) {
  const std::string* f = field(name);
  if (!f || f->empty()) return false;
  auto v = csv::parse_bool(*f);
  if (!v) fail(std::string("bad ") + name + " '" + *f + "' (expected True or False)");
  return v.value_or(false);
}

double RowFields::get_measure(const char* name) {
  const std::string* f = field(name);
  if (!f || f->empty()) return 0;
  auto v = csv::parse_double(*f);
  if (!v) {
    fail(std::string("bad ") + name + " '" + *f + "'");
    return 0;
  }
  if (!std::isfinite(*v) || *v < 0) {
    fail(std::string(name) + " must be a finite number >= 0, got '" + *f + "'");
    return 0;
  }
  return *v;
}

DType RowFields::get_dtype(const char* name, std::optional<DType> dflt) {
  const std::string* f = field(name);
  if ((!f || f->empty()) && dflt) return *dflt;
  auto dt = f ? dtype_from_name(*f) : std::nullopt;
  if (!dt) fail(std::string("unknown ") + name + " '" + (f ? *f : std::string()) + "'");
  return dt.value_or(dflt.value_or(DType::kBFloat16));
}

std::string format_measure(double v) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof(buf), "%.6g", v);
  return std::string(buf, static_cast<std::size_t>(n > 0 ? n : 0));
}

bool open_table_file(const std::string& path, std::ifstream* in, std::vector<std::string>& warnings) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    warnings.push_back(path + ": is a directory, not a table file; no rows loaded from it");
    return false;
  }
  errno = 0;
  in->open(path);
  if (!*in) {
    const int err = errno;
    warnings.push_back(path + ": cannot be opened" + (err != 0 ? std::string(" (") + std::strerror(err) + ")" : "") +
                       ", no rows loaded from it");
    return false;
  }
  return true;
}

const std::vector<std::string>& race_columns() {
  static const std::vector<std::string> kColumns = {"us", "us_skewed", "speedup", "speedup_skewed", "default"};
  return kColumns;
}

std::vector<std::string> with_race_columns(std::vector<std::string> key_columns) {
  key_columns.insert(key_columns.end(), race_columns().begin(), race_columns().end());
  return key_columns;
}

}  // namespace tgemm
