#include "backends/cublaslt/cublaslt_config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <tuple>
#include <unordered_set>
#include <vector>

namespace tgemm {

bool LtConfig::operator==(const LtConfig& o) const {
  auto t = [](const LtConfig& c) {
    return std::tie(c.algo, c.tile, c.stages, c.split_k, c.reduction, c.swizzle, c.custom,
                    c.inner_shape, c.cluster_shape, c.version);
  };
  return t(*this) == t(o);
}

std::string format_lt_name(const LtConfig& c) {
  return "cublaslt:algo" + std::to_string(c.algo) + "_tile" + std::to_string(c.tile) + "_stages" +
         std::to_string(c.stages) + "_splitk" + std::to_string(c.split_k) + "_red" +
         std::to_string(c.reduction) + "_swz" + std::to_string(c.swizzle) + "_opt" +
         std::to_string(c.custom) + "_inner" + std::to_string(c.inner_shape) + "_cluster" +
         std::to_string(c.cluster_shape) + "_v" + std::to_string(c.version);
}

std::string format_lt_version(std::size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
         std::to_string(v % 100);
}

std::optional<LtConfig> parse_lt_name(std::string_view name, std::string& why) {
  constexpr std::string_view kPrefix = "cublaslt:";
  if (name.substr(0, kPrefix.size()) != kPrefix) {
    why = "kernelName '" + std::string(name) + "' does not start with 'cublaslt:'";
    return std::nullopt;
  }
  std::string_view rest = name.substr(kPrefix.size());
  struct Field {
    std::string_view label;
    long long* out;
  };
  long long v[10] = {};
  const std::vector<Field> fields = {{"algo", &v[0]},   {"tile", &v[1]},  {"stages", &v[2]},
                                     {"splitk", &v[3]}, {"red", &v[4]},   {"swz", &v[5]},
                                     {"opt", &v[6]},    {"inner", &v[7]}, {"cluster", &v[8]},
                                     {"v", &v[9]}};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    if (rest.substr(0, f.label.size()) != f.label) {
      why = "kernelName '" + std::string(name) + "' is not a cuBLASLt configuration (expected '" +
            std::string(f.label) + "' at '" + std::string(rest) + "')";
      return std::nullopt;
    }
    rest.remove_prefix(f.label.size());
    std::size_t end = rest.find('_');
    bool last = i + 1 == fields.size();
    if (last ? end != std::string_view::npos : end == std::string_view::npos) {
      why = "kernelName '" + std::string(name) + "' is not a cuBLASLt configuration";
      return std::nullopt;
    }
    std::string digits(rest.substr(0, last ? rest.size() : end));
    bool all_digits = !digits.empty();
    for (char ch : digits) all_digits = all_digits && ch >= '0' && ch <= '9';
    char* stop = nullptr;
    errno = 0;
    long long value = std::strtoll(digits.c_str(), &stop, 10);
    const bool fits = i + 1 == fields.size() || value <= 2147483647LL;  // all but the version are int32
    if (!all_digits || stop != digits.c_str() + digits.size() || value < 0 || !fits || errno == ERANGE) {
      why = "kernelName '" + std::string(name) + "' has a bad " + std::string(f.label) +
            " value '" + digits + "'";
      return std::nullopt;
    }
    *f.out = value;
    rest.remove_prefix(last ? rest.size() : end + 1);
  }
  LtConfig c;
  c.algo = static_cast<int>(v[0]);
  c.tile = static_cast<int>(v[1]);
  c.stages = static_cast<int>(v[2]);
  c.split_k = static_cast<int>(v[3]);
  c.reduction = static_cast<int>(v[4]);
  c.swizzle = static_cast<int>(v[5]);
  c.custom = static_cast<int>(v[6]);
  c.inner_shape = static_cast<int>(v[7]);
  c.cluster_shape = static_cast<int>(v[8]);
  c.version = static_cast<std::size_t>(v[9]);
  if (c.split_k < 1) {
    why = "kernelName '" + std::string(name) + "' has splitk 0 (must be >= 1)";
    return std::nullopt;
  }
  return c;
}

namespace {

constexpr std::string_view kLtPrefix = "cublaslt:";
constexpr std::string_view kFusedForm = "fused_";
constexpr std::string_view kStagedForm = "staged_";

std::string_view form_label(LtA8W8Form form) { return form == LtA8W8Form::kFused ? kFusedForm : kStagedForm; }

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string format_lt_a8w8_name(LtA8W8Form form, const LtConfig& c) {
  const std::string plain = format_lt_name(c);
  return std::string(kLtPrefix) + std::string(form_label(form)) + plain.substr(kLtPrefix.size());
}

std::optional<LtA8W8Config> parse_lt_a8w8_name(std::string_view name, std::string& why) {
  std::string_view rest = name.substr(std::min(name.size(), kLtPrefix.size()));
  LtA8W8Config out;
  if (starts_with(name, kLtPrefix) && starts_with(rest, kFusedForm)) {
    out.form = LtA8W8Form::kFused;
  } else if (starts_with(name, kLtPrefix) && starts_with(rest, kStagedForm)) {
    out.form = LtA8W8Form::kStaged;
  } else {
    why = "kernelName '" + std::string(name) +
          "' is not an a8w8 cuBLASLt configuration (expected 'cublaslt:" + std::string(kFusedForm) +
          "algo...' or 'cublaslt:" + std::string(kStagedForm) + "algo...')";
    return std::nullopt;
  }
  auto config = parse_lt_name(lt_a8w8_base_name(name), why);
  if (!config) {
    why = "kernelName '" + std::string(name) + "': " + why;
    return std::nullopt;
  }
  out.config = *config;
  return out;
}

std::string lt_a8w8_base_name(std::string_view name) {
  if (!starts_with(name, kLtPrefix)) return std::string(name);
  std::string_view rest = name.substr(kLtPrefix.size());
  for (std::string_view form : {kFusedForm, kStagedForm}) {
    if (starts_with(rest, form)) return std::string(kLtPrefix) + std::string(rest.substr(form.size()));
  }
  return std::string(name);
}

std::vector<LtConfig> lt_refine_bases(const std::vector<std::string>& screened_fastest_first,
                                      std::size_t max_bases) {
  std::vector<LtConfig> bases;
  std::unordered_set<std::string> seen;
  for (const std::string& name : screened_fastest_first) {
    if (bases.size() >= max_bases) break;
    std::string why;
    auto config = parse_lt_name(name, why);
    if (!config) continue;
    LtConfig base = *config;
    base.split_k = 1;
    base.reduction = 0;
    base.custom = 0;
    base.swizzle = 0;
    if (seen.insert(format_lt_name(base)).second) bases.push_back(base);
  }
  return bases;
}

}  // namespace tgemm
