#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "core/check.h"
#include "core/csv.h"
#include "core/table.h"
#include "tuner/tune_job.h"

namespace tgemm {

std::string UntunedProblem::describe() const {
  std::string s = fmt::format("M={} N={} K={} bias={} dtype={} outdtype={}", m, n, k, bias ? "True" : "False",
                              dtype_name(dtype), dtype_name(out_dtype));
  if (!(epilogue == EpilogueKey{})) s += " epilogue=" + format_epilogue_key(epilogue);
  if (quantized_family(family())) s += " scales=" + std::string(format_scale_recipe(a_scale, b_scale));
  if (batched_family(family())) {
    s = fmt::format("B={} transpose_a={} transpose_b={} ", batch, transpose_a ? "True" : "False",
                    transpose_b ? "True" : "False") +
        s;
  }
  return s;
}

namespace {

// The largest M, N or K a tuned row may hold: the kernels and the walk index rows and columns
// with 32-bit integers.
constexpr long long kMaxDim = 2147483647;

std::int64_t parse_dim(const std::string& text, const char* column, const std::string& path, int line_no) {
  const auto v = csv::parse_int(text);
  TGEMM_CHECK(v && *v > 0 && *v <= kMaxDim, "tgemm tune", path, ":", line_no, ": ", column,
              " must be an integer in [1, ", kMaxDim, "], got '", text, "'");
  return *v;
}

// An absent or empty column is its default; any other text must be a boolean.
bool parse_flag(const std::string& text, const char* column, const std::string& path, int line_no) {
  if (text.empty()) return false;
  const auto v = csv::parse_bool(text);
  TGEMM_CHECK(v.has_value(), "tgemm tune", path, ":", line_no, ": ", column, " must be True or False, got '", text,
              "'");
  return *v;
}

DType parse_dtype_column(const std::string& text, const char* column, DType dflt, const std::string& path,
                         int line_no) {
  if (text.empty()) return dflt;
  const auto d = dtype_from_name(text);
  TGEMM_CHECK(d.has_value(), "tgemm tune", path, ":", line_no, ": unknown ", column, " '", text, "'");
  return *d;
}

// The typed fields of one untuned line; `get` returns a column's text ("" when absent).
template <typename Get>
UntunedProblem parse_untuned(const Get& get, const std::string& path, int line_no) {
  UntunedProblem p;
  p.m = parse_dim(get("M"), "M", path, line_no);
  p.n = parse_dim(get("N"), "N", path, line_no);
  p.k = parse_dim(get("K"), "K", path, line_no);
  p.bias = parse_flag(get("bias"), "bias", path, line_no);
  p.scale_ab = parse_flag(get("scaleAB"), "scaleAB", path, line_no);
  p.bpreshuffle = parse_flag(get("bpreshuffle"), "bpreshuffle", path, line_no);
  const std::string ep = get("epilogue");
  if (!ep.empty()) {
    auto e = parse_epilogue_key(ep);
    TGEMM_CHECK(e.has_value(), "tgemm tune", path, ":", line_no, ": unknown epilogue '", ep, "'");
    p.epilogue = *e;
  }
  p.dtype = parse_dtype_column(get("dtype"), "dtype", p.dtype, path, line_no);
  const bool a8w8 = family_of_dtype(p.dtype) == OpFamily::kA8W8;
  // validate.cpp's rules: 16-bit inputs (a16w16) or e4m3 / int8 (a8w8), 16- or 32-bit float output.
  TGEMM_CHECK(a8w8 || p.dtype == DType::kBFloat16 || p.dtype == DType::kFloat16, "tgemm tune", path, ":", line_no,
              ": dtype must be torch.bfloat16, torch.float16, torch.float8_e4m3fn or torch.int8, got ",
              dtype_name(p.dtype));
  TGEMM_CHECK(!a8w8 || p.dtype == DType::kFloat8E4M3 || p.dtype == DType::kInt8, "tgemm tune", path, ":", line_no,
              ": dtype must be torch.float8_e4m3fn or torch.int8 for an a8w8 problem, got ", dtype_name(p.dtype));
  p.out_dtype = parse_dtype_column(get("outdtype"), "outdtype", a8w8 ? DType::kBFloat16 : p.dtype, path, line_no);
  TGEMM_CHECK(p.out_dtype == DType::kBFloat16 || p.out_dtype == DType::kFloat16 || p.out_dtype == DType::kFloat32,
              "tgemm tune", path, ":", line_no,
              ": outdtype must be torch.bfloat16, torch.float16 or torch.float32, got ", dtype_name(p.out_dtype));
  TGEMM_CHECK(!p.scale_ab && !p.bpreshuffle, "tgemm tune", path, ":", line_no,
              ": scaleAB/bpreshuffle problems are not tunable in this build");
  const std::string scales = get("scales");
  const std::string batch = get("B");
  if (!batch.empty()) {
    // batched_gemm (bf16/fp16) or batched_gemm_a8w8 (8-bit, a [B, M, K] and b [B, N, K] only): a
    // bias at most (validate_batched's rules), B products.
    TGEMM_CHECK(p.epilogue == EpilogueKey{}, "tgemm tune", path, ":", line_no, ": epilogue '",
                format_epilogue_key(p.epilogue), "' on a batched problem (batched_gemm adds a bias only)");
    p.batch = parse_dim(batch, "B", path, line_no);
    p.transpose_a = parse_flag(get("transpose_a"), "transpose_a", path, line_no);
    p.transpose_b = a8w8 ? true : parse_flag(get("transpose_b"), "transpose_b", path, line_no);
    TGEMM_CHECK(!a8w8 || (!p.transpose_a && get("transpose_b") != "False"), "tgemm tune", path, ":", line_no,
                ": an 8-bit batched problem has transpose_a=False, transpose_b=True (batched_gemm_a8w8 takes a "
                "[B, M, K] and b [B, N, K] only)");
  }
  if (!a8w8) {
    TGEMM_CHECK(scales.empty() || scales == "none", "tgemm tune", path, ":", line_no, ": scales '", scales, "' on a ",
                dtype_name(p.dtype), " problem (scales belong to float8_e4m3fn and int8 problems)");
    return p;
  }
  // a8w8: K a multiple of 16 (16-byte rows), a scale recipe, no epilogue beyond the bias.
  TGEMM_CHECK(p.k % 16 == 0, "tgemm tune", path, ":", line_no, ": K must be a multiple of 16 for ", dtype_name(p.dtype),
              " operands (16-byte rows), got ", p.k);
  const auto recipe = parse_scale_recipe(scales);
  TGEMM_CHECK(recipe.has_value() && recipe->first != ScaleGranularity::kNone, "tgemm tune", path, ":", line_no, ": a ",
              dtype_name(p.dtype),
              " problem needs a scales column of tensor, token, channel, token_channel or block, got '", scales, "'");
  TGEMM_CHECK(recipe->first != ScaleGranularity::kBlock || p.dtype == DType::kFloat8E4M3, "tgemm tune", path, ":",
              line_no, ": scales 'block' need torch.float8_e4m3fn operands (gemm_a8w8_blockscale), got ",
              dtype_name(p.dtype));
  TGEMM_CHECK(p.epilogue == EpilogueKey{}, "tgemm tune", path, ":", line_no, ": epilogue '",
              format_epilogue_key(p.epilogue), "' on an a8w8 problem (gemm_a8w8 adds a bias only)");
  TGEMM_CHECK(p.batch == 0 || recipe->first != ScaleGranularity::kBlock, "tgemm tune", path, ":", line_no,
              ": scales 'block' on a batched problem (batched_gemm_a8w8 takes per-tensor, per-token and per-channel "
              "scales)");
  p.a_scale = recipe->first;
  p.b_scale = recipe->second;
  return p;
}

// Column name -> index; a duplicated name would make one of the two columns unreadable.
std::map<std::string, std::size_t> untuned_header(const std::vector<std::string>& fields, const std::string& path,
                                                  int line_no) {
  std::map<std::string, std::size_t> cols;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    TGEMM_CHECK(cols.emplace(fields[i], i).second, "tgemm tune", path, ":", line_no, ": the header names column '",
                fields[i], "' twice");
  }
  for (const char* c : {"M", "N", "K"}) {
    TGEMM_CHECK(cols.count(c), "tgemm tune", path, ":", line_no, ": header has no '", c, "' column");
  }
  return cols;
}

bool same_problem(const UntunedProblem& a, const UntunedProblem& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.bias == b.bias && a.dtype == b.dtype &&
         a.out_dtype == b.out_dtype && a.epilogue == b.epilogue && a.a_scale == b.a_scale && a.b_scale == b.b_scale &&
         a.batch == b.batch && a.transpose_a == b.transpose_a && a.transpose_b == b.transpose_b;
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
      cols = untuned_header(*f, path, line_no);
      continue;
    }
    TGEMM_CHECK(f->size() == cols.size(), "tgemm tune", path, ":", line_no, ": ", f->size(),
                " fields where the header has ", cols.size());
    auto get = [&](const char* name) -> std::string {
      auto it = cols.find(name);
      return it == cols.end() ? std::string() : (*f)[it->second];
    };
    const UntunedProblem p = parse_untuned(get, path, line_no);
    TGEMM_CHECK(out.empty() || out.front().family() == p.family(), "tgemm tune", path, ":", line_no, ": a ",
                family_info(p.family()).op, " problem after ", family_info(out.front().family()).op,
                " problems: one family a file (its rows go to one tuned table)");
    if (std::none_of(out.begin(), out.end(), [&](const UntunedProblem& q) { return same_problem(q, p); })) {
      out.push_back(p);
    }
  }
  TGEMM_CHECK(!out.empty(), "tgemm tune", "--input_file '", path,
              "' holds no problem (a header and rows of M,N,K,...)");
  return out;
}

nlohmann::json problem_json(const UntunedProblem& p) {
  return {{"M", p.m},
          {"N", p.n},
          {"K", p.k},
          {"bias", p.bias},
          {"dtype", std::string(dtype_name(p.dtype))},
          {"outdtype", std::string(dtype_name(p.out_dtype))},
          {"epilogue", format_epilogue_key(p.epilogue)},
          {"scales", std::string(format_scale_recipe(p.a_scale, p.b_scale))},
          {"B", p.batch},
          {"transpose_a", p.transpose_a},
          {"transpose_b", p.transpose_b}};
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
  if (const auto recipe = parse_scale_recipe(pj.value("scales", std::string("none")));
      recipe && recipe->first != ScaleGranularity::kNone) {
    // a8w8: the bias is raced in out's dtype (problem_of_key's choice; cuBLASLt's FP8 epilogue
    // takes no other), block scales in problem_of_key's layout.
    p.family = recipe->first == ScaleGranularity::kBlock ? OpFamily::kA8W8Blockscale : OpFamily::kA8W8;
    p.a_scale = recipe->first;
    p.b_scale = recipe->second;
    p.bias_type = p.out_type;
    set_raced_block_scale_layout(p);
  }
  p.lda = p.ldb = p.k;
  p.ldo = p.n;
  if (const std::int64_t batch = pj.value("B", std::int64_t{0}); batch > 0) {
    // batched: problem_of_key's dense operands of the stored layouts.
    TableKey key = table_key(p, "", 0);
    key.batch = batch;
    key.transpose_a = pj.value("transpose_a", false);
    key.transpose_b = pj.value("transpose_b", false);
    p = problem_of_key(key, p.m, device);
  }
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
  p.family = u.family();
  p.a_scale = u.a_scale;
  p.b_scale = u.b_scale;
  p.batch = u.batch > 0 ? u.batch : 1;
  p.transpose_a = u.transpose_a;
  p.transpose_b = u.family() == OpFamily::kBatched ? u.transpose_b : true;
  return table_key(p, arch, sm);
}

std::string format_duration(double s) {
  if (s < 0 || !std::isfinite(s)) return "?";
  int t = static_cast<int>(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

void set_row_rates(TableRow& row, const GemmProblem& p) {
  // Every product of a batch (a broadcast operand counted once per product, as the tuner's dense
  // operands hold it).
  const double batch = static_cast<double>(p.batch);
  row.tflops =
      2.0 * batch * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) / (row.us * 1e6);
  const double bytes = batch * (static_cast<double>(dtype_size(p.a_type)) * static_cast<double>(p.m * p.k) +
                                static_cast<double>(dtype_size(p.b_type)) * static_cast<double>(p.n * p.k) +
                                static_cast<double>(dtype_size(p.out_type)) * static_cast<double>(p.m * p.n));
  row.bw = bytes / (row.us * 1e-6) / 1e9;
}

}  // namespace tgemm
