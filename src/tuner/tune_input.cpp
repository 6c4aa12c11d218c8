#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "core/check.h"
#include "core/csv.h"
#include "runtime/device_utils.h"
#include "tuner/tune_job.h"

namespace tgemm {

std::string UntunedProblem::describe() const {
  std::string s = fmt::format("M={} N={} K={} bias={} dtype={} outdtype={}", m, n, k, bias ? "True" : "False",
                              dtype_name(dtype), dtype_name(out_dtype));
  if (!(epilogue == EpilogueKey{})) s += " epilogue=" + format_epilogue_key(epilogue);
  return s;
}

namespace {

// The typed fields of one untuned line; `get` returns a column's text ("" when absent).
template <typename Get>
UntunedProblem parse_untuned(const Get& get, const std::string& path, int line_no) {
  UntunedProblem p;
  auto m = csv::parse_int(get("M")), n = csv::parse_int(get("N")), k = csv::parse_int(get("K"));
  TGEMM_CHECK(m && n && k && *m > 0 && *n > 0 && *k > 0, "tgemm tune", path, ":", line_no,
              ": M, N, K must be positive integers");
  p.m = *m;
  p.n = *n;
  p.k = *k;
  p.bias = csv::parse_bool(get("bias")).value_or(false);
  p.scale_ab = csv::parse_bool(get("scaleAB")).value_or(false);
  p.bpreshuffle = csv::parse_bool(get("bpreshuffle")).value_or(false);
  const std::string ep = get("epilogue");
  if (!ep.empty()) {
    auto e = parse_epilogue_key(ep);
    TGEMM_CHECK(e.has_value(), "tgemm tune", path, ":", line_no, ": unknown epilogue '", ep, "'");
    p.epilogue = *e;
  }
  const std::string dt = get("dtype");
  if (!dt.empty()) {
    auto d = dtype_from_name(dt);
    TGEMM_CHECK(d.has_value(), "tgemm tune", path, ":", line_no, ": unknown dtype '", dt, "'");
    p.dtype = *d;
  }
  const std::string od = get("outdtype");
  p.out_dtype = p.dtype;
  if (!od.empty()) {
    auto d = dtype_from_name(od);
    TGEMM_CHECK(d.has_value(), "tgemm tune", path, ":", line_no, ": unknown outdtype '", od, "'");
    p.out_dtype = *d;
  }
  TGEMM_CHECK(!p.scale_ab && !p.bpreshuffle, "tgemm tune", path, ":", line_no,
              ": scaleAB/bpreshuffle problems are not tunable in this build");
  return p;
}

bool same_problem(const UntunedProblem& a, const UntunedProblem& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.bias == b.bias && a.dtype == b.dtype &&
         a.out_dtype == b.out_dtype && a.epilogue == b.epilogue;
}

}  // namespace

std::vector<UntunedProblem> read_untuned(const std::string& path) {
  std::ifstream in(path);
  TGEMM_CHECK(static_cast<bool>(in), "tgemm tune", "cannot open --input_file '", path, "'");
  std::vector<UntunedProblem> out;
  std::map<std::string, std::size_t> cols;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto f = csv::split_line(line);
    TGEMM_CHECK(f.has_value(), "tgemm tune", path, ":", line_no, ": malformed line");
    if (cols.empty()) {
      for (std::size_t i = 0; i < f->size(); ++i) cols[(*f)[i]] = i;
      for (const char* c : {"M", "N", "K"}) {
        TGEMM_CHECK(cols.count(c), "tgemm tune", path, ": header has no '", c, "' column");
      }
      continue;
    }
    auto get = [&](const char* name) -> std::string {
      auto it = cols.find(name);
      return it == cols.end() || it->second >= f->size() ? std::string() : (*f)[it->second];
    };
    const UntunedProblem p = parse_untuned(get, path, line_no);
    if (std::none_of(out.begin(), out.end(), [&](const UntunedProblem& q) { return same_problem(q, p); })) {
      out.push_back(p);
    }
  }
  return out;
}

nlohmann::json problem_json(const UntunedProblem& p) {
  return {{"M", p.m},
          {"N", p.n},
          {"K", p.k},
          {"bias", p.bias},
          {"dtype", std::string(dtype_name(p.dtype))},
          {"outdtype", std::string(dtype_name(p.out_dtype))},
          {"epilogue", format_epilogue_key(p.epilogue)}};
}

GemmProblem problem_from_json(const nlohmann::json& pj, int device) {
  GemmProblem p;
  p.m = pj["M"];
  p.n = pj["N"];
  p.k = pj["K"];
  p.a_type = p.b_type = *dtype_from_name(pj["dtype"].get<std::string>());
  p.out_type = *dtype_from_name(pj["outdtype"].get<std::string>());
  if (pj["bias"].get<bool>()) {
    p.epilogue = Epilogue::kBias;
    p.bias_type = p.a_type;
  }
  const EpilogueKey e = *parse_epilogue_key(pj["epilogue"].get<std::string>());
  p.activation = e.activation;
  p.unit_alpha = !e.scaled;
  p.use_c = e.use_c;
  if (p.use_c) p.ldc = p.n;
  p.lda = p.ldb = p.k;
  p.ldo = p.n;
  p.device = device;
  return p;
}

TableKey key_of(const UntunedProblem& u, const std::string& arch, int sm) {
  GemmProblem p;
  p.n = u.n;
  p.k = u.k;
  p.a_type = p.b_type = u.dtype;
  p.out_type = u.out_dtype;
  p.epilogue = u.bias ? Epilogue::kBias : Epilogue::kNone;
  p.activation = u.epilogue.activation;
  p.unit_alpha = !u.epilogue.scaled;
  p.use_c = u.epilogue.use_c;
  return table_key(p, arch, sm);
}

std::string format_duration(double s) {
  if (s < 0 || !std::isfinite(s)) return "?";
  int t = static_cast<int>(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

void set_row_rates(TableRow& row, const GemmProblem& p) {
  row.tflops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) / (row.us * 1e6);
  const double bytes = static_cast<double>(dtype_size(p.a_type)) * static_cast<double>(p.m * p.k) +
                       static_cast<double>(dtype_size(p.b_type)) * static_cast<double>(p.n * p.k) +
                       static_cast<double>(dtype_size(p.out_type)) * static_cast<double>(p.m * p.n);
  row.bw = bytes / (row.us * 1e-6) / 1e9;
}

void require_gpu_for(const std::string& command) {
  std::string why;
  if (cuda_device_available(&why)) return;
  throw NoGpu("tgemm " + command + ": no CUDA GPU is usable on this machine (" + why + ").\ntgemm " + command +
              " times kernels and needs an NVIDIA GPU (sm_90 H100/H200 for the Hopper kernels). Nothing was run.");
}

}  // namespace tgemm
