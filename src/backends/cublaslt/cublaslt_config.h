// A cuBLASLt algorithm configuration as it is stored in a table's kernelName:
//   cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100
// (algo id, tile id, stages id, split-K slices, reduction scheme, CTA swizzle, custom option,
// inner shape id, cluster shape id, cublasLtGetVersion() it was tuned with), and
//   cublaslt:heuristic
// for "cuBLASLt's own heuristic choice" (solidx -1). Host-only, no cuBLASLt header needed.
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

// The bases Backend::refine expands, from the screened candidates' names (fastest first): each
// configuration name reduced to its base (no split-K, reduction, swizzle or custom option),
// first occurrence kept, at most max_bases of them; names that are not configurations (the
// heuristic's) are skipped.
std::vector<LtConfig> lt_refine_bases(const std::vector<std::string>& screened_fastest_first,
                                      std::size_t max_bases);

}  // namespace tgemm
