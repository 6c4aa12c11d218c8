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
// cuBLASLt has one for the problem, else the staged one. Operands in cuBLASLt's TN form, as its
// FP8 and IMMA kernels require: A = w ([N, K] row-major = K x N column-major, transposed), B = x,
// D = out^T column-major (N x M), which is out row-major.
#pragma once

#include <cublasLt.h>

#include <memory>
#include <mutex>
#include <string>

#include "core/solution.h"

namespace tgemm {

inline constexpr std::string_view kCublasLtA8W8StagedName = "cublaslt:heuristic_staged";

class LtA8W8Solution final : public Solution {
 public:
  enum class Mode { kFused, kStaged };
  // cuBLASLt's first heuristic choice for p in `mode`; nullptr + why when there is none.
  static std::shared_ptr<LtA8W8Solution> heuristic(const GemmProblem& p, Mode mode, std::string& why);

  ~LtA8W8Solution() override;
  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return "cublaslt"; }
  int solidx() const override { return -1; }
  bool can_implement(const GemmProblem& p) const noexcept override { return p == problem_; }
  std::size_t workspace_size(const GemmProblem&) const override { return staging_bytes_ + vector_bytes_ + workspace_; }
  void run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws, Stream stream) const override;

 private:
  LtA8W8Solution(const GemmProblem& p, Mode mode);
  bool make_descriptors(std::string& why);

  GemmProblem problem_;
  Mode mode_;
  std::string name_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_c_ = nullptr, layout_d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_ = 0;
  // Staged: the [M, N] fp32/int32 product. Fused with one per-tensor and one per-row scale: the
  // per-tensor scale broadcast to a vector (N floats for w, M for x).
  std::size_t staging_bytes_ = 0;
  std::size_t vector_bytes_ = 0;
  // Scale and bias pointers are descriptor attributes: set per call under this lock.
  mutable std::mutex pointer_mutex_;
};

}  // namespace tgemm
