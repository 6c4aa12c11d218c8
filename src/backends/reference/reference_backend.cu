#include "backends/reference/reference_backend.h"

#include <algorithm>

#include "core/log.h"
#include "core/table.h"
#include "cuda/cuda_check.h"
#include "kernels/common/reference_gemm.cuh"
#include "kernels/common/reference_gemm_a8w8.cuh"

namespace tgemm {
namespace {

constexpr std::string_view kReferenceName = "reference:simt_f32acc";

int type_code(DType t) { return t == DType::kBFloat16 ? 0 : t == DType::kFloat16 ? 1 : 2; }

// The operands' places of p with an output of row stride ldo and batch stride batch_out (0: one
// dense [M, ldo] after another).
kernels::RefLayout ref_layout(const GemmProblem& p, std::int64_t ldo, std::int64_t batch_out) {
  kernels::RefLayout l;
  l.x_row = p.transpose_a ? 1 : p.lda;
  l.x_col = p.transpose_a ? p.lda : 1;
  l.w_row = p.transpose_b ? p.ldb : 1;
  l.w_col = p.transpose_b ? 1 : p.ldb;
  l.ldo = ldo;
  l.batch = p.batch;
  l.batch_x = p.batch_stride_a;
  l.batch_w = p.batch_stride_b;
  l.batch_out = batch_out != 0 ? batch_out : p.m * ldo;
  return l;
}

template <typename In, typename Out>
void launch_with_bias(const GemmProblem& p, const GemmArgs& args, std::int64_t ldo, std::int64_t batch_out,
                      cudaStream_t stream) {
  kernels::RefEpilogue epi;
  epi.alpha = args.alpha;
  epi.beta = p.use_c ? args.beta : 0.0f;
  epi.c = args.c;
  epi.ldc = p.ldc;
  epi.c_type = type_code(p.out_type);
  epi.activation = static_cast<int>(p.activation);
  dim3 block(kernels::kRefTile, kernels::kRefTile);
  const kernels::RefLayout l = ref_layout(p, ldo, batch_out);
  dim3 grid(static_cast<unsigned>((p.n + kernels::kRefTile - 1) / kernels::kRefTile),
            static_cast<unsigned>((p.m + kernels::kRefTile - 1) / kernels::kRefTile),
            static_cast<unsigned>(std::min<std::int64_t>(p.batch, 65535)));
  TGEMM_CHECK(grid.y <= 65535u, "reference_gemm", "M must be at most ", 65535 * kernels::kRefTile,
              ", got ", p.m);
  auto* x = static_cast<const In*>(args.a);
  auto* w = static_cast<const In*>(args.b);
  auto* out = static_cast<Out*>(args.out);
  if (!p.has_bias()) {
    kernels::reference_gemm<In, Out, float><<<grid, block, 0, stream>>>(x, w, out, nullptr, p.m, p.n, p.k, l, epi);
  } else if (p.bias_type == DType::kBFloat16) {
    kernels::reference_gemm<<<grid, block, 0, stream>>>(x, w, out, static_cast<const bf16*>(args.bias), p.m, p.n, p.k,
                                                        l, epi);
  } else if (p.bias_type == DType::kFloat16) {
    kernels::reference_gemm<<<grid, block, 0, stream>>>(x, w, out, static_cast<const fp16*>(args.bias), p.m, p.n, p.k,
                                                        l, epi);
  } else {
    kernels::reference_gemm<<<grid, block, 0, stream>>>(x, w, out, static_cast<const float*>(args.bias), p.m, p.n, p.k,
                                                        l, epi);
  }
  TGEMM_CUDA_CHECK_LAUNCH("reference_gemm");
}

template <typename In>
void launch_for_in(const GemmProblem& p, const GemmArgs& args, DType out_type, std::int64_t ldo, std::int64_t batch_out,
                   cudaStream_t stream) {
  switch (out_type) {
    case DType::kBFloat16: return launch_with_bias<In, bf16>(p, args, ldo, batch_out, stream);
    case DType::kFloat16: return launch_with_bias<In, fp16>(p, args, ldo, batch_out, stream);
    case DType::kFloat32: return launch_with_bias<In, float>(p, args, ldo, batch_out, stream);
    default: detail::throw_error("reference_gemm", "unsupported out dtype ", dtype_name(out_type));
  }
}

// The scales of an a8w8 problem as the reference kernel reads them.
kernels::RefA8W8Scales a8w8_scales(const GemmProblem& p, const GemmArgs& args) {
  kernels::RefA8W8Scales scales;
  scales.x_scale = args.a_scale;
  scales.x_per_row = p.a_scale == ScaleGranularity::kRow;
  scales.w_scale = args.b_scale;
  scales.w_per_col = p.b_scale == ScaleGranularity::kRow;
  scales.batch_x_scale = p.batch_stride_a_scale;
  scales.batch_w_scale = p.batch_stride_b_scale;
  return scales;
}

kernels::RefBlockScales block_scales(const GemmProblem& p, const GemmArgs& args) {
  kernels::RefBlockScales scales;
  scales.x_scale = args.a_scale;
  scales.x_stride_m = p.a_scale_mn_major ? 1 : p.ld_a_scale;
  scales.x_stride_k = p.a_scale_mn_major ? p.ld_a_scale : 1;
  scales.w_scale = args.b_scale;
  scales.w_ld = p.ld_b_scale;
  return scales;
}

template <typename In, typename Acc, typename Out, typename Scales>
void launch_a8w8(const GemmProblem& p, const GemmArgs& args, std::int64_t ldo, std::int64_t batch_out,
                 const Scales& scales, cudaStream_t stream) {
  dim3 block(kernels::kRefA8W8Tile, kernels::kRefA8W8Tile);
  dim3 grid(static_cast<unsigned>((p.n + kernels::kRefA8W8Tile - 1) / kernels::kRefA8W8Tile),
            static_cast<unsigned>((p.m + kernels::kRefA8W8Tile - 1) / kernels::kRefA8W8Tile),
            static_cast<unsigned>(std::min<std::int64_t>(p.batch, 65535)));
  kernels::RefA8W8Batch batch;
  batch.count = p.batch;
  batch.x = p.batch_stride_a;
  batch.w = p.batch_stride_b;
  batch.out = batch_out != 0 ? batch_out : p.m * ldo;
  TGEMM_CHECK(grid.y <= 65535u, "reference_gemm_a8w8", "M must be at most ", 65535 * kernels::kRefA8W8Tile, ", got ",
              p.m);
  auto* x = static_cast<const In*>(args.a);
  auto* w = static_cast<const In*>(args.b);
  auto* out = static_cast<Out*>(args.out);
  if (!p.has_bias()) {
    kernels::reference_gemm_a8w8<In, Acc, Out, float>
        <<<grid, block, 0, stream>>>(x, w, out, nullptr, p.m, p.n, p.k, p.lda, p.ldb, ldo, scales, batch);
  } else if (p.bias_type == DType::kBFloat16) {
    kernels::reference_gemm_a8w8<In, Acc><<<grid, block, 0, stream>>>(x, w, out, static_cast<const bf16*>(args.bias),
                                                                      p.m, p.n, p.k, p.lda, p.ldb, ldo, scales, batch);
  } else if (p.bias_type == DType::kFloat16) {
    kernels::reference_gemm_a8w8<In, Acc><<<grid, block, 0, stream>>>(x, w, out, static_cast<const fp16*>(args.bias),
                                                                      p.m, p.n, p.k, p.lda, p.ldb, ldo, scales, batch);
  } else {
    kernels::reference_gemm_a8w8<In, Acc><<<grid, block, 0, stream>>>(x, w, out, static_cast<const float*>(args.bias),
                                                                      p.m, p.n, p.k, p.lda, p.ldb, ldo, scales, batch);
  }
  TGEMM_CUDA_CHECK_LAUNCH("reference_gemm_a8w8");
}

template <typename In, typename Acc, typename Scales>
void launch_a8w8_for_in(const GemmProblem& p, const GemmArgs& args, DType out_type, std::int64_t ldo,
                        std::int64_t batch_out, const Scales& scales, cudaStream_t stream) {
  switch (out_type) {
    case DType::kBFloat16: return launch_a8w8<In, Acc, bf16>(p, args, ldo, batch_out, scales, stream);
    case DType::kFloat16: return launch_a8w8<In, Acc, fp16>(p, args, ldo, batch_out, scales, stream);
    case DType::kFloat32: return launch_a8w8<In, Acc, float>(p, args, ldo, batch_out, scales, stream);
    default: detail::throw_error("reference_gemm_a8w8", "unsupported out dtype ", dtype_name(out_type));
  }
}

class ReferenceSolution final : public Solution {
 public:
  const std::string& name() const override { return name_; }
  std::string_view libtype() const override { return "reference"; }
  bool can_implement(const GemmProblem& p) const noexcept override {
    // a8w8: the int32 sum of K products of at most 128 * 128 must fit (K < 2^17).
    const bool family_ok = ((p.family == OpFamily::kA16W16 || p.family == OpFamily::kBatched) && !p.scale_ab) ||
                           ((p.family == OpFamily::kA8W8 || p.family == OpFamily::kA8W8Batched) &&
                            (p.a_type != DType::kInt8 || p.k < (1 << 17))) ||
                           (p.family == OpFamily::kA8W8Blockscale && p.a_type == DType::kFloat8E4M3);
    return family_ok && !p.bpreshuffle && (p.m + kernels::kRefTile - 1) / kernels::kRefTile <= 65535;
  }
  std::size_t workspace_size(const GemmProblem&) const override { return 0; }
  void run(const GemmProblem& p, const GemmArgs& args, const Workspace&,
           Stream stream) const override {
    if (quantized_family(p.family)) {
      run_reference_gemm_a8w8(p, args, p.out_type, p.ldo, stream, p.batch_stride_out);
    } else {
      run_reference_gemm(p, args, p.out_type, p.ldo, stream, p.batch_stride_out);
    }
  }

 private:
  std::string name_{kReferenceName};
};

class ReferenceBackend final : public Backend {
 public:
  std::string_view libtype() const override { return "reference"; }
  SolutionPtr from_row(const TableRow& row, const GemmProblem&, std::string& why) const override {
    if (row.kernel_name != kReferenceName) {
      why = "unknown kernelName '" + row.kernel_name + "' for libtype reference";
      return nullptr;
    }
    return solution_;
  }
  SolutionPtr default_solution(const GemmProblem& p) const override {
    if (!solution_->can_implement(p)) return nullptr;
    log_warning_once("reference-default:" + p.describe(),
                     "no fast solution can implement " + p.describe() +
                         "; running the slow reference kernel");
    return solution_;
  }
  std::vector<SolutionPtr> candidates(const GemmProblem&) const override {
    // The yardstick is never raced: it would only lose, and it is what others are checked against.
    return {};
  }

 private:
  SolutionPtr solution_ = std::make_shared<ReferenceSolution>();
};

}  // namespace

void run_reference_gemm(const GemmProblem& p, const GemmArgs& args, DType out_type, std::int64_t ldo, Stream s,
                        std::int64_t batch_stride_out) {
  auto stream = reinterpret_cast<cudaStream_t>(s);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  if (p.a_type == DType::kBFloat16) return launch_for_in<bf16>(p, args, out_type, ldo, batch_stride_out, stream);
  if (p.a_type == DType::kFloat16) return launch_for_in<fp16>(p, args, out_type, ldo, batch_stride_out, stream);
  detail::throw_error("reference_gemm", "unsupported input dtype ", dtype_name(p.a_type));
}

void run_reference_gemm_a8w8(const GemmProblem& p, const GemmArgs& args, DType out_type, std::int64_t ldo, Stream s,
                             std::int64_t batch_stride_out) {
  auto stream = reinterpret_cast<cudaStream_t>(s);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  if (p.family == OpFamily::kA8W8Blockscale && p.a_type == DType::kFloat8E4M3) {
    return launch_a8w8_for_in<__nv_fp8_e4m3, float>(p, args, out_type, ldo, batch_stride_out, block_scales(p, args),
                                                    stream);
  }
  if (p.family == OpFamily::kA8W8Blockscale) {
    detail::throw_error("reference_gemm_a8w8", "block scales need float8_e4m3fn operands, got ", dtype_name(p.a_type));
  }
  if (p.a_type == DType::kFloat8E4M3) {
    return launch_a8w8_for_in<__nv_fp8_e4m3, float>(p, args, out_type, ldo, batch_stride_out, a8w8_scales(p, args),
                                                    stream);
  }
  if (p.a_type == DType::kInt8) {
    return launch_a8w8_for_in<std::int8_t, std::int32_t>(p, args, out_type, ldo, batch_stride_out, a8w8_scales(p, args),
                                                         stream);
  }
  detail::throw_error("reference_gemm_a8w8", "unsupported input dtype ", dtype_name(p.a_type));
}

void register_reference_solutions(Registry& registry) {
  registry.add(std::make_unique<ReferenceBackend>());
}

}  // namespace tgemm
