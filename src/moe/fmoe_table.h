// The tuned table of fused_moe (configs/tuned_fmoe.csv, configs/<card>/tuned_fmoe.csv, or the files
// of TGEMM_CONFIG_FMOE, ':'-separated and merged in order): which path serves a key, as measured
// by `tgemm tune-fmoe` against fused_moe's default rule. Host-only.
//
// Columns (found by name, any order, unknown columns ignored):
//   arch, sm_count   the GPU the row was measured on (rows of another arch or SM count never serve)
//   tokens           the bucket of the call's tokens T (fmoe_tokens_bucket): a power of two b; the
//                    row serves calls with T in (b / 2, b]
//   T                optional: the tokens the race used (must lie in the bucket)
//   E, topk          the experts of w1 [E, 2I, H] and w2 [E, H, I], and the experts per token
//   H, I             hidden [T, H]; the intermediate size
//   dtype            torch.bfloat16 | torch.float16 (hidden, w1, w2)
//   quant            optional, default none: none (fp8_block and fp8_rowwise are the quantized
//                    layers' names; fused_moe takes no quantized weights, so no call looks them up)
//   activation       optional, default silu: silu | gelu
//   solution         tile (the gather/WMMA tile kernels) or cutlass (the CUTLASS grouped kernel for
//                    both GEMMs, the instances in `up` and `down`)
//   up, down         the CUTLASS grouped instance names of the gate/up and the down GEMM (cutlass
//                    rows only; src/grouped/gmm_cutlass.h)
//   us, us_skewed    optional: the solution's median time on the uniform and the skewed routing
//   speedup, speedup_skewed  optional: the default's time over the solution's (paired rounds)
//   default          optional: the default rule's solution the row was measured against
// A malformed row is one warning naming file and line, and is skipped. Within one file a repeated
// key keeps the row with the lowest `us`; a later file's row replaces an earlier file's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/csv.h"
#include "core/keyed_table.h"
#include "core/settings.h"
#include "tgemm/moe.h"
#include "tgemm/tensor.h"

namespace tgemm {

// The bucket of a call's tokens: the smallest power of two >= t (1, 2, 4, ...); 0 for t <= 0 (no
// row serves such a call).
std::int64_t fmoe_tokens_bucket(std::int64_t t);

// The quantization of a MoE layer's weights, a key column: fused_moe's calls are kNone.
enum class FmoeQuant : std::uint8_t { kNone, kFp8Block, kFp8Rowwise };
const char* fmoe_quant_name(FmoeQuant q);
std::optional<FmoeQuant> parse_fmoe_quant(std::string_view s);
const char* fmoe_activation_name(MoeActivation a);
std::optional<MoeActivation> parse_fmoe_activation(std::string_view s);

struct FmoeKey {
  std::string arch;  // "sm_90a"
  int sm_count = 0;
  std::int64_t tokens = 0;  // fmoe_tokens_bucket
  std::int64_t experts = 0, topk = 0, hidden = 0, inter = 0;
  DType dtype = DType::kBFloat16;
  FmoeQuant quant = FmoeQuant::kNone;
  MoeActivation activation = MoeActivation::kSilu;

  bool operator==(const FmoeKey& o) const;
  // "tokens=32 E=8 topk=2 H=4096 I=14336 dtype=torch.bfloat16 quant=none activation=silu"
  std::string describe() const;
};

struct FmoeKeyHash {
  std::size_t operator()(const FmoeKey& k) const noexcept;
};

// The key of a call with t tokens on a device of `arch` and `sm_count`.
FmoeKey fmoe_key(std::int64_t t, std::int64_t experts, std::int64_t topk, std::int64_t hidden, std::int64_t inter,
                 DType dtype, FmoeQuant quant, MoeActivation activation, const std::string& arch, int sm_count);

// The solution names of the table.
inline constexpr const char* kFmoeTileSolution = "tile";
inline constexpr const char* kFmoeCutlassSolution = "cutlass";

struct FmoeRow {
  FmoeKey key;
  std::int64_t t = 0;    // the race's tokens; 0 when the file does not say
  std::string solution;  // kFmoeTileSolution or kFmoeCutlassSolution
  std::string up, down;  // the CUTLASS instances of a cutlass row; empty for tile
  double us = 0, us_skewed = 0;
  double speedup = 0, speedup_skewed = 0;
  std::string default_solution;
  std::string file;
  int line = 0;
};

// Column names of the tuned table, in the order tgemm writes them.
const std::vector<std::string>& fmoe_tuned_columns();
// Column names of the untuned table (the capture's rows, tgemm tune-fmoe's input).
const std::vector<std::string>& fmoe_untuned_columns();

using ParsedFmoeTable = ParsedRows<FmoeRow>;

// Parses a tuned fmoe table. A header lacking a required column or naming one twice skips the file
// (one warning); a malformed line is one warning and skipped.
ParsedFmoeTable parse_fmoe_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits = {});

// A row as a CSV line in fmoe_tuned_columns() order.
std::string format_fmoe_row(const FmoeRow& row);
// One untuned key: the row of fmoe_untuned_columns() at the bucket's top T, so each bucket is one
// row and `tgemm tune-fmoe` races it where the bucket's calls are largest.
std::string format_fmoe_untuned_row(const FmoeKey& key);

struct FmoeTableTraits {
  using Key = FmoeKey;
  using Row = FmoeRow;
  using Hash = FmoeKeyHash;
  static constexpr const char* kName = "fmoe";
  static constexpr const char* kTuneCommand = "tgemm tune-fmoe";
  static ParsedFmoeTable parse(std::istream& in, const std::string& file) { return parse_fmoe_table(in, file); }
  static std::string untuned_row(const FmoeKey& key) { return format_fmoe_untuned_row(key); }
  static const std::vector<std::string>& untuned_columns() { return fmoe_untuned_columns(); }
  static const FamilyInfo& family() { return fmoe_family_info(); }
  static auto order(const FmoeKey& k) {
    return std::make_tuple(k.arch, k.sm_count, k.experts, k.topk, k.hidden, k.inter, static_cast<int>(k.dtype),
                           static_cast<int>(k.quant), static_cast<int>(k.activation), k.tokens);
  }
};

// fused_moe's table: one row per key (core/keyed_table.h).
using FmoeTable = KeyedTable<FmoeTableTraits>;
// fused_moe's tables of one configuration (one reload_config): the files of Settings::fmoe, each
// device's card file where the shipped directory has one (configs/<card>/tuned_fmoe.csv, used
// alone), the TGEMM_TUNE_GEMM capture of untuned keys and the TGEMM_LOG_TUNED_CONFIG log.
using FmoeTables = KeyedTables<FmoeTableTraits>;

}  // namespace tgemm
