// cuBLASLt backend: the library's heuristic choice (cublaslt:heuristic, solidx -1) and explicitly
// configured algorithms (kernelName = serialized LtConfig, checked with cublasLtMatmulAlgoCheck
// when a row is loaded). Solutions are bound to one problem: descriptors and the algorithm are
// made once, so a call is one cublasLtMatmul.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/cublaslt/cublaslt_config.h"
#include "core/registry.h"

namespace tgemm {

void register_cublaslt_solutions(Registry& registry);

// Workspace limit for every cuBLASLt solution (heuristic queries and configured checks alike).
inline constexpr std::size_t kCublasLtMaxWorkspace = 32u << 20;

class LtSolution final : public Solution {
 public:
  // cuBLASLt's first heuristic choice for p; nullptr + why when it has none. tgemm never lets
  // split-K partial sums be reduced in a 16-bit output type (the INPLACE and OUTPUT_TYPE schemes
  // accumulate in the output buffer's type and lose 8+ bits per split: only COMPUTE_TYPE, in fp32);
  // `torch_default` lifts that restriction to reproduce what F.linear runs with PyTorch's default
  // allow_{bf16,fp16}_reduced_precision_reduction = True (the bench's baseline).
  static std::shared_ptr<LtSolution> heuristic(const GemmProblem& p, std::string& why, bool torch_default = false);
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
  std::size_t workspace_size(const GemmProblem&) const override { return staging_bytes_ + workspace_; }
  void run(const GemmProblem& p, const GemmArgs& args, const Workspace& ws,
           Stream stream) const override;

  // Builds configuration c for this solution's problem and checks it (attributes, alignment,
  // cublasLtMatmulAlgoCheck, workspace limit); false with *why (when given) set otherwise.
  bool check_config(const LtConfig& c, cublasLtMatmulAlgo_t& algo, std::size_t& workspace, std::string* why) const;

  // Whether the product goes through the fp32 staging buffer (mixed 16-bit types).
  bool staged() const { return staging_bytes_ != 0; }

  // The configuration actually run (for the heuristic: what it chose).
  LtConfig chosen_config() const;
  // For the bench's overhead mode: the raw objects, to call cublasLtMatmul directly.
  cublasLtHandle_t handle() const { return handle_; }
  cublasLtMatmulDesc_t desc() const { return desc_; }
  cublasLtMatrixLayout_t layout_a() const { return layout_a_; }
  cublasLtMatrixLayout_t layout_b() const { return layout_b_; }
  cublasLtMatrixLayout_t layout_c() const { return layout_c_; }
  cublasLtMatrixLayout_t layout_d() const { return layout_d_; }
  // The cuBLASLt epilogue the descriptor uses (what an algorithm's EPILOGUE_MASK must include).
  cublasLtEpilogue_t epilogue() const { return epilogue_; }
  const cublasLtMatmulAlgo_t& algo() const { return algo_; }

 private:
  explicit LtSolution(const GemmProblem& p);
  bool make_descriptors(std::string& why);

  GemmProblem problem_;
  std::string name_;
  std::optional<LtConfig> config_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_c_ = nullptr, layout_d_ = nullptr;
  cublasLtEpilogue_t epilogue_ = CUBLASLT_EPILOGUE_DEFAULT;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_ = 0;
  // Mixed 16-bit types (bf16 in, fp16 out or the reverse) and the erf GELU (cuBLASLt's GELU
  // epilogue is the tanh approximation) have no cuBLASLt kernel: alpha * product goes to an fp32
  // staging buffer at the front of the workspace, and epilogue_rows adds beta * c and the bias,
  // applies the activation and casts. 0 when cuBLASLt writes the output directly.
  std::size_t staging_bytes_ = 0;
  // The bias pointer is a descriptor attribute: set per call under this lock.
  mutable std::mutex bias_mutex_;
};

// What an explicit configuration is checked against: one solution's descriptors and types, and
// the alignment in bytes of the buffers cuBLASLt will read and write (AlgoCheck sees no pointers).
struct LtCheckTarget {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_c = nullptr, layout_d = nullptr;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale_type = CUDA_R_32F;
  cudaDataType_t type_a = CUDA_R_16BF, type_b = CUDA_R_16BF, type_c = CUDA_R_16BF, type_d = CUDA_R_16BF;
  std::uint32_t align_a = 16, align_b = 16, align_c = 16, align_d = 16;
  const GemmProblem* problem = nullptr;  // for messages
  // The configuration's name in messages: a8w8 names carry their form (cublaslt_config.h).
  std::optional<LtA8W8Form> a8w8_form;
};
// Builds configuration c against t (attributes, alignment, cublasLtMatmulAlgoCheck, workspace
// limit); false with *why (when given) set otherwise.
bool lt_check_config(const LtCheckTarget& t, const LtConfig& c, cublasLtMatmulAlgo_t& algo, std::size_t& workspace,
                     std::string* why);
// The configuration an algorithm holds (the heuristic's choices), with this process's version.
LtConfig lt_config_of(const cublasLtMatmulAlgo_t& algo);

// cublasLtGetVersion() of the library in use.
std::size_t cublaslt_runtime_version();
// The process's cuBLASLt handle of a device (created on first use), and cuBLASLt's name of a dtype.
cublasLtHandle_t cublaslt_handle(int device);
// Destroys a solution's matmul descriptor and its four layouts (null ones skipped).
void destroy_lt_descriptors(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                            cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d);
cudaDataType_t cublaslt_data_type(DType t);
// Layout `l` repeated over p's batch (batched_gemm, batched_gemm_a8w8): p.batch matrices, `stride`
// elements apart.
void set_batch(cublasLtMatrixLayout_t l, const GemmProblem& p, std::int64_t stride, const char* where);

// The explicit configuration space of cuBLASLt for a problem, searched in two stages by the tuner:
//  bases:   every algorithm id cuBLASLt offers for the types x every tile x every stages id x
//           every cluster shape (auto, 1x1, 2x1, 1x2, 2x2, 4x1, 1x4) that passes
//           cublasLtMatmulAlgoCheck, with custom option 0, no split-K, no swizzle;
//  expanded: around a base, every custom option x (no split-K, or each split-K count x each
//           reduction scheme) and the CTA swizzle.
// The full product is tens of thousands of checked configurations per problem; the tuner races
// every base and the expansions of the fastest bases (Backend::refine).
struct LtSpaceOptions {
  std::vector<int> split_ks{2, 3, 4, 5, 6, 8, 12, 16};
  // Cluster shape ids: auto, 1x1, 2x1, 1x2, 2x2, 4x1, 1x4 (larger clusters rarely fit Hopper's
  // GPCs whole).
  std::vector<int> clusters{0, 2, 3, 5, 6, 4, 8};
  // Split-K only pays when the output tiles cannot fill the GPU; skip it when a 128x128 tiling
  // already gives this many waves.
  double split_k_max_waves = 2.0;
  // Bases expanded by refine().
  std::size_t refine_bases = 24;
};

struct LtSpaceStats {
  int algo_ids = 0;
  long long checked = 0;  // cublasLtMatmulAlgoCheck calls
  long long valid = 0;    // configurations returned
  long long pruned = 0;   // tiles skipped by the compute-bound rule
};

std::vector<LtConfig> enumerate_lt_bases(const GemmProblem& p, const LtSpaceOptions& options, LtSpaceStats* stats);
std::vector<LtConfig> expand_lt_configs(const GemmProblem& p, const std::vector<LtConfig>& bases,
                                        const LtSpaceOptions& options, LtSpaceStats* stats);

}  // namespace tgemm
