// The torch ops of the `tgemm` library (torch.ops.tgemm.*), one row each: the schema and the
// kernels that implement it. library.cpp registers every row (schema, CUDA, CPU and Autograd
// kernels); module.cpp binds every row's eager fast path (tgemm._C.<op>); the fake (meta) kernel
// of each op is tgemm/_fake.py's register_fake("tgemm::<op>"), which torch imports through the
// library's python module.
//
// A new op: its kernels struct (Sig, cuda, cpu, autograd) in python/csrc/ops_<family>.h/.cpp, a
// row here, its fake kernel in python/tgemm/_fake.py, its Python wrapper in python/tgemm/ops.py,
// and its opcheck/compile/graph tests in tests/python/.
//
// Schema conventions: inputs in the C++ API's order; optional arguments default to None; a
// functional op returns a new tensor; an out= variant is `<op>_out(..., Tensor(a!) out, ...) -> ()`
// (no aliased return, so torch.compile functionalizes it), with out after the required tensors and
// before the arguments that have defaults.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>
#include <string_view>
#include <tuple>

#include "python/csrc/ops_a16w16.h"
#include "python/csrc/ops_a8w8.h"
#include "python/csrc/ops_batched.h"
#include "python/csrc/ops_epilogue.h"
#include "python/csrc/ops_fp4.h"
#include "python/csrc/ops_gmm.h"
#include "python/csrc/ops_grouped.h"
#include "python/csrc/ops_grouped_fp8.h"
#include "python/csrc/ops_quant.h"
#include "python/csrc/ops_sparse.h"

namespace tgemm::torch_binding {

// One row: the op's schema; its kernels are Kernels::cuda, ::cpu and ::autograd, of type
// Kernels::Sig (autograd: AutogradSig<Sig>).
template <class K>
struct OpDef {
  using Kernels = K;
  const char* schema;
};

inline constexpr auto kOps = std::make_tuple(
    // a16w16: y = x @ w^T (+ bias), w [N, K] as in F.linear; bf16/fp16 in, bf16/fp16/fp32 out.
    OpDef<GemmA16W16>{"gemm_a16w16(Tensor x, Tensor w, Tensor? bias=None, ScalarType? otype=None) -> Tensor"},
    OpDef<GemmA16W16Out>{"gemm_a16w16_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None) -> ()"},
    // Fused epilogues, each tgemm::gemm_a16w16 with the matching epilogue, tuned and dispatched as
    // such: y = act(x @ w^T (+ bias)), bias [N] of x's dtype or of the output dtype, added in fp32
    // before the activation; outputs bf16/fp16/fp32.
    OpDef<GemmBias>{"gemm_bias(Tensor x, Tensor w, Tensor bias, ScalarType? otype=None) -> Tensor"},
    OpDef<GemmBiasOut>{"gemm_bias_out(Tensor x, Tensor w, Tensor bias, Tensor(a!) out) -> ()"},
    // approximate as in F.gelu: "none" (erf) or "tanh".
    OpDef<GemmGelu>{"gemm_gelu(Tensor x, Tensor w, Tensor? bias=None, str approximate=\"none\", "
                    "ScalarType? otype=None) -> Tensor"},
    OpDef<GemmGeluOut>{"gemm_gelu_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None, "
                       "str approximate=\"none\") -> ()"},
    OpDef<GemmRelu>{"gemm_relu(Tensor x, Tensor w, Tensor? bias=None, ScalarType? otype=None) -> Tensor"},
    OpDef<GemmReluOut>{"gemm_relu_out(Tensor x, Tensor w, Tensor(a!) out, Tensor? bias=None) -> ()"},
    // y = alpha * (x @ w^T) + beta * c, c [..., N] shaped like y; the functional form's y has c's
    // dtype. The out= form takes out = c (the same tensor) to accumulate in place, as ATen's out=
    // ops let out alias an input; otherwise out must not overlap c.
    OpDef<GemmAlphaBeta>{"gemm_alpha_beta(Tensor x, Tensor w, Tensor c, float alpha=1.0, float beta=1.0) -> Tensor"},
    OpDef<GemmAlphaBetaOut>{"gemm_alpha_beta_out(Tensor x, Tensor w, Tensor c, Tensor(a!) out, float alpha=1.0, "
                            "float beta=1.0) -> ()"},
    // a8w8: y = (x @ w^T) * x_scale * w_scale (+ bias); x, w both float8_e4m3fn or both int8; fp32
    // scales per-tensor (1 element) or per-token [M, 1] / per-channel [N, 1]; bias [N] of the
    // output dtype or fp32; out_dtype bf16 (None), fp16 or fp32.
    OpDef<GemmA8W8>{"gemm_a8w8(Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, Tensor? bias=None, "
                    "ScalarType? out_dtype=None) -> Tensor"},
    // a8w8_blockscale: y = sum over 128-element K blocks b of (x @ w^T)_b * x_scale[:, b] *
    // w_scale[n / 128, b] (+ bias); x, w float8_e4m3fn; x_scale fp32 [M, ceil(K/128)] row-major or
    // MN-major TMA-aligned, w_scale fp32 [ceil(N/128), ceil(K/128)] row-major; bias and out_dtype as
    // gemm_a8w8.
    OpDef<GemmA8W8Blockscale>{"gemm_a8w8_blockscale(Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, "
                              "Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor"},
    // batched: out[i] = op(a[i]) @ op(b[i]) (+ bias) for i < B; a [B, M, K] (or [B, K, M] with
    // transpose_a), b [B, K, N] (or [B, N, K] with transpose_b), any batch stride of a and b (0:
    // broadcast); bf16/fp16 in; out_dtype None is a's dtype, else bf16/fp16/fp32; bias [N].
    OpDef<BatchedGemm>{"batched_gemm(Tensor a, Tensor b, bool transpose_a=False, bool transpose_b=False, "
                       "Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor"},
    OpDef<BatchedGemmOut>{"batched_gemm_out(Tensor a, Tensor b, Tensor(a!) out, bool transpose_a=False, "
                          "bool transpose_b=False, Tensor? bias=None) -> ()"},
    // batched_a8w8: out[i] = (a[i] @ b[i]^T) * a_scale[i] * b_scale[i] (+ bias) for i < B; a
    // [B, M, K], b [B, N, K], both float8_e4m3fn or both int8, any batch stride (0: broadcast); fp32
    // scales one element, [B] / [B, 1, 1] or per-token [B, M, 1] / per-channel [B, N, 1]; bias [N]
    // of the output dtype or fp32; out_dtype bf16 (None), fp16 or fp32.
    OpDef<BatchedGemmA8W8>{"batched_gemm_a8w8(Tensor a, Tensor b, Tensor a_scale, Tensor b_scale, "
                           "Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor"},
    // gmm: out[rows of g] = lhs[rows of g] @ rhs[g] (+ bias[g]); lhs [M, K] bf16/fp16, rhs
    // [G, K, N] (transpose_rhs=False) or [G, N, K] (True), group_sizes int32 [G] read on the device
    // only, bias [G, N]; out_dtype None is lhs's dtype, else it or fp32.
    OpDef<Gmm>{"gmm(Tensor lhs, Tensor rhs, Tensor group_sizes, Tensor? bias=None, bool transpose_rhs=False, "
               "ScalarType? out_dtype=None) -> Tensor"},
    // ptgmm / nptgmm (persistent / non-persistent grid): out[g] = lhs[:, cols of g] @ rhs[rows of
    // g], lhs [K, M] row- or column-major, rhs [M, N], out [G, K, N]; the out= form adds into out
    // with accumulate and writes bias_grad [G, K] fp32 (row sums of lhs per group) when given.
    OpDef<Tgmm>{"tgmm(Tensor lhs, Tensor rhs, Tensor group_sizes, bool persistent=True, "
                "ScalarType? out_dtype=None) -> Tensor"},
    OpDef<TgmmOut>{"tgmm_out(Tensor lhs, Tensor rhs, Tensor group_sizes, Tensor(a!) out, "
                   "Tensor(b!)? bias_grad=None, bool accumulate=False, bool persistent=True) -> ()"},
    // grouped_gemm: out[t, j] = x[t] (or x[t, j]) @ W(expert_ids[t, j]), weights [E, H, N] or, with
    // transpose_weights, [E, N, H]; with topk_weights [T, topk] the weighted sum over j, [T, N].
    OpDef<GroupedGemm>{"grouped_gemm(Tensor x, Tensor weights, Tensor expert_ids, Tensor? topk_weights=None, "
                       "bool transpose_weights=False, ScalarType? out_dtype=None) -> Tensor"},
    // DeepGEMM's masked grouped GEMM, bf16, arguments in its order: out[g, :masked_m[g]] =
    // x[g, :masked_m[g]] @ w[g]^T; the other rows of out are not written.
    OpDef<MGroupedGemmMasked>{"m_grouped_gemm_masked(Tensor x, Tensor w, Tensor(a!) out, Tensor masked_m, "
                              "int expected_m) -> ()"},
    // DeepGEMM's FP8 grouped GEMMs with DeepSeek-V3 block scales (x_scale 1x128, w_scale 128x128),
    // bf16 out written in place. Contiguous: out[row] = x[row] @ w[m_indices[row]]^T, rows with an
    // index outside [0, G) zeroed. Masked: out[g, :masked_m[g]] = x[g, :masked_m[g]] @ w[g]^T.
    OpDef<MGroupedGemmFp8Contiguous>{"m_grouped_gemm_fp8_contiguous(Tensor x, Tensor x_scale, Tensor w, "
                                     "Tensor w_scale, Tensor(a!) out, Tensor m_indices) -> ()"},
    OpDef<MGroupedGemmFp8Masked>{"m_grouped_gemm_fp8_masked(Tensor x, Tensor x_scale, Tensor w, Tensor w_scale, "
                                 "Tensor(a!) out, Tensor masked_m, int expected_m) -> ()"},
    // MoE routing (include/tgemm/moe.h), one CTA per token row: topk_weights fp32 [T, k], topk_ids
    // int32 [T, k]. topk_softmax: the k largest of softmax(gating); grouped_topk: DeepSeek-V3's
    // group-limited choice, scoring "sigmoid" or "softmax", correction_bias [E] fp32 or None.
    OpDef<TopkSoftmax>{"topk_softmax(Tensor gating, int k, bool renormalize=False) -> (Tensor topk_weights, "
                       "Tensor topk_ids)"},
    OpDef<GroupedTopk>{"grouped_topk(Tensor gating, Tensor? correction_bias, int n_group, int topk_group, int k, "
                       "str scoring=\"sigmoid\", bool renormalize=True, float routed_scaling=1.0) -> "
                       "(Tensor topk_weights, Tensor topk_ids)"},
    // fused_moe: out[t] = sum_j topk_weights[t, j] * expert(topk_ids[t, j], hidden[t]), w1 [E, 2I, H]
    // (gate rows then up rows), w2 [E, H, I]; activation "silu" or "gelu"; expert_map [E_global]
    // int32 maps global ids to local experts (-1: on another rank, the slot gives 0).
    OpDef<FusedMoe>{"fused_moe(Tensor hidden, Tensor w1, Tensor w2, Tensor topk_weights, Tensor topk_ids, "
                    "str activation=\"silu\", Tensor? expert_map=None, ScalarType? out_dtype=None) -> Tensor"},
    // Quantization for the A8W8 GEMMs (include/tgemm/quant.h): q has x's sizes, scales are fp32 and
    // dequantize (x ~= q * scale). qtype: torch.float8_e4m3fn (default) or torch.int8; mn_major:
    // the 1x128 scales in DeepGEMM's MN-major TMA-aligned layout instead of row-major.
    OpDef<QuantFp8PerTensor>{"quant_fp8_per_tensor(Tensor x) -> (Tensor q, Tensor scale)"},
    OpDef<QuantFp8PerTensorStatic>{"quant_fp8_per_tensor_static(Tensor x, Tensor scale) -> Tensor"},
    OpDef<QuantPerToken>{"quant_per_token(Tensor x, ScalarType? qtype=None) -> (Tensor q, Tensor scale)"},
    OpDef<QuantFp8PerBlock1x128>{
        "quant_fp8_per_block_1x128(Tensor x, bool mn_major=False) -> (Tensor q, Tensor scale)"},
    OpDef<QuantFp8PerBlock128x128>{"quant_fp8_per_block_128x128(Tensor w) -> (Tensor q, Tensor scale)"},
    // MXFP4 (include/tgemm/fp4.h): e2m1 codes two a byte (element 2i in the low nibble), one E8M0
    // scale (uint8, 2^(s - 127)) per 32 values along K; K % 32 == 0. quant_mxfp4: q uint8
    // [..., K / 2], scale uint8 [..., K / 32]. gemm_a16w4: y = x @ dequant(w, w_scale)^T (+ bias), x
    // bf16/fp16 [..., K], w uint8 [N, K / 2], w_scale uint8 [N, K / 32], bias [N] of x's or the
    // output's dtype; out_dtype None is x's dtype.
    OpDef<QuantMxfp4>{"quant_mxfp4(Tensor x) -> (Tensor q, Tensor scale)"},
    OpDef<GemmA16W4>{"gemm_a16w4(Tensor x, Tensor w, Tensor w_scale, Tensor? bias=None, "
                     "ScalarType? out_dtype=None) -> Tensor"},
    // gemm_a8w4: y = (x * x_scale) @ dequant(w, w_scale)^T (+ bias), x float8_e4m3fn [..., K],
    // x_scale fp32 (1 element or [..., 1]). gemm_a4w4: y = dequant(x, x_scale) @ dequant(w,
    // w_scale)^T (+ bias), x uint8 [..., K / 2], x_scale uint8 [..., K / 32]. Both: bias [N] of the
    // output's dtype or fp32; out_dtype None is bf16.
    OpDef<GemmA8W4>{"gemm_a8w4(Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, Tensor? bias=None, "
                    "ScalarType? out_dtype=None) -> Tensor"},
    OpDef<GemmA4W4>{"gemm_a4w4(Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, Tensor? bias=None, "
                    "ScalarType? out_dtype=None) -> Tensor"},
    // Sparse weights (include/tgemm/sparse.h), y = x @ W^T (+ bias [N], x's dtype) as F.linear,
    // bf16/fp16. prune_2_4: magnitude pruning to 2 of every 4 along K. sparse_gemm_2_4: W as the
    // int8 bytes of tgemm._C.compress_2_4 (cuSPARSELt's compressed 2:4 form), algorithm and split_k
    // cuSPARSELt's (-1 and 0: its defaults). sparse_gemm_csr: W [n, K] as CSR arrays, int32
    // indices, checked once by tgemm._C.check_sparse_csr.
    OpDef<Prune24>{"prune_2_4(Tensor w) -> Tensor"},
    OpDef<SparseGemm24>{"sparse_gemm_2_4(Tensor x, Tensor compressed, int n, Tensor? bias=None, int algorithm=-1, "
                        "int split_k=0, Tensor? dense=None) -> Tensor"},
    OpDef<SparseGemmCsr>{"sparse_gemm_csr(Tensor x, Tensor crow_indices, Tensor col_indices, Tensor values, int n, "
                         "Tensor? bias=None, Tensor? dense=None) -> Tensor"},
    // sparse_gemm_bsr: W [n, K] as BSR arrays (values [nnzb, bs, bs]), checked once by
    // tgemm._C.check_sparse_bsr. sparse_gemm_2_4_fp8: an e4m3 2:4 W with gemm_a8w8's scales.
    // dense (each sparse GEMM): the weight's dense copy, which lets a table row naming the dense
    // path run.
    OpDef<SparseGemmBsr>{"sparse_gemm_bsr(Tensor x, Tensor crow_indices, Tensor col_indices, Tensor values, int n, "
                         "Tensor? bias=None, Tensor? dense=None) -> Tensor"},
    OpDef<SparseGemm24Fp8>{
        "sparse_gemm_2_4_fp8(Tensor x, Tensor compressed, int n, Tensor x_scale, Tensor w_scale, "
        "Tensor? bias=None, ScalarType? out_dtype=None, int algorithm=-1, int split_k=0, Tensor? dense=None) -> "
        "Tensor"});

// Calls f(row) for every row of kOps, in order.
template <class F>
void for_each_op(F&& f) {
  std::apply([&](const auto&... row) { (f(row), ...); }, kOps);
}

// The op name of a schema: "gemm_bias" for "gemm_bias(Tensor x, ...) -> Tensor".
inline std::string op_name(std::string_view schema) { return std::string(schema.substr(0, schema.find('('))); }

// The dispatcher entry of the op whose kernels are K (looked up once; the op is registered when
// this library is loaded).
template <class K>
const c10::TypedOperatorHandle<typename K::Sig>& op_handle() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow(("tgemm::" + op_name(std::get<OpDef<K>>(kOps).schema)).c_str(), "")
                             .template typed<typename K::Sig>();
  return op;
}

}  // namespace tgemm::torch_binding
