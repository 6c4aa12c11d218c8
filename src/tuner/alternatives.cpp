#include "tuner/alternatives.h"

#include <algorithm>
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
  return csv::join({k.arch, std::to_string(k.sm_count), std::to_string(row.m), std::to_string(k.n),
                    std::to_string(k.k), k.bias ? "True" : "False", std::string(dtype_name(k.dtype)),
                    std::string(dtype_name(k.out_dtype)), format_epilogue_key(k.epilogue)});
}

std::unordered_map<std::string, std::vector<ProfiledCandidate>> read_profile_candidates(
    std::istream& in, const std::string& file, double max_err_ratio, bool loose, std::vector<std::string>& warnings) {
  std::unordered_map<std::string, std::vector<ProfiledCandidate>> out;
  std::string line;
  int lineno = 0;
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    auto f = csv::split_line(line);
    TGEMM_CHECK(f.has_value(), "tgemm reconfirm", "--profile ", file, ":", lineno, ": unterminated quote in the header");
    header = std::move(*f);
  }
  auto column = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    TGEMM_CHECK(it != header.end(), "tgemm reconfirm", "--profile ", file, " must have a '", name,
                "' column (a profile written by `tgemm tune --profile_file`), got the header '",
                csv::join(header), "'");
    return static_cast<std::size_t>(it - header.begin());
  };
  std::vector<std::size_t> key_cols;
  for (const char* c : kKeyColumns) key_cols.push_back(column(c));
  const std::size_t libtype = column("libtype"), name = column("kernelName"), err = column("err_ratio"),
                    strict = column("strict_ok"), error = column("error"), final_ratio = column("final_ratio"),
                    confirm_ratio = column("confirm_ratio"), accurate = column("accurate_us");
  const std::size_t width = header.size();
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    const auto f = csv::split_line(line);
    if (!f || f->size() != width) {
      warnings.push_back(file + ":" + std::to_string(lineno) + ": expected " + std::to_string(width) + " fields, got " +
                         std::to_string(f ? f->size() : 0));
      continue;
    }
    const auto e = csv::parse_double((*f)[err]);
    const auto s = csv::parse_bool((*f)[strict]);
    const auto fr = csv::parse_double((*f)[final_ratio]);
    const auto cr = csv::parse_double((*f)[confirm_ratio]);
    const auto au = csv::parse_double((*f)[accurate]);
    if (!e || !s || !fr || !cr || !au) {
      warnings.push_back(file + ":" + std::to_string(lineno) +
                         ": err_ratio, strict_ok, final_ratio, confirm_ratio or accurate_us is not a number");
      continue;
    }
    if (*au <= 0 || !(*f)[error].empty() || *e < 0 || *e > max_err_ratio || (!*s && !loose)) continue;
    std::vector<std::string> key;
    for (std::size_t c : key_cols) key.push_back((*f)[c]);
    std::vector<ProfiledCandidate>& v = out[csv::join(key)];
    ProfiledCandidate pc{(*f)[libtype], (*f)[name], *fr, *cr, *au, *e};
    const auto same = std::find_if(v.begin(), v.end(), [&](const ProfiledCandidate& x) { return x.name == pc.name; });
    if (same != v.end()) {
      *same = std::move(pc);
    } else {
      v.push_back(std::move(pc));
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
