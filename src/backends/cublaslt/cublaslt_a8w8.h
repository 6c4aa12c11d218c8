// cuBLASLt solutions of the a8w8 family (libtype cublaslt):
//  - cublaslt:heuristic (fused, FP8 only): cuBLASLt applies the scales itself through
//    CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER, scalar mode for per-tensor x per-tensor and
//    CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F on both operands otherwise (a per-tensor side is
//    first broadcast into a vector in the workspace), and adds a bias of out's dtype in its
//    epilogue; it writes out directly.
//  - cublaslt:heuristic_staged (FP8 and INT8): the unscaled product (fp32 for FP8; int32 from the
//    IMMA kernels for INT8, exact) in a staging buffer at the front of the workspace, then
//    scale_rows (cuda/scale_epilogue.h) applies the scales and the bias in fp32 and rounds once.
// Both are cuBLASLt's first heuristic choice (solidx -1); the default is the fused solution where
// cuBLASLt has one for the problem, else the staged one. The tuner also races explicit
// configurations (cublaslt_config.h: cublaslt:fused_algo... and cublaslt:staged_algo...), in the
// form explicit_form() gives the problem, enumerated like the a16w16 space (enumerate_lt_bases).
// Operands in cuBLASLt's TN form, as its FP8 and IMMA kernels require: A = w ([N, K] row-major =
// K x N column-major, transposed), B = x, D = out^T column-major (N x M), which is out row-major.
//
// The a8w8_batched family (batched_gemm_a8w8) runs staged only: cuBLASLt's strided batch writes the
// B unscaled products into a dense [B, M, N] fp32/int32 staging buffer (B * M * N * 4 bytes of
// workspace), then one scale_rows pass over the batch applies each product's scales and the bias.
// Fused is refused: a scale pointer holds one scale or vector for every matrix of a strided batch.
//
// The a8w8_blockscale family uses the same solutions with cuBLASLt's
// block scale modes: A = w with CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, B = x with
// CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F (cuBLAS 12.9+, sm_90 only). cuBLASLt reads w_scale K-major
// with rows ceil(K/128) rounded up to 4 apart, and x_scale M-major with column stride M, M and N
// multiples of 4, scale pointers 16-byte aligned (cuBLAS docs, "Scaling factors layouts"): scales
// in another layout are first copied into that one in the workspace (repack_scales). Fused: cuBLASLt
// applies the scales and a bias of out's dtype and writes out (M a multiple of 4). Staged: the
// scaled product goes to an fp32 staging buffer and epilogue_rows adds any bias and casts; where M
// is not a multiple of 4 the staged form runs on x and x_scale copied with zero rows up to the
// next multiple of 4. N not a multiple of 4 has no cuBLASLt solution (w would need a copy).
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/cublaslt/cublaslt_config.h"
#include "core/solution.h"

namespace tgemm {

inline constexpr std::string_view kCublasLtA8W8StagedName = "cublaslt:heuristic_staged";

class LtA8W8Solution final : public Solution {
 public:
  using Mode = LtA8W8Form;
  // cuBLASLt's first heuristic choice for p in `mode`; nullptr + why when there is none.
  static std::shared_ptr<LtA8W8Solution> heuristic(const GemmProblem& p, Mode mode, std::string& why);
  // The heuristic's first `count` choices for p in `mode`, as configurations (duplicates dropped).
  static std::vector<LtConfig> heuristic_configs(const GemmProblem& p, Mode mode, int count);
  // An explicit configuration in `mode`; nullptr + why when cuBLASLt rejects it for p.
  static std::shared_ptr<LtA8W8Solution> configured(const GemmProblem& p, Mode mode, const LtConfig& c,
                                                    std::string& why);
  // Descriptors only, no algorithm: what the configuration space of p is checked against.
  static std::shared_ptr<LtA8W8Solution> probe(const GemmProblem& p, Mode mode, std::string& why);
  // The form of p's explicit configurations: fused for FP8 with per-tensor scales on both sides and
  // no bias or one of out's dtype (cuBLASLt's scalar scales and bias epilogue); staged otherwise
  // (INT8: the IMMA kernels write int32; per-token or per-channel FP8: the heuristic's one
  // OUTER_VEC_32F algorithm is the fused candidate, the explicit space stays staged). Blockscale: fused where M is a
  // multiple of 4, any bias has out's dtype and cuBLASLt's heuristic has a fused algorithm; staged otherwise.
  static Mode explicit_form(const GemmProblem& p);

  ~LtA8W8Solution() override;
  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return "cublaslt"; }
  int solidx() const override { return config_ ? config_->algo : -1; }
  int split_k() const override { return config_ ? config_->split_k : 0; }
  bool can_implement(const GemmProblem& p) const noexcept override { return p == problem_; }
  std::size_t workspace_size(const GemmProblem&) const override { return staging_bytes_ + vector_bytes_ + workspace_; }
  void run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws, Stream stream) const override;

  // Builds configuration c for this solution's problem and mode and checks it (attributes,
  // alignment, cublasLtMatmulAlgoCheck, workspace limit); false with *why (when given) set otherwise.
  bool check_config(const LtConfig& c, cublasLtMatmulAlgo_t& algo, std::size_t& workspace, std::string* why) const;
  Mode mode() const { return mode_; }
  cublasLtHandle_t handle() const { return handle_; }
  // cuBLASLt's types of this solution: compute, scale, the 8-bit inputs, D (out, or fp32/int32 staged).
  cublasComputeType_t compute_type() const;
  cudaDataType_t scale_type() const;
  cudaDataType_t in_type() const;
  cudaDataType_t d_type() const;
  // The cuBLASLt epilogue the descriptor uses (what an algorithm's EPILOGUE_MASK must include).
  cublasLtEpilogue_t epilogue() const;

 private:
  LtA8W8Solution(const GemmProblem& p, Mode mode);
  bool make_descriptors(std::string& why);
  // The a8w8_blockscale family's descriptors and run.
  bool make_blockscale_descriptors(std::string& why);
  void run_blockscale(const GemmProblem& p, const GemmArgs& args, const Workspace& ws, Stream stream) const;
  // Alignment in bytes of the B operand (x, or its padded copy) as cuBLASLt reads it.
  std::uint32_t x_alignment() const;
  std::vector<cublasLtMatmulHeuristicResult_t> query(int count) const;

  GemmProblem problem_;
  Mode mode_;
  std::string name_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_c_ = nullptr, layout_d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::optional<LtConfig> config_;  // an explicit configuration; none for the heuristic's choice
  std::size_t workspace_ = 0;
  // Staged: the [M, N] fp32/int32 product. Fused with one per-tensor and one per-row scale: the
  // per-tensor scale broadcast to a vector (N floats for w, M for x). Blockscale: the copies of
  // block_, in vector_bytes_ too.
  std::size_t staging_bytes_ = 0;
  std::size_t vector_bytes_ = 0;
  // Blockscale: what run copies into the workspace after the staging buffer, at these offsets
  // (0 bytes: not needed, cuBLASLt reads the caller's buffer).
  struct BlockPrep {
    std::int64_t m_rows = 0;                  // M rounded up to a multiple of 4: cuBLAS n
    std::size_t x_offset = 0, x_bytes = 0;    // x [m_rows, K], ld K, zero rows past M
    std::size_t xs_offset = 0, xs_bytes = 0;  // x_scale [L, m_rows] M-major
    std::size_t ws_offset = 0, ws_bytes = 0;  // w_scale [ceil(N / 128), L rounded up to 4]
  };
  BlockPrep block_;
  // Scale and bias pointers are descriptor attributes: set per call under this lock.
  mutable std::mutex pointer_mutex_;
};

}  // namespace tgemm
