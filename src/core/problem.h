// A Problem is the full description of one GEMM call; a TableKey is the part of it the tuned
// tables are keyed by (M is looked up separately, by the walk in lookup.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "tgemm/tensor.h"

namespace tgemm {

// One op family = one table family (configs/<table>_tuned_gemm.csv, TGEMM_CONFIG_GEMM_<ENV>).
enum class OpFamily : std::uint8_t {
  kA16W16,  // bf16/fp16 inputs: gemm_a16w16 and its fused-epilogue forms
};

struct FamilyInfo {
  std::string_view op;          // public op name, for messages
  std::string_view table;       // file stem: "bf16" -> bf16_tuned_gemm.csv
  std::string_view env_suffix;  // TGEMM_CONFIG_GEMM_<env_suffix>, TGEMM_UNTUNED_GEMM_<env_suffix>
};
const FamilyInfo& family_info(OpFamily f);

enum class Epilogue : std::uint8_t {
  kNone,
  kBias,  // + bias[N]
};
std::string_view epilogue_name(Epilogue e);

struct GemmProblem {
  OpFamily family = OpFamily::kA16W16;
  std::int64_t m = 0, n = 0, k = 0;
  DType a_type = DType::kBFloat16;    // x
  DType b_type = DType::kBFloat16;    // w
  DType out_type = DType::kBFloat16;
  DType bias_type = DType::kBFloat16;  // meaningful only with a bias epilogue
  Epilogue epilogue = Epilogue::kNone;
  bool scale_ab = false;
  bool bpreshuffle = false;
  // Leading dimensions in elements: x [M,K] row stride, w [N,K] row stride, out [M,N] row stride.
  std::int64_t lda = 0, ldb = 0, ldo = 0;
  // Largest power of two (capped at 16) dividing each base address, in bytes. Part of the problem
  // because kernels with 16-byte vector or TMA loads can only run on 16-byte-aligned operands.
  std::uint8_t align_a = 16, align_b = 16, align_out = 16, align_bias = 16;
  int device = 0;  // ordinal; tables are per arch and SM count, so decisions are per device

  bool has_bias() const { return epilogue == Epilogue::kBias; }
  bool operator==(const GemmProblem& o) const;
  bool operator!=(const GemmProblem& o) const { return !(*this == o); }
  // "M=1 N=4096 K=4096 bias=False dtype=torch.bfloat16 outdtype=torch.bfloat16"
  std::string describe() const;
};

struct GemmProblemHash {
  std::size_t operator()(const GemmProblem& p) const noexcept;
};

// Alignment, in bytes, of an address (largest power of two dividing it, at most 16).
std::uint8_t address_alignment(const void* p);

// The table key: what a tuned row applies to, minus M.
struct TableKey {
  std::string arch;  // "sm_90a"
  int sm_count = 0;
  std::int64_t n = 0, k = 0;
  bool bias = false;
  DType dtype = DType::kBFloat16;
  DType out_dtype = DType::kBFloat16;
  bool scale_ab = false;
  bool bpreshuffle = false;

  bool operator==(const TableKey& o) const;
  std::string describe() const;
};

struct TableKeyHash {
  std::size_t operator()(const TableKey& k) const noexcept;
};

TableKey table_key(const GemmProblem& p, const std::string& arch, int sm_count);

// Device arguments of one call; shapes and types live in the GemmProblem.
struct GemmArgs {
  const void* a = nullptr;     // x [M,K]
  const void* b = nullptr;     // w [N,K]
  void* out = nullptr;         // [M,N]
  const void* bias = nullptr;  // [N]
};

// Scratch memory handed to a solution; owned by the runtime, per device and stream.
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

}  // namespace tgemm
