"""The tgemm ops with AITER's Python API (``aiter.tuned_gemm``: ``gemm_a16w16``, ``tgemm.mm``) and
the fused-epilogue ops (``gemm_bias``, ``gemm_gelu``, ``gemm_relu``, ``gemm_alpha_beta``).

Each function is a thin wrapper over ``torch.ops.tgemm.<op>`` (the custom op: schema, CUDA and
autograd kernels in C++, fake kernel in ``tgemm._fake``), so it works under torch.compile
(no graph break) and inside CUDA-graph capture once the shape has been run once.

Which entry a call takes:
  * under torch.compile / torch.export: ``torch.ops.tgemm.<op>`` (traced into the graph);
  * eager, when no ``__torch_function__`` override applies (plain tensors, ``nn.Parameter``,
    FakeTensor; no TorchFunctionMode): ``tgemm._C.<op>``, the same dispatcher entry without the
    boxed ``torch.ops`` call (host overhead), raising :class:`tgemm.TgemmError` for bad input;
  * eager otherwise: ``torch.ops.tgemm.<op>``, so the mode or subclass sees the op; its
    RuntimeError for bad input is re-raised as :class:`tgemm.TgemmError` (same text).
"""

from __future__ import annotations

from typing import Optional

import torch

from . import _C
from ._errors import as_tgemm_error

# The op overloads themselves: calling .default skips the overload resolution of the packet.
gemm_a16w16_op = torch.ops.tgemm.gemm_a16w16.default
gemm_a16w16_out_op = torch.ops.tgemm.gemm_a16w16_out.default
gemm_bias_op = torch.ops.tgemm.gemm_bias.default
gemm_bias_out_op = torch.ops.tgemm.gemm_bias_out.default
gemm_gelu_op = torch.ops.tgemm.gemm_gelu.default
gemm_gelu_out_op = torch.ops.tgemm.gemm_gelu_out.default
gemm_relu_op = torch.ops.tgemm.gemm_relu.default
gemm_relu_out_op = torch.ops.tgemm.gemm_relu_out.default
gemm_alpha_beta_op = torch.ops.tgemm.gemm_alpha_beta.default
gemm_alpha_beta_out_op = torch.ops.tgemm.gemm_alpha_beta_out.default
gemm_a8w8_op = torch.ops.tgemm.gemm_a8w8.default
gemm_a8w8_blockscale_op = torch.ops.tgemm.gemm_a8w8_blockscale.default
gmm_op = torch.ops.tgemm.gmm.default
batched_gemm_op = torch.ops.tgemm.batched_gemm.default
batched_gemm_out_op = torch.ops.tgemm.batched_gemm_out.default
batched_gemm_a8w8_op = torch.ops.tgemm.batched_gemm_a8w8.default

_is_compiling = torch.compiler.is_compiling
# True when a TorchFunctionMode is active or an argument's type overrides __torch_function__ (the
# check torch.nn.functional runs); None arguments are fine.
_has_torch_function = torch._C._has_torch_function_variadic
_fast_a16w16 = _C.gemm_a16w16
_fast_a16w16_out = _C.gemm_a16w16_out
_fast_bias = _C.gemm_bias
_fast_bias_out = _C.gemm_bias_out
_fast_gelu = _C.gemm_gelu
_fast_gelu_out = _C.gemm_gelu_out
_fast_relu = _C.gemm_relu
_fast_relu_out = _C.gemm_relu_out
_fast_alpha_beta = _C.gemm_alpha_beta
_fast_alpha_beta_out = _C.gemm_alpha_beta_out
_fast_a8w8 = _C.gemm_a8w8
_fast_a8w8_blockscale = _C.gemm_a8w8_blockscale
_fast_gmm = _C.gmm
_fast_batched = _C.batched_gemm
_fast_batched_out = _C.batched_gemm_out
_fast_batched_a8w8 = _C.batched_gemm_a8w8


def _with_where(described) -> dict:
    """A tgemm._C.describe_* dict with "where": the row's file:line ("" for no row)."""
    info = dict(described)
    info["where"] = f"{info['file']}:{info['line']}" if info["file"] else ""
    return info


def _call_op(op, *args):
    """An eager call through torch.ops (a TorchFunctionMode or a tensor subclass must see the op),
    with the op's RuntimeError for bad input re-raised as TgemmError."""
    try:
        return op(*args)
    except RuntimeError as e:
        err = as_tgemm_error(e)
        if err is e:
            raise
        raise err from None


def gemm_a16w16(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    otype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """``y = x @ w.T (+ bias)``, exactly the shapes of ``F.linear(x, w, bias)``, tuned per shape.

    x: ``[..., K]`` bf16 or fp16 on a CUDA device, elements of a row contiguous (leading dims
    must flatten like a view). w: ``[N, K]`` of x's dtype, rows contiguous. bias: ``[N]`` of x's
    dtype or of the output dtype, added once in fp32 before the output cast. otype: output dtype
    (bf16, fp16 or fp32; default x.dtype). Returns a new ``[..., N]`` tensor, computed on the
    current CUDA stream. Bad input raises :class:`tgemm.TgemmError` naming the argument.
    Differentiable (backward by ATen matmuls, as F.linear's).
    """
    if _is_compiling():
        return gemm_a16w16_op(x, w, bias, otype)
    if not _has_torch_function(x, w, bias):
        return _fast_a16w16(x, w, bias, otype)
    return _call_op(gemm_a16w16_op, x, w, bias, otype)


mm = gemm_a16w16
"""Alias of :func:`gemm_a16w16` (AITER's ``tgemm.mm``)."""


def gemm_a16w16_out(
    x: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """:func:`gemm_a16w16` into an existing ``out`` (``[..., N]``, rows contiguous, dtype bf16,
    fp16 or fp32, not overlapping the inputs). Returns ``out``. Not differentiable."""
    if _is_compiling():
        gemm_a16w16_out_op(x, w, out, bias)
    elif not _has_torch_function(x, w, out, bias):
        _fast_a16w16_out(x, w, out, bias)
    else:
        _call_op(gemm_a16w16_out_op, x, w, out, bias)
    return out


# ---------------------------------------------------------------------------------------------
# Fused epilogues: gemm_a16w16 with the epilogue applied in fp32 inside the GEMM, before the one
# rounding to the output dtype (no extra pass over the output). Each shape and epilogue is tuned and
# dispatched as its own problem. Same entry rules as gemm_a16w16 (torch.ops under torch.compile,
# tgemm._C in plain eager, torch.ops when a __torch_function__ override applies).


def gemm_bias(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: torch.Tensor,
    otype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """``y = x @ w.T + bias`` (``F.linear(x, w, bias)``) with a required bias.

    x, w, otype as in :func:`gemm_a16w16`; bias ``[N]`` of x's dtype or of the output dtype, added
    once in fp32 before the output cast. Returns a new ``[..., N]`` tensor. Bad input raises
    :class:`tgemm.TgemmError` naming the argument. Differentiable (F.linear's backward).
    """
    if _is_compiling():
        return gemm_bias_op(x, w, bias, otype)
    if not _has_torch_function(x, w, bias):
        return _fast_bias(x, w, bias, otype)
    return _call_op(gemm_bias_op, x, w, bias, otype)


def gemm_bias_out(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """:func:`gemm_bias` into an existing ``out`` (``[..., N]``, rows contiguous, bf16, fp16 or fp32,
    not overlapping the inputs). Returns ``out``. Not differentiable."""
    if _is_compiling():
        gemm_bias_out_op(x, w, bias, out)
    elif not _has_torch_function(x, w, bias, out):
        _fast_bias_out(x, w, bias, out)
    else:
        _call_op(gemm_bias_out_op, x, w, bias, out)
    return out


def gemm_gelu(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    approximate: str = "none",
    otype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """``y = F.gelu(x @ w.T (+ bias), approximate=approximate)`` in one kernel.

    approximate: ``"none"`` (the exact GELU, ``x * Phi(x)`` with the erf normal CDF, F.gelu's
    default) or ``"tanh"`` (the tanh approximation). x, w, bias, otype as in :func:`gemm_a16w16`;
    the bias is added before the activation, the activation is computed in fp32 and rounded once
    to the output dtype (``F.gelu(F.linear(x, w, b))`` in bf16 rounds twice: after the GEMM and
    after the GELU). Returns a new ``[..., N]`` tensor.
    Bad input (including another ``approximate``) raises :class:`tgemm.TgemmError`.
    Differentiable: the backward recomputes ``x @ w.T (+ bias)`` with ATen and applies GELU's
    derivative in fp32.
    """
    if _is_compiling():
        return gemm_gelu_op(x, w, bias, approximate, otype)
    if not _has_torch_function(x, w, bias):
        return _fast_gelu(x, w, bias, approximate, otype)
    return _call_op(gemm_gelu_op, x, w, bias, approximate, otype)


def gemm_gelu_out(
    x: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    approximate: str = "none",
) -> torch.Tensor:
    """:func:`gemm_gelu` into an existing ``out`` (as :func:`gemm_a16w16_out`). Returns ``out``.
    Not differentiable."""
    if _is_compiling():
        gemm_gelu_out_op(x, w, out, bias, approximate)
    elif not _has_torch_function(x, w, out, bias):
        _fast_gelu_out(x, w, out, bias, approximate)
    else:
        _call_op(gemm_gelu_out_op, x, w, out, bias, approximate)
    return out


def gemm_relu(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    otype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """``y = F.relu(x @ w.T (+ bias))`` in one kernel (the activation in fp32, one rounding to the
    output dtype). Arguments as in :func:`gemm_a16w16`. Returns a new ``[..., N]`` tensor. Bad input
    raises :class:`tgemm.TgemmError`. Differentiable (the mask is taken from the output, as
    ReLU's own backward does)."""
    if _is_compiling():
        return gemm_relu_op(x, w, bias, otype)
    if not _has_torch_function(x, w, bias):
        return _fast_relu(x, w, bias, otype)
    return _call_op(gemm_relu_op, x, w, bias, otype)


def gemm_relu_out(
    x: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """:func:`gemm_relu` into an existing ``out`` (as :func:`gemm_a16w16_out`). Returns ``out``.
    Not differentiable."""
    if _is_compiling():
        gemm_relu_out_op(x, w, out, bias)
    elif not _has_torch_function(x, w, out, bias):
        _fast_relu_out(x, w, out, bias)
    else:
        _call_op(gemm_relu_out_op, x, w, out, bias)
    return out


def gemm_alpha_beta(
    x: torch.Tensor,
    w: torch.Tensor,
    c: torch.Tensor,
    alpha: float = 1.0,
    beta: float = 1.0,
) -> torch.Tensor:
    """``y = alpha * (x @ w.T) + beta * c`` (``torch.addmm(c, x, w.T, beta=beta, alpha=alpha)`` for
    2-D x), all in fp32 inside the GEMM, one rounding to the output dtype.

    x, w as in :func:`gemm_a16w16`. c: ``[..., N]``, the shape of the result (no broadcasting),
    rows contiguous, dtype bf16, fp16 or fp32: the result has c's dtype. alpha, beta: finite and
    within float32 range (they are applied as float32). With ``beta == 0`` c is not read (but
    still checked). Returns a new tensor. Bad input raises :class:`tgemm.TgemmError`.
    Differentiable (``dx = alpha * g @ w``, ``dw = alpha * g.T @ x``, ``dc = beta * g``).
    """
    if _is_compiling():
        return gemm_alpha_beta_op(x, w, c, alpha, beta)
    if not _has_torch_function(x, w, c):
        return _fast_alpha_beta(x, w, c, alpha, beta)
    return _call_op(gemm_alpha_beta_op, x, w, c, alpha, beta)


def gemm_alpha_beta_out(
    x: torch.Tensor,
    w: torch.Tensor,
    c: torch.Tensor,
    out: torch.Tensor,
    alpha: float = 1.0,
    beta: float = 1.0,
) -> torch.Tensor:
    """:func:`gemm_alpha_beta` into ``out`` (c's dtype and shape). ``out`` may be ``c`` itself
    (the same tensor, not another view of its memory) to accumulate in place:
    ``gemm_alpha_beta_out(x, w, c, c, alpha, beta)`` is ``c = alpha * x @ w.T + beta * c``.
    Otherwise out must not overlap c or the inputs. Returns ``out``. Not differentiable."""
    if _is_compiling():
        gemm_alpha_beta_out_op(x, w, c, out, alpha, beta)
    elif not _has_torch_function(x, w, c, out):
        _fast_alpha_beta_out(x, w, c, out, alpha, beta)
    else:
        _call_op(gemm_alpha_beta_out_op, x, w, c, out, alpha, beta)
    return out


# ---------------------------------------------------------------------------------------------
# a8w8: 8-bit operands with fp32 scales (AITER's gemm_a8w8 and the int8_gemm alias).


def gemm_a8w8(
    x: torch.Tensor,
    w: torch.Tensor,
    x_scale: torch.Tensor,
    w_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = torch.bfloat16,
) -> torch.Tensor:
    """``y = (x @ w.T) * x_scale * w_scale (+ bias)``, tuned per shape and scale recipe.

    x: ``[..., K]`` ``torch.float8_e4m3fn`` or ``torch.int8``, w: ``[N, K]`` of x's dtype, rows
    contiguous, K a multiple of 16. x_scale: fp32, one element (per-tensor) or ``[M, 1]``
    (per-token); w_scale: fp32, one element or ``[N, 1]`` / ``[1, N]`` (per-channel); every mix
    is accepted. The product accumulates exactly in int32 (int8) or in fp32 (FP8); scales and
    bias (``[N]``, the output dtype or fp32) are applied in fp32 before one rounding to
    ``out_dtype`` (bf16, fp16 or fp32). Every tensor on x's CUDA device. Not differentiable.
    Bad input raises :class:`tgemm.TgemmError` naming the argument.
    """
    if _is_compiling():
        return gemm_a8w8_op(x, w, x_scale, w_scale, bias, out_dtype)
    if not _has_torch_function(x, w, x_scale, w_scale, bias):
        return _fast_a8w8(x, w, x_scale, w_scale, bias, out_dtype)
    return _call_op(gemm_a8w8_op, x, w, x_scale, w_scale, bias, out_dtype)


def gemm_a8w8_blockscale(
    x: torch.Tensor,
    w: torch.Tensor,
    x_scale: torch.Tensor,
    w_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = torch.bfloat16,
) -> torch.Tensor:
    """FP8 GEMM with DeepSeek-V3's block scales (AITER's ``gemm_a8w8_blockscale``): with
    ``L = ceil(K / 128)``, ``y[m, n] = sum_b (x[m, B_b] @ w[n, B_b]) * x_scale[m, b] *
    w_scale[n // 128, b] (+ bias[n])``, ``B_b`` the b-th 128 columns of K.

    x: ``[..., K]`` ``torch.float8_e4m3fn``; w: ``[N, K]`` ``torch.float8_e4m3fn``; rows contiguous,
    K a multiple of 16 (not necessarily of 128). x_scale: fp32 ``[M, L]``, row-major (AITER) or
    MN-major (strides ``(1, ld)``, ``ld >= M``; DeepGEMM's TMA-aligned layout from
    ``quant_fp8_per_block_1x128(x, mn_major=True)`` reads without a copy): the strides tell which.
    w_scale: fp32 ``[ceil(N / 128), L]`` row-major (``quant_fp8_per_block_128x128``).
    Block sums in fp32, scaled and summed in fp32, bias (``[N]``, the output dtype or fp32) added,
    one rounding to ``out_dtype`` (bf16, fp16 or fp32). Zero scales zero their blocks; NaN or inf
    scales propagate. Every tensor on x's CUDA device. Not differentiable. Bad input raises
    :class:`tgemm.TgemmError` naming the argument.
    """
    if _is_compiling():
        return gemm_a8w8_blockscale_op(x, w, x_scale, w_scale, bias, out_dtype)
    if not _has_torch_function(x, w, x_scale, w_scale, bias):
        return _fast_a8w8_blockscale(x, w, x_scale, w_scale, bias, out_dtype)
    return _call_op(gemm_a8w8_blockscale_op, x, w, x_scale, w_scale, bias, out_dtype)


def gmm(
    lhs: torch.Tensor,
    rhs: torch.Tensor,
    group_sizes: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    transpose_rhs: bool = False,
    out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """Grouped GEMM: ``out[rows of g] = lhs[rows of g] @ rhs[g] (+ bias[g])``, the rows of group g
    being the g-th consecutive block of ``group_sizes[g]`` rows.

    lhs: ``[M, K]`` bf16 or fp16; rhs: ``[G, K, N]`` (``transpose_rhs=False``) or ``[G, N, K]``
    (``True``: stacked ``nn.Linear`` weights), lhs's dtype, last dimension contiguous;
    group_sizes: int32 ``[G]`` on the device; bias: ``[G, N]``, lhs's dtype or fp32; out_dtype:
    lhs's dtype (None) or fp32. group_sizes are read on the device only (no host sync, CUDA-graph
    safe): negative sizes count as 0, a sum above M is clamped to M, rows past the sum are zeros.
    Not differentiable. Bad input raises :class:`tgemm.TgemmError` naming the argument.
    """
    if _is_compiling():
        return gmm_op(lhs, rhs, group_sizes, bias, transpose_rhs, out_dtype)
    if not _has_torch_function(lhs, rhs, group_sizes, bias):
        return _fast_gmm(lhs, rhs, group_sizes, bias, transpose_rhs, out_dtype)
    return _call_op(gmm_op, lhs, rhs, group_sizes, bias, transpose_rhs, out_dtype)


def describe_gmm(
    lhs: torch.Tensor,
    rhs: torch.Tensor,
    group_sizes: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    transpose_rhs: bool = False,
    out_dtype: Optional[torch.dtype] = None,
) -> dict:
    """Where ``gmm(lhs, rhs, group_sizes, bias, transpose_rhs, out_dtype)`` is routed, without
    running it: the dict of :func:`describe`, with level ``forced`` (TGEMM_GROUPED_BACKEND),
    ``table`` (a row of gmm's tuned table, ``tuned_gmm.csv`` / TGEMM_CONFIG_GMM), ``default`` (gmm's
    default rule) or ``empty``; kernelName ``tile`` or the CUTLASS grouped instance."""
    return _with_where(_C.describe_gmm(lhs, rhs, group_sizes, bias, transpose_rhs, out_dtype))


def batched_gemm(
    a: torch.Tensor,
    b: torch.Tensor,
    transpose_a: bool = False,
    transpose_b: bool = False,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """Strided-batched GEMM: ``out[i] = op(a[i]) @ op(b[i]) (+ bias)``, tuned per batch shape.

    a: ``[B, M, K]``, or ``[B, K, M]`` with ``transpose_a`` (``a[i]`` used transposed); b:
    ``[B, K, N]``, or ``[B, N, K]`` with ``transpose_b`` (stacked ``nn.Linear`` weights); bf16 or
    fp16, last dimension contiguous (a transposed view is passed as the tensor it views, with the
    flag flipped). Any batch stride of a and b, 0 included (``expand`` broadcasts one matrix to
    every product). bias: ``[N]``, a's dtype or the output's, added to every product in fp32.
    out_dtype: a's dtype (None), or bf16, fp16 or fp32. Returns a new ``[B, M, N]`` tensor, computed
    on the current CUDA stream. Not differentiable. Bad input raises :class:`tgemm.TgemmError`.
    """
    if _is_compiling():
        return batched_gemm_op(a, b, transpose_a, transpose_b, bias, out_dtype)
    if not _has_torch_function(a, b, bias):
        return _fast_batched(a, b, transpose_a, transpose_b, bias, out_dtype)
    return _call_op(batched_gemm_op, a, b, transpose_a, transpose_b, bias, out_dtype)


def batched_gemm_out(
    a: torch.Tensor,
    b: torch.Tensor,
    out: torch.Tensor,
    transpose_a: bool = False,
    transpose_b: bool = False,
    bias: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """:func:`batched_gemm` into an existing ``out`` (``[B, M, N]``, rows contiguous, bf16, fp16 or
    fp32; padded or interleaved batches allowed, its elements distinct and not overlapping the
    inputs). Returns ``out``. Not differentiable."""
    if _is_compiling():
        batched_gemm_out_op(a, b, out, transpose_a, transpose_b, bias)
    elif not _has_torch_function(a, b, out, bias):
        _fast_batched_out(a, b, out, transpose_a, transpose_b, bias)
    else:
        _call_op(batched_gemm_out_op, a, b, out, transpose_a, transpose_b, bias)
    return out


def describe_batched(
    a: torch.Tensor,
    b: torch.Tensor,
    transpose_a: bool = False,
    transpose_b: bool = False,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
) -> dict:
    """Where ``batched_gemm(a, b, transpose_a, transpose_b, bias, out_dtype)`` is routed, without
    running it: the same dict as :func:`describe`."""
    return _with_where(_C.describe_batched_gemm(a, b, transpose_a, transpose_b, bias, out_dtype))


def batched_gemm_a8w8(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: torch.Tensor,
    b_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = torch.bfloat16,
) -> torch.Tensor:
    """Strided-batched GEMM with 8-bit operands (AITER's ``batched_gemm_a8w8``):
    ``out[i] = (a[i] @ b[i].T) * a_scale[i] * b_scale[i] (+ bias)``, tuned per batch shape.

    a: ``[B, M, K]``, b: ``[B, N, K]`` (stacked ``nn.Linear`` weights), both ``torch.float8_e4m3fn``
    or both ``torch.int8``, rows contiguous, K a multiple of 16; no transposed layouts (Hopper's
    8-bit tensor cores read K-major operands only). Any batch stride, 0 included (``expand``).
    a_scale: fp32, one element (every product), ``[B]`` / ``[B, 1, 1]`` (per product) or
    ``[B, M, 1]`` (per-token); b_scale: fp32, one element, ``[B]`` / ``[B, 1, 1]`` or ``[B, N, 1]``
    (per-channel). Products accumulate exactly in int32 (int8) or in fp32 (FP8); scales and bias
    (``[N]``, the output dtype or fp32) apply in fp32 before one rounding to ``out_dtype`` (bf16,
    fp16 or fp32). Returns a new ``[B, M, N]`` tensor. Not differentiable. Bad input raises
    :class:`tgemm.TgemmError` naming the argument.
    """
    if _is_compiling():
        return batched_gemm_a8w8_op(a, b, a_scale, b_scale, bias, out_dtype)
    if not _has_torch_function(a, b, a_scale, b_scale, bias):
        return _fast_batched_a8w8(a, b, a_scale, b_scale, bias, out_dtype)
    return _call_op(batched_gemm_a8w8_op, a, b, a_scale, b_scale, bias, out_dtype)


def describe_batched_a8w8(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: torch.Tensor,
    b_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = torch.bfloat16,
) -> dict:
    """Where ``batched_gemm_a8w8(a, b, a_scale, b_scale, bias, out_dtype)`` is routed, without
    running it: the same dict as :func:`describe`."""
    return _with_where(_C.describe_batched_gemm_a8w8(a, b, a_scale, b_scale, bias, out_dtype))


def int8_gemm(
    input: torch.Tensor,
    weight: torch.Tensor,
    input_scale: torch.Tensor,
    weight_scale: torch.Tensor,
    output_dtype: torch.dtype = torch.bfloat16,
) -> torch.Tensor:
    """The seeds' ``int8_gemm(input, weight, input_scale, weight_scale, output_dtype)``:
    :func:`gemm_a8w8` without a bias (int8 or FP8 operands alike)."""
    return gemm_a8w8(input, weight, input_scale, weight_scale, None, output_dtype)


def describe_a8w8(
    x: torch.Tensor,
    w: torch.Tensor,
    x_scale: torch.Tensor,
    w_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = torch.bfloat16,
) -> dict:
    """Where ``gemm_a8w8(x, w, x_scale, w_scale, bias, out_dtype)`` is routed, without running
    it: the same dict as :func:`describe`."""
    return _with_where(_C.describe_gemm_a8w8(x, w, x_scale, w_scale, bias, out_dtype))


def describe_a8w8_blockscale(
    x: torch.Tensor,
    w: torch.Tensor,
    x_scale: torch.Tensor,
    w_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = torch.bfloat16,
) -> dict:
    """Where ``gemm_a8w8_blockscale(x, w, x_scale, w_scale, bias, out_dtype)`` is routed, without
    running it: the same dict as :func:`describe`."""
    info = dict(_C.describe_gemm_a8w8_blockscale(x, w, x_scale, w_scale, bias, out_dtype))
    info["where"] = f"{info['file']}:{info['line']}" if info["file"] else ""
    return info


# ---------------------------------------------------------------------------------------------
# Quantization for the A8W8 GEMMs (include/tgemm/quant.h). Every scale is fp32 and dequantizes:
# ``x ~= q.float() * scale``. Within a group (the tensor, a row, a block) ``scale = amax / 448``
# (FP8 e4m3fn) or ``amax / 127`` (int8), floored at 2**-126; an all-zero group gets scale 1;
# ``q = round_to_nearest_even(x * (1 / scale))`` saturated to +-448 / [-127, 127]. Inputs bf16 or fp16,
# ``[..., K]`` (weights ``[N, K]``), rows contiguous; q is new, contiguous, x's shape. Same entry
# rules as the GEMMs; not differentiable.

quant_fp8_per_tensor_op = torch.ops.tgemm.quant_fp8_per_tensor.default
quant_fp8_per_tensor_static_op = torch.ops.tgemm.quant_fp8_per_tensor_static.default
quant_per_token_op = torch.ops.tgemm.quant_per_token.default
quant_fp8_per_block_1x128_op = torch.ops.tgemm.quant_fp8_per_block_1x128.default
quant_fp8_per_block_128x128_op = torch.ops.tgemm.quant_fp8_per_block_128x128.default


def quant_fp8_per_tensor(x: torch.Tensor, scale: Optional[torch.Tensor] = None):
    """FP8 e4m3fn with one scale for the whole tensor.

    Without ``scale``: two passes (amax, then quantize); returns ``(q, scale)`` with scale a new
    fp32 ``[1]``. With ``scale`` (fp32, one element, on x's device, read by the kernel: usable in
    CUDA graphs; it is not checked for 0 or non-finite values): returns ``q`` alone.
    """
    if scale is None:
        if _is_compiling():
            return quant_fp8_per_tensor_op(x)
        if not _has_torch_function(x):
            return _C.quant_fp8_per_tensor(x)
        return _call_op(quant_fp8_per_tensor_op, x)
    if _is_compiling():
        return quant_fp8_per_tensor_static_op(x, scale)
    if not _has_torch_function(x, scale):
        return _C.quant_fp8_per_tensor_static(x, scale)
    return _call_op(quant_fp8_per_tensor_static_op, x, scale)


def quant_per_token(x: torch.Tensor, qtype: Optional[torch.dtype] = None):
    """One scale per row (token): returns ``(q, scale)``, scale fp32 ``[..., 1]``. qtype:
    ``torch.float8_e4m3fn`` (default, scale = amax / 448) or ``torch.int8`` (amax / 127). One pass."""
    if _is_compiling():
        return quant_per_token_op(x, qtype)
    if not _has_torch_function(x):
        return _C.quant_per_token(x, qtype)
    return _call_op(quant_per_token_op, x, qtype)


def quant_fp8_per_block_1x128(x: torch.Tensor, mn_major: bool = False):
    """FP8 in 1x128 blocks along K (DeepSeek-V3's activations): returns ``(q, scale)``, scale fp32
    ``[M, ceil(K / 128)]`` (x's leading dims flattened to M; the last block of a row is partial
    when K is not a multiple of 128). ``mn_major``: the scales in DeepGEMM's MN-major TMA-aligned
    layout (strides ``(1, ceil(M / 4) * 4)``) instead of row-major. One pass."""
    if _is_compiling():
        return quant_fp8_per_block_1x128_op(x, mn_major)
    if not _has_torch_function(x):
        return _C.quant_fp8_per_block_1x128(x, mn_major)
    return _call_op(quant_fp8_per_block_1x128_op, x, mn_major)


def quant_fp8_per_block_128x128(w: torch.Tensor):
    """FP8 in 128x128 blocks (DeepSeek-V3's weights): w ``[N, K]``; returns ``(q, scale)``, scale
    fp32 ``[ceil(N / 128), ceil(K / 128)]``, edge blocks partial. One pass."""
    if _is_compiling():
        return quant_fp8_per_block_128x128_op(w)
    if not _has_torch_function(w):
        return _C.quant_fp8_per_block_128x128(w)
    return _call_op(quant_fp8_per_block_128x128_op, w)


def describe(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    otype: Optional[torch.dtype] = None,
) -> dict:
    """Where ``gemm_a16w16(x, w, bias, otype)`` is routed, without running it.

    Returns ``{"level", "matched_m", "file", "line", "where", "libtype", "kernelName"}``:
    the lookup-walk level that matched (``exact`` for a row tuned at this M, ``range`` for a
    row whose measured M range holds it, ``default``;
    ``empty`` for M, N or K = 0), the M of the table row used, its ``file:line``
    (``where``; empty for the default), the backend and the solution's full name. The first
    description of a shape resolves and caches it exactly as its first call would (and records
    it under ``TGEMM_TUNE_GEMM=1``). Bad input raises :class:`tgemm.TgemmError`.
    """
    return _with_where(_C.describe_gemm_a16w16(x, w, bias, otype))


# ---------------------------------------------------------------------------------------------
# MXFP4 (include/tgemm/fp4.h, OCP Microscaling v1.0): e2m1 codes two a byte along K (element 2i in
# the low nibble, 2i + 1 in the high one, gpt-oss's layout), one E8M0 scale per 32 values (uint8
# s, the factor 2^(s - 127), 255 NaN). K a multiple of 32.

quant_mxfp4_op = torch.ops.tgemm.quant_mxfp4.default
gemm_a16w4_op = torch.ops.tgemm.gemm_a16w4.default
gemm_a8w4_op = torch.ops.tgemm.gemm_a8w4.default
gemm_a4w4_op = torch.ops.tgemm.gemm_a4w4.default


def quant_mxfp4(x: torch.Tensor):
    """MXFP4 codes and scales of x ``[..., K]`` (bf16/fp16): returns ``(q, scale)``, q uint8
    ``[..., K / 2]``, scale uint8 ``[..., K / 32]``. Per 32 values: ``s = floor(log2(amax)) - 2 + 127``
    (clamped to [0, 254]; 0 for an all-zero block; 255 for a block holding NaN or inf), codes the
    values over ``2^(s - 127)`` rounded to nearest even on the e2m1 grid, saturated to +-6."""
    if _is_compiling():
        return quant_mxfp4_op(x)
    if not _has_torch_function(x):
        return _C.quant_mxfp4(x)
    return _call_op(quant_mxfp4_op, x)


def gemm_a16w4(
    x: torch.Tensor,
    w: torch.Tensor,
    w_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """``y = x @ dequant(w, w_scale).T (+ bias)`` with 16-bit activations and MXFP4 weights.

    x: ``[..., K]`` bf16/fp16; w: uint8 ``[N, K / 2]`` packed e2m1 codes; w_scale: uint8
    ``[N, K / 32]`` (as :func:`quant_mxfp4` returns for a ``[N, K]`` weight); bias ``[N]`` of x's or
    the output's dtype; out_dtype None is x's dtype (bf16, fp16 or fp32). Sums in fp32. M <= 4
    runs a GEMV that decodes the 4-bit weight in registers, M <= 32 a tensor-core kernel that
    decodes it in registers; larger M dequantizes it to x's dtype and runs :func:`gemm_a16w16`.
    Not differentiable.
    """
    if _is_compiling():
        return gemm_a16w4_op(x, w, w_scale, bias, out_dtype)
    if not _has_torch_function(x, w, w_scale, bias):
        return _C.gemm_a16w4(x, w, w_scale, bias, out_dtype)
    return _call_op(gemm_a16w4_op, x, w, w_scale, bias, out_dtype)


def gemm_a8w4(
    x: torch.Tensor,
    w: torch.Tensor,
    x_scale: torch.Tensor,
    w_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """``y = (x * x_scale) @ dequant(w, w_scale).T (+ bias)`` with FP8 activations and MXFP4 weights.

    x: ``[..., K]`` float8_e4m3fn; x_scale: fp32, one element (per-tensor) or ``[..., 1]``
    (per-token, as :func:`quant_per_token` returns); w, w_scale as :func:`gemm_a16w4`; bias ``[N]``
    of the output's dtype or fp32; out_dtype None is bf16. Sums in fp32. M <= 4 runs the decode
    GEMV (e4m3 widened exactly in registers), M <= 32 the tensor-core kernel of
    :func:`gemm_a16w4` (x widened to fp16, w decoded to fp16); larger M widens x and dequantizes w
    to bf16 and runs :func:`gemm_a16w16`, then applies x_scale and bias. Not differentiable.
    """
    if _is_compiling():
        return gemm_a8w4_op(x, w, x_scale, w_scale, bias, out_dtype)
    if not _has_torch_function(x, w, x_scale, w_scale, bias):
        return _C.gemm_a8w4(x, w, x_scale, w_scale, bias, out_dtype)
    return _call_op(gemm_a8w4_op, x, w, x_scale, w_scale, bias, out_dtype)


def gemm_a4w4(
    x: torch.Tensor,
    w: torch.Tensor,
    x_scale: torch.Tensor,
    w_scale: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """``y = dequant(x, x_scale) @ dequant(w, w_scale).T (+ bias)``: MXFP4 on both sides (AITER's
    gemm_a4w4).

    x: uint8 ``[..., K / 2]`` and x_scale uint8 ``[..., K / 32]`` (:func:`quant_mxfp4` of the
    activations); w, w_scale the same for the ``[N, K]`` weight; bias ``[N]`` of the output's dtype
    or fp32; out_dtype None is bf16. Sums in fp32. M <= 4 runs the decode GEMV (both operands
    decoded in registers); larger M dequantizes both to bf16 and runs :func:`gemm_a16w16`. Not
    differentiable.
    """
    if _is_compiling():
        return gemm_a4w4_op(x, w, x_scale, w_scale, bias, out_dtype)
    if not _has_torch_function(x, w, x_scale, w_scale, bias):
        return _C.gemm_a4w4(x, w, x_scale, w_scale, bias, out_dtype)
    return _call_op(gemm_a4w4_op, x, w, x_scale, w_scale, bias, out_dtype)


def dequant_mxfp4(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The fp32 values of MXFP4 codes ``q`` ``[..., K / 2]`` and scales ``[..., K / 32]`` (a torch
    reference of the decoding, for checks): ``[..., K]``."""
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], device=q.device)
    codes = torch.stack((q & 15, q >> 4), dim=-1).flatten(-2).long()
    values = grid[codes & 7] * torch.where((codes & 8) != 0, -1.0, 1.0)
    s = scale.float()
    factor = torch.where(scale == 255, torch.nan, torch.exp2(s - 127.0))
    return values * factor.repeat_interleave(32, dim=-1)
