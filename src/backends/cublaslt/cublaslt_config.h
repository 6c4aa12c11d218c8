// A cuBLASLt algorithm configuration as it is stored in a table's kernelName:
//   cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100
// (algo id, tile id, stages id, split-K slices, reduction scheme, CTA swizzle, custom option,
// inner shape id, cluster shape id, cublasLtGetVersion() it was tuned with), and
//   cublaslt:heuristic
// for "cuBLASLt's own heuristic choice" (solidx -1). The a8w8 family's configurations carry their
// form after the prefix, then the same fields:
//   cublaslt:fused_algo..._v130100    FP8 with per-tensor scales: cuBLASLt applies the scales
//                                     (A/B scale pointers) and the bias, and writes out
//   cublaslt:staged_algo..._v130100   the unscaled product (FP8 into fp32, INT8 into int32),
//                                     then scale_rows applies the scales and the bias
// (cublaslt_a8w8.h; the key's dtype tells FP8 from INT8). Host-only, no cuBLASLt header needed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tgemm {

inline constexpr std::string_view kCublasLtHeuristicName = "cublaslt:heuristic";
// The heuristic's choice under PyTorch's default preferences (split-K partial sums may be reduced
// in the 16-bit output type): exactly what F.linear runs. A table row may name it only where that
// choice reduces nothing in a 16-bit output (split-K 1, or the fp32 COMPUTE_TYPE scheme).
inline constexpr std::string_view kCublasLtTorchDefaultName = "cublaslt:heuristic_torch_default";

struct LtConfig {
  int algo = 0;
  int tile = 0;
  int stages = 0;
  int split_k = 1;
  int reduction = 0;
  int swizzle = 0;
  int custom = 0;
  int inner_shape = 0;
  int cluster_shape = 0;
  std::size_t version = 0;  // cublasLtGetVersion(): major*10000 + minor*100 + patch

  bool operator==(const LtConfig& o) const;
};

std::string format_lt_name(const LtConfig& c);
// nullopt with `why` set when the name is not a configuration name.
std::optional<LtConfig> parse_lt_name(std::string_view name, std::string& why);
// "13.1.0"
std::string format_lt_version(std::size_t version);

// The form of an a8w8 configuration (cublaslt_a8w8.h): cuBLASLt scales (fused) or scale_rows does.
enum class LtA8W8Form { kFused, kStaged };
struct LtA8W8Config {
  LtA8W8Form form = LtA8W8Form::kStaged;
  LtConfig config;
};
std::string format_lt_a8w8_name(LtA8W8Form form, const LtConfig& c);
// nullopt with `why` set when the name is not an a8w8 configuration name.
std::optional<LtA8W8Config> parse_lt_a8w8_name(std::string_view name, std::string& why);
// The a16w16 form of an a8w8 configuration name ("cublaslt:fused_algo..." -> "cublaslt:algo..."),
// for lt_refine_bases; any other name unchanged.
std::string lt_a8w8_base_name(std::string_view name);

// The bases Backend::refine expands, from the screened candidates' names (fastest first): each
// configuration name reduced to its base (no split-K, reduction, swizzle or custom option),
// first occurrence kept, at most max_bases of them; names that are not configurations (the
// heuristic's) are skipped.
std::vector<LtConfig> lt_refine_bases(const std::vector<std::string>& screened_fastest_first,
                                      std::size_t max_bases);

}  // namespace tgemm
