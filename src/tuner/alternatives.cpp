#include "tuner/alternatives.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/check.h"
#include "core/csv.h"
#include "core/problem.h"
#include "tgemm/tensor.h"

namespace tgemm {

namespace {

// The profile's key columns, in the order `tgemm tune` writes them.
constexpr const char* kKeyColumns[] = {"arch", "sm_count", "M", "N", "K", "bias", "dtype", "outdtype", "epilogue"};

double estimate(const ProfiledCandidate& c, double default_accurate_us) {
  if (c.final_ratio > 0) return c.final_ratio;
  if (c.confirm_ratio > 0) return 1.0 / c.confirm_ratio;
  if (c.accurate_us > 0 && default_accurate_us > 0) return c.accurate_us / default_accurate_us;
  return -1;
}

}  // namespace

std::string profile_problem_key(const TableRow& row) {
  const TableKey& k = row.key;
  std::vector<std::string> key = {k.arch,
                                  std::to_string(k.sm_count),
                                  std::to_string(row.m),
                                  std::to_string(k.n),
                                  std::to_string(k.k),
                                  k.bias ? "True" : "False",
                                  std::string(dtype_name(k.dtype)),
                                  std::string(dtype_name(k.out_dtype)),
                                  format_epilogue_key(k.epilogue)};
  if (k.a_scale != ScaleGranularity::kNone) key.emplace_back(format_scale_recipe(k.a_scale, k.b_scale));
  if (k.batch > 0) {
    key.insert(key.end(),
               {std::to_string(k.batch), k.transpose_a ? "True" : "False", k.transpose_b ? "True" : "False"});
  }
  return csv::join(key);
}

namespace {

// Where the profile's columns are.
struct ProfileColumns {
  std::vector<std::size_t> key;
  std::size_t libtype = 0, name = 0, err = 0, strict = 0, error = 0, final_ratio = 0, confirm_ratio = 0, accurate = 0;
  std::optional<std::size_t> scales;  // an a8w8 tune's profile: the scale recipe, part of the key
  std::vector<std::size_t> batch;     // a batched tune's profile: B, transpose_a, transpose_b, part of the key
  std::size_t width = 0;
};

ProfileColumns profile_columns(const std::vector<std::string>& header, const std::string& file) {
  auto column = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    TGEMM_CHECK(it != header.end(), "tgemm reconfirm", "--profile ", file, " must have a '", name,
                "' column (a profile written by `tgemm tune --profile_file`), got the header '",
                csv::join(header), "'");
    return static_cast<std::size_t>(it - header.begin());
  };
  ProfileColumns c;
  for (const char* k : kKeyColumns) c.key.push_back(column(k));
  c.libtype = column("libtype");
  c.name = column("kernelName");
  c.err = column("err_ratio");
  c.strict = column("strict_ok");
  c.error = column("error");
  c.final_ratio = column("final_ratio");
  c.confirm_ratio = column("confirm_ratio");
  c.accurate = column("accurate_us");
  if (const auto it = std::find(header.begin(), header.end(), "scales"); it != header.end()) {
    c.scales = static_cast<std::size_t>(it - header.begin());
  }
  if (std::find(header.begin(), header.end(), "B") != header.end()) {
    for (const char* k : {"B", "transpose_a", "transpose_b"}) c.batch.push_back(column(k));
  }
  c.width = header.size();
  return c;
}

// The header: the first line that is neither empty nor a comment.
std::vector<std::string> profile_header(std::istream& in, const std::string& file, int& lineno) {
  std::string line;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    auto f = csv::split_line(line);
    TGEMM_CHECK(f.has_value(), "tgemm reconfirm", "--profile ", file, ":", lineno, ": unterminated quote in the header");
    return std::move(*f);
  }
  return {};
}

// One line's candidate when it was timed accurately and passed the tune's checks; a malformed line
// adds a warning.
std::optional<ProfiledCandidate> profile_candidate(const std::vector<std::string>& f, const ProfileColumns& c,
                                                   double max_err_ratio, bool loose, const std::string& where,
                                                   std::vector<std::string>& warnings) {
  const auto e = csv::parse_double(f[c.err]);
  const auto s = csv::parse_bool(f[c.strict]);
  const auto fr = csv::parse_double(f[c.final_ratio]);
  const auto cr = csv::parse_double(f[c.confirm_ratio]);
  const auto au = csv::parse_double(f[c.accurate]);
  if (!e || !s || !fr || !cr || !au) {
    warnings.push_back(where + ": err_ratio, strict_ok, final_ratio, confirm_ratio or accurate_us is not a number");
    return std::nullopt;
  }
  if (*au <= 0 || !f[c.error].empty() || *e < 0 || *e > max_err_ratio || (!*s && !loose)) return std::nullopt;
  return ProfiledCandidate{f[c.libtype], f[c.name], *fr, *cr, *au, *e};
}

}  // namespace

std::unordered_map<std::string, std::vector<ProfiledCandidate>> read_profile_candidates(
    std::istream& in, const std::string& file, double max_err_ratio, bool loose, std::vector<std::string>& warnings) {
  std::unordered_map<std::string, std::vector<ProfiledCandidate>> out;
  int lineno = 0;
  const ProfileColumns cols = profile_columns(profile_header(in, file, lineno), file);
  std::string line;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    const auto f = csv::split_line(line);
    const std::string where = file + ":" + std::to_string(lineno);
    if (!f || f->size() != cols.width) {
      warnings.push_back(where + ": expected " + std::to_string(cols.width) + " fields, got " +
                         std::to_string(f ? f->size() : 0));
      continue;
    }
    std::optional<ProfiledCandidate> pc = profile_candidate(*f, cols, max_err_ratio, loose, where, warnings);
    if (!pc) continue;
    std::vector<std::string> key;
    for (std::size_t c : cols.key) key.push_back((*f)[c]);
    if (cols.scales && !(*f)[*cols.scales].empty() && (*f)[*cols.scales] != "none") key.push_back((*f)[*cols.scales]);
    if (!cols.batch.empty() && !(*f)[cols.batch[0]].empty()) {
      for (std::size_t c : cols.batch) key.push_back((*f)[c]);
    }
    // A later line of the same problem and candidate replaces an earlier one (a resumed tune appends).
    std::vector<ProfiledCandidate>& v = out[csv::join(key)];
    const auto same = std::find_if(v.begin(), v.end(), [&](const ProfiledCandidate& x) { return x.name == pc->name; });
    if (same != v.end()) {
      *same = std::move(*pc);
    } else {
      v.push_back(std::move(*pc));
    }
  }
  return out;
}

std::vector<ProfiledCandidate> rank_alternatives(const std::vector<ProfiledCandidate>& candidates,
                                                 const std::string& default_name,
                                                 const std::vector<std::string>& exclude, int count) {
  double default_us = -1;
  for (const auto& c : candidates) {
    if (c.name == default_name) default_us = c.accurate_us;
  }
  std::vector<std::pair<double, const ProfiledCandidate*>> ranked;
  for (const auto& c : candidates) {
    if (c.name == default_name || std::find(exclude.begin(), exclude.end(), c.name) != exclude.end()) continue;
    const double est = estimate(c, default_us);
    if (est > 0 && est < 1.0) ranked.emplace_back(est, &c);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->name < b.second->name;
  });
  std::vector<ProfiledCandidate> out;
  for (const auto& r : ranked) {
    if (static_cast<int>(out.size()) >= count) break;
    out.push_back(*r.second);
  }
  return out;
}

}  // namespace tgemm
