// cuBLASLt backend: the library's heuristic choice (cublaslt:heuristic, solidx -1) and explicitly
// configured algorithms (kernelName = serialized LtConfig, checked with cublasLtMatmulAlgoCheck
// when a row is loaded). Solutions are bound to one problem: descriptors and the algorithm are
// made once, so a call is one cublasLtMatmul.
#pragma once

#include <cublasLt.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/cublaslt/cublaslt_config.h"
#include "core/registry.h"

namespace tgemm {

void register_cublaslt_solutions(Registry& registry);

// Workspace limit for every cuBLASLt solution (heuristic queries and configured checks alike).
inline constexpr std::size_t kCublasLtMaxWorkspace = 32u << 20;

class LtSolution final : public Solution {
 public:
  // cuBLASLt's first heuristic choice for p; nullptr + why when it has none.
  static std::shared_ptr<LtSolution> heuristic(const GemmProblem& p, std::string& why);
  // Up to `count` heuristic candidates, each as an explicit configuration.
  static std::vector<std::shared_ptr<LtSolution>> heuristic_top(const GemmProblem& p, int count);
  // An explicit configuration; nullptr + why when cuBLASLt rejects it for p.
  static std::shared_ptr<LtSolution> configured(const GemmProblem& p, const LtConfig& c,
                                                std::string& why);

  ~LtSolution() override;
  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return "cublaslt"; }
  int solidx() const override { return config_ ? config_->algo : -1; }
  int split_k() const override { return config_ ? config_->split_k : 0; }
  bool can_implement(const GemmProblem& p) const noexcept override { return p == problem_; }
  std::size_t workspace_size(const GemmProblem&) const override { return workspace_; }
  void run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws,
           Stream stream) const override;

  // The configuration actually run (for the heuristic: what it chose).
  LtConfig chosen_config() const;
  // For the bench's overhead mode: the raw objects, to call cublasLtMatmul directly.
  cublasLtHandle_t handle() const { return handle_; }
  cublasLtMatmulDesc_t desc() const { return desc_; }
  cublasLtMatrixLayout_t layout_a() const { return layout_a_; }
  cublasLtMatrixLayout_t layout_b() const { return layout_b_; }
  cublasLtMatrixLayout_t layout_c() const { return layout_c_; }
  const cublasLtMatmulAlgo_t& algo() const { return algo_; }

 private:
  explicit LtSolution(const GemmProblem& p);
  bool make_descriptors(std::string& why);

  GemmProblem problem_;
  std::string name_;
  std::optional<LtConfig> config_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_ = 0;
  // The bias pointer is a descriptor attribute: set per call under this lock.
  mutable std::mutex bias_mutex_;
};

// cublasLtGetVersion() of the library in use.
std::size_t cublaslt_runtime_version();

}  // namespace tgemm
